// "sim-chunked": the CPU simulation of the CUDA chunked prefill behind the Kernel interface.
#include "kda/kernels/chunked_prefill_sim.hpp"

namespace kda::kernels {

namespace {

class SimChunkedKernel final : public Kernel {
 public:
  std::string name() const override { return "sim-chunked"; }
  const Capabilities& capabilities() const override { return chunked_capabilities(); }
  const Profile& profile() const override { return profile_strict(); }

  RunOutcome run(Problem& problem) override {
    if (RunOutcome admitted = admit_chunked(problem, name()); admitted.status != RunOutcome::Status::ok)
      return admitted;
    simulate_chunked_prefill(problem);
    return RunOutcome::ok();
  }
};

}  // namespace

std::unique_ptr<Kernel> make_sim_chunked_kernel() { return std::make_unique<SimChunkedKernel>(); }

}  // namespace kda::kernels
