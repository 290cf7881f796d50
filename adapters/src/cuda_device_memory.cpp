#include "cuda_device_memory.hpp"

#include "kda/adapters/plugin_kernel.hpp"

#if KDA_ADAPTERS_CUDA
#include <cuda_runtime_api.h>
#endif

namespace kda::adapters {

#if KDA_ADAPTERS_CUDA

namespace {

void check(cudaError_t e, const std::string& call) {
  if (e != cudaSuccess) throw DeviceError(call + ": " + cudaGetErrorString(e));
}

class CudaMemory final : public DeviceMemory {
 public:
  CudaMemory() {
    check(cudaGetDevice(&device_), "cudaGetDevice");
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  }
  CudaMemory(const CudaMemory&) = delete;
  CudaMemory& operator=(const CudaMemory&) = delete;
  ~CudaMemory() override { cudaStreamDestroy(stream_); }

  std::byte* allocate(std::size_t bytes) override {
    void* p = nullptr;
    check(cudaMalloc(&p, bytes), "cudaMalloc of " + std::to_string(bytes) + " bytes");
    return static_cast<std::byte*>(p);
  }
  void release(std::byte* device) noexcept override { cudaFree(device); }
  void to_device(std::byte* device, const std::byte* host, std::size_t bytes) override {
    check(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, stream_), "cudaMemcpyAsync to the device");
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize after a copy to the device");
  }
  void to_host(std::byte* host, const std::byte* device, std::size_t bytes) override {
    check(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream_), "cudaMemcpyAsync to the host");
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize after a copy to the host");
  }
  // The whole device: a plugin that ignored the stream it was given is waited for as well.
  void synchronize() override { check(cudaDeviceSynchronize(), "cudaDeviceSynchronize after the plugin's call"); }
  int device() const override { return device_; }
  void* stream() const override { return stream_; }

 private:
  int device_ = 0;
  cudaStream_t stream_ = nullptr;
};

}  // namespace

std::unique_ptr<DeviceMemory> open_cuda_memory(const std::string& plugin) {
  int count = 0;
  if (const cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess || count == 0)
    throw PluginError("plugin " + plugin + " declares KDA_MEMORY_CUDA (device pointers), but no CUDA device is usable" +
                      (e != cudaSuccess ? std::string(": cudaGetDeviceCount: ") + cudaGetErrorString(e) : ""));
  try {
    return std::make_unique<CudaMemory>();
  } catch (const DeviceError& e) {
    throw PluginError("plugin " + plugin + " declares KDA_MEMORY_CUDA, but the device cannot be used: " + e.what());
  }
}

#else

std::unique_ptr<DeviceMemory> open_cuda_memory(const std::string& plugin) {
  throw PluginError("plugin " + plugin +
                    " declares KDA_MEMORY_CUDA (device pointers), but this kda-oracle was built without CUDA: "
                    "build it with -DKDA_ENABLE_CUDA=ON where nvcc is found, or give the plugin KDA_MEMORY_HOST");
}

#endif

}  // namespace kda::adapters
