#pragma once
// Splitting one long catalogue run over many processes or machines. Shard i of n runs, for every
// selected property, the usual number of cases (--cases) from its own seed: the run's seed becomes
// shard_seed(seed, i) and each property derives its seed from that as always (property_seed). Shard
// 0 is exactly the unsharded run; n shards together run n x the cases of one, from n distinct seeds
// per property. The seed does not depend on n, so adding shards only adds cases.
#include <cstdint>
#include <optional>
#include <string_view>

namespace kda::props {

struct Shard {
  std::uint64_t index = 0;
  std::uint64_t count = 1;
};

// "i/n" with 0 <= i < n; throws std::invalid_argument saying what is wrong.
Shard parse_shard(std::string_view text);

// The shard a job engine assigned this process, from the first of these that is set:
//   Slurm job arrays: SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT, the index counted from
//     SLURM_ARRAY_TASK_MIN in steps of SLURM_ARRAY_TASK_STEP (--array=1-8 gives shards 0..7 of 8);
//   Kubernetes Indexed Jobs: JOB_COMPLETION_INDEX, with the count from KDA_SHARD_COUNT (Kubernetes does
//     not export the completion count; the Job manifest sets it to .spec.completions);
//   GoogleTest's runners: GTEST_SHARD_INDEX and GTEST_TOTAL_SHARDS (when GTEST_SHARD_STATUS_FILE is set,
//     the file is created: the runner's check that sharding is honoured).
// nullopt when none is set; std::invalid_argument, naming the variables, when a pair is incomplete,
// malformed or names no shard.
std::optional<Shard> shard_from_environment();

// seed + index x 0x9E3779B97F4A7C15: distinct for every index (the multiplier is odd), index 0 gives
// the seed itself.
std::uint64_t shard_seed(std::uint64_t seed, const Shard& shard);

}  // namespace kda::props
