// Persistent metadata through the plugin ABI (adapters/README.md): within one serving run a plugin
// gets the same cu_seqlens and state_indices pointers for calls of the same geometry, holding each
// call's values; other calls get kda-oracle's own buffers. adapters/tests/metadata_echo_plugin.c
// answers every call with its metadata pointers and values.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "kda/adapters/plugin_kernel.hpp"
#include "kda/problem_factory.hpp"

namespace kda::test {
namespace {

Problem pooled(std::vector<std::int64_t> lengths, std::vector<std::int64_t> indices, std::uint64_t run) {
  ProblemSpec spec;
  spec.lengths = std::move(lengths);
  spec.state = StateSource::pool;
  spec.pool_slots = 4;
  spec.indices = std::move(indices);
  Problem p = make_problem(spec);
  fill_random(p, 3);
  p.persistent_metadata = run;
  return p;
}

struct Echo {
  std::string cu_seqlens, state_indices;  // "<pointer> [values]"
};

Echo echo(Kernel& kernel, Problem p) {
  const RunOutcome outcome = kernel.run(p);
  EXPECT_EQ(outcome.status, RunOutcome::Status::failed) << outcome.message;
  const std::string& m = outcome.message;
  auto after = [&](const std::string& name) {
    const auto at = m.find(" " + name + " ");
    if (at == std::string::npos) return std::string("(absent from: " + m + ")");
    const auto from = at + name.size() + 2;
    return m.substr(from, m.find(']', from) + 1 - from);
  };
  return {after("cu_seqlens"), after("state_indices")};
}

std::string pointer_of(const std::string& echoed) { return echoed.substr(0, echoed.find(' ')); }

std::string own_pointer(const std::optional<Tensor>& t) {
  char text[32];
  std::snprintf(text, sizeof text, "%p", static_cast<const void*>(t->buffer->data() + t->view.byte_offset()));
  return text;
}

TEST(PluginPersistentMetadata, ARunKeepsOneBufferPerGeometryRefilledEveryCall) {
  auto kernel = adapters::load_plugin(KDA_METADATA_ECHO_PLUGIN);
  const Echo first = echo(*kernel, pooled({2, 3}, {1, 0}, 7));
  const Echo second = echo(*kernel, pooled({1, 4}, {3, 2}, 7));
  EXPECT_EQ(pointer_of(second.cu_seqlens), pointer_of(first.cu_seqlens)) << "the same buffer for the same geometry";
  EXPECT_EQ(pointer_of(second.state_indices), pointer_of(first.state_indices));
  EXPECT_NE(first.cu_seqlens.find("[0,2,5]"), std::string::npos) << first.cu_seqlens;
  EXPECT_NE(second.cu_seqlens.find("[0,1,5]"), std::string::npos) << "refilled: " << second.cu_seqlens;
  EXPECT_NE(second.state_indices.find("[3,2]"), std::string::npos) << second.state_indices;
  const Echo three = echo(*kernel, pooled({1, 1, 1}, {0, 1, 2}, 7));
  EXPECT_NE(pointer_of(three.cu_seqlens), pointer_of(first.cu_seqlens)) << "another size: a buffer of its own";
  EXPECT_NE(three.cu_seqlens.find("[0,1,2,3]"), std::string::npos) << three.cu_seqlens;
}

TEST(PluginPersistentMetadata, CallsWithoutItGetTheProblemsOwnBuffers) {
  auto kernel = adapters::load_plugin(KDA_METADATA_ECHO_PLUGIN);
  for (std::uint64_t run : {0u, 5u}) {
    Problem p = pooled({2, 3}, {1, 0}, run);
    const Echo got = echo(*kernel, p);
    EXPECT_EQ(pointer_of(got.cu_seqlens) == own_pointer(p.cu_seqlens), run == 0) << "run " << run;
    EXPECT_EQ(pointer_of(got.state_indices) == own_pointer(p.state_indices), run == 0) << "run " << run;
    EXPECT_NE(got.cu_seqlens.find("[0,2,5]"), std::string::npos) << got.cu_seqlens;
  }
}

}  // namespace
}  // namespace kda::test
