#include <algorithm>

#include "generators_internal.hpp"

namespace kda::props {

namespace {

// The lowest slot a pool's indices name when every named slot lies past element 2^31 (a stress case,
// GenLimits::pool_past_int32); 0 otherwise.
std::int64_t slots_unused_below(const ProblemSpec& s) {
  if (!s.pool_slot_stride || s.indices.empty()) return 0;
  std::int64_t lowest = s.pool_slots;
  for (std::int64_t i : s.indices)
    if (i >= 0) lowest = std::min(lowest, i);
  return lowest >= detail::first_slot_past_int32(s.pool_slot_stride) ? lowest : 0;
}

}  // namespace

Problem build_case(const CaseSpec& spec) {
  Problem p = make_problem(spec.problem);
  detail::apply_layouts(p, spec);
  detail::apply_table_layout(p, spec);
  detail::poison_buffers(p, spec.poison);
  // A stress pool: only the slots from the lowest named one up are drawn; the billions of elements
  // below keep their poison (drawing them would take minutes and no correct kernel reads them).
  const std::int64_t unused = p.state_pool ? slots_unused_below(spec.problem) : 0;
  if (unused) p.state_pool->view.offset += unused * p.state_pool->view.strides[0], p.state_pool->view.shape[0] -= unused;
  fill_random(p, spec.data_seed);
  if (unused) p.state_pool->view.offset -= unused * p.state_pool->view.strides[0], p.state_pool->view.shape[0] += unused;
  if (!p.options.l2norm_qk) detail::normalize_qk(p);
  detail::apply_gate_mix(p, spec.gates, spec.data_seed);
  detail::apply_data_mix(p, spec.data, spec.data_seed);
  if (spec.padding_pattern) detail::apply_padding_pattern(p);
  detail::poison_unread_slots(p, spec.poison);
  return p;
}

}  // namespace kda::props
