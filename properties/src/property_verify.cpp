// verify-commit, verify-keeps-committed and verify-initial-slot: the speculative-decoding verify call.
#include <rapidcheck.h>

#include <cmath>
#include <cstring>
#include <random>

#include "failure_text.hpp"
#include "generators_internal.hpp"
#include "invariance_support.hpp"
#include "kda/metrics.hpp"
#include "kda/properties/problem_surgery.hpp"
#include "kda/properties/property_bodies.hpp"

namespace kda::props {

namespace {

using i64 = std::int64_t;
using detail::format_value;
using detail::lines;

std::string str(i64 x) { return std::to_string(x); }


// The outputs of request n's tokens as decode steps, one token each, from its committed state (the
// slot its accepted count or index names): each step's pool state carried into the next. A kernel
// without decode calls takes each step as a one-token index-table verify, which is the same call.
std::vector<ReferenceOutputs> decode_steps(Kernel& kernel, const Problem& base, i64 n, const std::string& role) {
  std::vector<ReferenceOutputs> steps;
  Problem previous;
  for (i64 t = 0; t < base.length(n); ++t) {
    Cut cut;
    cut.sequence = n, cut.first = t, cut.length = 1, cut.mode = Mode::decode, cut.source = StateSource::pool;
    Problem step = extract_sequence(base, cut);
    if (!unfit(kernel, step).empty()) {
      cut.mode = Mode::verify, cut.source = StateSource::table;
      step = extract_sequence(base, cut);
    }
    if (t > 0) carry_state(previous, step);
    if (const auto why = unfit(kernel, step); !why.empty()) RC_DISCARD("a decode step: " + why);
    run_or_fail(kernel, step, role + ": decode step " + str(t) + " of request " + str(n), base);
    steps.push_back(read_outputs(step));
    if (step.mode == Mode::verify) steps.back().final_state = steps.back().token_states;  // its one token's state
    previous = std::move(step);
  }
  return steps;
}

// rel_rms (metrics.hpp) summed item by item in the same order: a realistic verify call's states are
// GiB as doubles, so they are compared as they come rather than gathered.
struct RelRms {
  double err = 0, norm = 0;
  bool non_finite = false;
  void add(const double* out, const double* ref, i64 n) {
    for (i64 i = 0; i < n; ++i) {
      if (!std::isfinite(out[i]) || !std::isfinite(ref[i])) non_finite = true;
      err += (out[i] - ref[i]) * (out[i] - ref[i]);
      norm += ref[i] * ref[i];
    }
  }
  double value() const {
    if (non_finite || (norm == 0 && err != 0)) return INFINITY;
    return norm == 0 ? 0.0 : std::sqrt(err / norm);
  }
};

// One kind of value (the states, or o) compared over every (request, token): verify against decode,
// for the kernel and for its precision model, and the kernel's worst element.
struct Gathered {
  RelRms kernel, model;
  double largest = -1, worst_verify = 0, worst_decode = 0;
  i64 worst = -1;                       // item * size + element
  std::vector<std::pair<i64, i64>> at;  // (request, token) of each item
  i64 size = 0;                         // values per item

  // Item (n, t): `size` values from item verify_at of verify / model_verify and decode_at of decode / model_decode.
  void add(i64 n, i64 t, const std::vector<double>& verify, const std::vector<double>& model_verify, i64 verify_at,
           const std::vector<double>& decode, const std::vector<double>& model_decode, i64 decode_at) {
    const double* v = verify.data() + verify_at * size;
    const double* d = decode.data() + decode_at * size;
    for (i64 i = 0; i < size; ++i) {
      const bool one_finite = std::isfinite(v[i]) != std::isfinite(d[i]);
      const double diff = one_finite ? INFINITY : std::isfinite(v[i]) ? std::abs(v[i] - d[i]) : 0.0;
      if (diff > largest)
        largest = diff, worst = static_cast<i64>(at.size()) * size + i, worst_verify = v[i], worst_decode = d[i];
    }
    kernel.add(v, d, size);
    model.add(model_verify.data() + verify_at * size, model_decode.data() + decode_at * size, size);
    at.emplace_back(n, t);
  }
};

// Fails when the kernel's verify and decode values disagree beyond the tolerance policy: alpha x the
// precision model's own verify-vs-decode disagreement + the output's unit roundoff + the state dtype's
// (each decode step rounds the carried state to it; a verify call carries it unrounded).
void require_commit_agreement(const CheckContext& context, const char* what, const Gathered& g, DType dtype,
                              DType state_dtype, const Problem& base) {
  const double largest = g.largest;
  const i64 worst = g.worst;
  const double error = g.kernel.value(), model_error = g.model.value();
  const double bound = context.policy.bound(model_error, dtype) + unit_roundoff(state_dtype);
  if (largest != INFINITY && error <= bound) return;
  const auto [n, t] = g.at[static_cast<std::size_t>(worst / g.size)];
  RC_FAIL(std::string("verify then commit: the ") + what + " after accepting " + str(t + 1) + " token(s) of request " +
          str(n) + (largest == INFINITY ? " is NaN or Inf in one run only" : " differs by rel-RMS " + format_value(error)) +
          " between the verify call and " + str(t + 1) + " decode step(s) from the committed state (bound " +
          format_value(bound) + ", model " + format_value(model_error) + "); worst element " + str(worst % g.size) +
          ": verify " + format_value(g.worst_verify) + ", decode " + format_value(g.worst_decode) + "\n  problem: " + base.describe());
}

// Every pool slot no live request starts from refilled with finite seeded values (the case has poison there).
void refill_unread_slots(Problem& p, std::uint64_t seed) {
  Tensor& pool = *p.state_pool;
  std::vector<char> read(static_cast<std::size_t>(pool.shape()[0]), 0);
  for (i64 n = 0; n < p.N; ++n)
    if (const i64 slot = p.initial_slot(n); slot >= 0) read[static_cast<std::size_t>(slot)] = 1;
  std::mt19937_64 engine(seed);
  for (i64 slot = 0; slot < pool.shape()[0]; ++slot)
    if (!read[static_cast<std::size_t>(slot)])
      for_each_index(Shape(pool.shape().begin() + 1, pool.shape().end()), [&](std::span<const i64> i) {
        pool.set({slot, i[0], i[1], i[2]}, static_cast<double>(engine() >> 11) * 0x1.0p-53 - 0.5);
      });
}

// The first element where two arrays differ bit for bit; -1 when none.
i64 first_difference(const std::vector<double>& a, const std::vector<double>& b) {
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(double)) != 0) return static_cast<i64>(i);
  return -1;
}

}  // namespace

void check_verify_commit(CheckContext& context) {
  const DrawnCase drawn = draw_case(context, {.verify = true});
  const Problem& base = drawn.problem;
  context.note_case(base);
  Problem verified = deep_copy(base), modelled = deep_copy(base);
  run_or_fail(context.kernel, verified, "the verify call", base);
  run_or_fail(context.model, modelled, "the precision model's verify call", base);
  const ReferenceOutputs got = read_outputs(verified), model = read_outputs(modelled);
  const i64 per_state = base.HV * base.K * base.V, per_o = base.HV * base.V;
  Gathered states, o;
  states.size = per_state, o.size = per_o;
  for (i64 n = 0; n < base.N; ++n) {
    if (base.initial_slot(n) < 0 || base.length(n) == 0) continue;  // a padding request: nothing to commit
    const auto decoded = decode_steps(context.kernel, base, n, "the kernel");
    const auto model_decoded = decode_steps(context.model, base, n, "the precision model");
    for (i64 t = 0; t < base.length(n); ++t) {
      const i64 token = base.row(n) * base.T + base.first(n) + t;
      const auto& step = decoded[static_cast<std::size_t>(t)];
      const auto& model_step = model_decoded[static_cast<std::size_t>(t)];
      o.add(n, t, got.o, model.o, token, step.o, model_step.o, 0);
      if (base.token_slot(n, t) < 0) continue;  // a -1 entry: that state is not stored
      states.add(n, t, got.token_states, model.token_states, token, step.final_state, model_step.final_state, 0);
    }
  }
  RC_PRE(!o.at.empty());
  const DType state_dtype = base.state_pool->dtype();
  if (!states.at.empty())
    require_commit_agreement(context, "state", states, base.scratch_states ? base.scratch_states->dtype() : state_dtype,
                             state_dtype, base);
  require_commit_agreement(context, "output o", o, base.o.dtype(), state_dtype, base);
}

void check_verify_keeps_committed(CheckContext& context) {
  const DrawnCase drawn = draw_case(context, {.sources = {StateSource::scratch}});
  context.note_case(drawn.problem);
  Problem run = deep_copy(drawn.problem);
  const Snapshot before(run);
  run_or_fail(context.kernel, run, "the scratch-form verify call", drawn.problem);
  std::vector<std::string> changed;
  for (const ByteChange& c : before.changed_anywhere(run))
    if (c.buffer == run.state_pool->buffer->name()) changed.push_back(c.describe());
  if (!changed.empty())
    RC_FAIL("a scratch-form verify changed the committed pool (it may only read it):" + lines(changed) +
            "\n  problem: " + drawn.problem.describe());
}

void check_verify_initial_slot(CheckContext& context) {
  const DrawnCase drawn = draw_case(context, {.verify = true});
  const Problem& base = drawn.problem;
  context.note_case(base);
  Problem poisoned = deep_copy(base), refilled = deep_copy(base);
  refill_unread_slots(refilled, drawn.spec.data_seed ^ 0x5bd1e995u);
  run_or_fail(context.kernel, poisoned, "the verify call (other slots poisoned)", base);
  run_or_fail(context.kernel, refilled, "the verify call (other slots refilled)", base);
  const ReferenceOutputs a = read_outputs(poisoned), b = read_outputs(refilled);
  const char* states = base.scratch_states ? "scratch_states" : "state_pool";
  for (const auto& [tensor, x, y] : {std::tuple{"o", &a.o, &b.o}, std::tuple{states, &a.token_states, &b.token_states}})
    if (const i64 i = first_difference(*x, *y); i >= 0)
      RC_FAIL(std::string(tensor) + " depends on pool slots no request starts from: at " + locate(base, tensor, i).describe() +
              " it is " + format_value((*x)[static_cast<std::size_t>(i)]) + " with those slots poisoned and " +
              format_value((*y)[static_cast<std::size_t>(i)]) + " with them refilled\n  problem: " + base.describe());
}

}  // namespace kda::props
