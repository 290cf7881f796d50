// Admission before allocation (kda/memory.hpp): where the available memory comes from, and problems
// too large for it refused with a message naming the bytes, before any buffer exists.
#include "kda/memory.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <limits>
#include <string>

#include "../support/scoped_env.hpp"
#include "kda/problem_factory.hpp"

namespace kda {
namespace {

using test::ScopedEnv;

std::uint64_t mem_total() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  std::uint64_t kib = 0;
  in >> key >> kib;  // the first line is MemTotal
  return kib * 1024;
}

// The message of the MemoryError f throws ("" when it throws none).
template <class F>
std::string memory_error(F&& f) {
  try {
    f();
  } catch (const MemoryError& e) {
    return e.what();
  }
  return "";
}

TEST(AvailableMemory, ComesFromTheMachineAtMostItsTotal) {
  const auto available = available_memory();
  ASSERT_TRUE(available.has_value());
  EXPECT_GT(available->bytes, 0u);
  EXPECT_LE(available->bytes, mem_total());
  EXPECT_TRUE(available->source == "MemAvailable in /proc/meminfo" ||
              available->source.starts_with("the memory limit of cgroup "))
      << available->source;
}

TEST(AvailableMemory, TheEnvironmentOverridesIt) {
  const ScopedEnv limit("KDA_MEMORY_LIMIT", "123456");
  const auto available = available_memory();
  ASSERT_TRUE(available.has_value());
  EXPECT_EQ(available->bytes, 123456u);
  EXPECT_EQ(available->source, "KDA_MEMORY_LIMIT");
}

TEST(AvailableMemory, AnOverrideThatIsNoByteCountIsRefused) {
  for (const char* bad : {"", "12k", "-1", "1e9", "99999999999999999999"}) {
    const ScopedEnv limit("KDA_MEMORY_LIMIT", bad);
    EXPECT_THROW(available_memory(), std::invalid_argument) << "'" << bad << "'";
  }
}

TEST(ByteTotal, SumsAndOverflowsIntoUnknown) {
  ByteTotal total;
  EXPECT_EQ(total.add(3).add(4).bytes(), 7u);
  EXPECT_FALSE(total.add(std::numeric_limits<std::uint64_t>::max()).bytes().has_value());
  EXPECT_FALSE(total.add(1).bytes().has_value());
  EXPECT_FALSE(ByteTotal().add(std::nullopt).bytes().has_value());
}

TEST(RequireMemory, NamesWhatTheBytesAndTheLimit) {
  const ScopedEnv limit("KDA_MEMORY_LIMIT", "1000");
  EXPECT_NO_THROW(require_memory(ByteTotal().add(1000), "a thousand"));
  const std::string message = memory_error([] { require_memory(ByteTotal().add(1001), "the buffers of x"); });
  EXPECT_EQ(message,
            "the buffers of x needs 1001 bytes (1.0 KiB), more than the 1000 bytes (1.0 KiB) of memory available "
            "(KDA_MEMORY_LIMIT); nothing was allocated");
  EXPECT_NE(memory_error([] { require_memory(ByteTotal().add(std::nullopt), "y"); }).find("y needs more than 2^64 bytes"),
            std::string::npos);
}

// A 4096-token prefill with K = V = 128 over 4 value heads: q alone is 2 MiB of f32.
ProblemSpec big_prefill() {
  ProblemSpec s;
  s.lengths = {4096};
  s.HV = 4, s.K = 128, s.V = 128;
  return s;
}

TEST(MakeProblem, RefusesAProblemOverTheLimitBeforeAllocating) {
  const ScopedEnv limit("KDA_MEMORY_LIMIT", "1000000");
  const std::string message = memory_error([] { make_problem(big_prefill()); });
  EXPECT_NE(message.find("make_problem: the 9 buffers of prefill B=1 T=4096 N=1"), std::string::npos) << message;
  EXPECT_NE(message.find("more than the 1000000 bytes"), std::string::npos) << message;
  EXPECT_NE(message.find("(KDA_MEMORY_LIMIT)"), std::string::npos) << message;
}

TEST(MakeProblem, CountsEveryBufferWithItsGuardBands) {
  const Problem p = make_problem(big_prefill());
  std::uint64_t bytes = 0;
  for (const Tensor* t : p.inputs()) bytes += t->buffer->size() + 2 * GuardedBuffer::kGuardBytes;
  for (const Tensor* t : p.outputs()) bytes += t->buffer->size() + 2 * GuardedBuffer::kGuardBytes;
  {
    const ScopedEnv exact("KDA_MEMORY_LIMIT", std::to_string(bytes));
    EXPECT_NO_THROW(make_problem(big_prefill()));
  }
  const ScopedEnv short_by_one("KDA_MEMORY_LIMIT", std::to_string(bytes - 1));
  EXPECT_NE(memory_error([] { make_problem(big_prefill()); }), "");
}

// Without an override: more than any machine has (2^40 tokens of q alone is 2 PiB) is refused with
// a MemoryError, not std::bad_alloc or the OOM killer.
TEST(MakeProblem, RefusesMoreThanTheMachineHas) {
  ProblemSpec s = big_prefill();
  s.lengths = {std::int64_t{1} << 40};
  const std::string message = memory_error([&] { make_problem(s); });
  EXPECT_NE(message.find("of memory available"), std::string::npos) << message;
}

}  // namespace
}  // namespace kda
