// The property catalogue against "sim-chunked", the CPU simulation of the CUDA chunked prefill, with a
// fixed seed: `ctest -L property`. The precision model is model-chunked-fp16 (chunked_precision_model.hpp):
// the same 11-bit roundings of stored intermediates and tensor-core operands, fp64 everywhere else, so
// the simulation's error must stay within twice the error those roundings cost (plus the output dtype's
// unit roundoff). KDA_PROPERTY_CASES scales the run (default 100 cases per property).
#include "../support/catalogue_check.hpp"
#include "kda/kernels/chunked_precision_model.hpp"
#include "kda/kernels/chunked_prefill_sim.hpp"

namespace kda::kernels {
namespace {

class SimChunkedCatalogue : public testing::TestWithParam<std::string> {};

TEST_P(SimChunkedCatalogue, Holds) {
  auto kernel = make_sim_chunked_kernel();
  auto model = make_chunked_precision_model();
  test::expect_property_holds(*kernel, *model, GetParam(), 20261201, false);
}

INSTANTIATE_TEST_SUITE_P(Sim, SimChunkedCatalogue, testing::ValuesIn(test::property_names()),
                         [](const auto& param) { return test::test_name(param.param); });

}  // namespace
}  // namespace kda::kernels
