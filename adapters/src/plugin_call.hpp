#pragma once
// A Problem as a kda_call: every data pointer points into the problem's own buffers, so the guard
// bands and poisoned gaps around them catch a plugin's stray writes and reads.
#include "kda/adapters/kda_plugin.h"
#include "kda/problem.hpp"

namespace kda::adapters {

// Throws std::invalid_argument for a tensor of rank above KDA_MAX_RANK (only an invalid problem has one).
kda_call make_call(Problem& problem);

}  // namespace kda::adapters
