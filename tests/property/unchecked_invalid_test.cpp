// What a kernel does with an invalid call, judged: unchecked-invalid on kernels whose profile promises
// less than strict (correct ones pass, each broken one is caught for what it did), and rejects-invalid
// on a kernel that runs a call it promised to reject.
#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <string>

#include "kda/properties/catalogue.hpp"
#include "kda/properties/runner.hpp"
#include "kda/reference_kernel.hpp"

namespace kda::test {
namespace {

Profile strict_without(std::initializer_list<Rule> dropped) {
  Profile p = profile_strict();
  p.name = "strict_without";
  for (Rule r : dropped) {
    std::erase(p.rules, r);
    p.name += "_" + std::string(name_of(r));
  }
  return p;
}

// The fp32 reference holding `profile` only. A call that passes it goes to `run_call`, which by default
// computes it with the reference (right for every call whose broken rule is an implementation limit);
// a test's run_call must not hand the reference a call it cannot read (an index out of range).
class LaxKernel : public Kernel {
 public:
  explicit LaxKernel(Profile profile) : profile_(std::move(profile)) {
    capabilities_.modes.push_back(Mode::verify);
    capabilities_.state_sources.insert(capabilities_.state_sources.end(), {StateSource::table, StateSource::scratch});
  }
  std::string name() const override { return "lax: " + profile_.name; }
  const Capabilities& capabilities() const override { return capabilities_; }
  const Profile& profile() const override { return profile_; }
  RunOutcome run(Problem& problem) override {
    if (auto v = validate(problem, profile_); !v.empty()) return RunOutcome::rejected(std::move(v));
    return run_call(problem);
  }

  std::function<RunOutcome(Problem&)> run_call = [](Problem& p) {
    write_outputs(run_reference<float>(p, Algorithm::recurrent, 1), p);
    return RunOutcome::ok();
  };

 private:
  Profile profile_;
  Capabilities capabilities_;
};

props::PropertyReport run_one(Kernel& kernel, const std::string& property, int cases = 40) {
  auto model = make_reference_kernel(Precision::fp32, Algorithm::recurrent, kernel.profile());
  props::CheckContext context{kernel, *model};
  props::RunOptions options;
  options.properties = {property};
  options.cases = cases;
  const auto reports = props::run_properties(context, options);
  EXPECT_EQ(reports.size(), 1u);
  return reports.empty() ? props::PropertyReport{} : reports.front();
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

bool counts_out_of_range(const Problem& p) {
  if (!p.num_accepted) return false;
  for (std::int64_t n = 0; n < p.N; ++n)
    if (const auto a = p.num_accepted->integer_at(n); a < 1 || a > p.L) return true;
  return false;
}

// Every element of o, chunk_states and token_states set to x (what a kernel that ran writes, whatever).
void fill_outputs(Problem& p, double x) {
  for (auto* t : {&p.chunk_states, &p.token_states})
    if (*t) for_each_index((*t)->shape(), [&](std::span<const std::int64_t> i) { (*t)->set(i, x); });
  for_each_index(p.o.shape(), [&](std::span<const std::int64_t> i) { p.o.set(i, x); });
}

RunOutcome reference_run(Problem& p) {
  write_outputs(run_reference<float>(p, Algorithm::recurrent, 1), p);
  return RunOutcome::ok();
}

bool misaligned_pool(const Problem& p) {
  return p.state_pool && (p.state_pool->view.strides[0] % 16 != 0 || p.state_pool->view.byte_offset() % 32 != 0);
}

TEST(UncheckedInvalid, AKernelRightWhereItRunsPasses) {
  LaxKernel kernel(strict_without({Rule::state_pool_alignment, Rule::chunk_size}));
  const auto report = run_one(kernel, "unchecked-invalid");
  EXPECT_TRUE(report.ok()) << report.failure;
  EXPECT_GT(report.coverage.count("values judged") ? report.coverage.at("values judged") : 0, 0);
}

TEST(UncheckedInvalid, ReferenceKernelsAreSkipped) {
  auto kernel = make_reference_kernel(Precision::fp32, Algorithm::recurrent);
  const auto report = run_one(*kernel, "unchecked-invalid");
  EXPECT_EQ(report.skipped, "the kernel's profile strict enforces every rule strict can break on its cases");
}

TEST(UncheckedInvalid, WrongValuesWhereTheReferenceDefinesTheCallAreCaught) {
  LaxKernel kernel(strict_without({Rule::state_pool_alignment}));
  kernel.run_call = [](Problem& p) {
    ReferenceOutputs out = run_reference<float>(p, Algorithm::recurrent, 1);
    if (misaligned_pool(p))
      for (double& x : out.o) x += 1.0;
    write_outputs(out, p);
    return RunOutcome::ok();
  };
  const auto report = run_one(kernel, "unchecked-invalid");
  ASSERT_EQ(report.failed, 1) << report.failure;
  EXPECT_TRUE(has(report.failure, "the kernel ran a problem that breaks state_pool_alignment (upstream: "))
      << report.failure;
  EXPECT_TRUE(has(report.failure, "its values are wrong")) << report.failure;
  EXPECT_TRUE(has(report.replay, "reproduce=")) << report.replay;
}

TEST(UncheckedInvalid, PoisonFromAnUncheckedCountIsCaught) {
  LaxKernel kernel(strict_without({Rule::accepted_range}));
  kernel.run_call = [](Problem& p) {
    if (!counts_out_of_range(p)) return reference_run(p);
    // What a kernel that loads table[n, count - 1] unchecked computes from: a poisoned slot.
    fill_outputs(p, std::numeric_limits<double>::quiet_NaN());
    return RunOutcome::ok();
  };
  const auto report = run_one(kernel, "unchecked-invalid");
  ASSERT_EQ(report.failed, 1) << report.failure;
  EXPECT_TRUE(has(report.failure, "breaks accepted_range (upstream: num_accepted_tokens[")) << report.failure;
  EXPECT_TRUE(has(report.failure, "it returned NaN or Inf")) << report.failure;
}

TEST(UncheckedInvalid, AWriteBeforeThePoolIsCaught) {
  LaxKernel kernel(strict_without({Rule::state_indices_range}));
  kernel.run_call = [](Problem& p) {
    const Tensor& idx = *p.state_indices;
    const std::int64_t slots = p.state_pool->shape()[0], columns = idx.view.rank() == 2 ? idx.shape()[1] : 1;
    bool outside = false;
    for (std::int64_t n = 0; n < idx.shape()[0]; ++n)
      for (std::int64_t j = 0; j < columns; ++j) {
        const auto i = idx.view.rank() == 2 ? idx.integer_at(n, j) : idx.integer_at(n);
        outside |= i < -1 || i >= slots;
      }
    if (!outside) return reference_run(p);
    if (p.num_accepted) return RunOutcome::rejected({{Rule::state_indices_range, "an index table entry is out of range"}});
    // An out-of-range index in C index math: the kernel stores one element just before slot 0.
    fill_outputs(p, 0.0);
    const std::int64_t before = p.state_pool->view.offset - 1;
    if (before >= 0) store_element(p.state_pool->buffer->data(), p.state_pool->dtype(), before, 1.0);
    return RunOutcome::ok();
  };
  const auto report = run_one(kernel, "unchecked-invalid", 100);
  ASSERT_EQ(report.failed, 1) << report.failure;
  EXPECT_TRUE(has(report.failure, "breaks state_indices_range (upstream: state_indices[")) << report.failure;
  EXPECT_TRUE(has(report.failure, "slot -1, before the pool's first slot")) << report.failure;
}

TEST(RejectsInvalid, AKernelThatRunsACallItPromisedToRejectIsReportedWithTheRuleAndTheRun) {
  // Promises strict but checks only what it must to stay in bounds, and then writes nothing.
  class Liar : public LaxKernel {
   public:
    Liar() : LaxKernel(strict_without({})) {}
    RunOutcome run(Problem& problem) override {
      Profile bounds;
      bounds.rules = {Rule::problem_sizes, Rule::view_in_bounds};
      if (auto v = validate(problem, bounds); !v.empty()) return RunOutcome::rejected(std::move(v));
      return RunOutcome::ok();
    }
  } kernel;
  const auto report = run_one(kernel, "rejects-invalid", 20);
  ASSERT_EQ(report.failed, 1) << report.failure;
  EXPECT_TRUE(has(report.failure, "the kernel ran a problem that breaks ")) << report.failure;
  EXPECT_TRUE(has(report.failure, " (upstream: ")) << report.failure;
  EXPECT_TRUE(has(report.failure, "instead of rejecting it")) << report.failure;
}

}  // namespace
}  // namespace kda::test
