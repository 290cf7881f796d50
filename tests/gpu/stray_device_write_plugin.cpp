// A KDA_MEMORY_CUDA plugin with two planted stray device writes, for cuda_plugin_test: 4 bytes just
// before o's payload (inside the host-sized guard band, so the host buffer's band shows them) and, with
// a pool, 8 bytes one slot before the pool's first slot (where slot index -1 lands, in the wider device
// band the staging checks itself). It computes nothing else: o stays as it was.
#include <cuda_runtime_api.h>

#include <cstdio>

#include "kda/adapters/kda_plugin.h"

namespace {

int run(const kda_call* call, char* message, std::size_t message_size) {
  auto* o = static_cast<char*>(call->o.data);
  cudaError_t e = cudaMemsetAsync(o - 4, 0x7f, 4, static_cast<cudaStream_t>(call->stream));
  if (e == cudaSuccess && call->state_pool.present) {
    const auto slot_bytes = static_cast<std::size_t>(call->state_pool.strides[0]) * sizeof(float);
    e = cudaMemsetAsync(static_cast<char*>(call->state_pool.data) - slot_bytes, 0x7f, 8,
                        static_cast<cudaStream_t>(call->stream));
  }
  if (e == cudaSuccess) return KDA_STATUS_OK;
  std::snprintf(message, message_size, "cudaMemsetAsync: %s", cudaGetErrorString(e));
  return KDA_STATUS_FAILED;
}

const kda_plugin kDescriptor = {
    KDA_PLUGIN_ABI_VERSION,
    "stray-device-write",
    "strict",
    KDA_BIT(KDA_MODE_PREFILL) | KDA_BIT(KDA_MODE_DECODE),
    KDA_BIT(KDA_F32),
    KDA_BIT(KDA_F32),
    KDA_BIT(KDA_F32),
    KDA_BIT(KDA_LAYOUT_VK),
    KDA_BIT(KDA_STATE_NONE) | KDA_BIT(KDA_STATE_DENSE) | KDA_BIT(KDA_STATE_POOL),
    nullptr,
    0,
    nullptr,
    0,
    128,
    nullptr,
    0,
    KDA_CAP_VARLEN,
    KDA_MEMORY_CUDA,
    run,
    KDA_ARITHMETIC_FP32,
};

}  // namespace

extern "C" const kda_plugin* kda_plugin_descriptor(void) { return &kDescriptor; }
