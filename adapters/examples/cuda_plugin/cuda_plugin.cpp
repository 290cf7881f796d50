// An example plugin wrapping our CUDA token-serial kernel (kernels/, docs/cuda-decode.md) behind the C
// ABI of kda_plugin.h: `kda-oracle check --kernel plugin:cuda_plugin.so` runs the property catalogue
// against the GPU through the same door any third-party kernel uses. It declares KDA_MEMORY_CUDA:
// kda-oracle stages every buffer on the device between guard bands and passes device pointers, which
// become the kernel's DecodeParams (each tensor: device address, dtype, strides), launched on the
// call's stream. kda-oracle checks the strict profile before calling and synchronises after.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <utility>

#include "kda/adapters/kda_plugin.h"
#include "kda/kernels/recurrent_decode.hpp"

namespace kda::cuda_plugin {

namespace {

using kernels::DecodeParams;
using kernels::StateKind;
using kernels::TensorRef;

TensorRef ref_of(const kda_tensor& t) {
  TensorRef r;
  if (!t.present) return r;
  r.data = static_cast<std::byte*>(t.data);
  r.dtype = static_cast<DType>(t.dtype);  // kda_dtype and kda::DType share their values
  for (int d = 0; d < t.rank && d < 4; ++d) r.stride[d] = t.strides[d];
  return r;
}

// A state tensor with its last two strides ordered (v, k), whatever the layout.
TensorRef state_ref(const kda_tensor& t, int layout) {
  TensorRef r = ref_of(t);
  if (t.present && layout == KDA_LAYOUT_KV) std::swap(r.stride[2], r.stride[3]);
  return r;
}

DecodeParams params_of(const kda_call& c) {
  DecodeParams d;
  d.B = c.B, d.T = c.T, d.N = c.N, d.H = c.H, d.HV = c.HV, d.K = c.K, d.V = c.V;
  d.q = ref_of(c.q), d.k = ref_of(c.k), d.v = ref_of(c.v);
  d.g = ref_of(c.g), d.beta = ref_of(c.beta), d.o = ref_of(c.o);
  d.A_log = ref_of(c.A_log), d.dt_bias = ref_of(c.dt_bias);
  d.cu_seqlens = ref_of(c.cu_seqlens), d.indices = ref_of(c.state_indices);
  if (c.state_pool.present) {
    d.source = StateKind::pool;
    d.state_in = d.state_out = state_ref(c.state_pool, c.state_layout);
  } else {
    d.source = c.initial_state.present ? StateKind::dense : StateKind::none;
    d.state_in = state_ref(c.initial_state, c.state_layout);
    d.state_out = state_ref(c.final_state, c.state_layout);
  }
  d.l2norm = c.l2norm_qk;
  d.beta_sigmoid = c.beta_from_logits;
  d.beta_factor = c.allow_neg_eigval ? 2.0f : 1.0f;
  d.gate_in_kernel = c.gate_in_kernel;
  d.gate_lower_bound = c.has_lower_bound;
  d.lower_bound = static_cast<float>(c.lower_bound);
  d.scale = static_cast<float>(c.has_scale ? c.scale : 1.0 / std::sqrt(static_cast<double>(c.K)));
  d.split = kernels::split_for(c.K, kernels::default_steps(d));
  return d;
}

int fail(char* message, std::size_t size, const std::string& what) {
  std::snprintf(message, size, "%s", what.c_str());
  return KDA_STATUS_FAILED;
}

// What the descriptor's capabilities cannot say: each activation's own dtype (they name q's alone).
std::string unsupported(const kda_call& c) {
  for (const kda_tensor* t : {&c.k, &c.v, &c.g, &c.beta})
    if (t->dtype != KDA_BF16 && t->dtype != KDA_F16 && t->dtype != KDA_F32) return "an activation in f64";
  if (c.chunk_states.present || c.token_states.present) return "chunk or token states";
  return {};
}

int run(const kda_call* call, char* message, std::size_t message_size) {
  const kda_call& c = *call;
  if (const std::string why = unsupported(c); !why.empty())
    return fail(message, message_size, "cuda-plugin does not support " + why);
  if (c.memory != KDA_MEMORY_CUDA) return fail(message, message_size, "cuda-plugin takes device pointers only");
  if (const cudaError_t e = cudaSetDevice(c.device); e != cudaSuccess)
    return fail(message, message_size, std::string("cudaSetDevice: ") + cudaGetErrorString(e));
  const cudaError_t e = kernels::launch_recurrent_decode(params_of(c), static_cast<cudaStream_t>(c.stream));
  if (e != cudaSuccess) return fail(message, message_size, std::string("launch: ") + cudaGetErrorString(e));
  return KDA_STATUS_OK;
}

// kernels::token_serial_capabilities(), in the ABI's terms.
constexpr std::uint32_t kFloats = KDA_BIT(KDA_BF16) | KDA_BIT(KDA_F16) | KDA_BIT(KDA_F32) | KDA_BIT(KDA_F64);

const kda_plugin kDescriptor = {
    KDA_PLUGIN_ABI_VERSION,
    "cuda-plugin",
    "strict",
    KDA_BIT(KDA_MODE_PREFILL) | KDA_BIT(KDA_MODE_DECODE),
    KDA_BIT(KDA_BF16) | KDA_BIT(KDA_F16) | KDA_BIT(KDA_F32),
    kFloats,
    KDA_BIT(KDA_BF16) | KDA_BIT(KDA_F32),
    KDA_BIT(KDA_LAYOUT_VK) | KDA_BIT(KDA_LAYOUT_KV),
    KDA_BIT(KDA_STATE_NONE) | KDA_BIT(KDA_STATE_DENSE) | KDA_BIT(KDA_STATE_POOL),
    nullptr,
    0,
    nullptr,
    0,
    kernels::kMaxKeyDim,
    nullptr,
    0,
    KDA_CAP_VARLEN | KDA_CAP_GATE_IN_KERNEL | KDA_CAP_L2NORM_IN_KERNEL | KDA_CAP_BETA_FROM_LOGITS |
        KDA_CAP_STRIDED_INPUTS,
    KDA_MEMORY_CUDA,
    run,
    KDA_ARITHMETIC_FP32,  // the decode kernel computes in fp32
};

}  // namespace

}  // namespace kda::cuda_plugin

extern "C" const kda_plugin* kda_plugin_descriptor(void) { return &kda::cuda_plugin::kDescriptor; }
