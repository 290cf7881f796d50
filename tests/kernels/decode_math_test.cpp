// The decode kernel's own exp and log (decode_math.hpp) against the fp64 library functions, in units in
// the last place of the fp32 result, over the ranges the gate, beta and decay reach. These polynomials
// replace CUDA's expf/log1pf so that the device and the simulation agree bit for bit; this checks that
// they are also accurate (Cephes' kernels: about 1 ulp for exp, under 3 for the composed functions).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "kda/kernels/detail/decode_math.hpp"

namespace kda::kernels::math {
namespace {

// |got - want| in ulps of fp32 at want (the spacing of floats next to want, subnormals included).
double ulps(float got, double want) {
  const auto w = static_cast<float>(want);
  if (std::isinf(w) || std::isinf(got)) return got == w ? 0.0 : std::numeric_limits<double>::infinity();
  const double spacing = w == 0 ? std::ldexp(1.0, -149) : std::nextafter(std::fabs(w), INFINITY) - std::fabs(w);
  return std::fabs(got - want) / spacing;
}

// The worst error over an even sweep and as many uniform draws of [lo, hi].
template <class F, class G>
double worst_ulps(float lo, float hi, F f, G exact) {
  constexpr int kPoints = 200000;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> draw(lo, hi);
  double worst = 0;
  for (int i = 0; i < 2 * kPoints; ++i) {
    const float x = i < kPoints ? lo + (hi - lo) * static_cast<float>(i) / kPoints : draw(rng);
    worst = std::max(worst, ulps(f(x), exact(static_cast<double>(x))));
  }
  return worst;
}

TEST(DecodeMath, ExpWithinOneAndAHalfUlp) {
  const auto e = [](double x) { return std::exp(x); };
  EXPECT_LE(worst_ulps(-103.9f, 88.7f, exp, e), 1.5);  // down into the subnormal results
  EXPECT_LE(worst_ulps(-5.0f, 0.0f, exp, e), 1.5);     // the decays
}

TEST(DecodeMath, Log1pSoftplusSigmoidWithinThreeUlps) {
  EXPECT_LE(worst_ulps(0.0f, 4.9e8f, log1p_nonnegative, [](double x) { return std::log1p(x); }), 3.0);
  EXPECT_LE(worst_ulps(0.0f, 1e-3f, log1p_nonnegative, [](double x) { return std::log1p(x); }), 3.0);
  EXPECT_LE(worst_ulps(1.0f, 1e30f, log_at_least_one, [](double x) { return std::log(x); }), 1.0);
  EXPECT_LE(worst_ulps(-100.0f, 30.0f, softplus, [](double x) { return x > 20 ? x : std::log1p(std::exp(x)); }), 3.0);
  // Below -80, 1 + e^-x nears the fp32 range: the result is a subnormal or 0, as in any fp32 sigmoid.
  EXPECT_LE(worst_ulps(-80.0f, 100.0f, sigmoid, [](double x) { return 1 / (1 + std::exp(-x)); }), 3.0);
}

// exp_normal is exp with a cheaper scaling: the same bits wherever the result is normal and x >= -87,
// on an even sweep of [-87, 88] and on every float of two binades.
TEST(DecodeMath, ExpNormalHasExpsBitsOnItsRange) {
  constexpr int kPoints = 1000000;
  for (int i = 0; i <= kPoints; ++i) {
    const float x = -87.0f + 175.0f * static_cast<float>(i) / kPoints;
    ASSERT_EQ(float_to_bits(exp_normal(x)), float_to_bits(exp(x))) << "x = " << x;
  }
  for (std::uint32_t u = float_to_bits(0.5f); u < float_to_bits(2.0f); ++u)
    ASSERT_EQ(float_to_bits(exp_normal(-bits_to_float(u))), float_to_bits(exp(-bits_to_float(u))));
  EXPECT_EQ(exp_normal(-87.0f), exp(-87.0f));
  EXPECT_GT(exp_normal(-87.0f), 0x1p-126f);  // still normal at the flush point
  EXPECT_EQ(exp_normal(-87.01f), 0.0f);
  EXPECT_EQ(exp_normal(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_EQ(exp_normal(0.0f), 1.0f);
  EXPECT_TRUE(std::isnan(exp_normal(std::nanf(""))));
}

// log_split is Cephes logf's split of x into exponent and significand (halved above sqrt(2)'s float),
// done by one integer subtraction: the same m and e as that form on every float of [1, 4), an even sweep
// up to 1e30 and below 1.
TEST(DecodeMath, LogSplitIsCephesSplit) {
  const auto check = [](float x) {
    const std::uint32_t u = float_to_bits(x);
    int e = static_cast<int>(u >> 23) - 127;
    float m = bits_to_float((u & 0x007fffffu) | 0x3f800000u);
    if (m > 1.41421356237309504880f) m = mul(m, 0.5f), ++e;
    const LogSplit split = log_split(x);
    ASSERT_EQ(split.e, e) << x;
    ASSERT_EQ(split.m, m) << x;
  };
  for (std::uint32_t u = float_to_bits(1.0f); u < float_to_bits(4.0f); ++u) check(bits_to_float(u));
  for (int i = 0; i <= 1000000; ++i) check(std::exp(-40.0f + 109.0f * static_cast<float>(i) / 1000000));
}

// The chunked kernel's softplus gate as one decay, alpha = e^g, g = -A softplus(x) (threshold 20), against
// the exact decay of the same fp32 A and x, in units of 2^-24 (1 + |g|): fp32 itself costs 2^-24 |g| once
// g is rounded (relative error of e^g = absolute error of g), and its three roundings that scale with
// |g| (the rate -A log2(e), softplus's sum, the product) cost up to 2^-24 |g| each, the final 2^f about 2
// units; the sweep's worst is 3.7 (the composition softplus, then exp_normal, which the kernel had: 3.3),
// for A from below Kimi's 1 .. 16 to well above it.
TEST(DecodeMath, SoftplusDecayWithinFourUnitsOfTheExactDecay) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> draw(-60.0f, 60.0f);
  for (const float A : {0.25f, 1.0f, 3.0f, 16.0f, 100.0f}) {
    const float rate = mul(-A, 1.44269502162933349609375f);
    double worst = 0;
    float worst_x = 0;
    for (int i = 0; i < 2 * 491520; ++i) {
      const float x = i < 491520 ? -60.0f + static_cast<float>(i) / 4096 : draw(rng);
      const long double sp = x > 20 ? static_cast<long double>(x) : std::log1p(std::exp(static_cast<long double>(x)));
      const long double g = -static_cast<long double>(A) * sp, exact = std::exp(g);
      if (exact < 0x1p-125L) continue;  // flushed to 0 below, as exp_normal's e^-87
      const double units = static_cast<double>(std::fabs((softplus_decay(x, rate) - exact) / exact) /
                                               (0x1p-24L * (1 - g)));
      if (units > worst) worst = units, worst_x = x;
    }
    EXPECT_LE(worst, 4.0) << "A = " << A << ", x = " << worst_x;
  }
}

TEST(DecodeMath, SoftplusDecayEdgeValues) {
  constexpr float inf = std::numeric_limits<float>::infinity();
  const float rate = mul(-16.0f, 1.44269502162933349609375f);
  EXPECT_TRUE(std::isnan(softplus_decay(std::nanf(""), rate)));
  EXPECT_EQ(softplus_decay(inf, rate), 0.0f);
  EXPECT_EQ(softplus_decay(-inf, rate), 1.0f);
  EXPECT_EQ(softplus_decay(-1000.0f, rate), 1.0f);  // e^-|x| clamped at 2^-64: no decay in fp32
  EXPECT_EQ(softplus_decay(10.0f, rate), 0.0f);     // 2^(-230.9): flushed, as exp_normal flushes
  EXPECT_GT(softplus_decay(5.0f, rate), 0x1p-125f);  // 2^(-115.6): still normal
  EXPECT_EQ(softplus_decay(0.0f, -0.0f), 1.0f);      // A = 0: no decay
  EXPECT_EQ(exp2_normal_range(-125.0f), 0x1p-125f);  // powers of two are exact at both ends
  EXPECT_EQ(exp2_normal_range(64.0f), 0x1p64f);
  EXPECT_EQ(log1p_unit(0.0f), 0.0f);
}

// exp2_normal_range rounds z to n by adding 1.5 x 2^23 (no conversion instructions): the same n as rint,
// ties to even, and so the same bits as 2^(z - n) scaled by 2^n, on a grid of [-125, 64] that holds every
// half-integer (the ties) and the quarters beside them.
TEST(DecodeMath, Exp2NormalRangeRoundsAsRint) {
  for (int i = -125 * 64; i <= 64 * 64; ++i) {
    const float z = static_cast<float>(i) / 64, n = std::rint(z);
    const float expected = std::ldexp(exp2_fraction(z - n), static_cast<int>(n));
    ASSERT_EQ(float_to_bits(exp2_normal_range(z)), float_to_bits(expected)) << "z = " << z;
  }
}

TEST(DecodeMath, EdgeValues) {
  constexpr float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(exp(0.0f), 1.0f);  // A = exp(A_log = 0) is exactly 1, as without A_log
  EXPECT_EQ(exp(-1000.0f), 0.0f);
  EXPECT_EQ(exp(-inf), 0.0f);
  EXPECT_EQ(exp(inf), inf);
  EXPECT_TRUE(std::isnan(exp(std::nanf(""))));
  EXPECT_EQ(softplus(-inf), 0.0f);
  EXPECT_EQ(softplus(25.0f), 25.0f);  // above the threshold 20: the identity
  EXPECT_EQ(softplus(inf), inf);
  EXPECT_TRUE(std::isnan(softplus(std::nanf(""))));
  // The selected special cases (the functions have no branches): where 1 + y rounds to 1, log1p is y.
  EXPECT_EQ(log1p_nonnegative(0.0f), 0.0f);
  EXPECT_EQ(log1p_nonnegative(1e-30f), 1e-30f);
  EXPECT_EQ(log1p_nonnegative(0x1p-24f), 0x1p-24f);
  EXPECT_EQ(div_in_range(3.0f, 7.0f), 3.0f / 7.0f);
  EXPECT_EQ(sigmoid(-1000.0f), 0.0f);
  EXPECT_EQ(sigmoid(1000.0f), 1.0f);
  EXPECT_EQ(from_bf16_bits(to_bf16_bits(1.00390625f)), 1.0f);  // a tie rounds to even
  EXPECT_EQ(to_bf16_bits(-inf), 0xff80u);
}

}  // namespace
}  // namespace kda::kernels::math
