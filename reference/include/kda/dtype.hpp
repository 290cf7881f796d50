#pragma once
// Element types of KDA tensors and the exact bf16/fp16 <-> fp32 conversions the oracle relies on.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace kda {

enum class DType : std::uint8_t { bf16, f16, f32, f64, i32, i64 };

constexpr std::size_t size_of(DType t) {
  switch (t) {
    case DType::bf16:
    case DType::f16: return 2;
    case DType::f32:
    case DType::i32: return 4;
    case DType::f64:
    case DType::i64: return 8;
  }
  return 0;
}

constexpr bool is_float(DType t) { return t != DType::i32 && t != DType::i64; }

std::string_view name_of(DType t);                      // "bf16", "f16", "f32", ...
std::optional<DType> dtype_from_name(std::string_view);  // inverse of name_of

// bf16: the upper half of an IEEE binary32. Widening is exact.
float bf16_to_f32(std::uint16_t bits);
// Round to nearest, ties to even; NaN stays NaN (quiet, sign kept); overflow rounds to +-Inf.
std::uint16_t f32_to_bf16(float x);

// fp16: IEEE binary16 (5-bit exponent, 10-bit mantissa, subnormals). Widening is exact.
float f16_to_f32(std::uint16_t bits);
// Round to nearest, ties to even, with correct subnormal rounding; NaN stays NaN; overflow gives +-Inf.
std::uint16_t f32_to_f16(float x);

// The value a kernel computing in fp32 stores into dtype t: x rounded to fp32, then to t, widened back.
double round_to(DType t, double x);

}  // namespace kda
