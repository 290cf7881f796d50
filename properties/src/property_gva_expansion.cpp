// gva-expansion: HV value heads reading H q/k heads equal the same problem with a q/k head per value
// head, each q/k head repeated HV/H times.
#include "invariance_support.hpp"
#include "kda/properties/coverage.hpp"
#include "kda/properties/problem_surgery.hpp"
#include "generators_internal.hpp"
#include "kda/properties/property_bodies.hpp"

namespace kda::props {

namespace {

// Grouped value attention forced on a drawn case without it: one q/k head for all value heads. A
// case with a single value head gets a second one; the pool's slot stride grows by the compact size
// it gains, so its padding (and alignment: K x V is a multiple of 16 for every head dim drawn) is kept.
CaseSpec grouped(CaseSpec spec) {
  ProblemSpec& p = spec.problem;
  if (p.H < p.HV) return spec;
  if (p.HV == 1) {
    if (p.pool_slot_stride) p.pool_slot_stride += p.K * p.V;
    p.HV = 2;
  }
  p.H = 1;
  return spec;
}

}  // namespace

void check_gva_expansion(CheckContext& context) {
  // No verify call: expand_gva rebuilds the pool with one index per sequence.
  const CaseSpec spec =
      *rc::gen::map(detail::gen_case(detail::allowed_for(context.kernel, context.limits), {.verify = false}), grouped);
  const Problem base = build_case(spec);
  for (const auto& category : categories(spec, base)) rc::detail::classify(category, {});
  if (const auto why = unfit(context.kernel, base); !why.empty()) RC_DISCARD("the grouped case: " + why);
  context.note_case(base);
  Problem expanded = expand_gva(base);
  if (const auto why = unfit(context.kernel, expanded); !why.empty()) RC_DISCARD("the expanded case: " + why);

  Problem grouped_call = deep_copy(base);
  run_or_fail(context.kernel, grouped_call, "the grouped call", base);
  run_or_fail(context.kernel, expanded, "the expanded call", base);
  require_agreement(differences(base, read_outputs(expanded), read_outputs(grouped_call)),
                    [&](const TensorDifference& d) { return same_path_bound(context.policy, d); }, base,
                    {"GVA expansion (H=" + std::to_string(base.H) + ", HV=" + std::to_string(base.HV) + ")",
                     "the expanded call (H'=HV)", "the grouped call"},
                    base);
}

}  // namespace kda::props
