// The CUDA kernel against its CPU simulation: every output element bit-identical (0 ulp; only NaN
// payloads may differ), on named cases that cover each path (pool with -1 rows, GVA, both gate forms,
// K = V = 128 / 64 / others, fp32 and bf16 states, [K,V] states, strided inputs, varlen prefill,
// index-table verify calls) and on cases drawn by the property generators with a fixed seed.
// docs/cuda-decode.md says why the two must agree exactly. Skips without an sm_90 device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>

#include "../support/bit_agreement.hpp"
#include "../support/generated_cases.hpp"
#include "../support/run_against_simulation.hpp"
#include "../support/verify_cases.hpp"
#include "../support/verify_rejections.hpp"
#include "kda/kernels/cuda_recurrent_kernel.hpp"
#include "kda/kernels/device.hpp"
#include "kda/kernels/recurrent_decode_sim.hpp"
#include "kda/properties/case_spec.hpp"
#include "kda/properties/comparison.hpp"

namespace kda::kernels {
namespace {

using test::Agreement;
using test::compare;

Kernel& cuda_kernel() {
  static const auto cuda = make_cuda_recurrent_kernel();
  return *cuda;
}
Kernel& sim_kernel() {
  static const auto sim = make_sim_recurrent_kernel();
  return *sim;
}

// A verify call: o, every slot of the pool and the scratch buffer identical, and nothing written but o
// and the states the table or the row map names for live requests (tests/support/verify_cases.hpp).
void expect_verify_bit_identical(const Problem& input, Agreement& total) {
  Problem on_gpu = deep_copy(input), on_cpu = deep_copy(input);
  const RunOutcome ran = cuda_kernel().run(on_gpu);
  ASSERT_EQ(ran.status, RunOutcome::Status::ok) << ran.message;
  const RunOutcome simulated = sim_kernel().run(on_cpu);
  ASSERT_EQ(simulated.status, RunOutcome::Status::ok) << simulated.message;
  for (const std::string& change : test::verify_changes_outside_writable(input, on_gpu)) ADD_FAILURE() << change;
  Agreement a;
  compare("o", input.o.dtype(), test::every_element(on_gpu.o), test::every_element(on_cpu.o), a);
  compare("state_pool", input.state_pool->dtype(), test::every_element(*on_gpu.state_pool),
          test::every_element(*on_cpu.state_pool), a);
  if (input.scratch_states)
    compare("scratch_states", input.scratch_states->dtype(), test::every_element(*on_gpu.scratch_states),
            test::every_element(*on_cpu.scratch_states), a);
  test::expect_agreement(a);
  total.add(a);
}

// Runs both on copies of `input`; expects identical outputs and no write outside the writable region.
void expect_bit_identical(const Problem& input, Agreement& total) {
  SCOPED_TRACE(input.describe());
  if (input.mode == Mode::verify) return expect_verify_bit_identical(input, total);
  test::RunPair ran;
  test::run_against_simulation(cuda_kernel(), sim_kernel(), input, ran);
  if (testing::Test::HasFatalFailure()) return;
  const ReferenceOutputs g = props::read_outputs(ran.cuda), c = props::read_outputs(ran.simulation);
  Agreement a;
  compare("o", input.o.dtype(), g.o, c.o, a);
  if (input.final_state) compare("final_state", input.final_state->dtype(), g.final_state, c.final_state, a);
  if (input.state_pool) compare("state_pool", input.state_pool->dtype(), g.final_state, c.final_state, a);
  test::expect_agreement(a);
  total.add(a);
}

class CudaVsSim : public testing::Test {
 protected:
  void SetUp() override {
    if (const auto info = hopper_device(); !info.available) GTEST_SKIP() << info.reason;
  }
};

props::CaseSpec named(Mode mode, std::vector<std::int64_t> lengths, std::int64_t H, std::int64_t HV, std::int64_t K,
                      std::int64_t V) {
  props::CaseSpec c;
  ProblemSpec& s = c.problem;
  s.mode = mode, s.lengths = std::move(lengths), s.H = H, s.HV = HV, s.K = K, s.V = V;
  s.options.l2norm_qk = true;
  c.data_seed = 1000 + static_cast<std::uint64_t>(K * 7 + V);
  return c;
}

std::vector<std::pair<std::string, props::CaseSpec>> named_cases() {
  std::vector<std::pair<std::string, props::CaseSpec>> out;
  {
    auto c = named(Mode::decode, std::vector<std::int64_t>(8, 1), 2, 8, 128, 128);
    auto& s = c.problem;
    s.input_dtype = s.output_dtype = DType::bf16;
    s.state = StateSource::pool, s.pool_slots = 12, s.pool_slot_stride = 8 * 128 * 128 + 32, s.pool_offset = 64;
    s.indices = {5, -1, 0, 11, 3, -1, 7, 2};
    s.options.gate_in_kernel = true, s.options.beta_from_logits = true;
    s.with_A_log = s.with_dt_bias = true;
    out.emplace_back("decode_pool_k128_gva_softplus", c);
  }
  {
    auto c = named(Mode::decode, std::vector<std::int64_t>(5, 1), 1, 2, 64, 64);
    auto& s = c.problem;
    s.state = StateSource::pool, s.state_dtype = DType::bf16, s.indices = {-1, 1, 2, 3, 4};
    s.options.gate_in_kernel = true, s.options.lower_bound = -5.0, s.options.safe_gate = true;
    s.with_A_log = true;
    c.gates = props::GateMix::mixture;
    out.emplace_back("decode_bf16_pool_k64_lower_bound", c);
  }
  {
    auto c = named(Mode::prefill, {0, 1, 15, 64, 65}, 2, 4, 128, 128);
    c.problem.input_dtype = DType::bf16;
    c.layout = props::InputLayout::fused_qkv, c.output_layout = props::InputLayout::permuted, c.pad = 3;
    out.emplace_back("prefill_varlen_k128_fused_qkv", c);
  }
  {
    auto c = named(Mode::prefill, {37, 3}, 1, 1, 100, 60);
    auto& s = c.problem;
    s.input_dtype = DType::f16, s.options.state_layout = StateLayout::kv;
    s.state = StateSource::pool, s.indices = {2, 0};
    c.layout = props::InputLayout::padded_head_stride;
    out.emplace_back("prefill_kv_pool_k100_v60", c);
  }
  {
    auto c = named(Mode::prefill, {20, 20, 20}, 1, 1, 256, 32);
    c.problem.varlen = false, c.problem.state = StateSource::none;
    c.problem.options.beta_from_logits = true, c.problem.options.allow_neg_eigval = true;
    out.emplace_back("prefill_batched_k256_no_initial_state", c);
  }
  {
    auto c = named(Mode::prefill, {9, 31}, 1, 2, 62, 100);  // K % 4 != 0: element-wise state access
    c.problem.options.gate_in_kernel = true, c.problem.with_A_log = true, c.problem.with_dt_bias = true;
    c.gates = props::GateMix::strong;
    out.emplace_back("prefill_k62_v100", c);
  }
  {
    auto c = named(Mode::decode, std::vector<std::int64_t>(3, 1), 1, 1, 16, 100);
    c.problem.output_dtype = DType::f64, c.problem.state_dtype = DType::bf16;
    out.emplace_back("decode_dense_bf16_k16_v100", c);
  }
  {  // The staged path's edges: a short last warp (V = 100), K < 128, a zero-length sequence.
    auto c = named(Mode::prefill, {1, 0, 2, 1}, 2, 4, 96, 100);
    auto& s = c.problem;
    s.state = StateSource::pool, s.pool_slots = 6, s.indices = {4, 0, -1, 2};
    s.options.gate_in_kernel = true, s.with_A_log = s.with_dt_bias = true;
    out.emplace_back("prefill_pool_k96_v100_short_slice", c);
  }
  {
    auto c = named(Mode::decode, std::vector<std::int64_t>(4, 1), 1, 1, 128, 64);
    c.problem.state = StateSource::none;
    out.emplace_back("decode_k128_no_initial_state", c);
  }
  {  // fp32 pools at K = 256 (rows reduced 4 at a time) and K = 64 (16 lanes a row, a butterfly per row).
    auto c = named(Mode::decode, std::vector<std::int64_t>(3, 1), 1, 2, 256, 64);
    c.problem.state = StateSource::pool, c.problem.indices = {1, -1, 0};
    out.emplace_back("decode_pool_k256", c);
    auto d = named(Mode::decode, std::vector<std::int64_t>(3, 1), 1, 2, 64, 64);
    d.problem.state = StateSource::pool, d.problem.indices = {2, 0, 1};
    out.emplace_back("decode_pool_k64_fp32", d);
  }
  return out;
}

TEST_F(CudaVsSim, NamedCasesBitIdentical) {
  Agreement total;
  for (const auto& [name, spec] : named_cases()) {
    SCOPED_TRACE(name);
    expect_bit_identical(props::build_case(spec), total);
  }
  for (const test::VerifyCase& c : test::verify_cases()) {
    SCOPED_TRACE(c.name);
    expect_bit_identical(c.build(), total);
  }
  std::cout << "named cases: " << total.elements << " elements, " << total.mismatches << " differ (max "
            << total.max_ulp << " ulp)\n";
}

// Dense states of different dtypes in and out (bf16 in, fp32 out) take the element-wise path.
TEST_F(CudaVsSim, MixedStateDtypes) {
  auto spec = named(Mode::prefill, {12, 5}, 1, 2, 128, 64);
  spec.problem.state_dtype = DType::bf16;
  Problem p = props::build_case(spec);
  p.final_state = Tensor::zeros("final_state", DType::f32, p.final_state->shape());
  Agreement total;
  expect_bit_identical(p, total);
}

// fp32 dense states whose rows are padded (row stride K + 4, 16-byte aligned) still take the staged
// path, row by row through their strides.
TEST_F(CudaVsSim, PaddedStateRows) {
  auto spec = named(Mode::decode, std::vector<std::int64_t>(3, 1), 1, 2, 128, 96);
  spec.problem.state = StateSource::dense;
  Problem p = props::build_case(spec);
  const auto padded_rows = [](const Tensor& t) {
    const Shape& shape = t.shape();  // [N, HV, V, K]
    const std::int64_t row = shape[3] + 4;
    Tensor out = Tensor::with_view(t.name(), View{DType::f32, shape, {shape[1] * shape[2] * row, shape[2] * row, row, 1}, 4});
    for (std::int64_t n = 0; n < shape[0]; ++n)
      for (std::int64_t h = 0; h < shape[1]; ++h)
        for (std::int64_t v = 0; v < shape[2]; ++v)
          for (std::int64_t k = 0; k < shape[3]; ++k) out.set({n, h, v, k}, t.at({n, h, v, k}));
    return out;
  };
  p.initial_state = padded_rows(*p.initial_state);
  p.final_state = padded_rows(*p.final_state);
  Agreement total;
  expect_bit_identical(p, total);
}

// The launcher validates on the host before anything reaches the device: an accepted count outside
// [1, L] is rejected with its rule and is never used as an index into the table.
TEST_F(CudaVsSim, VerifyRejectsAcceptedCountsOutsideOneToL) {
  test::expect_rejects_accepted_counts_outside_one_to_L(cuda_kernel());
}

TEST_F(CudaVsSim, GeneratedCasesBitIdentical) {
  constexpr int kCases = 200;
  Agreement total;
  test::for_each_generated_case(*make_cuda_recurrent_kernel(), kCases,
                                [&](const Problem& p) { expect_bit_identical(p, total); });
  if (HasFatalFailure()) return;
  std::cout << kCases << " generated cases: " << total.elements << " elements, " << total.mismatches
            << " differ (max " << total.max_ulp << " ulp)\n";
}

}  // namespace
}  // namespace kda::kernels
