#include "kda/kernels/cuda_recurrent_kernel.hpp"

#include <cuda_runtime.h>

#include <stdexcept>

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
    try {
      DeviceMirror mirror(problem);
      const RunOutcome launched = launch_recurrent_decode(
          problem, [&](GuardedBuffer& b) { return mirror.payload(b); }, nullptr, config_);
      if (launched.status != RunOutcome::Status::ok) return launched;
      if (const cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess)
        return RunOutcome::failed(std::string("kernel failed: ") + cudaGetErrorString(e));
      mirror.copy_back();
    } catch (const std::exception& e) {
      return RunOutcome::failed(e.what());
    }
    return RunOutcome::ok();
  }

 private:
  LaunchConfig config_;
};

}  // namespace

std::unique_ptr<Kernel> make_cuda_recurrent_kernel(const LaunchConfig& config) {
  return std::make_unique<CudaRecurrentKernel>(config);
}

}  // namespace kda::kernels
