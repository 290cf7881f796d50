// Breaks applied to the built problem: one tensor replaced or re-viewed, one index or option changed.
// Replacement tensors are zero-filled: a kernel must reject the call before reading any data.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <stdexcept>

#include "generators_internal.hpp"

namespace kda::props::detail {

namespace {

template <class T>
T nth(const std::vector<T>& xs, std::uint64_t variant) {
  return xs[variant % xs.size()];
}

i64 round_up(i64 x, i64 m) { return (x + m - 1) / m * m; }

Tensor zeros(const std::string& name, DType dtype, Shape shape) { return Tensor::zeros(name, dtype, std::move(shape)); }

// A 1-D integer tensor holding xs.
Tensor integers(const std::string& name, DType dtype, const std::vector<i64>& xs) {
  Tensor t = zeros(name, dtype, {static_cast<i64>(xs.size())});
  for (std::size_t i = 0; i < xs.size(); ++i) store_element(t.buffer->data(), dtype, static_cast<i64>(i), static_cast<double>(xs[i]));
  return t;
}

std::vector<i64> values(const Tensor& t) {
  std::vector<i64> xs(static_cast<std::size_t>(t.shape()[0]));
  for (std::size_t i = 0; i < xs.size(); ++i) xs[i] = t.integer_at(static_cast<i64>(i));
  return xs;
}

// The same tensor seen through another shape, strides and offset.
Tensor reviewed(const Tensor& t, Shape shape, Shape strides, i64 offset) {
  return Tensor{t.buffer, View{t.dtype(), std::move(shape), std::move(strides), offset}};
}

// [lead..., HV, a, b]: a state tensor's shape in the problem's layout.
Shape states(const Problem& p, std::initializer_list<i64> lead) {
  Shape s(lead);
  s.push_back(p.HV);
  for (i64 d : p.state_head_shape()) s.push_back(d);
  return s;
}

// The dtypes outside `allowed`, floating point first.
std::vector<DType> outside(const std::vector<DType>& allowed) {
  std::vector<DType> out;
  for (DType d : {DType::f32, DType::bf16, DType::f16, DType::f64, DType::i32, DType::i64})
    if (std::find(allowed.begin(), allowed.end(), d) == allowed.end()) out.push_back(d);
  return out;
}

void break_cu_seqlens(Problem& p, Rule rule, std::uint64_t variant) {
  Tensor& cu = *p.cu_seqlens;
  std::vector<i64> xs = values(cu);
  const std::size_t N = xs.size() - 1;
  switch (rule) {
    case Rule::cu_seqlens_dtype:
      p.cu_seqlens = integers("cu_seqlens", variant % 2 ? DType::f64 : DType::f32, xs);
      return;
    case Rule::cu_seqlens_shape:
      if (variant % 3 == 2) {
        p.cu_seqlens = reviewed(cu, {static_cast<i64>(N + 1), 1}, {1, 1}, cu.view.offset);
        return;
      }
      xs.insert(variant % 3 ? xs.begin() : xs.end(), variant % 3 ? xs.front() : xs.back());
      p.cu_seqlens = integers("cu_seqlens", cu.dtype(), xs);
      return;
    case Rule::cu_seqlens_start: cu.set_integer(0, -1 - static_cast<i64>(variant % 3)); return;
    case Rule::cu_seqlens_monotonic: {  // an interior entry above its successor
      const std::size_t n = 1 + variant % (N - 1);
      cu.set_integer(static_cast<i64>(n), xs[n + 1] + 1);
      return;
    }
    case Rule::cu_seqlens_end: cu.set_integer(static_cast<i64>(N), p.T + 1 + static_cast<i64>(variant % 3)); return;
    default: throw std::logic_error("break_cu_seqlens: not a cu_seqlens rule");
  }
}

// A batch of N rows given cu_seqlens: well-formed ones (start 0, end T, N + 1 entries).
void add_cu_seqlens(Problem& p, std::uint64_t variant) {
  std::vector<i64> xs{0};
  const i64 step = (p.T + p.N - 1) / std::max<i64>(p.N, 1);
  for (i64 n = 1; n <= p.N; ++n) xs.push_back(variant % 2 ? p.T : std::min(p.T, n * step));
  xs.back() = p.T;
  p.cu_seqlens = integers("cu_seqlens", DType::i32, xs);
}

// One more (a padding row in the pool) or one fewer batch row's sequence than B.
void break_sequence_count(Problem& p, std::uint64_t variant) {
  const bool fewer = variant % 2 == 1 && p.N >= 2;
  p.N += fewer ? -1 : 1;
  if (!p.state_indices) return;
  std::vector<i64> xs = values(*p.state_indices);
  fewer ? xs.pop_back() : xs.push_back(-1);
  p.state_indices = integers("state_indices", DType::i32, xs);
}

void break_shape(Problem& p, Rule rule, std::uint64_t variant) {
  const bool wider = variant % 2 == 0;  // a wider last dim, else one more head
  switch (rule) {
    case Rule::qk_same_shape:
      p.k = zeros("k", p.k.dtype(), wider ? Shape{p.B, p.T, p.H, p.K + 1} : Shape{p.B, p.T, p.H + 1, p.K});
      return;
    case Rule::q_shape: {
      const Shape s = wider ? Shape{p.B, p.T, p.H, p.K + 1} : Shape{p.B, p.T, p.H + 1, p.K};
      p.q = zeros("q", p.q.dtype(), s), p.k = zeros("k", p.k.dtype(), s);  // k keeps q's shape
      return;
    }
    case Rule::v_shape:
      p.v = zeros("v", p.v.dtype(), wider ? Shape{p.B, p.T, p.HV, p.V + 1} : Shape{p.B, p.T, p.HV + 1, p.V});
      return;
    case Rule::g_shape:
      p.g = zeros("g", p.g.dtype(), wider ? Shape{p.B, p.T, p.HV, p.K + 1} : Shape{p.B, p.T, p.HV + 1, p.K});
      return;
    case Rule::beta_shape:  // one head too many, or FLA's trailing unit dim
      p.beta = zeros("beta", p.beta.dtype(), wider ? Shape{p.B, p.T, p.HV + 1} : Shape{p.B, p.T, p.HV, 1});
      return;
    case Rule::o_shape:
      p.o = zeros("o", p.o.dtype(), wider ? Shape{p.B, p.T, p.HV, p.V + 1} : Shape{p.B, p.T, p.HV + 1, p.V});
      return;
    default: throw std::logic_error("break_shape: not an activation shape rule");
  }
}

void break_dtype(Problem& p, Rule rule, std::uint64_t variant, const Profile& profile) {
  switch (rule) {
    case Rule::input_dtype: {
      Tensor* t = nth(std::vector<Tensor*>{&p.q, &p.k, &p.v, &p.g, &p.beta}, variant);
      *t = zeros(t->name(), nth(outside(profile.input_dtypes), variant / 5), t->shape());
      return;
    }
    case Rule::output_dtype: p.o = zeros("o", nth(outside(profile.output_dtypes), variant), p.o.shape()); return;
    case Rule::gate_params_dtype: {
      const DType integer = variant / 2 % 2 ? DType::i64 : DType::i32;
      if (variant % 2)
        p.dt_bias = zeros("dt_bias", integer, {p.HV * p.K});
      else
        p.A_log = zeros("A_log", integer, {p.HV});
      return;
    }
    default: throw std::logic_error("break_dtype: not a dtype rule");
  }
}

void break_options(Problem& p, Rule rule, std::uint64_t variant) {
  Options& o = p.options;
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  switch (rule) {
    case Rule::A_log_size: p.A_log = zeros("A_log", DType::f32, {p.HV + (variant % 2 ? -1 : 1)}); return;
    case Rule::dt_bias_size: p.dt_bias = zeros("dt_bias", DType::f32, {p.HV * p.K + (variant % 2 ? -1 : 1)}); return;
    case Rule::scale_positive: o.scale = nth(std::vector{-1.0, 0.0, nan, inf}, variant); return;
    case Rule::lower_bound_range: o.lower_bound = nth(std::vector{-6.0, 0.0, 0.5, nan, -inf}, variant); return;
    case Rule::lower_bound_required: o.safe_gate = true, o.lower_bound.reset(); return;
    case Rule::softplus_needs_A_log: p.A_log.reset(), o.lower_bound.reset(), o.safe_gate = false; return;
    case Rule::neg_eigval_needs_beta_logits: o.allow_neg_eigval = true, o.beta_from_logits = false; return;
    default: throw std::logic_error("break_options: not an option rule");
  }
}

// A second state source beside the pool: a dense initial state (where the profile takes one), a
// final_state output, indices without their pool, or a pool without its indices.
void add_state_source(Problem& p, std::uint64_t variant, const Profile& profile) {
  const auto& sources = profile.state_sources;
  const bool dense = std::find(sources.begin(), sources.end(), StateSource::dense) != sources.end();
  switch (variant % (dense ? 4 : 3) + (dense ? 0 : 1)) {
    case 0: p.initial_state = zeros("initial_state", p.state_pool->dtype(), states(p, {p.N})); return;
    case 1: p.final_state = zeros("final_state", p.state_pool->dtype(), states(p, {p.N})); return;
    case 2: p.state_indices.reset(); return;
    default: p.state_pool.reset(); return;
  }
}

void break_states(Problem& p, Rule rule, std::uint64_t variant) {
  const bool swap = variant % 2 == 0 && p.K != p.V;  // swapped [a, b], else one dim off by one
  const Shape head = p.state_head_shape();
  const i64 a = head[0], b = head[1], C = p.total_chunks();
  switch (rule) {
    case Rule::initial_state_count: {
      const i64 N = p.N + (variant % 2 ? -1 : 1);
      if (p.initial_state) {
        p.initial_state = zeros("initial_state", p.initial_state->dtype(), states(p, {N}));
      } else {
        std::vector<i64> xs = values(*p.state_indices);
        variant % 2 ? xs.pop_back() : xs.push_back(-1);
        p.state_indices = integers("state_indices", DType::i32, xs);
      }
      return;
    }
    case Rule::initial_state_shape:
      p.initial_state = zeros("initial_state", p.initial_state->dtype(),
                              swap ? Shape{p.N, p.HV, b, a} : Shape{p.N, p.HV + 1, a, b});
      return;
    case Rule::final_state_shape:
      p.final_state = zeros("final_state", p.final_state->dtype(),
                            variant % 2 ? Shape{p.N + 1, p.HV, a, b} : Shape{p.N, p.HV, a, b + 1});
      return;
    case Rule::chunk_states_shape:
      p.chunk_states = zeros("chunk_states", p.chunk_states->dtype(),
                             variant % 2 ? Shape{C + 1, p.HV, a, b} : Shape{C, p.HV, a, b + 1});
      return;
    case Rule::token_states_shape:
      p.token_states = zeros("token_states", p.token_states->dtype(),
                             variant % 2 ? Shape{p.B, p.T, p.HV, a * b} : Shape{p.B, p.T, p.HV, a, b + 1});
      return;
    default: throw std::logic_error("break_states: not a state rule");
  }
}

void break_pool(Problem& p, Rule rule, std::uint64_t variant) {
  Tensor& pool = *p.state_pool;
  const i64 slots = pool.shape()[0], S = pool.view.strides[0], off = pool.view.offset;
  const i64 HV = p.HV, a = pool.shape()[2], b = pool.shape()[3];
  switch (rule) {
    case Rule::state_pool_rank:  // the same slots, flattened to 3-D or 2-D
      pool = variant % 2 ? reviewed(pool, {slots, HV * a * b}, {S, 1}, off)
                         : reviewed(pool, {slots, HV, a * b}, {S, a * b, 1}, off);
      return;
    case Rule::state_pool_shape:  // compact inner strides of another per-slot shape
      if (variant % 2 == 0 && a != b)
        pool = reviewed(pool, {slots, HV, b, a}, {S, a * b, a, 1}, off);
      else
        pool = reviewed(pool, {slots, HV, a * b, 1}, {S, a * b, 1, 1}, off);
      return;
    case Rule::state_pool_inner_strides:
      if (variant % 2 == 0) {  // the transposed pool: the [K,V] / [V,K] trap, on the same bytes
        pool = reviewed(pool, {slots, HV, a, b}, {S, a * b, 1, a}, off);
      } else {  // rows padded by 16 elements, in a fresh buffer that keeps the alignment contract
        const i64 row = b + 16, slot = round_up(HV * a * row, 16);
        pool = Tensor::with_view("state_pool", View{pool.dtype(), {slots, HV, a, b}, {slot, a * row, row, 1}, 0});
      }
      return;
    default: throw std::logic_error("break_pool: not a pool rule");
  }
}

void break_indices(Problem& p, Rule rule, std::uint64_t variant) {
  Tensor& idx = *p.state_indices;
  std::vector<i64> xs = values(idx);
  const std::size_t N = xs.size();
  switch (rule) {
    case Rule::state_indices_dtype:
      idx = integers("state_indices", variant % 2 ? DType::f32 : DType::i64, xs);
      return;
    case Rule::state_indices_shape:
      idx = variant % 2 ? reviewed(idx, {1, static_cast<i64>(N)}, {static_cast<i64>(N), 1}, idx.view.offset)
                        : reviewed(idx, {static_cast<i64>(N), 1}, {1, 1}, idx.view.offset);
      return;
    case Rule::state_indices_range:
      idx.set_integer(static_cast<i64>(variant / 2 % N), variant % 2 ? -2 : p.state_pool->shape()[0]);
      return;
    case Rule::state_indices_distinct: {  // a second row on an active row's slot
      const auto active = std::find_if(xs.begin(), xs.end(), [](i64 x) { return x != -1; });
      const std::size_t i = active == xs.end() ? 0 : static_cast<std::size_t>(active - xs.begin());
      if (active == xs.end()) idx.set_integer(0, 0);
      const std::size_t j = (i + 1 + variant % (N - 1)) % N;
      idx.set_integer(static_cast<i64>(j), idx.integer_at(static_cast<i64>(i)));
      return;
    }
    default: throw std::logic_error("break_indices: not an index rule");
  }
}

// o and an input in one buffer, both contiguous from its start (SGLang writes o into v).
void alias_output(Problem& p, std::uint64_t variant) {
  Tensor& in = *nth(std::vector<Tensor*>{&p.v, &p.q, &p.k, &p.g}, variant);
  const View in_view = contiguous_view(in.dtype(), in.shape()), o_view = contiguous_view(p.o.dtype(), p.o.shape());
  const auto bytes = std::max(in_view.byte_extent()->end, o_view.byte_extent()->end);
  auto buffer = std::make_shared<GuardedBuffer>(in.name() + "+o", static_cast<std::size_t>(bytes));
  in = Tensor{buffer, in_view};
  p.o = Tensor{buffer, o_view};
}

// A zero stride on a dim of o with more than one element: o writes some element twice.
void fold_output(Problem& p, std::uint64_t variant) {
  std::vector<int> dims;
  for (int d : {3, 2, 1, 0})
    if (p.o.shape()[static_cast<std::size_t>(d)] > 1) dims.push_back(d);
  p.o.view.strides[static_cast<std::size_t>(nth(dims, variant))] = 0;
}

void move_out_of_bounds(Problem& p, std::uint64_t variant) {
  Tensor& t = *nth(std::vector<Tensor*>{&p.q, &p.k, &p.v, &p.g, &p.beta, &p.o}, variant);
  const auto elements = static_cast<i64>(t.buffer->size() / size_of(t.dtype()));
  t.view.offset = variant / 6 % 2 ? elements : -1;  // past the end, or one element before the start
}

}  // namespace

void break_problem(Problem& p, Rule rule, std::uint64_t variant, const Profile& profile) {
  switch (rule) {
    case Rule::view_in_bounds: return move_out_of_bounds(p, variant);
    case Rule::varlen_batch_one: return add_cu_seqlens(p, variant);
    case Rule::cu_seqlens_dtype:
    case Rule::cu_seqlens_shape:
    case Rule::cu_seqlens_start:
    case Rule::cu_seqlens_monotonic:
    case Rule::cu_seqlens_end: return break_cu_seqlens(p, rule, variant);
    case Rule::batch_sequence_count: return break_sequence_count(p, variant);
    case Rule::qk_same_shape:
    case Rule::q_shape:
    case Rule::v_shape:
    case Rule::g_shape:
    case Rule::beta_shape:
    case Rule::o_shape: return break_shape(p, rule, variant);
    case Rule::input_dtype:
    case Rule::output_dtype:
    case Rule::gate_params_dtype: return break_dtype(p, rule, variant, profile);
    case Rule::A_log_size:
    case Rule::dt_bias_size:
    case Rule::scale_positive:
    case Rule::lower_bound_range:
    case Rule::lower_bound_required:
    case Rule::softplus_needs_A_log:
    case Rule::neg_eigval_needs_beta_logits: return break_options(p, rule, variant);
    case Rule::state_source: return add_state_source(p, variant, profile);
    case Rule::initial_state_count:
    case Rule::initial_state_shape:
    case Rule::final_state_shape:
    case Rule::chunk_states_shape:
    case Rule::token_states_shape: return break_states(p, rule, variant);
    case Rule::state_pool_rank:
    case Rule::state_pool_shape:
    case Rule::state_pool_inner_strides: return break_pool(p, rule, variant);
    case Rule::state_indices_dtype:
    case Rule::state_indices_shape:
    case Rule::state_indices_range:
    case Rule::state_indices_distinct: return break_indices(p, rule, variant);
    case Rule::output_overlap: return alias_output(p, variant);
    case Rule::output_self_overlap: return fold_output(p, variant);
    default: throw std::logic_error("break_problem: no break for rule " + std::string(name_of(rule)));
  }
}

}  // namespace kda::props::detail
