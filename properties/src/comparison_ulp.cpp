// ULP distance: IEEE bit patterns mapped onto a line of consecutive integers, one per value.
#include <bit>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "kda/properties/comparison.hpp"

namespace kda::props {

namespace {

// Sign and magnitude bits of x (already a value of dtype); the magnitude bits of positive floats
// count up with the value, so a value's position on the line is +magnitude or -magnitude.
struct SignMagnitude {
  bool negative;
  std::uint64_t magnitude;
};

SignMagnitude bits_of(DType dtype, double x) {
  switch (dtype) {
    case DType::bf16: {
      const std::uint16_t b = f32_to_bf16(static_cast<float>(x));
      return {(b & 0x8000u) != 0, b & 0x7fffu};
    }
    case DType::f16: {
      const std::uint16_t b = f32_to_f16(static_cast<float>(x));
      return {(b & 0x8000u) != 0, b & 0x7fffu};
    }
    case DType::f32: {
      const auto b = std::bit_cast<std::uint32_t>(static_cast<float>(x));
      return {(b >> 31) != 0, b & 0x7fffffffu};
    }
    case DType::f64: {
      const auto b = std::bit_cast<std::uint64_t>(x);
      return {(b >> 63) != 0, b & 0x7fffffffffffffffu};
    }
    default: throw std::invalid_argument("ulp_distance: " + std::string(name_of(dtype)) + " is not a float type");
  }
}

}  // namespace

double ulp_distance(DType dtype, double got, double want) {
  const SignMagnitude a = bits_of(dtype, round_to(dtype, got)), b = bits_of(dtype, round_to(dtype, want));
  if (std::isnan(got) || std::isnan(want)) return std::numeric_limits<double>::infinity();
  // Magnitudes stay below 2^63, so neither the difference nor the sum overflows.
  if (a.negative == b.negative)
    return static_cast<double>(a.magnitude > b.magnitude ? a.magnitude - b.magnitude : b.magnitude - a.magnitude);
  return static_cast<double>(a.magnitude + b.magnitude);
}

}  // namespace kda::props
