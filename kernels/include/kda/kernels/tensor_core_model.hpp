#pragma once
// What one Hopper (sm_90) mma.sync computes for an output element, bit for bit, so that the chunked
// kernel's simulation gives the kernel's bits where it runs on tensor cores (docs/cuda-prefill.md,
// "CUDA vs simulation"). The model is MMA-Sim's for Hopper's mma (Xie et al., arXiv 2511.10909, and its
// public code): d = c + sum of the n products (n = 8 for m16n8k8 tf32, 16 for m16n8k16 f16) as one fused
// sum, not a chain of fma's:
//   - each product of two operands is exact; each term (the products and c) has a nominal exponent, the
//     sum of its operands' exponents (an operand below its format's normal range counts at the format's
//     smallest normal exponent, a zero at -126);
//   - every term is aligned to the largest nominal exponent E and truncated toward zero to 25 fractional
//     bits there (multiples of 2^(E - 25)); the truncated terms add exactly;
//   - the sum is rounded toward zero to fp32 (to a subnormal where it is that small; +0 where it is 0).
// Operands are given as fp32 values already in their format (fp16 values, or fp32 values truncated to
// tf32: stage_a::to_tf32). tests/gpu/tensor_core_hardware_test holds the hardware to this on random and
// adversarial operands; tests/kernels/tensor_core_model_test checks the model's own rules.
#include <cstdint>

#include "kda/kernels/detail/decode_math.hpp"

namespace kda::kernels::tensor_core {

enum class Operand : std::uint8_t { f16, tf32 };

// Products per mma k-step: m16n8k16 for f16, m16n8k8 for tf32.
constexpr int step_of(Operand format) { return format == Operand::f16 ? 16 : 8; }

namespace detail {

using math::bits_to_float;
using math::float_to_bits;

inline bool finite(float x) { return (float_to_bits(x) & 0x7f800000u) != 0x7f800000u; }

// A finite value as magnitude * 2^shift (integers) with its sign and nominal exponent.
struct Term {
  std::uint64_t magnitude;
  int shift;
  int exponent;
  bool negative;
};
inline Term term_of(float x, int smallest_exponent) {
  const std::uint32_t u = float_to_bits(x);
  const int biased = static_cast<int>(u >> 23 & 0xffu);
  const std::uint32_t fraction = u & 0x7fffffu;
  const bool negative = (u >> 31) != 0;
  if (biased == 0 && fraction == 0) return {0, 0, -126, negative};
  if (biased == 0) return {fraction, -149, smallest_exponent > -126 ? smallest_exponent : -126, negative};
  const int exponent = biased - 127;
  return {fraction | 0x800000u, biased - 150, exponent < smallest_exponent ? smallest_exponent : exponent, negative};
}

// t's value times 2^(25 - top), truncated toward zero, with its sign.
inline std::int64_t aligned(const Term& t, int top) {
  if (t.magnitude == 0) return 0;  // (a zero's shift is no scale: it could be any size)
  const int shift = t.shift + 25 - top;
  std::uint64_t m = 0;
  if (shift >= 0)
    m = t.magnitude << shift;  // only for c, by 2 at most (its exponent is at most top): under 2^27
  else if (shift > -64)
    m = t.magnitude >> -shift;
  return t.negative ? -static_cast<std::int64_t>(m) : static_cast<std::int64_t>(m);
}

// sum * 2^(top - 25) as fp32, rounded toward zero.
inline float to_fp32_toward_zero(std::int64_t sum, int top) {
  if (sum == 0) return 0.0f;
  const std::uint32_t sign = sum < 0 ? 0x80000000u : 0u;
  const std::uint64_t m = sum < 0 ? static_cast<std::uint64_t>(-sum) : static_cast<std::uint64_t>(sum);
  const int length = 64 - __builtin_clzll(m);
  const int exponent = length - 1 + top - 25;
  if (exponent >= 128) return bits_to_float(sign | 0x7f800000u);
  if (exponent >= -126) {
    const std::uint64_t top24 = length > 24 ? m >> (length - 24) : m << (24 - length);
    return bits_to_float(sign | static_cast<std::uint32_t>(exponent + 127) << 23 | (static_cast<std::uint32_t>(top24) & 0x7fffffu));
  }
  const int shift = top - 25 + 149;  // to multiples of 2^-149
  const std::uint64_t q = shift >= 0 ? m << shift : shift > -64 ? m >> -shift : 0;
  return bits_to_float(sign | static_cast<std::uint32_t>(q));
}

}  // namespace detail

// c + sum_{s < n} a[s] b[s] as one mma computes it (n <= 16).
inline float dot_add(Operand format, int n, const float* a, const float* b, float c) {
  using namespace detail;
  bool special = !finite(c);
  for (int s = 0; s < n; ++s) special = special || !finite(a[s]) || !finite(b[s]);
  if (special) {  // Inf or NaN somewhere: the fp64 sum says which (NaN as the canonical 0x7fffffff)
    double sum = 0;
    for (int s = 0; s < n; ++s) sum += static_cast<double>(a[s]) * static_cast<double>(b[s]);
    sum += c;
    return sum != sum ? bits_to_float(0x7fffffffu) : static_cast<float>(sum);
  }
  const int smallest = format == Operand::f16 ? -14 : -126;
  Term terms[17];
  terms[0] = term_of(c, -126);
  int top = terms[0].exponent;
  for (int s = 0; s < n; ++s) {
    const Term x = term_of(a[s], smallest), y = term_of(b[s], smallest);
    terms[s + 1] = {x.magnitude * y.magnitude, x.shift + y.shift, x.exponent + y.exponent, x.negative != y.negative};
    if (terms[s + 1].exponent > top) top = terms[s + 1].exponent;
  }
  std::int64_t sum = 0;
  for (int s = 0; s <= n; ++s) sum += aligned(terms[s], top);
  return to_fp32_toward_zero(sum, top);
}

// init + sum_{s < n} a(s) b(s) as the kernels' chains of mma k-steps compute it: steps of step_of(format)
// products in ascending s, each one dot_add onto the accumulator (n a multiple of the step).
template <class A, class B>
float mma_sum(Operand format, int n, float init, A a, B b) {
  const int step = step_of(format);
  float acc = init;
  for (int s0 = 0; s0 < n; s0 += step) {
    float x[16], y[16];
    for (int s = 0; s < step; ++s) x[s] = a(s0 + s), y[s] = b(s0 + s);
    acc = dot_add(format, step, x, y, acc);
  }
  return acc;
}

}  // namespace kda::kernels::tensor_core
