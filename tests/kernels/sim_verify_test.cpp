// The simulation of the token-serial kernel on verify calls (problem.hpp), both forms: against the
// fp64 reference within the fp32 bound sim_precision_test asserts for decode and prefill; writing
// nothing but o and the states the table or the row map names (a scratch-form call leaves the pool
// bit-identical); bit-identical to a prefill from the slot the call names (the same loop over tokens);
// independent of the rows per warp; and rejecting an accepted count outside [1, L] before anything is
// read through it or written.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>

#include "../support/verify_cases.hpp"
#include "../support/verify_rejections.hpp"
#include "kda/kernels/recurrent_decode_sim.hpp"
#include "kda/metrics.hpp"
#include "kda/reference.hpp"

namespace kda::kernels {
namespace {

using test::every_element;
using test::VerifyCase;

constexpr double kUnitRoundoff = 0x1p-24;

Problem simulated(const Problem& input) {
  Problem p = deep_copy(input);
  const RunOutcome ran = make_sim_recurrent_kernel()->run(p);
  EXPECT_EQ(ran.status, RunOutcome::Status::ok) << ran.message;
  return p;
}

// The state after each stored token of each live request, as the kernel left it in the pool and as the
// reference computed it (token_states), in the same order.
struct StoredStates {
  std::vector<double> kernel, oracle;
};
StoredStates stored_states(const Problem& after, const ReferenceOutputs& oracle) {
  StoredStates s;
  const Shape head = after.state_head_shape();
  const std::int64_t per_token = after.HV * after.K * after.V;
  for (std::int64_t n = 0; n < after.N; ++n)
    for (std::int64_t t = 0; t < after.length(n); ++t) {
      const std::vector<std::int64_t> lead = test::stored_at(after, n, t);
      if (lead.empty()) continue;
      const std::int64_t at = (after.row(n) * after.T + after.first(n) + t) * per_token;
      for (std::int64_t i = 0; i < per_token; ++i) {
        s.kernel.push_back(test::stored_element(after, lead, i / (head[0] * head[1]), i / head[1] % head[0], i % head[1]));
        s.oracle.push_back(oracle.token_states[static_cast<std::size_t>(at + i)]);
      }
    }
  return s;
}

class SimVerify : public testing::TestWithParam<VerifyCase> {};

TEST_P(SimVerify, WithinTheFp32BoundOfTheFp64Reference) {
  const Problem input = GetParam().build();
  SCOPED_TRACE(input.describe());
  const Problem after = simulated(input);
  const ReferenceOutputs oracle = run_reference<double>(input, Algorithm::recurrent);
  const ReferenceOutputs fp32 = run_reference<float>(input, Algorithm::recurrent);
  const double bound = kUnitRoundoff * 4 * std::sqrt(static_cast<double>(input.K));
  const std::vector<double> o = every_element(after.o);
  // A bf16 output or state adds its one rounding (unit roundoff 2^-8) to the fp32 bound.
  const auto bound_for = [&](DType stored) { return bound + (stored == DType::bf16 ? 0x1p-8 : 0.0); };
  const double o_bound = bound_for(after.o.dtype()), state_bound = bound_for(test::stored_states(after).dtype());
  const double o_sim = rel_rms(o, oracle.o);
  EXPECT_LE(o_sim, o_bound);
  EXPECT_GT(o_sim, 0.0);  // the simulation really computes in fp32
  const StoredStates states = stored_states(after, oracle);
  ASSERT_FALSE(states.kernel.empty());
  const double state_sim = rel_rms(states.kernel, states.oracle);
  EXPECT_LE(state_sim, state_bound);
  std::cout << GetParam().name << ": rel-RMS vs fp64: o " << o_sim << " (fp32 reference " << rel_rms(fp32.o, oracle.o)
            << "), stored states " << state_sim << " (bounds " << o_bound << ", " << state_bound << ")\n";
}

TEST_P(SimVerify, WritesOnlyOAndTheNamedStates) {
  const Problem input = GetParam().build();
  const Problem after = simulated(input);
  for (const std::string& change : test::verify_changes_outside_writable(input, after)) ADD_FAILURE() << change;
  // A padding row's outputs are zeros.
  for (std::int64_t n = 0; n < input.N; ++n) {
    if (input.initial_slot(n) >= 0) continue;
    for (std::int64_t t = 0; t < input.length(n); ++t)
      for (std::int64_t hv = 0; hv < input.HV; ++hv)
        for (std::int64_t v = 0; v < input.V; ++v)
          ASSERT_EQ(after.o.at({input.row(n), input.first(n) + t, hv, v}), 0.0) << "request " << n << " token " << t;
  }
}

// The same problem as a prefill through one pool index per request, the slot the call names.
Problem as_prefill_from_initial_slots(const Problem& verify) {
  Problem p = deep_copy(verify);
  p.mode = Mode::prefill, p.L = 0;
  p.num_accepted.reset(), p.scratch_states.reset(), p.scratch_indices.reset();
  Tensor indices = Tensor::zeros("state_indices", DType::i32, {verify.N});
  for (std::int64_t n = 0; n < verify.N; ++n) indices.set_integer(n, verify.initial_slot(n));
  p.state_indices = std::move(indices);
  return p;
}

// Each request is the kernel's prefill loop from the slot its count names: the same o, bit for bit, and
// its last stored state is that prefill's final state.
TEST_P(SimVerify, BitIdenticalToAPrefillFromTheNamedSlot) {
  const Problem input = GetParam().build();
  const Problem verified = simulated(input), prefilled = simulated(as_prefill_from_initial_slots(input));
  const std::vector<double> a = every_element(verified.o), b = every_element(prefilled.o);
  ASSERT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(double)), 0);
  const Shape head = input.state_head_shape();
  int compared = 0;
  for (std::int64_t n = 0; n < input.N; ++n) {
    const std::int64_t length = input.length(n);
    const std::vector<std::int64_t> last = length ? test::stored_at(input, n, length - 1) : std::vector<std::int64_t>{};
    if (last.empty()) continue;
    const std::int64_t initial = input.initial_slot(n);
    for (std::int64_t hv = 0; hv < input.HV; ++hv)
      for (std::int64_t i = 0; i < head[0]; ++i)
        for (std::int64_t j = 0; j < head[1]; ++j)
          ASSERT_EQ(test::stored_element(verified, last, hv, i, j), prefilled.state_pool->at({initial, hv, i, j}))
              << "request " << n;
    ++compared;
  }
  EXPECT_GT(compared, 0);
}

TEST_P(SimVerify, IndependentOfRowsPerWarp) {
  const Problem input = GetParam().build();
  const auto run = [&](int steps) {
    Problem p = deep_copy(input);
    simulate_recurrent_decode(make_decode_params(p, [](GuardedBuffer& b) { return b.data(); }, steps));
    return std::pair{every_element(p.o), every_element(test::stored_states(p))};
  };
  const auto eight = run(8);
  for (int steps : {4, 16}) {
    const auto other = run(steps);
    EXPECT_EQ(std::memcmp(other.first.data(), eight.first.data(), eight.first.size() * sizeof(double)), 0) << steps;
    // Bit patterns, not values: the pool's unread slots hold NaN poison.
    EXPECT_EQ(std::memcmp(other.second.data(), eight.second.data(), eight.second.size() * sizeof(double)), 0) << steps;
  }
}

INSTANTIATE_TEST_SUITE_P(Sim, SimVerify, testing::ValuesIn(test::verify_cases()),
                         [](const auto& param) { return param.param.name; });

// An accepted count outside [1, L] is a contract violation: rejected with its rule, nothing written,
// never used as an index into the table.
TEST(SimVerifyContract, RejectsAcceptedCountsOutsideOneToL) {
  test::expect_rejects_accepted_counts_outside_one_to_L(*make_sim_recurrent_kernel());
}

}  // namespace
}  // namespace kda::kernels
