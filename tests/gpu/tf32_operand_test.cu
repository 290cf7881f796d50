// The hardware contract stage A's simulation relies on (stage_a::to_tf32): an fp32 register given to
// mma.sync.m16n8k8 as a tf32 operand is read as its top 19 bits, the low 13 ignored (truncation toward
// zero), for A and B alike. One mma against an identity operand returns the other operand as the tensor
// core read it; every element must equal the simulation's truncation bit for bit.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "kda/kernels/detail/chunked_stage_a.hpp"
#include "kda/kernels/device.hpp"

namespace {

constexpr std::uint32_t kOne = 0x3f800000u;  // 1.0f

// d (16 x 8, row-major) = a (16 x 8, row-major) b (8 x 8, [k][n]), one warp, PTX fragment layouts.
__global__ void mma_once(const std::uint32_t* a, const std::uint32_t* b, float* d) {
  const int lane = static_cast<int>(threadIdx.x), g = lane / 4, tq = lane % 4;
  const std::uint32_t af[4] = {a[g * 8 + tq], a[(g + 8) * 8 + tq], a[g * 8 + tq + 4], a[(g + 8) * 8 + tq + 4]};
  const std::uint32_t bf[2] = {b[tq * 8 + g], b[(tq + 4) * 8 + g]};
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
      : "r"(af[0]), "r"(af[1]), "r"(af[2]), "r"(af[3]), "r"(bf[0]), "r"(bf[1]));
  d[g * 8 + 2 * tq] = acc[0], d[g * 8 + 2 * tq + 1] = acc[1];
  d[(g + 8) * 8 + 2 * tq] = acc[2], d[(g + 8) * 8 + 2 * tq + 1] = acc[3];
}

std::vector<float> run_mma(const std::vector<std::uint32_t>& a, const std::vector<std::uint32_t>& b) {
  std::uint32_t *da = nullptr, *db = nullptr;
  float* dd = nullptr;
  EXPECT_EQ(cudaMalloc(&da, a.size() * 4), cudaSuccess);
  EXPECT_EQ(cudaMalloc(&db, b.size() * 4), cudaSuccess);
  EXPECT_EQ(cudaMalloc(&dd, 16 * 8 * 4), cudaSuccess);
  cudaMemcpy(da, a.data(), a.size() * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(db, b.data(), b.size() * 4, cudaMemcpyHostToDevice);
  mma_once<<<1, 32>>>(da, db, dd);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<float> d(16 * 8);
  cudaMemcpy(d.data(), dd, d.size() * 4, cudaMemcpyDeviceToHost);
  cudaFree(da), cudaFree(db), cudaFree(dd);
  return d;
}

// Normal fp32 values of either sign, magnitudes 2^-20 .. 2^20, every low bit pattern drawn; a few with
// the low 13 bits all set or at exactly half (where rounding to nearest would go up).
std::vector<std::uint32_t> operands(std::mt19937& rng, int count) {
  std::vector<std::uint32_t> x(count);
  std::uniform_int_distribution<std::uint32_t> exponent(127 - 20, 127 + 20), fraction(0, 0x7fffffu), sign(0, 1);
  for (int i = 0; i < count; ++i) x[i] = sign(rng) << 31 | exponent(rng) << 23 | fraction(rng);
  x[0] |= 0x1fffu;
  x[1] = (x[1] & ~0x1fffu) | 0x1000u;
  return x;
}

void expect_truncated(const std::vector<std::uint32_t>& given, const std::vector<float>& read, int rows) {
  for (int i = 0; i < rows * 8; ++i) {
    const float expected = kda::kernels::stage_a::to_tf32(kda::kernels::math::bits_to_float(given[i]));
    EXPECT_EQ(kda::kernels::math::float_to_bits(read[i]), kda::kernels::math::float_to_bits(expected))
        << "element " << i << " given 0x" << std::hex << given[i];
  }
}

TEST(Tf32Operand, AIsReadTruncated) {
  if (!kda::kernels::hopper_device().available) GTEST_SKIP() << kda::kernels::hopper_device().reason;
  std::mt19937 rng(20261201);
  const std::vector<std::uint32_t> a = operands(rng, 16 * 8);
  std::vector<std::uint32_t> identity(8 * 8, 0);
  for (int i = 0; i < 8; ++i) identity[i * 8 + i] = kOne;
  expect_truncated(a, run_mma(a, identity), 16);
}

TEST(Tf32Operand, BIsReadTruncated) {
  if (!kda::kernels::hopper_device().available) GTEST_SKIP() << kda::kernels::hopper_device().reason;
  std::mt19937 rng(20261202);
  const std::vector<std::uint32_t> b = operands(rng, 8 * 8);
  std::vector<std::uint32_t> identity(16 * 8, 0);  // rows 0..7 the identity, rows 8..15 zero
  for (int i = 0; i < 8; ++i) identity[i * 8 + i] = kOne;
  const std::vector<float> d = run_mma(identity, b);
  expect_truncated(b, d, 8);
}

}  // namespace
