// The hardware contract the chunked kernel's simulation relies on, on the device itself:
//   - an fp32 register given to mma.sync.m16n8k8 as a tf32 operand is read as its top 19 bits, the low 13
//     ignored (stage_a::to_tf32), for A and B alike: one mma against an identity operand returns the
//     other operand as the tensor core read it;
//   - mma.sync.m16n8k8 tf32 and m16n8k16 f16 with fp32 accumulation compute every output element as
//     tensor_core::dot_add does, bit for bit: random operands of one scale, of widely spread exponents (so
//     that the alignment cut decides the low bits), cancelling pairs, zeros, and fp16 subnormals, with
//     accumulators of full 24-bit significands;
//   - wgmma.m64n8k16 f16 (A from registers, B from shared memory) computes as m16n8k16 does: the model
//     holds for it too, and it reads B through a descriptor as stage B's transposed form lays B out
//     (kda/kernels/detail/wgmma_f16.cuh, whose wrappers the n = 16 problems call).
// Skips without an sm_90 device.
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <type_traits>
#include <vector>

#include "kda/kernels/detail/chunked_stage_a.hpp"
#include "kda/kernels/detail/decode_access.hpp"
#include "kda/kernels/device.hpp"
#include "kda/kernels/tensor_core_model.hpp"
#include "kda/kernels/detail/wgmma_f16.cuh"

namespace {

using kda::kernels::math::bits_to_float;
using kda::kernels::math::float_to_bits;
using kda::kernels::tensor_core::Operand;

constexpr int kM = 16, kN = 8;
constexpr std::uint32_t kOne = 0x3f800000u;  // 1.0f

template <Operand F>
constexpr int kK = kda::kernels::tensor_core::step_of(F);

// One problem a warp: d (16 x 8, row-major) = a (16 x k, row-major) b (k x 8, [k][n]) + c, in the PTX
// fragment layouts (lane = 4 g + tq). tf32 operands are fp32 bits; f16 operands are fp16 bits.
__global__ void mma_tf32_problems(const std::uint32_t* a, const std::uint32_t* b, const float* c, float* d) {
  const int lane = static_cast<int>(threadIdx.x), g = lane / 4, tq = lane % 4, k = 8;
  a += blockIdx.x * kM * k, b += blockIdx.x * k * kN, c += blockIdx.x * kM * kN, d += blockIdx.x * kM * kN;
  const std::uint32_t af[4] = {a[g * k + tq], a[(g + 8) * k + tq], a[g * k + tq + 4], a[(g + 8) * k + tq + 4]};
  const std::uint32_t bf[2] = {b[tq * kN + g], b[(tq + 4) * kN + g]};
  float acc[4] = {c[g * kN + 2 * tq], c[g * kN + 2 * tq + 1], c[(g + 8) * kN + 2 * tq], c[(g + 8) * kN + 2 * tq + 1]};
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
      : "r"(af[0]), "r"(af[1]), "r"(af[2]), "r"(af[3]), "r"(bf[0]), "r"(bf[1]));
  d[g * kN + 2 * tq] = acc[0], d[g * kN + 2 * tq + 1] = acc[1];
  d[(g + 8) * kN + 2 * tq] = acc[2], d[(g + 8) * kN + 2 * tq + 1] = acc[3];
}

__device__ std::uint32_t pair(std::uint16_t lo, std::uint16_t hi) { return lo | static_cast<std::uint32_t>(hi) << 16; }

__global__ void mma_f16_problems(const std::uint16_t* a, const std::uint16_t* b, const float* c, float* d) {
  const int lane = static_cast<int>(threadIdx.x), g = lane / 4, tq = lane % 4, k = 16;
  a += blockIdx.x * kM * k, b += blockIdx.x * k * kN, c += blockIdx.x * kM * kN, d += blockIdx.x * kM * kN;
  const auto at = [&](int row, int col) { return pair(a[row * k + col], a[row * k + col + 1]); };
  const std::uint32_t af[4] = {at(g, 2 * tq), at(g + 8, 2 * tq), at(g, 2 * tq + 8), at(g + 8, 2 * tq + 8)};
  const std::uint32_t b0 = pair(b[2 * tq * kN + g], b[(2 * tq + 1) * kN + g]);
  const std::uint32_t b1 = pair(b[(2 * tq + 8) * kN + g], b[(2 * tq + 9) * kN + g]);
  float acc[4] = {c[g * kN + 2 * tq], c[g * kN + 2 * tq + 1], c[(g + 8) * kN + 2 * tq], c[(g + 8) * kN + 2 * tq + 1]};
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
      : "r"(af[0]), "r"(af[1]), "r"(af[2]), "r"(af[3]), "r"(b0), "r"(b1));
  d[g * kN + 2 * tq] = acc[0], d[g * kN + 2 * tq + 1] = acc[1];
  d[(g + 8) * kN + 2 * tq] = acc[2], d[(g + 8) * kN + 2 * tq + 1] = acc[3];
}

// wgmma.mma_async.m64n8k16 on four problems at once, one warpgroup a block: warp w's 16 rows are problem
// 4 n + w's a and c (the A fragment from registers, as mma's), b is problem 4 n's, in shared memory as two
// 8 x 8 core matrices (k 0..7, then k 8..15; each row n 16 bytes of k), no swizzle. The descriptor's two
// byte offsets are both the core matrices' distance (128 B): with one core matrix along n, either reading
// of which offset steps along k gives the same layout.
__global__ void wgmma_f16_problems(const std::uint16_t* a, const std::uint16_t* b, const float* c, float* d) {
  __shared__ __align__(128) std::uint16_t b_tile[16 * kN];
  const int t = static_cast<int>(threadIdx.x), warp = t / 32, lane = t % 32, g = lane / 4, tq = lane % 4, k = 16;
  if (t < k * kN) {
    const int kk = t / kN, n = t % kN;
    b_tile[kk / 8 * 64 + n * 8 + kk % 8] = b[blockIdx.x * 4 * k * kN + kk * kN + n];
  }
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // the stores, visible to wgmma's reads
  __syncthreads();
  const int problem = 4 * static_cast<int>(blockIdx.x) + warp;
  a += problem * kM * k, c += problem * kM * kN, d += problem * kM * kN;
  const auto at = [&](int row, int col) { return pair(a[row * k + col], a[row * k + col + 1]); };
  const std::uint32_t af[4] = {at(g, 2 * tq), at(g + 8, 2 * tq), at(g, 2 * tq + 8), at(g + 8, 2 * tq + 8)};
  float acc[4] = {c[g * kN + 2 * tq], c[g * kN + 2 * tq + 1], c[(g + 8) * kN + 2 * tq], c[(g + 8) * kN + 2 * tq + 1]};
  const auto address = static_cast<std::uint64_t>(__cvta_generic_to_shared(b_tile));
  const std::uint64_t descriptor = (address & 0x3ffffu) >> 4 | std::uint64_t{128 >> 4} << 16 | std::uint64_t{128 >> 4} << 32;
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%0, %1, %2, %3}, {%4, %5, %6, %7}, %8, p, 1, 1, 0;\n}\n"
      : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
      : "r"(af[0]), "r"(af[1]), "r"(af[2]), "r"(af[3]), "l"(descriptor));
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  d[g * kN + 2 * tq] = acc[0], d[g * kN + 2 * tq + 1] = acc[1];
  d[(g + 8) * kN + 2 * tq] = acc[2], d[(g + 8) * kN + 2 * tq + 1] = acc[3];
}

// The same at n = 16 (2 x 2 core matrices of b, each 8 rows of 16 bytes), b stored as kMnMajor says
// (false: a core matrix row is 8 k of one n; true: 8 n of one k, read transposed, imm-trans-b 1), the core
// matrices 128 bytes apart along n and 256 along k, given as the descriptor's stride offset (along m or n)
// and leading offset (along k): the reading a kernel with wider tiles relies on. Columns 0..7 of b are
// problem 4 n's, 8..15 problem 4 n + 1's; c is problem 4 n + w's for both halves of warp w's columns.
template <bool kMnMajor>
__global__ void wgmma_f16_n16_problems(const std::uint16_t* a, const std::uint16_t* b, const float* c, float* d) {
  constexpr int k = 16, kAlongN = 128, kAlongK = 256;
  __shared__ __align__(128) std::uint16_t b_tile[2 * kAlongK / 2];
  const int t = static_cast<int>(threadIdx.x), warp = t / 32, lane = t % 32, g = lane / 4, tq = lane % 4;
  for (int e = t; e < k * 2 * kN; e += 128) {
    const int kk = e / (2 * kN), n = e % (2 * kN);
    const int within = kMnMajor ? kk % 8 * 8 + n % 8 : n % 8 * 8 + kk % 8;
    b_tile[(n / 8 * kAlongN + kk / 8 * kAlongK) / 2 + within] = b[(blockIdx.x * 4 + n / 8) * k * kN + kk * kN + n % 8];
  }
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  __syncthreads();
  const int problem = 4 * static_cast<int>(blockIdx.x) + warp;
  a += problem * kM * k, c += problem * kM * kN;
  d += (blockIdx.x * 64 + warp * kM) * 2 * kN;
  const auto at = [&](int row, int col) { return pair(a[row * k + col], a[row * k + col + 1]); };
  const std::uint32_t af[4] = {at(g, 2 * tq), at(g + 8, 2 * tq), at(g, 2 * tq + 8), at(g + 8, 2 * tq + 8)};
  // Through the kernel's own wrappers (wgmma_f16.cuh), as stage B's transposed form calls them.
  float acc[2][4];
  for (int h = 0; h < 2; ++h)
    acc[h][0] = c[g * kN + 2 * tq], acc[h][1] = c[g * kN + 2 * tq + 1], acc[h][2] = c[(g + 8) * kN + 2 * tq],
    acc[h][3] = c[(g + 8) * kN + 2 * tq + 1];
  kda::kernels::wgmma_fence();
  kda::kernels::wgmma_m64n16k16<kMnMajor ? 1 : 0>(acc, af, kda::kernels::wgmma_descriptor(b_tile, kAlongK, kAlongN));
  kda::kernels::wgmma_commit();
  kda::kernels::wgmma_wait_all();
  for (int h = 0; h < 2; ++h) {
    d[g * 2 * kN + 8 * h + 2 * tq] = acc[h][0], d[g * 2 * kN + 8 * h + 2 * tq + 1] = acc[h][1];
    d[(g + 8) * 2 * kN + 8 * h + 2 * tq] = acc[h][2], d[(g + 8) * 2 * kN + 8 * h + 2 * tq + 1] = acc[h][3];
  }
}

template <class T>
T* to_device(const std::vector<T>& host) {
  T* device = nullptr;
  EXPECT_EQ(cudaMalloc(&device, host.size() * sizeof(T)), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(device, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  return device;
}

// The problems' operands as the device takes them (fp32 or fp16 bits) and as the model takes them (fp32
// values in the operand format: tf32-truncated, or the fp16 value).
template <Operand F>
struct Problems {
  using Bits = std::conditional_t<F == Operand::f16, std::uint16_t, std::uint32_t>;
  std::vector<Bits> a, b;
  std::vector<float> av, bv, c;
  static float value_of(Bits x) {
    if constexpr (F == Operand::f16) return kda::kernels::access::f16_to_f32(x);
    return kda::kernels::stage_a::to_tf32(bits_to_float(x));
  }
  void add(Bits x, bool to_a) { (to_a ? a : b).push_back(x), (to_a ? av : bv).push_back(value_of(x)); }
  // By mma.sync, one problem a warp; or (f16) by wgmma, four a warpgroup on the first one's b.
  std::vector<float> run(bool wgmma = false) const {
    const int count = static_cast<int>(c.size() / (kM * kN));
    Bits *da = to_device(a), *db = to_device(b);
    float *dc = to_device(c), *dd = nullptr;
    EXPECT_EQ(cudaMalloc(&dd, c.size() * sizeof(float)), cudaSuccess);
    if constexpr (F == Operand::f16) {
      if (wgmma)
        wgmma_f16_problems<<<count / 4, 128>>>(da, db, dc, dd);
      else
        mma_f16_problems<<<count, 32>>>(da, db, dc, dd);
    } else {
      mma_tf32_problems<<<count, 32>>>(da, db, dc, dd);
    }
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<float> d(c.size());
    EXPECT_EQ(cudaMemcpy(d.data(), dd, d.size() * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
    cudaFree(da), cudaFree(db), cudaFree(dc), cudaFree(dd);
    return d;
  }
};

// Operands of one kind: `spread` binary orders of magnitude around 1 (0: normal values of one scale),
// a share of zeros, and for f16 a share of subnormals.
struct Kind {
  const char* name;
  int spread;
  bool cancelling;  // each row's products in pairs that cancel but for the pair's low bits
};

template <Operand F>
typename Problems<F>::Bits draw(std::mt19937& rng, const Kind& kind) {
  std::uniform_int_distribution<int> percent(0, 99), shift(-kind.spread, kind.spread);
  std::uniform_int_distribution<std::uint32_t> fraction(0, 0x7fffffu), sign(0, 1);
  const int p = percent(rng);
  const std::uint32_t s = sign(rng);
  if constexpr (F == Operand::f16) {
    if (p < 4) return static_cast<std::uint16_t>(s << 15);                                  // +-0
    if (p < 8) return static_cast<std::uint16_t>(s << 15 | (fraction(rng) & 0x3ffu));       // subnormal
    const int e = std::clamp(15 + shift(rng), 1, 30);
    return static_cast<std::uint16_t>(s << 15 | static_cast<std::uint32_t>(e) << 10 | (fraction(rng) & 0x3ffu));
  } else {
    if (p < 4) return s << 31;
    const int e = std::clamp(127 + shift(rng), 1, 254);
    return s << 31 | static_cast<std::uint32_t>(e) << 23 | fraction(rng);  // the low 13 bits too: ignored
  }
}

template <Operand F>
Problems<F> make_problems(const Kind& kind, int count, std::uint32_t seed) {
  std::mt19937 rng(seed);
  constexpr int k = kK<F>;
  Problems<F> p;
  std::uniform_int_distribution<int> c_shift(-kind.spread - 4, kind.spread + 4);
  std::uniform_int_distribution<std::uint32_t> fraction(0, 0x7fffffu), sign(0, 1);
  for (int n = 0; n < count; ++n) {
    for (int i = 0; i < kM * k; ++i) p.add(draw<F>(rng, kind), true);
    for (int i = 0; i < k * kN; ++i) p.add(draw<F>(rng, kind), false);
    if (kind.cancelling) {  // a[i][2m + 1] = -a[i][2m], b[2m + 1][j] = b[2m][j] with a flipped last bit
      const std::size_t a0 = p.a.size() - kM * k, b0 = p.b.size() - k * kN;
      for (int i = 0; i < kM; ++i)
        for (int m = 0; m + 1 < k; m += 2) {
          const auto x = static_cast<typename Problems<F>::Bits>(p.a[a0 + i * k + m] ^ (F == Operand::f16 ? 0x8000u : 0x80000000u));
          p.a[a0 + i * k + m + 1] = x, p.av[a0 + i * k + m + 1] = Problems<F>::value_of(x);
        }
      for (int m = 0; m + 1 < k; m += 2)
        for (int j = 0; j < kN; ++j) {
          const std::uint32_t ulp = F == Operand::f16 ? 1u : 1u << 13;  // one unit the tensor core reads
          const auto y = static_cast<typename Problems<F>::Bits>(p.b[b0 + m * kN + j] ^ ulp);
          p.b[b0 + (m + 1) * kN + j] = y, p.bv[b0 + (m + 1) * kN + j] = Problems<F>::value_of(y);
        }
    }
    for (int i = 0; i < kM * kN; ++i) {
      const int e = std::clamp(127 + c_shift(rng), 1, 254);
      p.c.push_back(bits_to_float(sign(rng) << 31 | static_cast<std::uint32_t>(e) << 23 | fraction(rng)));
    }
  }
  return p;
}

// wgmma: problem n's products take problem 4 (n / 4)'s b (wgmma_f16_problems).
template <Operand F>
void expect_model(const Kind& kind, std::uint32_t seed, bool wgmma = false) {
  if (!kda::kernels::hopper_device().available) GTEST_SKIP() << kda::kernels::hopper_device().reason;
  constexpr int kProblems = 2048, k = kK<F>;
  const Problems<F> p = make_problems<F>(kind, kProblems, seed);
  const std::vector<float> d = p.run(wgmma);
  int mismatches = 0;
  for (int n = 0; n < kProblems; ++n)
    for (int i = 0; i < kM; ++i)
      for (int j = 0; j < kN; ++j) {
        float a[16], b[16];
        const int nb = wgmma ? n / 4 * 4 : n;
        for (int s = 0; s < k; ++s) a[s] = p.av[(n * kM + i) * k + s], b[s] = p.bv[(nb * k + s) * kN + j];
        const std::size_t at = (n * kM + i) * kN + j;
        const float want = kda::kernels::tensor_core::dot_add(F, k, a, b, p.c[at]);
        if (float_to_bits(d[at]) != float_to_bits(want) && ++mismatches <= 5)
          ADD_FAILURE() << kind.name << ": problem " << n << " element (" << i << ", " << j << "): device " << d[at]
                        << " (0x" << std::hex << float_to_bits(d[at]) << "), model " << want << " (0x"
                        << float_to_bits(want) << std::dec << "), c " << p.c[at];
      }
  EXPECT_EQ(mismatches, 0) << kind.name << ": of " << kProblems * kM * kN << " elements";
}

constexpr Kind kOneScale{"one scale", 2, false}, kSpread{"spread exponents", 12, false},
    kCancelling{"cancelling pairs", 6, true};

TEST(TensorCoreHardware, Tf32MatchesTheModel) {
  expect_model<Operand::tf32>(kOneScale, 1);
  expect_model<Operand::tf32>(kSpread, 2);
  expect_model<Operand::tf32>(kCancelling, 3);
}

TEST(TensorCoreHardware, F16MatchesTheModel) {
  expect_model<Operand::f16>(kOneScale, 4);
  expect_model<Operand::f16>(kSpread, 5);
  expect_model<Operand::f16>(kCancelling, 6);
}

TEST(TensorCoreHardware, WgmmaF16MatchesTheModel) {
  expect_model<Operand::f16>(kOneScale, 7, true);
  expect_model<Operand::f16>(kSpread, 8, true);
  expect_model<Operand::f16>(kCancelling, 9, true);
}

// b through the descriptor at n = 16, in both majors (wgmma_f16_n16_problems), against the model.
template <bool kMnMajor>
void expect_descriptor_reading(std::uint32_t seed) {
  if (!kda::kernels::hopper_device().available) GTEST_SKIP() << kda::kernels::hopper_device().reason;
  constexpr int kProblems = 512, k = 16;
  const Problems<Operand::f16> p = make_problems<Operand::f16>(kOneScale, kProblems, seed);
  std::uint16_t *da = to_device(p.a), *db = to_device(p.b);
  float *dc = to_device(p.c), *dd = nullptr;
  const std::size_t outputs = static_cast<std::size_t>(kProblems) * kM * 2 * kN;
  EXPECT_EQ(cudaMalloc(&dd, outputs * sizeof(float)), cudaSuccess);
  wgmma_f16_n16_problems<kMnMajor><<<kProblems / 4, 128>>>(da, db, dc, dd);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<float> d(outputs);
  EXPECT_EQ(cudaMemcpy(d.data(), dd, outputs * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  cudaFree(da), cudaFree(db), cudaFree(dc), cudaFree(dd);
  int mismatches = 0;
  for (int n = 0; n < kProblems; ++n)
    for (int i = 0; i < kM; ++i)
      for (int j = 0; j < 2 * kN; ++j) {
        float a[16], b[16];
        const int nb = n / 4 * 4 + j / kN;
        for (int s = 0; s < k; ++s) a[s] = p.av[(n * kM + i) * k + s], b[s] = p.bv[(nb * k + s) * kN + j % kN];
        const float want = kda::kernels::tensor_core::dot_add(Operand::f16, k, a, b, p.c[(n * kM + i) * kN + j % kN]);
        const float got = d[(static_cast<std::size_t>(n) * kM + i) * 2 * kN + j];
        if (float_to_bits(got) != float_to_bits(want) && ++mismatches <= 5)
          ADD_FAILURE() << (kMnMajor ? "n-major" : "k-major") << " b: problem " << n << " element (" << i << ", " << j
                        << "): device " << got << ", model " << want;
      }
  EXPECT_EQ(mismatches, 0);
}

TEST(TensorCoreHardware, WgmmaReadsBThroughItsDescriptor) {
  expect_descriptor_reading<false>(10);
  expect_descriptor_reading<true>(11);
}

// The tf32 operand read: against an identity, with c = 0, every element is the other operand's
// truncation (normal values 2^-20 .. 2^20, every low bit pattern; one with the low 13 bits all set and one
// at exactly half, where rounding to nearest would go up).
std::vector<std::uint32_t> truncation_operands(std::mt19937& rng, int count) {
  std::vector<std::uint32_t> x(count);
  std::uniform_int_distribution<std::uint32_t> exponent(127 - 20, 127 + 20), fraction(0, 0x7fffffu), sign(0, 1);
  for (int i = 0; i < count; ++i) x[i] = sign(rng) << 31 | exponent(rng) << 23 | fraction(rng);
  x[0] |= 0x1fffu;
  x[1] = (x[1] & ~0x1fffu) | 0x1000u;
  return x;
}

void expect_truncated(const std::vector<std::uint32_t>& given, const std::vector<float>& read, int rows) {
  for (int i = 0; i < rows * kN; ++i) {
    const float expected = kda::kernels::stage_a::to_tf32(bits_to_float(given[i]));
    EXPECT_EQ(float_to_bits(read[i]), float_to_bits(expected)) << "element " << i << " given 0x" << std::hex
                                                               << given[i];
  }
}

Problems<Operand::tf32> one_problem(const std::vector<std::uint32_t>& a, const std::vector<std::uint32_t>& b) {
  Problems<Operand::tf32> p;
  for (std::uint32_t x : a) p.add(x, true);
  for (std::uint32_t x : b) p.add(x, false);
  p.c.assign(kM * kN, 0.0f);
  return p;
}

TEST(TensorCoreHardware, Tf32AIsReadTruncated) {
  if (!kda::kernels::hopper_device().available) GTEST_SKIP() << kda::kernels::hopper_device().reason;
  std::mt19937 rng(20261201);
  const std::vector<std::uint32_t> a = truncation_operands(rng, kM * 8);
  std::vector<std::uint32_t> identity(8 * kN, 0);
  for (int i = 0; i < 8; ++i) identity[i * kN + i] = kOne;
  expect_truncated(a, one_problem(a, identity).run(), kM);
}

TEST(TensorCoreHardware, Tf32BIsReadTruncated) {
  if (!kda::kernels::hopper_device().available) GTEST_SKIP() << kda::kernels::hopper_device().reason;
  std::mt19937 rng(20261202);
  const std::vector<std::uint32_t> b = truncation_operands(rng, 8 * kN);
  std::vector<std::uint32_t> identity(kM * 8, 0);  // rows 0..7 the identity, rows 8..15 zero
  for (int i = 0; i < 8; ++i) identity[i * 8 + i] = kOne;
  expect_truncated(b, one_problem(identity, b).run(), 8);
}

}  // namespace
