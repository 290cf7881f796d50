#include "plugin_call.hpp"

#include <stdexcept>
#include <string>

namespace kda::adapters {

namespace {

// kda_dtype codes are kda::DType's values: a tensor's dtype is passed through as is.
static_assert(KDA_BF16 == static_cast<int>(DType::bf16) && KDA_F16 == static_cast<int>(DType::f16) &&
              KDA_F32 == static_cast<int>(DType::f32) && KDA_F64 == static_cast<int>(DType::f64) &&
              KDA_I32 == static_cast<int>(DType::i32) && KDA_I64 == static_cast<int>(DType::i64));

kda_tensor describe(Tensor& t, const DeviceStaging* device) {
  kda_tensor out{};
  const View& v = t.view;
  if (v.rank() > KDA_MAX_RANK)
    throw std::invalid_argument("tensor '" + t.name() + "' has rank " + std::to_string(v.rank()) +
                                ", more than the C ABI's KDA_MAX_RANK " + std::to_string(KDA_MAX_RANK));
  out.present = 1;
  out.dtype = static_cast<int>(v.dtype);
  out.rank = v.rank();
  out.data = device ? device->device_data(t) : t.buffer->data() + v.byte_offset();
  for (int d = 0; d < v.rank(); ++d) {
    out.shape[d] = v.size(d);
    out.strides[d] = v.stride(d);
  }
  return out;
}

kda_tensor describe(std::optional<Tensor>& t, const DeviceStaging* device) {
  return t ? describe(*t, device) : kda_tensor{};
}

}  // namespace

kda_call make_call(Problem& p, std::uint32_t abi_version, const DeviceStaging* device) {
  kda_call c{};
  c.abi_version = abi_version;
  c.mode = p.mode == Mode::prefill ? KDA_MODE_PREFILL : p.mode == Mode::decode ? KDA_MODE_DECODE : KDA_MODE_VERIFY;
  c.B = p.B, c.T = p.T, c.N = p.N, c.H = p.H, c.HV = p.HV, c.K = p.K, c.V = p.V;

  const Options& op = p.options;
  c.l2norm_qk = op.l2norm_qk;
  c.has_scale = op.scale.has_value();
  c.scale = op.scale.value_or(0.0);
  c.beta_from_logits = op.beta_from_logits;
  c.allow_neg_eigval = op.allow_neg_eigval;
  c.gate_in_kernel = op.gate_in_kernel;
  c.has_lower_bound = op.lower_bound.has_value();
  c.lower_bound = op.lower_bound.value_or(0.0);
  c.safe_gate = op.safe_gate;
  c.chunk_size = op.chunk_size;
  c.state_layout = op.state_layout == StateLayout::vk ? KDA_LAYOUT_VK : KDA_LAYOUT_KV;

  const auto tensor = [device](auto& t) { return describe(t, device); };
  c.cu_seqlens = tensor(p.cu_seqlens);
  c.q = tensor(p.q), c.k = tensor(p.k), c.v = tensor(p.v), c.g = tensor(p.g), c.beta = tensor(p.beta);
  c.A_log = tensor(p.A_log), c.dt_bias = tensor(p.dt_bias);
  c.initial_state = tensor(p.initial_state);
  c.state_pool = tensor(p.state_pool), c.state_indices = tensor(p.state_indices);
  c.o = tensor(p.o), c.final_state = tensor(p.final_state);
  c.chunk_states = tensor(p.chunk_states), c.token_states = tensor(p.token_states);

  c.memory = device ? KDA_MEMORY_CUDA : KDA_MEMORY_HOST;
  c.device = device ? device->memory().device() : 0;
  c.stream = device ? device->memory().stream() : nullptr;
  if (abi_version < 2) return c;

  c.L = p.L;
  c.num_accepted = tensor(p.num_accepted);
  c.scratch_indices = tensor(p.scratch_indices), c.scratch_states = tensor(p.scratch_states);
  return c;
}

bool needs_verify_abi(const Problem& p) {
  return p.mode == Mode::verify || p.num_accepted || p.scratch_indices || p.scratch_states;
}

}  // namespace kda::adapters
