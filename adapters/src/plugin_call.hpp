#pragma once
// A Problem as a kda_call: every data pointer points into the problem's own buffers, or into their
// device copies for a plugin that takes device memory, so the guard bands and poisoned gaps around
// them catch a plugin's stray writes and reads.
#include <cstdint>

#include "device_staging.hpp"
#include "kda/adapters/kda_plugin.h"
#include "kda/problem.hpp"

namespace kda::adapters {

// The call as a plugin of ABI version `abi_version` (1 or 2) gets it: abi_version says that version;
// version 2's members (L and the verify tensors) are filled for version 2 only. Throws
// std::invalid_argument for a tensor of rank above KDA_MAX_RANK (only an invalid problem has one).
// With `device`, the pointers are its device copies (KDA_MEMORY_CUDA, its device and stream).
kda_call make_call(Problem& problem, std::uint32_t abi_version, const DeviceStaging* device = nullptr);

// Whether a problem needs ABI version 2 to be passed whole: a verify call, or verify tensors.
bool needs_verify_abi(const Problem& problem);

}  // namespace kda::adapters
