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
  for (const TensorField& f : tensor_fields())
    if (Tensor* t = f.in(p)) poison_buffer(*t);
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
    if (p.initial_slot(n) != -1) continue;
    const i64 b = p.row(n), first = p.first(n), length = p.length(n);
    fill_tokens(p.k, b, first, length, 0.0);
    fill_tokens(p.v, b, first, length, 0.0);
    fill_tokens(p.beta, b, first, length, 0.0);
    if (!p.options.gate_in_kernel) fill_tokens(p.g, b, first, length, -1000.0);
  }
}

namespace {

// The slots live requests start from (a verify problem built by make_problem: readable indices).
std::vector<char> initial_slots(const Problem& p) {
  std::vector<char> read(static_cast<std::size_t>(p.state_pool->shape()[0]), 0);
  for (i64 n = 0; n < p.N; ++n)
    if (const i64 slot = p.initial_slot(n); slot >= 0) read[static_cast<std::size_t>(slot)] = 1;
  return read;
}

}  // namespace

void apply_table_layout(Problem& p, const CaseSpec& spec) {
  if (!p.num_accepted || spec.table_layout == TableLayout::compact) return;
  const Tensor compact = *p.state_indices;
  const std::vector<char> read = initial_slots(p);
  i64 spare = 0;  // a slot no entry names: make_problem's pools have N x L + 1 slots or more
  std::vector<char> named(read.size(), 0);
  for (i64 n = 0; n < p.N; ++n)
    for (i64 t = 0; t < p.L; ++t)
      if (const i64 x = compact.integer_at(n, t); x >= 0) named[static_cast<std::size_t>(x)] = 1;
  while (spare < static_cast<i64>(named.size()) && named[static_cast<std::size_t>(spare)]) ++spare;
  const i64 N = p.N, L = p.L, pad = spec.pad;
  const View view = spec.table_layout == TableLayout::transposed ? View{DType::i32, {N, L}, {1, N}, 0}
                                                                   : View{DType::i32, {N, L}, {L + pad, 1}, pad};
  Tensor table = Tensor::with_view("state_indices", view);
  const auto elements = static_cast<i64>(table.buffer->size() / size_of(DType::i32));
  for (i64 e = 0; e < elements; ++e) store_element(table.buffer->data(), DType::i32, e, static_cast<double>(spare));
  for (i64 n = 0; n < N; ++n)
    for (i64 t = 0; t < L; ++t) table.set_integer(n, t, compact.integer_at(n, t));
  p.state_indices = table;
}

void poison_unread_slots(Problem& p, Poison poison) {
  if (p.mode != Mode::verify || !p.state_pool) return;
  const std::vector<char> read = initial_slots(p);
  Tensor& pool = *p.state_pool;
  const double x = value_of(poison);
  for (i64 slot = 0; slot < pool.shape()[0]; ++slot) {
    if (read[static_cast<std::size_t>(slot)]) continue;
    for_each_index(Shape(pool.shape().begin() + 1, pool.shape().end()), [&](std::span<const i64> idx) {
      pool.set({slot, idx[0], idx[1], idx[2]}, x);
    });
  }
}

}  // namespace kda::props::detail
