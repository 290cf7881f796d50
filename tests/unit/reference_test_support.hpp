#pragma once
// Shared by the reference_*_test.cpp files: the error metric and small problem builders.
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kda/metrics.hpp"
#include "kda/problem_factory.hpp"
#include "kda/reference.hpp"

namespace kda::test {

// RMS(ref - out) / RMS(ref), the metric peers use (kda-facts §5).
inline double rel_rms(const std::vector<double>& ref, const std::vector<double>& out) { return kda::rel_rms(out, ref); }

// A problem with seeded random inputs, q and k l2-normalised (every step a contraction).
inline Problem random_problem(ProblemSpec spec, std::uint64_t seed) {
  spec.options.l2norm_qk = true;
  Problem p = make_problem(spec);
  fill_random(p, seed);
  return p;
}

// Sets a fraction of the pre-activated gates to -1000 (exp(-1000) < 1e-38: the key channel is wiped).
inline void add_strong_gates(Problem& p, double fraction, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::bernoulli_distribution pick(fraction);
  for_each_index(p.g.shape(), [&](std::span<const std::int64_t> idx) {
    if (pick(rng)) p.g.set(idx, -1000.0);
  });
}

// Every element of `to` from the element of `from` at the same index (same shape, any dtype/strides).
inline void copy_values(const Tensor& from, Tensor& to) {
  for_each_index(to.shape(), [&](std::span<const std::int64_t> idx) { to.set(idx, from.at(idx)); });
}

// q, k, v, g, beta, A_log and dt_bias of `from` into `to` (same sizes).
inline void copy_inputs(const Problem& from, Problem& to) {
  copy_values(from.q, to.q), copy_values(from.k, to.k), copy_values(from.v, to.v);
  copy_values(from.g, to.g), copy_values(from.beta, to.beta);
  if (from.A_log) copy_values(*from.A_log, *to.A_log);
  if (from.dt_bias) copy_values(*from.dt_bias, *to.dt_bias);
}

// Tokens [from_t0, from_t0 + count) of batch row from_b of `from`'s q, k, v, g and beta into tokens
// [to_t0, ..) of batch row to_b of `to` (same heads and head dims).
inline void copy_tokens(const Problem& from, std::int64_t from_b, std::int64_t from_t0, Problem& to, std::int64_t to_b,
                        std::int64_t to_t0, std::int64_t count) {
  for (auto [src, dst] : {std::pair{&from.q, &to.q}, {&from.k, &to.k}, {&from.v, &to.v}, {&from.g, &to.g}})
    for (std::int64_t t = 0; t < count; ++t)
      for (std::int64_t h = 0; h < src->shape()[2]; ++h)
        for (std::int64_t d = 0; d < src->shape()[3]; ++d)
          dst->set({to_b, to_t0 + t, h, d}, src->at({from_b, from_t0 + t, h, d}));
  for (std::int64_t t = 0; t < count; ++t)
    for (std::int64_t hv = 0; hv < from.HV; ++hv)
      to.beta.set({to_b, to_t0 + t, hv}, from.beta.at({from_b, from_t0 + t, hv}));
}

// Output row (b, t, hv) of o: V values.
inline std::vector<double> o_row(const ReferenceOutputs& out, const Problem& p, std::int64_t b, std::int64_t t,
                                 std::int64_t hv) {
  const auto at = static_cast<std::ptrdiff_t>(((b * p.T + t) * p.HV + hv) * p.V);
  return {out.o.begin() + at, out.o.begin() + at + p.V};
}

// States n0 .. n0 + count - 1 of a dense [.., HV, ..] state array.
inline std::vector<double> states(const std::vector<double>& all, const Problem& p, std::int64_t n0, std::int64_t count) {
  const auto per = static_cast<std::ptrdiff_t>(p.HV * p.K * p.V);
  return {all.begin() + n0 * per, all.begin() + (n0 + count) * per};
}

// One sequence's states [HV, ..] (dense, in the problem's layout) into, or out of, a pool slot.
inline void set_slot(Problem& p, std::int64_t slot, const std::vector<double>& values) {
  const Shape head = p.state_head_shape();
  std::size_t i = 0;
  for_each_index(Shape{p.HV, head[0], head[1]}, [&](std::span<const std::int64_t> at) {
    p.state_pool->set({slot, at[0], at[1], at[2]}, values.at(i++));
  });
}
inline std::vector<double> slot_values(const Problem& p, std::int64_t slot) {
  const Shape head = p.state_head_shape();
  std::vector<double> values;
  for_each_index(Shape{p.HV, head[0], head[1]}, [&](std::span<const std::int64_t> at) {
    values.push_back(p.state_pool->at({slot, at[0], at[1], at[2]}));
  });
  return values;
}

}  // namespace kda::test
