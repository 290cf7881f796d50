// The plugin loader: the example loop plugin through the C ABI, one test plugin per defect
// (adapters/tests/test_plugin.c), each refused or reported with a message that says what is wrong,
// and an ABI version 1 plugin, which still loads and runs and is never sent a verify call.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <string>

#include "kda/adapters/kda_plugin.h"
#include "kda/adapters/plugin_kernel.hpp"
#include "kda/properties/comparison.hpp"
#include "kda/reference_kernel.hpp"

namespace kda::test {
namespace {

using adapters::load_plugin;
using adapters::PluginError;

std::string test_plugin(int variant) {
  return std::string(KDA_TEST_PLUGIN_DIR) + "/test_plugin_" + std::to_string(variant) + ".so";
}

// A pooled bf16 prefill with a -1 padding row, GVA and the gate, l2norm and beta in kernel.
Problem pooled_problem(StateLayout layout) {
  ProblemSpec spec;
  spec.lengths = {5, 0, 17, 3};
  spec.H = 1, spec.HV = 2, spec.K = 16, spec.V = 32;
  spec.input_dtype = spec.output_dtype = DType::bf16;
  spec.state = StateSource::pool;
  spec.pool_slot_stride = 2 * 16 * 32 + 16;
  spec.indices = {2, -1, 0, 4};
  spec.options.state_layout = layout;
  spec.options.l2norm_qk = spec.options.beta_from_logits = spec.options.gate_in_kernel = true;
  spec.with_A_log = spec.with_dt_bias = true;
  spec.chunk_states = true;
  Problem p = make_problem(spec);
  fill_random(p, 11);
  return p;
}

std::string message_of(const std::string& library) {
  try {
    load_plugin(library);
  } catch (const PluginError& e) {
    return e.what();
  }
  return "(loaded)";
}

TEST(PluginKernel, LoopPluginDeclaresItsCapabilities) {
  auto kernel = load_plugin(KDA_LOOP_PLUGIN);
  EXPECT_EQ(kernel->name(), "loop");
  EXPECT_EQ(kernel->profile().name, "strict");
  const Capabilities& c = kernel->capabilities();
  EXPECT_EQ(c.state_dtypes, (std::vector<DType>{DType::bf16, DType::f32, DType::f64}));
  EXPECT_EQ(c.chunk_sizes, (std::vector<int>{32, 64}));
  EXPECT_TRUE(c.strided_inputs && c.token_states && c.chunk_states && c.gate_in_kernel);
  EXPECT_EQ(c.modes, (std::vector<Mode>{Mode::prefill, Mode::decode, Mode::verify}));
  EXPECT_EQ(c.state_sources, (std::vector<StateSource>{StateSource::none, StateSource::dense, StateSource::pool,
                                                        StateSource::table, StateSource::scratch}));
}

TEST(PluginKernel, LoopPluginMatchesTheFp32ReferenceInBothLayouts) {
  for (StateLayout layout : {StateLayout::vk, StateLayout::kv}) {
    auto kernel = load_plugin(KDA_LOOP_PLUGIN);
    Problem p = pooled_problem(layout);
    Problem expected = deep_copy(p);
    ASSERT_EQ(make_reference_kernel(Precision::fp32, Algorithm::recurrent)->run(expected).status,
              RunOutcome::Status::ok);
    ASSERT_EQ(kernel->run(p).status, RunOutcome::Status::ok);
    const ReferenceOutputs got = props::read_outputs(p), want = props::read_outputs(expected);
    for (std::size_t i = 0; i < want.o.size(); ++i) ASSERT_NEAR(got.o[i], want.o[i], 1e-2 * (1 + std::abs(want.o[i])));
    for (std::size_t i = 0; i < want.final_state.size(); ++i)
      ASSERT_NEAR(got.final_state[i], want.final_state[i], 1e-4 * (1 + std::abs(want.final_state[i])));
    for (std::size_t i = 0; i < want.chunk_states.size(); ++i)
      ASSERT_NEAR(got.chunk_states[i], want.chunk_states[i], 1e-4 * (1 + std::abs(want.chunk_states[i])));
  }
}

TEST(PluginKernel, AnInvalidProblemNeverReachesAPluginThatDoesNotCheckItsContract) {
  auto kernel = load_plugin(test_plugin(6));  // would write before o if it were called
  Problem p = pooled_problem(StateLayout::vk);
  p.options.chunk_size = 48;
  const RunOutcome outcome = kernel->run(p);
  ASSERT_EQ(outcome.status, RunOutcome::Status::rejected);
  EXPECT_EQ(outcome.violations.front().rule, Rule::chunk_size);
  EXPECT_FALSE(p.o.buffer->check_guards());
}

TEST(PluginKernel, RefusesAnotherAbiVersion) {
  EXPECT_NE(message_of(test_plugin(1)).find("ABI version 999; this kda-oracle speaks versions 1, 2 and 3"),
            std::string::npos)
      << message_of(test_plugin(1));
}

// Version 2 only appends: the members a version-1 plugin reads sit where version 1 put them. The
// offsets are those of kda_plugin.h version 1 on LP64 (x86-64 and aarch64 Linux).
TEST(PluginKernel, Version2KeepsTheVersion1Layout) {
  if (sizeof(void*) != 8) GTEST_SKIP() << "offsets recorded for LP64";
  EXPECT_EQ(offsetof(kda_call, o), 1264u);
  EXPECT_EQ(offsetof(kda_call, token_states), 1576u);
  EXPECT_EQ(offsetof(kda_call, memory), 1680u);
  EXPECT_EQ(offsetof(kda_call, stream), 1688u);
  EXPECT_EQ(offsetof(kda_call, L), 1696u);  // sizeof(kda_call) of version 1: the new members follow it
  EXPECT_EQ(offsetof(kda_plugin, run), 112u);
  EXPECT_EQ(offsetof(kda_plugin, arithmetic), 120u);  // version 3 appends after the version-2 descriptor
}

TEST(PluginKernel, Version3DeclaresItsArithmetic) {
  EXPECT_EQ(load_plugin(test_plugin(11))->capabilities().arithmetic, Arithmetic::bf16_operands);
  EXPECT_EQ(load_plugin(test_plugin(3))->capabilities().arithmetic, Arithmetic::fp32);
  EXPECT_EQ(load_plugin(test_plugin(8))->capabilities().arithmetic, Arithmetic::fp32);  // version 1: no member
  EXPECT_NE(message_of(test_plugin(12)).find("descriptor field 'arithmetic' is 7, not a kda_arithmetic"),
            std::string::npos)
      << message_of(test_plugin(12));
}

TEST(PluginKernel, RefusesVerifyWithoutAVerifyStateSource) {
  const std::string m = message_of(test_plugin(9));
  EXPECT_NE(m.find("declares KDA_MODE_VERIFY but neither KDA_STATE_TABLE nor KDA_STATE_SCRATCH"), std::string::npos)
      << m;
}

// A verify call of the table form, valid under strict.
Problem verify_problem() {
  ProblemSpec spec;
  spec.mode = Mode::verify;
  spec.state = StateSource::table;
  spec.lengths = {3, 3};
  spec.accepted = {2, 3};
  spec.final_state = false;
  return make_problem(spec);
}

// Test plugin 8 declares ABI version 1 with the verify bits version 2 added set: they are ignored.
TEST(PluginKernel, AnAbi1PluginDeclaresNoVerify) {
  auto kernel = load_plugin(test_plugin(8));
  const Capabilities& c = kernel->capabilities();
  EXPECT_EQ(c.modes, (std::vector<Mode>{Mode::prefill, Mode::decode}));
  EXPECT_EQ(c.state_sources, (std::vector<StateSource>{StateSource::none, StateSource::dense}));
  EXPECT_EQ(c.unsupported(verify_problem()), "mode verify");
}

// It runs (zeroing o), called with abi_version 1: it fails, saying what it got, on any other call.
TEST(PluginKernel, AnAbi1PluginRunsWithAVersion1Call) {
  auto kernel = load_plugin(test_plugin(8));
  Problem p = make_problem({});
  fill_random(p, 3);
  const RunOutcome outcome = kernel->run(p);
  ASSERT_EQ(outcome.status, RunOutcome::Status::ok) << outcome.message;
  for_each_index(p.o.shape(), [&](std::span<const std::int64_t> i) { ASSERT_EQ(p.o.at(i), 0.0); });
}

// Called directly with a verify problem anyway, it is not called: kda-oracle says why, or rejects an
// invalid one by the plugin's profile although the plugin checks its own contract (a version-1 call
// could not show it the verify tensors).
TEST(PluginKernel, AnAbi1PluginIsNeverGivenAVerifyCall) {
  auto kernel = load_plugin(test_plugin(8));
  Problem p = verify_problem();
  RunOutcome outcome = kernel->run(p);
  ASSERT_EQ(outcome.status, RunOutcome::Status::failed);
  EXPECT_EQ(outcome.message,
            "plugin test-plugin speaks kda_plugin.h ABI version 1, which cannot carry a verify call (version 2 can)");

  Problem prefill_with_counts = make_problem({});
  prefill_with_counts.num_accepted = Tensor::zeros("num_accepted", DType::i32, {1});
  outcome = kernel->run(prefill_with_counts);
  ASSERT_EQ(outcome.status, RunOutcome::Status::rejected);
  EXPECT_TRUE(std::any_of(outcome.violations.begin(), outcome.violations.end(),
                          [](const Violation& v) { return v.rule == Rule::state_source; }));
}

TEST(PluginKernel, RefusesAnUnknownProfileNamingTheKnownOnes) {
  const std::string m = message_of(test_plugin(2));
  EXPECT_NE(m.find("unknown profile 'no_such_profile' (known: strict, fla_fused_recurrent"), std::string::npos) << m;
}

TEST(PluginKernel, RefusesALibraryWithoutDescriptorAndAMissingFile) {
  const std::string m = message_of(test_plugin(7));
  EXPECT_NE(m.find("exports no kda_plugin_descriptor()"), std::string::npos) << m;
  EXPECT_NE(message_of("/nonexistent/plugin.so").find("cannot load plugin"), std::string::npos);
}

TEST(PluginKernel, ARejectionNamesItsRules) {
  auto kernel = load_plugin(test_plugin(3));
  Problem p = make_problem({});
  const RunOutcome outcome = kernel->run(p);
  ASSERT_EQ(outcome.status, RunOutcome::Status::rejected);
  ASSERT_EQ(outcome.violations.size(), 2u);
  EXPECT_EQ(outcome.violations[0].rule, Rule::state_pool_alignment);
  EXPECT_EQ(outcome.violations[0].message, "slot stride 3 elements must be a multiple of 16");
  EXPECT_EQ(outcome.violations[1].rule, Rule::chunk_size);
  EXPECT_EQ(outcome.violations[1].message, "got 64");
}

TEST(PluginKernel, ARejectionWithAnUnknownRuleIsAFailure) {
  auto kernel = load_plugin(test_plugin(4));
  Problem p = make_problem({});
  const RunOutcome outcome = kernel->run(p);
  ASSERT_EQ(outcome.status, RunOutcome::Status::failed);
  EXPECT_NE(outcome.message.find("names no contract rule: 'not_a_rule: made up'"), std::string::npos) << outcome.message;
}

TEST(PluginKernel, AFailureCarriesThePluginsMessage) {
  auto kernel = load_plugin(test_plugin(5));
  Problem p = make_problem({});
  const RunOutcome outcome = kernel->run(p);
  ASSERT_EQ(outcome.status, RunOutcome::Status::failed);
  EXPECT_EQ(outcome.message, "plugin test-plugin failed: launch failed: out of memory");
}

TEST(PluginKernel, AWriteBeforeTheBufferLandsInItsGuardBand) {
  auto kernel = load_plugin(test_plugin(6));
  Problem p = make_problem({});
  ASSERT_EQ(kernel->run(p).status, RunOutcome::Status::ok);
  const auto hit = p.o.buffer->check_guards();
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->first_byte, -4);
  EXPECT_EQ(hit->buffer, "o");
}

TEST(PluginKernel, ADeviceMemoryPluginIsRefusedByABuildWithoutCuda) {
  if (KDA_TEST_HAVE_CUDA) GTEST_SKIP() << "a CUDA build stages its calls on the device (tests/gpu/cuda_plugin_test)";
  const std::string message = message_of(test_plugin(10));
  EXPECT_NE(message.find("plugin " + test_plugin(10) + " declares KDA_MEMORY_CUDA"), std::string::npos) << message;
  EXPECT_NE(message.find("built without CUDA"), std::string::npos) << message;
}

}  // namespace
}  // namespace kda::test
