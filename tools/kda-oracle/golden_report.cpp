#include "golden_report.hpp"

#include <algorithm>
#include <string>

namespace kda::cli {

namespace {

void row(std::FILE* out, int width, const std::string& name, const char* output, const char* metric,
         const std::string& value, const std::string& bound, golden::Outcome outcome) {
  std::fprintf(out, "%-*s  %-14s %-8s %-22s %-10s %s\n", width, name.c_str(), output, metric, value.c_str(),
               bound.c_str(), std::string(golden::name_of(outcome)).c_str());
}

std::string scientific(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2e", x);
  return text;
}

// Where a failing output is worst, and how far off.
std::string worst_of(const props::TensorVerdict& t) {
  std::string s = t.tensor + ": max abs error " + scientific(t.max_abs);
  if (t.non_finite) s += ", NaN or Inf where the expected value is finite";
  if (t.worst_element >= 0) {
    char values[96];
    std::snprintf(values, sizeof values, " (got %.8g, want %.8g)", t.worst_got, t.worst_want);
    s += ", worst at " + t.worst.describe() + values;
  }
  return s;
}

}  // namespace

bool print_report(std::FILE* out, const std::vector<golden::CaseReport>& reports) {
  int width = 4;
  for (const auto& r : reports) width = std::max(width, static_cast<int>(r.name.size()));
  std::fprintf(out, "%-*s  %-14s %-8s %-22s %-10s %s\n", width, "case", "output", "metric", "value", "bound", "verdict");
  std::size_t counts[3] = {0, 0, 0};
  for (const auto& r : reports) {
    ++counts[static_cast<int>(r.outcome)];
    std::vector<std::string> notes = r.notes;
    if (r.expected_rule) {
      row(out, width, r.name, "(contract)", "rule", std::string(name_of(*r.expected_rule)), "", r.outcome);
    } else if (r.outputs.empty()) {
      row(out, width, r.name, "-", "-", "-", "-", r.outcome);
    }
    for (const auto& t : r.outputs) {
      const auto verdict = t.passed() ? golden::Outcome::passed : golden::Outcome::failed;
      row(out, width, r.name, t.tensor.c_str(), "rel_rms", scientific(t.rel_rms), scientific(t.bound), verdict);
      if (!t.passed()) notes.push_back(worst_of(t));
    }
    if (!r.outputs.empty()) {
      const auto verdict = r.changes.empty() ? golden::Outcome::passed : golden::Outcome::failed;
      row(out, width, r.name, "(untouched)", "regions", std::to_string(r.changes.size()) + " changed", "0", verdict);
      notes.insert(notes.end(), r.changes.begin(), r.changes.end());
    }
    if (!r.call.empty()) std::fprintf(out, "    %s\n", r.call.c_str());
    if (r.outcome != golden::Outcome::passed)
      for (const auto& note : notes) std::fprintf(out, "    %s\n", note.c_str());
  }
  std::fprintf(out, "summary: %zu cases, %zu passed, %zu failed, %zu skipped\n", reports.size(), counts[0], counts[1],
               counts[2]);
  return counts[1] == 0;
}

}  // namespace kda::cli
