// The property catalogue against "cuda-chunked" on the GPU, with model-chunked-fp16 as the precision
// model (as for the simulation in tests/kernels/chunked_sim_catalogue_test.cpp) and the same fixed seed.
// Skips without an sm_90 device. KDA_PROPERTY_CASES scales the run (default 100 cases per property).
#include "../support/catalogue_check.hpp"
#include "kda/kernels/chunked_precision_model.hpp"
#include "kda/kernels/cuda_chunked_kernel.hpp"
#include "kda/kernels/device.hpp"

namespace kda::kernels {
namespace {

class CudaChunkedCatalogue : public testing::TestWithParam<std::string> {};

TEST_P(CudaChunkedCatalogue, Holds) {
  if (const auto info = hopper_device(); !info.available) GTEST_SKIP() << info.reason;
  auto kernel = make_cuda_chunked_kernel();
  auto model = make_chunked_precision_model();
  test::expect_property_holds(*kernel, *model, GetParam(), 20261201, true);
}

INSTANTIATE_TEST_SUITE_P(Cuda, CudaChunkedCatalogue, testing::ValuesIn(test::property_names()),
                         [](const auto& param) { return test::test_name(param.param); });

}  // namespace
}  // namespace kda::kernels
