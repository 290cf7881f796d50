// The data side of build_case: poison everywhere first (fill_random then overwrites exactly the
// viewed input elements, so gaps and outputs keep it), the gate mix, the padding-row pattern.
// Random draws use std::mt19937_64's raw output (fully specified by the standard), on a stream of
// its own so that the gate mix does not shift fill_random's data.
#include <cmath>
#include <cstring>
#include <optional>
#include <random>
#include <set>

#include "generators_internal.hpp"

namespace kda::props::detail {

namespace {

constexpr std::uint64_t kGateStream = 0x9e3779b97f4a7c15u;  // seed ^ this: the gate mix's engine

double unit(std::mt19937_64& engine) { return static_cast<double>(engine() >> 11) * 0x1.0p-53; }

// One gate entry of a token of the given kind; nullopt keeps fill_random's realistic value.
std::optional<double> gate_value(GateMix kind, bool raw, std::mt19937_64& engine) {
  const double sign = engine() & 1 ? 1.0 : -1.0;
  switch (kind) {
    case GateMix::saturating: return raw ? sign * (30.0 + unit(engine)) : -5.0;
    case GateMix::zeros: return 0.0;
    case GateMix::strong:
      if (engine() % 4 != 0) return std::nullopt;
      return raw ? sign * 1000.0 : -1000.0;
    case GateMix::realistic:
    case GateMix::mixture: return std::nullopt;
  }
  return std::nullopt;
}

// Every element of t at a sequence's tokens (batch row b, tokens [first, first + length)) set to x.
void fill_tokens(Tensor& t, i64 b, i64 first, i64 length, double x) {
  Shape index(t.shape().size(), 0);
  index[0] = b;
  const i64 inner = t.view.rank() == 4 ? t.shape()[3] : 1;
  for (i64 tok = first; tok < first + length; ++tok)
    for (i64 h = 0; h < t.shape()[2]; ++h)
      for (i64 c = 0; c < inner; ++c) {
        index[1] = tok, index[2] = h;
        if (t.view.rank() == 4) index[3] = c;
        t.set(index, x);
      }
}

}  // namespace

void poison_buffers(Problem& p, Poison poison) {
  const double x = value_of(poison);
  std::set<const GuardedBuffer*> done;
  auto poison_buffer = [&](Tensor& t) {
    if (!is_float(t.dtype()) || !done.insert(t.buffer.get()).second) return;
    const std::size_t size = size_of(t.dtype());
    std::byte pattern[8];
    store_element(pattern, t.dtype(), 0, x);  // converted once, copied everywhere
    for (std::size_t at = 0; at + size <= t.buffer->size(); at += size) std::memcpy(t.buffer->data() + at, pattern, size);
  };
  for (Tensor* t : {&p.q, &p.k, &p.v, &p.g, &p.beta, &p.o}) poison_buffer(*t);
  for (auto* t : {&p.A_log, &p.dt_bias, &p.initial_state, &p.state_pool, &p.final_state, &p.chunk_states,
                  &p.token_states})
    if (*t) poison_buffer(**t);
}

void normalize_qk(Problem& p) {
  for (Tensor* t : {&p.q, &p.k})
    for (i64 b = 0; b < p.B; ++b)
      for (i64 tok = 0; tok < p.T; ++tok)
        for (i64 h = 0; h < p.H; ++h) {
          double sum = 0;
          for (i64 c = 0; c < p.K; ++c) sum += t->at({b, tok, h, c}) * t->at({b, tok, h, c});
          if (sum == 0) continue;
          for (i64 c = 0; c < p.K; ++c) t->set({b, tok, h, c}, t->at({b, tok, h, c}) / std::sqrt(sum));
        }
}

void apply_gate_mix(Problem& p, GateMix mix, std::uint64_t seed) {
  if (mix == GateMix::realistic) return;
  std::mt19937_64 engine(seed ^ kGateStream);
  const bool raw = p.options.gate_in_kernel;
  for (i64 b = 0; b < p.B; ++b)
    for (i64 t = 0; t < p.T; ++t) {
      // mixture: realistic, saturating, zeros or strong (the enum's first four)
      const GateMix kind = mix == GateMix::mixture ? static_cast<GateMix>(engine() % 4) : mix;
      for (i64 h = 0; h < p.HV; ++h)
        for (i64 k = 0; k < p.K; ++k)
          if (const auto x = gate_value(kind, raw, engine)) p.g.set({b, t, h, k}, *x);
    }
}

void apply_padding_pattern(Problem& p) {
  if (!p.state_indices) return;
  for (i64 n = 0; n < p.N; ++n) {
    if (p.state_indices->integer_at(n) != -1) continue;
    const i64 b = p.row(n), first = p.first(n), length = p.length(n);
    fill_tokens(p.k, b, first, length, 0.0);
    fill_tokens(p.v, b, first, length, 0.0);
    fill_tokens(p.beta, b, first, length, 0.0);
    if (!p.options.gate_in_kernel) fill_tokens(p.g, b, first, length, -1000.0);
  }
}

}  // namespace kda::props::detail
