// The fp32 run against the fp64 oracle, within a bound derived from the unit roundoff u = 2^-24:
//
//   rel-RMS(fp32 - fp64) <= u * (4 sqrt(K) + |Γ|max)     (|Γ|max term: chunked form only)
//
// - Inner products over the K key channels (S^T k, S^T q, and q.k, k.k in the chunked form) carry
//   rounding errors of random sign: relative error ~ sqrt(K) u each (the probabilistic bound of Higham
//   and Mary); a step composes a few of them (decay with S^T k, the update, S^T q), hence 4 sqrt(K).
// - Errors do not accumulate along the sequence: with l2-normalised keys, beta in (0, 1) and gates
//   <= 0 every step is a contraction and the decay forgets old errors (measured: the error is the same
//   at 64 and at 2000 tokens).
// - The chunked form takes exp(Γi - Γj) from two cumulative sums over the chunk, each exact to about
//   u |Γ| absolutely, so the factor is off by ~u |Γ| relatively, |Γ| <= the largest gate sum over a
//   chunk: C |lb| with a lower bound, the data's own sum otherwise. Mixed with gates of -1000 this term
//   dominates (1e-4 at 10% such gates): the cumulative-sum formulation every chunked kernel uses loses
//   accuracy there in fp32; the recurrent form does not.
// Observed: 0.02 to 0.14 of the bound over the cases below.
#include <gtest/gtest.h>

#include <algorithm>

#include "reference_test_support.hpp"

namespace kda {
namespace {

constexpr double kUnitRoundoff = 0x1p-24;

// The largest |sum of g| over one chunk and key channel, for pre-activated gates.
double max_chunk_gate_sum(const Problem& p) {
  double worst = 0;
  for (std::int64_t n = 0; n < p.N; ++n)
    for (std::int64_t hv = 0; hv < p.HV; ++hv)
      for (std::int64_t d = 0; d < p.K; ++d) {
        double sum = 0;
        for (std::int64_t t = 0; t < p.length(n); ++t) {
          if (t % p.options.chunk_size == 0) sum = 0;
          sum += p.g.at({p.row(n), p.first(n) + t, hv, d});
          worst = std::max(worst, -sum);
        }
      }
  return worst;
}

void expect_within_bound(const Problem& p, double gamma_max) {
  SCOPED_TRACE(p.describe());
  const double sqrt_k = std::sqrt(static_cast<double>(p.K));
  for (Algorithm a : {Algorithm::recurrent, Algorithm::chunked}) {
    SCOPED_TRACE(name_of(a));
    const double bound = kUnitRoundoff * (4 * sqrt_k + (a == Algorithm::chunked ? gamma_max : 0.0));
    const auto oracle = run_reference<double>(p, a);
    const auto fp32 = run_reference<float>(p, a);
    const double o_error = test::rel_rms(oracle.o, fp32.o);
    EXPECT_LE(o_error, bound);
    EXPECT_LE(test::rel_rms(oracle.final_state, fp32.final_state), bound);
    EXPECT_LE(test::rel_rms(oracle.token_states, fp32.token_states), bound);  // verify: the states it stores
    EXPECT_GT(o_error, 0.0);  // the fp32 run really is a different computation
  }
}

ProblemSpec spec_of(std::vector<std::int64_t> lengths, std::int64_t H, std::int64_t HV, std::int64_t K, std::int64_t V) {
  ProblemSpec spec;
  spec.lengths = std::move(lengths);
  spec.H = H, spec.HV = HV, spec.K = K, spec.V = V;
  return spec;
}

// Both verify forms: the fp32 run is the same recurrence, from the slot the form names.
TEST(ReferencePrecision, Fp32VerifyWithinBound) {
  for (StateSource form : {StateSource::table, StateSource::scratch}) {
    ProblemSpec spec = spec_of({8, 8, 5}, 2, 4, 64, 32);
    spec.mode = Mode::verify, spec.state = form, spec.final_state = false, spec.L = 8;
    spec.accepted = {8, 1, 3};
    const Problem p = test::random_problem(spec, 13);
    expect_within_bound(p, max_chunk_gate_sum(p));
  }
}

TEST(ReferencePrecision, Fp32WithinBoundGivenGates) {
  const Problem p = test::random_problem(spec_of({500, 17}, 1, 1, 16, 16), 11);
  expect_within_bound(p, max_chunk_gate_sum(p));
}

TEST(ReferencePrecision, Fp32WithinBoundLowerBoundGate) {
  ProblemSpec spec = spec_of({300}, 1, 2, 128, 64);
  spec.options.gate_in_kernel = true;
  spec.options.lower_bound = -5.0;
  spec.options.chunk_size = 32;
  spec.with_A_log = spec.with_dt_bias = true;
  expect_within_bound(test::random_problem(spec, 12), 32 * 5.0);
}

TEST(ReferencePrecision, Fp32WithinBoundStrongGates) {
  Problem p = test::random_problem(spec_of({200}, 1, 1, 64, 64), 13);
  test::add_strong_gates(p, 0.01, 14);
  expect_within_bound(p, max_chunk_gate_sum(p));
}

TEST(ReferencePrecision, Fp32StaysFiniteWhenEveryGateIsStrong) {
  // Γ reaches -64000 within a chunk: a form that took exp(Γ) and exp(-Γ) separately would give inf.
  Problem p = test::random_problem(spec_of({130}, 1, 1, 16, 16), 15);
  test::add_strong_gates(p, 1.0, 16);
  for (Algorithm a : {Algorithm::recurrent, Algorithm::chunked}) {
    const auto out = run_reference<float>(p, a);
    EXPECT_TRUE(std::all_of(out.o.begin(), out.o.end(), [](double x) { return std::isfinite(x); })) << name_of(a);
    // Every step wipes the state (exp(-1000) < 1e-38): o_t = beta_t (k_t . q_t) v_t, one K-term inner
    // product, and no cross-token factor survives in either precision: the bound without its Γ term.
    EXPECT_LE(test::rel_rms(run_reference<double>(p, a).o, out.o), kUnitRoundoff * 4 * std::sqrt(16.0)) << name_of(a);
  }
}

}  // namespace
}  // namespace kda
