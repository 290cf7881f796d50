// Speculative verify (problem.hpp) against what it must equal: request n of a verify call is a prefill
// of its tokens from the slot its accepted count names, the state after each token stored where the
// form says. Both sides are the fp64 recurrence over the same tokens, so they agree bit for bit; the
// chunked form regroups the tokens and agrees to the 1e-12 of reference_equivalence_test.cpp.
#include <gtest/gtest.h>

#include <set>

#include "kda/contract.hpp"
#include "reference_test_support.hpp"

namespace kda {
namespace {

constexpr double kRegroupedTolerance = 1e-12;

// Three requests of L = 4 (one ragged, one a padding row in the table form), GVA, K != V, every
// in-kernel option.
ProblemSpec verify_spec(StateSource form, StateLayout layout) {
  ProblemSpec s;
  s.mode = Mode::verify;
  s.state = form;
  s.lengths = {4, 2, 4};
  s.L = 4;
  s.H = 1, s.HV = 2, s.K = 16, s.V = 8;
  s.state_dtype = DType::f64;
  s.final_state = false;
  s.options.state_layout = layout;
  s.options.l2norm_qk = s.options.beta_from_logits = s.options.gate_in_kernel = true;
  s.with_A_log = s.with_dt_bias = true;
  if (form == StateSource::table) {
    s.pool_slots = 14;
    // request 0 starts from column 3 (slot 13), request 1 from column 0, request 2 is padding (-1).
    s.indices = {10, 11, 12, 13, 3, 2, -1, 0, -1, 5, 6, 7};
    s.accepted = {4, 1, 1};
    s.accepted_dtype = DType::i64;
  } else {
    s.pool_slots = 5;
    s.indices = {3, -1, 0};
    s.scratch_rows = 4, s.scratch_steps = 6;
    s.scratch_indices = {2, 0, 3};
  }
  return s;
}

// The prefill request n of a verify call amounts to: its tokens from its initial slot, per-token states.
Problem prefill_of(const Problem& verify, std::int64_t n, ProblemSpec spec) {
  spec.mode = Mode::prefill;
  spec.state = StateSource::dense;
  spec.lengths = {verify.length(n)};
  spec.token_states = true;
  Problem p = make_problem(spec);
  test::copy_tokens(verify, 0, verify.first(n), p, 0, 0, verify.length(n));
  test::copy_values(*verify.A_log, *p.A_log), test::copy_values(*verify.dt_bias, *p.dt_bias);
  const std::int64_t slot = verify.initial_slot(n);
  for_each_index(p.initial_state->shape(), [&](std::span<const std::int64_t> i) {
    p.initial_state->set(i, verify.state_pool->at({slot, i[1], i[2], i[3]}));
  });
  return p;
}

// The state after token t of the prefill, as a [HV,a,b] block.
std::vector<double> token_state(const ReferenceOutputs& out, std::int64_t t, std::int64_t state) {
  return {out.token_states.begin() + t * state, out.token_states.begin() + (t + 1) * state};
}

std::vector<double> stored(const Tensor& states, std::initializer_list<std::int64_t> lead) {
  std::vector<double> xs;
  Shape inner(states.shape().begin() + static_cast<std::ptrdiff_t>(lead.size()), states.shape().end());
  for_each_index(inner, [&](std::span<const std::int64_t> i) {
    std::vector<std::int64_t> idx(lead);
    idx.insert(idx.end(), i.begin(), i.end());
    xs.push_back(states.at(idx));
  });
  return xs;
}

class ReferenceVerify : public testing::TestWithParam<std::tuple<StateSource, StateLayout>> {};

TEST_P(ReferenceVerify, EachRequestIsAPrefillFromTheSlotItsFormNames) {
  const auto [form, layout] = GetParam();
  const ProblemSpec spec = verify_spec(form, layout);
  Problem verify = test::random_problem(spec, 91);
  Profile fp64_states = profile_strict();  // fp64 states: the hand-over to the prefill is exact
  fp64_states.state_dtypes.push_back(DType::f64);
  for (const auto& v : validate(verify, fp64_states)) ADD_FAILURE() << name_of(v.rule) << ": " << v.message;
  // The slots verify_spec's comments name: table [n, accepted - 1], scratch the indices themselves.
  const std::vector<std::int64_t> initial = form == StateSource::table ? std::vector<std::int64_t>{13, 3, -1}
                                                                       : std::vector<std::int64_t>{3, -1, 0};
  for (std::int64_t n = 0; n < verify.N; ++n) EXPECT_EQ(verify.initial_slot(n), initial[static_cast<std::size_t>(n)]);
  const Problem before = deep_copy(verify);
  const std::int64_t state = verify.HV * verify.K * verify.V;
  for (auto algorithm : {Algorithm::recurrent, Algorithm::chunked}) {
    SCOPED_TRACE(name_of(algorithm));
    Problem after = deep_copy(before);
    const auto out = run_reference<double>(after, algorithm);
    write_outputs(out, after);
    for (std::int64_t n = 0; n < verify.N; ++n) {
      SCOPED_TRACE("request " + std::to_string(n));
      if (verify.initial_slot(n) < 0) {  // padding row: zero output, nothing written
        for (std::int64_t t = 0; t < verify.length(n); ++t)
          for (std::int64_t hv = 0; hv < verify.HV; ++hv)
            for (std::int64_t j = 0; j < verify.V; ++j) EXPECT_EQ(after.o.at({0, verify.first(n) + t, hv, j}), 0.0);
        continue;
      }
      Problem prefill = prefill_of(before, n, spec);
      const auto want = run_reference<double>(prefill, Algorithm::recurrent);
      std::vector<double> o(out.o.begin() + verify.first(n) * verify.HV * verify.V,
                            out.o.begin() + (verify.first(n) + verify.length(n)) * verify.HV * verify.V);
      const bool exact = algorithm == Algorithm::recurrent;
      if (exact) {
        EXPECT_EQ(o, want.o);
      } else {
        EXPECT_LE(test::rel_rms(want.o, o), kRegroupedTolerance);
      }
      for (std::int64_t t = 0; t < verify.length(n); ++t) {
        const std::int64_t slot = verify.token_slot(n, t);
        if (slot < 0) continue;
        const auto got = form == StateSource::table ? stored(*after.state_pool, {slot})
                                                    : stored(*after.scratch_states, {slot, t});
        if (exact) {
          EXPECT_EQ(got, token_state(want, t, state)) << "token " << t;
        } else {
          EXPECT_LE(test::rel_rms(token_state(want, t, state), got), kRegroupedTolerance) << "token " << t;
        }
      }
    }
  }
}

// Everything but the named slots / scratch rows stays bit-identical: the scratch form's whole pool, the
// table form's slots no live token names (a padding request's, -1 columns', unused ones).
TEST_P(ReferenceVerify, WritesOnlyWhereTheFormNames) {
  const auto [form, layout] = GetParam();
  Problem verify = test::random_problem(verify_spec(form, layout), 92);
  const Problem before = deep_copy(verify);
  write_outputs(run_reference<double>(verify, Algorithm::recurrent), verify);
  std::set<std::int64_t> written;
  for (std::int64_t n = 0; n < verify.N; ++n)
    for (std::int64_t t = 0; verify.initial_slot(n) >= 0 && t < verify.length(n); ++t) {
      written.insert(verify.token_slot(n, t));
    }
  for (std::int64_t slot = 0; slot < verify.state_pool->shape()[0]; ++slot) {
    const bool named = form == StateSource::table && written.count(slot);
    if (!named) {
      EXPECT_EQ(stored(*verify.state_pool, {slot}), stored(*before.state_pool, {slot})) << "slot " << slot;
    }
  }
  if (form == StateSource::scratch) {
    const Tensor& s = *verify.scratch_states;
    for (std::int64_t row = 0; row < s.shape()[0]; ++row)
      for (std::int64_t step = 0; step < s.shape()[1]; ++step) {
        bool named = false;
        for (std::int64_t n = 0; n < verify.N; ++n) {
          named |= verify.initial_slot(n) >= 0 && verify.token_slot(n, step) == row && step < verify.length(n);
        }
        if (!named) {
          EXPECT_EQ(stored(s, {row, step}), stored(*before.scratch_states, {row, step}));
        }
      }
  }
}

INSTANTIATE_TEST_SUITE_P(FormsAndLayouts, ReferenceVerify,
                         testing::Combine(testing::Values(StateSource::table, StateSource::scratch),
                                          testing::Values(StateLayout::vk, StateLayout::kv)),
                         [](const auto& param_info) {
                           return std::string(name_of(std::get<0>(param_info.param))) + "_" +
                                  std::string(name_of(std::get<1>(param_info.param)));
                         });

// Verifying L tokens and keeping the state after a of them equals a single-token decode steps from
// the same committed state, for every a (kda-facts §7).
TEST(ReferenceVerifyCommit, VerifyThenCommitEqualsSequentialDecode) {
  ProblemSpec spec = verify_spec(StateSource::table, StateLayout::vk);
  spec.lengths = {4}, spec.indices = {1, 2, 3, 4}, spec.accepted = {1}, spec.pool_slots = 6;
  Problem verify = test::random_problem(spec, 93);
  const Problem committed = deep_copy(verify);
  write_outputs(run_reference<double>(verify, Algorithm::recurrent), verify);
  ProblemSpec step = spec;
  step.mode = Mode::decode, step.state = StateSource::pool, step.lengths = {1}, step.indices = {5};
  Problem decode = make_problem(step);
  test::copy_values(*committed.state_pool, *decode.state_pool);
  test::copy_values(*committed.A_log, *decode.A_log), test::copy_values(*committed.dt_bias, *decode.dt_bias);
  for_each_index(Shape{verify.HV, verify.V, verify.K}, [&](std::span<const std::int64_t> i) {
    decode.state_pool->set({5, i[0], i[1], i[2]}, committed.state_pool->at({1, i[0], i[1], i[2]}));
  });
  for (std::int64_t a = 1; a <= 4; ++a) {
    test::copy_tokens(committed, 0, a - 1, decode, 0, 0, 1);
    write_outputs(run_reference<double>(decode, Algorithm::recurrent), decode);
    EXPECT_EQ(stored(*decode.state_pool, {5}), stored(*verify.state_pool, {verify.token_slot(0, a - 1)})) << "a=" << a;
    for (std::int64_t hv = 0; hv < verify.HV; ++hv)
      for (std::int64_t j = 0; j < verify.V; ++j)
        EXPECT_EQ(decode.o.at({0, 0, hv, j}), verify.o.at({0, a - 1, hv, j})) << "a=" << a;
  }
}

}  // namespace
}  // namespace kda
