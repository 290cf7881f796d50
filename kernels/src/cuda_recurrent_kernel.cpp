#include "kda/kernels/cuda_recurrent_kernel.hpp"

#include "device_mirror.hpp"

namespace kda::kernels {

namespace {

class CudaRecurrentKernel final : public Kernel {
 public:
  explicit CudaRecurrentKernel(const LaunchConfig& config) : config_(config) {}

  std::string name() const override { return "cuda-recurrent"; }
  const Capabilities& capabilities() const override { return token_serial_capabilities(); }
  const Profile& profile() const override { return profile_strict(); }

  RunOutcome run(Problem& problem) override {
    if (auto violations = validate(problem, profile()); !violations.empty())
      return RunOutcome::rejected(std::move(violations));
    return run_mirrored(problem, [&](const PayloadAddress& payload) {
      const RunOutcome launched = launch_recurrent_decode(problem, payload, nullptr, config_);
      return launched.status == RunOutcome::Status::ok ? wait_for_kernel() : launched;
    });
  }

 private:
  LaunchConfig config_;
};

}  // namespace

std::unique_ptr<Kernel> make_cuda_recurrent_kernel(const LaunchConfig& config) {
  return std::make_unique<CudaRecurrentKernel>(config);
}

}  // namespace kda::kernels
