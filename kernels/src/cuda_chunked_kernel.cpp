#include "kda/kernels/cuda_chunked_kernel.hpp"

#include "device_mirror.hpp"
#include "kda/kernels/chunked_prefill.hpp"

namespace kda::kernels {

namespace {

class CudaChunkedKernel final : public Kernel {
 public:
  explicit CudaChunkedKernel(ScanForm scan_form) : scan_form_(scan_form) {}
  std::string name() const override { return "cuda-chunked"; }
  const Capabilities& capabilities() const override { return chunked_capabilities(); }
  const Profile& profile() const override { return profile_strict(); }

  RunOutcome run(Problem& problem) override {
    if (RunOutcome admitted = admit_chunked(problem, name()); admitted.status != RunOutcome::Status::ok)
      return admitted;
    return run_mirrored(problem, [&](const PayloadAddress& payload) {
      const ChunkedDeviceCall call(problem, payload);  // its workspace outlives the kernel: waited for here
      ChunkedParams params = call.params();
      params.scan_form = scan_form_;
      return wait_for_kernel(launch_chunked_prefill(params, nullptr));
    });
  }

 private:
  ScanForm scan_form_;
};

}  // namespace

std::unique_ptr<Kernel> make_cuda_chunked_kernel(ScanForm scan_form) {
  return std::make_unique<CudaChunkedKernel>(scan_form);
}

}  // namespace kda::kernels
