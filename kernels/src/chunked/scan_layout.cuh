// Stage B: one block per (sequence n, value head hv, `columns` value channels), blockIdx.x = (n * HV +
// hv) * tiles + tile with `tiles` the head's blocks (ScanShape: 8 warps per 32 channels, 16 per 64 in the
// paired form, 16 per 128 in the wide). Warp w = 4 cg + rb owns value channels warp_columns cg .. of the
// block's: token rows 16 rb .. 16 rb + 15 of v_new and o, and key channels K / 4 rb .. of the state S
// (fp32, in its mma accumulators). Eight warps or more a block: each chunk is a chain of dependent
// products, and two warps per scheduler hide each other's latencies. Each output element's products are
// summed in the same order in every form, so the four give the same bits.
#pragma once

#include "device_ops.cuh"
#include "kda/kernels/detail/wgmma_f16.cuh"

// Private to chunked_prefill.cu, its one includer: the kernels keep internal linkage.
namespace kda::kernels {
namespace {

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
// dtype and alignment branches around each pair take a third of stage B's instructions and a fifth of
// its stall samples (Nsight Compute source counters at 1 x 8192).
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

}  // namespace
}  // namespace kda::kernels
