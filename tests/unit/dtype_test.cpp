// bf16 / fp16 <-> fp32 conversions over every bit pattern, with independent oracles:
// fp16 against the compiler's _Float16 (hardware F16C on x86-64-v3), bf16 against midpoints
// between neighbouring values (exactly representable in fp32, so ties must go to even).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

#include "kda/dtype.hpp"

using namespace kda;

namespace {
bool is_nan16(std::uint16_t h, std::uint16_t exp_mask) { return (h & exp_mask) == exp_mask && (h & ~exp_mask & 0x7fff); }
std::uint16_t f16_bits(_Float16 x) { return std::bit_cast<std::uint16_t>(x); }
}  // namespace

TEST(DType, NamesRoundTrip) {
  for (DType t : {DType::bf16, DType::f16, DType::f32, DType::f64, DType::i32, DType::i64})
    EXPECT_EQ(dtype_from_name(name_of(t)), t);
  EXPECT_FALSE(dtype_from_name("f8"));
  EXPECT_EQ(size_of(DType::bf16), 2u);
  EXPECT_EQ(size_of(DType::i64), 8u);
}

TEST(Bf16, EveryPatternWidensExactlyAndNarrowsBack) {
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const auto h = static_cast<std::uint16_t>(b);
    const float f = bf16_to_f32(h);
    ASSERT_EQ(std::bit_cast<std::uint32_t>(f), b << 16) << std::hex << b;
    if (is_nan16(h, 0x7f80)) {
      ASSERT_TRUE(std::isnan(f));
      ASSERT_TRUE(is_nan16(f32_to_bf16(f), 0x7f80)) << "NaN must stay NaN: " << std::hex << b;
      ASSERT_EQ(f32_to_bf16(f) & 0x8000, h & 0x8000) << "NaN sign kept";
    } else {
      ASSERT_EQ(f32_to_bf16(f), h) << std::hex << b;
    }
  }
}

TEST(Bf16, MidpointsTieToEvenAndNeighboursRoundToNearest) {
  // For each pair of adjacent finite bf16 values a < b (same sign), the fp32 midpoint must round to
  // the one with an even mantissa, and the fp32 neighbours of the midpoint to the nearer one.
  for (std::uint32_t b = 0; b < 0x7f80; ++b) {
    for (std::uint32_t sign : {0u, 0x8000u}) {
      const auto lo = static_cast<std::uint16_t>(b | sign), hi = static_cast<std::uint16_t>((b + 1) | sign);
      const float a = bf16_to_f32(lo), c = bf16_to_f32(hi);
      // Adjacent bf16 values are 2^16 apart as fp32 bit patterns; the pattern halfway is the midpoint.
      const float mid = std::bit_cast<float>(static_cast<std::uint32_t>(
          (std::uint64_t{std::bit_cast<std::uint32_t>(a)} + std::bit_cast<std::uint32_t>(c)) / 2));
      ASSERT_EQ(f32_to_bf16(mid), (b & 1) ? hi : lo) << std::hex << b;
      ASSERT_EQ(f32_to_bf16(std::nextafter(mid, a)), lo) << std::hex << b;
      ASSERT_EQ(f32_to_bf16(std::nextafter(mid, c)), hi) << std::hex << b;
    }
  }
  EXPECT_EQ(f32_to_bf16(std::numeric_limits<float>::max()), 0x7f80) << "rounds past the largest bf16 to Inf";
  EXPECT_EQ(f32_to_bf16(-std::numeric_limits<float>::infinity()), 0xff80);
  EXPECT_EQ(f32_to_bf16(std::numeric_limits<float>::denorm_min()), 0x0000) << "below half of bf16's smallest subnormal";
}

TEST(Fp16, EveryPatternMatchesTheCompiler) {
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const auto h = static_cast<std::uint16_t>(b);
    const float f = f16_to_f32(h);
    const float expected = static_cast<float>(std::bit_cast<_Float16>(h));
    if (is_nan16(h, 0x7c00)) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << b;
      ASSERT_TRUE(is_nan16(f32_to_f16(f), 0x7c00)) << std::hex << b;
      ASSERT_EQ(f32_to_f16(f) & 0x8000, h & 0x8000) << "NaN sign kept";
      continue;
    }
    ASSERT_EQ(std::bit_cast<std::uint32_t>(f), std::bit_cast<std::uint32_t>(expected)) << std::hex << b;
    ASSERT_EQ(f32_to_f16(f), h) << std::hex << b;
  }
}

TEST(Fp16, MidpointsAndRandomFloatsRoundLikeTheCompiler) {
  // Midpoints of adjacent fp16 values (exact in fp32) and their neighbours cover every tie,
  // including the subnormal range and the overflow threshold 65520.
  for (std::uint32_t b = 0; b < 0x7c00; ++b) {
    const float a = f16_to_f32(static_cast<std::uint16_t>(b)), c = f16_to_f32(static_cast<std::uint16_t>(b + 1));
    const float mid = a + (c - a) / 2;
    for (float x : {mid, std::nextafter(mid, a), std::nextafter(mid, c), -mid})
      ASSERT_EQ(f32_to_f16(x), f16_bits(static_cast<_Float16>(x))) << x;
  }
  std::mt19937 rng(2026);
  for (int i = 0; i < 2'000'000; ++i) {
    const float x = std::bit_cast<float>(static_cast<std::uint32_t>(rng()));
    if (std::isnan(x)) continue;
    ASSERT_EQ(f32_to_f16(x), f16_bits(static_cast<_Float16>(x))) << x;
  }
}

TEST(RoundTo, RoundsThroughFp32LikeAKernel) {
  EXPECT_EQ(round_to(DType::f64, 0.1), 0.1);
  EXPECT_EQ(round_to(DType::f32, 0.1), static_cast<double>(0.1f));
  EXPECT_EQ(round_to(DType::bf16, 1.0 + 1.0 / 256), 1.0) << "tie to even";
  EXPECT_EQ(round_to(DType::bf16, 1.0 + 3.0 / 256), 1.0 + 4.0 / 256) << "tie to even";
  EXPECT_EQ(round_to(DType::f16, 65520.0), std::numeric_limits<double>::infinity());
}
