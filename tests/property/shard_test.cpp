// Sharding a catalogue run: shard seeds are deterministic and distinct (per property too), shard 0 is
// the unsharded run, and both ways of naming a shard are checked.
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>

#include "kda/properties/catalogue.hpp"
#include "kda/properties/runner.hpp"
#include "kda/properties/sharding.hpp"

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

}  // namespace
}  // namespace kda::test
