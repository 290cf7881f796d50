#pragma once
// What the CUDA runtime can see. GPU tests and the CLI ask this before touching a device, so a
// machine without a GPU (or without a driver) skips cleanly instead of failing.
#include <string>

namespace kda::kernels {

struct DeviceInfo {
  bool available = false;
  std::string reason;  // why not available, or the device name and compute capability
  int major = 0, minor = 0;
};

// Is there a device able to run sm_90a code (compute capability 9.0)?
DeviceInfo hopper_device();

}  // namespace kda::kernels
