// A campaign's golden unit: the golden suite, generated once into results_dir/golden/, verified against
// one implementation (its golden_kernel).
#include <chrono>

#include "campaign_unit_run.hpp"
#include "kda/golden/generate.hpp"
#include "kda/golden/verify.hpp"
#include "kda/properties/shell_quote.hpp"

namespace kda::cli {

namespace {

// results_dir/golden/<suite>.h5, generated unless present (written aside and renamed, so a run stopped
// halfway leaves no partial file behind under the name).
std::filesystem::path golden_file(const UnitContext& context) {
  const auto path = context.results_dir / "golden" / (context.golden_suite + ".h5");
  if (std::filesystem::exists(path)) return path;
  const golden::Suite* suite = golden::find_suite(context.golden_suite);
  if (!suite) throw std::runtime_error("unknown golden suite '" + context.golden_suite + "'");
  std::filesystem::create_directories(path.parent_path());
  auto partial = path;
  partial += ".partial";
  golden::generate(*suite, partial, {});
  std::filesystem::rename(partial, path);
  return path;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string text;
  for (const auto& line : lines) text += (text.empty() ? "" : "; ") + line;
  return text;
}

}  // namespace

Json run_golden_unit(const Unit& unit, const UnitContext& context) {
  const auto path = golden_file(context);
  registry::KernelUnderTest kut = start_kernel(unit.implementation->golden_kernel, context);
  const golden::File file = golden::File::open(path);
  const auto start = std::chrono::steady_clock::now();
  const auto reports = golden::verify(file, *kut.kernel);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  int passed = 0, failed = 0, skipped = 0;
  Json failures = Json::array(), skips = Json::array();
  for (const auto& r : reports) {
    if (r.outcome == golden::Outcome::passed) ++passed;
    if (r.outcome == golden::Outcome::skipped) ++skipped, skips.push_back({{"case", r.name}, {"reason", joined(r.notes)}});
    if (r.outcome == golden::Outcome::failed) {
      ++failed;
      std::vector<std::string> why = r.notes;
      for (const auto& v : r.outputs)
        if (!v.passed()) why.push_back(v.describe());
      why.insert(why.end(), r.changes.begin(), r.changes.end());
      failures.push_back({{"case", r.name}, {"why", joined(why)}});
    }
  }
  Json j = unit_header(unit, context);
  j["adapter"] = kut.kernel->name();
  j["suite"] = context.golden_suite;
  j["status"] = failed ? "fail" : passed ? "pass" : "skipped";
  j["reason"] = failed || passed ? Json() : Json("every case of the suite is outside the kernel's capabilities");
  j["cases"] = reports.size();
  j["passed"] = passed;
  j["failed"] = failed;
  j["skipped"] = skipped;
  j["seconds"] = seconds;
  j["failures"] = failures;
  j["skips"] = skips;
  j["replay"] = "kda-oracle golden generate --suite " + context.golden_suite + " --out " + context.golden_suite +
                ".h5 && kda-oracle golden verify --golden " + context.golden_suite + ".h5 --kernel " +
                props::shell_quote(unit.implementation->golden_kernel);
  return j;
}

}  // namespace kda::cli
