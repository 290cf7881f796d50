// The recurrent and the chunked (WY) forms are the same function (kda-facts §2): in fp64 they agree to
// 1e-12 relative RMS on every output. Why 1e-12 holds: with l2-normalised keys, beta in (0, 2) and
// gates <= 0, every step S -> (I - beta k k^T) Diag(exp(g)) S + ... is a contraction, so rounding
// errors do not grow; each output is a sum of at most a few hundred terms of one state and one chunk,
// each carrying a few units of 2^-53 (1.1e-16) relative error, and the chunked form adds the error of
// Γi - Γj formed from cumulative sums, at most |Γ| * 2^-53 absolute in an exponent: about 1e-13 for a
// chunk holding one -1000 gate. Observed: below 1e-14.
// A wrong formula (order of decay and update, a missing scale, exp(Γ) mixed with exp2) is off by 1e-2
// or more.
#include <gtest/gtest.h>

#include "reference_test_support.hpp"

namespace kda {
namespace {

enum class Gate { given, given_strong, softplus, lower_bound, lower_bound_no_A_log };

struct Case {
  std::vector<std::int64_t> lengths;
  std::int64_t H, HV, K, V;
  Gate gate;
  int chunk_size;
  StateSource state = StateSource::dense;
  bool neg_eigval = false;   // beta = 2 sigmoid(b) in (0, 2)
  bool token_states = false;  // costly for the chunked form: small cases only
};

// Sampled, not a cross product: together the rows cover every length, GVA ratio, head dim, gate form,
// chunk size, both layouts (alternating) and all three state sources.
const std::vector<Case> kCases = {
    {{0, 1, 15, 16, 17}, 1, 1, 16, 16, Gate::softplus, 64, StateSource::dense, false, true},
    {{63, 64, 65}, 2, 4, 60, 100, Gate::lower_bound, 32},
    {{127, 0, 129}, 1, 4, 128, 64, Gate::given_strong, 64, StateSource::none},
    {{500}, 1, 2, 256, 256, Gate::given, 64},
    {{17, 500, 1}, 2, 8, 100, 60, Gate::softplus, 32, StateSource::dense, true},
    {{16, 65, 0, 15}, 2, 2, 64, 128, Gate::lower_bound_no_A_log, 64, StateSource::pool, false, true},
    {{129, 63}, 1, 2, 256, 16, Gate::given, 32},
    {{64, 127}, 2, 2, 16, 256, Gate::given_strong, 32},
    {{1, 1, 1, 1}, 4, 4, 128, 128, Gate::softplus, 64, StateSource::pool, true},
    {{500}, 1, 1, 64, 60, Gate::given_strong, 64},
};

Problem build(const Case& c, std::size_t index) {
  ProblemSpec spec;
  spec.lengths = c.lengths;
  spec.H = c.H, spec.HV = c.HV, spec.K = c.K, spec.V = c.V;
  spec.state = c.state;
  spec.chunk_states = true;
  spec.token_states = c.token_states;
  auto& op = spec.options;
  op.chunk_size = c.chunk_size;
  op.state_layout = index % 2 ? StateLayout::kv : StateLayout::vk;
  op.beta_from_logits = op.allow_neg_eigval = c.neg_eigval;
  op.gate_in_kernel = c.gate != Gate::given && c.gate != Gate::given_strong;
  if (c.gate == Gate::lower_bound || c.gate == Gate::lower_bound_no_A_log) op.lower_bound = -5.0;
  spec.with_A_log = c.gate == Gate::softplus || c.gate == Gate::lower_bound;
  spec.with_dt_bias = op.gate_in_kernel;
  Problem p = test::random_problem(spec, 1000 + index);
  if (c.gate == Gate::given_strong) test::add_strong_gates(p, 0.05, 2000 + index);
  return p;
}

// Debug builds (the sanitizer CI job) run only the cases below this many state-element updates.
#ifdef NDEBUG
constexpr double kWorkBudget = 1e12;
#else
constexpr double kWorkBudget = 2e7;
#endif

double work(const Case& c) {
  double tokens = 0;
  for (auto L : c.lengths) tokens += static_cast<double>(L);
  return tokens * static_cast<double>(c.HV * c.K * c.V);
}

TEST(ReferenceEquivalence, RecurrentEqualsChunkedInFp64) {
  constexpr double kTolerance = 1e-12;
  int ran = 0;
  for (std::size_t i = 0; i < kCases.size(); ++i) {
    if (work(kCases[i]) > kWorkBudget) continue;
    ++ran;
    const Problem p = build(kCases[i], i);
    SCOPED_TRACE(p.describe());
    const auto rec = run_reference<double>(p, Algorithm::recurrent);
    const auto chk = run_reference<double>(p, Algorithm::chunked);
    EXPECT_LE(test::rel_rms(rec.o, chk.o), kTolerance);
    EXPECT_LE(test::rel_rms(rec.final_state, chk.final_state), kTolerance);
    EXPECT_LE(test::rel_rms(rec.chunk_states, chk.chunk_states), kTolerance);
    EXPECT_LE(test::rel_rms(rec.token_states, chk.token_states), kTolerance);
    EXPECT_EQ(rec.written, chk.written);
  }
  EXPECT_GE(ran, 3);
}

}  // namespace
}  // namespace kda
