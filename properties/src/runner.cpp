#include "kda/properties/runner.hpp"

#include <rapidcheck.h>
#include <rapidcheck/detail/Configuration.h>
#include <rapidcheck/detail/TestListener.h>

#include <chrono>
#include <iomanip>
#include <optional>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>

#include "kda/properties/coverage.hpp"

namespace kda::props {

namespace {

// Reports a property's passed cases and shrink steps as rapidcheck finishes them (discarded cases, which
// a property's preconditions reject, are not counted).
class ProgressListener final : public rc::detail::TestListener {
 public:
  // report: the caller's callback itself, not a copy (a copy per property would restart its state); null: quiet.
  ProgressListener(const std::function<void(const PropertyProgress&)>* report, std::string_view name, int total)
      : report_(report && *report ? report : nullptr), progress_{.property = name, .total = total} {}
  void onTestCaseFinished(const rc::detail::CaseDescription& description) override {
    if (description.result.type == rc::detail::CaseResult::Type::Success) ++progress_.passed, notify();
    if (description.result.type == rc::detail::CaseResult::Type::Failure) progress_.failed = true, notify();
  }
  void onShrinkTried(const rc::detail::CaseDescription&, bool accepted) override {
    if (accepted) ++progress_.shrinks, notify();
  }
  void onTestFinished(const rc::detail::TestMetadata&, const rc::detail::TestResult&) override {
    progress_.finished = true;
    notify();
  }

 private:
  void notify() const {
    if (report_) (*report_)(progress_);
  }
  const std::function<void(const PropertyProgress&)>* report_;
  PropertyProgress progress_;
};

std::string counterexample(const rc::detail::FailureResult& f) {
  std::ostringstream s;
  s << f.description;
  for (const auto& [type, value] : f.counterExample) s << "\n  case: " << value;
  return s.str();
}

// Replays the shrunk case once with a hook on the context that keeps its problem.
void capture_failing_case(CheckContext& context, const Property& property, const rc::detail::TestParams& params,
                          const std::unordered_map<std::string, rc::detail::Reproduce>& reproduce,
                          const RunOptions& options) {
  std::optional<Problem> captured;
  CheckContext replaying = context;
  replaying.on_case = [&](const Problem& p) { captured = deep_copy(p); };
  rc::detail::TestMetadata metadata;
  metadata.id = property.name;
  ProgressListener quiet(nullptr, property.name, 1);
  rc::detail::checkProperty(rc::detail::toProperty([&] { property.body(replaying); }), metadata, params, quiet,
                            reproduce);
  if (captured) options.on_failing_case(property.name, *captured);
}

}  // namespace

std::uint64_t property_seed(std::uint64_t seed, std::string_view name) {
  std::uint64_t h = 1469598103934665603ull ^ seed;  // FNV-1a over the name, keyed by the seed
  for (char c : name) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return h;
}

namespace {
std::unordered_map<std::string, rc::detail::Reproduce> replayed_cases(const std::string& replay) {
  if (replay.empty()) return {};
  std::unordered_map<std::string, rc::detail::Reproduce> cases;
  try {
    cases = rc::detail::configFromString(replay).reproduce;
  } catch (const std::exception& e) {
    throw std::invalid_argument("the replay string '" + replay + "' cannot be read: " + e.what());
  }
  if (cases.empty())
    throw std::invalid_argument("the replay string '" + replay +
                                "' names no failing case (pass the 'reproduce=...' string a failure printed)");
  return cases;
}

std::vector<const Property*> selected_properties(const RunOptions& options) {
  std::vector<const Property*> selected;
  if (options.properties.empty())
    for (const auto& p : catalogue()) selected.push_back(&p);
  for (const auto& name : options.properties) {
    const Property* p = find_property(name);
    if (!p) throw std::invalid_argument("unknown property '" + name + "'");
    selected.push_back(p);
  }
  return selected;
}
}  // namespace

void validate(const RunOptions& options) {
  const auto selected = selected_properties(options);
  if (options.cases < 1)
    throw std::invalid_argument("cases per property: " + std::to_string(options.cases) + ", need at least 1");
  if (options.max_size < 0 || options.max_size > 100)
    throw std::invalid_argument("size ceiling " + std::to_string(options.max_size) + " outside 0..100");
  for (const auto& [name, reproduce] : replayed_cases(options.replay)) {
    bool in_run = false;
    for (const Property* p : selected) in_run |= p->name == name;
    if (!in_run)
      throw std::invalid_argument("the replay string is a case of property '" + name +
                                  "', which this run does not select");
  }
}

std::vector<PropertyReport> run_properties(CheckContext& context, const RunOptions& options) {
  validate(options);
  const auto selected = selected_properties(options);
  const auto replay = replayed_cases(options.replay);

  std::vector<PropertyReport> reports;
  for (const Property* property : selected) {
    if (!replay.empty() && !replay.count(property->name)) continue;
    PropertyReport report;
    report.property = property->name;
    report.seed = property_seed(options.seed, property->name);
    try {
      report.skipped = inapplicable(property->needs, context.kernel, context.limits);
    } catch (const std::invalid_argument&) {
      // The kernel takes no valid case at all: the property runs, and fails saying so.
    }
    if (!report.skipped.empty()) {
      reports.push_back(std::move(report));
      continue;
    }
    rc::detail::TestParams params;
    params.seed = report.seed;
    params.maxSuccess = options.cases;
    params.maxSize = options.max_size;
    params.maxDiscardRatio = 20;
    rc::detail::TestMetadata metadata;
    metadata.id = property->name;
    metadata.description = property->name;
    ProgressListener listener(&options.progress, property->name, options.cases);

    const auto start = std::chrono::steady_clock::now();
    const auto result =
        rc::detail::checkProperty(rc::detail::toProperty([&] { property->body(context); }), metadata, params, listener,
                                  replay);
    report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    if (result.is<rc::detail::SuccessResult>()) {
      const auto* ok = &result.get<rc::detail::SuccessResult>();
      report.cases = report.passed = ok->numSuccess;
      report.coverage = category_counts(ok->distribution);
    } else if (result.is<rc::detail::FailureResult>()) {
      const auto* fail = &result.get<rc::detail::FailureResult>();
      report.passed = fail->numSuccess;
      report.failed = 1;
      report.cases = report.passed + 1;
      report.failure = counterexample(*fail);
      rc::detail::Configuration config;
      config.reproduce[property->name] = fail->reproduce;
      report.replay = rc::detail::configToMinimalString(config);
      if (options.on_failing_case) capture_failing_case(context, *property, params, config.reproduce, options);
    } else {
      std::ostringstream why;
      if (result.is<rc::detail::GaveUpResult>()) {
        const auto* gave_up = &result.get<rc::detail::GaveUpResult>();
        report.passed = gave_up->numSuccess;
        why << "gave up: " << gave_up->description;
      } else if (result.is<rc::detail::Error>()) {
        const auto* error = &result.get<rc::detail::Error>();
        why << "error: " << error->description;
      }
      report.failed = 1;
      report.cases = report.passed + 1;
      report.failure = why.str();
    }
    // Coverage is judged on full runs of the properties that draw arbitrary valid cases.
    const bool draws_valid_cases = property->name == "matches-reference" || property->name == "untouched";
    if (options.check_coverage && draws_valid_cases && report.failed == 0 && replay.empty() && options.cases >= 100)
      for (const auto& category : expected_categories(context.kernel))
        if (!report.coverage.count(category)) report.missing_categories.push_back(category);
    reports.push_back(std::move(report));
  }
  return reports;
}

constexpr int kNameWidth = 24;  // the longest property name and two spaces

void print_reports(std::ostream& os, const std::vector<PropertyReport>& reports, const std::string& kernel, Scale scale,
                   const std::string& around) {
  os << std::left << std::setw(kNameWidth) << "property" << std::right << std::setw(8) << "cases" << std::setw(8) << "passed"
     << std::setw(8) << "failed" << std::setw(10) << "seconds" << '\n';
  for (const auto& r : reports) {
    os << std::left << std::setw(kNameWidth) << r.property;
    if (!r.skipped.empty()) {
      os << "skipped: " << r.skipped << '\n';
      continue;
    }
    os << std::right << std::setw(8) << r.cases << std::setw(8) << r.passed << std::setw(8) << r.failed
       << std::setw(10) << std::fixed << std::setprecision(2) << r.seconds << '\n';
  }
  for (const auto& r : reports) {
    if (!r.failure.empty()) {
      os << "\nFAILED " << r.property << " (seed " << r.seed << ")\n" << r.failure << '\n';
      if (!r.replay.empty()) os << "replay: " << replay_command(r, kernel, scale, around) << '\n';
    }
    for (const auto& c : r.missing_categories)
      os << "\nFAILED " << r.property << ": no case in category '" << c << "' in " << r.cases << " cases\n";
  }
}

void print_coverage(std::ostream& os, const std::vector<PropertyReport>& reports) {
  for (const auto& r : reports) {
    if (r.coverage.empty()) continue;
    os << "coverage of " << r.property << " (" << r.cases << " cases):\n";
    for (const auto& [category, n] : r.coverage)
      os << "  " << std::left << std::setw(26) << category << std::right << std::setw(6) << n << "  " << std::fixed
         << std::setprecision(1) << 100.0 * n / std::max(1, r.cases) << "%\n";
  }
}

}  // namespace kda::props
