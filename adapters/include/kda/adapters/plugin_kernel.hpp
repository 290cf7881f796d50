#pragma once
// A kernel in a shared library behind the C ABI of kda_plugin.h, as a kda::Kernel.
#include <filesystem>
#include <memory>
#include <stdexcept>

#include "kda/kernel.hpp"

namespace kda::adapters {

// A plugin that cannot be loaded: no such file, no descriptor symbol, another ABI version, an
// unknown profile, a malformed descriptor. The message says which and what to do.
struct PluginError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// dlopens the library (kept loaded for the kernel's lifetime) and reads its descriptor.
std::unique_ptr<Kernel> load_plugin(const std::filesystem::path& library);

}  // namespace kda::adapters
