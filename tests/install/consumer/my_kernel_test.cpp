// A consumer's GoogleTest suite: its kernel behind kda::Kernel, judged by the installed oracle. The
// kernel stands in for one a project would write: it computes the fp32 recurrence (here with the
// oracle's own fp32 reference) and may scale its output, so the suite also shows a wrong kernel caught.
#include <gtest/gtest.h>

#include <cstdint>
#include <sstream>

#include "kda/properties/judged_run.hpp"
#include "kda/properties/runner.hpp"
#include "kda/reference_kernel.hpp"

namespace {

class MyKernel : public kda::Kernel {
 public:
  explicit MyKernel(double output_scale = 1.0) : output_scale_(output_scale) {}
  std::string name() const override { return output_scale_ == 1.0 ? "my-kernel" : "my-kernel-scaled"; }
  const kda::Capabilities& capabilities() const override { return capabilities_; }
  const kda::Profile& profile() const override { return kda::profile_strict(); }

  kda::RunOutcome run(kda::Problem& problem) override {
    if (auto violations = kda::validate(problem, profile()); !violations.empty())
      return kda::RunOutcome::rejected(std::move(violations));
    kda::ReferenceOutputs out = kda::run_reference<float>(problem, kda::Algorithm::recurrent, 1);
    for (double& x : out.o) x *= output_scale_;
    kda::write_outputs(out, problem);
    return kda::RunOutcome::ok();
  }

 private:
  double output_scale_;
  kda::Capabilities capabilities_;  // the defaults: every mode, dtype, layout and state source
};

// One catalogue property over `cases` generated cases, the fp32 reference as the precision model.
kda::props::PropertyReport check(kda::Kernel& kernel, const std::string& property, int cases) {
  auto model = kda::make_reference_kernel(kda::Precision::fp32, kda::Algorithm::recurrent);
  kda::props::CheckContext context{kernel, *model};
  kda::props::RunOptions options;
  options.properties = {property};
  options.cases = cases;
  options.seed = 44;
  options.check_coverage = false;  // a few cases cannot reach every category
  return kda::props::run_properties(context, options).at(0);
}

std::string table(const kda::props::PropertyReport& report) {
  std::ostringstream os;
  kda::props::print_reports(os, {report});
  return os.str();
}

TEST(MyKernel, MatchesTheReference) {
  MyKernel kernel;
  const auto report = check(kernel, "matches-reference", 20);
  EXPECT_TRUE(report.ok()) << table(report);
  EXPECT_EQ(report.passed, 20);
}

TEST(MyKernel, ScaledByOnePercentFailsMatchesReference) {
  MyKernel kernel(1.01);
  const auto report = check(kernel, "matches-reference", 20);
  EXPECT_EQ(report.failed, 1) << table(report);
  EXPECT_NE(report.failure.find("rel-RMS"), std::string::npos) << report.failure;  // the comparison failed
  EXPECT_FALSE(report.replay.empty());
}

// The generators and the comparison without the runner: draw cases, run, read the verdict.
TEST(MyKernel, JudgedCaseByCase) {
  MyKernel kernel, scaled(1.01);
  auto model = kda::make_reference_kernel(kda::Precision::fp32, kda::Algorithm::recurrent);
  const auto cases = kda::props::gen_valid_case(kernel);
  int scaled_failures = 0;
  for (std::uint64_t seed = 1; seed <= 8; ++seed) {
    const kda::Problem problem = kda::props::build_case(cases(rc::Random(seed), 30).value());
    kda::props::CheckContext context{kernel, *model};
    const kda::props::JudgedRun run = kda::props::run_judged(context, problem);
    ASSERT_EQ(run.outcome.status, kda::RunOutcome::Status::ok) << problem.describe();
    EXPECT_TRUE(run.verdict.passed()) << problem.describe() << "\n" << run.verdict.describe();
    EXPECT_TRUE(run.outside_changes.empty()) << problem.describe();

    kda::props::CheckContext scaled_context{scaled, *model};
    scaled_failures += !kda::props::run_judged(scaled_context, problem).verdict.passed();
  }
  EXPECT_GT(scaled_failures, 0) << "an output 1% too large passed every case";
}

}  // namespace
