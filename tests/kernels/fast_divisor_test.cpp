// FastDivisor (the kernels' division of slots and heads by divisors fixed at launch) against `/`: every
// divisor up to 4,096 and each power of two up to 2^31 with its neighbours, at the numerators where a wrong
// multiplier or shift shows first (each side of every multiple near 0 and near 2^31, the range's ends) and
// at seeded random ones.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "kda/kernels/detail/fast_divisor.hpp"

namespace kda::kernels {
namespace {

constexpr std::uint32_t kNumeratorEnd = std::uint32_t{1} << 31;  // quotient's range: n < 2^31

// The numerators checked for divisor d: the multiples of d (and their neighbours) in the first 64 multiples
// and the last 64 below 2^31, the range's first and last 256 values, and 2,000 drawn from the whole range.
std::vector<std::uint32_t> numerators(std::uint32_t d, std::mt19937& rng) {
  std::vector<std::uint32_t> n;
  const auto add = [&](std::int64_t x) {
    if (x >= 0 && x < kNumeratorEnd) n.push_back(static_cast<std::uint32_t>(x));
  };
  const std::int64_t last_multiple = (kNumeratorEnd - 1) / d * std::int64_t{d};
  for (std::int64_t m = 0; m < 64; ++m)
    for (int delta = -1; delta <= 1; ++delta) add(m * d + delta), add(last_multiple - m * d + delta);
  for (std::int64_t x = 0; x < 256; ++x) add(x), add(kNumeratorEnd - 1 - x);
  std::uniform_int_distribution<std::uint32_t> draw(0, kNumeratorEnd - 1);
  for (int i = 0; i < 2000; ++i) n.push_back(draw(rng));
  return n;
}

void expect_exact(std::int64_t d, std::mt19937& rng) {
  const FastDivisor divisor(d);
  ASSERT_EQ(divisor.divisor(), static_cast<std::uint32_t>(d));
  for (const std::uint32_t n : numerators(static_cast<std::uint32_t>(d), rng))
    ASSERT_EQ(divisor.quotient(n), n / static_cast<std::uint32_t>(d)) << n << " / " << d;
}

TEST(FastDivisor, ExactForEveryDivisorUpTo4096) {
  std::mt19937 rng(40);
  for (std::int64_t d = 1; d <= 4096; ++d) expect_exact(d, rng);
}

TEST(FastDivisor, ExactAtEachPowerOfTwoAndItsNeighbours) {
  std::mt19937 rng(41);
  for (int bits = 1; bits <= 31; ++bits) {
    const std::int64_t power = std::int64_t{1} << bits;
    for (std::int64_t d = power - 1; d <= power + 1 && d <= kNumeratorEnd; ++d) expect_exact(d, rng);
  }
}

TEST(FastDivisor, ExactForEveryNumeratorBelow2To20) {
  // The prepare kernel's slots at the benchmark's sizes (at most chunks x 32 heads): every numerator.
  for (const std::int64_t d : {1, 2, 3, 4, 7, 16, 24, 32, 48, 64, 96}) {
    const FastDivisor divisor(d);
    for (std::uint32_t n = 0; n < (1u << 20); ++n) ASSERT_EQ(divisor.quotient(n), n / static_cast<std::uint32_t>(d)) << n << " / " << d;
  }
}

TEST(FastDivisor, DefaultDividesByOne) {
  const FastDivisor one;
  EXPECT_EQ(one.divisor(), 1u);
  for (const std::uint32_t n : {0u, 1u, 12345u, kNumeratorEnd - 1}) EXPECT_EQ(one.quotient(n), n);
}

TEST(FastDivisor, RejectsDivisorsOutsideItsRange) {
  EXPECT_THROW(FastDivisor(0), std::invalid_argument);
  EXPECT_THROW(FastDivisor(-3), std::invalid_argument);
  EXPECT_THROW(FastDivisor((std::int64_t{1} << 31) + 1), std::invalid_argument);
  EXPECT_NO_THROW(FastDivisor(std::int64_t{1} << 31));
}

}  // namespace
}  // namespace kda::kernels
