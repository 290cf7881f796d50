#include "campaign_units.hpp"

#include <algorithm>

#include "kda/properties/catalogue.hpp"

namespace kda::cli {

std::string Unit::id() const {
  const std::string base = std::string(name_of(type)) + "/" + implementation->name;
  return type == UnitType::check ? base + "/" + scale + "/" + property : base;
}

std::filesystem::path Unit::file(const std::filesystem::path& results_dir) const {
  return results_dir / "units" / (id() + ".json");
}

int CaseCounts::for_unit(ImplementationKind kind, const std::string& scale) const {
  const bool recurrent_kind = kind == ImplementationKind::recurrent;
  if (scale == "small") return recurrent_kind ? recurrent : chunked;
  return recurrent_kind ? realistic_recurrent : realistic_chunked;
}

std::vector<Unit> enumerate_units(const Plan& plan, const UnitSelection& selection) {
  std::vector<std::string> properties;  // a property named twice runs once
  for (const auto& p : selection.properties)
    if (std::find(properties.begin(), properties.end(), p) == properties.end()) properties.push_back(p);
  if (properties.empty())
    for (const auto& p : props::catalogue()) properties.push_back(p.name);
  std::vector<Unit> units;
  const auto& chosen = selection.implementations;
  for (const auto& impl : plan.implementations) {
    if (!chosen.empty() && std::find(chosen.begin(), chosen.end(), impl.name) == chosen.end()) continue;
    for (const auto& scale : selection.scales)
      for (const auto& property : properties)
        units.push_back({UnitType::check, &impl, scale, property, selection.cases.for_unit(impl.kind, scale)});
    if (selection.golden) units.push_back({UnitType::golden, &impl, {}, {}, 0});
    if (impl.bench) units.push_back({UnitType::speed, &impl, {}, {}, 0});
  }
  return units;
}

std::vector<Unit> units_of_shard(const std::vector<Unit>& units, const props::Shard& shard) {
  std::vector<Unit> mine;
  for (std::size_t i = shard.index; i < units.size(); i += shard.count) mine.push_back(units[i]);
  return mine;
}

std::string_view name_of(UnitType type) {
  switch (type) {
    case UnitType::check: return "check";
    case UnitType::golden: return "golden";
    case UnitType::speed: return "speed";
  }
  return "?";
}

}  // namespace kda::cli
