// The rules of the Hopper tensor-core model (tensor_core_model.hpp), each on a case where it gives other
// bits than an fp32 fma chain would, so that a model that silently fell back to IEEE arithmetic fails
// here. That the hardware follows these rules is tests/gpu/tensor_core_model_test's job.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "kda/kernels/detail/decode_math.hpp"
#include "kda/kernels/tensor_core_model.hpp"

namespace kda::kernels::tensor_core {
namespace {

std::uint32_t bits(float x) { return math::float_to_bits(x); }

float dot(Operand format, std::initializer_list<float> a, std::initializer_list<float> b, float c) {
  return dot_add(format, static_cast<int>(a.size()), a.begin(), b.begin(), c);
}

// Products are exact and add exactly while they fit in 25 fractional bits of the largest term.
TEST(TensorCoreModel, ExactWhereTheTermsFit) {
  EXPECT_EQ(dot(Operand::f16, {1.5f, -2.0f, 0.25f}, {3.0f, 0.5f, 8.0f}, 0.125f), 4.5f - 1.0f + 2.0f + 0.125f);
  // Four products of 2^-25 next to 1: each is one unit of 2^-25, kept, and together they make one fp32 ulp
  // (an fma chain rounds each away: 1 + 2^-25 is 1 to nearest).
  const float a = std::ldexp(1.0f, -12), b = std::ldexp(1.0f, -13);
  EXPECT_EQ(dot(Operand::f16, {a, a, a, a}, {b, b, b, b}, 1.0f), 1.0f + std::ldexp(1.0f, -23));
}

// The sum rounds toward zero: 1 + 1.5 ulp gives 1 + 1 ulp (an fma rounds it to nearest, 1 + 2 ulp).
TEST(TensorCoreModel, RoundsTheSumTowardZero) {
  const float a = 1.5f * std::ldexp(1.0f, -12), b = std::ldexp(1.0f, -11);
  const float got = dot(Operand::f16, {a}, {b}, 1.0f);
  EXPECT_EQ(got, 1.0f + std::ldexp(1.0f, -23));
  EXPECT_NE(got, std::fma(a, b, 1.0f));
  EXPECT_EQ(dot(Operand::f16, {-a}, {b}, -1.0f), -(1.0f + std::ldexp(1.0f, -23))) << "toward zero, not down";
}

// Each term is truncated to a multiple of 2^(E - 25), E the largest term's exponent: five products of
// 2^-26 next to 1 vanish (their exact sum, 1 + 0.625 ulp, is 1 + 1 ulp to nearest), and negative ones
// are cut toward zero, not down (which would take 1 + 1.25 ulp off).
TEST(TensorCoreModel, TruncatesEachTermAtTheLargestExponent) {
  const float t = std::ldexp(1.0f, -13);
  EXPECT_EQ(dot(Operand::f16, {1.0f, t, t, t, t, t}, {1.0f, t, t, t, t, t}, 0.0f), 1.0f);
  EXPECT_EQ(dot(Operand::f16, {-1.0f, t, t, t, t, t}, {1.0f, -t, -t, -t, -t, -t}, 0.0f), -1.0f);
  // The accumulator is a term like the others: next to products that cancel, a c of half a unit is lost.
  EXPECT_EQ(dot(Operand::tf32, {4.0f, -4.0f}, {4.0f, 4.0f}, std::ldexp(1.0f, -22)), 0.0f);
}

// An fp16 operand below fp16's normal range counts at exponent -14 when the terms are aligned: the
// product of two 2^-20 (value 2^-40, nominal exponent -28) hides a c of 2^-60 that alignment at -40
// would keep. As tf32 (fp32's range) the same operands are normal and c survives.
TEST(TensorCoreModel, SubnormalF16OperandsAlignAtTheSmallestNormalExponent) {
  const float s = std::ldexp(1.0f, -20), c = std::ldexp(1.0f, -60);
  EXPECT_EQ(dot(Operand::f16, {s}, {s}, c), std::ldexp(1.0f, -40));
  EXPECT_EQ(dot(Operand::tf32, {s}, {s}, c), std::ldexp(1.0f, -40) + c);
}

TEST(TensorCoreModel, ZerosSubnormalsAndSpecials) {
  EXPECT_EQ(bits(dot(Operand::f16, {1.0f, -1.0f}, {1.0f, 1.0f}, -0.0f)), 0u) << "an exact cancellation is +0";
  const float tiny = std::ldexp(1.0f, -140);  // an fp32 subnormal result, kept to 2^-149
  EXPECT_EQ(dot(Operand::tf32, {std::ldexp(1.0f, -70)}, {std::ldexp(1.0f, -70)}, 0.0f), tiny);
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(dot(Operand::f16, {inf}, {2.0f}, 1.0f), inf);
  EXPECT_EQ(bits(dot(Operand::f16, {inf}, {0.0f}, 1.0f)), 0x7fffffffu) << "NaN, canonical";
  EXPECT_EQ(dot(Operand::tf32, {std::ldexp(1.0f, 100)}, {std::ldexp(1.0f, 100)}, 0.0f), inf) << "overflow";
}

// mma_sum chains k-steps of the format's width onto the accumulator, in ascending order.
TEST(TensorCoreModel, MmaSumChainsKSteps) {
  float a[32], b[32];
  for (int s = 0; s < 32; ++s) a[s] = static_cast<float>(s % 5) - 2.0f, b[s] = 0.5f * static_cast<float>(s % 3);
  float step_by_step = 0.75f;
  for (int s0 = 0; s0 < 32; s0 += 8) step_by_step = dot_add(Operand::tf32, 8, a + s0, b + s0, step_by_step);
  const auto at = [](const float* x) { return [x](int s) { return x[s]; }; };
  EXPECT_EQ(bits(mma_sum(Operand::tf32, 32, 0.75f, at(a), at(b))), bits(step_by_step));
  const float f16_steps = dot_add(Operand::f16, 16, a + 16, b + 16, dot_add(Operand::f16, 16, a, b, 0.75f));
  EXPECT_EQ(bits(mma_sum(Operand::f16, 32, 0.75f, at(a), at(b))), bits(f16_steps));
}

}  // namespace
}  // namespace kda::kernels::tensor_core
