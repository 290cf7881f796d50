#include "check_results.hpp"

#include <unistd.h>

#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <system_error>

namespace kda::cli {

namespace {

using json = nlohmann::ordered_json;  // keys in the order the schema lists them

std::string utc_iso(std::chrono::system_clock::time_point t) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(t);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

json null_or(const std::string& text) { return text.empty() ? json(nullptr) : json(text); }

// The saved case's path relative to the folder of the results file, so the two can move together.
std::string relative_to_results(const std::filesystem::path& results, const std::filesystem::path& case_file) {
  const auto folder = std::filesystem::absolute(results).parent_path();
  return std::filesystem::absolute(case_file)
      .lexically_normal()
      .lexically_relative(folder.lexically_normal())
      .generic_string();
}

json property_entry(const std::filesystem::path& file, const CheckRun& run, const props::PropertyReport& r) {
  const bool skipped = !r.skipped.empty();
  json entry{{"property", r.property},
             {"status", skipped ? "skipped" : r.ok() ? "pass" : "fail"},
             {"reason", null_or(r.skipped)},
             {"cases", r.cases},
             {"seconds", r.seconds},
             {"failure", nullptr}};
  if (!skipped && !r.ok()) {
    const auto saved = run.case_files.find(r.property);
    entry["failure"] = {{"diagnosis", props::diagnosis(r)},
                        {"replay", null_or(props::replay_command(r, run.kernel, run.scale, run.around))},
                        {"case_file", saved == run.case_files.end() ? json(nullptr)
                                                                     : json(relative_to_results(file, saved->second))},
                        {"plot", nullptr}};
  }
  return entry;
}

}  // namespace

void write_check_results(const std::filesystem::path& file, const CheckRun& run,
                         const std::vector<props::PropertyReport>& reports) {
  json doc{{"schema", "kda-oracle/check-results"},
           {"version", 1},
           {"kernel", run.kernel},
           {"adapter", run.adapter},
           {"scale", std::string(props::name_of(run.scale))},
           {"seed", run.seed},
           {"cases", run.cases},
           {"shard", run.shard ? json(std::to_string(run.shard->index) + "/" + std::to_string(run.shard->count))
                               : json(nullptr)},
           {"precision_model", run.precision_model},
           {"started", utc_iso(run.started)},
           {"seconds", run.seconds},
           {"properties", json::array()}};
  for (const auto& r : reports) doc["properties"].push_back(property_entry(file, run, r));

  if (const auto folder = file.parent_path(); !folder.empty()) std::filesystem::create_directories(folder);
  auto temporary = file;
  temporary += ".tmp-" + std::to_string(::getpid());
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << doc.dump(2) << '\n';
    out.close();
    if (!out) throw std::runtime_error("cannot write the results file " + temporary.string());
  }
  std::error_code error;
  std::filesystem::rename(temporary, file, error);
  if (error) {
    std::error_code ignored;
    std::filesystem::remove(temporary, ignored);
    throw std::runtime_error("cannot write the results file " + file.string() + ": " + error.message());
  }
}

}  // namespace kda::cli
