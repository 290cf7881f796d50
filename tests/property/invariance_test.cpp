// The invariance properties can fail: each double of invariance_doubles.hpp is caught by the property
// that names its bug, with a fixed seed; the same wrapper with no bug passes them all.
#include <gtest/gtest.h>

#include "invariance_doubles.hpp"
#include "../support/catalogue_check.hpp"

namespace kda::test {
namespace {

struct Expectation {
  const char* bug;
  std::unique_ptr<Kernel> (*make)();
  const char* property;
};

props::PropertyReport run_one(Kernel& kernel, const std::string& property) {
  auto model = make_reference_kernel(Precision::fp32, Algorithm::recurrent);
  props::RunOptions options;
  options.properties = {property};
  options.cases = 100;
  options.seed = 2026;
  return run_property(kernel, *model, options);
}

class InvarianceCatches : public testing::TestWithParam<Expectation> {};

TEST_P(InvarianceCatches, TheBugOfItsDouble) {
  const Expectation& e = GetParam();
  const auto kernel = e.make();
  // A double whose behaviour changes after its first call gets that call here, so that every case the
  // property runs meets the same kernel and the shrunk failure replays (its message is a re-run).
  Problem first = make_problem(ProblemSpec{});
  fill_random(first, 1);
  ASSERT_EQ(kernel->run(first).status, RunOutcome::Status::ok);
  const props::PropertyReport report = run_one(*kernel, e.property);
  ASSERT_EQ(report.failed, 1) << kernel->name() << " was not caught by " << e.property;
  EXPECT_EQ(report.failure.find("gave up"), std::string::npos) << report.failure;
  EXPECT_NE(report.failure.find("problem: "), std::string::npos) << "no problem described:\n" << report.failure;
  EXPECT_FALSE(report.replay.empty());
  std::cout << "[" << e.bug << "] caught by " << e.property << ":\n" << report.failure.substr(0, 1500) << "\n";
}

INSTANTIATE_TEST_SUITE_P(
    Doubles, InvarianceCatches,
    testing::Values(
        Expectation{"leaks_state_across_sequences", leaks_state_across_sequences, "packing"},
        Expectation{"ignores_initial_state_after_first_call", ignores_initial_state_after_first_call, "split"},
        Expectation{"final_state_untransposed_in_kv", final_state_untransposed_in_kv, "layout"},
        Expectation{"gva_heads_interleaved", gva_heads_interleaved, "gva-expansion"},
        Expectation{"decode_skips_last_slot", decode_skips_last_slot, "serving-loop"}),
    [](const testing::TestParamInfo<Expectation>& param) { return std::string(param.param.bug); });

TEST(InvarianceSelfTest, TheUnbrokenDoubleIsClean) {
  BrokenKernel clean;
  clean.name_ = "unbroken";
  for (const char* property : {"packing", "split", "layout", "gva-expansion", "serving-loop"}) {
    const props::PropertyReport report = run_one(clean, property);
    EXPECT_EQ(report.failed, 0) << property << ":\n" << report.failure;
  }
}

}  // namespace
}  // namespace kda::test
