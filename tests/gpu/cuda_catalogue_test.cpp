// The property catalogue against "cuda-recurrent" on the GPU, with the fp32 recurrent reference as the
// precision model (as for the simulation in tests/kernels/sim_catalogue_test.cpp) and a fixed seed.
// Skips without an sm_90 device. KDA_PROPERTY_CASES scales the run (default 100 cases per property).
#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>

#include "kda/kernels/cuda_recurrent_kernel.hpp"
#include "kda/kernels/device.hpp"
#include "kda/properties/runner.hpp"
#include "kda/reference_kernel.hpp"

namespace kda::kernels {
namespace {

int cases_per_property() {
  const char* env = std::getenv("KDA_PROPERTY_CASES");
  return env ? std::atoi(env) : 100;
}

class CudaCatalogue : public testing::TestWithParam<std::string> {};

TEST_P(CudaCatalogue, Holds) {
  if (const auto info = hopper_device(); !info.available) GTEST_SKIP() << info.reason;
  auto kernel = make_cuda_recurrent_kernel();
  auto model = make_reference_kernel(Precision::fp32, Algorithm::recurrent);
  props::CheckContext context{*kernel, *model};
  props::RunOptions options;
  options.properties = {GetParam()};
  options.cases = cases_per_property();
  options.seed = 20261201;
  const auto reports = props::run_properties(context, options);
  ASSERT_EQ(reports.size(), 1u);
  std::ostringstream table;
  props::print_reports(table, reports);
  std::cout << table.str();
  EXPECT_TRUE(reports[0].ok()) << table.str() << "replay: kda-oracle check --kernel " << kernel->name() << " --seed "
                               << options.seed << " --cases " << options.cases;
  EXPECT_EQ(reports[0].passed, options.cases);
}

std::vector<std::string> property_names() {
  std::vector<std::string> names;
  for (const auto& p : props::catalogue()) names.push_back(p.name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(Cuda, CudaCatalogue, testing::ValuesIn(property_names()), [](const auto& param) {
  std::string name = param.param;
  for (auto& c : name)
    if (c == '-') c = '_';
  return name;
});

}  // namespace
}  // namespace kda::kernels
