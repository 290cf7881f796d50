// The runner's own contract: options that cannot run are refused before anything runs, progress
// counts passed cases only (a property's discarded cases are not progress), ending once per property,
// and a property the kernel cannot take (its needs) is skipped with the reason, not failed.
#include <gtest/gtest.h>
#include <rapidcheck/detail/Configuration.h>

#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "broken_kernels.hpp"
#include "../support/catalogue_check.hpp"

namespace kda::test {
namespace {

// A well-formed replay string of a case of `property` (the form a failure prints).
std::string replay_of(const std::string& property) {
  rc::detail::Configuration config;
  config.reproduce[property] = rc::detail::Reproduce{rc::Random(7), 10, {}};
  return rc::detail::configToMinimalString(config);
}

void expect_refused(const props::RunOptions& options, const std::string& message) {
  try {
    props::validate(options);
    ADD_FAILURE() << "accepted; expected: " << message;
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
  }
  auto kernel = make_reference_kernel(Precision::fp32, Algorithm::recurrent);
  props::CheckContext context{*kernel, *kernel};
  EXPECT_THROW(props::run_properties(context, options), std::invalid_argument) << message;
}

TEST(Runner, RefusesOptionsThatCannotRun) {
  props::RunOptions options;
  EXPECT_NO_THROW(props::validate(options));
  options.properties = {"nope"};
  expect_refused(options, "unknown property 'nope'");
  options = {}, options.cases = 0;
  expect_refused(options, "need at least 1");
  options = {}, options.max_size = 101;
  expect_refused(options, "outside 0..100");
  options = {}, options.replay = "seed=3";
  expect_refused(options, "names no failing case");
  options = {}, options.replay = "reproduce=xyz";
  expect_refused(options, "cannot be read");
  // A replay of one property in a run of another would run nothing, and pass.
  options = {}, options.properties = {"untouched"}, options.replay = replay_of("matches-reference");
  expect_refused(options, "a case of property 'matches-reference', which this run does not select");
  options.properties = {"untouched", "matches-reference"};
  EXPECT_NO_THROW(props::validate(options));
}

std::vector<props::PropertyProgress> progress_of(Kernel& kernel, const std::string& property, int cases) {
  std::vector<props::PropertyProgress> seen;
  auto model = make_reference_kernel(Precision::fp32, Algorithm::recurrent);
  props::RunOptions options;
  options.properties = {property};
  options.cases = cases;
  options.seed = 2026;
  options.progress = [&seen](const props::PropertyProgress& p) { seen.push_back(p); };
  run_property(kernel, *model, options);
  return seen;
}

// padding-rows discards the cases its generator draws without a padding row: rapidcheck reports each,
// and a count of them had run past the total ("9/3 cases").
TEST(Runner, ProgressCountsPassedCasesOnly) {
  auto kernel = make_reference_kernel(Precision::fp32, Algorithm::recurrent);
  const auto seen = progress_of(*kernel, "padding-rows", 5);
  ASSERT_FALSE(seen.empty());
  for (std::size_t i = 0; i < seen.size(); ++i) {
    EXPECT_EQ(seen[i].property, "padding-rows");
    EXPECT_EQ(seen[i].total, 5);
    EXPECT_LE(seen[i].passed, 5);
    EXPECT_FALSE(seen[i].failed);
    EXPECT_EQ(seen[i].finished, i + 1 == seen.size());
    if (i > 0) {
      EXPECT_GE(seen[i].passed, seen[i - 1].passed);
    }
  }
  EXPECT_EQ(seen.back().passed, 5);
}

// One callback for the whole run, not a copy per property: its state (a log line's timer, a terminal's
// width) lasts from one property to the next.
struct CountingProgress {
  int events = 0;
  void operator()(const props::PropertyProgress&) { ++events; }
};
TEST(Runner, ProgressIsTheCallersCallbackForEveryProperty) {
  auto kernel = make_reference_kernel(Precision::fp32, Algorithm::recurrent);
  props::CheckContext context{*kernel, *kernel};
  props::RunOptions options;
  options.properties = {"matches-reference", "untouched"};
  options.cases = 3;
  options.progress = CountingProgress{};
  props::run_properties(context, options);
  EXPECT_EQ(options.progress.target<CountingProgress>()->events, 2 * (3 + 1)) << "3 passed cases and the end, twice";
}

TEST(Runner, ProgressShowsAFailureAndItsShrink) {
  const auto kernel = transposed_state();
  const auto seen = progress_of(*kernel, "matches-reference", 100);
  ASSERT_FALSE(seen.empty());
  const auto& last = seen.back();
  EXPECT_TRUE(last.finished);
  EXPECT_TRUE(last.failed);
  EXPECT_GT(last.shrinks, 0);
  int failures_seen = 0;
  for (const auto& p : seen) failures_seen += p.failed && p.shrinks == 0 && !p.finished;
  EXPECT_EQ(failures_seen, 1) << "one notice when the case fails, before its shrink";
}

// The fp32 reference behind other capabilities: a kernel that lacks what some properties need.
std::unique_ptr<Kernel> reference_with(const std::string& name, const std::function<void(Capabilities&)>& change) {
  auto k = std::make_unique<BrokenKernel>();
  k->name_ = name;
  k->capabilities_ = verifying();
  change(k->capabilities_);
  return k;
}

// Runs the whole catalogue, 3 cases each; every property outside `skipped` must run and pass, every
// one in it must be skipped for its reason. The references enforce strict, so unchecked-invalid (a
// rule their profile does not promise) is always skipped.
void expect_skipped(Kernel& kernel, std::map<std::string, std::string> skipped) {
  skipped.emplace("unchecked-invalid", "the kernel's profile strict enforces every rule strict can break on its cases");
  props::CheckContext context{kernel, kernel};
  props::RunOptions options;
  options.cases = 3;
  const auto reports = props::run_properties(context, options);
  ASSERT_EQ(reports.size(), props::catalogue().size());
  std::ostringstream table;
  props::print_reports(table, reports, kernel.name());
  for (const auto& r : reports) {
    EXPECT_TRUE(r.ok()) << table.str();
    if (skipped.count(r.property)) {
      const std::string& why = skipped.at(r.property);
      EXPECT_EQ(r.skipped, why) << r.property;
      EXPECT_EQ(r.cases, 0) << r.property;
      EXPECT_NE(table.str().find(r.property + std::string(24 - r.property.size(), ' ') + "skipped: " + why + "\n"),
                std::string::npos)
          << table.str();
    } else {
      EXPECT_EQ(r.skipped, "") << r.property;
      EXPECT_EQ(r.passed, 3) << r.property << '\n' << table.str();
    }
  }
}

TEST(Runner, SkipsThePoolPropertiesForAKernelWithoutPools) {
  const auto kernel = reference_with("no pools", [](Capabilities& c) {
    c.state_sources = {StateSource::none, StateSource::dense};
  });
  const std::string no_pool = "the kernel takes no state pool",
                    no_verify = "the kernel takes no verify call (neither the index-table nor the scratch form)";
  expect_skipped(*kernel, {{"padding-rows", no_pool}, {"serving-loop", no_pool}, {"verify-commit", no_verify},
                           {"verify-keeps-committed", no_verify}, {"verify-initial-slot", no_verify}});
}

TEST(Runner, SkipsThePrefillPropertiesForADecodeOnlyKernel) {
  const auto kernel = reference_with("decode only", [](Capabilities& c) { c.modes = {Mode::decode}; });
  const std::string no_prefill = "the kernel runs no prefill call",
                    no_verify = "the kernel takes no verify call (neither the index-table nor the scratch form)";
  expect_skipped(*kernel, {{"causality", no_prefill}, {"split", no_prefill}, {"verify-commit", no_verify},
                           {"verify-keeps-committed", no_verify}, {"verify-initial-slot", no_verify}});
}

TEST(Runner, SkipsTheLayoutPropertyForAKernelOfOneLayout) {
  const auto kernel = reference_with("[V,K] only", [](Capabilities& c) { c.layouts = {StateLayout::vk}; });
  expect_skipped(*kernel, {{"layout", "the kernel takes one state layout only (VK)"}});
}

// causality applies to a prefill kernel, but with one token per call no case has a token to change
// after another: every case is discarded, and that is a failure, not a skip.
TEST(Runner, APropertyThatAppliesButDrawsNoCaseFails) {
  auto kernel = make_reference_kernel(Precision::fp32, Algorithm::recurrent);
  props::CheckContext context{*kernel, *kernel};
  context.limits.max_tokens = 1;
  props::RunOptions options;
  options.properties = {"causality"};
  options.cases = 3;
  const auto reports = props::run_properties(context, options);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].skipped, "");
  EXPECT_FALSE(reports[0].ok());
  EXPECT_NE(reports[0].failure.find("gave up"), std::string::npos) << reports[0].failure;
  EXPECT_EQ(props::diagnosis(reports[0]), "gave up: RC_PRE(!candidates.empty())") << reports[0].failure;
  EXPECT_EQ(props::replay_command(reports[0], "ref-fp32"), "") << "no case to replay";
}

// The one-line diagnosis and the replay command that check --results writes are the text output's.
TEST(Runner, AFailureInOneLineAndItsReplayCommand) {
  const auto kernel = transposed_state();
  const auto model = make_reference_kernel(Precision::fp32, Algorithm::recurrent);
  props::CheckContext context{*kernel, *model};
  props::RunOptions options;
  options.properties = {"matches-reference", "untouched"};
  options.cases = 100;
  const auto reports = props::run_properties(context, options);
  ASSERT_EQ(reports.size(), 2u);
  const props::PropertyReport& failed = reports[0];
  ASSERT_FALSE(failed.ok());
  std::ostringstream table;
  props::print_reports(table, reports, "plugin:./x y.so", props::Scale::realistic);
  const std::string line = props::diagnosis(failed);
  EXPECT_EQ(line.rfind("final_state (f32): rel-RMS ", 0), 0u) << line;
  EXPECT_NE(line.find(" worst at "), std::string::npos) << line;
  EXPECT_NE(table.str().find("\n" + line + "\n"), std::string::npos) << table.str();
  const std::string replay = props::replay_command(failed, "plugin:./x y.so", props::Scale::realistic);
  EXPECT_EQ(replay, "kda-oracle check --kernel 'plugin:./x y.so' --scale realistic --properties matches-reference "
                    "--replay '" + failed.replay + "'");
  EXPECT_NE(table.str().find("\nreplay: " + replay + "\n"), std::string::npos) << table.str();
  EXPECT_TRUE(reports[1].ok());
  EXPECT_EQ(props::diagnosis(reports[1]), "");
  EXPECT_EQ(props::replay_command(reports[1], "x"), "");
}

}  // namespace
}  // namespace kda::test
