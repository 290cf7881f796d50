// Sharding a catalogue run: shard seeds are deterministic and distinct (per property too), shard 0 is
// the unsharded run, and both ways of naming a shard are checked.
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>

#include "kda/properties/catalogue.hpp"
#include "kda/properties/runner.hpp"
#include "kda/properties/sharding.hpp"
#include "../support/scoped_env.hpp"

namespace kda::test {
namespace {

using props::Shard;

TEST(Shard, SeedsAreDeterministicAndDistinctPerProperty) {
  for (std::uint64_t seed : {0ull, 1ull, 20261130ull, ~0ull}) {
    std::set<std::uint64_t> property_seeds;
    for (std::uint64_t i = 0; i < 1000; ++i) {
      const Shard shard{i, 1000};
      EXPECT_EQ(props::shard_seed(seed, shard), props::shard_seed(seed, shard));
      for (const auto& p : props::catalogue())
        property_seeds.insert(props::property_seed(props::shard_seed(seed, shard), p.name));
    }
    EXPECT_EQ(property_seeds.size(), 1000 * props::catalogue().size());
  }
}

TEST(Shard, ShardZeroIsTheUnshardedRunAndSeedsDoNotDependOnTheCount) {
  EXPECT_EQ(props::shard_seed(42, {0, 7}), 42u);
  EXPECT_EQ(props::shard_seed(42, {3, 4}), props::shard_seed(42, {3, 100}));
}

TEST(Shard, ParsesIOfN) {
  const Shard s = props::parse_shard("2/5");
  EXPECT_EQ(s.index, 2u);
  EXPECT_EQ(s.count, 5u);
  for (const char* bad : {"5/5", "1/0", "2", "a/3", "-1/3", "1/3x", ""})
    EXPECT_THROW(props::parse_shard(bad), std::invalid_argument) << bad;
}

TEST(Shard, ReadsGoogleTestsVariables) {
  unsetenv("GTEST_TOTAL_SHARDS");
  unsetenv("GTEST_SHARD_INDEX");
  EXPECT_FALSE(props::shard_from_environment());
  setenv("GTEST_TOTAL_SHARDS", "8", 1);
  EXPECT_THROW(props::shard_from_environment(), std::invalid_argument);  // the index is missing
  setenv("GTEST_SHARD_INDEX", "3", 1);
  const auto s = props::shard_from_environment();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->index, 3u);
  EXPECT_EQ(s->count, 8u);
  setenv("GTEST_SHARD_INDEX", "8", 1);
  EXPECT_THROW(props::shard_from_environment(), std::invalid_argument);
  unsetenv("GTEST_TOTAL_SHARDS");
  unsetenv("GTEST_SHARD_INDEX");
}

// Slurm job arrays: the index counts from the array's first task in its steps (--array=3-11:4 is tasks
// 3, 7, 11: shards 0, 1, 2 of 3).
TEST(Shard, ReadsSlurmArrayVariables) {
  {
    ScopedEnv id("SLURM_ARRAY_TASK_ID", "2"), count("SLURM_ARRAY_TASK_COUNT", "3");
    const auto s = props::shard_from_environment();
    ASSERT_TRUE(s);
    EXPECT_EQ(s->index, 2u);
    EXPECT_EQ(s->count, 3u);
  }
  {
    ScopedEnv id("SLURM_ARRAY_TASK_ID", "11"), count("SLURM_ARRAY_TASK_COUNT", "3"), min("SLURM_ARRAY_TASK_MIN", "3"),
        step("SLURM_ARRAY_TASK_STEP", "4");
    const auto s = props::shard_from_environment();
    ASSERT_TRUE(s);
    EXPECT_EQ(s->index, 2u);
    EXPECT_EQ(s->count, 3u);
    ScopedEnv off_step("SLURM_ARRAY_TASK_ID", "5");
    EXPECT_THROW(props::shard_from_environment(), std::invalid_argument);
    ScopedEnv before("SLURM_ARRAY_TASK_ID", "1");
    EXPECT_THROW(props::shard_from_environment(), std::invalid_argument);
  }
  {
    ScopedEnv id("SLURM_ARRAY_TASK_ID", "4"), count("SLURM_ARRAY_TASK_COUNT", "4");
    EXPECT_THROW(props::shard_from_environment(), std::invalid_argument);  // past the last shard
  }
  {
    ScopedEnv id("SLURM_ARRAY_TASK_ID", "1");
    EXPECT_THROW(props::shard_from_environment(), std::invalid_argument);  // no count
  }
}

// Kubernetes Indexed Jobs: JOB_COMPLETION_INDEX, the count from KDA_SHARD_COUNT (which the manifest sets).
TEST(Shard, ReadsIndexedJobVariables) {
  ScopedEnv index("JOB_COMPLETION_INDEX", "1");
  EXPECT_THROW(props::shard_from_environment(), std::invalid_argument);
  ScopedEnv count("KDA_SHARD_COUNT", "3");
  const auto s = props::shard_from_environment();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->index, 1u);
  EXPECT_EQ(s->count, 3u);
  ScopedEnv too_far("JOB_COMPLETION_INDEX", "3");
  EXPECT_THROW(props::shard_from_environment(), std::invalid_argument);
}

// Slurm first, then an Indexed Job, then GoogleTest: a Slurm array task launched by a test runner is
// sharded by Slurm.
TEST(Shard, SlurmComesBeforeIndexedJobsAndGoogleTest) {
  ScopedEnv gtest_total("GTEST_TOTAL_SHARDS", "5"), gtest_index("GTEST_SHARD_INDEX", "4");
  ScopedEnv job_index("JOB_COMPLETION_INDEX", "3"), job_count("KDA_SHARD_COUNT", "4");
  EXPECT_EQ(props::shard_from_environment()->count, 4u);
  ScopedEnv id("SLURM_ARRAY_TASK_ID", "0"), count("SLURM_ARRAY_TASK_COUNT", "2");
  EXPECT_EQ(props::shard_from_environment()->count, 2u);
}

}  // namespace
}  // namespace kda::test
