// The adversarial data mixes (DataMix): each shapes the data it promises, the fp64 reference stays
// finite on every one, and a failure that needs a long sequence shrinks to one just past the edge.
// Fixed seeds (rapidcheck's TestParams): deterministic.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "../support/rapidcheck_run.hpp"
#include "kda/properties/generators.hpp"
#include "kda/reference_kernel.hpp"

namespace kda::props {
namespace {

using i64 = std::int64_t;
using test::message_of;
using test::run_property;
using test::tag_counts;

std::unique_ptr<Kernel> reference() { return make_reference_kernel(Precision::fp64, Algorithm::recurrent); }

constexpr DataMix kMixes[] = {DataMix::repeated_keys, DataMix::collinear_keys, DataMix::long_memory,
                              DataMix::strong_gates, DataMix::large_state, DataMix::tiny_state};

// The log-decay an entry of g stands for: itself, or through the in-kernel gate (kda-facts §1).
double decay(const Problem& p, i64 b, i64 t, i64 h, i64 c) {
  const double g = p.g.at({b, t, h, c});
  if (!p.options.gate_in_kernel) return g;
  const double A = p.A_log ? std::exp(p.A_log->at({h})) : 1.0;
  const double x = g + (p.dt_bias ? p.dt_bias->at({h * p.K + c}) : 0.0);
  if (p.options.lower_bound) return *p.options.lower_bound / (1.0 + std::exp(-A * x));
  return -A * (x > 20 ? x : std::log1p(std::exp(x)));
}

// Every gate entry of token t within (lo, hi].
bool token_decays_within(const Problem& p, i64 b, i64 t, double lo, double hi) {
  for (i64 h = 0; h < p.HV; ++h)
    for (i64 c = 0; c < p.K; ++c)
      if (const double d = decay(p, b, t, h, c); !(lo < d && d <= hi)) return false;
  return true;
}

// The strongest gate of the case's form: the lower bound, else the safe gate's floor.
double strongest(const Problem& p) { return p.options.gate_in_kernel && p.options.lower_bound ? *p.options.lower_bound : -5.0; }

double max_abs(const Tensor& t) {
  double m = 0;
  for_each_index(t.shape(), [&](std::span<const i64> idx) { m = std::max(m, std::abs(t.at(idx))); });
  return m;
}

// The largest initial state element a live sequence starts from (-1: none starts from a state).
double max_state(const Problem& p) {
  double m = p.initial_state ? max_abs(*p.initial_state) : -1.0;
  for (i64 n = 0; p.state_pool && n < p.N; ++n)
    if (const i64 slot = p.initial_slot(n); slot >= 0)
      for (i64 h = 0; h < p.HV; ++h)
        for (i64 r = 0; r < p.state_head_shape()[0]; ++r)
          for (i64 c = 0; c < p.state_head_shape()[1]; ++c) m = std::max(m, std::abs(p.state_pool->at({slot, h, r, c})));
  return m;
}

void check_keys(const Problem& p, bool repeated) {
  for (i64 n = 0; n < p.N; ++n)
    for (i64 i = 1; i < p.length(n); ++i) {
      const i64 b = p.row(n), t = p.first(n) + i, from = repeated ? p.first(n) + i - i % 16 : t - 1;
      if (p.state_indices && p.initial_slot(n) == -1) continue;  // the padding pattern zeroes k
      for (i64 h = 0; h < p.H; ++h) {
        double dot = 0, a = 0, c = 0;
        for (i64 ch = 0; ch < p.K; ++ch) {
          const double x = p.k.at({b, t, h, ch}), y = p.k.at({b, from, h, ch});
          if (repeated) RC_ASSERT(x == y);
          dot += x * y, a += x * x, c += y * y;
        }
        RC_ASSERT(dot >= 0.999 * std::sqrt(a * c));  // relative steps of at most 1e-3
      }
      // Each run's gates sit near 0 or at the strongest (raw gates as stored, rounded: within a factor).
      const bool near_zero = token_decays_within(p, b, t, -1e-2, 0.0);
      RC_ASSERT(near_zero || token_decays_within(p, b, t, -1e300, 0.5 * strongest(p)));
    }
}

// A run of at least min(16, length) tokens per sequence at (about) the strongest gate.
void check_strong_run(const Problem& p) {
  for (i64 n = 0; n < p.N; ++n) {
    if (p.state_indices && p.initial_slot(n) == -1) continue;
    i64 run = 0, longest = 0;
    for (i64 t = p.first(n); t < p.first(n) + p.length(n); ++t) {
      run = token_decays_within(p, p.row(n), t, -1e300, 0.5 * strongest(p)) ? run + 1 : 0;
      longest = std::max(longest, run);
    }
    RC_ASSERT(longest >= std::min<i64>(16, p.length(n)));
  }
}

TEST(DataMix, EachMixShapesItsData) {
  const auto kernel = reference();
  i64 longest = 0;
  const auto result = run_property(41, 300, [&] {
    const CaseSpec c = *gen_adversarial_case(*kernel);
    const Problem p = build_case(c);
    RC_TAG(std::string(name_of(c.data)));
    const bool padding = p.state_indices && c.padding_pattern;  // padding rows rewrite k, v, g
    switch (c.data) {
      case DataMix::random: break;
      case DataMix::repeated_keys:
      case DataMix::collinear_keys: check_keys(p, c.data == DataMix::repeated_keys); break;
      case DataMix::long_memory:
        for (i64 n = 0; n < p.N && !padding; ++n)
          for (i64 t = p.first(n); t < p.first(n) + p.length(n); ++t)
            RC_ASSERT(token_decays_within(p, p.row(n), t, -1e-2, 0.0));
        for (i64 n = 0; n < p.N; ++n) longest = std::max(longest, p.length(n));
        break;
      case DataMix::strong_gates: check_strong_run(p); break;
      case DataMix::large_state:
        if (max_state(p) >= 0) RC_ASSERT(max_state(p) >= 50.0);
        if (p.o.dtype() == DType::f16) RC_ASSERT(max_state(p) <= 1e3);
        break;
      case DataMix::tiny_state:
        if (!padding) RC_ASSERT(max_abs(p.v) <= 1e-3 && max_state(p) <= 1e-4);
        break;
    }
  });
  EXPECT_TRUE(result.is<rc::detail::SuccessResult>()) << message_of(result);
  auto counts = tag_counts(result);
  for (DataMix mix : kMixes) EXPECT_GT(counts[std::string(name_of(mix))], 0) << name_of(mix);
  EXPECT_GT(longest, 512) << "long memory draws no sequence past 512 tokens at the default limits";
}

bool all_finite(const std::vector<double>& xs) {
  return std::all_of(xs.begin(), xs.end(), [](double x) { return std::isfinite(x); });
}

// Property `finite` holds kernels to finiteness where the reference is finite: on these mixes it is,
// everywhere, so no adversarial case is judged on fewer elements.
TEST(DataMix, TheReferenceIsFiniteOnEveryMix) {
  const auto kernel = reference();
  const auto result = run_property(42, 150, [&] {
    const CaseSpec c = *gen_adversarial_case(*kernel);
    const Problem p = build_case(c);
    RC_TAG(std::string(name_of(c.data)));
    const ReferenceOutputs out = run_reference<double>(p, Algorithm::recurrent, 1);
    RC_ASSERT(all_finite(out.o));
    RC_ASSERT(all_finite(out.final_state));
    RC_ASSERT(all_finite(out.chunk_states));
    RC_ASSERT(all_finite(out.token_states));
  });
  EXPECT_TRUE(result.is<rc::detail::SuccessResult>()) << message_of(result);
  auto counts = tag_counts(result);
  for (DataMix mix : kMixes) EXPECT_GT(counts[std::string(name_of(mix))], 0) << name_of(mix);
}

// A kernel that forgets history past 512 tokens fails only on a long-memory sequence longer than
// that: the counterexample shrinks to one sequence of 513 tokens.
TEST(DataMix, LongMemoryShrinksToJustPastTheWindow) {
  const auto kernel = reference();
  for (std::uint64_t seed : {43, 44, 45}) {
    CaseSpec minimal;
    const auto result = run_property(seed, 1000, [&] {
      const CaseSpec c = *gen_valid_case(*kernel);
      const bool long_one = std::any_of(c.problem.lengths.begin(), c.problem.lengths.end(), [](i64 l) { return l > 512; });
      const bool fails = c.data == DataMix::long_memory && long_one;
      if (fails) minimal = c;
      RC_ASSERT(!fails);
    });
    ASSERT_TRUE(result.is<rc::detail::FailureResult>()) << "seed " << seed << ": " << message_of(result);
    EXPECT_EQ(minimal.problem.lengths, std::vector<i64>{513}) << minimal.describe();
    EXPECT_EQ(minimal.problem.mode, Mode::prefill) << minimal.describe();
  }
}

}  // namespace
}  // namespace kda::props
