// What every campaign unit shares: starting its kernel, the JSON header, the not-run result.
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <iostream>

#include "campaign_unit_run.hpp"

namespace kda::cli {

namespace {
std::string utc_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

std::string host_name() {
  char name[256] = {};
  return gethostname(name, sizeof name - 1) == 0 ? name : "unknown";
}
}  // namespace

registry::KernelUnderTest start_kernel(const std::string& kernel, const UnitContext& context) {
  try {
    return registry::make_kernel(kernel, {std::chrono::milliseconds(static_cast<std::int64_t>(context.timeout * 1000))});
  } catch (const std::exception& e) {
    std::cerr << "kda-oracle: " << e.what() << '\n';  // into the unit's log, as `check` reports it
    throw KernelNotStarted(e.what());
  }
}

Json unit_header(const Unit& unit, const UnitContext& context) {
  Json j;
  j["schema"] = "kda-oracle/campaign-unit";
  j["version"] = 1;
  j["unit"] = unit.id();
  j["type"] = name_of(unit.type);
  j["implementation"] = unit.implementation->name;
  j["library"] = unit.implementation->library;
  j["kernel"] = unit.type == UnitType::golden ? unit.implementation->golden_kernel : unit.implementation->kernel;
  j["kind"] = name_of(unit.implementation->kind);
  if (unit.type == UnitType::check) {
    j["scale"] = unit.scale;
    j["property"] = unit.property;
    j["seed"] = context.seed;
  }
  j["environment"] = {{"started", utc_now()}, {"host", host_name()}, {"gpu", context.gpu}};
  return j;
}

Json not_run_unit(const Unit& unit, const UnitContext& context, const std::string& reason) {
  Json j = unit_header(unit, context);
  j["status"] = "not-run";
  j["reason"] = reason;
  j["cases"] = 0;
  j["seconds"] = 0;
  return j;
}

}  // namespace kda::cli
