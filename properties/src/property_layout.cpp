// layout: the same case with [V,K] and with [K,V] states gives the same o and transposed states.
#include "invariance_support.hpp"
#include "kda/properties/problem_surgery.hpp"
#include "kda/properties/property_bodies.hpp"

namespace kda::props {

void check_layout(CheckContext& context) {
  // No verify call: the transposed copy keeps one index per sequence (transpose_state_layout).
  const DrawnCase drawn = draw_case(context, {.verify = false});
  const Problem& base = drawn.problem;
  context.note_case(base);
  Problem transposed = transpose_state_layout(base);
  if (const auto why = unfit(context.kernel, transposed); !why.empty()) RC_DISCARD("the transposed case: " + why);

  Problem original = deep_copy(base);
  run_or_fail(context.kernel, original, "the call in the case's layout", base);
  run_or_fail(context.kernel, transposed, "the call in the other layout", base);
  ReferenceOutputs got = read_outputs(transposed);
  transpose_states(got, transposed);  // back into the case's layout
  const std::string other(name_of(transposed.options.state_layout)), own(name_of(base.options.state_layout));
  require_agreement(differences(base, got, read_outputs(original)),
                    [&](const TensorDifference& d) { return same_path_bound(context.policy, d); }, base,
                    {"state layout", "the " + other + " call (states transposed back)", "the " + own + " call"}, base);
}

}  // namespace kda::props
