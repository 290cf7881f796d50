#pragma once
// A plugin's descriptor (kda_plugin.h) read into a Declaration, checked field by field.
#include <string>

#include "declared_kernel.hpp"
#include "kda/adapters/kda_plugin.h"

namespace kda::adapters {

// `library` names the plugin in messages. Throws PluginError for an ABI version other than 1 and 2, a
// missing name or run function, an unknown profile, bits outside an enum's range, verify declared
// without a verify state source (or the reverse), or a memory other than KDA_MEMORY_HOST and
// KDA_MEMORY_CUDA (load_plugin stages the calls of the latter on the device). A version-1 plugin's
// verify bits are dropped: it is never sent a verify call.
Declaration read_descriptor(const kda_plugin& descriptor, const std::string& library);

}  // namespace kda::adapters
