// Stage B, the forms that keep S in mma accumulators and publish it through shared memory.
#pragma once

#include "scan_layout.cuh"

// Private to chunked_prefill.cu, its one includer: the kernels keep internal linkage.
namespace kda::kernels {
namespace {

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

}  // namespace
}  // namespace kda::kernels
