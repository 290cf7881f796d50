// [V,K] and [K,V] states (kda-facts §3) describe the same K x V state: the reference keeps one working
// layout and converts where states are read or written, so the two layouts give bit-identical outputs
// and states that are exact transposes. A square state read in the wrong layout is the silent failure
// of §3 (it passes every shape check); the last test shows it changes the output.
#include <gtest/gtest.h>

#include "reference_test_support.hpp"

namespace kda {
namespace {

Problem layout_problem(StateLayout layout, std::int64_t K, std::int64_t V) {
  ProblemSpec spec;
  spec.lengths = {70, 0, 5};
  spec.H = 1, spec.HV = 2, spec.K = K, spec.V = V;
  spec.state_dtype = DType::f64;
  spec.chunk_states = spec.token_states = true;
  spec.options.state_layout = layout;
  spec.options.l2norm_qk = true;
  return make_problem(spec);
}

// Copies vk's inputs into kv, with each initial state transposed (or not, to model the bug).
Problem as_kv(const Problem& vk, bool transpose_states) {
  Problem kv = layout_problem(StateLayout::kv, vk.K, vk.V);
  test::copy_inputs(vk, kv);
  for_each_index(kv.initial_state->shape(), [&](std::span<const std::int64_t> i) {
    kv.initial_state->set(i, transpose_states ? vk.initial_state->at({i[0], i[1], i[3], i[2]}) : vk.initial_state->at(i));
  });
  return kv;
}

// Each [a,b] state of a dense state array, transposed to [b,a].
std::vector<double> transposed(const std::vector<double>& s, std::int64_t a, std::int64_t b) {
  std::vector<double> t(s.size());
  for (std::size_t base = 0; base < s.size(); base += static_cast<std::size_t>(a * b))
    for (std::int64_t i = 0; i < a; ++i)
      for (std::int64_t j = 0; j < b; ++j) t[base + static_cast<std::size_t>(j * a + i)] = s[base + static_cast<std::size_t>(i * b + j)];
  return t;
}

TEST(ReferenceLayout, KvStatesAreExactTransposesOfVk) {
  for (auto [K, V] : {std::pair<std::int64_t, std::int64_t>{16, 60}, {32, 32}}) {
    Problem vk = layout_problem(StateLayout::vk, K, V);
    fill_random(vk, 21);
    const Problem kv = as_kv(vk, true);
    for (auto algorithm : {Algorithm::recurrent, Algorithm::chunked}) {
      SCOPED_TRACE(std::string(name_of(algorithm)) + " K=" + std::to_string(K) + " V=" + std::to_string(V));
      const auto a = run_reference<double>(vk, algorithm);
      const auto b = run_reference<double>(kv, algorithm);
      EXPECT_EQ(a.o, b.o);
      EXPECT_EQ(transposed(a.final_state, V, K), b.final_state);
      EXPECT_EQ(transposed(a.chunk_states, V, K), b.chunk_states);
      EXPECT_EQ(transposed(a.token_states, V, K), b.token_states);
    }
  }
}

TEST(ReferenceLayout, ASquareStateReadInTheWrongLayoutChangesTheOutput) {
  Problem vk = layout_problem(StateLayout::vk, 32, 32);
  fill_random(vk, 22);
  const auto right = run_reference<double>(vk, Algorithm::recurrent);
  const auto wrong = run_reference<double>(as_kv(vk, false), Algorithm::recurrent);
  EXPECT_GT(test::rel_rms(right.o, wrong.o), 1e-3);
}

}  // namespace
}  // namespace kda
