#include "kda/kernels/decode_params.hpp"

#include <algorithm>
#include <stdexcept>

namespace kda::kernels {

namespace {

TensorRef ref_of(const Tensor& t, const PayloadAddress& payload) {
  TensorRef r;
  r.data = payload(*t.buffer) + t.view.byte_offset();
  r.dtype = t.dtype();
  for (int d = 0; d < t.view.rank() && d < 4; ++d) r.stride[d] = t.view.stride(d);
  return r;
}

TensorRef ref_of(const std::optional<Tensor>& t, const PayloadAddress& payload) {
  return t ? ref_of(*t, payload) : TensorRef{};
}

}  // namespace

TensorRef state_ref(const std::optional<Tensor>& t, StateLayout layout, const PayloadAddress& payload) {
  TensorRef r = ref_of(t, payload);
  if (t && layout == StateLayout::kv) std::swap(r.stride[2], r.stride[3]);
  return r;
}

namespace {

// The scratch buffer [S, L', HV, ..] as a state tensor [S, HV, ..] and its step stride.
TensorRef scratch_ref(const Tensor& t, StateLayout layout, const PayloadAddress& payload, std::int64_t& step_stride) {
  TensorRef r;
  r.data = payload(*t.buffer) + t.view.byte_offset();
  r.dtype = t.dtype();
  const Shape& s = t.view.strides;
  r.stride[0] = s[0], r.stride[1] = s[2], r.stride[2] = s[3], r.stride[3] = s[4];
  if (layout == StateLayout::kv) std::swap(r.stride[2], r.stride[3]);
  step_stride = s[1];
  return r;
}

}  // namespace

const Capabilities& token_serial_capabilities() {
  static const Capabilities caps = [] {
    Capabilities c;
    c.input_dtypes = {DType::bf16, DType::f16, DType::f32};
    c.state_dtypes = {DType::f32, DType::bf16};
    c.max_head_dim = kMaxKeyDim;
    c.modes = {Mode::prefill, Mode::decode, Mode::verify};
    c.state_sources = {StateSource::none, StateSource::dense, StateSource::pool, StateSource::table,
                       StateSource::scratch};
    c.chunk_states = false;
    c.token_states = false;
    return c;
  }();
  return caps;
}

std::string token_serial_unsupported(const Problem& p) {
  const Capabilities& caps = token_serial_capabilities();
  if (std::string why = caps.unsupported(p); !why.empty()) return why;
  for (const Tensor* t : {&p.k, &p.v, &p.g, &p.beta})
    if (std::find(caps.input_dtypes.begin(), caps.input_dtypes.end(), t->dtype()) == caps.input_dtypes.end())
      return t->name() + " in " + std::string(name_of(t->dtype()));
  return {};
}

WarpSplit split_for(std::int64_t K, int steps) {
  if (K < 1 || K > kMaxKeyDim) throw std::invalid_argument("split_for: K = " + std::to_string(K) + " outside [1, 256]");
  if (steps != 4 && steps != 8 && steps != 16)
    throw std::invalid_argument("split_for: " + std::to_string(steps) + " row steps per warp (4, 8 or 16)");
  WarpSplit s;
  s.lanes_per_row = K <= 64 ? 16 : 32;
  s.chunks = K <= 128 ? 1 : 2;
  s.steps = steps;
  return s;
}

DecodeParams make_decode_params(const Problem& p, const PayloadAddress& payload, int steps) {
  DecodeParams d;
  d.B = p.B, d.T = p.T, d.N = p.N, d.H = p.H, d.HV = p.HV, d.K = p.K, d.V = p.V;
  d.q = ref_of(p.q, payload), d.k = ref_of(p.k, payload), d.v = ref_of(p.v, payload);
  d.g = ref_of(p.g, payload), d.beta = ref_of(p.beta, payload), d.o = ref_of(p.o, payload);
  d.A_log = ref_of(p.A_log, payload), d.dt_bias = ref_of(p.dt_bias, payload);
  d.cu_seqlens = ref_of(p.cu_seqlens, payload), d.indices = ref_of(p.state_indices, payload);
  const StateLayout layout = p.options.state_layout;
  if (p.state_pool && p.scratch_states) {
    d.source = StateKind::scratch;
    d.state_in = state_ref(p.state_pool, layout, payload);
    d.state_out = scratch_ref(*p.scratch_states, layout, payload, d.scratch_step_stride);
    d.scratch_indices = ref_of(p.scratch_indices, payload);
  } else if (p.state_pool) {
    d.source = p.num_accepted ? StateKind::table : StateKind::pool;
    d.accepted = ref_of(p.num_accepted, payload);
    d.state_in = d.state_out = state_ref(p.state_pool, layout, payload);
  } else {
    d.source = p.initial_state ? StateKind::dense : StateKind::none;
    d.state_in = state_ref(p.initial_state, layout, payload);
    d.state_out = state_ref(p.final_state, layout, payload);
  }
  const Options& o = p.options;
  d.l2norm = o.l2norm_qk;
  d.beta_sigmoid = o.beta_from_logits;
  d.beta_factor = o.allow_neg_eigval ? 2.0f : 1.0f;
  d.gate_in_kernel = o.gate_in_kernel;
  d.gate_lower_bound = o.lower_bound.has_value();
  d.lower_bound = static_cast<float>(o.lower_bound.value_or(0.0));
  d.scale = static_cast<float>(o.scale_for(p.K));
  d.split = split_for(p.K, steps);
  return d;
}

}  // namespace kda::kernels
