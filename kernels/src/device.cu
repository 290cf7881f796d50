#include <cuda_runtime.h>

#include "kda/kernels/device.hpp"

namespace kda::kernels {

DeviceInfo hopper_device() {
  DeviceInfo info;
  int count = 0;
  if (const cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess) {
    info.reason = std::string("no CUDA device: ") + cudaGetErrorString(e);
    return info;
  }
  if (count == 0) {
    info.reason = "no CUDA device";
    return info;
  }
  cudaDeviceProp prop{};
  if (const cudaError_t e = cudaGetDeviceProperties(&prop, 0); e != cudaSuccess) {
    info.reason = std::string("cudaGetDeviceProperties failed: ") + cudaGetErrorString(e);
    return info;
  }
  info.major = prop.major, info.minor = prop.minor;
  info.available = prop.major == 9 && prop.minor == 0;
  info.reason = std::string(prop.name) + " (sm_" + std::to_string(prop.major) + std::to_string(prop.minor) + ")" +
                (info.available ? "" : ": kernels are built for sm_90a only");
  return info;
}

}  // namespace kda::kernels
