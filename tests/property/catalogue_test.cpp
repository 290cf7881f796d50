// The property catalogue against the CPU references, with fixed seeds: `ctest -L property`.
// KDA_PROPERTY_CASES scales the run (default 100 cases per property and kernel); a long run is
// one environment variable away, and a failure prints the replay for `kda-oracle check --replay`.
#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>

#include "kda/properties/runner.hpp"
#include "kda/reference_kernel.hpp"

namespace kda::test {
namespace {

int cases_per_property() {
  const char* env = std::getenv("KDA_PROPERTY_CASES");
  return env ? std::atoi(env) : 100;
}

struct KernelCase {
  const char* name;
  Precision precision;
  Algorithm algorithm;
};

class Catalogue : public testing::TestWithParam<std::tuple<KernelCase, std::string>> {};

TEST_P(Catalogue, HoldsForTheReference) {
  const auto& [k, property] = GetParam();
  auto kernel = make_reference_kernel(k.precision, k.algorithm);
  auto model = make_reference_kernel(k.precision, k.algorithm);
  props::CheckContext context{*kernel, *model};
  props::RunOptions options;
  options.properties = {property};
  options.cases = cases_per_property();
  options.seed = 20261130;
  const auto reports = props::run_properties(context, options);
  ASSERT_EQ(reports.size(), 1u);
  std::ostringstream table;
  props::print_reports(table, reports);
  EXPECT_TRUE(reports[0].ok()) << table.str() << "replay: kda-oracle check --kernel " << kernel->name()
                               << " --seed " << options.seed << " --cases " << options.cases;
  EXPECT_EQ(reports[0].passed, options.cases);
}

std::vector<std::string> property_names() {
  std::vector<std::string> names;
  for (const auto& p : props::catalogue()) names.push_back(p.name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(
    Reference, Catalogue,
    testing::Combine(testing::Values(KernelCase{"fp64", Precision::fp64, Algorithm::recurrent},
                                     KernelCase{"fp32", Precision::fp32, Algorithm::recurrent},
                                     KernelCase{"fp64_chunked", Precision::fp64, Algorithm::chunked},
                                     KernelCase{"fp32_chunked", Precision::fp32, Algorithm::chunked}),
                     testing::ValuesIn(property_names())),
    [](const auto& param) {
      std::string property = std::get<1>(param.param);
      for (auto& c : property)
        if (c == '-') c = '_';
      return std::string(std::get<0>(param.param).name) + "_" + property;
    });

}  // namespace
}  // namespace kda::test
