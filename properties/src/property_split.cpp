// split: one sequence as several calls, each starting from the state the previous one left, equals
// one call: a prefill split at token s, or (where the kernel decodes) a prefill followed by decode steps.
#include <algorithm>
#include <map>
#include <optional>

#include "invariance_support.hpp"
#include "kda/properties/problem_surgery.hpp"
#include "kda/properties/property_bodies.hpp"

namespace kda::props {

namespace {

using i64 = std::int64_t;

struct Split {
  Problem whole;                // the sequence (or its first s + steps tokens) in one call
  std::vector<Problem> pieces;  // the calls it is split into, in order
  std::vector<i64> offsets;     // where each piece starts in the sequence
};

struct SplitOutputs {
  ReferenceOutputs whole, stitched;  // the pieces' outputs in whole's layout
};

SplitOutputs run_split(Kernel& kernel, const Split& split, const Problem& base) {
  Problem one = deep_copy(split.whole);
  run_or_fail(kernel, one, "the unsplit call", base);
  SplitOutputs out{read_outputs(one), zero_outputs(split.whole)};
  std::optional<Problem> previous;
  for (std::size_t i = 0; i < split.pieces.size(); ++i) {
    Problem call = deep_copy(split.pieces[i]);
    if (previous) carry_state(*previous, call);
    run_or_fail(kernel, call, "call " + std::to_string(i) + " of the split", base);
    place_part(split.whole, 0, split.offsets[i], call, read_outputs(call), out.stitched);
    previous = std::move(call);
  }
  return out;
}

// Sequence 0 (which has tokens: Needs::min_tokens) given a pool slot of its own if it is a padding row.
void first_sequence_not_padding(CaseSpec& spec) {
  std::vector<i64>& indices = spec.problem.indices;
  if (indices.empty() || indices.front() != -1) return;
  i64 slot = 0;
  while (std::find(indices.begin(), indices.end(), slot) != indices.end()) ++slot;  // slots > N: one is unused
  indices.front() = slot;
}

std::vector<i64> sequences_with_state(const Problem& p) {
  std::vector<i64> out;
  for (i64 n = 0; n < p.N; ++n)
    if (p.length(n) >= 1 && !(p.state_indices && p.state_indices->integer_at(n) == -1)) out.push_back(n);
  return out;
}

}  // namespace

void check_split(CheckContext& context) {
  Kernel& kernel = context.kernel;
  const bool dense = supports(kernel, StateSource::dense);
  detail::Needs needs;  // a prefill case with tokens to split: decode cases have one-token sequences only
  needs.mode = Mode::prefill;
  needs.min_tokens = 2;
  const DrawnCase drawn = draw_case(context, needs, first_sequence_not_padding);
  const Problem& base = drawn.problem;
  const std::vector<i64> candidates = sequences_with_state(base);
  RC_PRE(!candidates.empty());
  const i64 n = candidates[static_cast<std::size_t>(*detail::gen_index(static_cast<int>(candidates.size())))];
  const i64 L = base.length(n);
  const bool decode = supports(kernel, Mode::decode) && *detail::gen_bool(50);
  const i64 steps = decode ? *detail::gen_uniform(1, std::min<i64>(L, 4)) : 0;
  const i64 s = *detail::gen_uniform(0, L - steps);  // the first call's tokens
  context.note_case(base);

  // Calls after the first take the carried state: from the base's kind of source, or a dense one
  // (a pool where the kernel takes no dense state) when the base has none.
  const StateSource own = state_source_of(base);
  const StateSource carried = own != StateSource::none ? own : dense ? StateSource::dense : StateSource::pool;
  auto cut = [&](i64 first, i64 length, Mode mode, StateSource source) {
    Cut c;
    c.sequence = n, c.first = first, c.length = length, c.mode = mode, c.source = source;
    c.state_dtype = drawn.spec.problem.state_dtype;
    c.final_state = true;
    c.chunk_states = false;  // past the split point, chunks start at other tokens than in one call
    return extract_sequence(base, c);
  };
  Split split{cut(0, decode ? s + steps : L, Mode::prefill, own), {cut(0, s, Mode::prefill, own)}, {0}};
  for (i64 j = 0; j < steps; ++j) {
    split.pieces.push_back(cut(s + j, 1, Mode::decode, carried));
    split.offsets.push_back(s + j);
  }
  if (!decode) {
    split.pieces.push_back(cut(s, L - s, Mode::prefill, carried));
    split.offsets.push_back(s);
  }
  for (const Problem& p : split.pieces)
    if (const auto why = unfit(kernel, p); !why.empty()) RC_DISCARD("a call of the split: " + why);
  if (const auto why = unfit(kernel, split.whole); !why.empty()) RC_DISCARD("the unsplit call: " + why);

  const SplitOutputs got = run_split(kernel, split, base);
  const SplitOutputs modelled = run_split(context.model, split, base);
  // Bound: the split changes the arithmetic legitimately. Chunks start at s instead of multiples of
  // the chunk size, a decode step takes the recurrent path, and the carried state is rounded to
  // the state dtype between calls (ref-fp32-chunked moves by ~5e-7 rel-RMS on f32 outputs, above
  // f32's unit roundoff). So, as the tolerance policy does, the kernel may break the invariance by
  // alpha x what its precision model does on the same split, plus the unit roundoff of the tensor's
  // dtype and of the carried state's dtype.
  std::map<std::string, double> model_error;
  for (const auto& d : differences(split.whole, modelled.stitched, modelled.whole)) model_error[d.tensor] = d.rel_rms;
  const double carried_rounding = unit_roundoff(drawn.spec.problem.state_dtype);
  auto bound = [&](const TensorDifference& d) {
    return context.policy.bound(model_error[d.tensor], d.dtype) + carried_rounding;
  };
  const std::string what = decode ? "sequence " + std::to_string(n) + " as a prefill of " + std::to_string(s) +
                                        " tokens then " + std::to_string(steps) + " decode steps"
                                  : "sequence " + std::to_string(n) + " (" + std::to_string(L) +
                                        " tokens) split at token " + std::to_string(s);
  require_agreement(differences(split.whole, got.stitched, got.whole), bound, split.whole,
                    {what, "the split calls", "one call"}, base);
}

}  // namespace kda::props
