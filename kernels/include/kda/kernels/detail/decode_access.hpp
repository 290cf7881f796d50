#pragma once
// Element access of the decode kernel, shared by the CUDA kernel and its CPU simulation: typed loads
// widened to fp32 and stores rounded from fp32 through any strided view, and the per-sequence index
// math. All offsets are 64-bit.
#include <cstdint>

#include "kda/kernels/detail/decode_math.hpp"
#include "kda/kernels/decode_params.hpp"

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#else
#include "kda/dtype.hpp"
#endif

namespace kda::kernels::access {

template <class T>
KDA_HD T load_raw(const std::byte* p) {
#if defined(__CUDA_ARCH__)
  return *reinterpret_cast<const T*>(p);
#else
  T x;
  std::memcpy(&x, p, sizeof x);
  return x;
#endif
}
template <class T>
KDA_HD void store_raw(std::byte* p, T x) {
#if defined(__CUDA_ARCH__)
  *reinterpret_cast<T*>(p) = x;
#else
  std::memcpy(p, &x, sizeof x);
#endif
}

KDA_HD std::int64_t element_size(DType t) {
  switch (t) {
    case DType::bf16:
    case DType::f16: return 2;
    case DType::f32:
    case DType::i32: return 4;
    default: return 8;
  }
}

KDA_HD float f16_to_f32(std::uint16_t bits) {
#if defined(__CUDA_ARCH__)
  return __half2float(__ushort_as_half(bits));
#else
  return kda::f16_to_f32(bits);
#endif
}
// Both sides round to nearest even with subnormals; only NaN payloads may differ.
KDA_HD std::uint16_t f32_to_f16(float x) {
#if defined(__CUDA_ARCH__)
  return __half_as_ushort(__float2half_rn(x));
#else
  return kda::f32_to_f16(x);
#endif
}

// Element e (an offset in elements from `base`, the view's first element unless given) of a float
// tensor in any dtype, widened or rounded to fp32.
KDA_HD float load(const TensorRef& t, std::int64_t e, const std::byte* base) {
  const std::byte* p = base + e * element_size(t.dtype);
  switch (t.dtype) {
    case DType::bf16: return math::from_bf16_bits(load_raw<std::uint16_t>(p));
    case DType::f16: return f16_to_f32(load_raw<std::uint16_t>(p));
    case DType::f64: return static_cast<float>(load_raw<double>(p));
    default: return load_raw<float>(p);
  }
}
KDA_HD float load(const TensorRef& t, std::int64_t e) { return load(t, e, t.data); }

// An activation element (bf16, f16 or f32) in two halves: load_bits issues the load, widen converts.
// Split so that all of a token's loads are in flight before the first value is used.
KDA_HD std::uint32_t load_bits(const TensorRef& t, std::int64_t e) {
  if (t.dtype == DType::f32) return load_raw<std::uint32_t>(t.data + 4 * e);
  return load_raw<std::uint16_t>(t.data + 2 * e);
}
KDA_HD float widen(DType dtype, std::uint32_t bits) {
  switch (dtype) {
    case DType::bf16: return math::from_bf16_bits(static_cast<std::uint16_t>(bits));
    case DType::f16: return f16_to_f32(static_cast<std::uint16_t>(bits));
    default: return math::bits_to_float(bits);
  }
}
// The same without branches (all three conversions, then a select), for code that widens many
// elements of one dtype in unrolled loops, where the switch costs three branches per element (the
// chunked kernel's stage A). The decode kernel keeps the switch: there the select measured slower.
KDA_HD float widen_select(DType dtype, std::uint32_t bits) {
  const float as_bf16 = math::from_bf16_bits(static_cast<std::uint16_t>(bits));
  const float as_f16 = f16_to_f32(static_cast<std::uint16_t>(bits));
  const float as_f32 = math::bits_to_float(bits);
  return dtype == DType::bf16 ? as_bf16 : dtype == DType::f16 ? as_f16 : as_f32;
}

KDA_HD void store(const TensorRef& t, std::int64_t e, float x, std::byte* base) {
  std::byte* p = base + e * element_size(t.dtype);
  switch (t.dtype) {
    case DType::bf16: store_raw(p, math::to_bf16_bits(x)); break;
    case DType::f16: store_raw(p, f32_to_f16(x)); break;
    case DType::f64: store_raw(p, static_cast<double>(x)); break;
    default: store_raw(p, x);
  }
}
KDA_HD void store(const TensorRef& t, std::int64_t e, float x) { store(t, e, x, t.data); }
// a and b as two bf16 (else fp16), rounded as store rounds, in one word: a at the lower address.
KDA_HD std::uint32_t half_pair(bool bf16, float a, float b) {
  const std::uint32_t lo = bf16 ? math::to_bf16_bits(a) : f32_to_f16(a);
  const std::uint32_t hi = bf16 ? math::to_bf16_bits(b) : f32_to_f16(b);
  return lo | hi << 16;
}
// Elements e and e + stride[3] (a channel apart) of t, rounded as store rounds: one 4-byte store when t
// is bf16 or fp16 with unit channel stride and the pair 4-byte aligned, else two stores.
KDA_HD void store_pair(const TensorRef& t, std::int64_t e, float a, float b) {
  std::byte* const first = t.data + 2 * e;
  const bool half = t.dtype == DType::bf16 || t.dtype == DType::f16;
  if (half && t.stride[3] == 1 && reinterpret_cast<std::uintptr_t>(first) % 4 == 0) {
    store_raw(first, half_pair(t.dtype == DType::bf16, a, b));
  } else {
    store(t, e, a);
    store(t, e + t.stride[3], b);
  }
}

// Entry i of a 1-D integer tensor, entry (i, j) of a 2-D one (an index table), int32 or int64.
KDA_HD std::int64_t load_integer(const TensorRef& t, std::int64_t i) {
  const std::byte* p = t.data + i * t.stride[0] * element_size(t.dtype);
  return t.dtype == DType::i64 ? load_raw<std::int64_t>(p) : load_raw<std::int32_t>(p);
}
KDA_HD std::int64_t load_integer(const TensorRef& t, std::int64_t i, std::int64_t j) {
  const std::byte* p = t.data + (i * t.stride[0] + j * t.stride[1]) * element_size(t.dtype);
  return t.dtype == DType::i64 ? load_raw<std::int64_t>(p) : load_raw<std::int32_t>(p);
}

// Sequence n covers tokens [first, first + length) of batch row `row`.
struct SequenceRange {
  std::int64_t row, first, length;
};
KDA_HD SequenceRange sequence_range(const DecodeParams& p, std::int64_t n) {
  if (!p.cu_seqlens.data) return {n, 0, p.T};
  const std::int64_t first = load_integer(p.cu_seqlens, n);
  return {0, first, load_integer(p.cu_seqlens, n + 1) - first};
}

// Where the state of sequence n, value head hv starts: the first element of its [V,K] or [K,V] block in
// state_in and state_out (rows and columns then step by stride[2] and stride[3] of those refs); nullptr
// where there is none. A pool row whose index is -1 (padding) has neither. Verify calls:
// verify_head_states.
struct HeadStates {
  std::byte* in = nullptr;
  std::byte* out = nullptr;
  bool padding = false;
};
KDA_HD std::byte* head_of(const TensorRef& t, std::int64_t lead, std::int64_t hv) {
  return t.data ? t.data + (lead * t.stride[0] + hv * t.stride[1]) * element_size(t.dtype) : nullptr;
}
KDA_HD HeadStates head_states(const DecodeParams& p, std::int64_t n, std::int64_t hv) {
  if (p.source == StateKind::pool) {
    const std::int64_t slot = load_integer(p.indices, n);
    if (slot < 0) return {nullptr, nullptr, true};
    std::byte* s = head_of(p.state_in, slot, hv);
    return {s, s, false};
  }
  return {head_of(p.state_in, n, hv), head_of(p.state_out, n, hv), false};
}

// A verify call (table or scratch): the state request n starts from, slot indices[n, accepted[n] - 1]
// (table) or indices[n] (scratch); a -1 slot makes the request a padding row. No final state: the
// state after every token is stored instead (token_state_head).
KDA_HD bool stores_token_states(const DecodeParams& p) {
  return p.source == StateKind::table || p.source == StateKind::scratch;
}
KDA_HD HeadStates verify_head_states(const DecodeParams& p, std::int64_t n, std::int64_t hv) {
  // The count was validated on the host (accepted_range): 1 <= accepted[n] <= L.
  const std::int64_t slot = p.source == StateKind::table ? load_integer(p.indices, n, load_integer(p.accepted, n) - 1)
                                                         : load_integer(p.indices, n);
  if (slot < 0) return {nullptr, nullptr, true};
  return {head_of(p.state_in, slot, hv), nullptr, false};
}

// A verify call: where the state after token t of request n goes for value head hv, pool slot
// indices[n, t] (table) or scratch_states[scratch_indices[n], t] (scratch); nullptr for a -1 entry,
// and for every other call.
KDA_HD std::byte* token_state_head(const DecodeParams& p, std::int64_t n, std::int64_t t, std::int64_t hv) {
  if (p.source == StateKind::table) {
    const std::int64_t slot = load_integer(p.indices, n, t);
    return slot < 0 ? nullptr : head_of(p.state_out, slot, hv);
  }
  if (p.source != StateKind::scratch) return nullptr;
  const std::int64_t row = load_integer(p.scratch_indices, n);
  return row < 0 ? nullptr : head_of(p.state_out, row, hv) + t * p.scratch_step_stride * element_size(p.state_out.dtype);
}

// Element (v, k) of a head's state: t gives the dtype and strides, head the block's first element.
KDA_HD std::int64_t state_offset(const TensorRef& t, std::int64_t v, std::int64_t k) {
  return v * t.stride[2] + k * t.stride[3];
}

}  // namespace kda::kernels::access
