#pragma once
// The CUDA runtime as the DeviceMemory a KDA_MEMORY_CUDA plugin's calls are staged in: the current
// device, a stream of kda-oracle's own for the copies and the plugin's work.
#include <memory>
#include <string>

#include "device_staging.hpp"

namespace kda::adapters {

// Throws PluginError naming `plugin` when this kda-oracle was built without CUDA (KDA_ENABLE_CUDA=OFF
// or no nvcc) or the runtime finds no usable device.
std::unique_ptr<DeviceMemory> open_cuda_memory(const std::string& plugin);

}  // namespace kda::adapters
