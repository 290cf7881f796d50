// The example plugin wrapping our CUDA kernel (adapters/examples/cuda_plugin), loaded through the C ABI
// like any third-party kernel: its outputs are bit-identical to cuda-recurrent's (the same kernel,
// reached through kda-oracle's device staging of KDA_MEMORY_CUDA plugins instead of device mirrors);
// tests/catalogue/gpu_catalogue_test runs the property catalogue against it. A plugin with planted
// stray device writes (stray_device_write_plugin.cpp) has them located to the byte. Skips without an
// sm_90 device. The plugins' paths: KDA_CUDA_PLUGIN and KDA_STRAY_WRITE_PLUGIN in the environment (the
// GPU harness runs binaries packed elsewhere), else the ones this build made.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "kda/adapters/plugin_kernel.hpp"
#include "kda/kernels/cuda_recurrent_kernel.hpp"
#include "kda/kernels/device.hpp"

namespace kda::kernels {
namespace {

std::unique_ptr<Kernel> load_from(const char* variable, const char* built) {
  const char* path = std::getenv(variable);
  return adapters::load_plugin(path ? path : built);
}

std::unique_ptr<Kernel> load_cuda_plugin() { return load_from("KDA_CUDA_PLUGIN", KDA_CUDA_PLUGIN_PATH); }

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
    for (const Tensor* t : through_plugin.inputs())
      EXPECT_FALSE(t->buffer->check_guards()) << t->name() << ": " << t->buffer->check_guards()->describe();
    EXPECT_FALSE(through_plugin.o.buffer->check_guards()) << through_plugin.o.buffer->check_guards()->describe();
  }
}

// An f32 problem with o at offset 0 of its buffer and, with a pool, the pool at offset 0 too.
Problem f32_problem(StateSource source) {
  ProblemSpec spec;
  spec.lengths = {3, 4};
  spec.K = spec.V = 16;
  spec.state = source;
  if (source == StateSource::pool) spec.pool_slot_stride = 16 * 16 + 1024;  // 5120-byte slots
  Problem p = make_problem(spec);
  fill_random(p, 3);
  return p;
}

TEST_F(CudaPlugin, StrayDeviceWritesAreLocatedToTheByte) {
  auto plugin = load_from("KDA_STRAY_WRITE_PLUGIN", KDA_STRAY_WRITE_PLUGIN_PATH);
  // o[-1]: inside the host-sized band, so it comes back into o's host guard band.
  Problem dense = f32_problem(StateSource::dense);
  const RunOutcome ran = plugin->run(dense);
  ASSERT_EQ(ran.status, RunOutcome::Status::ok) << ran.message;
  const auto hit = dense.o.buffer->check_guards();
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->buffer, "o");
  EXPECT_EQ(hit->first_byte, -4);
  EXPECT_EQ(hit->last_byte, -1);
  // Slot -1 of the pool: further out than the host's band; the staging reports it, to the byte.
  Problem pooled = f32_problem(StateSource::pool);
  const RunOutcome failed = plugin->run(pooled);
  ASSERT_EQ(failed.status, RunOutcome::Status::failed);
  EXPECT_NE(failed.message.find("plugin stray-device-write wrote outside its buffers on the device"), std::string::npos)
      << failed.message;
  EXPECT_NE(failed.message.find("guard band before buffer 'state_pool': 8 byte(s) changed, first at byte offset -5120, "
                                "last at -5113"),
            std::string::npos)
      << failed.message;
  EXPECT_EQ(pooled.o.buffer->check_guards().value_or(GuardViolation{}).first_byte, -4);
}

}  // namespace
}  // namespace kda::kernels
