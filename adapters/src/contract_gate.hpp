#pragma once
// What kda-oracle checks before handing a problem to an external kernel.
#include <optional>

#include "kda/kernel.hpp"

namespace kda::adapters {

// A view that leaves its buffer is always rejected here (view_in_bounds): neither a C call nor a case
// file can carry it safely. A kernel that does not check its own contract gets every violation of its
// declared profile checked here, so it only ever sees valid problems. nullopt: pass the problem on.
std::optional<RunOutcome> reject_before_call(const Problem& problem, const Profile& profile,
                                             bool kernel_checks_contract);

}  // namespace kda::adapters
