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

#include "kda/properties/coverage.hpp"

namespace kda::props {

namespace {

// Counts cases as rapidcheck finishes them and redraws one progress line.
class ProgressListener final : public rc::detail::TestListener {
 public:
  ProgressListener(std::ostream* os, std::string name, int total) : os_(os), name_(std::move(name)), total_(total) {}
  void onTestCaseFinished(const rc::detail::CaseDescription&) override {
    ++done_;
    if (os_ && (done_ == total_ || done_ % std::max(1, total_ / 20) == 0))
      *os_ << "\r  " << name_ << ": " << done_ << "/" << total_ << " cases" << std::flush;
  }
  void onShrinkTried(const rc::detail::CaseDescription&, bool accepted) override {
    if (os_ && accepted) *os_ << "\r  " << name_ << ": failed, shrinking (" << ++shrinks_ << " steps)   " << std::flush;
  }
  void onTestFinished(const rc::detail::TestMetadata&, const rc::detail::TestResult&) override {
    if (os_) *os_ << "\r" << std::string(name_.size() + 40, ' ') << "\r" << std::flush;
  }

 private:
  std::ostream* os_;
  std::string name_;
  int total_, done_ = 0, shrinks_ = 0;
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

std::vector<PropertyReport> run_properties(CheckContext& context, const RunOptions& options) {
  std::vector<const Property*> selected;
  if (options.properties.empty())
    for (const auto& p : catalogue()) selected.push_back(&p);
  for (const auto& name : options.properties) {
    const Property* p = find_property(name);
    if (!p) throw std::invalid_argument("unknown property '" + name + "'");
    selected.push_back(p);
  }
  std::unordered_map<std::string, rc::detail::Reproduce> replay;
  if (!options.replay.empty()) replay = rc::detail::configFromString(options.replay).reproduce;

  std::vector<PropertyReport> reports;
  for (const Property* property : selected) {
    if (!replay.empty() && !replay.count(property->name)) continue;
    PropertyReport report;
    report.property = property->name;
    report.seed = property_seed(options.seed, property->name);
    rc::detail::TestParams params;
    params.seed = report.seed;
    params.maxSuccess = options.cases;
    params.maxSize = options.max_size;
    params.maxDiscardRatio = 20;
    rc::detail::TestMetadata metadata;
    metadata.id = property->name;
    metadata.description = property->name;
    ProgressListener listener(options.progress, property->name, options.cases);

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

void print_reports(std::ostream& os, const std::vector<PropertyReport>& reports, const std::string& kernel) {
  os << std::left << std::setw(22) << "property" << std::right << std::setw(8) << "cases" << std::setw(8) << "passed"
     << std::setw(8) << "failed" << std::setw(10) << "seconds" << '\n';
  for (const auto& r : reports)
    os << std::left << std::setw(22) << r.property << std::right << std::setw(8) << r.cases << std::setw(8) << r.passed
       << std::setw(8) << r.failed << std::setw(10) << std::fixed << std::setprecision(2) << r.seconds << '\n';
  for (const auto& r : reports) {
    if (!r.failure.empty()) {
      os << "\nFAILED " << r.property << " (seed " << r.seed << ")\n" << r.failure << '\n';
      if (!r.replay.empty())
        os << "replay: kda-oracle check --kernel '" << kernel << "' --properties " << r.property << " --replay '"
           << r.replay << "'\n";
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
