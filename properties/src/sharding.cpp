#include "kda/properties/sharding.hpp"

#include <charconv>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>

namespace kda::props {

namespace {

std::uint64_t number(std::string_view text, std::string_view what) {
  std::uint64_t x = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), x);
  if (text.empty() || error != std::errc() || end != text.data() + text.size())
    throw std::invalid_argument(std::string(what) + ": '" + std::string(text) + "' is not a non-negative integer");
  return x;
}

Shard checked(Shard s, std::string_view what) {
  if (s.count == 0 || s.index >= s.count)
    throw std::invalid_argument(std::string(what) + ": shard " + std::to_string(s.index) + " of " +
                                std::to_string(s.count) + " does not exist (need 0 <= index < count)");
  return s;
}

}  // namespace

Shard parse_shard(std::string_view text) {
  const auto slash = text.find('/');
  if (slash == std::string_view::npos)
    throw std::invalid_argument("--shard: expected i/n (shard i of n, counted from 0), got '" + std::string(text) + "'");
  return checked({number(text.substr(0, slash), "--shard"), number(text.substr(slash + 1), "--shard")}, "--shard");
}

namespace {

const char* variable(const char* name) {
  const char* value = std::getenv(name);
  return value && *value ? value : nullptr;
}

// SLURM_ARRAY_TASK_ID relative to the array's first task and step (an array need not start at 0).
std::optional<Shard> slurm_shard() {
  const char* id = variable("SLURM_ARRAY_TASK_ID");
  const char* count = variable("SLURM_ARRAY_TASK_COUNT");
  if (!id && !count) return std::nullopt;
  if (!id || !count) throw std::invalid_argument("SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT must be set together");
  const std::uint64_t task = number(id, "SLURM_ARRAY_TASK_ID");
  const char* min = variable("SLURM_ARRAY_TASK_MIN");
  const char* step = variable("SLURM_ARRAY_TASK_STEP");
  const std::uint64_t first = min ? number(min, "SLURM_ARRAY_TASK_MIN") : 0;
  const std::uint64_t stride = step ? number(step, "SLURM_ARRAY_TASK_STEP") : 1;
  if (task < first || stride == 0 || (task - first) % stride != 0)
    throw std::invalid_argument("SLURM_ARRAY_TASK_ID " + std::to_string(task) + " is not a task of the array " +
                                std::to_string(first) + ", " + std::to_string(first) + " + " + std::to_string(stride) +
                                ", ... (SLURM_ARRAY_TASK_MIN, SLURM_ARRAY_TASK_STEP)");
  return checked({(task - first) / stride, number(count, "SLURM_ARRAY_TASK_COUNT")},
                 "SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT");
}

std::optional<Shard> indexed_job_shard() {
  const char* index = variable("JOB_COMPLETION_INDEX");
  if (!index) return std::nullopt;
  const char* count = variable("KDA_SHARD_COUNT");
  if (!count)
    throw std::invalid_argument("JOB_COMPLETION_INDEX is set but KDA_SHARD_COUNT is not (a Kubernetes Indexed Job "
                                "does not export its completion count: set KDA_SHARD_COUNT to .spec.completions)");
  return checked({number(index, "JOB_COMPLETION_INDEX"), number(count, "KDA_SHARD_COUNT")},
                 "JOB_COMPLETION_INDEX/KDA_SHARD_COUNT");
}

std::optional<Shard> gtest_shard() {
  const char* total = variable("GTEST_TOTAL_SHARDS");
  const char* index = variable("GTEST_SHARD_INDEX");
  if (!total && !index) return std::nullopt;
  if (!total || !index)
    throw std::invalid_argument("GTEST_TOTAL_SHARDS and GTEST_SHARD_INDEX must be set together");
  const Shard shard = checked({number(index, "GTEST_SHARD_INDEX"), number(total, "GTEST_TOTAL_SHARDS")},
                              "GTEST_SHARD_INDEX/GTEST_TOTAL_SHARDS");
  if (const char* status = variable("GTEST_SHARD_STATUS_FILE")) std::ofstream touch(status, std::ios::app);
  return shard;
}

}  // namespace

std::optional<Shard> shard_from_environment() {
  if (auto shard = slurm_shard()) return shard;
  if (auto shard = indexed_job_shard()) return shard;
  return gtest_shard();
}

std::uint64_t shard_seed(std::uint64_t seed, const Shard& shard) { return seed + shard.index * 0x9E3779B97F4A7C15ull; }

}  // namespace kda::props
