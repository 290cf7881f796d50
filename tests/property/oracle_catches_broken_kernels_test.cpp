// Tests of the oracle itself: each broken kernel (broken_kernels.hpp) must be caught by the property
// that names its bug, with a shrunk counterexample and a replay string that reproduces it.
#include <gtest/gtest.h>

#include <optional>

#include "broken_kernels.hpp"
#include "../support/catalogue_check.hpp"

namespace kda::test {
namespace {

struct Expectation {
  const char* bug;
  std::unique_ptr<Kernel> (*make)();
  const char* property;
};

props::PropertyReport run_one(Kernel& kernel, const std::string& property, std::uint64_t seed, const std::string& replay = {},
                              std::optional<Problem>* failing_case = nullptr, int cases = 300) {
  auto model = make_reference_kernel(Precision::fp32, Algorithm::recurrent);
  props::RunOptions options;
  options.properties = {property};
  options.cases = cases;
  options.seed = seed;
  options.replay = replay;
  if (failing_case)
    options.on_failing_case = [failing_case](const std::string&, const Problem& p) { *failing_case = deep_copy(p); };
  return run_property(kernel, *model, options);
}

class BrokenKernelIsCaught : public testing::TestWithParam<Expectation> {};

TEST_P(BrokenKernelIsCaught, ByItsPropertyWithAShrunkReplayableCase) {
  const Expectation& e = GetParam();
  const auto kernel = e.make();
  std::optional<Problem> failing_case;
  const props::PropertyReport report = run_one(*kernel, e.property, 2026, {}, &failing_case);
  ASSERT_EQ(report.failed, 1) << kernel->name() << " was not caught by " << e.property;
  EXPECT_FALSE(report.failure.empty());
  EXPECT_NE(report.failure.find("case: "), std::string::npos) << "no counterexample printed:\n" << report.failure;
  ASSERT_FALSE(report.replay.empty());
  // The replay string reproduces exactly the shrunk case: same message.
  const props::PropertyReport replayed = run_one(*kernel, e.property, 2026, report.replay);
  EXPECT_EQ(replayed.failed, 1);
  EXPECT_EQ(replayed.failure, report.failure);
  // The captured shrunk case is the one in the failure message.
  ASSERT_TRUE(failing_case.has_value());
  EXPECT_NE(report.failure.find(failing_case->describe()), std::string::npos)
      << "captured: " << failing_case->describe() << "\nreported:\n" << report.failure;
  std::cout << "[" << e.bug << "] caught by " << e.property << ":\n" << report.failure.substr(0, 1500) << "\n";
}

INSTANTIATE_TEST_SUITE_P(
    Oracle, BrokenKernelIsCaught,
    testing::Values(Expectation{"ignores_padding_guard", ignores_padding_guard, "padding-rows"},
                    Expectation{"transposed_state", transposed_state, "matches-reference"},
                    Expectation{"drops_partial_last_chunk", drops_partial_last_chunk, "matches-reference"},
                    Expectation{"skips_empty_sequence_state", skips_empty_sequence_state, "matches-reference"},
                    Expectation{"reads_past_row_end", reads_past_row_end, "matches-reference"},
                    Expectation{"initial_slot_off_by_one", initial_slot_off_by_one, "verify-initial-slot"},
                    Expectation{"initial_slot_off_by_one_values", initial_slot_off_by_one, "matches-reference"},
                    Expectation{"commits_during_verify", commits_during_verify, "verify-keeps-committed"},
                    Expectation{"commits_during_verify_untouched", commits_during_verify, "untouched"},
                    Expectation{"initial_slot_off_by_one_serving", initial_slot_off_by_one, "serving-loop"},
                    Expectation{"commits_during_verify_serving", commits_during_verify, "serving-loop"}),
    [](const testing::TestParamInfo<Expectation>& param) { return std::string(param.param.bug); });

TEST(OracleSelfTest, TheUnbrokenDoubleIsClean) {
  // The same wrapper with no hook passes: the failures above come from the bugs, not the harness.
  BrokenKernel clean;
  clean.name_ = "unbroken";
  clean.capabilities_ = verifying();
  for (const char* property : {"matches-reference", "untouched", "padding-rows", "serving-loop", "verify-commit",
                               "verify-keeps-committed", "verify-initial-slot"})
    EXPECT_EQ(run_one(clean, property, 2026, {}, nullptr, 100).failed, 0) << property;
}

}  // namespace
}  // namespace kda::test
