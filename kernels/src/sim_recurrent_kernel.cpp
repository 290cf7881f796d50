// "sim-recurrent": the CPU simulation of the CUDA kernel behind the Kernel interface.
#include "kda/kernels/recurrent_decode_sim.hpp"

namespace kda::kernels {

namespace {

class SimRecurrentKernel final : public Kernel {
 public:
  std::string name() const override { return "sim-recurrent"; }
  const Capabilities& capabilities() const override { return token_serial_capabilities(); }
  const Profile& profile() const override { return profile_strict(); }

  RunOutcome run(Problem& problem) override {
    if (auto violations = validate(problem, profile()); !violations.empty())
      return RunOutcome::rejected(std::move(violations));
    if (const std::string why = token_serial_unsupported(problem); !why.empty())
      return RunOutcome::failed(name() + " does not support " + why);
    simulate_recurrent_decode(make_decode_params(problem, [](GuardedBuffer& b) { return b.data(); }));
    return RunOutcome::ok();
  }
};

}  // namespace

std::unique_ptr<Kernel> make_sim_recurrent_kernel() { return std::make_unique<SimRecurrentKernel>(); }

}  // namespace kda::kernels
