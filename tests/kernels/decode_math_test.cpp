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
