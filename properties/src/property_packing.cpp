// packing: a call with several sequences (varlen, or one per batch row) equals one call per sequence.
#include "invariance_support.hpp"
#include "kda/properties/problem_surgery.hpp"
#include "kda/properties/property_bodies.hpp"

namespace kda::props {

void check_packing(CheckContext& context) {
  detail::Needs needs;
  needs.min_sequences = 2;
  needs.verify = false;  // a verify call's requests share one index table or scratch buffer: not split here
  const DrawnCase drawn = draw_case(context, needs);
  const Problem& base = drawn.problem;
  context.note_case(base);

  std::vector<Problem> singles;
  for (std::int64_t n = 0; n < base.N; ++n) {
    Cut cut;
    cut.sequence = n;
    singles.push_back(extract_sequence(base, cut));
    if (const auto why = unfit(context.kernel, singles.back()); !why.empty())
      RC_DISCARD("sequence " + std::to_string(n) + " alone: " + why);
  }
  Problem packed = deep_copy(base);
  run_or_fail(context.kernel, packed, "the packed call", base);
  const ReferenceOutputs want = read_outputs(packed);
  ReferenceOutputs got = zero_outputs(base);
  for (std::int64_t n = 0; n < base.N; ++n) {
    Problem& single = singles[static_cast<std::size_t>(n)];
    run_or_fail(context.kernel, single, "the call of sequence " + std::to_string(n) + " alone", base);
    place_part(base, n, 0, single, read_outputs(single), got);
  }
  require_agreement(
      differences(base, got, want), [&](const TensorDifference& d) { return same_path_bound(context.policy, d); }, base,
      {"packing of " + std::to_string(base.N) + " sequences", "one call per sequence", "the packed call"}, base);
}

}  // namespace kda::props
