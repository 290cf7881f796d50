#pragma once
// Shared by the tests that run catalogue properties (tests/catalogue: every kernel of the registry):
// a fixed seed, and KDA_PROPERTY_CASES to scale the run (default 100 cases per property).
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "kda/properties/runner.hpp"
#include "kda/properties/shell_quote.hpp"

namespace kda::test {

inline int cases_per_property() {
  const char* env = std::getenv("KDA_PROPERTY_CASES");
  return env ? std::atoi(env) : 100;
}

inline std::vector<std::string> property_names() {
  std::vector<std::string> names;
  for (const auto& p : props::catalogue()) names.push_back(p.name);
  return names;
}

// "matches-reference" -> "matches_reference": a GoogleTest parameter name.
inline std::string test_name(std::string property) {
  for (auto& c : property)
    if (c == '-') c = '_';
  return property;
}

// Runs exactly one property (options.properties names it) and returns its report.
inline props::PropertyReport run_property(Kernel& kernel, Kernel& model, const props::RunOptions& options) {
  props::CheckContext context{kernel, model};
  auto reports = props::run_properties(context, options);
  EXPECT_EQ(reports.size(), 1u);
  return reports.empty() ? props::PropertyReport{} : reports.front();
}

// Runs one property and expects every case to pass; a failure prints the table, the shrunk case and
// the command that replays the run. print_table also shows the table on success. A property the kernel
// cannot take (its needs) skips the test, with the reason.
inline void expect_property_holds(Kernel& kernel, Kernel& model, const std::string& property, std::uint64_t seed,
                                  bool print_table = false) {
  props::RunOptions options;
  options.properties = {property};
  options.cases = cases_per_property();
  options.seed = seed;
  const props::PropertyReport report = run_property(kernel, model, options);
  if (!report.skipped.empty()) GTEST_SKIP() << report.skipped;
  std::ostringstream table;
  props::print_reports(table, {report}, kernel.name());
  if (print_table) std::cout << table.str();
  EXPECT_TRUE(report.ok()) << table.str() << "replay: kda-oracle check --kernel " << props::shell_quote(kernel.name())
                           << " --seed " << seed << " --cases " << options.cases;
  EXPECT_EQ(report.passed, options.cases);
}

}  // namespace kda::test
