#pragma once
// load_plugin with the device memory of KDA_MEMORY_CUDA plugins chosen by the caller: the CUDA runtime
// for kda-oracle (load_plugin), host memory standing in for a device in the unit tests, so the whole
// path of a device plugin's call (device pointers, copies, guard bands) runs in CI without a GPU.
#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "device_staging.hpp"
#include "kda/kernel.hpp"

namespace kda::adapters {

// Makes the device memory for a plugin that declares KDA_MEMORY_CUDA; `plugin` names it in messages.
using DeviceOpener = std::function<std::unique_ptr<DeviceMemory>(const std::string& plugin)>;

std::unique_ptr<Kernel> load_plugin(const std::filesystem::path& library, const DeviceOpener& open_device);

}  // namespace kda::adapters
