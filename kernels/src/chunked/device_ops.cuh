// The device-side building blocks of the chunked prefill's kernels: tensor-core products and their
// fragments, ldmatrix, cp.async and the mbarrier that tracks it, named barriers, L2 prefetches.
// Tensor-core products: stage A's off-diagonal blocks use mma.sync.m16n8k8.row.col.f32.tf32.tf32.f32,
// stage A's products with the inverse and stage B mma.sync.m16n8k16.row.col.f32.f16.f16.f32 with
// operands loaded by ldmatrix. The PTX ISA's
// fragment layouts, lane = 4 groupID + tq (groupID g = lane / 4, tq = lane % 4):
//   tf32 A (16 x 8, row-major): a0 (g, tq), a1 (g + 8, tq), a2 (g, tq + 4), a3 (g + 8, tq + 4)
//   tf32 B (8 x 8, k x n):      b0 (tq, g), b1 (tq + 4, g)
//   f16 A (16 x 16): a0 (g, 2tq..+1), a1 (g + 8, 2tq..+1), a2 (g, 2tq + 8..+9), a3 (g + 8, 2tq + 8..+9)
//   f16 B (16 x 8):  b0 (2tq..+1, g), b1 (2tq + 8..+9, g)
//   C, D (16 x 8):   c0 (g, 2 tq), c1 (g, 2 tq + 1), c2 (g + 8, 2 tq), c3 (g + 8, 2 tq + 1)
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "kda/kernels/detail/chunked_stage_a.hpp"

// Private to chunked_prefill.cu, its one includer: the kernels keep internal linkage.
namespace kda::kernels {
namespace {

using namespace stage_a;

constexpr int kWarp = 32;
constexpr unsigned kFullMask = 0xffffffffu;

// D = A B + D on tensor cores; the operands are fp32 registers, which the tensor core reads as tf32 (their
// low 13 bits ignored: tests/gpu/tensor_core_hardware_test).
__device__ __forceinline__ void mma_tf32(float (&d)[4], const std::uint32_t (&a)[4], const std::uint32_t (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// The m16n8k8 tf32 fragments (lane = 4 g + tq) of rows stored ld floats apart, k-step k0: A from rows 0 .. 15
// (a0 (g, tq), a1 (g + 8, tq), a2 (g, tq + 4), a3 (g + 8, tq + 4)), B from rows n0 .. n0 + 7 as its columns
// (b0 (k = tq, n = g), b1 (k = tq + 4, n = g)).
__device__ __forceinline__ void tf32_a_fragment(const float* rows, int ld, int k0, int g, int tq,
                                                std::uint32_t (&a)[4]) {
  a[0] = __float_as_uint(rows[g * ld + k0 + tq]), a[1] = __float_as_uint(rows[(g + 8) * ld + k0 + tq]);
  a[2] = __float_as_uint(rows[g * ld + k0 + tq + 4]), a[3] = __float_as_uint(rows[(g + 8) * ld + k0 + tq + 4]);
}
__device__ __forceinline__ void tf32_b_fragment(const float* rows, int n0, int ld, int k0, int g, int tq,
                                                std::uint32_t (&b)[2]) {
  b[0] = __float_as_uint(rows[(n0 + g) * ld + k0 + tq]), b[1] = __float_as_uint(rows[(n0 + g) * ld + k0 + tq + 4]);
}

// D = A B + D on tensor cores with fp16 operands (pairs of halfs per register) and fp32 accumulation.
__device__ __forceinline__ void mma_f16(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                        std::uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Four 8 x 8 fp16 matrices from shared memory, lane l giving the address of row l % 8 of matrix l / 8;
// transposed or not. Every caller writes the tile before a __syncthreads that precedes the load.
__device__ __forceinline__ void ldmatrix_x4(std::uint32_t (&r)[4], const __half* row) {
  const auto address = static_cast<unsigned>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}
__device__ __forceinline__ void ldmatrix_x4_trans(std::uint32_t (&r)[4], const __half* row) {
  const auto address = static_cast<unsigned>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}

// The f16 A fragment of rows m0 .. m0 + 15, columns k0 .. k0 + 15 of a row-major tile ([m][k]).
__device__ __forceinline__ void a_fragment(std::uint32_t (&a)[4], const __half* tile, int ld, int m0, int k0,
                                           int lane) {
  ldmatrix_x4(a, tile + (m0 + lane % 16) * ld + k0 + lane / 16 * 8);
}
// The same fragment from a tile stored transposed ([k][m]).
__device__ __forceinline__ void a_fragment_of_transposed(std::uint32_t (&a)[4], const __half* tile, int ld, int m0,
                                                         int k0, int lane) {
  ldmatrix_x4_trans(a, tile + (k0 + lane / 16 * 8 + lane % 8) * ld + m0 + lane / 8 % 2 * 8);
}
// The f16 B fragments of rows k0 .. k0 + 15, columns n0 .. n0 + 15 of a [k][n] tile: b[0], b[1] for the
// n-tile of columns n0 .., b[2], b[3] for n0 + 8 ..
__device__ __forceinline__ void b_fragments(std::uint32_t (&b)[4], const __half* tile, int ld, int k0, int n0,
                                            int lane) {
  ldmatrix_x4_trans(b, tile + (k0 + lane / 8 % 2 * 8 + lane % 8) * ld + n0 + lane / 16 * 8);
}
// acc[nt] += A B for n-tiles nt = 0, 1, B from b_fragments.
__device__ __forceinline__ void times_b(const std::uint32_t (&a)[4], const std::uint32_t (&b)[4], float (&acc)[2][4]) {
  mma_f16(acc[0], a, b[0], b[1]);
  mma_f16(acc[1], a, b[2], b[3]);
}
// acc[nt] += A B for n-tiles nt = 0, 1: B = rows k0 .. k0 + 15, columns n0 .. n0 + 15 of a [k][n] tile.
__device__ __forceinline__ void times_k_rows(const std::uint32_t (&a)[4], const __half* tile, int ld, int k0, int n0,
                                             int lane, float (&acc)[2][4]) {
  std::uint32_t b[4];
  b_fragments(b, tile, ld, k0, n0, lane);
  times_b(a, b, acc);
}

// Two fp32 values as a pair of fp16 (round to nearest even, access::f32_to_f16): lo at the lower address.
__device__ __forceinline__ std::uint32_t f16_pair(float lo, float hi) { return access::half_pair(false, lo, hi); }

// 16 bytes from global to shared memory, asynchronously. The .ca form (through L1): Nsight Compute
// counted the .cg form (LDGSTS.BYPASS) at 10.5 shared-memory wavefronts and 24 L2 sectors per warp copy
// of 512 contiguous bytes, the .ca form at the ideal 4 and 16 (stage B at 1 x 8192 about 9% faster).
__device__ __forceinline__ void cp_async16(void* shared, const void* global) {
  const auto address = static_cast<unsigned>(__cvta_generic_to_shared(shared));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 16;\n" ::"r"(address), "l"(global));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::); }
// An mbarrier in shared memory that tracks cp.async copies: initialised for `arrivals` threads, each of
// which arrives once its earlier copies are done (no arrival of its own: .noinc); a waiting thread then
// sees the copies' data (the wait acquires). Racecheck models it, as it does not a bar.arrive hand-off.
__device__ __forceinline__ unsigned shared_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void mbarrier_init(std::uint64_t* bar, int arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(shared_address(bar)), "r"(arrivals) : "memory");
}
__device__ __forceinline__ void cp_async_arrive(std::uint64_t* bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(shared_address(bar)) : "memory");
}
__device__ __forceinline__ void mbarrier_wait(std::uint64_t* bar, unsigned parity) {
  asm volatile(
      "{\n .reg .pred done;\n WAIT%=:\n"
      " mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      " @!done bra WAIT%=;\n}" ::"r"(shared_address(bar)),
      "r"(parity)
      : "memory");
}
// The 128-byte line at a global address into L2: no register, nothing to wait for. (The bulk copy engine's
// prefetch takes its address in a uniform register: a warp's 32 addresses became a loop of 32 issues.)
__device__ __forceinline__ void prefetch_l2(const void* global) {
  asm volatile("prefetch.global.L2 [%0];\n" ::"l"(global));
}
// Named barrier `id` (1 .. 15; 0 is __syncthreads') of `threads` threads, whole warps: as __syncthreads for them.
__device__ __forceinline__ void named_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
// threadIdx.x read again where it is used (the compiler cannot reuse an earlier read), so that values
// derived from it need not stay live, or be spilled, across a kernel's long phases.
__device__ __forceinline__ int fresh_thread_index() {
  int tid;
  asm volatile("mov.u32 %0, %%tid.x;" : "=r"(tid));
  return tid;
}

// Stage A's slot c * HV + hv as its chunk c, value head hv and key head h, by the launch's divisors (a slot
// is below 2^31: the launchers refuse more than INT_MAX slots).
struct SlotIndex {
  std::uint32_t chunk, hv, h;
};
__device__ __forceinline__ SlotIndex slot_index(const ChunkedParams& P, std::int64_t slot) {
  const auto s = static_cast<std::uint32_t>(slot);
  const std::uint32_t chunk = P.value_heads.quotient(s), hv = s - chunk * P.value_heads.divisor();
  return {chunk, hv, P.head_group.quotient(hv)};
}

// Whether t holds 16-bit values with contiguous channels whose every row starts kAlignment bytes aligned, so
// that a row's channels can be read several at a time (the gates' g, the loaders' q and k,
// RawValues' v).
template <int kAlignment>
__device__ __forceinline__ bool packed_rows(const TensorRef& t) {
  return t.dtype != DType::f32 && t.stride[3] == 1 && reinterpret_cast<std::uintptr_t>(t.data) % kAlignment == 0 &&
         2 * t.stride[0] % kAlignment == 0 && 2 * t.stride[1] % kAlignment == 0 && 2 * t.stride[2] % kAlignment == 0;
}

}  // namespace
}  // namespace kda::kernels
