#include "kda/kernels/cuda_chunked_kernel.hpp"

#include <cuda_runtime.h>

#include <stdexcept>

#include "device_mirror.hpp"
#include "kda/kernels/chunked_prefill.hpp"

namespace kda::kernels {

namespace {

class CudaChunkedKernel final : public Kernel {
 public:
  std::string name() const override { return "cuda-chunked"; }
  const Capabilities& capabilities() const override { return chunked_capabilities(); }
  const Profile& profile() const override { return profile_strict(); }

  RunOutcome run(Problem& problem) override {
    if (RunOutcome admitted = admit_chunked(problem, name()); admitted.status != RunOutcome::Status::ok)
      return admitted;
    try {
      DeviceMirror mirror(problem);
      const ChunkedDeviceCall call(problem, [&](GuardedBuffer& b) { return mirror.payload(b); });
      if (const cudaError_t e = launch_chunked_prefill(call.params(), nullptr); e != cudaSuccess)
        return RunOutcome::failed(std::string("launch failed: ") + cudaGetErrorString(e));
      if (const cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess)
        return RunOutcome::failed(std::string("kernel failed: ") + cudaGetErrorString(e));
      mirror.copy_back();
    } catch (const std::exception& e) {
      return RunOutcome::failed(e.what());
    }
    return RunOutcome::ok();
  }
};

}  // namespace

std::unique_ptr<Kernel> make_cuda_chunked_kernel() { return std::make_unique<CudaChunkedKernel>(); }

}  // namespace kda::kernels
