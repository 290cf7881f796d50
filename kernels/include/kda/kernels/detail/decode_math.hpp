#pragma once
// The scalar fp32 arithmetic of the decode kernel, shared by the CUDA kernel and its CPU simulation so
// that both round at the same points to the same bits. Every operation rounds once, to nearest even:
// on the device through the _rn intrinsics (which nvcc never contracts into an FMA nor reorders), on
// the host through plain operators in a translation unit compiled with -ffp-contract=off, and std::fma.
// Division and square root are IEEE-exact on both sides (nvcc's default -prec-div/-prec-sqrt).
// exp and log are polynomials over these operations rather than the math libraries': CUDA's expf goes
// through the MUFU.EX2 approximation and glibc's through tables, and neither can be reproduced on the
// other side. Both are Cephes' single-precision kernels (about 1 ulp on the ranges used here).
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define KDA_HD __host__ __device__ __forceinline__
#else
#define KDA_HD inline
#include <cmath>
#endif

namespace kda::kernels::math {

KDA_HD float add(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
KDA_HD float sub(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}
KDA_HD float mul(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
KDA_HD float fma(float a, float b, float c) {  // a * b + c, rounded once
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}
KDA_HD float div(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}
KDA_HD float sqrt(float a) {
#if defined(__CUDA_ARCH__)
  return __fsqrt_rn(a);
#else
  return std::sqrt(a);
#endif
}
KDA_HD float rint(float a) {  // to the nearest integer, ties to even
#if defined(__CUDA_ARCH__)
  return rintf(a);
#else
  return std::rint(a);
#endif
}
KDA_HD float bits_to_float(std::uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}
KDA_HD std::uint32_t float_to_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}
KDA_HD bool is_nan(float x) { return x != x; }

// p * 2^n for n in [-150, 128]: two exact power-of-two factors, so the product rounds once (into the
// subnormals too).
KDA_HD float scale_by_power_of_two(float p, int n) {
  const int half = n / 2;
  const float f1 = bits_to_float(static_cast<std::uint32_t>(half + 127) << 23);
  const float f2 = bits_to_float(static_cast<std::uint32_t>(n - half + 127) << 23);
  return mul(mul(p, f1), f2);
}

// e^x. Cephes expf: x = n ln2 + r with |r| <= ln2 / 2 (ln2 split in two so n * hi is exact), a degree-7
// polynomial for e^r, then the exact scaling by 2^n.
KDA_HD float exp(float x) {
  if (is_nan(x)) return x;
  if (x > 88.72283935546875f) return bits_to_float(0x7f800000u);  // above ln(FLT_MAX): +Inf
  if (x < -103.97208404541015625f) return 0.0f;                   // below ln(smallest subnormal / 2)
  const float n = rint(mul(x, 1.44269502162933349609375f));
  float r = fma(n, -0.693359375f, x);
  r = fma(n, 2.12194440e-4f, r);
  float p = 1.9875691500e-4f;
  p = fma(p, r, 1.3981999507e-3f);
  p = fma(p, r, 8.3334519073e-3f);
  p = fma(p, r, 4.1665795894e-2f);
  p = fma(p, r, 1.6666665459e-1f);
  p = fma(p, r, 5.0000001201e-1f);
  p = fma(p, mul(r, r), r);
  p = add(p, 1.0f);
  return scale_by_power_of_two(p, static_cast<int>(n));
}

// ln(x) for finite normal x >= 1 (the only arguments softplus gives it). Cephes logf: x = m 2^e with
// m in [sqrt(1/2), sqrt(2)), a polynomial in f = m - 1, ln2 split in two.
KDA_HD float log_at_least_one(float x) {
  const std::uint32_t u = float_to_bits(x);
  int e = static_cast<int>(u >> 23) - 127;
  float m = bits_to_float((u & 0x007fffffu) | 0x3f800000u);  // in [1, 2)
  if (m > 1.41421356237309504880f) m = mul(m, 0.5f), ++e;
  const float f = sub(m, 1.0f);
  const float z = mul(f, f);
  float y = 7.0376836292e-2f;
  y = fma(y, f, -1.1514610310e-1f);
  y = fma(y, f, 1.1676998740e-1f);
  y = fma(y, f, -1.2420140846e-1f);
  y = fma(y, f, 1.4249322787e-1f);
  y = fma(y, f, -1.6668057665e-1f);
  y = fma(y, f, 2.0000714765e-1f);
  y = fma(y, f, -2.4999993993e-1f);
  y = fma(y, f, 3.3333331174e-1f);
  y = mul(mul(y, f), z);
  const float fe = static_cast<float>(e);
  y = fma(fe, -2.12194440e-4f, y);
  y = fma(z, -0.5f, y);
  return fma(fe, 0.693359375f, add(f, y));
}

// ln(1 + y) for y >= 0: ln(u) y / (u - 1) with u = 1 + y rounded, which cancels u's rounding error.
KDA_HD float log1p_nonnegative(float y) {
  const float u = add(1.0f, y);
  if (u == 1.0f) return y;
  return mul(log_at_least_one(u), div(y, sub(u, 1.0f)));
}

KDA_HD float sigmoid(float x) { return div(1.0f, add(1.0f, exp(-x))); }

// softplus with the threshold 20 every peer uses (kda-facts §1).
KDA_HD float softplus(float x) {
  if (is_nan(x) || x > 20.0f) return x;
  return log1p_nonnegative(exp(x));
}

// fp32 -> bf16 bits, round to nearest even; NaN stays a quiet NaN (as kda::f32_to_bf16).
KDA_HD std::uint16_t to_bf16_bits(float x) {
  const std::uint32_t u = float_to_bits(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x0040u);
  return static_cast<std::uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
KDA_HD float from_bf16_bits(std::uint16_t b) { return bits_to_float(static_cast<std::uint32_t>(b) << 16); }

}  // namespace kda::kernels::math
