// The simulation as an fp32 kernel: against the fp64 reference it stays within the bound the fp32
// reference itself meets (tests/unit/reference_precision_test.cpp: rel-RMS <= u (4 sqrt(K)), u = 2^-24),
// and its results do not depend on how rows are spread over warps, nor on the state layout: only the
// per-row reduction trees (fixed by K) shape the arithmetic.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "kda/kernels/recurrent_decode_sim.hpp"
#include "kda/metrics.hpp"
#include "kda/problem_factory.hpp"
#include "kda/properties/comparison.hpp"
#include "kda/reference.hpp"

namespace kda::kernels {
namespace {

constexpr double kUnitRoundoff = 0x1p-24;

struct Case {
  const char* name;
  ProblemSpec spec;
};

ProblemSpec base(Mode mode, std::vector<std::int64_t> lengths, std::int64_t H, std::int64_t HV, std::int64_t K,
                 std::int64_t V) {
  ProblemSpec s;
  s.mode = mode, s.lengths = std::move(lengths);
  s.H = H, s.HV = HV, s.K = K, s.V = V;
  s.options.l2norm_qk = true;
  return s;
}

std::vector<Case> cases() {
  std::vector<Case> out;
  {  // the benchmark's shape, scaled down: pool with -1 rows, GVA, gate / l2norm / beta in kernel
    ProblemSpec s = base(Mode::decode, std::vector<std::int64_t>(6, 1), 2, 4, 128, 128);
    s.input_dtype = DType::bf16;
    s.state = StateSource::pool, s.pool_slots = 9, s.indices = {3, -1, 0, 7, -1, 5};
    s.options.gate_in_kernel = true, s.options.beta_from_logits = true;
    s.with_A_log = s.with_dt_bias = true;
    out.push_back({"decode_pool_k128", s});
  }
  {  // prefill, varlen with an empty sequence, K = V = 64, lower-bound gate, fp16 inputs
    ProblemSpec s = base(Mode::prefill, {0, 1, 17, 65}, 1, 2, 64, 64);
    s.input_dtype = DType::f16;
    s.options.gate_in_kernel = true, s.options.lower_bound = -5.0;
    s.with_A_log = true;
    out.push_back({"prefill_k64_lower_bound", s});
  }
  {  // head dims off the fast paths, [K,V] states, pre-activated gates
    ProblemSpec s = base(Mode::prefill, {40, 7}, 1, 1, 100, 60);
    s.options.state_layout = StateLayout::kv;
    out.push_back({"prefill_k100_v60_kv", s});
  }
  {  // K = 256 (two chunks per lane), no initial state, batched rows
    ProblemSpec s = base(Mode::prefill, {24, 24}, 1, 1, 256, 32);
    s.varlen = false, s.state = StateSource::none;
    s.options.beta_from_logits = true, s.options.allow_neg_eigval = true;
    out.push_back({"prefill_k256_batched", s});
  }
  {  // small K (half-warp rows, most lanes idle), V not a multiple of the rows per warp
    ProblemSpec s = base(Mode::prefill, {33}, 1, 1, 16, 100);
    out.push_back({"prefill_k16_v100", s});
  }
  return out;
}

Problem random_problem(const ProblemSpec& spec, std::uint64_t seed) {
  Problem p = make_problem(spec);
  fill_random(p, seed);
  return p;
}

ReferenceOutputs simulate(const Problem& input, int steps = kDefaultSteps) {
  Problem p = deep_copy(input);
  simulate_recurrent_decode(make_decode_params(p, [](GuardedBuffer& b) { return b.data(); }, steps));
  return props::read_outputs(p);
}

class SimPrecision : public testing::TestWithParam<Case> {};

TEST_P(SimPrecision, WithinTheFp32BoundOfTheFp64Reference) {
  const Problem p = random_problem(GetParam().spec, 42);
  SCOPED_TRACE(p.describe());
  const ReferenceOutputs oracle = run_reference<double>(p, Algorithm::recurrent);
  const ReferenceOutputs fp32 = run_reference<float>(p, Algorithm::recurrent);
  const ReferenceOutputs sim = simulate(p);
  const double bound = kUnitRoundoff * 4 * std::sqrt(static_cast<double>(p.K));
  const double o_sim = rel_rms(sim.o, oracle.o), o_fp32 = rel_rms(fp32.o, oracle.o);
  EXPECT_LE(o_sim, bound);
  EXPECT_GT(o_sim, 0.0);  // the simulation really computes in fp32
  if (!oracle.final_state.empty()) {
    EXPECT_LE(rel_rms(sim.final_state, oracle.final_state), bound);
  }
  std::cout << GetParam().name << ": o rel-RMS vs fp64: simulation " << o_sim << ", fp32 reference " << o_fp32
            << " (bound " << bound << ")\n";
}

TEST_P(SimPrecision, IndependentOfRowsPerWarp) {
  const Problem p = random_problem(GetParam().spec, 43);
  const ReferenceOutputs eight = simulate(p, 8);
  for (int steps : {4, 16}) {
    const ReferenceOutputs other = simulate(p, steps);
    EXPECT_EQ(std::memcmp(other.o.data(), eight.o.data(), eight.o.size() * sizeof(double)), 0) << steps;
    EXPECT_EQ(other.final_state, eight.final_state) << steps;
  }
}

INSTANTIATE_TEST_SUITE_P(Sim, SimPrecision, testing::ValuesIn(cases()),
                         [](const auto& param) { return std::string(param.param.name); });

// The same case with [V,K] and [K,V] states gives the same bits: only the addressing differs.
TEST(SimLayout, BitIdenticalAcrossStateLayouts) {
  ProblemSpec spec = base(Mode::prefill, {9, 30}, 1, 2, 64, 48);
  const Problem vk = random_problem(spec, 44);
  spec.options.state_layout = StateLayout::kv;
  Problem kv = make_problem(spec);
  for (auto [from, to] : {std::pair{&vk.q, &kv.q}, {&vk.k, &kv.k}, {&vk.v, &kv.v}, {&vk.g, &kv.g}, {&vk.beta, &kv.beta}})
    std::memcpy(to->buffer->data(), from->buffer->data(), from->buffer->size());
  for_each_index(vk.initial_state->shape(), [&](std::span<const std::int64_t> i) {
    kv.initial_state->set({i[0], i[1], i[3], i[2]}, vk.initial_state->at(i));
  });
  const ReferenceOutputs a = simulate(vk), b = simulate(kv);
  EXPECT_EQ(a.o, b.o);
  // The final states in each problem's layout: compare element (n, hv, v, k) with (n, hv, k, v).
  const std::int64_t per_head = vk.K * vk.V;
  for (std::int64_t h = 0; h < vk.N * vk.HV; ++h)
    for (std::int64_t v = 0; v < vk.V; ++v)
      for (std::int64_t k = 0; k < vk.K; ++k)
        ASSERT_EQ(a.final_state[static_cast<std::size_t>(h * per_head + v * vk.K + k)],
                  b.final_state[static_cast<std::size_t>(h * per_head + k * vk.V + v)]);
}

}  // namespace
}  // namespace kda::kernels
