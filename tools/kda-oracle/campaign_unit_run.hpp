#pragma once
// Running one campaign unit and describing its result as the unit's JSON (schema
// "kda-oracle/campaign-unit", docs/conformance.md). A kernel that cannot start (an adapter whose library
// does not import fails its handshake) throws KernelNotStarted: the unit is then "not run", not failed.
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "campaign_units.hpp"
#include "kda/registry/kernel_registry.hpp"

namespace kda::cli {

using Json = nlohmann::ordered_json;

struct UnitContext {
  std::filesystem::path results_dir;
  std::uint64_t seed = 1;
  double timeout = 120;                    // seconds an exec adapter may take per request
  std::string golden_suite = "standard";   // generated once into results_dir/golden/
  std::string bench_shapes = "standard";   // "standard" (bench/gpu's shapes) or "tiny" (the same calls, small)
  int bench_calls = 5;                     // timed calls per shape, after one warm-up call
  std::string gpu;                         // the machine's GPU, recorded in every unit ("none" without one)
};

struct KernelNotStarted : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// make_kernel, its failure rethrown as KernelNotStarted.
registry::KernelUnderTest start_kernel(const std::string& kernel, const UnitContext& context);

// The fields every unit's JSON starts with: schema, unit, type, implementation, library, kernel, kind
// (and scale, property, cases for a check unit), environment (started, host, gpu).
Json unit_header(const Unit& unit, const UnitContext& context);

// Each returns the unit's JSON, with "status" pass, fail or skipped.
Json run_check_unit(const Unit& unit, const UnitContext& context);
Json run_golden_unit(const Unit& unit, const UnitContext& context);
Json run_speed_unit(const Unit& unit, const UnitContext& context);

// The unit's JSON when its kernel could not start: status "not-run" with the reason.
Json not_run_unit(const Unit& unit, const UnitContext& context, const std::string& reason);

}  // namespace kda::cli
