// The property catalogue against the CPU references, with fixed seeds: `ctest -L property`.
// KDA_PROPERTY_CASES scales the run (default 100 cases per property and kernel); a long run is
// one environment variable away, and a failure prints the replay for `kda-oracle check --replay`.
#include "../support/catalogue_check.hpp"
#include "kda/reference_kernel.hpp"

namespace kda::test {
namespace {

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
  expect_property_holds(*kernel, *model, property, 20261130);
}

INSTANTIATE_TEST_SUITE_P(
    Reference, Catalogue,
    testing::Combine(testing::Values(KernelCase{"fp64", Precision::fp64, Algorithm::recurrent},
                                     KernelCase{"fp32", Precision::fp32, Algorithm::recurrent},
                                     KernelCase{"fp64_chunked", Precision::fp64, Algorithm::chunked},
                                     KernelCase{"fp32_chunked", Precision::fp32, Algorithm::chunked}),
                     testing::ValuesIn(property_names())),
    [](const auto& param) {
      return std::string(std::get<0>(param.param).name) + "_" + test_name(std::get<1>(param.param));
    });

}  // namespace
}  // namespace kda::test
