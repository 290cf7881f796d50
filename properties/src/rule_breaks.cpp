// How to break each contract rule alone: one row per rule (in the contract's order), with what a base
// needs and either a change to the spec (the case is rebuilt, so every tensor stays consistent with it)
// or a change to the built problem (one tensor replaced or re-viewed, one index or option changed).
// Replacement tensors are zero-filled: a kernel must reject the call before reading any data.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>

#include "generators_internal.hpp"
#include "list_helpers.hpp"

namespace kda::props::detail {

namespace {

using Variant = std::uint64_t;

// ---- what a base needs ----

RuleBreak::NeedsFn base_with(Needs needs) {
  return [needs](const Profile&) { return std::optional<Needs>(needs); };
}
std::optional<Needs> never(const Profile&) { return std::nullopt; }
// A base with `needs` unless the profile enforces `unless`, which every break of the rule trips too.
RuleBreak::NeedsFn base_with_unless(Needs needs, Rule unless) {
  return [needs, unless](const Profile& p) { return p.enforces(unless) ? std::nullopt : std::optional<Needs>(needs); };
}

const std::vector<StateSource> pooled{StateSource::pool}, stateful{StateSource::dense, StateSource::pool};
const std::vector<StateSource> table_form{StateSource::table}, scratch_form{StateSource::scratch},
    verifying{StateSource::table, StateSource::scratch}, pool_or_table{StateSource::pool, StateSource::table};

bool misses_a_source(const Profile& p) {
  for (StateSource s : {StateSource::none, StateSource::dense, StateSource::pool})
    if (!has(p.state_sources, s)) return true;
  return false;
}

// ---- tensors ----

i64 round_up(i64 x, i64 m) { return (x + m - 1) / m * m; }

Tensor zeros(const std::string& name, DType dtype, Shape shape) { return Tensor::zeros(name, dtype, std::move(shape)); }

// A 1-D integer tensor holding xs.
Tensor integers(const std::string& name, DType dtype, const std::vector<i64>& xs) {
  Tensor t = zeros(name, dtype, {static_cast<i64>(xs.size())});
  for (std::size_t i = 0; i < xs.size(); ++i)
    store_element(t.buffer->data(), dtype, static_cast<i64>(i), static_cast<double>(xs[i]));
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
    if (!has(allowed, d)) out.push_back(d);
  return out;
}

// Shape rules: a wider last dim (even variants), else one more head.
Shape wider_or_more_heads(Variant v, i64 B, i64 T, i64 heads, i64 dim) {
  return v % 2 == 0 ? Shape{B, T, heads, dim + 1} : Shape{B, T, heads + 1, dim};
}

// ---- spec breaks ----

// A head dim outside `set` (nullopt when the set allows any), at most `max`.
std::optional<i64> dim_outside(const std::vector<i64>& set, i64 max) {
  if (set.empty()) return std::nullopt;
  for (i64 d : {16, 32, 64, 128, 256, 8, 48})
    if (d <= max && !has(set, d)) return d;
  return std::nullopt;
}

void break_head_dims(ProblemSpec& s, Variant variant, const Profile& profile) {
  const auto K = dim_outside(profile.key_head_dims, profile.max_key_head_dim);
  const auto V = dim_outside(profile.value_head_dims, 1 << 20);
  const bool key = K && (!V || variant % 2 == 0);
  set_head_dims(s, key ? *K : s.K, key ? s.V : *V);
}

void break_decode_lengths(ProblemSpec& s, Variant variant, const Profile&) {
  const i64 length = variant % 2 ? 0 : 2;
  if (s.varlen)
    s.lengths[variant / 2 % s.lengths.size()] = length;
  else
    std::fill(s.lengths.begin(), s.lengths.end(), length);
}

void break_state_source(ProblemSpec& s, Variant variant, const Profile& profile) {
  std::vector<StateSource> missing;
  for (StateSource x : {StateSource::none, StateSource::dense, StateSource::pool})
    if (!has(profile.state_sources, x)) missing.push_back(x);
  s.state = nth(missing, variant);
  s.final_state = false;
  if (s.state == StateSource::pool) place_pool(s, PoolDraw{}, true, true);
}

void break_state_dtype(ProblemSpec& s, Variant variant, const Profile& profile) {
  std::vector<DType> dtypes;
  for (DType d : {DType::f64, DType::f16, DType::bf16, DType::f32})
    if (!has(profile.state_dtypes, d)) dtypes.push_back(d);
  set_state_dtype(s, nth(dtypes, variant));
}

// ---- problem breaks ----

void break_cu_seqlens_shape(Problem& p, Variant variant, const Profile&) {
  Tensor& cu = *p.cu_seqlens;
  std::vector<i64> xs = values(cu);
  if (variant % 3 == 2) {
    p.cu_seqlens = reviewed(cu, {static_cast<i64>(xs.size()), 1}, {1, 1}, cu.view.offset);
    return;
  }
  xs.insert(variant % 3 ? xs.begin() : xs.end(), variant % 3 ? xs.front() : xs.back());
  p.cu_seqlens = integers("cu_seqlens", cu.dtype(), xs);
}

// A batch of N rows given cu_seqlens: well-formed ones (start 0, end T, N + 1 entries).
void add_cu_seqlens(Problem& p, Variant variant, const Profile&) {
  std::vector<i64> xs{0};
  const i64 step = (p.T + p.N - 1) / std::max<i64>(p.N, 1);
  for (i64 n = 1; n <= p.N; ++n) xs.push_back(variant % 2 ? p.T : std::min(p.T, n * step));
  xs.back() = p.T;
  p.cu_seqlens = integers("cu_seqlens", DType::i32, xs);
}

// One more (a padding row in the pool) or one fewer batch row's sequence than B.
void break_sequence_count(Problem& p, Variant variant, const Profile&) {
  const bool fewer = variant % 2 == 1 && p.N >= 2;
  p.N += fewer ? -1 : 1;
  if (!p.state_indices) return;
  std::vector<i64> xs = values(*p.state_indices);
  fewer ? xs.pop_back() : xs.push_back(-1);
  p.state_indices = integers("state_indices", DType::i32, xs);
}

// A second state source beside the pool: a dense initial state (where the profile takes one), a
// final_state output, indices without their pool, or a pool without its indices.
void add_state_source(Problem& p, Variant variant, const Profile& profile) {
  const bool dense = has(profile.state_sources, StateSource::dense);
  switch (variant % (dense ? 4 : 3) + (dense ? 0 : 1)) {
    case 0: p.initial_state = zeros("initial_state", p.state_pool->dtype(), states(p, {p.N})); return;
    case 1: p.final_state = zeros("final_state", p.state_pool->dtype(), states(p, {p.N})); return;
    case 2: p.state_indices.reset(); return;
    default: p.state_pool.reset(); return;
  }
}

// A fresh [rows, columns] int32 index table holding the old table's entries where both have them, -1 elsewhere.
Tensor resized_table(const Tensor& table, i64 rows, i64 columns) {
  Tensor t = zeros("state_indices", DType::i32, {rows, columns});
  for (i64 i = 0; i < rows; ++i)
    for (i64 j = 0; j < columns; ++j)
      t.set_integer(i, j, i < table.shape()[0] && j < table.shape()[1] ? table.integer_at(i, j) : -1);
  return t;
}

void break_initial_state_count(Problem& p, Variant variant, const Profile&) {
  const i64 N = p.N + (variant % 2 ? -1 : 1);
  if (p.initial_state) {
    p.initial_state = zeros("initial_state", p.initial_state->dtype(), states(p, {N}));
    return;
  }
  if (p.num_accepted) {  // a verify table with a padding row more, or its last row dropped
    p.state_indices = resized_table(*p.state_indices, N, p.state_indices->shape()[1]);
    return;
  }
  std::vector<i64> xs = values(*p.state_indices);
  variant % 2 ? xs.pop_back() : xs.push_back(-1);
  p.state_indices = integers("state_indices", DType::i32, xs);
}

// A state tensor replaced by a zero-filled one of `shape`, in its dtype.
void replace_state(std::optional<Tensor>& t, const char* name, Shape shape) {
  t = zeros(name, t->dtype(), std::move(shape));
}

void break_pool_shape(Problem& p, Variant variant, const Profile&) {  // compact inner strides of another per-slot shape
  Tensor& pool = *p.state_pool;
  const i64 slots = pool.shape()[0], S = pool.view.strides[0], off = pool.view.offset;
  const i64 HV = p.HV, a = pool.shape()[2], b = pool.shape()[3];
  if (variant % 2 == 0 && a != b)
    pool = reviewed(pool, {slots, HV, b, a}, {S, a * b, a, 1}, off);
  else
    pool = reviewed(pool, {slots, HV, a * b, 1}, {S, a * b, 1, 1}, off);
}

void break_pool_inner_strides(Problem& p, Variant variant, const Profile&) {
  Tensor& pool = *p.state_pool;
  const i64 slots = pool.shape()[0], S = pool.view.strides[0], off = pool.view.offset;
  const i64 HV = p.HV, a = pool.shape()[2], b = pool.shape()[3];
  if (variant % 2 == 0) {  // the transposed pool: the [K,V] / [V,K] trap, on the same bytes
    pool = reviewed(pool, {slots, HV, a, b}, {S, a * b, 1, a}, off);
  } else {  // rows padded by 16 elements, in a fresh buffer that keeps the alignment contract
    const i64 row = b + 16, slot = round_up(HV * a * row, 16);
    pool = Tensor::with_view("state_pool", View{pool.dtype(), {slots, HV, a, b}, {slot, a * row, row, 1}, 0});
  }
}

// A 1-D index tensor seen as [N, 1] or [1, N]; a verify table seen with one column fewer, or given one
// column of -1 entries more (odd variants).
void break_index_shape(Tensor& idx, Variant variant, bool table) {
  const auto N = idx.shape()[0];
  if (table && variant % 2)
    idx = resized_table(idx, N, idx.shape()[1] + 1);
  else if (table)
    idx = reviewed(idx, {N, idx.shape()[1] - 1}, idx.view.strides, idx.view.offset);
  else
    idx = variant % 2 ? reviewed(idx, {1, N}, {N, 1}, idx.view.offset) : reviewed(idx, {N, 1}, {1, 1}, idx.view.offset);
}

void break_indices_shape(Problem& p, Variant variant, const Profile&) {
  // A pool's indices as [N, 1] only: [1, N] would count one initial state (initial_state_count) too.
  break_index_shape(*p.state_indices, p.num_accepted ? variant : 0, p.num_accepted.has_value());
}

// Entry `at` of an index tensor (a table's entries row by row), read and written.
i64 entry(const Tensor& idx, i64 at) {
  return idx.view.rank() == 2 ? idx.integer_at(at / idx.shape()[1], at % idx.shape()[1]) : idx.integer_at(at);
}
void set_entry(Tensor& idx, i64 at, i64 x) {
  if (idx.view.rank() == 2)
    idx.set_integer(at / idx.shape()[1], at % idx.shape()[1], x);
  else
    idx.set_integer(at, x);
}
i64 entries(const Tensor& idx) { return idx.view.rank() == 2 ? idx.shape()[0] * idx.shape()[1] : idx.shape()[0]; }

// A second entry on an active entry's value (entry 0 made active, as `first`, where none is).
void break_distinct(Tensor& idx, Variant variant, i64 first) {
  const i64 n = entries(idx);
  i64 i = 0;
  while (i < n && entry(idx, i) == -1) ++i;
  if (i == n) i = 0, set_entry(idx, 0, first);
  set_entry(idx, (i + 1 + static_cast<i64>(variant % static_cast<Variant>(n - 1))) % n, entry(idx, i));
}

void break_indices_distinct(Problem& p, Variant variant, const Profile&) {  // a second row on an active row's slot
  // A verify table's spare slot 0 may be poisoned, but the call is rejected before any read.
  break_distinct(*p.state_indices, variant, 0);
}

// An entry outside [-1, bound): bound itself or -2.
void break_range(Tensor& idx, Variant variant, i64 bound) {
  set_entry(idx, static_cast<i64>(variant / 2 % static_cast<Variant>(entries(idx))), variant % 2 ? -2 : bound);
}

// The scratch buffer with the per-step state dims swapped (K != V) or flattened: its strides stay compact.
void break_scratch_shape(Problem& p, Variant variant, const Profile&) {
  Tensor& st = *p.scratch_states;
  const Shape& s = st.shape();
  const i64 a = s[3], b = s[4];
  const Shape outer{st.view.strides[0], st.view.strides[1], a * b};
  if (variant % 2 == 0 && a != b)
    st = reviewed(st, {s[0], s[1], s[2], b, a}, {outer[0], outer[1], outer[2], a, 1}, st.view.offset);
  else
    st = reviewed(st, {s[0], s[1], s[2], a * b, 1}, {outer[0], outer[1], outer[2], 1, 1}, st.view.offset);
}

// o and an input in one buffer, both contiguous from its start (SGLang writes o into v).
void alias_output(Problem& p, Variant variant, const Profile&) {
  Tensor& in = *nth(std::vector<Tensor*>{&p.v, &p.q, &p.k, &p.g}, variant);
  const View in_view = contiguous_view(in.dtype(), in.shape()), o_view = contiguous_view(p.o.dtype(), p.o.shape());
  const auto bytes = std::max(in_view.byte_extent()->end, o_view.byte_extent()->end);
  auto buffer = std::make_shared<GuardedBuffer>(in.name() + "+o", static_cast<std::size_t>(bytes));
  in = Tensor{buffer, in_view};
  p.o = Tensor{buffer, o_view};
}

// A zero stride on a dim of o with more than one element: o writes some element twice.
void fold_output(Problem& p, Variant variant, const Profile&) {
  std::vector<int> dims;
  for (int d : {3, 2, 1, 0})
    if (p.o.shape()[static_cast<std::size_t>(d)] > 1) dims.push_back(d);
  p.o.view.strides[static_cast<std::size_t>(nth(dims, variant))] = 0;
}

void move_out_of_bounds(Problem& p, Variant variant, const Profile&) {
  Tensor& t = *nth(std::vector<Tensor*>{&p.q, &p.k, &p.v, &p.g, &p.beta, &p.o}, variant);
  const auto elements = static_cast<i64>(t.buffer->size() / size_of(t.dtype()));
  t.view.offset = variant / 6 % 2 ? elements : -1;  // past the end, or one element before the start
}

constexpr double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();

// The rows. A row without .needs breaks on any base.
const std::vector<RuleBreak>& rows() {
  static const std::vector<RuleBreak> table{
      {.rule = Rule::problem_sizes,  // no query heads: q and k sized [B, T, 0, K]. (K = 0 or V = 0 would also
                                     // break the pool's inner strides: a torch-style empty tensor's are not (0, 0, 1).)
       .spec = [](ProblemSpec& s, Variant, const Profile&) { s.H = 0; }},
      {.rule = Rule::view_in_bounds, .needs = base_with({.min_tokens = 1}), .problem = move_out_of_bounds},
      {.rule = Rule::varlen_batch_one,
       .needs = base_with({.mode = Mode::prefill, .varlen = false, .chunk_states = false, .min_sequences = 2}),
       .problem = add_cu_seqlens},
      {.rule = Rule::cu_seqlens_dtype,
       .needs = base_with({.varlen = true}),
       .problem =
           [](Problem& p, Variant v, const Profile&) {
             p.cu_seqlens = integers("cu_seqlens", v % 2 ? DType::f64 : DType::f32, values(*p.cu_seqlens));
           }},
      {.rule = Rule::cu_seqlens_shape, .needs = base_with({.varlen = true}), .problem = break_cu_seqlens_shape},
      {.rule = Rule::cu_seqlens_start,  // the first length changes: keep decode and chunk counts out of it
       .needs = base_with({.mode = Mode::prefill, .varlen = true, .chunk_states = false}),
       .problem =
           [](Problem& p, Variant v, const Profile&) {
             p.cu_seqlens->set_integer(0, -1 - static_cast<i64>(v % 3));
           }},
      {.rule = Rule::cu_seqlens_monotonic,  // an interior entry above its successor, or negative (odd variants)
       .needs = base_with({.varlen = true, .min_sequences = 2}),
       .problem =
           [](Problem& p, Variant v, const Profile&) {
             const i64 n = 1 + static_cast<i64>(v / 2 % static_cast<Variant>(p.N - 1));
             p.cu_seqlens->set_integer(n, v % 2 ? -1 - static_cast<i64>(v / 2 % 3) : p.cu_seqlens->integer_at(n + 1) + 1);
           }},
      {.rule = Rule::cu_seqlens_end,  // the last length changes: keep decode and chunk counts out of it
       .needs = base_with({.mode = Mode::prefill, .varlen = true, .chunk_states = false}),
       .problem =
           [](Problem& p, Variant v, const Profile&) {
             // Odd variants end short of T where the last sequence has a token to lose (else beyond T).
             const bool short_end = v % 2 == 1 && p.cu_seqlens->integer_at(p.N - 1) < p.T;
             p.cu_seqlens->set_integer(p.N, short_end ? p.T - 1 : p.T + 1 + static_cast<i64>(v / 2 % 3));
           }},
      {.rule = Rule::batch_sequence_count,
       .needs = base_with({.varlen = false,
                           .sources = {StateSource::none, StateSource::pool},
                           .final_state = false,
                           .chunk_states = false}),
       .problem = break_sequence_count},
      {.rule = Rule::decode_one_token, .needs = base_with({.mode = Mode::decode}), .spec = break_decode_lengths},
      {.rule = Rule::qk_same_shape,
       .problem =
           [](Problem& p, Variant v, const Profile&) {
             p.k = zeros("k", p.k.dtype(), wider_or_more_heads(v, p.B, p.T, p.H, p.K));
           }},
      {.rule = Rule::hv_divisible,
       .spec =
           [](ProblemSpec& s, Variant v, const Profile&) {
             std::vector<i64> heads{s.HV + 1};
             for (i64 h = 2; h < s.HV; ++h)
               if (s.HV % h != 0) heads.push_back(h);
             s.H = nth(heads, v);
           }},
      {.rule = Rule::q_shape,  // k keeps q's shape
       .problem =
           [](Problem& p, Variant v, const Profile&) {
             const Shape s = wider_or_more_heads(v, p.B, p.T, p.H, p.K);
             p.q = zeros("q", p.q.dtype(), s), p.k = zeros("k", p.k.dtype(), s);
           }},
      {.rule = Rule::v_shape,
       .problem =
           [](Problem& p, Variant v, const Profile&) {
             p.v = zeros("v", p.v.dtype(), wider_or_more_heads(v, p.B, p.T, p.HV, p.V));
           }},
      {.rule = Rule::g_shape,
       .problem =
           [](Problem& p, Variant v, const Profile&) {
             p.g = zeros("g", p.g.dtype(), wider_or_more_heads(v, p.B, p.T, p.HV, p.K));
           }},
      {.rule = Rule::beta_shape,  // one head too many, or FLA's trailing unit dim
       .problem =
           [](Problem& p, Variant v, const Profile&) {
             p.beta = zeros("beta", p.beta.dtype(), v % 2 == 0 ? Shape{p.B, p.T, p.HV + 1} : Shape{p.B, p.T, p.HV, 1});
           }},
      {.rule = Rule::o_shape,
       .problem =
           [](Problem& p, Variant v, const Profile&) {
             p.o = zeros("o", p.o.dtype(), wider_or_more_heads(v, p.B, p.T, p.HV, p.V));
           }},
      {.rule = Rule::key_head_dim_max,
       .needs =
           [](const Profile& profile) {
             return std::optional<Needs>({.budget_key_dim = profile.max_key_head_dim + 16});
           },
       .spec =
           [](ProblemSpec& s, Variant, const Profile& profile) {
             set_head_dims(s, profile.max_key_head_dim + 16, s.V);
           }},
      {.rule = Rule::head_dims_supported,
       .needs =
           [](const Profile& profile) {
             if (profile.key_head_dims.empty() && profile.value_head_dims.empty()) return std::optional<Needs>();
             return std::optional<Needs>({.budget_key_dim = profile.max_key_head_dim});
           },
       .spec = break_head_dims},
      {.rule = Rule::input_dtype,
       .problem =
           [](Problem& p, Variant v, const Profile& profile) {
             Tensor* t = nth(std::vector<Tensor*>{&p.q, &p.k, &p.v, &p.g, &p.beta}, v);
             *t = zeros(t->name(), nth(outside(profile.input_dtypes), v / 5), t->shape());
           }},
      {.rule = Rule::output_dtype,
       .problem =
           [](Problem& p, Variant v, const Profile& profile) {
             p.o = zeros("o", nth(outside(profile.output_dtypes), v), p.o.shape());
           }},
      {.rule = Rule::gate_params_dtype,
       .problem =
           [](Problem& p, Variant v, const Profile&) {
             const DType integer = v / 2 % 2 ? DType::i64 : DType::i32;
             if (v % 2)
               p.dt_bias = zeros("dt_bias", integer, {p.HV * p.K});
             else
               p.A_log = zeros("A_log", integer, {p.HV});
           }},
      {.rule = Rule::A_log_size,
       .problem =
           [](Problem& p, Variant v, const Profile&) {
             p.A_log = zeros("A_log", DType::f32, {p.HV + (v % 2 ? -1 : 1)});
           }},
      {.rule = Rule::dt_bias_size,
       .problem =
           [](Problem& p, Variant v, const Profile&) {
             p.dt_bias = zeros("dt_bias", DType::f32, {p.HV * p.K + (v % 2 ? -1 : 1)});
           }},
      {.rule = Rule::scale_positive,
       .problem =
           [](Problem& p, Variant v, const Profile&) {
             p.options.scale = nth(std::vector{-1.0, 0.0, nan, inf}, v);
           }},
      {.rule = Rule::chunk_size,
       .spec =
           [](ProblemSpec& s, Variant v, const Profile&) {
             s.options.chunk_size = nth(std::vector{16, 128, 48, 8}, v);
           }},
      {.rule = Rule::lower_bound_range,
       .problem =
           [](Problem& p, Variant v, const Profile&) {
             p.options.lower_bound = nth(std::vector{-6.0, 0.0, 0.5, nan, -inf}, v);
           }},
      {.rule = Rule::lower_bound_required,
       .needs = base_with({.gate_in_kernel = true, .A_log = true}),
       .problem =
           [](Problem& p, Variant, const Profile&) {
             p.options.safe_gate = true, p.options.lower_bound.reset();
           }},
      {.rule = Rule::softplus_needs_A_log,
       .needs = base_with({.gate_in_kernel = true}),
       .problem =
           [](Problem& p, Variant, const Profile&) {
             p.A_log.reset(), p.options.lower_bound.reset(), p.options.safe_gate = false;
           }},
      {.rule = Rule::neg_eigval_needs_beta_logits,
       .problem =
           [](Problem& p, Variant, const Profile&) {
             p.options.allow_neg_eigval = true, p.options.beta_from_logits = false;
           }},
      {.rule = Rule::state_source, .needs = base_with({.sources = pooled}), .problem = add_state_source},
      {.rule = Rule::state_source_supported,
       .needs =
           [](const Profile& profile) {
             return misses_a_source(profile) ? std::optional<Needs>(Needs{}) : std::nullopt;
           },
       .spec = break_state_source},
      {.rule = Rule::state_dtype, .needs = base_with({.sources = stateful}), .spec = break_state_dtype},
      {.rule = Rule::state_layout,
       .needs =
           [](const Profile& profile) {
             return profile.state_layout ? std::optional<Needs>({.sources = stateful}) : std::nullopt;
           },
       .spec =
           [](ProblemSpec& s, Variant, const Profile&) {
             s.options.state_layout = s.options.state_layout == StateLayout::vk ? StateLayout::kv : StateLayout::vk;
           }},
      {.rule = Rule::initial_state_count,
       .needs = base_with({.sources = {StateSource::dense, StateSource::pool, StateSource::table}}),
       .problem = break_initial_state_count},
      {.rule = Rule::initial_state_shape,  // swapped [a, b] (where K != V, even variants), else one more head
       .needs = base_with({.sources = {StateSource::dense}}),
       .problem =
           [](Problem& p, Variant v, const Profile&) {
             const i64 a = p.state_head_shape()[0], b = p.state_head_shape()[1];
             replace_state(p.initial_state, "initial_state",
                           v % 2 == 0 && p.K != p.V ? Shape{p.N, p.HV, b, a} : Shape{p.N, p.HV + 1, a, b});
           }},
      {.rule = Rule::final_state_shape,
       .needs = base_with({.final_state = true}),
       .problem =
           [](Problem& p, Variant v, const Profile&) {
             const i64 a = p.state_head_shape()[0], b = p.state_head_shape()[1];
             replace_state(p.final_state, "final_state",
                           v % 2 ? Shape{p.N + 1, p.HV, a, b} : Shape{p.N, p.HV, a, b + 1});
           }},
      {.rule = Rule::chunk_states_shape,
       .needs = base_with({.chunk_states = true}),
       .problem =
           [](Problem& p, Variant v, const Profile&) {
             const i64 a = p.state_head_shape()[0], b = p.state_head_shape()[1], C = p.total_chunks();
             replace_state(p.chunk_states, "chunk_states", v % 2 ? Shape{C + 1, p.HV, a, b} : Shape{C, p.HV, a, b + 1});
           }},
      {.rule = Rule::token_states_shape,
       .needs = base_with({.token_states = true}),
       .problem =
           [](Problem& p, Variant v, const Profile&) {
             const i64 a = p.state_head_shape()[0], b = p.state_head_shape()[1];
             replace_state(p.token_states, "token_states",
                           v % 2 ? Shape{p.B, p.T, p.HV, a * b} : Shape{p.B, p.T, p.HV, a, b + 1});
           }},
      {.rule = Rule::state_pool_rank,  // the same slots, flattened to 3-D or 2-D
       .needs = base_with({.sources = pooled}),
       .problem =
           [](Problem& p, Variant v, const Profile&) {
             Tensor& pool = *p.state_pool;
             const i64 slots = pool.shape()[0], S = pool.view.strides[0], off = pool.view.offset;
             const i64 a = pool.shape()[2], b = pool.shape()[3];
             pool = v % 2 ? reviewed(pool, {slots, p.HV * a * b}, {S, 1}, off)
                          : reviewed(pool, {slots, p.HV, a * b}, {S, a * b, 1}, off);
           }},
      {.rule = Rule::state_pool_shape, .needs = base_with({.sources = pooled}), .problem = break_pool_shape},
      {.rule = Rule::state_pool_inner_strides,
       .needs = base_with({.sources = pooled}),
       .problem = break_pool_inner_strides},
      {.rule = Rule::state_pool_alignment,  // the pool's stride and base are aligned: one of them moved off
       .needs = base_with({.sources = pooled}),
       .spec =
           [](ProblemSpec& s, Variant v, const Profile&) {
             if (v % 2 == 0)
               s.pool_slot_stride += 1 + static_cast<i64>(v / 2 % 15);
             else
               s.pool_offset += 1;
           }},
      {.rule = Rule::state_indices_dtype,
       .needs = base_with({.sources = pooled}),
       .problem =
           [](Problem& p, Variant v, const Profile&) {
             p.state_indices = integers("state_indices", v % 2 ? DType::f32 : DType::i64, values(*p.state_indices));
           }},
      {.rule = Rule::state_indices_shape,
       .needs = base_with({.sources = pool_or_table}),
       .problem = break_indices_shape},
      {.rule = Rule::state_indices_range,
       .needs = base_with({.sources = pool_or_table}),
       .problem = [](Problem& p, Variant v, const Profile&) { break_range(*p.state_indices, v, p.state_pool->shape()[0]); }},
      {.rule = Rule::state_indices_distinct,
       .needs = base_with({.sources = pool_or_table, .min_sequences = 2}),
       .problem = break_indices_distinct},
      {.rule = Rule::verify_tokens,  // a request one token longer than L (not exactly L tokens either)
       .needs = base_with_unless({.sources = verifying}, Rule::verify_fixed_tokens),
       .spec =
           [](ProblemSpec& s, Variant v, const Profile&) {
             if (s.varlen)
               s.lengths[v % s.lengths.size()] = s.L + 1;
             else
               std::fill(s.lengths.begin(), s.lengths.end(), s.L + 1);
           }},
      {.rule = Rule::verify_fixed_tokens,  // a request one token shorter than L
       .needs = base_with({.sources = verifying}),
       .spec =
           [](ProblemSpec& s, Variant v, const Profile&) {
             if (s.varlen)
               s.lengths[v % s.lengths.size()] = s.L - 1;
             else
               std::fill(s.lengths.begin(), s.lengths.end(), s.L - 1);
           }},
      {.rule = Rule::accepted_dtype,
       .needs = base_with({.sources = table_form}),
       .problem =
           [](Problem& p, Variant v, const Profile&) {
             p.num_accepted = integers("num_accepted", v % 2 ? DType::f64 : DType::f32, values(*p.num_accepted));
           }},
      {.rule = Rule::accepted_shape,  // one count more, or the counts seen as [N, 1]
       .needs = base_with({.sources = table_form}),
       .problem =
           [](Problem& p, Variant v, const Profile&) {
             Tensor& a = *p.num_accepted;
             if (v % 2) {
               a = reviewed(a, {p.N, 1}, {a.view.strides[0], 1}, a.view.offset);
               return;
             }
             std::vector<i64> xs = values(a);
             xs.push_back(1);
             a = integers("num_accepted", a.dtype(), xs);
           }},
      {.rule = Rule::accepted_range,  // 0 (reads the entry before the row) or L + 1 (the next row's)
       .needs = base_with({.sources = table_form}),
       .problem =
           [](Problem& p, Variant v, const Profile&) {
             p.num_accepted->set_integer(static_cast<i64>(v / 2 % static_cast<Variant>(p.N)), v % 2 ? p.L + 1 : 0);
           }},
      {.rule = Rule::scratch_states_shape, .needs = base_with({.sources = scratch_form}), .problem = break_scratch_shape},
      {.rule = Rule::scratch_steps,  // the same buffer seen with one step fewer than L
       .needs = base_with({.sources = scratch_form}),
       .problem =
           [](Problem& p, Variant, const Profile&) {
             Tensor& st = *p.scratch_states;
             Shape shape = st.shape();
             shape[1] = p.L - 1;
             st = reviewed(st, shape, st.view.strides, st.view.offset);
           }},
      {.rule = Rule::scratch_indices_dtype,
       .needs = base_with({.sources = scratch_form}),
       .problem =
           [](Problem& p, Variant v, const Profile&) {
             p.scratch_indices = integers("scratch_indices", v % 2 ? DType::f32 : DType::i64, values(*p.scratch_indices));
           }},
      {.rule = Rule::scratch_indices_shape,
       .needs = base_with({.sources = scratch_form}),
       .problem = [](Problem& p, Variant v, const Profile&) { break_index_shape(*p.scratch_indices, v, false); }},
      {.rule = Rule::scratch_indices_range,  // (no longer an identity map either)
       .needs = base_with_unless({.sources = scratch_form}, Rule::scratch_indices_identity),
       .problem =
           [](Problem& p, Variant v, const Profile&) { break_range(*p.scratch_indices, v, p.scratch_states->shape()[0]); }},
      {.rule = Rule::scratch_indices_distinct,  // (no longer an identity map either)
       .needs = base_with_unless({.sources = scratch_form, .min_sequences = 2}, Rule::scratch_indices_identity),
       .problem = [](Problem& p, Variant v, const Profile&) { break_distinct(*p.scratch_indices, v, 0); }},
      {.rule = Rule::scratch_indices_identity,  // request n stores into row n + 1 (mod the rows): a valid map
       .needs = base_with({.sources = scratch_form, .min_sequences = 2}),
       .problem =
           [](Problem& p, Variant, const Profile&) {
             const i64 rows = p.scratch_states->shape()[0];
             for (i64 n = 0; n < p.N; ++n) p.scratch_indices->set_integer(n, (n + 1) % rows);
           }},
      {.rule = Rule::output_overlap, .needs = base_with({.min_tokens = 1}), .problem = alias_output},
      {.rule = Rule::output_self_overlap, .needs = base_with({.min_tokens = 2}), .problem = fold_output},
      {.rule = Rule::index_overflow_32bit, .needs = never},  // such a view cannot be allocated inside its buffer
  };
  return table;
}

// The row of each rule, by the rule's value; checked once against all_rules().
std::array<const RuleBreak*, kAllRules.size()> index_rows() {
  std::array<const RuleBreak*, kAllRules.size()> index{};
  for (const RuleBreak& row : rows()) {
    const auto at = static_cast<std::size_t>(row.rule);
    if (at >= index.size() || index[at])
      throw std::logic_error("rule_break: a second row for rule " + std::string(name_of(row.rule)));
    if (row.spec && row.problem)
      throw std::logic_error("rule_break: the row of " + std::string(name_of(row.rule)) + " has two breaks");
    index[at] = &row;
  }
  return index;
}

}  // namespace

const RuleBreak& rule_break(Rule rule) {
  static const auto index = index_rows();
  const auto at = static_cast<std::size_t>(rule);
  if (at >= index.size() || !index[at])
    throw std::logic_error("rule_break: no row breaks rule " + std::string(name_of(rule)) + " (rule_breaks.cpp)");
  return *index[at];
}

}  // namespace kda::props::detail
