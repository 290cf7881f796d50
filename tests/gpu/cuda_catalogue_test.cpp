// The property catalogue against "cuda-recurrent" on the GPU, with the fp32 recurrent reference as the
// precision model (as for the simulation in tests/kernels/sim_catalogue_test.cpp) and a fixed seed.
// Skips without an sm_90 device. KDA_PROPERTY_CASES scales the run (default 100 cases per property).
#include "../support/catalogue_check.hpp"
#include "kda/kernels/cuda_recurrent_kernel.hpp"
#include "kda/kernels/device.hpp"
#include "kda/reference_kernel.hpp"

namespace kda::kernels {
namespace {

class CudaCatalogue : public testing::TestWithParam<std::string> {};

TEST_P(CudaCatalogue, Holds) {
  if (const auto info = hopper_device(); !info.available) GTEST_SKIP() << info.reason;
  auto kernel = make_cuda_recurrent_kernel();
  auto model = make_reference_kernel(Precision::fp32, Algorithm::recurrent);
  test::expect_property_holds(*kernel, *model, GetParam(), 20261201, true);
}

INSTANTIATE_TEST_SUITE_P(Cuda, CudaCatalogue, testing::ValuesIn(test::property_names()),
                         [](const auto& param) { return test::test_name(param.param); });

}  // namespace
}  // namespace kda::kernels
