#include "report_results.hpp"

#include <algorithm>
#include <fstream>
#include <stdexcept>

namespace kda::cli {

namespace {

Json read_json(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw std::runtime_error("cannot read " + file.string());
  try {
    return Json::parse(in);
  } catch (const Json::parse_error& e) {
    throw std::runtime_error(file.string() + ": not JSON: " + e.what());
  }
}

}  // namespace

Json without_timings(const Json& json) {
  static const std::vector<std::string> timing_keys{"seconds", "environment", "median_seconds", "tokens_per_second",
                                                    "timing"};
  if (json.is_array()) {
    Json out = Json::array();
    for (const auto& item : json) out.push_back(without_timings(item));
    return out;
  }
  if (!json.is_object()) return json;
  Json out = Json::object();
  for (const auto& [key, value] : json.items())
    if (std::find(timing_keys.begin(), timing_keys.end(), key) == timing_keys.end()) out[key] = without_timings(value);
  return out;
}

MergedResults merge_results(const std::vector<std::filesystem::path>& results_dirs) {
  MergedResults merged;
  std::filesystem::path campaign_file;
  for (const auto& dir : results_dirs) {
    const auto file = dir / "campaign.json";
    if (!std::filesystem::exists(file))
      throw std::runtime_error(dir.string() + " is no campaign results folder (it has no campaign.json)");
    Json campaign = read_json(file);
    if (campaign_file.empty()) {
      merged.campaign = std::move(campaign), campaign_file = file;
    } else if (campaign != merged.campaign) {
      throw std::runtime_error(file.string() + " and " + campaign_file.string() +
                               " describe different campaigns (plan or settings differ): they cannot be merged");
    }
    if (!std::filesystem::exists(dir / "units")) continue;
    std::vector<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(dir / "units"))
      if (entry.is_regular_file() && entry.path().extension() == ".json") files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    for (const auto& unit_file : files) {
      Json unit = read_json(unit_file);
      if (!unit.is_object() || unit.value("schema", "") != "kda-oracle/campaign-unit" || !unit.contains("unit"))
        throw std::runtime_error(unit_file.string() + " is no campaign unit (schema kda-oracle/campaign-unit)");
      const std::string id = unit["unit"].get<std::string>();
      const auto [it, added] = merged.units.try_emplace(id, UnitResult{unit, unit_file});
      if (!added && without_timings(it->second.json) != without_timings(unit))
        throw std::runtime_error("unit " + id + " has conflicting results in " + it->second.file.string() + " and " +
                                 unit_file.string());
    }
  }
  return merged;
}

}  // namespace kda::cli
