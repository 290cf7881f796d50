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
