// The chunked prefill's kernels (stage A: the gates, then the prepare kernel; stage B: the scan, in five
// forms) and their launch. chunked_prefill_sim.cpp is their CPU twin: a change to the arithmetic here
// must be made there too (tests/gpu/chunked_cuda_vs_sim_test compares the two).
// Tensor-core products: stage A's off-diagonal blocks use mma.sync.m16n8k8.row.col.f32.tf32.tf32.f32,
// stage A's products with the inverse and stage B mma.sync.m16n8k16.row.col.f32.f16.f16.f32 with
// operands loaded by ldmatrix. The PTX ISA's
// fragment layouts, lane = 4 groupID + tq (groupID g = lane / 4, tq = lane % 4):
//   tf32 A (16 x 8, row-major): a0 (g, tq), a1 (g + 8, tq), a2 (g, tq + 4), a3 (g + 8, tq + 4)
//   tf32 B (8 x 8, k x n):      b0 (tq, g), b1 (tq + 4, g)
//   f16 A (16 x 16): a0 (g, 2tq..+1), a1 (g + 8, 2tq..+1), a2 (g, 2tq + 8..+9), a3 (g + 8, 2tq + 8..+9)
//   f16 B (16 x 8):  b0 (2tq..+1, g), b1 (2tq + 8..+9, g)
//   C, D (16 x 8):   c0 (g, 2 tq), c1 (g, 2 tq + 1), c2 (g + 8, 2 tq), c3 (g + 8, 2 tq + 1)
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <climits>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "kda/kernels/chunked_prefill.hpp"
#include "kda/kernels/detail/chunked_stage_a.hpp"
#include "kda/kernels/detail/wgmma_f16.cuh"

namespace kda::kernels {

namespace {

using namespace stage_a;

constexpr int kWarp = 32;
constexpr unsigned kFullMask = 0xffffffffu;
constexpr int kPrepareThreads = 512;  // stage A: 16 warps (one block per SM; 8 warps hid too little latency)
constexpr int kSolveColumns = 256;    // stage A: the columns of [v | k] (V + K <= 256), 32 a product warp
constexpr int kRhsLd = kSolveColumns + 8;  // stage A: halfs a row of the fp16 right-hand sides (ldmatrix: odd 16 B)
constexpr int kInverseLd = kChunk + 8;     // stage A: halfs a row of T's fp16 rounding
constexpr int kStageLd = 40;               // stage A: halfs a row of a product warp's 32 staged columns
constexpr int kMaxValue = 128;        // stage A: V <= 128 (its v loads: a thread per value channel)
constexpr int kSolveThreads = 256;  // stage A: the warps that invert (I + Akk) and multiply
constexpr int kLoaderThreads = kPrepareThreads - kSolveThreads;  // stage A: the next slot's loaders
template <int K>
constexpr int kLoaderStride = kLoaderThreads / (K / 4);  // stage A: a loader's tokens lie this far apart
template <int K>
constexpr int kLoaderTokens = kChunk / kLoaderStride<K>;  // stage A: and it loads this many (8 at K = 128)

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
// of 512 contiguous bytes, the .ca form at the ideal 4 and 16, and stage B at 1 x 8192 went from 0.313
// to 0.286 ms (run of 22:13Z).
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

// Whether t holds 16-bit values with contiguous channels whose every row starts kAlignment bytes aligned, so
// that a row's channels can be read several at a time (the gates' g, the loaders' q and k,
// RawValues' v).
template <int kAlignment>
__device__ __forceinline__ bool packed_rows(const TensorRef& t) {
  return t.dtype != DType::f32 && t.stride[3] == 1 && reinterpret_cast<std::uintptr_t>(t.data) % kAlignment == 0 &&
         2 * t.stride[0] % kAlignment == 0 && 2 * t.stride[1] % kAlignment == 0 && 2 * t.stride[2] % kAlignment == 0;
}

// ---------------------------------------------------------------------------------------------------
// Stage A, first kernel, the gates: one block of 256 threads per (chunk c, value head hv), blockIdx.x =
// c * HV + hv, writing alpha = exp(g) of every (token, key channel) to the workspace
// (stage_a::gate_alpha). A thread keeps one key channel d (two where g allows: gate_pairs) and takes tokens
// tid / K + (256 / K) n in groups of four, the next group's loads in flight while a group is computed (eight tokens a thread with
// all loads up front, in blocks of 1024, measured slower: 0.170 against 0.158 ms at 1 x 8192). A kernel
// of its own: the gate's polynomials were a fifth of the prepare kernel's instructions, issued there at
// one block per SM; here, with a few dozen registers and no shared memory, at full occupancy.
constexpr int kGateThreads = 256;

// The walk of a thread's kWidth channels d .. d + kWidth - 1 (d = kWidth (tid % (K / kWidth))), tokens
// tid / (K / kWidth) + step n, by pointer (an add per load, not the offset's 64-bit multiplies). In a chunk
// shorter than kChunk a token past the length loads the last one instead (a select of the address:
// gate_alpha selects 1 for such a token whatever its bits, and a load under a condition became a branch
// around it); a full chunk, every chunk but a sequence's last, has its own copy of the loop without the
// selects (three instructions an element of the loop's 50). Software-pipelined: a group's loads are issued
// before the previous group's elements are computed, so that about 50 instructions an element cover their
// latency (the last pass loads an address past the group again, or the last token's, unused).
// load(address) gives an element's (or pair's) bits, emit(out, i, bits, full) writes token i's alphas,
// full a std::bool_constant: whether the chunk is full (then no token is past its length).
template <int K, int kWidth>
__device__ __forceinline__ int gate_channel() {
  return kWidth * (static_cast<int>(threadIdx.x) % (K / kWidth));
}
template <int K, int kWidth, bool kFull, class Load, class Emit>
__device__ __forceinline__ void walk_gate_tokens(const TokenColumn& g, const ChunkEntry& e, float* alpha, Load load,
                                                 Emit emit) {
  constexpr int kLanes = K / kWidth, kStep = kGateThreads / kLanes, kGroup = 4;
  static_assert(kGateThreads % kLanes == 0 && kChunk % (kStep * kGroup) == 0);
  const int first = static_cast<int>(threadIdx.x) / kLanes;
  const std::byte* at = g.at(first);
  const std::byte* const last = g.at(e.length - 1);
  const std::int64_t step = kStep * g.step;
  float* out = alpha + first * K + gate_channel<K, kWidth>();
  std::uint32_t bits[kGroup];
  const auto load_group = [&](int i0, std::uint32_t (&to)[kGroup]) {
#pragma unroll
    for (int n = 0; n < kGroup; ++n, at += step) to[n] = load(kFull || i0 + kStep * n < e.length ? at : last);
  };
  load_group(first, bits);
  constexpr int kUnroll = kFull ? 2 : 1;
#pragma unroll kUnroll
  for (int i0 = first; i0 < kChunk; i0 += kStep * kGroup) {
    std::uint32_t next[kGroup];
    // A full chunk's last pass loads nothing past the tile's rows (its loads would be unused).
    if (!kFull || i0 + kStep * kGroup < kChunk) load_group(i0 + kStep * kGroup, next);
#pragma unroll
    for (int n = 0; n < kGroup; ++n, out += kStep * K) emit(out, i0 + kStep * n, bits[n], std::bool_constant<kFull>{});
#pragma unroll
    for (int n = 0; n < kGroup; ++n) bits[n] = next[n];
  }
}
template <int K, int kWidth, class Load, class Emit>
__device__ __forceinline__ void walk_gate_column(const TokenColumn& g, const ChunkEntry& e, float* alpha, Load load,
                                                 Emit emit) {
  if (e.length == kChunk)
    walk_gate_tokens<K, kWidth, true>(g, e, alpha, load, emit);
  else
    walk_gate_tokens<K, kWidth, false>(g, e, alpha, load, emit);
}

// Token i's alpha from its widened raw gate, inside a full chunk without the select of 1 past the length.
template <GateMode M, bool kFull>
__device__ __forceinline__ float walk_alpha(const DecodeParams& p, float factor, float bias, const ChunkEntry& e, int i,
                                            float raw) {
  if constexpr (kFull)
    return gate_decay<M>(p, factor, bias, raw);
  else
    return gate_alpha_of<M>(p, factor, bias, e, i, raw);
}

// A channel a thread, any g.
template <int K, GateMode M>
__device__ void gates(const DecodeParams& p, const ChunkEntry& e, std::int64_t hv, float* alpha) {
  const int d = gate_channel<K, 1>();
  const float factor = gate_factor<M>(p, hv), bias = channel_bias<K>(p, hv, d);
  const TokenColumn g = token_column(p.g, e, hv, d);
  walk_gate_column<K, 1>(g, e, alpha, [&](const std::byte* at) { return g.bits_at(at); },
                         [&](float* out, int i, std::uint32_t bits, auto full) {
                           *out = walk_alpha<M, full>(p, factor, bias, e, i, access::widen_select(p.g.dtype, bits));
                         });
}

// A channel pair a thread where g is 16-bit with contiguous channels and 4-byte aligned rows (the serving
// case): one 4-byte load and one 8-byte store per two elements (one element a load and a store took 17 of
// the loop's 59 instructions an element), bf16 widened by a shift and a mask.
template <int K, GateMode M, bool kBf16>
__device__ void gate_pairs(const DecodeParams& p, const ChunkEntry& e, std::int64_t hv, float* alpha) {
  const int d = gate_channel<K, 2>();
  const float factor = gate_factor<M>(p, hv), bias0 = channel_bias<K>(p, hv, d), bias1 = channel_bias<K>(p, hv, d + 1);
  const auto widen = [&](std::uint32_t pair, int half) {
    if constexpr (kBf16) return __uint_as_float(half == 0 ? pair << 16 : pair & 0xffff0000u);
    return access::widen_select(p.g.dtype, half == 0 ? pair & 0xffffu : pair >> 16);
  };
  walk_gate_column<K, 2>(
      token_column(p.g, e, hv, d), e, alpha,
      [](const std::byte* at) { return *reinterpret_cast<const std::uint32_t*>(at); },
      [&](float* out, int i, std::uint32_t pair, auto full) {
        *reinterpret_cast<float2*>(out) = make_float2(walk_alpha<M, full>(p, factor, bias0, e, i, widen(pair, 0)),
                                                      walk_alpha<M, full>(p, factor, bias1, e, i, widen(pair, 1)));
      });
}

template <int K, GateMode M>
__device__ void gates_of(const DecodeParams& p, const ChunkEntry& e, std::int64_t hv, float* alpha) {
  if (!packed_rows<4>(p.g)) return gates<K, M>(p, e, hv, alpha);
  if (p.g.dtype == DType::bf16) return gate_pairs<K, M, true>(p, e, hv, alpha);
  return gate_pairs<K, M, false>(p, e, hv, alpha);
}

template <int K>
__global__ void __launch_bounds__(kGateThreads) gate_kernel(const __grid_constant__ ChunkedParams P) {
  const DecodeParams& p = P.call;
  const std::int64_t slot = blockIdx.x, hv = slot % p.HV;
  const ChunkEntry e = P.chunks[slot / p.HV];
  float* const alpha = P.work.alpha + slot * kChunk * K;
  switch (gate_mode(p)) {
    case GateMode::given:
      return gates_of<K, GateMode::given>(p, e, hv, alpha);
    case GateMode::lower_bound:
      return gates_of<K, GateMode::lower_bound>(p, e, hv, alpha);
    case GateMode::softplus:
      return gates_of<K, GateMode::softplus>(p, e, hv, alpha);
  }
}

// ---------------------------------------------------------------------------------------------------
// Stage A, second kernel, the prepare kernel: one block of 512 threads per SM, taking the slots (chunk
// c, value head hv), slot = c * HV + hv, blockIdx.x, blockIdx.x + gridDim.x, ... The loaders, the
// threads from kSolveThreads on, issue the next slot's input loads (q and k into registers, alpha by
// cp.async into its tile) while the other threads invert the current slot's (I + Akk) and multiply, so
// that a slot's inputs are waiting when it starts.

// Akk and Aqk share one [64][kAld] tile, the triangles: Akk[i][j] (j < i) at row i, column j, and Aqk
// transposed, Aqk[i][j] (j <= i) at row j, column i. Every entry of both is computed for every slot, so the
// tile needs no clearing; the inverse reads only Akk's (strictly lower) entries. Akk's place is
// stage_a::akk_at (the simulation's too), Aqk's:
__device__ __forceinline__ int aqk_at(int i, int j) { return j * kAld + i; }

template <int K>
struct PrepareLayout {  // offsets in floats into dynamic shared memory
  static constexpr int LD = kLd<K>;
  static constexpr int q = 0, k = q + kChunk * LD, alpha = k + kChunk * LD, kb = alpha + kChunk * LD,
                       quad = kb + kAnchoredRows * LD, beta = quad + kSegments * kQuadrantRows * LD,
                       triangles = beta + kChunk, segments = triangles + kChunk * kAld,
                       tiles = segments + 2 * kSegments * K;
  // For the products with the inverse: the right-hand sides [v | k] in fp16, [64][kRhsLd] halfs, over the q
  // and k tiles, which are no longer read then (K = 128: the q tile alone); T = (I + Akk)^-1 in fp16
  // ([64][kInverseLd] halfs) over the quadrants' tile, free once the off-diagonal blocks are done.
  // After T, each product warp's staging rows for its results: kSubBlock x kStageLd halfs for each
  // of staged_blocks row blocks (all four where the quadrants' tile has room for them, K = 128).
  static constexpr int rhs = q, inverse_h = quad, staging = inverse_h + kChunk * kInverseLd / 2;
  static constexpr int staged_blocks = K == 128 ? kSegments : 1;
  static_assert(kChunk * kRhsLd / 2 <= 2 * kChunk * LD &&
                staging + kSolveThreads / kWarp * staged_blocks * kSubBlock * kStageLd / 2 <= quad + kSegments * kQuadrantRows * LD);
  static_assert(beta % 4 == 0);  // 16-byte aligned: chain_segment loads four betas at once
  static constexpr int total = tiles;
  static constexpr std::size_t bytes = sizeof(float) * total;
};

// The slot's v rows copied as stored (cp.async, 16 bytes a copy; a row past the chunk's length copies the
// last token's) into the tiles' rows 0 .. 15 of q (tokens 0 .. 31) and of k (tokens 32 .. 63), which
// nothing reads between the decay chains and the right-hand sides' staging (256 bytes a token). A copy holds no
// register while it is in flight: loaded into registers across the off-diagonal phase, two of them were
// spilled, and the spill's store waited for its load (a measurement-only build without v's loads took
// that phase from 0.088 to 0.048 ms at 1 x 8192). For 16-bit v whose rows are contiguous and 16-byte
// aligned, at K = V = 128: thread t copies pieces t % 16 of tokens t / 16 and t / 16 + 32, and reads
// channels 2 (t % 64) and 2 (t % 64) + 1 of tokens t / 64 + 8 n, each half from its own base (compile-time
// offsets).
template <int K>
struct RawValues {
  static constexpr int kPitch = 2 * kMaxValue;  // bytes a token
  static constexpr int kPieces = kPitch / 16;   // 16-byte copies a token
  static constexpr int kHalf = kChunk / 2;      // tokens in each tile's rows
  static_assert(K != 128 || kHalf * kPitch <= kSubBlock * kLd<K> * static_cast<int>(sizeof(float)));
  static_assert(kChunk * kPieces == 2 * kPrepareThreads && kPrepareThreads % kPieces == 0);
  __device__ static bool copyable(const TensorRef& v, int V) { return K == 128 && V == kMaxValue && packed_rows<16>(v); }
  __device__ static std::byte* half(float* shared, int h) {
    return reinterpret_cast<std::byte*>(shared + (h == 0 ? PrepareLayout<K>::q : PrepareLayout<K>::k));
  }
  __device__ static void issue(const TensorRef& v, const ChunkEntry& e, std::int64_t hv, float* shared) {
    const int tid = static_cast<int>(threadIdx.x), i = tid / kPieces, piece = tid % kPieces;
    const TokenColumn first = token_column(v, e, hv, 0);
#pragma unroll
    for (int h = 0; h < 2; ++h)
      cp_async16(half(shared, h) + i * kPitch + 16 * piece, first.at(loadable_token(e, h * kHalf + i)) + 16 * piece);
    cp_async_commit();
  }
  // The slot's rows into L2 a slot ahead by one warp, lane l rows l and l + 32, each row's two 128-byte lines:
  // the copy above, issued at the off-diagonal phase's start and waited for at its end, then reads L2 rather
  // than memory.
  __device__ static void prefetch(const TensorRef& v, const ChunkEntry& e, std::int64_t hv, int lane) {
    static_assert(kPitch == 2 * 128 && kChunk == 2 * kWarp);
    const TokenColumn first = token_column(v, e, hv, 0);
#pragma unroll
    for (int h = 0; h < 2; ++h)
      if (lane + h * kWarp < e.length) prefetch_l2(first.at(lane + h * kWarp)), prefetch_l2(first.at(lane + h * kWarp) + 128);
  }
  // Channels 2 (t % 64) + c of tokens t / 64 + 8 n into bits[2 n + c], both of a token in one 4-byte load.
  template <int N>
  __device__ static void read(float* shared, std::uint32_t (&bits)[N]) {
    const int tid = static_cast<int>(threadIdx.x);
    constexpr int kPairs = kMaxValue / 2, kRowsApart = kPrepareThreads / kPairs, kRows = N / 2;
    static_assert(kRows * kRowsApart == kChunk);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const auto* at = reinterpret_cast<const std::uint32_t*>(half(shared, h) + tid / kPairs * kPitch) + tid % kPairs;
#pragma unroll
      for (int n = 0; n < kRows / 2; ++n) {
        const std::uint32_t pair = at[n * kRowsApart * kPitch / 4];
        bits[2 * (h * kRows / 2 + n)] = pair & 0xffffu, bits[2 * (h * kRows / 2 + n) + 1] = pair >> 16;
      }
    }
  }
};

// The sums of R rows whose groups of four channels (stage_a::group_square_sum) lie in G consecutive lanes,
// lane % G holding group lane % G of each row, added as stage_a::square_sum adds them: level n = G / 2 .. 1
// adds lane l ^ n's partial to lane l's. While a lane holds partials of more than one row, each level also
// halves them, the lane with bit n clear keeping the first half (a transposing butterfly: R / 2 shuffles at
// the first level rather than R). Returns the sum of row lane % G / (G / R) of the lane's rows; row r's sum
// is then at lane row_lane(lane, r).
template <int G, int C, int R>
__device__ __forceinline__ void row_sums_from(float (&v)[R], int lane) {
  constexpr int n = G * C / (2 * R) > 0 ? G * C / (2 * R) : 1;  // this level's lane distance
  if constexpr (C > 1) {
    const bool upper = lane & n;
#pragma unroll
    for (int i = 0; i < C / 2; ++i) {
      const float sent = upper ? v[i] : v[i + C / 2], kept = upper ? v[i + C / 2] : v[i];
      v[i] = math::add(kept, __shfl_xor_sync(kFullMask, sent, n));
    }
    row_sums_from<G, C / 2>(v, lane);
  }
}
template <int G, int R>
__device__ __forceinline__ float row_sums(float (&v)[R], int lane) {
  static_assert(R <= G && G <= kWarp);
  row_sums_from<G, R>(v, lane);  // the levels that halve the partials, n = G / 2 .. G / R
#pragma unroll
  for (int n = G / R / 2; n >= 1; n /= 2) v[0] = math::add(v[0], __shfl_xor_sync(kFullMask, v[0], n));
  return v[0];
}
template <int G, int R>
__device__ __forceinline__ int row_lane(int lane, int r) { return lane / G * G + r * (G / R); }

// x times factor, stored as four floats (16-byte aligned).
__device__ __forceinline__ void store_scaled(const float (&x)[4], float factor, float* to) {
  *reinterpret_cast<float4*>(to) =
      make_float4(math::mul(x[0], factor), math::mul(x[1], factor), math::mul(x[2], factor), math::mul(x[3], factor));
}

// T's blocks below the diagonal on tensor cores (step 6), after the diagonal blocks' fp16 inverses: solver
// warp J < 3 takes column block J, both 8-column tiles side by side, and for I = J + 1 .. 3 forms
// P_IJ = sum_{M = J}^{I - 1} Akk_IM T_MJ (fp16 operands: Akk rounded from its fp32 tile as its fragments are
// loaded, T_MJ from T's tile; k-steps in ascending M), rounds it to fp16 into T_IJ's place, then
// T_IJ = -(T_II P_IJ) over it (simulate_inverse is the same sequence). A column block of T depends on no
// other, so no warp waits for another: __syncwarp orders the warp's own stores and loads. Each P_IJ takes
// its k-step M as soon as T_MJ is known, all of the warp's P side by side (the k-step M = J of every I at
// once, then after each T_IJ the k-step M = I of the later ones): warp 0's chain is six dependent products
// rather than nine, each accumulator's k-steps in the same order, so the same bits. (Until stop 29 these
// were fp32 fma chains on eight warps in six barrier-separated steps.)
__device__ __forceinline__ void inverse_levels(const float* akk, __half* t_h, int lane) {
  const int J = fresh_thread_index() / kWarp, g = lane / 4, tq = lane % 4;
  if (J >= kSegments - 1) return;
  // Rows r0 + g, r0 + g + 8, columns c0 .. c0 + 15 of acc as fp16 pairs (the C fragments' layout), negated
  // or not.
  const auto store_block = [&](int r0, int c0, const float (&acc)[2][4], bool negate) {
    const auto value = [&](float v) { return negate ? -v : v; };
#pragma unroll
    for (int nt = 0; nt < 2; ++nt)
#pragma unroll
      for (int x = 0; x < 2; ++x)
        *reinterpret_cast<std::uint32_t*>(t_h + (r0 + g + 8 * x) * kInverseLd + c0 + 8 * nt + 2 * tq) =
            f16_pair(value(acc[nt][2 * x]), value(acc[nt][2 * x + 1]));
  };
  // P_IJ += Akk_IM T_MJ. Akk_IM's A fragment: a0 (g, 2tq..+1), a1 (g + 8, ..), a2 (g, 2tq + 8..+9), a3 (g + 8, ..).
  const auto k_step = [&](int I, int M, float (&acc)[2][4]) {
    const float* rows = akk + akk_at(kSubBlock * I + g, kSubBlock * M + 2 * tq);
    std::uint32_t a[4];
#pragma unroll
    for (int x = 0; x < 4; ++x) {
      const float2 v = *reinterpret_cast<const float2*>(rows + (x % 2) * kHalfBlock * kAld + (x / 2) * kHalfBlock);
      a[x] = f16_pair(v.x, v.y);
    }
    times_k_rows(a, t_h, kInverseLd, kSubBlock * M, kSubBlock * J, lane, acc);
  };
  float p[kSegments][2][4] = {};  // P_IJ of row block I > J
#pragma unroll
  for (int I = 1; I < kSegments; ++I)
    if (I > J) k_step(I, J, p[I]);
#pragma unroll
  for (int I = 1; I < kSegments; ++I) {
    if (I <= J) continue;
    store_block(kSubBlock * I, kSubBlock * J, p[I], false);
    __syncwarp();
    std::uint32_t a[4];
    a_fragment(a, t_h, kInverseLd, kSubBlock * I, kSubBlock * I, lane);
    float x[2][4] = {};
    times_k_rows(a, t_h, kInverseLd, kSubBlock * I, kSubBlock * J, lane, x);
    __syncwarp();  // every lane has read P_IJ before T_IJ overwrites it
    store_block(kSubBlock * I, kSubBlock * J, x, true);
    __syncwarp();
#pragma unroll
    for (int later = I + 1; later < kSegments; ++later) k_step(later, I, p[later]);
  }
}

// Four channels of 16-bit values, two to a word (the lower channel in the low half), widened to fp32: bf16
// by a shift or a mask (kBf16: one instruction a channel), else through widen_select (its three forms and
// two selects a channel).
template <bool kBf16>
__device__ __forceinline__ void widen4(DType dtype, uint2 bits, float (&x)[4]) {
  if constexpr (kBf16) {
    x[0] = __uint_as_float(bits.x << 16), x[1] = __uint_as_float(bits.x & 0xffff0000u);
    x[2] = __uint_as_float(bits.y << 16), x[3] = __uint_as_float(bits.y & 0xffff0000u);
  } else {
    x[0] = access::widen_select(dtype, bits.x & 0xffffu), x[1] = access::widen_select(dtype, bits.x >> 16);
    x[2] = access::widen_select(dtype, bits.y & 0xffffu), x[3] = access::widen_select(dtype, bits.y >> 16);
  }
}

// The loaders' q and k rows in the inputs phase (packed): widened, l2-normalised (or scaled) and stored into
// their tiles. A loader warp holds whole rows, four channels a lane (lane % G the group of
// stage_a::square_sum): the rows' sums of squares meet in row_sums and each lane's factor goes to the lanes
// of its row. (Until stop 29 a phase of its own read the tiles back, a fifth of it shared-memory wavefronts.)
template <int K, bool kBf16>
__device__ __forceinline__ void loader_rows(const DecodeParams& p, uint2 (&q_bits)[kLoaderTokens<K>],
                                            uint2 (&k_bits)[kLoaderTokens<K>], const Tile& t) {
  constexpr int G = K / 4, R = 2 * kLoaderTokens<K>, LD = kLd<K>;
  // The lane and the addresses from a fresh read of the thread index: the shuffles' source lanes are
  // slot-invariant, and hoisted out of the slot loop they were spilled (520 bytes of stack).
  const int me = fresh_thread_index(), l = me % kWarp, at0 = (me - kSolveThreads) / G * LD + 4 * (me % G);
  float sums[R];
#pragma unroll
  for (int n = 0; n < kLoaderTokens<K>; ++n) {
    float x[4];
    widen4<kBf16>(p.q.dtype, q_bits[n], x);
    sums[n] = group_square_sum(x);
    widen4<kBf16>(p.k.dtype, k_bits[n], x);
    sums[kLoaderTokens<K> + n] = group_square_sum(x);
  }
  const float factor =
      norm_factor(row_sums<G>(sums, l), l % G / (G / R) < kLoaderTokens<K> ? p.scale : 1.0f, p.l2norm);
#pragma unroll
  for (int n = 0; n < kLoaderTokens<K>; ++n) {
    const int at = at0 + n * kLoaderStride<K> * LD;
    const float fq = __shfl_sync(kFullMask, factor, row_lane<G, R>(l, n));
    const float fk = __shfl_sync(kFullMask, factor, row_lane<G, R>(l, kLoaderTokens<K> + n));
    // Widened again rather than kept: the bits take half the registers of the values (kept, the
    // compiler spilled them). The empty asm hides that they are the bits widened above.
    asm volatile("" : "+r"(q_bits[n].x), "+r"(q_bits[n].y), "+r"(k_bits[n].x), "+r"(k_bits[n].y));
    float x[4];
    widen4<kBf16>(p.q.dtype, q_bits[n], x);
    store_scaled(x, fq, t.q + at);
    widen4<kBf16>(p.k.dtype, k_bits[n], x);
    store_scaled(x, fk, t.k + at);
  }
}

template <int K>
__global__ void __launch_bounds__(kPrepareThreads, 1) prepare_kernel(const __grid_constant__ ChunkedParams P) {
  using L = PrepareLayout<K>;
  constexpr int LD = L::LD;
  extern __shared__ __align__(16) float shared[];  // 16-byte aligned: stage_a::load4
  const Tile t{shared + L::q,    shared + L::k,    shared + L::alpha,   shared + L::kb,
               shared + L::quad, shared + L::beta, shared + L::segments};
  float* const triangles = shared + L::triangles;
  const DecodeParams& p = P.call;
  const int tid = static_cast<int>(threadIdx.x), warp = tid / kWarp, lane = tid % kWarp;
  // Phase clocks: the latest warp's arrival at the barrier closing phase p, kept in latest[p] (thread 0
  // reads and clears it after that barrier; it is next written in the next slot). A fixed address: a
  // per-warp slot's address was a register spilled to the stack, and every warp waited for its reload
  // before each barrier, with or without clocks.
  __shared__ long long latest[kPreparePhases + 1];
  if (tid <= kPreparePhases) latest[tid] = 0;  // before the first pass's barrier
  // alpha's copy of each slot (issued by the loaders at the previous slot's end): one phase a slot, so that
  // the solve warps can multiply the segments' alphas in the inputs phase, beside the loaders' rows.
  __shared__ std::uint64_t alpha_copied;
  if (tid == 0) mbarrier_init(&alpha_copied, kLoaderThreads);
  __syncthreads();  // initialised before the first pass's arrivals
  unsigned alpha_parity = 0;  // of the phase that the next slot's wait completes
  // The loaders' part, where q and k are 16-bit with contiguous channels and 8-byte aligned rows (packed):
  // loader lt keeps channels 4 (lt % (K / 4)) .. + 3 of tokens lt / (K / 4) + kLoaderStride n, each token's
  // four channels one 8-byte load (64 loads of one channel each took four times the instructions and twice
  // the registers). Tokens past the chunk's length are not loaded: their zero bits widen to the zero rows
  // the later steps need. Other q and k are loaded by all threads in the inputs phase, element by element.
  const bool loader = tid >= kSolveThreads;
  const int lt = tid - kSolveThreads;
  const bool packed = packed_rows<8>(p.q) && packed_rows<8>(p.k);
  uint2 q_bits[kLoaderTokens<K>], k_bits[kLoaderTokens<K>];
  const auto issue_inputs = [&](std::int64_t next) {
    const ChunkEntry en = P.chunks[next / p.HV];
    // The columns walked by pointer (an add per load, not the offset's multiplies).
    const TokenInputs columns = token_inputs(p, en, key_head(p, next % p.HV), 4 * (lt % (K / 4)));
    const std::byte* q_at = columns.q.at(lt / (K / 4));
    const std::byte* k_at = columns.k.at(lt / (K / 4));
#pragma unroll
    for (int n = 0; n < kLoaderTokens<K>;
         ++n, q_at += kLoaderStride<K> * columns.q.step, k_at += kLoaderStride<K> * columns.k.step) {
      q_bits[n] = k_bits[n] = make_uint2(0, 0);
      if (lt / (K / 4) + n * kLoaderStride<K> < en.length)
        q_bits[n] = *reinterpret_cast<const uint2*>(q_at), k_bits[n] = *reinterpret_cast<const uint2*>(k_at);
    }
  };
  const auto issue_alpha = [&](std::int64_t next) {
    const float* alpha = P.work.alpha + next * kChunk * K;
    for (int at = lt; at < kChunk * K / 4; at += kLoaderThreads)
      cp_async16(t.alpha + at / (K / 4) * LD + at % (K / 4) * 4, alpha + 4 * at);
    cp_async_commit();
    cp_async_arrive(&alpha_copied);
  };
  const std::int64_t slots = P.num_chunks * p.HV;
  // The first pass (slot < 0) only issues the first slot's loads: one copy of the loads' code (the
  // kernel must stay within the instruction cache: a kernel of 10 K instructions stalled on fetches).
  for (std::int64_t slot = static_cast<std::int64_t>(blockIdx.x) - gridDim.x; slot < slots; slot += gridDim.x) {
    const bool timed = P.prepare_phase_clocks != nullptr && slot >= 0;
    // A phase ends at the barrier after it, when its last warp arrives. With phase clocks, each warp's
    // arrival goes into latest (a maximum) and thread 0 records it. (Thread 0's own clock read after the barrier
    // booked the wait for a phase's slowest warp to the next phase whenever warp 0 finished early: the
    // 16:37Z run, once the diagonal blocks gave warp 0 the fewest columns.)
    const auto end_phase = [&](int phase) {
      if (timed && lane == 0) atomicMax(&latest[phase], clock64());
      __syncthreads();
      if (timed && tid == 0) {
        P.prepare_phase_clocks[slot * (kPreparePhases + 1) + phase] = latest[phase];
        latest[phase] = 0;
      }
    };
    if (slot >= 0) {
      const std::int64_t hv = slot % p.HV;
      const ChunkEntry e = P.chunks[slot / p.HV];
      if (timed && tid == 0) P.prepare_phase_clocks[slot * (kPreparePhases + 1)] = clock64();

      // Inputs: the loaders' q and k (issued under the previous slot's inverse, or in the first pass) widened,
      // l2-normalised (or scaled) and stored into their tiles, or, not packed, loaded and widened by all
      // threads (and normalised in the next phase); alpha's copy waited for; beta per token.
      if (packed && loader) {
        // Both bf16 (the serving case): widened by a shift, not through widen_select's three forms.
        if (p.q.dtype == DType::bf16 && p.k.dtype == DType::bf16)
          loader_rows<K, true>(p, q_bits, k_bits, t);
        else
          loader_rows<K, false>(p, q_bits, k_bits, t);
      } else if (!packed) {
        const TokenInputs columns = token_inputs(p, e, key_head(p, hv), tid % K);
#pragma unroll 1
        for (int i = tid / K; i < kChunk; i += kPrepareThreads / K)
          store_token_inputs<K>(p, load_token_bits(columns, e, i), i, tid % K, t);
      }
      if (tid < kChunk) t.beta[tid] = load_beta(p, e, hv, tid);
      // The segments' alpha products (stage_a::segment_product; until stop 37 the decay chains' first pass,
      // a barrier of its own) by the solve warps once alpha's copy has landed: packed, they are idle here
      // while the loaders store q and k. The block's n-th slot's copy is the alpha barrier's phase n.
      if (!loader) {
        mbarrier_wait(&alpha_copied, alpha_parity);
#pragma unroll
        for (int at = tid; at < kSegments * K; at += kSolveThreads) {
          SegmentColumn<K> column;
          column.load_alpha(t, at % K, at / K);
          segment_product<K>(t, column, at % K, at / K);
        }
      }
      alpha_parity ^= 1u;
      cp_async_wait_all();
      end_phase(1);

      // Not packed: l2norm (or scale) of q and k from their tiles, as the loaders do it: a warp per eight rows
      // (q's 64, then k's), G lanes a row, four channels a lane.
      if (!packed) {
        constexpr int G = K / 4, kRowsAtOnce = kWarp / G, R = 8 / kRowsAtOnce;
        static_assert(kPrepareThreads / kWarp * 8 == 2 * kChunk);
        const int me = fresh_thread_index(), w = me / kWarp, l = me % kWarp;  // (as the loaders', above)
        const bool is_q = w < kPrepareThreads / kWarp / 2;
        float* const rows = (is_q ? t.q : t.k) + (8 * w + l / G) % kChunk * LD + 4 * (l % G);
        float x[R][4], sums[R];
#pragma unroll
        for (int m = 0; m < R; ++m) {
          load4(rows + kRowsAtOnce * m * LD, x[m]);
          sums[m] = group_square_sum(x[m]);
        }
        const float factor = norm_factor(row_sums<G>(sums, l), is_q ? p.scale : 1.0f, p.l2norm);
#pragma unroll
        for (int m = 0; m < R; ++m)
          store_scaled(x[m], __shfl_sync(kFullMask, factor, row_lane<G, R>(l, m)), rows + kRowsAtOnce * m * LD);
        end_phase(2);
      } else if (timed && tid == 0) {  // packed: no phase of its own, so no barrier; its clock is phase 1's
        P.prepare_phase_clocks[slot * (kPreparePhases + 1) + 2] = P.prepare_phase_clocks[slot * (kPreparePhases + 1) + 1];
      }

      // Diagonal sub-blocks' 8 x 8 triangles (the quadrants below them are tensor-core tiles, below):
      // thread (blk, pair, half, part) = (warp % 4, warp / 4, lane / 16, lane % 16) keeps rows i0 = 8 half +
      // 2 pair and i0 + 1 of sub-block blk (one load of each column for both), and walks the columns of its
      // 8-row half from i0 + 1 down (columns j > a row leave its e alone and are ignored). A warp's two halves
      // keep the pair at the same place in their halves, so both walk pair + 1 passes of two columns (each
      // with its own columns: a uniform trip count, the shuffles converged); each scheduler (warp % 4) gets
      // one sub-block, 1 + 2 + 3 + 4 = 10 passes. (Warps of four consecutive rows walked 2 + 4 + 2 + 4: a
      // warp's first pair walked the columns of its second.) The sixteen parts of a column's four sums (Aqk
      // and Akk of both rows) meet through butterfly shuffles as stage_a::add_parts adds them, two columns at
      // a time (below).
      static_assert(kPrepareThreads == kChunk / 2 * kDiagonalParts && kDiagonalParts == 16);
      {
        const int blk = warp % 4, pair = warp / 4, i0 = kHalfBlock * (lane / kDiagonalParts) + 2 * pair,
                  part = lane % kDiagonalParts;
        DiagonalRows<K, 2> x;
        diagonal_row<K>(t, kSubBlock * blk + i0, part, 0, x);
        diagonal_row<K>(t, kSubBlock * blk + i0 + 1, part, 1, x);
        const bool row_bit = part & 1, akk_bit = part & 2, column_bit = part & 4;
        const int I = kSubBlock * blk + i0 + row_bit;
        const float beta = t.beta[I];  // read once: a read in the loop made its Akk store a branch
        // The lane's store, if any (part 2 r + a + 4 c of 0 .. 7: column j - c of the pair): Aqk[I][J] for
        // J <= I, Akk[I][J] for J < I, stepped by column pair (Aqk transposed: a row of the tile; Akk: an
        // element) rather than addressed from (I, J).
        const int j_first = i0 + 1, J_first = kSubBlock * blk + j_first - column_bit;
        const int j_end = part < 8 ? I - kSubBlock * blk + (akk_bit ? 0 : 1) + column_bit : 0;  // stores for j < j_end
        float* to = triangles + (akk_bit ? akk_at(I, J_first) : aqk_at(I, J_first));
        const int step = 2 * (akk_bit ? akk_at(0, 1) : aqk_at(0, 1));
        // Two columns a pass (a walk has 2, 4, 6 or 8), their sums in one butterfly: each level halves what a
        // lane keeps (bit 0 the row, bit 1 Aqk or Akk, bit 2 the column), eight shuffles for the two columns'
        // sixteen-part trees rather than ten, the columns' chains side by side. Each sum's tree is add_parts'
        // (lanes l and l ^ n at level n), so the bits are the one-column walk's.
#pragma unroll 1  // one copy of the pair's code (instruction cache)
        for (int j = j_first, passes = pair + 1; passes > 0; j -= 2, --passes, to -= step) {
          float sq[2][2], sk[2][2];  // [column j - c][row]
          bool decays[2][2];
          DiagonalColumn<K, 2> column[2];  // both columns' loads before the first column's arithmetic
#pragma unroll
          for (int c = 0; c < 2; ++c) {
            decays[c][0] = j - c < i0, decays[c][1] = j - c < i0 + 1;
            column[c].load(t, kSubBlock * blk + j - c, decays[c], part);
          }
#pragma unroll
          for (int c = 0; c < 2; ++c) column[c].accumulate(decays[c], x, sq[c], sk[c]);
          float w[2][2];  // [column][Aqk, Akk] of the lane's row
#pragma unroll
          for (int c = 0; c < 2; ++c) {
            w[c][0] = math::add(row_bit ? sq[c][1] : sq[c][0], __shfl_xor_sync(kFullMask, row_bit ? sq[c][0] : sq[c][1], 1));
            w[c][1] = math::add(row_bit ? sk[c][1] : sk[c][0], __shfl_xor_sync(kFullMask, row_bit ? sk[c][0] : sk[c][1], 1));
          }
          float y[2];  // [column] of the lane's row and product
#pragma unroll
          for (int c = 0; c < 2; ++c)
            y[c] = math::add(akk_bit ? w[c][1] : w[c][0], __shfl_xor_sync(kFullMask, akk_bit ? w[c][0] : w[c][1], 2));
          float z = math::add(column_bit ? y[1] : y[0], __shfl_xor_sync(kFullMask, column_bit ? y[0] : y[1], 4));
          z = math::add(z, __shfl_xor_sync(kFullMask, z, 8));
          const float scaled = math::mul(beta, z);
          if (j < j_end) *to = akk_bit ? scaled : z;
        }
      }
      end_phase(3);

      // The decay chains, a thread per (key channel d, 16-row segment): from the segments' products (the
      // inputs phase's), kg, the anchored keys, qg and the right-hand side of w, the anchored q and k rows
      // and exp(Γlast) (stage_a::chain_segment).
      static_assert(kPrepareThreads >= kSegments * K);
      if (tid < kSegments * K) {
        SegmentColumn<K> column;  // alpha and k of the thread's rows, loaded once
        column.load(t, tid % K, tid / K);
        chain_segment<K>(t, column, tid % K, tid / K, P.work.qg + slot * kChunk * K, P.work.kg + slot * kChunk * K,
                         P.work.decay + slot * K + tid % K);
      }
      end_phase(4);

      // v (of the right-hand sides), issued now so that the off-diagonal blocks hide the loads' latency; a thread later
      // keeps value channels vcol, vcol + 1 (vcol = 2 (tid % 64), V <= 128) of tokens value_row(n) = tid / 64 + 8 n
      // (bits vbits[2 n + c] of channel vcol + c; a pair, so that the right-hand side is staged in 4-byte stores).
      // Where v's rows allow (RawValues), copied as stored into shared memory; else loaded into registers.
      constexpr int kValuePairs = kMaxValue / 2, kValueRows = kChunk * kValuePairs / kPrepareThreads;
      const int V = static_cast<int>(p.V), vcol = 2 * (tid % kValuePairs);
      const auto value_row = [&](int n) { return tid / kValuePairs + n * (kPrepareThreads / kValuePairs); };
      const bool copy_v = RawValues<K>::copyable(p.v, V);
      std::uint32_t vbits[2 * kValueRows];
      if (copy_v) {
        RawValues<K>::issue(p.v, e, hv, shared);
      } else if (vcol < V) {
        const TokenColumn v0 = token_column(p.v, e, hv, vcol), v1 = token_column(p.v, e, hv, vcol + 1);
#pragma unroll
        for (int n = 0; n < kValueRows; ++n)
          vbits[2 * n] = value_bits(v0, e, value_row(n)), vbits[2 * n + 1] = value_bits(v1, e, value_row(n));
      }

      // Off-diagonal sub-blocks on tensor cores: 12 tasks, one per warp (row block rb = 1..3 anchored at
      // r = 16 rb, a pair of 8-column tiles nt, nt + 1 < r / 8, Aqk or Akk), the two tiles' mma chains side
      // by side on one A fragment. A = anchored rows r.. r + 15 of q or k, B[d][j] = kb row
      // (kb_first(r) + 8 nt + j), channel d. (24 single-tile tasks left eight warps two chains in a row.)
      // The other four warps take the diagonal sub-blocks' quadrants, one tile each: A rows g (q) and g + 8
      // (k) give Aqk and Akk of rows a + g at once (stage_a::quadrant_first).
      {
        const int g = lane / 4, tq = lane % 4;
        if (warp >= 12) {
          const int blk = fresh_thread_index() / kWarp - 12, r = kSubBlock * blk, a = r + kHalfBlock;
          const float* a_rows = t.quad + quadrant_first(blk) * LD;
          const float* b_rows = a_rows + 2 * kHalfBlock * LD;
          float acc[4] = {};
#pragma unroll 4
          for (int k0 = 0; k0 < K; k0 += 8) {
            std::uint32_t af[4], bf[2];
            tf32_a_fragment(a_rows, LD, k0, g, tq, af);
            tf32_b_fragment(b_rows, 0, LD, k0, g, tq, bf);
            mma_tf32(acc, af, bf);
          }
#pragma unroll
          for (int x = 0; x < 2; ++x) {
            const int I = a + g, J = r + 2 * tq + x;
            triangles[aqk_at(I, J)] = acc[x];
            triangles[akk_at(I, J)] = math::mul(t.beta[I], acc[2 + x]);
          }
          // Then the block's diagonal inverse, whose Akk entries are all known now (the 8 x 8 triangles and
          // the quadrant just stored), a column a lane, in fp16 into the segments' region ([4][16][16]: free
          // from the decay chains' end to the next slot's), copied into T's tile in the next phase. These
          // warps have half the products of the phase's others; the inverses' chains were the next phase's
          // longest, on its first two warps.
          __syncwarp();
          if (const int c = fresh_thread_index() % kWarp; c < kSubBlock) {
            float x[kSubBlock];
            inverse_diagonal_column(triangles, blk, c, x);
            auto* const block = reinterpret_cast<std::uint16_t*>(t.segments) + blk * kSubBlock * kSubBlock;
#pragma unroll
            for (int i = 0; i < kSubBlock; ++i) block[i * kSubBlock + c] = access::f32_to_f16(x[i]);
          }
        } else {
          // The warp's task from a fresh read of the thread index: kept from the kernel's start, the
          // warp's parity was spilled, and its reload here from local memory stalled every task (1.6% of
          // the kernel's stall samples, run of 23:40Z).
          const int task = fresh_thread_index() / kWarp;
          const bool keys = task % 2 == 1;
          const int pair = task / 2;
          const int r = pair < 1 ? 16 : pair < 3 ? 32 : 48, nt = 2 * (pair < 1 ? pair : pair < 3 ? pair - 1 : pair - 3);
          const float* a_rows = (keys ? t.k : t.q) + r * LD;
          const float* b_rows = t.kb + (kb_first(r) + 8 * nt) * LD;
          float acc[2][4] = {};
#pragma unroll 4
          for (int k0 = 0; k0 < K; k0 += 8) {
            // The anchored rows are tf32 operands (stage_a::chain_segment).
            std::uint32_t a[4];
            tf32_a_fragment(a_rows, LD, k0, g, tq, a);
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              std::uint32_t b[2];
              tf32_b_fragment(b_rows, 8 * h, LD, k0, g, tq, b);
              mma_tf32(acc[h], a, b);
            }
          }
#pragma unroll
          for (int h = 0; h < 2; ++h)
#pragma unroll
            for (int x = 0; x < 4; ++x) {
              const int I = r + g + (x >= 2 ? 8 : 0), J = 8 * (nt + h) + 2 * tq + (x & 1);
              if (keys)
                triangles[akk_at(I, J)] = math::mul(t.beta[I], acc[h][x]);
              else
                triangles[aqk_at(I, J)] = acc[h][x];
            }
        }
      }
      if (copy_v) cp_async_wait_all();
      end_phase(5);
      if (copy_v) {  // the copied bits into registers, before the right-hand sides (over the copies) are written
        RawValues<K>::read(shared, vbits);
        __syncthreads();
      }

      // u = T (beta v) and w = T (beta k exp(Γ)) with T = (I + Akk)^-1: the diagonal blocks' inverses (the
      // quadrant warps', above) copied into T's tile while all stage Aqk (zero above the diagonal) to the
      // workspace and the right-hand sides [v | k] rounded to fp16 into rhs[i][col] (v widened and scaled,
      // beta k exp(Γ) from its tile); then three warps take T's other blocks (inverse_levels) and the first
      // eight the products, both on tensor cores, while the loaders issue the next slot's loads.
      auto* const rhs = reinterpret_cast<std::uint16_t*>(shared + L::rhs);
      auto* const inverse_h = reinterpret_cast<std::uint16_t*>(shared + L::inverse_h);
      // Thread t < 128: 16 bytes, row t / 2 % 16 of block t / 32, columns 8 (t % 2) .. + 7.
      static_assert(2 * kSegments * K * sizeof(float) >= kSegments * kSubBlock * kSubBlock * sizeof(std::uint16_t));
      if (tid < 2 * kSegments * kSubBlock) {
        const int b = tid / (2 * kSubBlock), r = tid / 2 % kSubBlock, c = 8 * (tid % 2);
        const auto* diagonal = reinterpret_cast<const std::uint16_t*>(t.segments);
        *reinterpret_cast<uint4*>(inverse_h + (kSubBlock * b + r) * kInverseLd + kSubBlock * b + c) =
            *reinterpret_cast<const uint4*>(diagonal + (kSubBlock * b + r) * kSubBlock + c);
      }
      // Aqk rows i0 .. i0 + 7 (i0 = 8 (tid / 64)) of column j = tid % 64, two 16-byte loads of the transposed
      // tile's row j (conflict-free in each quarter warp; an element a load along j was a 4-way conflict,
      // the row stride being 68 floats), each row's store still 32 consecutive columns a warp.
      static_assert(kPrepareThreads == kChunk * kChunk / 8);
      {
        const int j = tid % kChunk, i0 = 8 * (tid / kChunk);
        float a[8];
        load4(triangles + aqk_at(i0, j), a), load4(triangles + aqk_at(i0 + 4, j), a + 4);
#pragma unroll
        for (int m = 0; m < 8; ++m)
          P.work.aqk[(slot * kChunk + i0 + m) * kChunk + j] = access::f32_to_f16(j <= i0 + m ? a[m] : 0.0f);
      }
      // Each copy's loads before its stores: the stores into rhs could alias the tiles read, so that
      // interleaved, each load waited for the store before it.
      // bf16 v (the serving case) widened by a shift, not through widen_select's three forms and two selects.
      const auto stage_values = [&]<bool kBf16>() {
        float beta[kValueRows];
#pragma unroll
        for (int n = 0; n < kValueRows; ++n) beta[n] = t.beta[value_row(n)];
        const auto value = [&](int n, int c) {
          const std::uint32_t bits = vbits[2 * n + c];
          return kBf16 ? value_rhs_of(e, beta[n], value_row(n), math::from_bf16_bits(static_cast<std::uint16_t>(bits)))
                       : value_rhs(p, e, beta[n], value_row(n), bits);
        };
#pragma unroll
        for (int n = 0; n < kValueRows; ++n)
          *reinterpret_cast<std::uint32_t*>(rhs + value_row(n) * kRhsLd + vcol) = f16_pair(value(n, 0), value(n, 1));
      };
      if (vcol < V) {
        if (p.v.dtype == DType::bf16)
          stage_values.template operator()<true>();
        else
          stage_values.template operator()<false>();
      }
      {  // beta k exp(Γ) from its tile: the thread's channels 2 (tid % (K / 2)) + 0, 1, rows tid / (K / 2) +
         // (1024 / K) m (fixed strides from one base each: the index arithmetic of a flat loop was most of this
         // copy's cost), 8-byte loads and 4-byte stores
        constexpr int kPairs = K / 2, kRowsApart = kPrepareThreads / kPairs, kRows = kChunk / kRowsApart;
        const float* from = t.alpha + tid / kPairs * LD + 2 * (tid % kPairs);
        std::uint16_t* to = rhs + tid / kPairs * kRhsLd + V + 2 * (tid % kPairs);
        float2 x[kRows];
#pragma unroll
        for (int m = 0; m < kRows; ++m) x[m] = *reinterpret_cast<const float2*>(from + m * kRowsApart * LD);
#pragma unroll
        for (int m = 0; m < kRows; ++m)
          *reinterpret_cast<std::uint32_t*>(to + m * kRowsApart * kRhsLd) = f16_pair(x[m].x, x[m].y);
      }
      end_phase(6);
      static_assert(kMaxValue + kMaxValue <= kSolveColumns && kSolveColumns == kWarp * (kSolveThreads / kWarp));
      if (tid < kSolveThreads) {
        // T's blocks below the diagonal on tensor cores (inverse_levels, warps 0 .. 2), closed by the first
        // eight warps' named barrier.
        inverse_levels(triangles, reinterpret_cast<__half*>(inverse_h), lane);
        named_sync(1, kSolveThreads);
        // The levels' end, as warp 0 leaves their last barrier (the loaders are not in it).
        if (timed && tid == 0) P.prepare_phase_clocks[slot * (kPreparePhases + 1) + 7] = clock64();
        // [u | w] = T [beta v | beta k exp(Γ)] from their fp16 roundings, fp32 accumulation: warp w takes
        // columns 32 w .. 32 w + 31 (four 8-column tiles) of every row block rb, over the k-steps of the
        // columns j < 16 (rb + 1) (T is zero above them). Rows past the chunk's length come out zero (their
        // right-hand sides are, and T is the identity there). The results go through the warp's staging
        // rows, so that u and w are stored in 16-byte pieces of whole rows: stored from the
        // fragments (4-byte pairs of 8 rows a store), they took 0.047 of the phase's 0.237 ms at 1 x 8192.
        const int col0 = kWarp * warp, g = lane / 4, tq = lane % 4;
        if (col0 < V + K) {
          std::uint16_t* const out =
              col0 < V ? P.work.u + slot * kChunk * V + col0 : P.work.w + slot * kChunk * K + col0 - V;
          const int out_ld = col0 < V ? V : K;
          const auto* rhs_h = reinterpret_cast<const __half*>(rhs);
          const auto* t_h = reinterpret_cast<const __half*>(inverse_h);
          auto* const staged =
              reinterpret_cast<std::uint16_t*>(shared + L::staging) + warp * L::staged_blocks * kSubBlock * kStageLd;
          // All four row blocks at once, k-step outermost: each k-step's B fragments are loaded once for the
          // row blocks rb >= ks that use them (each accumulator still adds its k-steps in ascending order),
          // and the row blocks' chains run side by side.
          float acc[kSegments][2][2][4] = {};
#pragma unroll
          for (int ks = 0; ks < kSegments; ++ks) {
            std::uint32_t b[2][4];
#pragma unroll
            for (int h = 0; h < 2; ++h) b_fragments(b[h], rhs_h, kRhsLd, kSubBlock * ks, col0 + 16 * h, lane);
#pragma unroll
            for (int rb = ks; rb < kSegments; ++rb) {
              std::uint32_t a[4];
              a_fragment(a, t_h, kInverseLd, kSubBlock * rb, kSubBlock * ks, lane);
#pragma unroll
              for (int h = 0; h < 2; ++h) times_b(a, b[h], acc[rb][h]);
            }
          }
#pragma unroll
          for (int rb0 = 0; rb0 < kSegments; rb0 += L::staged_blocks) {
#pragma unroll
            for (int rb = rb0; rb < rb0 + L::staged_blocks; ++rb)
#pragma unroll
              for (int h = 0; h < 2; ++h)
#pragma unroll
                for (int nt = 0; nt < 2; ++nt)
#pragma unroll
                  for (int x = 0; x < 2; ++x)
                    *reinterpret_cast<std::uint32_t*>(staged + (kSubBlock * (rb - rb0) + g + 8 * x) * kStageLd + 16 * h +
                                                      8 * nt + 2 * tq) =
                        access::half_pair(false, acc[rb][h][nt][2 * x], acc[rb][h][nt][2 * x + 1]);
            __syncwarp();
#pragma unroll
            for (int n = 0; n < 2 * L::staged_blocks; ++n) {
              const int piece = lane + kWarp * n, r = piece / 4, c = 8 * (piece % 4);
              *reinterpret_cast<uint4*>(out + (kSubBlock * rb0 + r) * out_ld + c) =
                  *reinterpret_cast<const uint4*>(staged + r * kStageLd + c);
            }
            __syncwarp();
          }
        }
      }
    }
    // Meanwhile the loaders issue the next slot's loads beside T's levels: q and k into registers, alpha into
    // its tile (free since the staging), and (the last loader warp) v's rows into L2. (Stop 26 had alpha's copy wait for the levels' end, which they then
    // took 0.184 -> 0.158 ms at 8 x 2048 with q and k loaded a channel at a time; with 8-byte loads of four
    // channels the levels took 0.13 to 0.14 with or without alpha's copy beside them, and the products and
    // stores 0.134 -> 0.108: stop 27's comparison calls.)
    const std::int64_t next = slot + gridDim.x;
    if (packed && loader && next < slots) {
      issue_inputs(next);
    } else {
#pragma unroll
      for (int n = 0; n < kLoaderTokens<K>; ++n) q_bits[n] = k_bits[n] = make_uint2(0, 0);  // no register holds them here
    }
    if (loader && next < slots) issue_alpha(next);
    if (fresh_thread_index() / kWarp == kPrepareThreads / kWarp - 1 && next < slots &&
        RawValues<K>::copyable(p.v, static_cast<int>(p.V)))
      RawValues<K>::prefetch(p.v, P.chunks[next / p.HV], next % p.HV, lane);
    end_phase(8);  // the end of the slot: its tiles are free for the next
  }
}

// ---------------------------------------------------------------------------------------------------
// Stage B: one block per (sequence n, value head hv, `columns` value channels), blockIdx.x = (n * HV +
// hv) * tiles + tile with `tiles` the head's blocks (ScanShape: 8 warps per 32 channels, 16 per 64 in the
// paired form, 16 per 128 in the wide). Warp w = 4 cg + rb owns value channels warp_columns cg .. of the
// block's: token rows 16 rb .. 16 rb + 15 of v_new and o, and key channels K / 4 rb .. of the state S
// (fp32, in its mma accumulators). Eight warps or more a block: each chunk is a chain of dependent
// products, and two warps per scheduler hide each other's latencies. Each output element's products are
// summed in the same order in every form, so the four give the same bits.

// How a form of stage B is built: value tiles of 32 channels a block, the channels a warp owns (16, or
// 32 in the wide form: each A fragment of w, qg, kg and Aqk then serves twice the columns, a third fewer
// shared-memory loads a product), threads, whether its inputs have one buffer, blocks an SM, and the S
// and v_new operand tiles: two (chunk parity) except in the wide form, whose 128 channels leave room for
// one. One of each suffices with two barriers a chunk: S is read before barrier 2 and published after it,
// v_new written before barrier 2 and read after it, and the next chunk's writes of either come after its
// barrier 1.
template <ScanForm F>
struct ScanShape {
  static constexpr bool transposed = F == ScanForm::transposed;
  static constexpr int tiles = F == ScanForm::paired ? 2 : F == ScanForm::wide || transposed ? 4 : 1,
                       columns = tiles * kValueTile;
  // Value channels a warp: the transposed form's warps keep 16 value rows of S^T over every key channel.
  static constexpr int warp_columns = F == ScanForm::wide ? 32 : 16, warps = (transposed ? 1 : 4) * columns / warp_columns;
  static constexpr int threads = warps * 32;
  static constexpr bool single = F == ScanForm::single_buffered;
  // S and v_new fp16 operand tiles: none in the transposed form (both stay in registers).
  static constexpr int blocks_per_sm = single ? 2 : 1, operand_parities = transposed ? 0 : F == ScanForm::wide ? 1 : 2;
};

template <int K, ScanForm F>
struct ScanLayout {  // byte offsets into dynamic shared memory; row strides padded against bank conflicts
  // (the transposed form's w, qg, kg and Aqk are unpadded core matrices inside the same room)
  static constexpr int columns = ScanShape<F>::columns;
  static constexpr int WLD = K + 8;          // halfs: w, qg, kg rows
  static constexpr int ULD = columns + 8;    // halfs: u rows (the block's value channels)
  static constexpr int ALD = kChunk + 8;     // halfs: Aqk rows
  static constexpr int SLD = columns + 8;    // halfs: S and v_new rows (fp16 operands)
  // One chunk's inputs, in the two parts the single-buffered form loads at different times
  // (scan_kernel): what v_new and qg S read, then what the products after v_new read. Two such
  // buffers (chunk parity) in the double-buffered form.
  static constexpr std::size_t w = 0, qg = w + 2 * kChunk * WLD, u = qg + 2 * kChunk * WLD, kg = u + 2 * kChunk * ULD,
                               aqk = kg + 2 * kChunk * WLD, decay = aqk + 2 * kChunk * ALD, buffer = decay + 4 * K,
                               buffers = ScanShape<F>::single ? 1 : 2;
  // S and v_new operands, one of each per parity (ScanShape).
  static constexpr std::size_t parities = ScanShape<F>::operand_parities;
  static constexpr std::size_t st = buffers * buffer, vnew = st + parities * 2 * K * SLD,
                               bytes = vnew + parities * 2 * kChunk * SLD;
  static_assert(kg % 16 == 0 && buffer % 16 == 0, "cp.async needs 16-byte aligned destinations");
};

// A thread's share of a chunk's copies (cp.async, 16 bytes each), the same for every chunk and so
// computed once: the shared byte offset (within a buffer) and the global element offset (within the
// slot's array) of its first piece of each array. The [64][K] arrays (w, qg, kg) take kRowCopies pieces
// a thread, kRowStep rows apart; u (the block's channels of each row) kUCopies, kUStep rows apart; Aqk
// kAqkCopies (two for 256 threads, one for 512), kAqkStep rows apart; exp(Γlast) one for the first K / 4
// threads.
template <int K, ScanForm F>
struct ChunkCopies {
  using L = ScanLayout<K, F>;
  static constexpr int kThreads = ScanShape<F>::threads;
  static constexpr int kRowPieces = K / 8, kUPieces = L::columns / 8;  // 16-byte pieces of a row
  static constexpr int kRowCopies = kChunk * kRowPieces / kThreads, kRowStep = kThreads / kRowPieces;
  static constexpr int kUCopies = kChunk * kUPieces / kThreads, kUStep = kThreads / kUPieces;
  static constexpr int kAqkCopies = kChunk * kChunk / 8 / kThreads, kAqkStep = kThreads / (kChunk / 8);
  static_assert(kChunk * kRowPieces % kThreads == 0 && kChunk * kUPieces % kThreads == 0 && K / 4 <= kThreads);
  // The transposed form's w, qg, kg and Aqk as wgmma's B operands: 8 x 8 core matrices of 128 contiguous
  // bytes (8 token rows of 8 channels), the one of token block tb and channel block cb at (8 cb + tb) 128
  // bytes. Warp w copies token block w, lane 8 j + r token 8 w + r, channel block 4 m + j in
  // copy m: a warp's copy is four whole core matrices (conflict-free stores).
  static constexpr bool kCore = ScanShape<F>::transposed;
  static_assert(!kCore || (kThreads == 256 && kRowCopies == K / 32 && kAqkCopies == 2));
  // (a copy m further: four channel blocks on, 32 channels, 4 x 8 core matrices)
  static constexpr int kCoreStepGlobal = 32, kCoreStepShared = 4 * 8 * 128;
  static constexpr int kRowStepGlobal = kCore ? kCoreStepGlobal : kRowStep * K,
                       kRowStepShared = kCore ? kCoreStepShared : 2 * kRowStep * L::WLD;
  static constexpr int kAqkStepGlobal = kCore ? kCoreStepGlobal : kAqkStep * kChunk,
                       kAqkStepShared = kCore ? kCoreStepShared : 2 * kAqkStep * L::ALD;
  int rows_shared, rows_global, u_shared, u_global, aqk_shared, aqk_global;
  bool decay;
  __device__ ChunkCopies(int tid, int block_tile, std::int64_t V) {
    if constexpr (kCore) {
      const int w = tid / 32, r = tid % 8, j = tid % 32 / 8;
      rows_shared = (8 * j + w) * 128 + 16 * r;
      rows_global = (8 * w + r) * K + 8 * j;
      aqk_shared = static_cast<int>(L::aqk) + rows_shared;
      aqk_global = (8 * w + r) * kChunk + 8 * j;
    } else {
      rows_shared = 2 * (tid / kRowPieces) * L::WLD + 16 * (tid % kRowPieces);
      rows_global = tid / kRowPieces * K + 8 * (tid % kRowPieces);
      aqk_shared = static_cast<int>(L::aqk) + 2 * (tid / 8) * L::ALD + 16 * (tid % 8);
      aqk_global = tid / 8 * kChunk + 8 * (tid % 8);
    }
    u_shared = static_cast<int>(L::u) + 2 * (tid / kUPieces) * L::ULD + 16 * (tid % kUPieces);
    u_global = static_cast<int>(tid / kUPieces * V) + block_tile * L::columns + 8 * (tid % kUPieces);
    decay = tid < K / 4;
  }
};

// A buffer's arrays (at ScanLayout L's offsets).
struct ChunkInputs {
  const __half *w, *qg, *kg, *u, *aqk;
  const float* decay;
  template <class L>
  __device__ static ChunkInputs of(const std::byte* buffer) {
    const auto at = [&](std::size_t offset) { return reinterpret_cast<const __half*>(buffer + offset); };
    return {at(L::w), at(L::qg), at(L::kg), at(L::u), at(L::aqk), reinterpret_cast<const float*>(buffer + L::decay)};
  }
};

// The two parts of chunk slot's inputs for the block's value channels: part 0 w, qg and the block's u;
// part 1 kg, Aqk and exp(Γlast).
template <int K, ScanForm F>
__device__ __forceinline__ void prefetch_chunk(const ChunkedParams& P, const ChunkCopies<K, F>& my, std::int64_t slot,
                                               std::byte* shared, int part) {
  using C = ChunkCopies<K, F>;
  using L = typename C::L;
  const auto rows_of = [&](const std::uint16_t* source, std::size_t offset) {
    const std::uint16_t* from = source + slot * kChunk * K + my.rows_global;
    std::byte* to = shared + offset + my.rows_shared;
#pragma unroll
    for (int m = 0; m < C::kRowCopies; ++m) cp_async16(to + m * C::kRowStepShared, from + m * C::kRowStepGlobal);
  };
  if (part == 0) {
    rows_of(P.work.w, L::w), rows_of(P.work.qg, L::qg);
    const std::uint16_t* u = P.work.u + slot * kChunk * P.call.V + my.u_global;
#pragma unroll
    for (int m = 0; m < C::kUCopies; ++m)
      cp_async16(shared + my.u_shared + 2 * m * C::kUStep * L::ULD, u + m * C::kUStep * P.call.V);
    return;
  }
  rows_of(P.work.kg, L::kg);
  const std::uint16_t* aqk = P.work.aqk + slot * kChunk * kChunk + my.aqk_global;
#pragma unroll
  for (int m = 0; m < C::kAqkCopies; ++m)
    cp_async16(shared + my.aqk_shared + m * C::kAqkStepShared, aqk + m * C::kAqkStepGlobal);
  if (my.decay) cp_async16(shared + L::decay + 16 * threadIdx.x, P.work.decay + slot * K + 4 * threadIdx.x);
}

// How stage B stores o, chosen once at launch (o_store_of): a pair of channels as one 4-byte store of
// two bf16 or fp16 (o in that dtype with unit channel stride and every pair 4-byte aligned), or through
// access::store_pair's run-time checks (any other o). A template argument: in the run-time form the
// dtype and alignment branches around each pair took a third of stage B's instructions and a fifth of
// its stall samples (Nsight Compute source counters at 1 x 8192, run of 23:40Z).
enum class OStore { bf16_pairs, f16_pairs, any };

template <OStore M>
__device__ __forceinline__ void store_o_pair(const TensorRef& o, std::int64_t at, float a, float b) {
  if constexpr (M == OStore::any) {
    access::store_pair(o, at, a, b);
  } else {
    *reinterpret_cast<std::uint32_t*>(o.data + 2 * at) = access::half_pair(M == OStore::bf16_pairs, a, b);
  }
}

// A padding row's (index -1) outputs for the block's `kColumns` value channels from v0: zero o and zero
// chunk-start states (outputs too; the fp64 reference writes zeros there as well). The pool is untouched.
template <int K, int kColumns, int kThreads>
__device__ void write_padding_outputs(const ChunkedParams& P, std::int64_t n, std::int64_t hv, int v0) {
  const DecodeParams& p = P.call;
  const int tid = static_cast<int>(threadIdx.x);
  const std::int64_t first_chunk = P.sequence_chunks[n], end_chunk = P.sequence_chunks[n + 1];
  const access::SequenceRange seq = access::sequence_range(p, n);
  for (std::int64_t at = tid; at < seq.length * kColumns; at += kThreads) {
    const std::int64_t tok = seq.first + at / kColumns, v = v0 + at % kColumns;
    access::store(p.o, seq.row * p.o.stride[0] + tok * p.o.stride[1] + hv * p.o.stride[2] + v * p.o.stride[3], 0.0f);
  }
  if (P.chunk_states.data)
    for (std::int64_t at = tid; at < (end_chunk - first_chunk) * K * kColumns; at += kThreads) {
      const std::int64_t c = first_chunk + at / (K * kColumns), d = at / kColumns % K, v = v0 + at % kColumns;
      access::store(P.chunk_states, access::state_offset(P.chunk_states, v, d), 0.0f,
                    access::head_of(P.chunk_states, c, hv));
    }
}

template <int K, ScanForm F, OStore kO>
__global__ void __launch_bounds__(ScanShape<F>::threads, ScanShape<F>::blocks_per_sm)
    scan_kernel(const __grid_constant__ ChunkedParams P, const int tiles) {
  using L = ScanLayout<K, F>;
  constexpr bool kSingle = ScanShape<F>::single;
  constexpr int kThreads = ScanShape<F>::threads;
  constexpr int MT = K / 64;                           // 16-row tiles of S per warp
  constexpr int NB = ScanShape<F>::warp_columns / 16;  // 16-channel pairs of n-tiles per warp
  extern __shared__ __align__(16) std::byte scan_shared[];
  const DecodeParams& p = P.call;
  const int tid = static_cast<int>(threadIdx.x), warp = tid / kWarp, lane = tid % kWarp, g = lane / 4, tq = lane % 4;
  // The warp's row block and first value channel (within the block's).
  const int rb = warp % 4, col0 = ScanShape<F>::warp_columns * (warp / 4);
  const int tile = static_cast<int>(blockIdx.x % static_cast<unsigned>(tiles));
  // Sequences longest first (ChunkTable::longest_first), the value heads of each in turn.
  const std::int64_t head = blockIdx.x / static_cast<unsigned>(tiles), hv = head % p.HV;
  const std::int64_t n = P.longest_first[head / p.HV];
  const int v0 = tile * L::columns;
  auto st_of = [&](std::int64_t parity) {
    return reinterpret_cast<__half*>(scan_shared + L::st) + parity % L::parities * K * L::SLD;
  };
  auto vnew_of = [&](std::int64_t parity) {
    return reinterpret_cast<__half*>(scan_shared + L::vnew) + parity % L::parities * kChunk * L::SLD;
  };

  const std::int64_t first_chunk = P.sequence_chunks[n], end_chunk = P.sequence_chunks[n + 1];
  const access::HeadStates hs = access::head_states(p, n, hv);
  if (hs.padding) return write_padding_outputs<K, L::columns, kThreads>(P, n, hv, v0);
  const ChunkCopies<K, F> copies(tid, tile, p.V);
  // The lane's first o element of a chunk's row 0, less the chunk's own offset (its value channels
  // v0 + value_of(nb, nt, x) for x = 0, 2).
  const std::int64_t o_column = hv * p.o.stride[2] + (v0 + col0 + 2 * tq) * p.o.stride[3];
  if (first_chunk < end_chunk) {
    prefetch_chunk<K, F>(P, copies, first_chunk * p.HV + hv, scan_shared, 0);
    if constexpr (!kSingle) prefetch_chunk<K, F>(P, copies, first_chunk * p.HV + hv, scan_shared, 1);
  }
  cp_async_commit();

  // S in the accumulator layout of the state update: element (mt, nb, nt, x) is key channel
  // d = K / 4 rb + 16 mt + g (+ 8 for x >= 2), value channel v0 + col0 + 16 nb + 8 nt + 2 tq + (x & 1).
  auto key_of = [&](int mt, int x) { return K / 4 * rb + 16 * mt + g + (x >= 2 ? 8 : 0); };
  auto value_of = [&](int nb, int nt, int x) { return col0 + 16 * nb + 8 * nt + 2 * tq + (x & 1); };  // in the block's
  float S[MT][NB][2][4];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int nb = 0; nb < NB; ++nb)
#pragma unroll
      for (int nt = 0; nt < 2; ++nt)
#pragma unroll
        for (int x = 0; x < 4; ++x)
          S[mt][nb][nt][x] =
              hs.in ? access::load(p.state_in,
                                   access::state_offset(p.state_in, v0 + value_of(nb, nt, x), key_of(mt, x)), hs.in)
                    : 0.0f;
  auto publish_state = [&](__half* st) {  // S as fp16 operands, [d][v], for the next chunk's products
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int nb = 0; nb < NB; ++nb)
#pragma unroll
        for (int nt = 0; nt < 2; ++nt)
#pragma unroll
          for (int x = 0; x < 4; x += 2)
            *reinterpret_cast<std::uint32_t*>(&st[key_of(mt, x) * L::SLD + value_of(nb, nt, x)]) =
                f16_pair(S[mt][nb][nt][x], S[mt][nb][nt][x + 1]);
  };
  publish_state(st_of(0));

  // Per chunk c (parity c - first_chunk): its inputs are waited for; barrier 1 (every thread's copies
  // have landed, the published S is visible, and every warp is done with chunk c - 1); v_new and qg S;
  // barrier 2 (v_new complete); Aqk v_new, the state update and S published into the other parity's
  // operand. Double-buffered, all of chunk c + 1's inputs are issued after barrier 1 into the other
  // buffer. Single-buffered (two blocks fit an SM), each part is issued as soon as the previous chunk's
  // is dead: part 1 (kg, Aqk, exp(Γlast)) after barrier 1, waited for before barrier 2; part 0 (w, qg,
  // u) of chunk c + 1 after barrier 2, waited for before the next barrier 1.
  for (std::int64_t c = first_chunk; c < end_chunk; ++c) {
    const std::int64_t parity = (c - first_chunk) % 2;
    const std::byte* buffer = scan_shared + (kSingle ? 0 : parity * L::buffer);
    const __half* st = st_of(parity);
    __half* vnew = vnew_of(parity);
    const ChunkEntry e = P.chunks[c];  // loaded here, used after the wait: off the chain's critical path
    cp_async_wait_all();
    __syncthreads();
    const auto [w, qg, kg, u, aqk, decay] = ChunkInputs::of<L>(buffer);
    const int row = 16 * rb + g;  // this lane's token rows: row and row + 8

    // v_new = u - w S (fp16), rows 16 rb .. + 15, and this warp's qg S of o, which needs no v_new: one
    // k-loop, each S fragment loaded once for both products, four independent accumulator chains (each
    // accumulator's products in the same order as a loop of its own). Software-pipelined: the fragments
    // of k-step s + 1 are loaded before the products of step s, and those of step 0 and the lane's u
    // before the next copies are issued, whose address arithmetic then covers the loads' latency (the
    // first product of each step had waited on its ldmatrix: a third of stage B's stall samples).
    constexpr int kSteps = K / 16;
    struct StepFragments {
      std::uint32_t w[4], qg[4], s[NB][4];
    } fragments[2];  // by step parity
    const auto load_step = [&](int step, StepFragments& f) {
      a_fragment(f.w, w, L::WLD, 16 * rb, 16 * step, lane);
      a_fragment(f.qg, qg, L::WLD, 16 * rb, 16 * step, lane);
#pragma unroll
      for (int nb = 0; nb < NB; ++nb) b_fragments(f.s[nb], st, L::SLD, 16 * step, col0 + 16 * nb, lane);
    };
    load_step(0, fragments[0]);
    __half2 u_pairs[NB][2][2];  // u of (nb, nt, row half), channels value_of(nb, nt, 0) and + 1
#pragma unroll
    for (int nb = 0; nb < NB; ++nb)
#pragma unroll
      for (int nt = 0; nt < 2; ++nt)
#pragma unroll
        for (int h = 0; h < 2; ++h)
          u_pairs[nb][nt][h] = *reinterpret_cast<const __half2*>(&u[(row + 8 * h) * L::ULD + value_of(nb, nt, 0)]);

    if constexpr (kSingle) {
      prefetch_chunk<K, F>(P, copies, c * p.HV + hv, scan_shared, 1);
    } else if (c + 1 < end_chunk) {
      std::byte* next = scan_shared + (1 - parity) * L::buffer;
      prefetch_chunk<K, F>(P, copies, (c + 1) * p.HV + hv, next, 0),
          prefetch_chunk<K, F>(P, copies, (c + 1) * p.HV + hv, next, 1);
    }
    cp_async_commit();

    if (P.chunk_states.data) {
      // The element offsets from a fresh read of the thread index: from the kernel's own, the compiler
      // hoisted all MT * NB * 8 of them out of the chunk loop and spilled them (the wide form: 296 bytes).
      std::byte* at = access::head_of(P.chunk_states, c, hv);
      const int now = fresh_thread_index() % kWarp, key0 = K / 4 * rb + now / 4, value0 = v0 + col0 + 2 * (now % 4);
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int nb = 0; nb < NB; ++nb)
#pragma unroll
          for (int nt = 0; nt < 2; ++nt)
#pragma unroll
            for (int x = 0; x < 4; ++x)
              access::store(P.chunk_states,
                            access::state_offset(P.chunk_states, value0 + 16 * nb + 8 * nt + (x & 1),
                                                 key0 + 16 * mt + (x >= 2 ? 8 : 0)),
                            S[mt][nb][nt][x], at);
    }

    float o[NB][2][4] = {};
    {
      float acc[NB][2][4] = {};
#pragma unroll
      for (int step = 0; step < kSteps; ++step) {
        if (step + 1 < kSteps) load_step(step + 1, fragments[(step + 1) % 2]);
        const StepFragments& f = fragments[step % 2];
#pragma unroll
        for (int nb = 0; nb < NB; ++nb) {
          times_b(f.w, f.s[nb], acc[nb]);
          times_b(f.qg, f.s[nb], o[nb]);
        }
      }
#pragma unroll
      for (int nb = 0; nb < NB; ++nb)
#pragma unroll
        for (int nt = 0; nt < 2; ++nt)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int i = row + 8 * h, v = value_of(nb, nt, 0);
            *reinterpret_cast<std::uint32_t*>(&vnew[i * L::SLD + v]) =
                f16_pair(math::sub(__low2float(u_pairs[nb][nt][h]), acc[nb][nt][2 * h]),
                         math::sub(__high2float(u_pairs[nb][nt][h]), acc[nb][nt][2 * h + 1]));
          }
    }
    if constexpr (kSingle) cp_async_wait_all();
    __syncthreads();  // v_new complete (single-buffered: part 1 landed, part 0 read for the last time)
    if constexpr (kSingle) {
      if (c + 1 < end_chunk) prefetch_chunk<K, F>(P, copies, (c + 1) * p.HV + hv, scan_shared, 0);
      cp_async_commit();
    }

    // o += Aqk v_new over the columns j < 16 (rb + 1) (Aqk is 0 above the diagonal).
    {
      for (int j0 = 0; j0 < 16 * (rb + 1); j0 += 16) {
        std::uint32_t a[4];
        a_fragment(a, aqk, L::ALD, 16 * rb, j0, lane);
#pragma unroll
        for (int nb = 0; nb < NB; ++nb) times_k_rows(a, vnew, L::SLD, j0, col0 + 16 * nb, lane, o[nb]);
      }
      const std::int64_t at = e.row * p.o.stride[0] + (e.first + row) * p.o.stride[1] + o_column;
#pragma unroll
      for (int nb = 0; nb < NB; ++nb)
#pragma unroll
        for (int nt = 0; nt < 2; ++nt)
#pragma unroll
          for (int x = 0; x < 4; x += 2)
            if (row + (x >= 2 ? 8 : 0) < e.length)
              store_o_pair<kO>(p.o, at + (16 * nb + 8 * nt) * p.o.stride[3] + (x >= 2 ? 8 * p.o.stride[1] : 0),
                               o[nb][nt][x], o[nb][nt][x + 1]);
    }

    // S = exp(Γlast) S + kg^T v_new: A[d][j] = kg[j][d] (kg stored [j][d]), B[j][v] = v_new[j][v]. Each
    // k-step's v_new fragments are loaded once for all MT row tiles of S (each accumulator still sums
    // its k-steps in ascending order).
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int nb = 0; nb < NB; ++nb)
#pragma unroll
        for (int nt = 0; nt < 2; ++nt)
#pragma unroll
          for (int x = 0; x < 4; ++x) S[mt][nb][nt][x] = math::mul(decay[key_of(mt, x)], S[mt][nb][nt][x]);
#pragma unroll
    for (int j0 = 0; j0 < kChunk; j0 += 16) {
      std::uint32_t b[NB][4];
#pragma unroll
      for (int nb = 0; nb < NB; ++nb) b_fragments(b[nb], vnew, L::SLD, j0, col0 + 16 * nb, lane);
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        std::uint32_t a[4];
        a_fragment_of_transposed(a, kg, L::WLD, K / 4 * rb + 16 * mt, j0, lane);
#pragma unroll
        for (int nb = 0; nb < NB; ++nb) times_b(a, b[nb], S[mt][nb]);
      }
    }
    publish_state(st_of(1 - parity));
  }

  if (hs.out)
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int nb = 0; nb < NB; ++nb)
#pragma unroll
        for (int nt = 0; nt < 2; ++nt)
#pragma unroll
          for (int x = 0; x < 4; ++x)
            access::store(p.state_out, access::state_offset(p.state_out, v0 + value_of(nb, nt, x), key_of(mt, x)),
                          S[mt][nb][nt][x], hs.out);
}

// The 8 x 8 b16 matrix whose row r, columns 2 c and 2 c + 1 lane 4 r + c holds (the accumulator layout of
// an n-tile, packed in pairs), transposed: lane 4 r + c then holds its column r, rows 2 c and 2 c + 1.
__device__ __forceinline__ std::uint32_t transposed_pair(std::uint32_t pair) {
  std::uint32_t out;
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;\n" : "=r"(out) : "r"(pair));
  return out;
}

// Stage B's transposed form (ScanForm::transposed), one block of 8 warps (two warpgroups) per (sequence,
// value head) at V = 128: warp w keeps value rows 16 w .. 16 w + 15 of the transposed state S^T (V x K) in
// the accumulators of K / 8 n-tiles, so that the state is an A operand as it stands (an n-tile pair's
// accumulators, rounded to fp16 pairs, are the A fragment of a k-step) and never goes through shared
// memory, and so is v_new^T:
//   v_new^T = u^T - S^T w^T,  o^T = S^T qg^T + v_new^T Aqk^T,  S^T = exp(Γlast) S^T + v_new^T kg,
// each output element's products in the same k-steps and order as scan_kernel's (so the same bits: the
// tensor core's sum does not depend on which operand is A, nor on mma.sync or wgmma, tensor_core_model.hpp
// and its hardware test). The products are wgmma of each warpgroup's 64 value rows, A from registers and B
// (w, qg, kg, Aqk) read by the tensor cores from shared memory through descriptors, the inputs copied there
// as 8 x 8 core matrices (ChunkCopies); u is read in v_new^T's accumulator layout by ldmatrix.trans. The
// warps share nothing else, so a chunk has one barrier (its inputs landed, every warp done with the buffer
// the next chunk's copies then overwrite). Inputs double-buffered as in the double-buffered form
// (prefetch_chunk). o^T's pairs of tokens become pairs of channels by movmatrix, two channels a 4-byte store.
template <int K, OStore kO>
__global__ void __launch_bounds__(ScanShape<ScanForm::transposed>::threads, ScanShape<ScanForm::transposed>::blocks_per_sm)
    scan_transposed_kernel(const __grid_constant__ ChunkedParams P, const int tiles) {
  constexpr ScanForm F = ScanForm::transposed;
  using L = ScanLayout<K, F>;
  constexpr int kThreads = ScanShape<F>::threads;
  static_assert(kThreads == 256 && L::columns == 16 * ScanShape<F>::warps);
  constexpr int NT = K / 8, kSteps = K / 16, kTokenTiles = kChunk / 8, kTokenSteps = kChunk / 16;
  extern __shared__ __align__(16) std::byte scan_shared[];
  const DecodeParams& p = P.call;
  const int tid = static_cast<int>(threadIdx.x), warp = tid / kWarp, lane = tid % kWarp, g = lane / 4, tq = lane % 4;
  const int tile = static_cast<int>(blockIdx.x % static_cast<unsigned>(tiles));
  const std::int64_t head = blockIdx.x / static_cast<unsigned>(tiles), hv = head % p.HV;
  const std::int64_t n = P.longest_first[head / p.HV];
  const int v0 = tile * L::columns, vw = 16 * warp;  // the block's first value channel, the warp's (in the block's)
  const std::int64_t first_chunk = P.sequence_chunks[n], end_chunk = P.sequence_chunks[n + 1];
  const access::HeadStates hs = access::head_states(p, n, hv);
  if (hs.padding) return write_padding_outputs<K, L::columns, kThreads>(P, n, hv, v0);
  const ChunkCopies<K, F> copies(tid, tile, p.V);
  if (first_chunk < end_chunk) {
    prefetch_chunk<K, F>(P, copies, first_chunk * p.HV + hv, scan_shared, 0);
    prefetch_chunk<K, F>(P, copies, first_chunk * p.HV + hv, scan_shared, 1);
  }
  cp_async_commit();

  // S^T in the accumulator layout: element (nt, x) is value channel v0 + vw + g (+ 8 for x >= 2), key
  // channel 8 nt + 2 tq + (x & 1) (wgmma's m64 D: warp w % 4 of the warpgroup its 16 rows, as mma's C).
  auto value_of = [&](int x) { return v0 + vw + g + (x >= 2 ? 8 : 0); };
  auto key_of = [&](int nt, int x) { return 8 * nt + 2 * tq + (x & 1); };
  float S[NT][4];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt)
#pragma unroll
    for (int x = 0; x < 4; ++x)
      S[nt][x] = hs.in ? access::load(p.state_in, access::state_offset(p.state_in, value_of(x), key_of(nt, x)), hs.in)
                       : 0.0f;
  // B operands by descriptor (ChunkCopies' core matrices: token block tb, channel block cb at (8 cb + tb) 128 bytes):
  // k along channels for w and qg (B[d][i] = w[i][d]) and along tokens j for Aqk (B[j][i] = Aqk[i][j]),
  // both core-matrix rows 16 bytes of k; k along tokens for kg (B[j][d] = kg[j][d], rows 16 bytes of n).
  const auto rows_b = [](const __half* tile, int tb, int cb) {
    return wgmma_descriptor(tile + 64 * (8 * cb + tb), 8 * 128, 128);
  };
  const auto keys_b = [](const __half* tile, int tb) { return wgmma_descriptor(tile + 64 * tb, 128, 8 * 128); };

  for (std::int64_t c = first_chunk; c < end_chunk; ++c) {
    const std::int64_t parity = (c - first_chunk) % 2;
    const std::byte* buffer = scan_shared + parity * L::buffer;
    const ChunkEntry e = P.chunks[c];  // loaded here, used after the wait: off the chain's critical path
    cp_async_wait_all();
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // the copies, visible to wgmma's reads
    __syncthreads();  // the chunk's inputs landed; every warp is done with chunk c - 1's buffer
    const auto [w, qg, kg, u, aqk, decay] = ChunkInputs::of<L>(buffer);
    if (c + 1 < end_chunk) {  // issued first: issued after the first products, the copies made a chunk slower
      std::byte* next = scan_shared + (1 - parity) * L::buffer;
      prefetch_chunk<K, F>(P, copies, (c + 1) * p.HV + hv, next, 0),
          prefetch_chunk<K, F>(P, copies, (c + 1) * p.HV + hv, next, 1);
    }
    cp_async_commit();

    if (P.chunk_states.data) {  // offsets from a fresh thread index (scan_kernel: else hoisted and spilled)
      std::byte* at = access::head_of(P.chunk_states, c, hv);
      const int now = fresh_thread_index(), value0 = v0 + now / kWarp * 16 + now % kWarp / 4, key0 = 2 * (now % 4);
#pragma unroll
      for (int nt = 0; nt < NT; ++nt)
#pragma unroll
        for (int x = 0; x < 4; ++x)
          access::store(P.chunk_states,
                        access::state_offset(P.chunk_states, value0 + (x >= 2 ? 8 : 0), key0 + 8 * nt + (x & 1)),
                        S[nt][x], at);
    }

    // S^T as the A fragments of the k-steps over key channels, rounded to fp16 once a chunk: a0 (g, 2tq..+1),
    // a1 (g + 8, 2tq..+1), a2 (g, 2tq + 8..+9), a3 (g + 8, 2tq + 8..+9) of n-tiles 2 step, 2 step + 1.
    std::uint32_t sa[kSteps][4];
#pragma unroll
    for (int step = 0; step < kSteps; ++step)
      sa[step][0] = f16_pair(S[2 * step][0], S[2 * step][1]), sa[step][1] = f16_pair(S[2 * step][2], S[2 * step][3]),
      sa[step][2] = f16_pair(S[2 * step + 1][0], S[2 * step + 1][1]),
      sa[step][3] = f16_pair(S[2 * step + 1][2], S[2 * step + 1][3]);

    // Whole-chunk products, n = the chunk's 64 tokens: v_new^T's and o^T's S^T products as two batches, v_new^T
    // rounded while o^T's runs; then o^T's Aqk products (k-steps of tokens j over every token i: above the
    // diagonal Aqk is 0, and a k-step of zero products leaves an accumulator as it is, tensor_core_model.hpp,
    // so these are the bits of skipping them) and the update, o stored while the update runs. Two wider
    // batches rather than a half's n32 and n16 products: 24 wgmma a chunk rather than 62.
    std::uint32_t vn[kTokenTiles][2];  // v_new^T as fp16 pairs: (c0, c1) and (c2, c3) of token tile nt
    // u in v_new^T's accumulator layout: ut[p][m], matrix m of token pair p, its rows tokens 16 p + 8 (m / 2) ..,
    // its columns value channels vw + 8 (m % 2) ..; .trans gives lane 4 g + tq tokens 2 tq and 2 tq + 1 of
    // channel g: (c0, c1) of token tile 2 p + m / 2 for m even, (c2, c3) odd.
    std::uint32_t ut[kTokenSteps][4];
#pragma unroll
    for (int tp = 0; tp < kTokenSteps; ++tp)
      ldmatrix_x4_trans(ut[tp], u + (16 * tp + lane / 16 * 8 + lane % 8) * L::ULD + vw + lane / 8 % 2 * 8);
    // v_new^T = u^T - S^T w^T and o^T = S^T qg^T.
    float acc[kTokenTiles][4], o[kTokenTiles][4];
    wgmma_zero(acc), wgmma_zero(o);
    wgmma_fence();
#pragma unroll
    for (int step = 0; step < kSteps; ++step) wgmma_m64n64k16<0>(acc, sa[step], rows_b(w, 0, 2 * step));
    wgmma_commit();
#pragma unroll
    for (int step = 0; step < kSteps; ++step) wgmma_m64n64k16<0>(o, sa[step], rows_b(qg, 0, 2 * step));
    wgmma_commit();
    wgmma_wait<1>();  // v_new^T's products (o^T's may still run)
#pragma unroll
    for (int nt = 0; nt < kTokenTiles; ++nt)
#pragma unroll
      for (int x = 0; x < 2; ++x) {
        const __half2 pair = *reinterpret_cast<const __half2*>(&ut[nt / 2][2 * (nt % 2) + x]);
        vn[nt][x] =
            f16_pair(math::sub(__low2float(pair), acc[nt][2 * x]), math::sub(__high2float(pair), acc[nt][2 * x + 1]));
      }
    // S^T = exp(Γlast) S^T + v_new^T kg (n = every key channel).
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      const float2 d = *reinterpret_cast<const float2*>(&decay[key_of(nt, 0)]);
      S[nt][0] = math::mul(d.x, S[nt][0]), S[nt][1] = math::mul(d.y, S[nt][1]);
      S[nt][2] = math::mul(d.x, S[nt][2]), S[nt][3] = math::mul(d.y, S[nt][3]);
    }
    wgmma_fence();
    // o^T += v_new^T Aqk^T.
#pragma unroll
    for (int js = 0; js < kTokenSteps; ++js) {
      const std::uint32_t a[4] = {vn[2 * js][0], vn[2 * js][1], vn[2 * js + 1][0], vn[2 * js + 1][1]};
      wgmma_m64n64k16<0>(o, a, rows_b(aqk, 0, 2 * js));
    }
    wgmma_commit();
#pragma unroll
    for (int js = 0; js < kTokenSteps; ++js) {
      const std::uint32_t a[4] = {vn[2 * js][0], vn[2 * js][1], vn[2 * js + 1][0], vn[2 * js + 1][1]};
      if constexpr (K == 128)
        wgmma_m64n128k16<1>(S, a, keys_b(kg, 2 * js));
      else
        wgmma_m64n64k16<1>(S, a, keys_b(kg, 2 * js));
    }
    wgmma_commit();
    wgmma_wait<1>();  // o^T complete (the update may still run)
    if constexpr (kO == OStore::any) {
#pragma unroll
      for (int nt = 0; nt < kTokenTiles; ++nt)
#pragma unroll
        for (int x = 0; x < 4; ++x) {
          const int i = 8 * nt + 2 * tq + (x & 1);
          if (i < e.length)
            access::store(p.o, e.row * p.o.stride[0] + (e.first + i) * p.o.stride[1] + hv * p.o.stride[2] +
                                   value_of(x) * p.o.stride[3], o[nt][x]);
        }
    } else {
      // Transposed, lane 4 g + tq holds token 8 nt + g, channels vw + 2 tq, + 1 (and + 8).
      auto* at = reinterpret_cast<std::uint32_t*>(p.o.data) +
                 (e.row * p.o.stride[0] + (e.first + g) * p.o.stride[1] + hv * p.o.stride[2] + v0 + vw + 2 * tq) / 2;
      const std::int64_t token_words = 8 * p.o.stride[1] / 2;
#pragma unroll
      for (int nt = 0; nt < kTokenTiles; ++nt) {
        const std::uint32_t lo = transposed_pair(access::half_pair(kO == OStore::bf16_pairs, o[nt][0], o[nt][1]));
        const std::uint32_t hi = transposed_pair(access::half_pair(kO == OStore::bf16_pairs, o[nt][2], o[nt][3]));
        if (8 * nt + g < e.length) at[nt * token_words] = lo, at[nt * token_words + 4] = hi;
      }
    }
    wgmma_wait_all();  // here, not at the next chunk's start: a batch open across the loop's back edge made
                       // ptxas serialize every wgmma (C7515)
  }

  if (hs.out)
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int x = 0; x < 4; ++x)
        access::store(p.state_out, access::state_offset(p.state_out, value_of(x), key_of(nt, x)), S[nt][x], hs.out);
}

// Grid size checks and the opt-in above 48 KiB of dynamic shared memory (cheap: done on every launch).
template <class Kernel>
cudaError_t prepare_launch(Kernel kernel, std::int64_t blocks, std::size_t shared) {
  if (blocks > INT_MAX) return cudaErrorInvalidConfiguration;
  return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared));
}

// The current device's SM count: the prepare kernel's grid (a block per SM) and stage B's choice of form.
cudaError_t sm_count(int& sms) {
  int device = 0;
  if (const cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
  return cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
}

template <int K>
cudaError_t launch_gates(const ChunkedParams& params, cudaStream_t stream) {
  const std::int64_t blocks = params.num_chunks * params.call.HV;
  if (blocks == 0) return cudaSuccess;
  if (const cudaError_t e = prepare_launch(gate_kernel<K>, blocks, 0); e != cudaSuccess) return e;
  gate_kernel<K><<<static_cast<unsigned>(blocks), kGateThreads, 0, stream>>>(params);
  return cudaGetLastError();
}

template <int K>
cudaError_t launch_prepare(const ChunkedParams& params, cudaStream_t stream) {
  const std::int64_t slots = params.num_chunks * params.call.HV;
  if (slots == 0) return cudaSuccess;
  if (const cudaError_t e = launch_gates<K>(params, stream); e != cudaSuccess) return e;
  int sms = 0;
  if (const cudaError_t e = sm_count(sms); e != cudaSuccess) return e;
  const std::int64_t blocks = slots < sms ? slots : sms;  // one block per SM, slot after slot
  if (const cudaError_t e = prepare_launch(prepare_kernel<K>, blocks, PrepareLayout<K>::bytes); e != cudaSuccess)
    return e;
  prepare_kernel<K><<<static_cast<unsigned>(blocks), kPrepareThreads, PrepareLayout<K>::bytes, stream>>>(params);
  return cudaGetLastError();
}

// Pair stores when every pair stage B stores is one aligned 4-byte word: o in bf16 or fp16 with unit
// channel stride, an aligned base and even strides (a pair starts at an even channel).
OStore o_store_of(const TensorRef& o) {
  const bool half = o.dtype == DType::bf16 || o.dtype == DType::f16;
  const bool aligned = reinterpret_cast<std::uintptr_t>(o.data) % 4 == 0 && o.stride[0] % 2 == 0 &&
                       o.stride[1] % 2 == 0 && o.stride[2] % 2 == 0;
  if (!half || o.stride[3] != 1 || !aligned) return OStore::any;
  return o.dtype == DType::bf16 ? OStore::bf16_pairs : OStore::f16_pairs;
}

template <int K>
cudaError_t launch_scan(const ChunkedParams& params, cudaStream_t stream) {
  const std::int64_t value_tiles = params.call.V / kValueTile, heads = params.call.N * params.call.HV;
  if (heads == 0) return cudaSuccess;
  ScanForm form = ScanForm::automatic;
  if (const cudaError_t e = chunked_scan_form(params, form); e != cudaSuccess) return e;
  if (form == ScanForm::paired && value_tiles % 2 != 0) return cudaErrorInvalidValue;  // V of 64 or 128 only
  const auto launch = [&](auto form_constant, auto o_constant) {
    constexpr ScanForm kForm = decltype(form_constant)::value;
    constexpr OStore kO = decltype(o_constant)::value;
    using Shape = ScanShape<kForm>;
    const int tiles = static_cast<int>(value_tiles / Shape::tiles);
    const std::int64_t blocks = heads * tiles;
    const auto kernel = [] {
      if constexpr (kForm == ScanForm::transposed) return scan_transposed_kernel<K, kO>;
      else return scan_kernel<K, kForm, kO>;
    }();
    constexpr std::size_t bytes = ScanLayout<K, kForm>::bytes;
    if (const cudaError_t e = prepare_launch(kernel, blocks, bytes); e != cudaSuccess) return e;
    kernel<<<static_cast<unsigned>(blocks), Shape::threads, bytes, stream>>>(params, tiles);
    return cudaGetLastError();
  };
  const auto with_o = [&](auto form_constant) {
    switch (o_store_of(params.call.o)) {
      case OStore::bf16_pairs:
        return launch(form_constant, std::integral_constant<OStore, OStore::bf16_pairs>{});
      case OStore::f16_pairs:
        return launch(form_constant, std::integral_constant<OStore, OStore::f16_pairs>{});
      default:
        return launch(form_constant, std::integral_constant<OStore, OStore::any>{});
    }
  };
  switch (form) {
    case ScanForm::single_buffered:
      return with_o(std::integral_constant<ScanForm, ScanForm::single_buffered>{});
    case ScanForm::paired:
      return with_o(std::integral_constant<ScanForm, ScanForm::paired>{});
    case ScanForm::wide:
      return with_o(std::integral_constant<ScanForm, ScanForm::wide>{});
    case ScanForm::transposed:
      return with_o(std::integral_constant<ScanForm, ScanForm::transposed>{});
    default:
      return with_o(std::integral_constant<ScanForm, ScanForm::double_buffered>{});
  }
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

// What the kernels' thread mappings assume (admit_chunked guarantees it; checked again before a launch):
// K of 64 or 128, V a multiple of the value tile, two stage-A threads per column of [v | k].
bool launchable(const ChunkedParams& params) {
  const std::int64_t K = params.call.K, V = params.call.V;
  return (K == 64 || K == 128) && V > 0 && V % kValueTile == 0 && V <= kMaxValue;
}

}  // namespace

cudaError_t launch_chunked_gates(const ChunkedParams& params, cudaStream_t stream) {
  if (!launchable(params)) return cudaErrorInvalidValue;
  return params.call.K == 64 ? launch_gates<64>(params, stream) : launch_gates<128>(params, stream);
}

cudaError_t launch_chunked_prepare(const ChunkedParams& params, cudaStream_t stream) {
  if (!launchable(params)) return cudaErrorInvalidValue;
  return params.call.K == 64 ? launch_prepare<64>(params, stream) : launch_prepare<128>(params, stream);
}

cudaError_t chunked_scan_form(const ChunkedParams& params, ScanForm& form) {
  const std::int64_t value_tiles = params.call.V / kValueTile;
  form = params.scan_form;
  if (form == ScanForm::automatic) {
    int sms = 0;
    if (const cudaError_t e = sm_count(sms); e != cudaSuccess) return e;
    form = estimated_scan_form(params, sms);
  }
  // The wide and transposed forms' 128 channels need V = 128: at V = 64 they are the paired form.
  if ((form == ScanForm::wide || form == ScanForm::transposed) && value_tiles % 4 != 0) form = ScanForm::paired;
  return cudaSuccess;
}

cudaError_t launch_chunked_scan(const ChunkedParams& params, cudaStream_t stream) {
  if (!launchable(params)) return cudaErrorInvalidValue;
  return params.call.K == 64 ? launch_scan<64>(params, stream) : launch_scan<128>(params, stream);
}

cudaError_t launch_chunked_prefill(const ChunkedParams& params, cudaStream_t stream) {
  if (const cudaError_t e = launch_chunked_prepare(params, stream); e != cudaSuccess) return e;
  return launch_chunked_scan(params, stream);
}

ChunkedDeviceCall::ChunkedDeviceCall(const Problem& problem, const PayloadAddress& device_payload) {
  const ChunkTable table = make_chunk_table(problem);
  const auto chunks = static_cast<std::int64_t>(table.chunks.size());
  const std::size_t entries = sizeof(ChunkEntry) * table.chunks.size();
  const std::size_t sequences = sizeof(std::int64_t) * table.sequence_chunks.size();
  const std::size_t order = sizeof(std::int64_t) * table.longest_first.size();
  try {
    check(cudaMalloc(&table_, entries + sequences + order), "cudaMalloc (chunk table)");
    check(cudaMalloc(&workspace_, chunked_workspace_bytes(chunks, problem.HV, problem.K, problem.V) + 256),
          "cudaMalloc (workspace)");
    auto* device_entries = static_cast<ChunkEntry*>(table_);
    auto* device_sequences = reinterpret_cast<std::int64_t*>(static_cast<std::byte*>(table_) + entries);
    check(cudaMemcpy(device_entries, table.chunks.data(), entries, cudaMemcpyHostToDevice), "cudaMemcpy (chunks)");
    std::int64_t* device_order = device_sequences + table.sequence_chunks.size();
    check(cudaMemcpy(device_sequences, table.sequence_chunks.data(), sequences, cudaMemcpyHostToDevice),
          "cudaMemcpy (sequences)");
    check(cudaMemcpy(device_order, table.longest_first.data(), order, cudaMemcpyHostToDevice), "cudaMemcpy (order)");
    params_ = make_chunked_params(problem, device_payload, table, {device_entries, device_sequences, device_order},
                                  static_cast<std::byte*>(workspace_));
  } catch (...) {
    cudaFree(table_), cudaFree(workspace_);
    throw;
  }
}

ChunkedDeviceCall::~ChunkedDeviceCall() { cudaFree(table_), cudaFree(workspace_); }

}  // namespace kda::kernels
