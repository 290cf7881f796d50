// Stage B, the transposed form: S^T in registers as the products' A operand, B operands by wgmma.
#pragma once

#include "scan_layout.cuh"

// Private to chunked_prefill.cu, its one includer: the kernels keep internal linkage.
namespace kda::kernels {
namespace {

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

}  // namespace
}  // namespace kda::kernels
