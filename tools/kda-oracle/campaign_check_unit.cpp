// A campaign's check unit: one property of the catalogue against one implementation at one scale,
// its result in the shape of one entry of `kda-oracle check --results` (status, reason, cases, seconds,
// failure: diagnosis, replay, case_file relative to the unit's JSON), run in this process.
#include <cctype>
#include <sstream>

#include "campaign_unit_run.hpp"
#include "kda/golden/case_io.hpp"
#include "kda/properties/runner.hpp"
#include "kda/properties/shell_quote.hpp"
#include "kda/reference.hpp"

namespace kda::cli {

namespace {

// The shrunk failing case as a golden-schema HDF5 case with the fp64 expected outputs (as `check
// --save-failures` saves it), under results_dir/cases/.
std::filesystem::path save_failing_case(const Unit& unit, const UnitContext& context, const Problem& problem,
                                        std::uint64_t seed) {
  std::string stem = unit.id();
  for (char& c : stem)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
  const auto path = context.results_dir / "cases" / (stem + ".h5");
  std::filesystem::create_directories(path.parent_path());
  golden::Case c{deep_copy(problem),
                 {{"property", unit.property}, {"kernel", unit.implementation->kernel}, {"seed", std::to_string(seed)}},
                 {},
                 {},
                 {}};
  if (validate(problem, profile_strict()).empty()) c.expected = run_reference<double>(problem, Algorithm::recurrent);
  auto file = golden::File::create(path, {{"purpose", "a failing case saved by kda-oracle campaign"}});
  file.write_case(unit.property, c);
  file.close();
  return path;
}

// The failure's message in one line: rapidcheck's source location and assertion lines skipped, a
// heading ending in ':' joined with its first item, at most 400 characters.
std::string diagnosis_of(const std::string& failure) {
  std::vector<std::string> lines;
  std::istringstream in(failure);
  for (std::string line; std::getline(in, line);) {
    const auto first = line.find_first_not_of(' ');
    if (first == std::string::npos || line.rfind("RC_", first) == first) continue;
    if (line.back() == ':' && line.find(".cpp:") != std::string::npos) continue;  // file.cpp:58:
    lines.push_back(line.substr(first));
  }
  if (lines.empty()) return "failed";
  std::string text = lines[0];
  if (text.back() == ':' && lines.size() > 1) text += " " + lines[1];
  return text.size() > 400 ? text.substr(0, 397) + "..." : text;
}

}  // namespace

Json run_check_unit(const Unit& unit, const UnitContext& context) {
  registry::KernelUnderTest kut = start_kernel(unit.implementation->kernel, context);
  const props::Scale scale = props::parse_scale(unit.scale);
  props::CheckContext check{*kut.kernel, *kut.model, props::limits_for(scale)};
  props::RunOptions run;
  run.properties = {unit.property};
  run.cases = unit.cases;
  run.seed = context.seed;
  std::filesystem::path case_file;
  run.on_failing_case = [&](const std::string&, const Problem& problem) {
    case_file = save_failing_case(unit, context, problem, props::property_seed(context.seed, unit.property));
  };
  const props::PropertyReport report = props::run_properties(check, run).at(0);

  Json j = unit_header(unit, context);
  j["adapter"] = kut.kernel->name();
  j["precision_model"] = kut.model->name();
  j["status"] = !report.skipped.empty() ? "skipped" : report.ok() ? "pass" : "fail";
  j["reason"] = report.skipped.empty() ? Json() : Json(report.skipped);
  j["cases"] = report.cases;
  j["seconds"] = report.seconds;
  j["failure"] = Json();
  if (!report.ok()) {
    Json failure;
    failure["diagnosis"] = !report.failure.empty() ? diagnosis_of(report.failure)
                                                    : "no case in category '" + report.missing_categories.at(0) +
                                                          "' in " + std::to_string(report.cases) + " cases";
    failure["detail"] = report.failure;
    failure["replay"] = report.replay.empty()
                            ? Json()
                            : Json("kda-oracle check --kernel " + props::shell_quote(unit.implementation->kernel) +
                                   (scale == props::Scale::small ? "" : " --scale " + unit.scale) + " --properties " +
                                   unit.property + " --replay " + props::shell_quote(report.replay));
    const auto unit_dir = unit.file(context.results_dir).parent_path();
    failure["case_file"] = case_file.empty() ? Json() : Json(std::filesystem::relative(case_file, unit_dir).string());
    failure["plot"] = Json();
    j["failure"] = failure;
  }
  return j;
}

}  // namespace kda::cli
