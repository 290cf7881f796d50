// The property catalogue against "sim-recurrent", the CPU simulation of the CUDA kernel, with a fixed
// seed: `ctest -L property`. The precision model is the fp32 recurrent reference, as for any fp32 kernel
// we did not write: the simulation's error must stay within twice the fp32 reference's (plus the output
// dtype's unit roundoff). Taking the simulation as its own model would make matches-reference vacuous
// (an error within twice itself); the tight CUDA-vs-simulation check lives in tests/gpu.
// KDA_PROPERTY_CASES scales the run (default 100 cases per property).
#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>

#include "kda/kernels/recurrent_decode_sim.hpp"
#include "kda/properties/runner.hpp"
#include "kda/reference_kernel.hpp"

namespace kda::kernels {
namespace {

int cases_per_property() {
  const char* env = std::getenv("KDA_PROPERTY_CASES");
  return env ? std::atoi(env) : 100;
}

class SimCatalogue : public testing::TestWithParam<std::string> {};

TEST_P(SimCatalogue, Holds) {
  auto kernel = make_sim_recurrent_kernel();
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
  EXPECT_TRUE(reports[0].ok()) << table.str() << "replay: kda-oracle check --kernel " << kernel->name() << " --seed "
                               << options.seed << " --cases " << options.cases;
  EXPECT_EQ(reports[0].passed, options.cases);
}

std::vector<std::string> property_names() {
  std::vector<std::string> names;
  for (const auto& p : props::catalogue()) names.push_back(p.name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(Sim, SimCatalogue, testing::ValuesIn(property_names()), [](const auto& param) {
  std::string name = param.param;
  for (auto& c : name)
    if (c == '-') c = '_';
  return name;
});

}  // namespace
}  // namespace kda::kernels
