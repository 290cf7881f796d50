// The CUDA chunked prefill against its CPU simulation, bit for bit: every element of every output (o,
// final states, chunk-start states) equal (test::compare). Element-wise steps are the same functions on both sides, and
// the simulation computes each chain of mma k-steps with the Hopper tensor-core model
// (tensor_core_model.hpp, held to the hardware by tensor_core_hardware_test). Named cases that reach every
// path (edge lengths 0, 1, 63, 64, 65 and 129, pool with padding rows and a padded slot stride, GVA, chunk
// states, K = V = 64, [K,V] states, both gates, batched rows), the benchmark's configuration at two heads,
// and cases drawn by the property generators with a fixed seed, each under every form of stage B. Every
// run must also leave every byte outside its outputs untouched. Skips without an sm_90 device.
#include <gtest/gtest.h>

#include <string>

#include "../support/bit_agreement.hpp"
#include "../support/chunked_cases.hpp"
#include "../support/generated_cases.hpp"
#include "../support/run_against_simulation.hpp"
#include "kda/kernels/chunked_prefill_sim.hpp"
#include "kda/kernels/cuda_chunked_kernel.hpp"
#include "kda/kernels/device.hpp"
#include "kda/metrics.hpp"
#include "kda/properties/case_spec.hpp"
#include "kda/properties/comparison.hpp"

namespace kda::kernels {
namespace {

void expect_agreement(Kernel& cuda, const Problem& input) {
  SCOPED_TRACE(input.describe());
  static const auto sim = make_sim_chunked_kernel();
  test::RunPair ran;
  test::run_against_simulation(cuda, *sim, input, ran);
  if (testing::Test::HasFatalFailure()) return;
  const ReferenceOutputs g = props::read_outputs(ran.cuda), c = props::read_outputs(ran.simulation);
  test::Agreement a;
  test::compare("o", input.o.dtype(), g.o, c.o, a);
  if (input.final_state) test::compare("final_state", input.final_state->dtype(), g.final_state, c.final_state, a);
  if (input.state_pool) test::compare("state_pool", input.state_pool->dtype(), g.final_state, c.final_state, a);
  if (input.chunk_states)
    test::compare("chunk_states", input.chunk_states->dtype(), g.chunk_states, c.chunk_states, a);
  test::expect_agreement(a);
}

// Each case under every form of stage B (the launcher picks by grid size, and these grids are small).
class ChunkedCudaVsSim : public testing::TestWithParam<ScanForm> {
 protected:
  void SetUp() override {
    if (const auto info = hopper_device(); !info.available) GTEST_SKIP() << info.reason;
  }
  void expect_agreement(const Problem& input) { kernels::expect_agreement(*cuda_, input); }
  const std::unique_ptr<Kernel> cuda_ = make_cuda_chunked_kernel(GetParam());
};

TEST_P(ChunkedCudaVsSim, NamedCases) {
  for (const auto& [name, spec] : test::chunked_named_cases()) {
    SCOPED_TRACE(name);
    Problem p = make_problem(spec);
    fill_random(p, 21);
    expect_agreement(p);
  }
}

// The benchmark's configuration with fp32 output and chunk states: every fp32 bit visible.
TEST_P(ChunkedCudaVsSim, BenchmarkConfigurationInFp32) {
  ProblemSpec spec = test::benchmark_spec({100, 2000, 37, 900, 1, 1155}, 2);
  spec.output_dtype = DType::f32;
  spec.chunk_states = true;
  Problem p = make_problem(spec);
  fill_random(p, 22);
  expect_agreement(p);
}

TEST_P(ChunkedCudaVsSim, GeneratedCases) {
  constexpr int kCases = 200;
  test::for_each_generated_case(*cuda_, kCases, [&](const Problem& p) { expect_agreement(p); });
}

INSTANTIATE_TEST_SUITE_P(StageB, ChunkedCudaVsSim, testing::ValuesIn(kScanForms),
                         [](const auto& param) { return std::string(name_of(param.param)); });

}  // namespace
}  // namespace kda::kernels
