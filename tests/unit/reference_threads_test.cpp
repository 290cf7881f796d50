// The reference's answer does not depend on how it runs: any thread count gives the same outputs bit
// for bit (each (sequence, head) pair is computed alone, whichever worker takes it), and outputs
// reused from an earlier call (run_reference into a kept ReferenceOutputs) equal fresh ones, padding
// rows and tokens outside any sequence zero again whatever the earlier call left there.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>

#include "reference_test_support.hpp"

namespace kda {
namespace {

// A decode on a pool over many heads: 48 sequences (every seventh a padding row), HV = 8 (GVA 2),
// K = 32, V = 48, so that 1, 2 and 3 threads split the (sequence, head group) items differently.
Problem pooled_decode(StateLayout layout) {
  ProblemSpec spec;
  spec.mode = Mode::decode;
  spec.lengths.assign(48, 1);
  spec.H = 4, spec.HV = 8, spec.K = 32, spec.V = 48;
  spec.options.l2norm_qk = true;
  spec.options.state_layout = layout;
  spec.state = StateSource::pool;
  spec.pool_slots = 50;
  for (std::int64_t n = 0; n < 48; ++n) spec.indices.push_back(n % 7 == 3 ? -1 : 49 - n);
  Problem p = make_problem(spec);
  fill_random(p, 91);
  return p;
}

// Ragged sequences with chunk and token states: every output vector in use.
Problem prefill_with_states() {
  ProblemSpec spec;
  spec.lengths = {70, 0, 5, 33};
  spec.H = 2, spec.HV = 4, spec.K = 16, spec.V = 24;
  spec.options.l2norm_qk = true;
  spec.options.chunk_size = 32;
  spec.chunk_states = spec.token_states = true;
  Problem p = make_problem(spec);
  fill_random(p, 92);
  return p;
}

void expect_same(const ReferenceOutputs& a, const ReferenceOutputs& b) {
  EXPECT_EQ(a.o, b.o);
  EXPECT_EQ(a.final_state, b.final_state);
  EXPECT_EQ(a.written, b.written);
  EXPECT_EQ(a.chunk_states, b.chunk_states);
  EXPECT_EQ(a.token_states, b.token_states);
}

TEST(ReferenceThreads, PooledDecodeOverManyHeadsIsTheSameOnAnyThreadCount) {
  for (auto layout : {StateLayout::vk, StateLayout::kv}) {
    const Problem p = pooled_decode(layout);
    for (auto algorithm : {Algorithm::recurrent, Algorithm::chunked}) {
      SCOPED_TRACE(std::string(name_of(algorithm)) + " " + std::string(name_of(layout)));
      const auto one = run_reference<double>(p, algorithm, 1);
      EXPECT_EQ(std::count(one.written.begin(), one.written.end(), 0), 7);  // the padding rows
      for (int threads : {2, 3}) expect_same(one, run_reference<double>(p, algorithm, threads));
      const auto one_fp32 = run_reference<float>(p, algorithm, 1);
      expect_same(one_fp32, run_reference<float>(p, algorithm, 2));
    }
  }
}

TEST(ReferenceThreads, PrefillIsTheSameOnAnyThreadCount) {
  const Problem p = prefill_with_states();
  for (auto algorithm : {Algorithm::recurrent, Algorithm::chunked})
    expect_same(run_reference<double>(p, algorithm, 1), run_reference<double>(p, algorithm, 2));
}

TEST(ReferenceThreads, ReusedOutputsEqualFreshOnes) {
  const Problem decode = pooled_decode(StateLayout::vk);
  const Problem prefill = prefill_with_states();
  for (auto algorithm : {Algorithm::recurrent, Algorithm::chunked}) {
    SCOPED_TRACE(name_of(algorithm));
    ReferenceOutputs kept;
    // Each problem twice, the second time into its own poisoned outputs (poison stands for whatever
    // a kept buffer holds), and the problems alternating, so vectors are also resized between them.
    for (const Problem* p : {&decode, &prefill, &decode}) {
      const auto fresh = run_reference<double>(*p, algorithm, 1);
      run_reference<double>(*p, algorithm, 2, kept);
      expect_same(fresh, kept);
      for (auto* v : {&kept.o, &kept.final_state, &kept.chunk_states, &kept.token_states})
        std::fill(v->begin(), v->end(), std::numeric_limits<double>::quiet_NaN());
      run_reference<double>(*p, algorithm, 2, kept);
      expect_same(fresh, kept);
    }
  }
}

}  // namespace
}  // namespace kda
