#pragma once
// Where a warp keeps its rows of the state from the first token to the last. A lane holds STEPS rows x
// E = 4J key channels (its chunks of 4 consecutive channels, decode_params.hpp's WarpSplit); rows go
// through registers one at a time as get(s) / put(s).
//
//   StagedState     fp32 rows, contiguous in k and 16-byte aligned: each lane copies its chunks into
//                   its own shared-memory slots with cp.async, so no register waits on a row in flight
//                   and a warp can keep many rows in flight (the decode fast path).
//   RegisterState   anything else: bf16 rows 8 bytes at a time, or element by element through any
//                   strides; the rows live in registers.
// Rows at v >= V and channels >= K read as 0 and are never written.
#include <type_traits>

#include "kda/kernels/detail/decode_access.hpp"

namespace kda::kernels {

struct Bf16Rows {};    // bf16, contiguous in k, 8-byte aligned chunks
struct AnyStrides {};  // any dtype, any strides

template <int L, int J, int STEPS>
class StagedState {
 public:
  static constexpr int E = 4 * J;
  static constexpr std::size_t kSharedBytesPerWarp = STEPS * J * 32 * sizeof(float4);
  // 8-warp blocks 3 to an SM, so at most 85 registers a thread: 4-warp blocks then fit 6 to an SM, as
  // many as the shared memory of 16 steps allows (6 x (32 + 1.5 + 1) KiB at K = 128).
  static constexpr int kMinBlocksPerSm = 3;

  // slots: this warp's kSharedBytesPerWarp bytes of shared memory.
  __device__ StagedState(float4* slots, int lane) : slots_(slots), lane_(lane) {}

  __device__ void load(const TensorRef& t, const std::byte* head, std::int64_t V, std::int64_t K, std::int64_t row0,
                       std::int64_t key0) {
#pragma unroll
    for (int s = 0; s < STEPS; ++s)
#pragma unroll
      for (int j = 0; j < J; ++j) {
        const std::int64_t v = row0 + s * (32 / L), k0 = key0 + j * 4 * L;
        float4* slot = slot_of(s, j);
        if (head && v < V && k0 < K) {
          const std::byte* src = head + 4 * access::state_offset(t, v, k0);
          asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(shared_address(slot)), "l"(src) : "memory");
        } else {
          *slot = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        }
      }
  }
  // Every row this lane copied has landed (each lane reads only its own slots: no barrier needed).
  __device__ void wait() const { asm volatile("cp.async.wait_all;\n" ::: "memory"); }

  __device__ void get(int s, float (&x)[E]) const {
#pragma unroll
    for (int j = 0; j < J; ++j) {
      const float4 f = *slot_of(s, j);
      x[4 * j] = f.x, x[4 * j + 1] = f.y, x[4 * j + 2] = f.z, x[4 * j + 3] = f.w;
    }
  }
  __device__ void put(int s, const float (&x)[E]) {
#pragma unroll
    for (int j = 0; j < J; ++j) *slot_of(s, j) = make_float4(x[4 * j], x[4 * j + 1], x[4 * j + 2], x[4 * j + 3]);
  }

  // Waits first: with a sequence of no tokens, nothing has waited for the rows yet.
  __device__ void store(const TensorRef& t, std::byte* head, std::int64_t V, std::int64_t K, std::int64_t row0,
                        std::int64_t key0) {
    wait();
#pragma unroll
    for (int s = 0; s < STEPS; ++s)
#pragma unroll
      for (int j = 0; j < J; ++j) {
        const std::int64_t v = row0 + s * (32 / L), k0 = key0 + j * 4 * L;
        if (v < V && k0 < K) __stcs(reinterpret_cast<float4*>(head + 4 * access::state_offset(t, v, k0)), *slot_of(s, j));
      }
  }

 private:
  // Lane-interleaved: a warp's get(s) reads 32 consecutive 16-byte slots, free of bank conflicts.
  __device__ float4* slot_of(int s, int j) const { return slots_ + (s * J + j) * 32 + lane_; }
  static __device__ unsigned shared_address(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }

  float4* slots_;
  int lane_;
};

template <int L, int J, int STEPS, class Rows>
class RegisterState {
 public:
  static constexpr int E = 4 * J;
  static constexpr std::size_t kSharedBytesPerWarp = 0;
  static constexpr int kMinBlocksPerSm = 1;  // the rows need the registers

  __device__ RegisterState(float4*, int) {}

  __device__ void load(const TensorRef& t, const std::byte* head, std::int64_t V, std::int64_t K, std::int64_t row0,
                       std::int64_t key0) {
#pragma unroll
    for (int s = 0; s < STEPS; ++s)
#pragma unroll
      for (int j = 0; j < J; ++j) {
        const std::int64_t v = row0 + s * (32 / L);
        load_chunk(t, head && v < V ? head : nullptr, v, key0 + j * 4 * L, K, &S_[s][4 * j]);
      }
  }
  __device__ void wait() const {}
  __device__ void get(int s, float (&x)[E]) const {
#pragma unroll
    for (int e = 0; e < E; ++e) x[e] = S_[s][e];
  }
  __device__ void put(int s, const float (&x)[E]) {
#pragma unroll
    for (int e = 0; e < E; ++e) S_[s][e] = x[e];
  }
  __device__ void store(const TensorRef& t, std::byte* head, std::int64_t V, std::int64_t K, std::int64_t row0,
                        std::int64_t key0) const {
#pragma unroll
    for (int s = 0; s < STEPS; ++s)
#pragma unroll
      for (int j = 0; j < J; ++j) {
        const std::int64_t v = row0 + s * (32 / L);
        if (v < V) store_chunk(t, head, v, key0 + j * 4 * L, K, &S_[s][4 * j]);
      }
  }

 private:
  // Key channels [k0, k0 + 4) of row v into x; from no head (absent state, row >= V) all 0.
  static __device__ void load_chunk(const TensorRef& t, const std::byte* head, std::int64_t v, std::int64_t k0,
                                    std::int64_t K, float* x) {
    const std::int64_t at = access::state_offset(t, v, k0);
    if constexpr (std::is_same_v<Rows, Bf16Rows>) {
      if (head && k0 < K) {
        const uint2 u = __ldcs(reinterpret_cast<const uint2*>(head + 2 * at));
        x[0] = math::from_bf16_bits(static_cast<std::uint16_t>(u.x & 0xffffu));
        x[1] = math::from_bf16_bits(static_cast<std::uint16_t>(u.x >> 16));
        x[2] = math::from_bf16_bits(static_cast<std::uint16_t>(u.y & 0xffffu));
        x[3] = math::from_bf16_bits(static_cast<std::uint16_t>(u.y >> 16));
        return;
      }
      x[0] = x[1] = x[2] = x[3] = 0.0f;
    } else {
#pragma unroll
      for (int c = 0; c < 4; ++c) x[c] = head && k0 + c < K ? access::load(t, at + c * t.stride[3], head) : 0.0f;
    }
  }

  static __device__ void store_chunk(const TensorRef& t, std::byte* head, std::int64_t v, std::int64_t k0,
                                     std::int64_t K, const float* x) {
    const std::int64_t at = access::state_offset(t, v, k0);
    if constexpr (std::is_same_v<Rows, Bf16Rows>) {
      if (k0 >= K) return;
      const auto pack = [](float lo, float hi) {
        return static_cast<unsigned>(math::to_bf16_bits(lo)) | static_cast<unsigned>(math::to_bf16_bits(hi)) << 16;
      };
      __stcs(reinterpret_cast<uint2*>(head + 2 * at), make_uint2(pack(x[0], x[1]), pack(x[2], x[3])));
    } else {
#pragma unroll
      for (int c = 0; c < 4; ++c)
        if (k0 + c < K) access::store(t, at + c * t.stride[3], x[c], head);
    }
  }

  float S_[STEPS][E];
};

}  // namespace kda::kernels
