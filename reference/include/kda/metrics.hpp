#pragma once
// Error metrics between an output and the fp64 reference, as KDA peers report them.
#include <span>

namespace kda {

// RMS(ref - out) / RMS(ref): the metric FLA and FlashInfer use. 0 when both are all zero;
// +Inf when out is non-zero against an all-zero ref, or when any element is NaN or Inf.
double rel_rms(std::span<const double> out, std::span<const double> ref);
double max_abs_diff(std::span<const double> out, std::span<const double> ref);

}  // namespace kda
