// The preprocessing of kda-facts §1 against a plain transcription of the formulas: one token per
// sequence from a random initial state, so a single step (decay, delta update, output) sees every
// preprocessed input. The transcription reads through Tensor::at and uses std::exp, the reference
// its own reader and Eigen's vectorised exp: both in fp64, they agree to a few ulp (bound 1e-14).
#include <gtest/gtest.h>

#include <cmath>

#include "reference_test_support.hpp"

namespace kda {
namespace {

struct Preprocess {
  const char* name = "";
  bool l2norm = false;
  std::optional<double> scale{};
  bool logits = false, neg_eigval = false, gate_in_kernel = false, A_log = false, dt_bias = false;
  std::optional<double> lower_bound{};
};

const Preprocess kCases[] = {
    {.name = "none"},
    {.name = "l2norm and scale", .l2norm = true, .scale = 0.3},
    {.name = "beta logits", .logits = true},
    {.name = "beta logits, negative eigenvalues", .logits = true, .neg_eigval = true},
    {.name = "softplus gate", .gate_in_kernel = true, .A_log = true, .dt_bias = true},
    {.name = "softplus gate without dt_bias", .gate_in_kernel = true, .A_log = true},
    {.name = "lower-bound gate", .gate_in_kernel = true, .A_log = true, .dt_bias = true, .lower_bound = -5.0},
    {.name = "lower-bound gate without A_log", .gate_in_kernel = true, .dt_bias = true, .lower_bound = -5.0},
    {.name = "lower-bound gate without A_log and dt_bias", .gate_in_kernel = true, .lower_bound = -2.0},
    {.name = "everything",
     .l2norm = true, .logits = true, .neg_eigval = true, .gate_in_kernel = true, .A_log = true, .dt_bias = true},
};

Problem one_step_problem(const Preprocess& c, std::uint64_t seed) {
  ProblemSpec spec;
  spec.lengths = {1, 1, 1};
  spec.H = 2, spec.HV = 4, spec.K = 8, spec.V = 6;
  spec.input_dtype = spec.output_dtype = spec.state_dtype = DType::f64;
  spec.options.l2norm_qk = c.l2norm;
  spec.options.scale = c.scale;
  spec.options.beta_from_logits = c.logits;
  spec.options.allow_neg_eigval = c.neg_eigval;
  spec.options.gate_in_kernel = c.gate_in_kernel;
  spec.options.lower_bound = c.lower_bound;
  spec.with_A_log = c.A_log, spec.with_dt_bias = c.dt_bias;
  Problem p = make_problem(spec);
  fill_random(p, seed);
  if (c.gate_in_kernel) {  // both sides of the softplus threshold (20) and saturated sigmoids
    p.g.set({0, 0, 0, 0}, 25.0);
    p.g.set({0, 1, 1, 2}, 19.5);
    p.g.set({0, 2, 3, 7}, -25.0);
  }
  return p;
}

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }
double softplus(double x) { return x > 20 ? x : std::log1p(std::exp(x)); }

// The transcription: outputs in the reference's dense layout, states [N,HV,V,K] (the default layout).
ReferenceOutputs transcribe(const Problem& p) {
  const auto& op = p.options;
  const std::int64_t K = p.K, V = p.V, HV = p.HV;
  ReferenceOutputs out;
  out.o.assign(static_cast<std::size_t>(p.T * HV * V), 0.0);
  out.final_state.assign(static_cast<std::size_t>(p.N * HV * V * K), 0.0);
  for (std::int64_t n = 0; n < p.N; ++n)
    for (std::int64_t hv = 0; hv < HV; ++hv) {
      const std::int64_t t = p.first(n), h = hv / (HV / p.H);
      std::vector<double> q(K), k(K), g(K), v(V);
      for (std::int64_t d = 0; d < K; ++d) q[d] = p.q.at({0, t, h, d}), k[d] = p.k.at({0, t, h, d});
      for (std::int64_t j = 0; j < V; ++j) v[j] = p.v.at({0, t, hv, j});
      if (op.l2norm_qk)
        for (auto* x : {&q, &k}) {
          double sum = 0;
          for (double e : *x) sum += e * e;
          for (double& e : *x) e /= std::sqrt(sum + 1e-6);
        }
      for (double& e : q) e *= op.scale_for(K);
      double beta = p.beta.at({0, t, hv});
      if (op.beta_from_logits) beta = (op.allow_neg_eigval ? 2 : 1) * sigmoid(beta);
      for (std::int64_t d = 0; d < K; ++d) {
        g[d] = p.g.at({0, t, hv, d});
        if (!op.gate_in_kernel) continue;
        const double x = g[d] + (p.dt_bias ? p.dt_bias->at({hv * K + d}) : 0.0);
        const double A = p.A_log ? std::exp(p.A_log->at({hv})) : 1.0;
        g[d] = op.lower_bound ? *op.lower_bound * sigmoid(A * x) : -A * softplus(x);
      }
      std::vector<std::vector<double>> S(K, std::vector<double>(V));
      for (std::int64_t d = 0; d < K; ++d)
        for (std::int64_t j = 0; j < V; ++j) S[d][j] = p.initial_state->at({n, hv, j, d}) * std::exp(g[d]);
      for (std::int64_t j = 0; j < V; ++j) {
        double kS = 0, o = 0;
        for (std::int64_t d = 0; d < K; ++d) kS += k[d] * S[d][j];
        for (std::int64_t d = 0; d < K; ++d) S[d][j] += beta * k[d] * (v[j] - kS);
        for (std::int64_t d = 0; d < K; ++d) o += q[d] * S[d][j];
        out.o[static_cast<std::size_t>((t * HV + hv) * V + j)] = o;
        for (std::int64_t d = 0; d < K; ++d) out.final_state[static_cast<std::size_t>(((n * HV + hv) * V + j) * K + d)] = S[d][j];
      }
    }
  return out;
}

TEST(ReferencePreprocess, MatchesTranscribedFormulas) {
  std::uint64_t seed = 100;
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.name);
    const Problem p = one_step_problem(c, seed++);
    const auto expected = transcribe(p);
    for (auto algorithm : {Algorithm::recurrent, Algorithm::chunked}) {
      SCOPED_TRACE(name_of(algorithm));
      const auto out = run_reference<double>(p, algorithm);
      EXPECT_LE(test::rel_rms(expected.o, out.o), 1e-14);
      EXPECT_LE(test::rel_rms(expected.final_state, out.final_state), 1e-14);
    }
  }
}

}  // namespace
}  // namespace kda
