// The property catalogue against "sim-recurrent", the CPU simulation of the CUDA kernel, with a fixed
// seed: `ctest -L property`. The precision model is the fp32 recurrent reference, as for any fp32 kernel
// we did not write: the simulation's error must stay within twice the fp32 reference's (plus the output
// dtype's unit roundoff). Taking the simulation as its own model would make matches-reference vacuous
// (an error within twice itself); the tight CUDA-vs-simulation check lives in tests/gpu.
// KDA_PROPERTY_CASES scales the run (default 100 cases per property).
#include "../support/catalogue_check.hpp"
#include "kda/kernels/recurrent_decode_sim.hpp"
#include "kda/reference_kernel.hpp"

namespace kda::kernels {
namespace {

class SimCatalogue : public testing::TestWithParam<std::string> {};

TEST_P(SimCatalogue, Holds) {
  auto kernel = make_sim_recurrent_kernel();
  auto model = make_reference_kernel(Precision::fp32, Algorithm::recurrent);
  test::expect_property_holds(*kernel, *model, GetParam(), 20261201, false);
}

INSTANTIATE_TEST_SUITE_P(Sim, SimCatalogue, testing::ValuesIn(test::property_names()),
                         [](const auto& param) { return test::test_name(param.param); });

}  // namespace
}  // namespace kda::kernels
