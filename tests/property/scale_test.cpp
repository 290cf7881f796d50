// The scales of `kda-oracle check --scale`: what each draws, judged on the drawn specs (a realistic case
// costs seconds to build and a stress case gigabytes, so nothing here builds one), and that a failure at
// realistic scale still shrinks to a small case.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <set>
#include <sstream>

#include "kda/properties/generators.hpp"
#include "kda/properties/runner.hpp"
#include "kda/reference_kernel.hpp"

namespace kda::props {
namespace {

using i64 = std::int64_t;

std::unique_ptr<Kernel> reference() { return make_reference_kernel(Precision::fp64, Algorithm::recurrent); }

i64 tokens(const CaseSpec& c) {
  return std::accumulate(c.problem.lengths.begin(), c.problem.lengths.end(), i64{0});
}

// Specs drawn at full size from consecutive seeds.
std::vector<CaseSpec> draw(const Kernel& kernel, Scale scale, int count) {
  const auto gen = gen_valid_case(kernel, limits_for(scale));
  std::vector<CaseSpec> specs;
  for (int seed = 0; seed < count; ++seed) specs.push_back(gen(rc::Random(static_cast<std::uint64_t>(seed)), 100).value());
  return specs;
}

TEST(Scale, NamesParseAndSmallIsTheDefault) {
  for (Scale s : {Scale::small, Scale::realistic, Scale::stress}) EXPECT_EQ(parse_scale(name_of(s)), s);
  try {
    parse_scale("huge");
    FAIL() << "parse_scale accepted 'huge'";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'huge'"), std::string::npos) << e.what();
  }
  const GenLimits small = limits_for(Scale::small), defaults;
  EXPECT_EQ(small.max_sequences, defaults.max_sequences);
  EXPECT_EQ(small.max_tokens, defaults.max_tokens);
  EXPECT_EQ(small.head_dims, defaults.head_dims);
  EXPECT_EQ(small.max_heads, defaults.max_heads);
  EXPECT_EQ(small.gva_ratios, defaults.gva_ratios);
  EXPECT_EQ(small.max_work, defaults.max_work);
  EXPECT_TRUE(small.decode_batch_edges.empty());
  EXPECT_FALSE(small.pool_past_int32);
  EXPECT_FALSE(limits_for(Scale::realistic).pool_past_int32);
  EXPECT_TRUE(limits_for(Scale::stress).pool_past_int32);
}

TEST(Scale, RealisticDrawsModelShapes) {
  const auto kernel = reference();
  const GenLimits limits = limits_for(Scale::realistic);
  std::set<i64> key_dims, value_dims, ratios, decode_products;
  i64 most_heads = 0, most_tokens = 0, most_sequences = 0;
  for (const CaseSpec& c : draw(*kernel, Scale::realistic, 400)) {
    const ProblemSpec& s = c.problem;
    SCOPED_TRACE(c.describe());
    ASSERT_LE(s.HV, limits.max_heads);
    ASSERT_EQ(s.HV % s.H, 0);
    ASSERT_LE(tokens(c), limits.max_tokens);
    ASSERT_LE(static_cast<i64>(s.lengths.size()), limits.max_sequences);
    key_dims.insert(s.K), value_dims.insert(s.V), ratios.insert(s.HV / s.H);
    most_heads = std::max(most_heads, s.HV), most_tokens = std::max(most_tokens, tokens(c));
    most_sequences = std::max(most_sequences, static_cast<i64>(s.lengths.size()));
    if (s.mode == Mode::decode) decode_products.insert(static_cast<i64>(s.lengths.size()) * s.HV);
  }
  EXPECT_EQ(key_dims, (std::set<i64>{64, 128, 256}));  // drawn from 64 up; 16 and 32 only by shrinking
  EXPECT_EQ(value_dims, (std::set<i64>{64, 128, 256}));
  EXPECT_EQ(ratios, (std::set<i64>{1, 2, 4, 8}));
  EXPECT_EQ(most_heads, 64);
  EXPECT_GT(most_tokens, 8192);
  EXPECT_GT(most_sequences, 128);
  // Decode batches straddle the routes' edges: N x HV just below, at and just above 128 and beyond.
  for (i64 edge : {128, 256, 512, 1024})
    EXPECT_TRUE(decode_products.count(edge)) << "no decode batch with N x HV = " << edge;
  const auto below = [&](i64 e) { return std::any_of(decode_products.begin(), decode_products.end(), [&](i64 p) { return p < e && p > e - 64; }); };
  const auto above = [&](i64 e) { return std::any_of(decode_products.begin(), decode_products.end(), [&](i64 p) { return p > e && p < e + 64; }); };
  for (i64 edge : {128, 256, 512}) EXPECT_TRUE(below(edge) && above(edge)) << "edge " << edge;
}

// With one value head, the batch is exactly 127, 128 or 129 sequences.
TEST(Scale, OneValueHeadDecodeBatchesAtTheEdgeExactly) {
  const auto kernel = reference();
  GenLimits limits = limits_for(Scale::realistic);
  limits.max_heads = 1;
  limits.gva_ratios = {1};
  const auto gen = gen_valid_case(*kernel, limits);
  std::set<i64> batches;
  for (std::uint64_t seed = 0; seed < 600; ++seed) {
    const CaseSpec c = gen(rc::Random(seed), 100).value();
    if (c.problem.mode == Mode::decode) batches.insert(static_cast<i64>(c.problem.lengths.size()));
  }
  for (i64 n : {127, 128, 129, 255, 256}) EXPECT_TRUE(batches.count(n)) << "no decode batch of " << n << " sequences";
}

// A property failing on every realistic case shrinks to the smallest case the limits hold: head dims
// 16, one head, one sequence of at most one token; one failing on a long sequence (a kernel that keeps
// a bounded history) shrinks to that one sequence, just past the bound.
TEST(Scale, RealisticFailuresShrinkToSmallCases) {
  const auto kernel = reference();
  const auto gen = gen_valid_case(*kernel, limits_for(Scale::realistic));
  const auto longest = [](const CaseSpec& c) {
    return *std::max_element(c.problem.lengths.begin(), c.problem.lengths.end());
  };
  for (const i64 longer_than : {i64{-1}, i64{1000}}) {
    CaseSpec minimal;
    rc::detail::TestParams params;
    params.seed = 31;
    params.maxSuccess = 200;
    const auto result = rc::detail::checkTestable(
        [&] {
          const CaseSpec c = *gen;
          if (longest(c) > longer_than) minimal = c;  // the last failure rapidcheck sees is its counterexample
          RC_ASSERT(longest(c) <= longer_than);
        },
        rc::detail::TestMetadata{}, params);
    ASSERT_TRUE(result.is<rc::detail::FailureResult>()) << "longer than " << longer_than;
    const ProblemSpec& s = minimal.problem;
    SCOPED_TRACE(minimal.describe());
    EXPECT_EQ(s.K, 16);
    EXPECT_EQ(s.V, 16);
    EXPECT_EQ(s.H, 1);
    EXPECT_EQ(s.HV, 1);
    EXPECT_EQ(s.lengths.size(), 1u);
    EXPECT_EQ(tokens(minimal), longer_than + 1);
  }
}

// Stress pools: every slot a sequence names (or a verify table's entry, or the scratch form's index)
// starts past element 2^31, so slot x slot stride overflows 32-bit index math; the slots below are
// never named. The geometry is judged on the spec: such a pool is several GiB.
TEST(Scale, StressPoolsAreNamedPastElement2To31) {
  const auto kernel = reference();
  constexpr i64 int32_max = std::numeric_limits<std::int32_t>::max();
  int pools = 0, named = 0;
  for (const CaseSpec& c : draw(*kernel, Scale::stress, 200)) {
    const ProblemSpec& s = c.problem;
    if (s.state != StateSource::pool && s.state != StateSource::table && s.state != StateSource::scratch) continue;
    SCOPED_TRACE(c.describe());
    ++pools;
    ASSERT_GT(s.pool_slot_stride, 0);
    ASSERT_GT(s.pool_slots * s.pool_slot_stride, int32_max);
    for (i64 slot : s.indices) {
      if (slot < 0) continue;
      ++named;
      EXPECT_GT(slot * s.pool_slot_stride, int32_max) << "slot " << slot;
      EXPECT_LT(slot, s.pool_slots);
    }
  }
  EXPECT_GT(pools, 50);
  EXPECT_GT(named, 500);
}

// A failure's replay command names the scale its case was drawn at (another scale draws another case).
TEST(Scale, ReplayCommandNamesTheScale) {
  PropertyReport report;
  report.property = "matches-reference";
  report.cases = report.failed = 1;
  report.failure = "a failure";
  report.replay = "reproduce=abc";
  for (const auto& [scale, expected] :
       {std::pair{Scale::small, "--kernel K --properties matches-reference --replay"},
        std::pair{Scale::realistic, "--kernel K --scale realistic --properties matches-reference --replay"},
        std::pair{Scale::stress, "--kernel K --scale stress --properties matches-reference --replay"}}) {
    std::ostringstream printed;
    print_reports(printed, {report}, "K", scale);
    EXPECT_NE(printed.str().find(expected), std::string::npos) << printed.str();
  }
}

}  // namespace
}  // namespace kda::props
