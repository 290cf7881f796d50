#include "generators_internal.hpp"

namespace kda::props {

Problem build_case(const CaseSpec& spec) {
  Problem p = make_problem(spec.problem);
  detail::apply_layouts(p, spec);
  detail::apply_table_layout(p, spec);
  detail::poison_buffers(p, spec.poison);
  fill_random(p, spec.data_seed);
  if (!p.options.l2norm_qk) detail::normalize_qk(p);
  detail::apply_gate_mix(p, spec.gates, spec.data_seed);
  detail::apply_data_mix(p, spec.data, spec.data_seed);
  if (spec.padding_pattern) detail::apply_padding_pattern(p);
  detail::poison_unread_slots(p, spec.poison);
  return p;
}

}  // namespace kda::props
