// Carrying the state across calls is the same as one call: a sequence split into two calls (the first
// call's final state as the second's initial state), and a prefill followed by decode steps on a
// state pool updated in place. States are fp64, so the hand-over is exact. The recurrent form does the
// same arithmetic token by token however the tokens are grouped, so it agrees bit for bit; so does the
// chunked form when the split falls on a chunk boundary. Elsewhere its chunks differ and it agrees to
// the 1e-12 of the recurrent/chunked equivalence (reference_equivalence_test.cpp).
#include <gtest/gtest.h>

#include "reference_test_support.hpp"

namespace kda {
namespace {

constexpr double kRegroupedTolerance = 1e-12;

ProblemSpec spec_of(std::vector<std::int64_t> lengths) {
  ProblemSpec spec;
  spec.lengths = std::move(lengths);
  spec.H = 1, spec.HV = 2, spec.K = 32, spec.V = 24;
  spec.state_dtype = DType::f64;
  spec.options.l2norm_qk = true;
  return spec;
}

void expect_same(const std::vector<double>& expected, const std::vector<double>& actual, bool exact) {
  if (exact)
    EXPECT_EQ(expected, actual);
  else
    EXPECT_LE(test::rel_rms(expected, actual), kRegroupedTolerance);
}

TEST(ReferenceSplit, TwoCallsWithTheStateCarriedEqualOneCall) {
  constexpr std::int64_t L = 150;
  Problem whole = make_problem(spec_of({L}));
  fill_random(whole, 41);
  for (std::int64_t split : {64, 77}) {
    Problem first = make_problem(spec_of({split})), second = make_problem(spec_of({L - split}));
    test::copy_tokens(whole, 0, 0, first, 0, 0, split);
    test::copy_tokens(whole, 0, split, second, 0, 0, L - split);
    test::copy_values(*whole.initial_state, *first.initial_state);
    for (auto algorithm : {Algorithm::recurrent, Algorithm::chunked}) {
      SCOPED_TRACE(std::string(name_of(algorithm)) + " split at " + std::to_string(split));
      const bool exact = algorithm == Algorithm::recurrent || split % whole.options.chunk_size == 0;
      const auto one = run_reference<double>(whole, algorithm);
      const auto a = run_reference<double>(first, algorithm);
      write_outputs(a, first);
      test::copy_values(*first.final_state, *second.initial_state);
      const auto b = run_reference<double>(second, algorithm);
      std::vector<double> o = a.o;
      o.insert(o.end(), b.o.begin(), b.o.end());
      expect_same(one.o, o, exact);
      expect_same(one.final_state, b.final_state, exact);
    }
  }
}

TEST(ReferenceSplit, PrefillThenDecodeStepsEqualsOneLongerPrefill) {
  constexpr std::int64_t kSteps = 5;
  const std::vector<std::int64_t> prompt{70, 33};
  Problem whole = make_problem(spec_of({prompt[0] + kSteps, prompt[1] + kSteps}));
  fill_random(whole, 42);
  Problem prefill = make_problem(spec_of(prompt));
  for (std::int64_t n = 0; n < 2; ++n) test::copy_tokens(whole, 0, whole.first(n), prefill, 0, prefill.first(n), prompt[n]);
  test::copy_values(*whole.initial_state, *prefill.initial_state);

  ProblemSpec decode_spec = spec_of({1, 1});
  decode_spec.mode = Mode::decode;
  decode_spec.varlen = false;
  decode_spec.state = StateSource::pool;
  decode_spec.indices = {2, 0};
  for (auto algorithm : {Algorithm::recurrent, Algorithm::chunked}) {
    SCOPED_TRACE(name_of(algorithm));
    const bool exact = algorithm == Algorithm::recurrent;
    const auto one = run_reference<double>(whole, algorithm);
    const auto pre = run_reference<double>(prefill, algorithm);
    Problem decode = make_problem(decode_spec);
    for (std::int64_t n = 0; n < 2; ++n)  // the prefill's final states into the sequences' pool slots
      test::set_slot(decode, decode_spec.indices[n], test::states(pre.final_state, prefill, n, 1));
    for (std::int64_t step = 0; step < kSteps; ++step) {
      for (std::int64_t n = 0; n < 2; ++n) test::copy_tokens(whole, 0, whole.first(n) + prompt[n] + step, decode, n, 0, 1);
      const auto out = run_reference<double>(decode, algorithm);
      write_outputs(out, decode);
      for (std::int64_t n = 0; n < 2; ++n)
        for (std::int64_t hv = 0; hv < decode.HV; ++hv)
          expect_same(test::o_row(one, whole, 0, whole.first(n) + prompt[n] + step, hv), test::o_row(out, decode, n, 0, hv),
                      exact);
    }
    for (std::int64_t n = 0; n < 2; ++n)
      expect_same(test::states(one.final_state, whole, n, 1), test::slot_values(decode, decode_spec.indices[n]), exact);
  }
}

}  // namespace
}  // namespace kda
