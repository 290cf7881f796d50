// Causality (FLA issue 1240 found a real violation): changing any input of token t changes nothing
// computed before t, bit for bit: no output row, token state or chunk-start state before t, and
// nothing at all in another sequence. Positions cover a chunk's first and last token.
#include <gtest/gtest.h>

#include "reference_test_support.hpp"

namespace kda {
namespace {

ProblemSpec causality_spec() {
  ProblemSpec spec;
  spec.lengths = {70, 100};
  spec.H = 1, spec.HV = 2, spec.K = 16, spec.V = 16;
  spec.options.l2norm_qk = true;
  spec.options.chunk_size = 32;
  spec.chunk_states = spec.token_states = true;
  return spec;
}

// One input of token t, changed: q, k, v shifted, g more negative, beta halved.
void perturb(Problem& p, int input, std::int64_t t) {
  Tensor* tensors[] = {&p.q, &p.k, &p.v, &p.g, &p.beta};
  Tensor& x = *tensors[input];
  for_each_index(x.shape(), [&](std::span<const std::int64_t> i) {
    if (i[1] != t) return;
    const double value = x.at(i);
    x.set(i, input == 3 ? value - 0.5 : input == 4 ? value * 0.5 : value + 0.5);
  });
}

std::vector<double> prefix(const std::vector<double>& all, std::size_t elements) {
  return {all.begin(), all.begin() + static_cast<std::ptrdiff_t>(elements)};
}

TEST(ReferenceCausality, ChangingTokenTChangesNothingBeforeIt) {
  Problem base = make_problem(causality_spec());
  fill_random(base, 61);
  const char* names[] = {"q", "k", "v", "g", "beta"};
  const auto row = static_cast<std::size_t>(base.HV * base.V);           // o elements per token
  const auto state = static_cast<std::size_t>(base.HV * base.K * base.V);  // state elements per token or chunk
  const std::int64_t first = base.first(1), C = base.options.chunk_size;
  for (auto algorithm : {Algorithm::recurrent, Algorithm::chunked}) {
    const auto expected = run_reference<double>(base, algorithm);
    for (std::int64_t position : {0, 17, 31, 32, 64, 99})
      for (int input = 0; input < 5; ++input) {
        SCOPED_TRACE(std::string(name_of(algorithm)) + " " + names[input] + " at position " + std::to_string(position));
        Problem changed = deep_copy(base);
        const std::int64_t t = first + position;
        perturb(changed, input, t);
        const auto out = run_reference<double>(changed, algorithm);
        const auto before = static_cast<std::size_t>(t);
        EXPECT_EQ(prefix(out.o, before * row), prefix(expected.o, before * row));
        EXPECT_EQ(prefix(out.token_states, before * state), prefix(expected.token_states, before * state));
        // Chunk-start states of sequence 0 (3 chunks) and of sequence 1's chunks starting at or before t.
        const auto chunks = static_cast<std::size_t>(3 + position / C + 1);
        EXPECT_EQ(prefix(out.chunk_states, chunks * state), prefix(expected.chunk_states, chunks * state));
        EXPECT_EQ(test::states(out.final_state, base, 0, 1), test::states(expected.final_state, base, 0, 1));
        EXPECT_NE(test::o_row(out, base, 0, t, 0), test::o_row(expected, base, 0, t, 0));  // the change took effect
      }
  }
}

}  // namespace
}  // namespace kda
