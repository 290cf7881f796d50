#pragma once
// `kda-oracle check --results FILE.json`: a check run's results, machine-readable (schema
// "kda-oracle/check-results", version 1; README.md, "Checking a kernel").
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kda/kernel.hpp"
#include "kda/properties/runner.hpp"
#include "kda/properties/sharding.hpp"

namespace kda::cli {

// What the results say about the run as a whole.
struct CheckRun {
  std::string kernel;           // --kernel as given
  std::string adapter;          // the kernel's own name (an exec adapter's from its handshake)
  props::Scale scale = props::Scale::small;
  std::uint64_t seed = 1;       // --seed as given (a shard's seed derives from it)
  int cases = 100;              // --cases
  std::optional<props::Shard> shard;
  std::string precision_model;  // registry::precision_model_name()
  std::chrono::system_clock::time_point started;
  double seconds = 0;
  std::map<std::string, std::filesystem::path> case_files;  // property -> its saved failing case
  std::string around;           // --around: the call file the cases were drawn around, or empty
};

// Writes the results as JSON to `file`, atomically: a temporary file next to it, renamed over it.
// Throws std::runtime_error naming the file when it cannot be written.
void write_check_results(const std::filesystem::path& file, const CheckRun& run,
                         const std::vector<props::PropertyReport>& reports);

}  // namespace kda::cli
