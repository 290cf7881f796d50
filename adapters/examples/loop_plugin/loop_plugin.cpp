// An example kernel plugin: KDA written as plain loops straight from kda-facts §1, behind the C ABI of
// kda_plugin.h. Token by token in fp32, every tensor read and written through its strides, so it takes
// any strided input, both state layouts, dense states and pools with -1 padding rows, the gate, the
// l2norm and beta from logits in kernel, chunk and token states, and both forms of a speculative
// verify (an index table with accepted counts; a read-only pool with a scratch buffer). It checks no
// contract itself (kda-oracle checks the declared "strict" profile before calling it).
//
// Built with KDA_LOOP_PLUGIN_TRANSPOSED_STATE it has the bug that passes every shape check when K = V:
// every state is indexed as a compact [V,K] head, whatever the call's layout. kda-oracle's tests
// expect that variant to fail.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kda/adapters/kda_plugin.h"

namespace {

using Index = std::int64_t;

float bits_to_float(std::uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

std::uint32_t float_to_bits(float f) {
  std::uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

// The element at `element` (an offset in elements from the tensor's data pointer), as fp32.
float load(const kda_tensor& t, Index element) {
  const char* at = static_cast<const char*>(t.data);
  switch (t.dtype) {
    case KDA_BF16: {
      std::uint16_t bits;
      std::memcpy(&bits, at + 2 * element, 2);
      return bits_to_float(std::uint32_t{bits} << 16);
    }
    case KDA_F16: {
      _Float16 h;
      std::memcpy(&h, at + 2 * element, 2);
      return static_cast<float>(h);
    }
    case KDA_F32: {
      float f;
      std::memcpy(&f, at + 4 * element, 4);
      return f;
    }
    case KDA_F64: {
      double d;
      std::memcpy(&d, at + 8 * element, 8);
      return static_cast<float>(d);
    }
    default: return NAN;
  }
}

// Element [i] or [i, j] of an integer tensor (i32 or i64).
Index load_index(const kda_tensor& t, Index i, Index j = 0) {
  const Index element = i * t.strides[0] + j * t.strides[1];
  const char* at = static_cast<const char*>(t.data) + (t.dtype == KDA_I64 ? 8 : 4) * element;
  if (t.dtype == KDA_I64) {
    std::int64_t x;
    std::memcpy(&x, at, 8);
    return x;
  }
  std::int32_t x;
  std::memcpy(&x, at, 4);
  return x;
}

// Stores x rounded to the tensor's dtype (round to nearest, ties to even).
void store(const kda_tensor& t, Index element, float x) {
  char* at = static_cast<char*>(t.data);
  switch (t.dtype) {
    case KDA_BF16: {
      const std::uint32_t bits = float_to_bits(x);
      const std::uint16_t rounded = std::isnan(x) ? static_cast<std::uint16_t>((bits >> 16) | 0x40)
                                                  : static_cast<std::uint16_t>((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16);
      std::memcpy(at + 2 * element, &rounded, 2);
      return;
    }
    case KDA_F16: {
      const _Float16 h = static_cast<_Float16>(x);
      std::memcpy(at + 2 * element, &h, 2);
      return;
    }
    case KDA_F32: std::memcpy(at + 4 * element, &x, 4); return;
    case KDA_F64: {
      const double d = x;
      std::memcpy(at + 8 * element, &d, 8);
      return;
    }
    default: return;
  }
}

// The offset of an element, or of the leading indices given (strides past the rank are 0).
Index at(const kda_tensor& t, Index i0, Index i1, Index i2 = 0, Index i3 = 0) {
  return i0 * t.strides[0] + i1 * t.strides[1] + i2 * t.strides[2] + i3 * t.strides[3];
}

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }
float softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }

// One value head's K x V state, S[d][j] = S[d * V + j], stored [V,K] or [K,V] at the last two
// dimensions of a state tensor; `lead` is the offset of its leading indices (sequence, slot or chunk,
// head; or row, token, head).
struct StateIo {
  const kda_call& call;
  Index element([[maybe_unused]] const kda_tensor& t, Index lead, Index d, Index j) const {
#ifdef KDA_LOOP_PLUGIN_TRANSPOSED_STATE
    return lead + j * call.K + d;  // the bug: a compact [V,K] head, whatever the layout
#else
    const Index rows = t.strides[t.rank - 2], columns = t.strides[t.rank - 1];
    return lead + (call.state_layout == KDA_LAYOUT_VK ? j * rows + d * columns : d * rows + j * columns);
#endif
  }
  void read(const kda_tensor& t, Index lead, std::vector<float>& S) const {
    for (Index d = 0; d < call.K; ++d)
      for (Index j = 0; j < call.V; ++j) S[d * call.V + j] = load(t, element(t, lead, d, j));
  }
  void write(const kda_tensor& t, Index lead, const std::vector<float>& S) const {
    for (Index d = 0; d < call.K; ++d)
      for (Index j = 0; j < call.V; ++j) store(t, element(t, lead, d, j), S[d * call.V + j]);
  }
};

// q or k of one token and head, l2-normalised when asked.
void load_qk(const kda_call& c, const kda_tensor& t, Index b, Index token, Index h, std::vector<float>& x) {
  float squares = 0;
  for (Index d = 0; d < c.K; ++d) {
    x[d] = load(t, at(t, b, token, h, d));
    squares += x[d] * x[d];
  }
  if (!c.l2norm_qk) return;
  const float norm = std::sqrt(squares + 1e-6f);
  for (auto& e : x) e /= norm;
}

// The log decay of one token and value head: as given, or from raw activations (kda-facts §1).
void load_gate(const kda_call& c, Index b, Index token, Index hv, std::vector<float>& g) {
  const float A = c.A_log.present ? std::exp(load(c.A_log, hv * c.A_log.strides[0])) : 1.0f;
  for (Index d = 0; d < c.K; ++d) {
    const float raw = load(c.g, at(c.g, b, token, hv, d));
    if (!c.gate_in_kernel) {
      g[d] = raw;
      continue;
    }
    const float x = raw + (c.dt_bias.present ? load(c.dt_bias, (hv * c.K + d) * c.dt_bias.strides[0]) : 0.0f);
    g[d] = c.has_lower_bound ? static_cast<float>(c.lower_bound) * sigmoid(A * x) : -A * softplus(x);
  }
}

// The pool slot sequence n starts from (-1: a padding row): the index table's entry at its accepted
// count (a verify call's table form), else its pool index.
Index initial_slot(const kda_call& c, Index n) {
  if (c.mode == KDA_MODE_VERIFY && c.num_accepted.present)
    return load_index(c.state_indices, n, load_index(c.num_accepted, n) - 1);
  return load_index(c.state_indices, n);
}

// A verify call keeps the state after token i of request n: in the pool slot the table names (table
// form) or at step i of the request's scratch row (scratch form); -1 there: nowhere.
void store_token_state(const kda_call& c, const StateIo& io, Index n, Index i, Index hv, const std::vector<float>& S) {
  if (c.num_accepted.present) {
    const Index slot = load_index(c.state_indices, n, i);
    if (slot >= 0) io.write(c.state_pool, at(c.state_pool, slot, hv), S);
  } else {
    const Index row = load_index(c.scratch_indices, n);
    if (row >= 0) io.write(c.scratch_states, at(c.scratch_states, row, i, hv), S);
  }
}

void run_sequence(const kda_call& c, Index n, Index first_chunk) {
  const Index b = c.cu_seqlens.present ? 0 : n;
  const Index first = c.cu_seqlens.present ? load_index(c.cu_seqlens, n) : 0;
  const Index length = c.cu_seqlens.present ? load_index(c.cu_seqlens, n + 1) - first : c.T;
  const bool verify = c.mode == KDA_MODE_VERIFY;
  const Index slot = c.state_pool.present ? initial_slot(c, n) : 0;
  const StateIo io{c};
  if (slot < 0) {  // a padding row: zero output, the pool left alone
    for (Index t = first; t < first + length; ++t)
      for (Index hv = 0; hv < c.HV; ++hv)
        for (Index j = 0; j < c.V; ++j) store(c.o, at(c.o, b, t, hv, j), 0.0f);
    return;
  }
  const float scale = c.has_scale ? static_cast<float>(c.scale) : 1.0f / std::sqrt(static_cast<float>(c.K));
  std::vector<float> S(static_cast<std::size_t>(c.K * c.V)), q(c.K), k(c.K), g(c.K), kS(c.V), u(c.V);
  for (Index hv = 0; hv < c.HV; ++hv) {
    const Index h = hv / (c.HV / c.H);
    if (c.state_pool.present) io.read(c.state_pool, at(c.state_pool, slot, hv), S);
    else if (c.initial_state.present) io.read(c.initial_state, at(c.initial_state, n, hv), S);
    else std::fill(S.begin(), S.end(), 0.0f);

    for (Index i = 0; i < length; ++i) {
      const Index t = first + i;
      if (c.chunk_states.present && i % c.chunk_size == 0)
        io.write(c.chunk_states, at(c.chunk_states, first_chunk + i / c.chunk_size, hv), S);
      load_qk(c, c.q, b, t, h, q);
      load_qk(c, c.k, b, t, h, k);
      for (auto& e : q) e *= scale;
      load_gate(c, b, t, hv, g);
      float beta = load(c.beta, at(c.beta, b, t, hv));
      if (c.beta_from_logits) beta = (c.allow_neg_eigval ? 2.0f : 1.0f) * sigmoid(beta);

      // 1. decay, and S^T k from the decayed state
      std::fill(kS.begin(), kS.end(), 0.0f);
      for (Index d = 0; d < c.K; ++d) {
        const float alpha = std::exp(g[d]);
        for (Index j = 0; j < c.V; ++j) {
          S[d * c.V + j] *= alpha;
          kS[j] += k[d] * S[d * c.V + j];
        }
      }
      // 2. delta update
      for (Index j = 0; j < c.V; ++j) u[j] = beta * (load(c.v, at(c.v, b, t, hv, j)) - kS[j]);
      for (Index d = 0; d < c.K; ++d)
        for (Index j = 0; j < c.V; ++j) S[d * c.V + j] += k[d] * u[j];
      // 3. output from the updated state
      for (Index j = 0; j < c.V; ++j) {
        float o = 0;
        for (Index d = 0; d < c.K; ++d) o += q[d] * S[d * c.V + j];
        store(c.o, at(c.o, b, t, hv, j), o);
      }
      if (c.token_states.present) io.write(c.token_states, at(c.token_states, b, t, hv), S);
      if (verify) store_token_state(c, io, n, i, hv, S);
    }
    if (c.state_pool.present && !verify) io.write(c.state_pool, at(c.state_pool, slot, hv), S);
    if (c.final_state.present) io.write(c.final_state, at(c.final_state, n, hv), S);
  }
}

int run(const kda_call* call, char* message, size_t message_size) {
  if (call->abi_version != KDA_PLUGIN_ABI_VERSION || call->memory != KDA_MEMORY_HOST) {
    std::strncpy(message, "loop plugin: unsupported caller (ABI version or device memory)", message_size - 1);
    return KDA_STATUS_FAILED;
  }
  for (Index n = 0, first_chunk = 0; n < call->N; ++n) {
    run_sequence(*call, n, first_chunk);
    const Index length = call->cu_seqlens.present
                             ? load_index(call->cu_seqlens, n + 1) - load_index(call->cu_seqlens, n)
                             : call->T;
    first_chunk += (length + call->chunk_size - 1) / call->chunk_size;
  }
  return KDA_STATUS_OK;
}

const int kChunkSizes[] = {32, 64};

const kda_plugin kDescriptor = {
    KDA_PLUGIN_ABI_VERSION,
#ifdef KDA_LOOP_PLUGIN_TRANSPOSED_STATE
    "loop-transposed-state",
#else
    "loop",
#endif
    "strict",
    KDA_BIT(KDA_MODE_PREFILL) | KDA_BIT(KDA_MODE_DECODE) | KDA_BIT(KDA_MODE_VERIFY),
    KDA_BIT(KDA_BF16) | KDA_BIT(KDA_F16) | KDA_BIT(KDA_F32) | KDA_BIT(KDA_F64),
    KDA_BIT(KDA_BF16) | KDA_BIT(KDA_F16) | KDA_BIT(KDA_F32) | KDA_BIT(KDA_F64),
    KDA_BIT(KDA_BF16) | KDA_BIT(KDA_F32) | KDA_BIT(KDA_F64),
    KDA_BIT(KDA_LAYOUT_VK) | KDA_BIT(KDA_LAYOUT_KV),
    KDA_BIT(KDA_STATE_NONE) | KDA_BIT(KDA_STATE_DENSE) | KDA_BIT(KDA_STATE_POOL) | KDA_BIT(KDA_STATE_TABLE) |
        KDA_BIT(KDA_STATE_SCRATCH),
    nullptr,
    0,
    nullptr,
    0,
    256,
    kChunkSizes,
    2,
    KDA_CAP_VARLEN | KDA_CAP_GATE_IN_KERNEL | KDA_CAP_L2NORM_IN_KERNEL | KDA_CAP_BETA_FROM_LOGITS |
        KDA_CAP_CHUNK_STATES | KDA_CAP_TOKEN_STATES | KDA_CAP_STRIDED_INPUTS,
    KDA_MEMORY_HOST,
    run,
    KDA_ARITHMETIC_FP32,  // the loops compute in fp32
};

}  // namespace

const kda_plugin* kda_plugin_descriptor(void) { return &kDescriptor; }
