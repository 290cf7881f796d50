// The example plugin wrapping our CUDA kernel (adapters/examples/cuda_plugin), loaded through the C ABI
// like any third-party kernel: its outputs are bit-identical to cuda-recurrent's (the same kernel,
// reached through device staging instead of device mirrors); tests/catalogue/gpu_catalogue_test runs
// the property catalogue against it. Skips without an sm_90 device. The plugin's path: KDA_CUDA_PLUGIN
// in the environment (the GPU harness runs binaries packed elsewhere), else the one this build made.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "kda/adapters/plugin_kernel.hpp"
#include "kda/kernels/cuda_recurrent_kernel.hpp"
#include "kda/kernels/device.hpp"

namespace kda::kernels {
namespace {

std::unique_ptr<Kernel> load_cuda_plugin() {
  const char* path = std::getenv("KDA_CUDA_PLUGIN");
  return adapters::load_plugin(path ? path : KDA_CUDA_PLUGIN_PATH);
}

// A pooled bf16 prefill: a padded pool with a -1 row, GVA, varlen with an empty sequence, the gate,
// l2norm and beta in kernel, in the given layout.
Problem pooled_problem(StateLayout layout) {
  ProblemSpec spec;
  spec.lengths = {5, 0, 17, 3};
  spec.H = 2, spec.HV = 4, spec.K = 128, spec.V = 64;
  spec.input_dtype = spec.output_dtype = DType::bf16;
  spec.state = StateSource::pool;
  spec.pool_slot_stride = 4 * 128 * 64 + 64;
  spec.indices = {2, -1, 0, 4};
  spec.options.state_layout = layout;
  spec.options.l2norm_qk = spec.options.beta_from_logits = spec.options.gate_in_kernel = true;
  spec.with_A_log = spec.with_dt_bias = true;
  Problem p = make_problem(spec);
  fill_random(p, 7);
  return p;
}

bool same_bytes(const GuardedBuffer& a, const GuardedBuffer& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size()) == 0;
}

class CudaPlugin : public testing::Test {
 protected:
  void SetUp() override {
    if (const auto info = hopper_device(); !info.available) GTEST_SKIP() << info.reason;
  }
};

TEST_F(CudaPlugin, WritesWhatCudaRecurrentWrites) {
  auto plugin = load_cuda_plugin();
  EXPECT_EQ(plugin->name(), "cuda-plugin");
  for (StateLayout layout : {StateLayout::vk, StateLayout::kv}) {
    Problem through_plugin = pooled_problem(layout), direct = deep_copy(through_plugin);
    const RunOutcome a = plugin->run(through_plugin);
    ASSERT_EQ(a.status, RunOutcome::Status::ok) << a.message;
    const RunOutcome b = make_cuda_recurrent_kernel()->run(direct);
    ASSERT_EQ(b.status, RunOutcome::Status::ok) << b.message;
    EXPECT_TRUE(same_bytes(*through_plugin.o.buffer, *direct.o.buffer)) << "o differs";
    EXPECT_TRUE(same_bytes(*through_plugin.state_pool->buffer, *direct.state_pool->buffer)) << "pool differs";
  }
}

}  // namespace
}  // namespace kda::kernels
