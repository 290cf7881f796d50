#pragma once
// The CPU reference behind the Kernel interface: fp64 (the oracle) or fp32, recurrent or chunked.
// It enforces a profile (strict unless told otherwise), so an invalid problem is rejected before
// anything is written.
#include <memory>

#include "kda/kernel.hpp"
#include "kda/reference.hpp"

namespace kda {

enum class Precision { fp64, fp32 };

// Names: "ref-fp64", "ref-fp32" (recurrent) and "ref-fp64-chunked", "ref-fp32-chunked". As the precision
// model of a third-party kernel it enforces that kernel's profile (which must outlive it): a call valid
// there (a pool alignment strict demands and the kernel does not, say) is one the model must run.
std::unique_ptr<Kernel> make_reference_kernel(Precision precision, Algorithm algorithm,
                                              const Profile& profile = profile_strict());

}  // namespace kda
