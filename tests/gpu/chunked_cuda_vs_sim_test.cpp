// The CUDA chunked prefill against its CPU simulation, within the bound of docs/cuda-prefill.md
// (test::cuda_vs_sim_bound: rel-RMS 1e-5 on fp32 values, plus a quarter of the output dtype's unit
// roundoff for the rare rounding flip, plus four times the distance a reversed summation order moves
// the simulation on the same case): named cases that reach every path (edge lengths 0, 1, 63, 64, 65
// and 129, pool with padding rows and a padded slot stride, GVA, chunk states, K = V = 64, [K,V] states,
// both gates, batched rows), the benchmark's configuration at two heads, and cases drawn by the property
// generators with a fixed seed. Every run must also leave every byte outside its outputs untouched.
// Skips without an sm_90 device.
#include <gtest/gtest.h>

#include <iostream>
#include <sstream>

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

struct Worst {
  double ratio = 0;  // the largest distance / bound seen
  std::string where;
};

// `reversed`: the simulation with every tensor-core sum in the opposite order. The mma units sum in an
// order of their own, so the kernel may lie as far from the simulation as another order does: on a
// well-conditioned case that is far under the fixed bound, on an ill-conditioned one (a nearly singular
// I + Akk amplifies every last-bit difference) it can exceed it. Four times the reversal's distance
// covers the hardware's tree of partial sums against a chain; a real defect (a wrong element, a missed
// rounding) moves results by far more than any order does.
void expect_close(const char* tensor, DType dtype, const std::vector<double>& cuda, const std::vector<double>& sim,
                  const std::vector<double>& reversed, const std::string& case_name, Worst& worst) {
  ASSERT_EQ(cuda.size(), sim.size()) << tensor;
  const double order = rel_rms(reversed, sim);
  const double distance = rel_rms(cuda, sim), bound = test::cuda_vs_sim_bound(dtype) + 4 * order;
  EXPECT_LE(distance, bound) << tensor << " (" << name_of(dtype) << "): rel-RMS " << distance << " from the simulation";
  if (bound > 0 && distance / bound > worst.ratio) {
    std::ostringstream where;
    where << tensor << " (" << name_of(dtype) << ") rel-RMS " << distance << ", reversed order " << order << ", bound "
          << bound << "; " << case_name;
    worst = {distance / bound, where.str()};
  }
}

void expect_agreement(Kernel& cuda, const Problem& input, Worst& worst) {
  SCOPED_TRACE(input.describe());
  static const auto sim = make_sim_chunked_kernel();
  test::RunPair ran;
  test::run_against_simulation(cuda, *sim, input, ran);
  if (testing::Test::HasFatalFailure()) return;
  Problem reversed_run = deep_copy(input);
  simulate_chunked_prefill(reversed_run, SumOrder::descending);
  const ReferenceOutputs g = props::read_outputs(ran.cuda), c = props::read_outputs(ran.simulation);
  const ReferenceOutputs r = props::read_outputs(reversed_run);
  const std::string name = input.describe();
  expect_close("o", input.o.dtype(), g.o, c.o, r.o, name, worst);
  if (input.final_state)
    expect_close("final_state", input.final_state->dtype(), g.final_state, c.final_state, r.final_state, name, worst);
  if (input.state_pool)
    expect_close("state_pool", input.state_pool->dtype(), g.final_state, c.final_state, r.final_state, name, worst);
  if (input.chunk_states)
    expect_close("chunk_states", input.chunk_states->dtype(), g.chunk_states, c.chunk_states, r.chunk_states, name,
                 worst);
}

// Each case under both forms of stage B (the launcher picks by grid size, and these grids are small).
class ChunkedCudaVsSim : public testing::TestWithParam<ScanBuffers> {
 protected:
  void SetUp() override {
    if (const auto info = hopper_device(); !info.available) GTEST_SKIP() << info.reason;
  }
  void expect_agreement(const Problem& input, Worst& worst) { kernels::expect_agreement(*cuda_, input, worst); }
  const std::unique_ptr<Kernel> cuda_ = make_cuda_chunked_kernel(GetParam());
};

TEST_P(ChunkedCudaVsSim, NamedCases) {
  Worst worst;
  for (const auto& [name, spec] : test::chunked_named_cases()) {
    SCOPED_TRACE(name);
    Problem p = make_problem(spec);
    fill_random(p, 21);
    expect_agreement(p, worst);
  }
  std::cout << "named cases: worst distance " << worst.ratio << " of the bound (" << worst.where << ")\n";
}

// The benchmark's configuration with fp32 output and states: the bound at its tightest (1e-5).
TEST_P(ChunkedCudaVsSim, BenchmarkConfigurationInFp32) {
  ProblemSpec spec = test::benchmark_spec({100, 2000, 37, 900, 1, 1155}, 2);
  spec.output_dtype = DType::f32;
  spec.chunk_states = true;
  Problem p = make_problem(spec);
  fill_random(p, 22);
  Worst worst;
  expect_agreement(p, worst);
  std::cout << "benchmark configuration: worst distance " << worst.ratio << " of the bound (" << worst.where << ")\n";
}

TEST_P(ChunkedCudaVsSim, GeneratedCases) {
  constexpr int kCases = 200;
  Worst worst;
  test::for_each_generated_case(*cuda_, kCases, [&](const Problem& p) { expect_agreement(p, worst); });
  if (HasFatalFailure()) return;
  std::cout << kCases << " generated cases: worst distance " << worst.ratio << " of the bound (" << worst.where
            << ")\n";
}

INSTANTIATE_TEST_SUITE_P(StageB, ChunkedCudaVsSim,
                         testing::Values(ScanBuffers::double_buffered, ScanBuffers::single_buffered),
                         [](const auto& param) {
                           return param.param == ScanBuffers::single_buffered ? "single_buffered" : "double_buffered";
                         });

}  // namespace
}  // namespace kda::kernels
