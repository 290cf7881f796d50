#include "kda/dtype.hpp"

#include <bit>
#include <cmath>

namespace kda {

std::string_view name_of(DType t) {
  switch (t) {
    case DType::bf16: return "bf16";
    case DType::f16: return "f16";
    case DType::f32: return "f32";
    case DType::f64: return "f64";
    case DType::i32: return "i32";
    case DType::i64: return "i64";
  }
  return "?";
}

std::optional<DType> dtype_from_name(std::string_view s) {
  for (DType t : {DType::bf16, DType::f16, DType::f32, DType::f64, DType::i32, DType::i64})
    if (name_of(t) == s) return t;
  return std::nullopt;
}

float bf16_to_f32(std::uint16_t bits) { return std::bit_cast<float>(std::uint32_t{bits} << 16); }

std::uint16_t f32_to_bf16(float x) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x0040u);  // quiet NaN
  // Adding 0x7fff plus the lowest kept bit rounds to nearest, ties to even; a carry into the
  // exponent is the correct rounding up (and turns the largest finite values into Inf).
  const std::uint32_t lsb = (u >> 16) & 1u;
  return static_cast<std::uint16_t>((u + 0x7fffu + lsb) >> 16);
}

float f16_to_f32(std::uint16_t h) {
  const std::uint32_t sign = std::uint32_t{h & 0x8000u} << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  const std::uint32_t man = h & 0x3ffu;
  if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (man << 13));  // Inf / NaN (payload kept)
  if (exp != 0) return std::bit_cast<float>(sign | ((exp + 112) << 23) | (man << 13));
  // Zero or subnormal: man * 2^-24 is exact in fp32.
  const float mag = std::ldexp(static_cast<float>(man), -24);
  return sign ? -mag : mag;
}

std::uint16_t f32_to_f16(float x) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(x);
  const std::uint16_t sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
  const std::uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));  // NaN
  if (abs >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // >= 65520 rounds to Inf
  const int exp = static_cast<int>(abs >> 23) - 127;
  if (exp >= -14) {
    // Normal fp16: drop 13 mantissa bits with round-to-nearest-even; a carry bumps the exponent.
    const std::uint32_t rebased = abs - (112u << 23);
    const std::uint32_t lsb = (rebased >> 13) & 1u;
    return static_cast<std::uint16_t>(sign | ((rebased + 0xfffu + lsb) >> 13));
  }
  if (exp < -25) return sign;  // below half the smallest subnormal: rounds to zero
  // Subnormal fp16: value = m * 2^-24 with m = (1.mant) * 2^(exp+24); shift the 24-bit significand.
  const std::uint32_t significand = (abs & 0x7fffffu) | 0x800000u;
  const int shift = -exp - 1;  // 14 (exp = -15) to 24 (exp = -25) bits dropped
  const std::uint32_t kept = significand >> shift;
  const std::uint32_t rest = significand & ((1u << shift) - 1);
  const std::uint32_t half = 1u << (shift - 1);
  const std::uint32_t rounded = kept + ((rest > half || (rest == half && (kept & 1u))) ? 1u : 0u);
  return static_cast<std::uint16_t>(sign | rounded);  // rounded == 0x400 becomes the smallest normal
}

double round_to(DType t, double x) {
  switch (t) {
    case DType::bf16: return bf16_to_f32(f32_to_bf16(static_cast<float>(x)));
    case DType::f16: return f16_to_f32(f32_to_f16(static_cast<float>(x)));
    case DType::f32: return static_cast<float>(x);
    default: return x;
  }
}

}  // namespace kda
