#pragma once
// The results of one or more campaign folders (RESULTS_DIR/campaign.json and units/**/*.json), merged:
// a unit found twice is kept once when both copies say the same (timings and environment aside),
// and is an error naming both files when they differ; so are two folders of different campaigns.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "campaign_unit_run.hpp"

namespace kda::cli {

struct UnitResult {
  Json json;
  std::filesystem::path file;  // where it was read: case files are relative to its folder
};

struct MergedResults {
  Json campaign;                             // the campaign's plan and settings (campaign.json)
  std::map<std::string, UnitResult> units;   // by unit id
};

MergedResults merge_results(const std::vector<std::filesystem::path>& results_dirs);

// The JSON without what differs between two runs of the same unit: seconds, timings, environment.
Json without_timings(const Json& json);

}  // namespace kda::cli
