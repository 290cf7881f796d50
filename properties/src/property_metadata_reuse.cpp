// metadata-reuse: a second call of the same geometry in one serving run, its metadata buffers refilled
// in place with new values, is computed from the new values. A library that caches what it derives
// from cu_seqlens or the state indices (chunk maps, sequence offsets) by the tensor's identity serves
// the first call's map to the second: FLA's tensor_cache keys prepare_chunk_indices by `is`.
#include <algorithm>

#include <rapidcheck.h>

#include "generators_internal.hpp"
#include "invariance_support.hpp"
#include "kda/properties/judged_run.hpp"
#include "kda/properties/property_bodies.hpp"
#include "serving_system.hpp"

namespace kda::props {

namespace {

// The same geometry (T, N, every buffer's shape) with other metadata values: the sequence lengths
// rotated by one (or, where that changes nothing, one token moved to the next sequence) and the
// state indices rotated. False when nothing could change (no tokens and one distinct index).
bool new_metadata(ProblemSpec& spec) {
  const ProblemSpec before = spec;
  auto& lengths = spec.lengths;
  if (spec.mode == Mode::prefill && lengths.size() >= 2) {
    std::rotate(lengths.begin(), lengths.begin() + 1, lengths.end());
    if (lengths == before.lengths) {
      const auto from = std::find_if(lengths.begin(), lengths.end(), [](std::int64_t l) { return l > 0; });
      if (from != lengths.end()) {
        --*from;
        ++*(std::next(from) == lengths.end() ? lengths.begin() : std::next(from));
      }
    }
  }
  if (spec.indices.size() >= 2) std::rotate(spec.indices.begin(), spec.indices.begin() + 1, spec.indices.end());
  return spec.lengths != before.lengths || spec.indices != before.indices;
}

}  // namespace

void check_metadata_reuse(CheckContext& context) {
  // cu_seqlens of a varlen prefill is the buffer refilled, else a pool's state indices (verify metadata
  // is refilled in place by serving-loop).
  const auto needs = detail::metadata_call(detail::allowed_for(context.kernel, context.limits), 2);
  if (!needs) RC_FAIL("the kernel takes neither varlen prefill calls nor a state pool");
  const DrawnCase first = draw_case(context, *needs);
  CaseSpec second_spec = first.spec;
  if (!new_metadata(second_spec.problem)) RC_DISCARD("no other metadata of the same geometry");

  const std::uint64_t run = new_serving_run();
  Problem first_call = deep_copy(first.problem);
  first_call.persistent_metadata = run;
  run_or_fail(context.kernel, first_call, "the first call", first.problem);

  Problem second = build_case(second_spec);
  second.persistent_metadata = run;
  const JudgedRun judged = run_judged(context, second);
  judged.require_ran();
  if (!judged.verdict.passed())
    RC_FAIL("the second call of a serving run, its metadata buffers refilled in place, left the reference (stale "
            "metadata derived from the first call?):\n" +
            judged.verdict.describe() + "\n  first call: " + first_call.describe() +
            "\n  problem: " + judged.problem.describe());
}

}  // namespace kda::props
