#pragma once
// Per-token arithmetic shared by the two decode schedules (recurrent_decode.cu, decode_pipelined.cu):
// the same functions in the same order, so both agree with the CPU simulation bit for bit.
#include "kda/kernels/detail/decode_access.hpp"

namespace kda::kernels::token {

// Sum over each group of L lanes; every lane of the group ends with the same bits.
template <int L>
__device__ __forceinline__ float butterfly_sum(float x) {
#pragma unroll
  for (int m = L / 2; m >= 1; m /= 2) x = math::add(x, __shfl_xor_sync(0xffffffffu, x, m));
  return x;
}

// The gate of one key channel: raw as given, or activated in the kernel.
__device__ __forceinline__ float gate(const DecodeParams& p, float raw, float bias, float A) {
  if (!p.gate_in_kernel) return raw;
  const float x = math::add(raw, bias);
  if (p.gate_lower_bound) return math::mul(p.lower_bound, math::sigmoid(math::mul(A, x)));
  return math::mul(-A, math::softplus(x));
}

// A = exp(A_log[hv]) for the in-kernel gate; 1 without A_log.
__device__ __forceinline__ float gate_A(const DecodeParams& p, std::int64_t hv) {
  return p.gate_in_kernel && p.A_log.data ? math::exp(access::load(p.A_log, hv * p.A_log.stride[0])) : 1.0f;
}

// x / sqrt(sum x^2 + 1e-6) over the L lanes of a row group, times `scale`: one division per lane.
template <int L, int E>
__device__ __forceinline__ void l2_normalize(float (&x)[E], float scale) {
  float sum = 0.0f;
#pragma unroll
  for (int e = 0; e < E; ++e) sum = math::fma(x[e], x[e], sum);
  sum = butterfly_sum<L>(sum);
  const float factor = math::mul(math::div(1.0f, math::sqrt(math::add(sum, 1e-6f))), scale);
#pragma unroll
  for (int e = 0; e < E; ++e) x[e] = math::mul(x[e], factor);
}

// q scaled, l2-normalised first where asked (q by `scale`, k by 1), over the L lanes of a row group.
template <int L, int E>
__device__ __forceinline__ void prepare_qk(const DecodeParams& p, float (&q)[E], float (&k)[E]) {
  if (p.l2norm) {
    l2_normalize<L>(q, p.scale), l2_normalize<L>(k, 1.0f);
  } else {
#pragma unroll
    for (int e = 0; e < E; ++e) q[e] = math::mul(q[e], p.scale);
  }
}

// One state row for one token, as in the simulation, in three steps: the decay fused with the partial
// k . x (decay_project); the row's butterfly of it (butterfly_sum), giving S^T k; the delta update fused
// with the partial q . x (update_project); then the second butterfly gives o_v. The steps are separate
// so that a warp can run the butterflies of several rows side by side.
template <int E>
__device__ __forceinline__ float decay_project(float (&x)[E], const float (&k)[E], const float (&alpha)[E]) {
  float kS = 0.0f;
#pragma unroll
  for (int e = 0; e < E; ++e) {
    x[e] = math::mul(alpha[e], x[e]);
    kS = math::fma(k[e], x[e], kS);
  }
  return kS;
}
// x += k u with u = beta (v - S^T k); returns the partial q . x.
template <int E>
__device__ __forceinline__ float update_project(float (&x)[E], const float (&q)[E], const float (&k)[E], float beta,
                                                float v, float kS) {
  const float u = math::mul(beta, math::sub(v, kS));
  float o = 0.0f;
#pragma unroll
  for (int e = 0; e < E; ++e) {
    x[e] = math::fma(k[e], u, x[e]);
    o = math::fma(q[e], x[e], o);
  }
  return o;
}

// The same sums as butterfly_sum<32> of each of R rows' values (R = 2, 4, 8...), with fewer shuffles
// (9 instead of 40 for R = 8): the first log2(R) levels halve the rows a lane carries (at level m a lane
// keeps the half of its rows picked by its bit m and sends the other half to lane ^ m), the remaining
// levels are a plain butterfly. Each level adds the same two lanes' partial sums as butterfly_sum does,
// so the result has the same bits. Returns the sum of row lane / (32 / R), which lanes
// [r * 32 / R, (r + 1) * 32 / R) hold.
template <int R>
__device__ __forceinline__ float scattered_row_sums(const float (&x)[R]) {
  static_assert(R >= 2 && R <= 32 && (R & (R - 1)) == 0);
  const unsigned lane = threadIdx.x % 32;
  float v[R];
#pragma unroll
  for (int j = 0; j < R; ++j) v[j] = x[j];
#pragma unroll
  for (int half = R / 2, m = 16; half >= 1; half /= 2, m /= 2) {
    const bool hi = lane & m;
#pragma unroll
    for (int j = 0; j < half; ++j)
      v[j] = math::add(hi ? v[j + half] : v[j], __shfl_xor_sync(0xffffffffu, hi ? v[j] : v[j + half], m));
  }
#pragma unroll
  for (int m = 16 / R; m >= 1; m /= 2) v[0] = math::add(v[0], __shfl_xor_sync(0xffffffffu, v[0], m));
  return v[0];
}

}  // namespace kda::kernels::token
