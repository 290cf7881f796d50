// Verifying every case of a golden file.
#include <algorithm>

#include "kda/golden/verify.hpp"

namespace kda::golden {

namespace {

Case read(const File& golden, const std::string& name) {
  return golden.read_case(name, ViewCheck::inside_buffers_unless_contract);
}

}  // namespace

std::vector<CaseReport> verify(const File& golden, Kernel& kernel, const Progress& progress, ResultsFile* save) {
  const auto names = golden.case_names();
  std::vector<CaseReport> reports;
  for (const auto& name : names) {
    reports.push_back(verify_case(name, read(golden, name), kernel, save));
    if (progress) progress(reports.size(), names.size(), name);
  }
  return reports;
}

std::vector<CaseReport> verify(const File& golden, const ResultsFile& results, const Progress& progress) {
  const auto names = golden.case_names();
  std::vector<CaseReport> reports;
  for (const auto& name : names) {
    if (!results.has_case(name)) {
      reports.push_back({name, Outcome::failed, {}, {}, {}, {"the results file has no result for this case"}, {}});
    } else {
      const std::string label = "results file '" + results.path().string() + "', case '" + name + "'";
      reports.push_back(verify_case(name, read(golden, name), results.read(name), label));
    }
    if (progress) progress(reports.size(), names.size(), name);
  }
  for (const auto& name : results.case_names())
    if (!std::binary_search(names.begin(), names.end(), name))
      reports.push_back({name, Outcome::failed, {}, {}, {}, {"the golden file has no case of this name"}, {}});
  return reports;
}

}  // namespace kda::golden
