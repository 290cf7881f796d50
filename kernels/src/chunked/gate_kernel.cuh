// Stage A, first kernel, the gates: one block of 256 threads per (chunk c, value head hv), blockIdx.x =
// c * HV + hv, writing alpha = exp(g) of every (token, key channel) to the workspace
// (stage_a::gate_alpha). A thread keeps one key channel d (two where g allows: gate_pairs) and takes tokens
// tid / K + (256 / K) n in groups of four, the next group's loads in flight while a group is computed (eight tokens a thread with
// all loads up front, in blocks of 1024, measured slower: 0.170 against 0.158 ms at 1 x 8192). A kernel
// of its own: the gate's polynomials were a fifth of the prepare kernel's instructions, issued there at
// one block per SM; here, with a few dozen registers and no shared memory, at full occupancy.
#pragma once

#include "device_ops.cuh"

// Private to chunked_prefill.cu, its one includer: the kernels keep internal linkage.
namespace kda::kernels {
namespace {

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
  // Zeroed once: a full chunk's last pass copies next without loading it (unused, but undefined if never set).
  std::uint32_t next[kGroup] = {};
#pragma unroll kUnroll
  for (int i0 = first; i0 < kChunk; i0 += kStep * kGroup) {
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
  const std::int64_t slot = blockIdx.x;
  const SlotIndex at = slot_index(P, slot);
  const std::int64_t hv = at.hv;
  const ChunkEntry e = P.chunks[at.chunk];
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

}  // namespace
}  // namespace kda::kernels
