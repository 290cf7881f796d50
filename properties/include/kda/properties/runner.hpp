#pragma once
// Runs catalogue properties through rapidcheck with explicit parameters: a seed per property derived
// from the run's seed, a progress line, a report per property (cases, passed, failed, seconds,
// coverage) and, on a failure, the shrunk case with the string that replays exactly that case.
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "kda/properties/catalogue.hpp"

namespace kda::props {

// Where one property's run stands: `passed` of `total` cases so far; once a case failed, `shrinks`
// accepted shrink steps; `finished` once, at the property's end.
struct PropertyProgress {
  std::string_view property;
  int passed = 0, total = 0, shrinks = 0;
  bool failed = false, finished = false;
};

struct RunOptions {
  std::vector<std::string> properties;  // empty: the whole catalogue
  int cases = 100;                      // successful cases per property
  std::uint64_t seed = 1;
  int max_size = 100;                   // rapidcheck size ceiling (0..100 scales the generators)
  std::string replay;                   // "reproduce=..." printed by a failure: replays that case
  bool check_coverage = true;           // fail a property whose run missed an expected category
  // Called after every passed case, every accepted shrink step and at each property's end; empty: quiet.
  std::function<void(const PropertyProgress&)> progress{};
  // Receives each failing property's shrunk case (replayed once to capture it), e.g. to save it
  // as an HDF5 case; empty: not replayed.
  std::function<void(const std::string& property, const Problem& problem)> on_failing_case{};
};

struct PropertyReport {
  std::string property;
  int cases = 0;   // cases run (successes, plus the failing one)
  int passed = 0;
  int failed = 0;
  double seconds = 0;
  std::uint64_t seed = 0;
  std::string failure;  // the message, the shrunk counterexample
  std::string replay;   // pass back as RunOptions::replay (kda-oracle check --replay)
  std::string skipped;  // why the kernel cannot take the property's cases (its needs); empty: it ran
  std::map<std::string, int> coverage;
  std::vector<std::string> missing_categories;
  bool ok() const { return failed == 0 && missing_categories.empty(); }  // a skipped property is not failed
};

// The seed property `name` runs with when the run's seed is `seed`.
std::uint64_t property_seed(std::uint64_t seed, std::string_view name);

// Throws std::invalid_argument where the options cannot run: an unknown property, fewer than one case, a
// size ceiling outside 0..100, a replay string that names no failing case or one of a property the run
// does not select. run_properties checks them first too; a caller checks them before it starts a kernel.
void validate(const RunOptions& options);

// Each selected property that applies to the context's kernel (Property::needs) runs; the others are
// reported skipped, with the reason. A property that applies and draws no case fails ("gave up").
std::vector<PropertyReport> run_properties(CheckContext& context, const RunOptions& options);

// property | cases | passed | failed | seconds ("skipped: <why>" instead for a skipped one), then each failure with the command that replays
// exactly its shrunk case (`kernel` is the --kernel argument that names the kernel under test; `scale` the
// scale whose limits drew the cases, named in the command unless small).
// `around`: the call file the cases were drawn around (check --around), named in the command too.
void print_reports(std::ostream& os, const std::vector<PropertyReport>& reports, const std::string& kernel = "NAME",
                   Scale scale = Scale::small, const std::string& around = "");
void print_coverage(std::ostream& os, const std::vector<PropertyReport>& reports);

// The command line that replays a failed property's shrunk case, as print_reports prints it; empty when the
// failure has no replay string (a property that gave up, a missed coverage category). `around` as for
// print_reports.
std::string replay_command(const PropertyReport& report, const std::string& kernel, Scale scale = Scale::small,
                           const std::string& around = "");
// A failed property in one line: the first line of its message (for a mismatch, the worst tensor with
// its worst element; the assertion, for one without a message: "gave up: RC_PRE(...)"), or the coverage
// category it missed; empty for a property that did not fail.
std::string diagnosis(const PropertyReport& report);

}  // namespace kda::props
