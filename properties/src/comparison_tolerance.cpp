// The tolerance policy: unit roundoffs, the rel-RMS bound and the elementwise tolerance.
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "kda/properties/comparison.hpp"

namespace kda::props {

double unit_roundoff(DType dtype) {
  switch (dtype) {
    case DType::bf16: return 0x1p-8;
    case DType::f16: return 0x1p-11;
    case DType::f32: return 0x1p-24;
    case DType::f64: return 0x1p-53;
    default: throw std::invalid_argument("unit_roundoff: " + std::string(name_of(dtype)) + " is not a float type");
  }
}

double TolerancePolicy::floor(DType output_dtype) const {
  return std::max(unit_roundoff(output_dtype), compute_roundoff);
}

double TolerancePolicy::bound(double model_error, DType output_dtype) const {
  return alpha * model_error + floor(output_dtype);
}

double TolerancePolicy::element_tolerance(double model_diff, double model_rms_diff, double oracle, double oracle_rms,
                                          DType dtype) const {
  return alpha * std::max(std::abs(model_diff), model_rms_diff) +
         floor(dtype) * std::max(std::abs(oracle), oracle_rms);
}

}  // namespace kda::props
