// The adversarial data mixes of build_case (DataMix), laid over fill_random's draws and the gate mix.
// Random draws use std::mt19937_64's raw output on a stream of their own (seed ^ kDataStream), so the
// same spec gives the same tensors everywhere.
#include <algorithm>
#include <cmath>
#include <random>

#include "generators_internal.hpp"

namespace kda::props::detail {

namespace {

constexpr std::uint64_t kDataStream = 0xd1b54a32d192ed03u;
constexpr i64 kRun = 16;                // tokens per run: one sub-chunk
constexpr double kNearZero = -1e-4;     // log-decay per token: almost no decay
constexpr double kStrongest = -5.0;     // the safe gate's floor
constexpr double kBeyondSafe = -20.0;   // far below it, where the lower-bound gate cannot reach

double unit(std::mt19937_64& engine) { return static_cast<double>(engine() >> 11) * 0x1.0p-53; }
double symmetric(std::mt19937_64& engine) { return 2.0 * unit(engine) - 1.0; }

// The raw entry that the in-kernel gate maps onto the log-decay `target` (< 0) for value head h,
// key channel c: the gate's formula solved for its input.
double raw_for(const Problem& p, i64 h, i64 c, double target) {
  const double A = p.A_log ? std::exp(p.A_log->at({h})) : 1.0;
  const double bias = p.dt_bias ? p.dt_bias->at({h * p.K + c}) : 0.0;
  if (p.options.lower_bound) {  // lb * sigmoid(A (x + bias)) = target
    const double s = std::clamp(target / *p.options.lower_bound, 1e-12, 1.0 - 1e-7);
    return std::log(s / (1.0 - s)) / A - bias;
  }
  return std::log(std::expm1(-target / A)) - bias;  // -A softplus(x + bias) = target
}

// The strongest gate of the case's form, or `unbounded` where the form has no floor.
double strongest(const Problem& p, double unbounded) {
  return p.options.gate_in_kernel && p.options.lower_bound ? *p.options.lower_bound : unbounded;
}

// Every gate entry of token (b, t) set to the log-decay `target`.
void set_gate(Problem& p, i64 b, i64 t, double target) {
  for (i64 h = 0; h < p.HV; ++h)
    for (i64 c = 0; c < p.K; ++c) p.g.set({b, t, h, c}, p.options.gate_in_kernel ? raw_for(p, h, c, target) : target);
}

void set_beta_near_one(Problem& p, i64 b, i64 t, std::mt19937_64& engine) {
  for (i64 h = 0; h < p.HV; ++h) {
    // logits: sigmoid(8) ~ 0.9997; with negative eigenvalues beta = 2 sigmoid(b): 1 at b = 0
    const double beta = p.options.beta_from_logits ? (p.options.allow_neg_eigval ? 0.0 : 8.0) : 1.0 - 1e-3 * unit(engine);
    p.beta.set({b, t, h}, beta);
  }
}

void normalize_key(Problem& p, i64 b, i64 t) {
  for (i64 h = 0; h < p.H; ++h) {
    double sum = 0;
    for (i64 c = 0; c < p.K; ++c) sum += p.k.at({b, t, h, c}) * p.k.at({b, t, h, c});
    if (sum > 0)
      for (i64 c = 0; c < p.K; ++c) p.k.set({b, t, h, c}, p.k.at({b, t, h, c}) / std::sqrt(sum));
  }
}

// Repeated or near-collinear keys in runs of 16 tokens, each run's gates near 0 or at the strongest,
// beta near 1.
void degenerate_keys(Problem& p, bool repeated, std::mt19937_64& engine) {
  for (i64 n = 0; n < p.N; ++n) {
    const i64 b = p.row(n), first = p.first(n), length = p.length(n);
    const double eps = std::pow(10.0, -3.0 - 3.0 * unit(engine));  // relative step of collinear keys
    double target = kNearZero;
    for (i64 i = 0; i < length; ++i) {
      const i64 t = first + i;
      if (i % kRun == 0) target = engine() & 1 ? kNearZero : strongest(p, kStrongest);
      set_gate(p, b, t, target);
      set_beta_near_one(p, b, t, engine);
      if (i == 0 || (repeated && i % kRun == 0)) continue;
      const i64 from = repeated ? first + i - i % kRun : t - 1;
      for (i64 h = 0; h < p.H; ++h) {
        double norm = 0;
        for (i64 c = 0; c < p.K; ++c) norm += p.k.at({b, from, h, c}) * p.k.at({b, from, h, c});
        const double step = repeated ? 0.0 : eps * std::sqrt(norm / static_cast<double>(p.K));
        for (i64 c = 0; c < p.K; ++c) p.k.set({b, t, h, c}, p.k.at({b, from, h, c}) + step * symmetric(engine));
      }
      if (!repeated && !p.options.l2norm_qk) normalize_key(p, b, t);
    }
  }
}

// Gates near 0 and small beta (0.01 .. 0.03): each delta step then overwrites little of the state,
// so tokens hundreds back and the initial state still shape the output (with beta ~ U(0,1) the delta
// rule itself forgets a K = 16 state within a few hundred tokens).
void long_memory(Problem& p, std::mt19937_64& engine) {
  for (i64 n = 0; n < p.N; ++n)
    for (i64 t = p.first(n); t < p.first(n) + p.length(n); ++t) {
      set_gate(p, p.row(n), t, kNearZero);
      for (i64 h = 0; h < p.HV; ++h) {
        const double beta = 0.01 + 0.02 * unit(engine);
        const double logit = std::log(beta / (p.options.allow_neg_eigval ? 2.0 - beta : 1.0 - beta));
        p.beta.set({p.row(n), t, h}, p.options.beta_from_logits ? logit : beta);
      }
    }
}

// One run of 16..32 tokens per sequence at the strongest gate (pre-activated and softplus: -5 or -20).
void strong_gates(Problem& p, std::mt19937_64& engine) {
  for (i64 n = 0; n < p.N; ++n) {
    const i64 length = p.length(n);
    const i64 run = std::min<i64>(length, kRun + static_cast<i64>(engine() % (kRun + 1)));
    const i64 start = p.first(n) + static_cast<i64>(engine() % static_cast<std::uint64_t>(length - run + 1));
    const double target = strongest(p, engine() & 1 ? kStrongest : kBeyondSafe);
    for (i64 t = start; t < start + run; ++t) set_gate(p, p.row(n), t, target);
  }
}

void scale(Tensor& t, double factor) {
  for_each_index(t.shape(), [&](std::span<const i64> idx) { t.set(idx, t.at(idx) * factor); });
}

// The states a call may read or write: fp16 ones (or fp16 outputs) cap large states at 1e3 x
// fill_random's N(0, 0.1), so that the fp64 results stay inside fp16's range.
bool fp16_results(const Problem& p) {
  bool fp16 = p.o.dtype() == DType::f16;
  for (const auto* t : {&p.initial_state, &p.state_pool, &p.final_state, &p.chunk_states, &p.token_states,
                        &p.scratch_states})
    fp16 |= t->has_value() && (*t)->dtype() == DType::f16;
  return fp16;
}

void scale_states(Problem& p, double factor) {
  if (p.initial_state) scale(*p.initial_state, factor);
  if (p.state_pool) scale(*p.state_pool, factor);
}

}  // namespace

void apply_data_mix(Problem& p, DataMix mix, std::uint64_t seed) {
  std::mt19937_64 engine(seed ^ kDataStream);
  switch (mix) {
    case DataMix::random: return;
    case DataMix::repeated_keys:
    case DataMix::collinear_keys: degenerate_keys(p, mix == DataMix::repeated_keys, engine); return;
    case DataMix::long_memory: long_memory(p, engine); return;
    case DataMix::strong_gates: strong_gates(p, engine); return;
    case DataMix::large_state: {
      const double factor = std::pow(10.0, 3 + static_cast<int>(engine() % 3));  // |h0| ~ 1e2 .. 1e4 (x4 tails)
      scale_states(p, fp16_results(p) ? std::min(factor, 1e3) : factor);
      return;
    }
    case DataMix::tiny_state: {
      const double factor = std::pow(10.0, -4 - static_cast<int>(engine() % 4));
      scale_states(p, factor);
      scale(p.v, factor);
      return;
    }
  }
}

}  // namespace kda::props::detail
