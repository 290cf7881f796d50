#include "kda/properties/problem_surgery.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace kda::props {

namespace {

using i64 = std::int64_t;

i64 round_up(i64 x, i64 m) { return (x + m - 1) / m * m; }

DType state_dtype_of(const Problem& p) {
  for (const auto* t : {&p.initial_state, &p.state_pool, &p.final_state, &p.chunk_states, &p.token_states})
    if (*t) return (*t)->dtype();
  return DType::f32;
}

bool is_padding_row(const Problem& p, i64 n) { return p.state_indices && p.initial_slot(n) == -1; }

// Copies `count` elements: src's from element `from` on in steps of `step_src`, into dst from element
// `to` on in steps of `step_dst`. Values convert between dtypes; equal dtypes copy exactly.
void copy_run(const Tensor& src, i64 from, i64 step_src, Tensor& dst, i64 to, i64 step_dst, i64 count) {
  const auto size = static_cast<i64>(size_of(src.dtype()));
  if (src.dtype() == dst.dtype() && step_src == 1 && step_dst == 1) {
    std::memcpy(dst.buffer->data() + to * size, src.buffer->data() + from * size,
                static_cast<std::size_t>(count * size));
    return;
  }
  for (i64 i = 0; i < count; ++i)
    store_element(dst.buffer->data(), dst.dtype(), to + i * step_dst,
                  load_element(src.buffer->data(), src.dtype(), from + i * step_src));
}

// A row along the last dimension of both tensors.
void copy_row(const Tensor& src, i64 from, Tensor& dst, i64 to, i64 count) {
  copy_run(src, from, src.view.strides.back(), dst, to, dst.view.strides.back(), count);
}

// State `lead` (a sequence or a pool slot) of a [lead, HV, a, b] state tensor copied into state
// `to_lead` of another with the same head shape.
void copy_state(const Tensor& src, i64 lead, Tensor& dst, i64 to_lead) {
  for (i64 hv = 0; hv < src.shape()[1]; ++hv)
    for (i64 a = 0; a < src.shape()[2]; ++a)
      copy_row(src, src.view.element_at({lead, hv, a, 0}), dst, dst.view.element_at({to_lead, hv, a, 0}),
               src.shape()[3]);
}

// Copies tokens [from, from + count) of batch row `row` of src into batch row 0 of dst, from token 0.
void copy_tokens(const Tensor& src, i64 row, i64 from, i64 count, Tensor& dst) {
  for (i64 t = 0; t < count; ++t) {
    if (src.view.rank() == 3) {  // beta [B,T,HV]: a row of heads
      copy_row(src, src.view.element_at({row, from + t, 0}), dst, dst.view.element_at({0, t, 0}), src.shape()[2]);
      continue;
    }
    for (i64 h = 0; h < src.shape()[2]; ++h)
      copy_row(src, src.view.element_at({row, from + t, h, 0}), dst, dst.view.element_at({0, t, h, 0}),
               src.shape()[3]);
  }
}

void copy_all(const Tensor& src, Tensor& dst) {
  for_each_index(src.shape(), [&](std::span<const i64> i) { dst.set(i, src.at(i)); });
}

Shape with_last_two_swapped(Shape s) {
  std::swap(s[s.size() - 1], s[s.size() - 2]);
  return s;
}

// A [lead, HV, a, b] state tensor's values in a new [lead, HV, b, a] view: each row of src becomes a
// column of dst.
Tensor transposed(const Tensor& src, View view) {
  Tensor dst = Tensor::with_view(src.name(), std::move(view));
  for_each_index(Shape(src.shape().begin(), src.shape().end() - 1), [&](std::span<const i64> i) {
    copy_run(src, src.view.element_at({i[0], i[1], i[2], 0}), src.view.strides[3], dst,
             dst.view.element_at({i[0], i[1], 0, i[2]}), dst.view.strides[2], src.shape()[3]);
  });
  return dst;
}

}  // namespace

Problem extract_sequence(const Problem& p, const Cut& cut) {
  const i64 n = cut.sequence, length = cut.length < 0 ? p.length(n) - cut.first : cut.length;
  if (n < 0 || n >= p.N || cut.first < 0 || length < 0 || cut.first + length > p.length(n))
    throw std::invalid_argument("extract_sequence: the cut lies outside sequence " + std::to_string(n));
  ProblemSpec s;
  s.mode = cut.mode.value_or(p.mode);
  s.lengths = {length};
  s.varlen = p.cu_seqlens.has_value();
  if (p.cu_seqlens) s.cu_seqlens_dtype = p.cu_seqlens->dtype();
  s.H = p.H, s.HV = p.HV, s.K = p.K, s.V = p.V;
  s.options = p.options;
  s.input_dtype = p.q.dtype(), s.output_dtype = p.o.dtype();
  s.state = cut.source.value_or(state_source_of(p));
  s.state_dtype = cut.state_dtype.value_or(state_dtype_of(p));
  s.final_state = p.final_state || cut.final_state;
  s.chunk_states = cut.chunk_states && p.chunk_states, s.token_states = p.token_states.has_value();
  s.with_A_log = p.A_log.has_value(), s.with_dt_bias = p.dt_bias.has_value();
  if (s.state == StateSource::pool) {
    s.pool_slots = 1;
    s.pool_slot_stride = round_up(p.HV * p.K * p.V, 16);  // the payload is 256-byte aligned: base offset 0
    s.indices = {is_padding_row(p, n) ? -1 : 0};
  }
  if (s.state == StateSource::table) {  // slot t holds the state after token t; slot 0 the initial state
    s.L = std::max<i64>(length, 1);
    s.pool_slots = s.L;
    s.pool_slot_stride = round_up(p.HV * p.K * p.V, 16);
    for (i64 t = 0; t < s.L; ++t) s.indices.push_back(is_padding_row(p, n) ? -1 : t);
    s.accepted = {1};
  }
  Problem c = make_problem(s);

  const i64 row = p.row(n), from = p.first(n) + cut.first;
  copy_tokens(p.q, row, from, length, c.q);
  copy_tokens(p.k, row, from, length, c.k);
  copy_tokens(p.v, row, from, length, c.v);
  copy_tokens(p.g, row, from, length, c.g);
  copy_tokens(p.beta, row, from, length, c.beta);
  if (p.A_log) copy_all(*p.A_log, *c.A_log);
  if (p.dt_bias) copy_all(*p.dt_bias, *c.dt_bias);
  // The sequence's initial state (zeros without one, as make_problem left them).
  Tensor* to = c.initial_state ? &*c.initial_state : c.state_pool ? &*c.state_pool : nullptr;
  if (to && !is_padding_row(p, n)) {
    if (p.state_pool) copy_state(*p.state_pool, p.initial_slot(n), *to, 0);
    if (p.initial_state) copy_state(*p.initial_state, n, *to, 0);
  }
  return c;
}

void carry_state(const Problem& from, Problem& to) {
  const bool from_pool = !from.final_state && from.state_pool;
  if (!from.final_state && !from_pool) throw std::invalid_argument("carry_state: the first call has no state output");
  if (!to.initial_state && !to.state_pool) throw std::invalid_argument("carry_state: the second call takes no state");
  // A verify call's state after its last token is where that token's slot is.
  const i64 from_slot = !from_pool ? 0
                        : from.num_accepted ? from.token_slot(0, from.length(0) - 1)
                                            : from.state_indices->integer_at(0);
  const i64 to_slot = to.state_pool ? to.initial_slot(0) : 0;
  if (from_slot < 0 || to_slot < 0) throw std::invalid_argument("carry_state: a padding row carries no state");
  copy_state(from_pool ? *from.state_pool : *from.final_state, from_slot,
             to.state_pool ? *to.state_pool : *to.initial_state, to_slot);
}

Problem transpose_state_layout(const Problem& p) {
  Problem t = deep_copy(p);
  t.options.state_layout = p.options.state_layout == StateLayout::vk ? StateLayout::kv : StateLayout::vk;
  if (p.initial_state)
    t.initial_state = transposed(
        *p.initial_state, contiguous_view(p.initial_state->dtype(), with_last_two_swapped(p.initial_state->shape())));
  if (p.state_pool) {
    View pool = p.state_pool->view;  // same slot stride and base offset, the inner dims swapped (still compact)
    pool.shape = with_last_two_swapped(pool.shape);
    pool.strides[2] = pool.shape[3];
    t.state_pool = transposed(*p.state_pool, pool);
  }
  for (auto* out : {&t.final_state, &t.chunk_states, &t.token_states})
    if (*out) *out = Tensor::zeros((*out)->name(), (*out)->dtype(), with_last_two_swapped((*out)->shape()));
  return t;
}

Problem expand_gva(const Problem& p) {
  Problem e = deep_copy(p);
  const i64 group = p.HV / p.H;
  e.H = p.HV;
  for (auto [narrow, dst] : {std::pair{&p.q, &e.q}, std::pair{&p.k, &e.k}}) {
    const Tensor& src = *narrow;  // lambdas cannot capture structured bindings before clang 16
    Tensor wide = Tensor::zeros(src.name(), src.dtype(), {p.B, p.T, p.HV, p.K});
    for_each_index(Shape{p.B, p.T, p.HV}, [&](std::span<const i64> i) {
      copy_row(src, src.view.element_at({i[0], i[1], i[2] / group, 0}), wide,
               wide.view.element_at({i[0], i[1], i[2], 0}), p.K);
    });
    *dst = std::move(wide);
  }
  return e;
}

}  // namespace kda::props
