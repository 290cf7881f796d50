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
KDA_HD float clamp(float a, float lo, float hi) {  // NaN gives lo
#if defined(__CUDA_ARCH__)
  return fminf(fmaxf(a, lo), hi);
#else
  return std::fmin(std::fmax(a, lo), hi);
#endif
}
// y / d, IEEE-exact, for operands whose quotient neither overflows nor underflows and d normal (the
// caller's domain): on the device the division's fast path alone (reciprocal, two Newton steps and
// the remainder's correction: the result __fdiv_rn gives when its range check passes), without the
// check and its call to the slow path, which would make every caller a region of its own.
KDA_HD float div_in_range(float y, float d) {
#if defined(__CUDA_ARCH__)
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(d));
  r = __fmaf_rn(r, __fmaf_rn(-d, r, 1.0f), r);
  const float q = __fmul_rn(y, r);
  return __fmaf_rn(r, __fmaf_rn(-d, q, y), q);
#else
  return y / d;
#endif
}
KDA_HD float abs(float a) {
#if defined(__CUDA_ARCH__)
  return fabsf(a);
#else
  return std::fabs(a);
#endif
}
KDA_HD float max(float a, float b) {  // NaN gives the other
#if defined(__CUDA_ARCH__)
  return fmaxf(a, b);
#else
  return std::fmax(a, b);
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

// c ? a : b with both sides computed: on the device one selp (inline PTX, so that the compiler cannot
// turn it back into a branch around the side it would skip, which splits an element-wise loop into one
// region per element and serialises them), on the host a conditional.
KDA_HD float select(bool c, float a, float b) {
#if defined(__CUDA_ARCH__)
  float r;
  asm("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %3, 0;\n\tselp.f32 %0, %1, %2, p;\n\t}"
      : "=f"(r)
      : "f"(a), "f"(b), "r"(static_cast<int>(c)));
  return r;
#else
  return c ? a : b;
#endif
}

// p * 2^n for n in [-150, 128]: two exact power-of-two factors, so the product rounds once (into the
// subnormals too).
KDA_HD float scale_by_power_of_two(float p, int n) {
  const int half = n / 2;
  const float f1 = bits_to_float(static_cast<std::uint32_t>(half + 127) << 23);
  const float f2 = bits_to_float(static_cast<std::uint32_t>(n - half + 127) << 23);
  return mul(mul(p, f1), f2);
}

// Cephes expf's core: e^x = p 2^n with n = rint(x / ln2) and p a degree-7 polynomial in r = x - n ln2
// (|r| <= ln2 / 2; ln2 split in two so that n * hi is exact), for x inside exp's clamp.
struct ExpParts {
  float p, n;
};
KDA_HD ExpParts exp_parts(float inside) {
  const float n = rint(mul(inside, 1.44269502162933349609375f));
  float r = fma(n, -0.693359375f, inside);
  r = fma(n, 2.12194440e-4f, r);
  float p = 1.9875691500e-4f;
  p = fma(p, r, 1.3981999507e-3f);
  p = fma(p, r, 8.3334519073e-3f);
  p = fma(p, r, 4.1665795894e-2f);
  p = fma(p, r, 1.6666665459e-1f);
  p = fma(p, r, 5.0000001201e-1f);
  p = fma(p, mul(r, r), r);
  return {add(p, 1.0f), n};
}

// e^x: exp_parts, then the exact scaling by 2^n. Without branches (as softplus and log1p_nonnegative
// below), so that an element-wise loop over these stays one basic block: the polynomial runs on x
// clamped into [-103.97, 88.72], and Inf, 0 and NaN are selected for the arguments outside.
KDA_HD float exp(float x) {
  constexpr float kAbove = 88.72283935546875f;       // ln(FLT_MAX): +Inf above
  constexpr float kBelow = -103.97208404541015625f;  // ln(smallest subnormal / 2): 0 below
  const ExpParts e = exp_parts(clamp(x, kBelow, kAbove));
  const float scaled = scale_by_power_of_two(e.p, static_cast<int>(e.n));
  const float outside = x > kAbove ? bits_to_float(0x7f800000u) : 0.0f;
  return select(is_nan(x), x, select(x > kAbove || x < kBelow, outside, scaled));
}

// e^x for x <= 88 where the result is a normal float, 0 where it would be below e^-87 (the few normal
// results under 1.65e-38 included), NaN for NaN: exp's bits on [-87, 88], with the scaling by 2^n as
// an add to p's exponent field (exact: from x >= -87, p 2^n >= 2^-126), 19 instructions rather than
// exp's 30. For arguments known not to exceed 88, where a flushed subnormal changes nothing (the
// chunked kernel's lower-bound gate: alpha = e^g with g <= 0).
KDA_HD float exp_normal(float x) {
  constexpr float kFlush = -87.0f;
  const ExpParts e = exp_parts(x < kFlush ? kFlush : x);
  const float scaled = bits_to_float(float_to_bits(e.p) + (static_cast<std::uint32_t>(static_cast<int>(e.n)) << 23));
  return select(is_nan(x), x, select(x < kFlush, 0.0f, scaled));
}

// x = m 2^e with m in [sqrt(1/2), sqrt(2)), for finite normal x > 0: Cephes logf's split (m halved
// where the significand exceeds sqrt(2)'s float, 0x3fb504f3) by one integer subtraction: x's bits less
// those of 0x3f3504f4 (that significand plus one ulp, exponent -1) carry into the exponent exactly where m
// is halved.
struct LogSplit {
  float m;
  int e;
};
KDA_HD LogSplit log_split(float x) {
  constexpr std::uint32_t kHalfSqrt2 = 0x3f3504f4u;
  const std::uint32_t offset = float_to_bits(x) - kHalfSqrt2;
  return {bits_to_float((offset & 0x007fffffu) + kHalfSqrt2), static_cast<int>(offset) >> 23};
}

// ln(x) for finite normal x >= 1 (the only arguments softplus gives it). Cephes logf: log_split, a
// polynomial in f = m - 1, ln2 split in two.
KDA_HD float log_at_least_one(float x) {
  const auto [m, e] = log_split(x);
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

// ln(1 + y) for 0 <= y < 2^64: ln(u) y / (u - 1) with u = 1 + y rounded, which cancels u's rounding
// error; y itself where u rounds to 1 (selected: the quotient is then unused). Where it is used,
// y > 2^-24 and u - 1 >= 2^-23, and the quotient lies in (0.5, 2): div_in_range's domain.
KDA_HD float log1p_nonnegative(float y) {
  const float u = add(1.0f, y);
  const float corrected = mul(log_at_least_one(u), div_in_range(y, sub(u, 1.0f)));
  return select(u == 1.0f, y, corrected);
}

KDA_HD float sigmoid(float x) { return div(1.0f, add(1.0f, exp(-x))); }

// softplus with the threshold 20 every peer uses (kda-facts §1): x itself above it (and for NaN),
// selected after log1p(e^x) of x clamped to 20; softplus_from takes that e^x from the caller.
KDA_HD float softplus_from(float x, float e) {
  return select(is_nan(x) || x > 20.0f, x, log1p_nonnegative(e));
}
KDA_HD float softplus(float x) { return softplus_from(x, exp(x > 20.0f ? 20.0f : x)); }

// The chunked kernel's softplus gate as one decay, alpha = e^g = 2^(rate softplus(x)) with rate =
// -A log2(e) (one rounding, per head, beside A's own), and softplus(x) = max(x, 0) + log1p(e^-|x|): the
// log's argument lies in (0, 1], so neither range reduction nor log1p's correction of 1 + y is needed,
// and no threshold (above x = 16.6 the log's term is under half an ulp of x, as the peers' threshold of 20
// gives). Its polynomials are minimax fits (scripts/kernel-dev/fit-gate-polynomials.py) of 2^f on
// [-1/2, 1/2] (1.9e-9 relative before its coefficients' rounding) and of log1p(y) on [0, 1] (4.7e-9). The gate kernel's loop
// takes 59 SASS instructions an element with it, 91 with exp, log1p and exp again; decode_math_test holds
// it within 4 x 2^-24 (1 + |g|) of the exact decay, where fp32's rounding of g alone costs 2^-24 |g|.
KDA_HD float exp2_fraction(float f) {  // 2^f for |f| <= 1/2
  float q = 1.534579496e-04f;
  q = fma(q, f, 1.339993090e-03f);
  q = fma(q, f, 9.618489072e-03f);
  q = fma(q, f, 5.550328642e-02f);
  q = fma(q, f, 2.402264625e-01f);
  q = fma(q, f, 6.931471825e-01f);
  return fma(q, f, 1.0f);
}
// 2^z for z in [-125, 64]: 2^(z - n) with n = rint(z), scaled by an add to its exponent field (exact:
// the result is normal).
KDA_HD float exp2_normal_range(float z) {
  constexpr float kRound = 12582912.0f;  // 1.5 x 2^23: z + kRound rounds z to an integer (ties to even)
  const float m = add(z, kRound);        // whose bits end in n: m's bits shifted by 23 are n's exponent add
  return bits_to_float(float_to_bits(exp2_fraction(sub(z, sub(m, kRound)))) + (float_to_bits(m) << 23));
}
KDA_HD float log1p_unit(float y) {  // ln(1 + y) for y in [0, 1], as y + y^2 q(y)
  float q = -3.243850777e-03f;
  q = fma(q, y, 1.985067688e-02f);
  q = fma(q, y, -5.695805699e-02f);
  q = fma(q, y, 1.060350537e-01f);
  q = fma(q, y, -1.530550420e-01f);
  q = fma(q, y, 1.967590898e-01f);
  q = fma(q, y, -2.495412827e-01f);
  q = fma(q, y, 3.332996070e-01f);
  q = fma(q, y, -4.999990165e-01f);
  return fma(mul(q, y), y, y);
}
// e^-|x| as 2^t, t clamped at -64 (a smaller e^-|x| adds nothing to max(x, 0), and its decay rounds to 1;
// t <= 0 for every x but NaN, whose decay is selected, so no upper bound); alpha 0 where 2^(rate softplus)
// is below 2^-125 (as exp_normal's flush); NaN for NaN.
KDA_HD float softplus_decay(float x, float rate) {
  const float t = max(mul(-abs(x), 1.44269502162933349609375f), -64.0f);
  const float z = mul(rate, add(max(x, 0.0f), log1p_unit(exp2_normal_range(t))));
  const bool flushed = z < -125.0f;
  return select(is_nan(x), x, select(flushed, 0.0f, exp2_normal_range(flushed ? -125.0f : z)));
}

// fp32 -> bf16 bits, round to nearest even; NaN stays a quiet NaN (as kda::f32_to_bf16).
KDA_HD std::uint16_t to_bf16_bits(float x) {
  const std::uint32_t u = float_to_bits(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x0040u);
  return static_cast<std::uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
KDA_HD float from_bf16_bits(std::uint16_t b) { return bits_to_float(static_cast<std::uint32_t>(b) << 16); }

}  // namespace kda::kernels::math
