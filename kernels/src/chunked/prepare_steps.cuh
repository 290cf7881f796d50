// Stage A, second kernel, the prepare kernel: one block of 512 threads per SM, taking the slots (chunk
// c, value head hv), slot = c * HV + hv, blockIdx.x, blockIdx.x + gridDim.x, ... The loaders, the
// threads from kSolveThreads on, issue the next slot's input loads (q and k into registers, alpha by
// cp.async into its tile) while the other threads invert the current slot's (I + Akk) and multiply, so
// that a slot's inputs are waiting when it starts.
// This file: its shared-memory layout and the steps it is built from; the kernel is prepare_kernel.cuh.
#pragma once

#include "device_ops.cuh"

// Private to chunked_prefill.cu, its one includer: the kernels keep internal linkage.
namespace kda::kernels {
namespace {

// Akk and Aqk share one [64][kAld] tile, the triangles: Akk[i][j] (j < i) at row i, column j, and Aqk
// transposed, Aqk[i][j] (j <= i) at row j, column i. Every entry of both is computed for every slot, so the
// tile needs no clearing; the inverse reads only Akk's (strictly lower) entries. Akk's place is
// stage_a::akk_at (the simulation's too), Aqk's:
__device__ __forceinline__ int aqk_at(int i, int j) { return j * kAld + i; }

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
// register while it is in flight: loaded into registers across the off-diagonal phase, two of them are
// spilled, and the spill's store waits for its load. For 16-bit v whose rows are contiguous and 16-byte
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
// rather than nine, each accumulator's k-steps in the same order, so the same bits.
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
// of its row, so that no phase of its own reads the tiles back.
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

}  // namespace
}  // namespace kda::kernels
