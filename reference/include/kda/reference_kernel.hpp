#pragma once
// The CPU reference behind the Kernel interface: fp64 (the oracle) or fp32, recurrent or chunked.
// It enforces the strict profile, so an invalid problem is rejected before anything is written.
#include <memory>

#include "kda/kernel.hpp"
#include "kda/reference.hpp"

namespace kda {

enum class Precision { fp64, fp32 };

// Names: "ref-fp64", "ref-fp32" (recurrent) and "ref-fp64-chunked", "ref-fp32-chunked".
std::unique_ptr<Kernel> make_reference_kernel(Precision precision, Algorithm algorithm);

}  // namespace kda
