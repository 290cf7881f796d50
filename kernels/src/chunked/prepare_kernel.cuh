// Stage A, second kernel: the prepare kernel (Akk, Aqk, the decay chains, T = (I + Akk)^-1, u and w).
#pragma once

#include "prepare_steps.cuh"

// Private to chunked_prefill.cu, its one includer: the kernels keep internal linkage.
namespace kda::kernels {
namespace {

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
    const SlotIndex at = slot_index(P, next);
    const ChunkEntry en = P.chunks[at.chunk];
    // The columns walked by pointer (an add per load, not the offset's multiplies).
    const TokenInputs columns = token_inputs(p, en, at.h, 4 * (lt % (K / 4)));
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
  // Piece lt + kLoaderThreads n of the tile (16 bytes, row-major) is row lt / (K / 4) + kLoaderStride n,
  // channels 4 (lt % (K / 4)) .. + 3: a compile-time count of copies from one base address each side (a loop
  // over the piece index had a runtime trip count, a remainder loop and two reloaded addresses).
  const auto issue_alpha = [&](std::int64_t next) {
    constexpr int kCopies = kChunk * K / 4 / kLoaderThreads;
    static_assert(kChunk * K / 4 % kLoaderThreads == 0 && kLoaderThreads % (K / 4) == 0);
    const float* from = P.work.alpha + next * kChunk * K + 4 * lt;
    float* to = t.alpha + lt / (K / 4) * LD + lt % (K / 4) * 4;
#pragma unroll
    for (int n = 0; n < kCopies; ++n) cp_async16(to + n * kLoaderStride<K> * LD, from + n * 4 * kLoaderThreads);
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
    // would book the wait for a phase's slowest warp to the next phase whenever warp 0 finishes early.)
    const auto end_phase = [&](int phase) {
      if (timed && lane == 0) atomicMax(&latest[phase], clock64());
      __syncthreads();
      if (timed && tid == 0) {
        P.prepare_phase_clocks[slot * (kPreparePhases + 1) + phase] = latest[phase];
        latest[phase] = 0;
      }
    };
    if (slot >= 0) {
      const SlotIndex at = slot_index(P, slot);
      const std::int64_t hv = at.hv;
      const ChunkEntry e = P.chunks[at.chunk];
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
        const TokenInputs columns = token_inputs(p, e, at.h, tid % K);
#pragma unroll 1
        for (int i = tid / K; i < kChunk; i += kPrepareThreads / K)
          store_token_inputs<K>(p, load_token_bits(columns, e, i), i, tid % K, t);
      }
      if (tid < kChunk) t.beta[tid] = load_beta(p, e, hv, tid);
      // The segments' alpha products (stage_a::segment_product: the decay chains' first pass, without a
      // barrier of its own) by the solve warps once alpha's copy has landed: packed, they are idle here
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
          // warps have half the products of the phase's others; in the next phase the inverses' chains would
          // be the longest.
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
          // warp's parity is spilled, and its reload here from local memory stalls every task.
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
        // fragments (4-byte pairs of 8 rows a store), they would take a fifth of the phase.
        // The warp and lane from a fresh read of the thread index: kept from the kernel's start, the
        // fragments' and staging addresses derived from them were hoisted out of the slot loop, spilled
        // and reloaded every slot.
        const int me = fresh_thread_index(), pw = me / kWarp, pl = me % kWarp;
        const int col0 = kWarp * pw, g = pl / 4, tq = pl % 4;
        if (col0 < V + K) {
          std::uint16_t* const out =
              col0 < V ? P.work.u + slot * kChunk * V + col0 : P.work.w + slot * kChunk * K + col0 - V;
          const int out_ld = col0 < V ? V : K;
          const auto* rhs_h = reinterpret_cast<const __half*>(rhs);
          const auto* t_h = reinterpret_cast<const __half*>(inverse_h);
          auto* const staged =
              reinterpret_cast<std::uint16_t*>(shared + L::staging) + pw * L::staged_blocks * kSubBlock * kStageLd;
          // All four row blocks at once, k-step outermost: each k-step's B fragments are loaded once for the
          // row blocks rb >= ks that use them (each accumulator still adds its k-steps in ascending order),
          // and the row blocks' chains run side by side.
          float acc[kSegments][2][2][4] = {};
#pragma unroll
          for (int ks = 0; ks < kSegments; ++ks) {
            std::uint32_t b[2][4];
#pragma unroll
            for (int h = 0; h < 2; ++h) b_fragments(b[h], rhs_h, kRhsLd, kSubBlock * ks, col0 + 16 * h, pl);
#pragma unroll
            for (int rb = ks; rb < kSegments; ++rb) {
              std::uint32_t a[4];
              a_fragment(a, t_h, kInverseLd, kSubBlock * rb, kSubBlock * ks, pl);
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
              const int piece = pl + kWarp * n, r = piece / 4, c = 8 * (piece % 4);
              *reinterpret_cast<uint4*>(out + (kSubBlock * rb0 + r) * out_ld + c) =
                  *reinterpret_cast<const uint4*>(staged + r * kStageLd + c);
            }
            __syncwarp();
          }
        }
      }
    }
    // Meanwhile the loaders issue the next slot's loads beside T's levels: q and k into registers, alpha into
    // its tile (free since the staging), and (the last loader warp) v's rows into L2. Their issue costs about
    // its own time wherever it is placed (docs/cuda-prefill.md, "What limits it").
    const std::int64_t next = slot + gridDim.x;
    if (packed && loader && next < slots) {
      issue_inputs(next);
    } else {
#pragma unroll
      for (int n = 0; n < kLoaderTokens<K>; ++n) q_bits[n] = k_bits[n] = make_uint2(0, 0);  // no register holds them here
    }
    if (loader && next < slots) issue_alpha(next);
    // The last warp by the kernel's warp index: a fresh read of the thread index here made every warp wait
    // for its S2R just before the slot's closing barrier.
    if (warp == kPrepareThreads / kWarp - 1 && next < slots &&
        RawValues<K>::copyable(p.v, static_cast<int>(p.V))) {
      const SlotIndex at = slot_index(P, next);
      RawValues<K>::prefetch(p.v, P.chunks[at.chunk], at.hv, lane);
    }
    end_phase(8);  // the end of the slot: its tiles are free for the next
  }
}

}  // namespace
}  // namespace kda::kernels
