#pragma once
// The system under test of the serving-loop property: a kernel's state pool, updated in place by a
// sequence of calls, followed by two references that make the same calls on pools of their own: the
// precision model kernel (its pool in the same state dtype) and the fp64 recurrence (an fp64 pool,
// the oracle). Every call is judged like matches-reference, and every byte of the kernel's pool that
// the call may not write (slots no active index names, gaps between slots) must stay bit-identical.
// Every call is made with persistent metadata (Problem::persistent_metadata, one run per system), as
// an engine replaying CUDA graphs makes it: the adapter refills the same metadata buffers in place.
#include <cstdint>
#include <string>
#include <vector>

#include "kda/properties/catalogue.hpp"

namespace kda::props {

// A fresh Problem::persistent_metadata run number. Each serving loop (and each case of a property that
// reuses metadata buffers) is a run of its own, so its first call gets fresh buffers and a shrunk case
// replays alone as it failed.
std::uint64_t new_serving_run();

class ServingSystem {
 public:
  // `calls`: sizes, options and dtypes of every call, and the kernel pool's slot stride and base
  // offset (its lengths, indices and mode are set per call). The kernel's pool starts as NaN.
  ServingSystem(CheckContext& context, ProblemSpec calls, std::int64_t slots);

  // A sequence admitted into `slot`: its state set in all three pools, to zeros (seed 0) or to
  // N(0, 0.1) values drawn from the seed, rounded to the state dtype.
  void admit(std::int64_t slot, std::uint64_t seed);

  // One call naming `indices` (-1: a padding row, given upstream's padding pattern), one sequence per
  // index with the given lengths, inputs drawn from `seed`. Fails the case (message headed by `what`)
  // when the kernel does not run it, changes what it may not write, or leaves its reference.
  void call(Mode mode, const std::vector<std::int64_t>& indices, const std::vector<std::int64_t>& lengths,
            std::uint64_t seed, const std::string& what);

  // A speculative-decoding verify call of L tokens per request at most, judged like call(), then the
  // engine's accept on the host. Table form: `indices` holds each request's L slots row by row and
  // `accepted` the counts whose slot the request starts from; the state after token t lands in the row's
  // slot t. Scratch form: `indices` the committed slot of each request (the pool is only read), the
  // states go to a fresh scratch buffer (identity row map), and the state after `commit[n]` tokens is
  // copied into the committed slot of each pool (the rest rolled back: never copied). Padding requests:
  // -1 (a table row of -1 entries).
  void verify(StateSource form, std::int64_t L, const std::vector<std::int64_t>& indices,
              const std::vector<std::int64_t>& accepted, const std::vector<std::int64_t>& lengths,
              const std::vector<std::int64_t>& commit, std::uint64_t seed, const std::string& what);

 private:
  // Runs the kernel on `call` and the references on `modelled` and `exact` (their own pools), and fails
  // the case unless the kernel ran, wrote nothing it may not write and tracks the references.
  // The call `spec` describes, on the three pools (kernel, model, oracle), judged; the three problems after.
  struct Judged {
    Problem call, modelled, exact;
  };
  Judged run_and_judge(const ProblemSpec& spec, std::uint64_t seed, const std::string& what);
  void judge(Problem& call, Problem& modelled, Problem& exact, const std::string& what);

  CheckContext& context_;
  ProblemSpec calls_;
  Tensor kernel_pool_, model_pool_, oracle_pool_;
  std::uint64_t run_;  // Problem::persistent_metadata of every call
};

}  // namespace kda::props
