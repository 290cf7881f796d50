#pragma once
// The units of work of a campaign, in one deterministic order: for each implementation of the plan,
// a check unit per scale and property, then one golden unit (the golden suite verified), then one
// speed unit when the plan asks for its timing. Each unit's result is one JSON file under
// RESULTS_DIR/units/<id>.json; a shard of n takes the units whose index is its own modulo n.
#include <filesystem>
#include <string>
#include <vector>

#include "campaign_plan.hpp"
#include "kda/properties/sharding.hpp"

namespace kda::cli {

enum class UnitType { check, golden, speed };

struct Unit {
  UnitType type = UnitType::check;
  const Implementation* implementation = nullptr;
  std::string scale;     // check units: small, realistic or stress
  std::string property;  // check units
  int cases = 0;         // check units: successful cases to run

  // "check/<implementation>/<scale>/<property>", "golden/<implementation>", "speed/<implementation>".
  std::string id() const;
  std::filesystem::path file(const std::filesystem::path& results_dir) const;  // units/<id>.json
};

// Successful cases per property, by the implementation's kind and the scale (realistic counts also
// serve stress).
struct CaseCounts {
  int recurrent = 100, chunked = 20;                      // small scale
  int realistic_recurrent = 2, realistic_chunked = 1;     // realistic and stress scales
  int for_unit(ImplementationKind kind, const std::string& scale) const;
};

struct UnitSelection {
  std::vector<std::string> implementations;  // empty: every implementation of the plan
  std::vector<std::string> scales{"small", "realistic"};
  std::vector<std::string> properties;  // empty: the whole catalogue
  CaseCounts cases;
  bool golden = true;
};

std::vector<Unit> enumerate_units(const Plan& plan, const UnitSelection& selection);
// Units i with i % shard.count == shard.index, in order.
std::vector<Unit> units_of_shard(const std::vector<Unit>& units, const props::Shard& shard);

std::string_view name_of(UnitType type);

}  // namespace kda::cli
