// A case small enough to derive by hand: T = 3, K = V = 2, one head, scale 1, no l2norm, beta given.
// States are written K x V (row d = key channel d), as in kda-facts §1.
//
//   S0 = [[2, 0], [4, 2]]
//   t0: g = (0, ln 1/2)  k = (1, 0)  v = (1, 2)  beta = 1/2  q = (1, 1)
//       decay rows by (1, 1/2):         S = [[2, 0], [2, 1]]
//       S^T k = row 0 = (2, 0);  v - S^T k = (-1, 2);  row 0 += 1/2 (-1, 2)
//       S1 = [[3/2, 1], [2, 1]]          o0 = S1^T q = row 0 + row 1 = (7/2, 2)
//   t1: g = (ln 1/2, 0)  k = (0, 1)  v = (2, 0)  beta = 1  q = (1, 0)
//       decay rows by (1/2, 1):         S = [[3/4, 1/2], [2, 1]]
//       S^T k = row 1 = (2, 1);  v - S^T k = (0, -1);  row 1 += (0, -1)
//       S2 = [[3/4, 1/2], [2, 0]]        o1 = row 0 = (3/4, 1/2)
//   t2: g = (0, 0)  k = (1, 0)  v = (0, 4)  beta = 1/2  q = (0, 1)
//       no decay; S^T k = row 0 = (3/4, 1/2);  v - S^T k = (-3/4, 7/2);  row 0 += 1/2 (-3/4, 7/2)
//       S3 = [[3/8, 9/4], [2, 0]]        o2 = row 1 = (2, 0)
//
// One chunk (chunk size 32), so the only chunk-start state is S0.
#include <gtest/gtest.h>

#include <array>
#include <cmath>

#include "reference_test_support.hpp"

namespace kda {
namespace {

using Matrix2 = std::array<std::array<double, 2>, 2>;  // [d][j]: K x V

Problem hand_problem(StateLayout layout) {
  ProblemSpec spec;
  spec.lengths = {3};
  spec.varlen = false;
  spec.K = spec.V = 2;
  spec.input_dtype = spec.output_dtype = spec.state_dtype = DType::f64;
  spec.chunk_states = spec.token_states = true;
  spec.options.scale = 1.0;
  spec.options.chunk_size = 32;
  spec.options.state_layout = layout;
  Problem p = make_problem(spec);
  const double half = std::log(0.5);
  const double g[3][2] = {{0, half}, {half, 0}, {0, 0}};
  const double k[3][2] = {{1, 0}, {0, 1}, {1, 0}};
  const double v[3][2] = {{1, 2}, {2, 0}, {0, 4}};
  const double q[3][2] = {{1, 1}, {1, 0}, {0, 1}};
  const double beta[3] = {0.5, 1, 0.5};
  for (std::int64_t t = 0; t < 3; ++t) {
    for (std::int64_t d = 0; d < 2; ++d) {
      p.g.set({0, t, 0, d}, g[t][d]);
      p.k.set({0, t, 0, d}, k[t][d]);
      p.q.set({0, t, 0, d}, q[t][d]);
      p.v.set({0, t, 0, d}, v[t][d]);
    }
    p.beta.set({0, t, 0}, beta[t]);
  }
  const Matrix2 S0 = {{{2, 0}, {4, 2}}};
  for (std::int64_t d = 0; d < 2; ++d)
    for (std::int64_t j = 0; j < 2; ++j)
      p.initial_state->set(layout == StateLayout::kv ? std::initializer_list<std::int64_t>{0, 0, d, j}
                                                     : std::initializer_list<std::int64_t>{0, 0, j, d},
                           S0[d][j]);
  return p;
}

// A K x V state as the outputs store it: [K,V] row-major, or [V,K] (transposed).
std::vector<double> stored(const Matrix2& s, StateLayout layout) {
  if (layout == StateLayout::kv) return {s[0][0], s[0][1], s[1][0], s[1][1]};
  return {s[0][0], s[1][0], s[0][1], s[1][1]};
}

template <class Acc>
void expect_hand_values(StateLayout layout, Algorithm algorithm, double tolerance) {
  const Matrix2 S0 = {{{2, 0}, {4, 2}}}, S1 = {{{1.5, 1}, {2, 1}}}, S2 = {{{0.75, 0.5}, {2, 0}}},
                S3 = {{{0.375, 2.25}, {2, 0}}};
  const auto out = run_reference<Acc>(hand_problem(layout), algorithm);
  auto expect_near = [&](const std::vector<double>& actual, const std::vector<double>& expected, const char* what) {
    ASSERT_EQ(actual.size(), expected.size()) << what;
    for (std::size_t i = 0; i < expected.size(); ++i) EXPECT_NEAR(actual[i], expected[i], tolerance) << what << '[' << i << ']';
  };
  expect_near(out.o, {3.5, 2, 0.75, 0.5, 2, 0}, "o");
  expect_near(out.final_state, stored(S3, layout), "final_state");
  expect_near(out.chunk_states, stored(S0, layout), "chunk_states");
  std::vector<double> tokens;
  for (const auto& s : {S1, S2, S3})
    for (double x : stored(s, layout)) tokens.push_back(x);
  expect_near(out.token_states, tokens, "token_states");
}

// Only exp(ln 1/2) is inexact (to an ulp or two), and every value is of order 1.
TEST(ReferenceHand, Fp64BothAlgorithmsBothLayouts) {
  for (auto layout : {StateLayout::kv, StateLayout::vk})
    for (auto algorithm : {Algorithm::recurrent, Algorithm::chunked}) {
      SCOPED_TRACE(std::string(name_of(layout)) + " " + std::string(name_of(algorithm)));
      expect_hand_values<double>(layout, algorithm, 1e-14);
    }
}

TEST(ReferenceHand, Fp32BothAlgorithms) {
  for (auto algorithm : {Algorithm::recurrent, Algorithm::chunked}) {
    SCOPED_TRACE(name_of(algorithm));
    expect_hand_values<float>(StateLayout::vk, algorithm, 1e-6);
  }
}

}  // namespace
}  // namespace kda
