#pragma once
// A plugin's descriptor (kda_plugin.h) read into a Declaration, checked field by field.
#include <string>

#include "declared_kernel.hpp"
#include "kda/adapters/kda_plugin.h"

namespace kda::adapters {

// `library` names the plugin in messages. Throws PluginError for another ABI version, a missing name
// or run function, an unknown profile, bits outside an enum's range or device memory.
Declaration read_descriptor(const kda_plugin& descriptor, const std::string& library);

}  // namespace kda::adapters
