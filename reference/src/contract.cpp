// The rule checks. Every size, stride and offset may be garbage (the contract is fuzzed), so
// products and sums of them use checked 64-bit arithmetic, and a tensor's data is read only after
// its view is known to lie inside its buffer with an integer dtype and rank 1.
#include "kda/contract.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <sstream>
#include <utility>

namespace kda {
namespace {

using i64 = std::int64_t;

// ---- checked arithmetic ----

std::optional<i64> add(i64 a, i64 b) {
  i64 r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}
std::optional<i64> sub(i64 a, i64 b) {
  i64 r;
  if (__builtin_sub_overflow(a, b, &r)) return std::nullopt;
  return r;
}
std::optional<i64> mul(i64 a, i64 b) {
  i64 r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// ---- message formatting ----

template <class... Parts>
std::string cat(const Parts&... parts) {
  std::ostringstream s;
  (s << ... << parts);
  return s.str();
}

// Python's tuple repr, as upstream prints shapes and strides: (8, 4, 16), (8,), ().
std::string py_tuple(std::span<const i64> xs) {
  std::string s = "(";
  for (std::size_t i = 0; i < xs.size(); ++i) s += (i ? ", " : "") + std::to_string(xs[i]);
  return s + (xs.size() == 1 ? ",)" : ")");
}
std::string py_tuple(std::initializer_list<i64> xs) { return py_tuple(std::span<const i64>(xs.begin(), xs.size())); }
// Python's list repr, as upstream prints list(tensor.shape): [3, 4], [3], [].
std::string py_list(std::span<const i64> xs) {
  std::string s = "[";
  for (std::size_t i = 0; i < xs.size(); ++i) s += (i ? ", " : "") + std::to_string(xs[i]);
  return s + "]";
}

// Python's float repr: -6.0, 0.5, 1e+20, nan, inf.
std::string py_float(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x < 0 ? "-inf" : "inf";
  char buf[64];
  const auto end = std::to_chars(buf, buf + sizeof buf, x).ptr;
  std::string s(buf, end);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

// torch's dtype names, as upstream messages use them.
std::string torch_name(DType t) {
  switch (t) {
    case DType::bf16: return "bfloat16";
    case DType::f16: return "float16";
    case DType::f32: return "float32";
    case DType::f64: return "float64";
    case DType::i32: return "int32";
    case DType::i64: return "int64";
  }
  return cat("unknown dtype (code ", static_cast<int>(t), ")");
}

// "float32", "float32 or bfloat16", "bfloat16, float16 or float32".
std::string one_of(const std::vector<DType>& ts) {
  std::string s;
  for (std::size_t i = 0; i < ts.size(); ++i)
    s += (i == 0 ? "" : i + 1 == ts.size() ? " or " : ", ") + torch_name(ts[i]);
  return s;
}

bool known(DType t) { return size_of(t) != 0; }
bool is_integer(DType t) { return t == DType::i32 || t == DType::i64; }

// ---- what every tensor's view reaches ----

// The elements a view reaches, relative to its first element, or why that is not computable.
struct Reach {
  i64 numel = 0;
  i64 low = 0, high = 0;  // most negative and most positive element offset from view.offset
  std::string error;      // non-empty: a malformed view; nothing else here is meaningful
};

Reach reach_of(const View& v) {
  Reach r;
  if (v.shape.size() != v.strides.size()) {
    r.error = cat("has ", v.shape.size(), " sizes but ", v.strides.size(), " strides");
    return r;
  }
  for (i64 s : v.shape)
    if (s < 0) {
      r.error = "has a negative size";
      return r;
    }
  if (std::find(v.shape.begin(), v.shape.end(), 0) != v.shape.end()) return r;  // empty, whatever the other sizes
  std::optional<i64> n = 1;
  for (i64 s : v.shape)
    if (!(n = mul(*n, s))) {
      r.error = "has more elements than 64-bit arithmetic counts";
      return r;
    }
  r.numel = *n;
  for (std::size_t d = 0; d < v.shape.size(); ++d) {
    const auto step = mul(v.shape[d] - 1, v.strides[d]);
    auto& side = v.strides[d] < 0 ? r.low : r.high;
    const auto moved = step ? add(side, *step) : std::nullopt;
    if (!moved) {
      r.error = "reaches elements beyond 64-bit index arithmetic";
      return r;
    }
    side = *moved;
  }
  return r;
}

struct Entry {
  std::string_view name;
  const Tensor* tensor;
  Access access;
  Reach reach;
  bool sound = false;               // well-formed and inside its buffer: its elements may be read
  std::optional<ByteRange> bytes;   // bytes touched, when sound and not empty

  bool writes() const { return access != Access::read; }
};

std::vector<Entry> entries_of(const Problem& p) {
  std::vector<Entry> es;
  for (const auto& f : tensor_fields())
    if (const Tensor* t = f.in(p)) es.push_back({f.name, t, f.access, {}, false, {}});
  return es;
}

// ---- the checking context ----

struct Context {
  const Problem& p;
  const Profile& profile;
  std::vector<Entry> tensors;
  std::vector<Violation> found;

  void report(Rule r, std::string message) {
    if (profile.enforces(r)) found.push_back({r, std::move(message)});
  }
  const Entry& entry(const Tensor& t) const {
    return *std::find_if(tensors.begin(), tensors.end(), [&](const Entry& e) { return e.tensor == &t; });
  }
  // The values of a 1-D integer tensor, when it can be read safely. More entries than buffer bytes
  // means a broadcast (stride 0) view of any length: not read, so garbage cannot exhaust memory.
  std::optional<std::vector<i64>> integers(const Tensor& t) const {
    const Entry& e = entry(t);
    if (!e.sound || !is_integer(t.dtype()) || t.view.rank() != 1) return std::nullopt;
    if (t.shape()[0] > static_cast<i64>(t.buffer->size())) return std::nullopt;
    std::vector<i64> xs(static_cast<std::size_t>(t.shape()[0]));
    for (std::size_t i = 0; i < xs.size(); ++i) xs[i] = t.integer_at(static_cast<i64>(i));
    return xs;
  }
  // The values of a 2-D integer tensor row by row (an index table), under integers()'s conditions.
  std::optional<std::vector<std::vector<i64>>> table(const Tensor& t) const {
    const Entry& e = entry(t);
    if (!e.sound || !is_integer(t.dtype()) || t.view.rank() != 2) return std::nullopt;
    if (e.reach.numel > static_cast<i64>(t.buffer->size())) return std::nullopt;
    std::vector<std::vector<i64>> rows(static_cast<std::size_t>(t.shape()[0]));
    for (std::size_t i = 0; i < rows.size(); ++i)
      for (i64 j = 0; j < t.shape()[1]; ++j) rows[i].push_back(t.integer_at(static_cast<i64>(i), j));
    return rows;
  }
  bool varlen() const { return p.cu_seqlens.has_value(); }
  bool verify() const { return p.mode == Mode::verify; }
  // "V, K" or "K, V": the per-head state dims in the problem's layout.
  std::string_view state_dims() const { return p.options.state_layout == StateLayout::vk ? "V, K" : "K, V"; }
  Shape state_head() const { return p.options.state_layout == StateLayout::vk ? Shape{p.V, p.K} : Shape{p.K, p.V}; }
};

// ---- sizes and views ----

void check_sizes(Context& c) {
  const Problem& p = c.p;
  if (p.B < 0 || p.T < 0 || p.N < 0 || p.H < 1 || p.HV < 1 || p.K < 1 || p.V < 1)
    c.report(Rule::problem_sizes, cat("problem sizes must have B, T, N >= 0 and H, HV, K, V >= 1, got B=", p.B,
                                      ", T=", p.T, ", N=", p.N, ", H=", p.H, ", HV=", p.HV, ", K=", p.K, ", V=", p.V));
  if (c.verify() && p.L < 1)
    c.report(Rule::verify_tokens, cat("speculative verify takes L = 1 + num_spec >= 1 tokens per request, got L=", p.L));
}

// Fills each entry's reach and soundness; reports what makes a view unreadable.
void check_views(Context& c) {
  for (Entry& e : c.tensors) {
    const Tensor& t = *e.tensor;
    e.reach = reach_of(t.view);
    const std::string view = cat(e.name, " view ", t.view.describe());
    if (!t.buffer) {
      c.report(Rule::view_in_bounds, cat(e.name, " has no buffer"));
      continue;
    }
    if (!known(t.dtype())) {
      c.report(Rule::view_in_bounds, cat(e.name, " has an ", torch_name(t.dtype())));
      continue;
    }
    if (!e.reach.error.empty()) {
      c.report(Rule::view_in_bounds, cat(view, ' ', e.reach.error));
      continue;
    }
    if (e.reach.numel == 0) {
      e.sound = true;
      continue;
    }
    const i64 es = static_cast<i64>(size_of(t.dtype()));
    const auto first = add(t.view.offset, e.reach.low);
    const auto last = add(t.view.offset, e.reach.high);
    const auto past = last ? add(*last, 1) : std::nullopt;
    const auto begin = first ? mul(*first, es) : std::nullopt;
    const auto end = past ? mul(*past, es) : std::nullopt;
    if (!begin || !end) {
      c.report(Rule::view_in_bounds, cat(view, " reaches bytes beyond 64-bit offsets"));
      continue;
    }
    const auto size = static_cast<i64>(t.buffer->size());
    if (*begin < 0 || *end > size) {
      c.report(Rule::view_in_bounds, cat(view, " reaches bytes [", *begin, ", ", *end, ") outside its ", size,
                                         "-byte buffer '", t.name(), "'"));
      continue;
    }
    e.sound = true;
    e.bytes = ByteRange{*begin, *end};
  }
}

// ---- varlen metadata and sequences ----

// What the sequence layout tells later checks.
struct Sequences {
  std::optional<std::vector<i64>> lengths;  // varlen: per sequence, when cu_seqlens is well-formed
  std::optional<i64> chunks;                // chunks over all sequences at the problem's chunk size
};

void check_batch(Context& c) {
  const Problem& p = c.p;
  if (c.varlen() && p.B != 1) {
    c.report(Rule::varlen_batch_one,
             c.profile.batch_wording == BatchWording::helion
                 ? std::string("varlen KDA requires batch size 1")
                 : cat("The batch size is expected to be 1 rather than ", p.B,
                       " when using `cu_seqlens`.Please flatten variable-length inputs before processing."));
  }
  if (!c.varlen() && p.N != p.B)
    c.report(Rule::batch_sequence_count, cat("without cu_seqlens each batch row is one sequence, so N must equal B=",
                                             p.B, ", got N=", p.N));
}

std::optional<std::vector<i64>> check_cu_seqlens(Context& c) {
  const Problem& p = c.p;
  const Tensor& cu = *p.cu_seqlens;
  if (!is_integer(cu.dtype()))
    c.report(Rule::cu_seqlens_dtype, cat("cu_seqlens must be int32 or int64, got ", torch_name(cu.dtype())));
  const auto entries = add(p.N, 1);
  const bool shape_ok = cu.view.rank() == 1 && entries && cu.shape()[0] == *entries;
  if (!shape_ok)
    c.report(Rule::cu_seqlens_shape, cat("cu_seqlens must be [N + 1]=",
                                         entries ? py_tuple({*entries}) : std::string("(N + 1,)"), " with N=", p.N,
                                         ", got ", py_tuple(cu.shape())));
  const auto cu_values = c.integers(cu);
  if (!cu_values || cu_values->empty()) return std::nullopt;
  const auto& xs = *cu_values;
  if (xs.front() != 0) c.report(Rule::cu_seqlens_start, cat("cu_seqlens must start at 0, got cu_seqlens[0]=", xs[0]));
  bool monotonic = true;
  for (std::size_t i = 1; i < xs.size() && monotonic; ++i)
    if (xs[i] < xs[i - 1]) {
      monotonic = false;
      c.report(Rule::cu_seqlens_monotonic, cat("cu_seqlens must be non-decreasing, got cu_seqlens[", i, "]=", xs[i],
                                               " after cu_seqlens[", i - 1, "]=", xs[i - 1]));
    }
  if (xs.back() != p.T)
    c.report(Rule::cu_seqlens_end,
             cat("cu_seqlens must end at T=", p.T, ", got cu_seqlens[", xs.size() - 1, "]=", xs.back()));
  if (!shape_ok || !monotonic) return std::nullopt;
  std::vector<i64> lengths;
  for (std::size_t n = 0; n + 1 < xs.size(); ++n) {
    const auto len = sub(xs[n + 1], xs[n]);
    if (!len) return std::nullopt;
    lengths.push_back(*len);
  }
  return lengths;
}

i64 ceil_div(i64 a, i64 b) { return a / b + (a % b != 0); }  // a >= 0, b > 0

Sequences check_sequences(Context& c) {
  const Problem& p = c.p;
  Sequences s;
  if (c.varlen()) s.lengths = check_cu_seqlens(c);
  const int cs = p.options.chunk_size;
  if (cs != 32 && cs != 64)
    c.report(Rule::chunk_size, cat("`chunk_size` must be either 32 or 64 for KDA, got ", cs, "."));
  if (cs > 0 && s.lengths) {
    std::optional<i64> total = 0;
    for (i64 len : *s.lengths)
      if (total) total = add(*total, ceil_div(len, cs));
    s.chunks = total;
  } else if (cs > 0 && !c.varlen() && p.N >= 0 && p.T >= 0) {
    s.chunks = mul(p.N, ceil_div(p.T, cs));  // N sequences of T tokens
  }
  if (p.mode == Mode::decode) {
    if (!c.varlen() && p.T != 1)
      c.report(Rule::decode_one_token, cat("decode takes exactly one token per sequence, got T=", p.T));
    if (c.varlen() && s.lengths) {
      const auto& ls = *s.lengths;
      const auto bad = std::find_if(ls.begin(), ls.end(), [](i64 len) { return len != 1; });
      if (bad != ls.end())
        c.report(Rule::decode_one_token, cat("decode takes exactly one token per sequence, got ", *bad,
                                             " tokens in sequence ", bad - ls.begin()));
    }
  }
  if (c.verify() && p.L >= 1) {
    // Without cu_seqlens every one of the N = B requests has T tokens: one length stands for all (N
    // may be any size here, so no list of N lengths is built).
    const std::vector<i64> lengths = c.varlen() ? s.lengths.value_or(std::vector<i64>{})
                                     : p.N > 0 && p.N <= p.B ? std::vector<i64>{p.T}
                                                             : std::vector<i64>{};
    const auto longer = std::find_if(lengths.begin(), lengths.end(), [&](i64 len) { return len > p.L; });
    if (longer != lengths.end())
      c.report(Rule::verify_tokens, cat("speculative verify takes at most L=", p.L, " tokens per request (1 + num_spec), got ",
                                        *longer, " tokens in sequence ", longer - lengths.begin()));
    if ((c.varlen() && !s.lengths) || std::any_of(lengths.begin(), lengths.end(), [&](i64 len) { return len != p.L; }))
      c.report(Rule::verify_fixed_tokens, cat("DSpARK KDA MTP requires a fixed 1 + num_spec dense tokens per request; got T=",
                                              p.T, ", N=", p.N));
  }
  return s;
}

// ---- activations ----

void expect_shape(Context& c, Rule r, std::string_view name, const Tensor& t, std::string_view dims,
                  const Shape& expected) {
  if (t.shape() != expected)
    c.report(r, cat(name, " must be [", dims, "]=", py_tuple(expected), ", got ", py_tuple(t.shape())));
}

void check_activations(Context& c) {
  const Problem& p = c.p;
  if (p.k.shape() != p.q.shape())
    c.report(Rule::qk_same_shape,
             cat("q and k must have the same shape, got q ", py_tuple(p.q.shape()), " vs k ", py_tuple(p.k.shape())));
  if (p.H > 0 && p.HV % p.H != 0)
    c.report(Rule::hv_divisible, cat("num_v_heads (", p.HV, ") must be divisible by num_heads (", p.H, ")."));
  expect_shape(c, Rule::q_shape, "q", p.q, "B, T, H, K", {p.B, p.T, p.H, p.K});
  expect_shape(c, Rule::v_shape, "v", p.v, "B, T, HV, V", {p.B, p.T, p.HV, p.V});
  expect_shape(c, Rule::g_shape, "g", p.g, "B, T, HV, K", {p.B, p.T, p.HV, p.K});
  expect_shape(c, Rule::beta_shape, "beta", p.beta, "B, T, HV", {p.B, p.T, p.HV});
  expect_shape(c, Rule::o_shape, "o", p.o, "B, T, HV, V", {p.B, p.T, p.HV, p.V});

  const Profile& pr = c.profile;
  if (p.K > pr.max_key_head_dim)
    c.report(Rule::key_head_dim_max, cat("KDA supports key headdim <= ", pr.max_key_head_dim, ", got ", p.K, "."));
  auto allowed = [](const std::vector<i64>& set, i64 x) {
    return set.empty() || std::find(set.begin(), set.end(), x) != set.end();
  };
  if (!allowed(pr.key_head_dims, p.K) || !allowed(pr.value_head_dims, p.V)) {
    auto list = [](const std::vector<i64>& set) { return set.empty() ? std::string("any") : py_tuple(set); };
    c.report(Rule::head_dims_supported, cat(pr.name, " supports head dims K in ", list(pr.key_head_dims), " and V in ",
                                            list(pr.value_head_dims), ", got K=", p.K, ", V=", p.V));
  }
}

void expect_dtype(Context& c, Rule r, std::string_view name, const Tensor& t, const std::vector<DType>& allowed) {
  if (std::find(allowed.begin(), allowed.end(), t.dtype()) == allowed.end())
    c.report(r, cat(name, " must be in ", one_of(allowed), ". Got ", torch_name(t.dtype()), "."));
}

void check_dtypes(Context& c) {
  const Problem& p = c.p;
  const auto& in = c.profile.input_dtypes;
  expect_dtype(c, Rule::input_dtype, "q", p.q, in), expect_dtype(c, Rule::input_dtype, "k", p.k, in);
  expect_dtype(c, Rule::input_dtype, "v", p.v, in), expect_dtype(c, Rule::input_dtype, "g", p.g, in);
  expect_dtype(c, Rule::input_dtype, "beta", p.beta, in);
  expect_dtype(c, Rule::output_dtype, "o", p.o, c.profile.output_dtypes);
  for (auto [name, t] : {std::pair{"A_log", &p.A_log}, std::pair{"dt_bias", &p.dt_bias}})
    if (*t && (!known((*t)->dtype()) || !is_float((*t)->dtype())))
      c.report(Rule::gate_params_dtype,
               cat(name, " must be a floating-point tensor, got ", torch_name((*t)->dtype()), "."));
}

// ---- options and gate parameters ----

void check_options(Context& c) {
  const Problem& p = c.p;
  const Options& op = p.options;
  const auto hv_k = mul(p.HV, p.K);
  if (p.A_log && c.entry(*p.A_log).reach.error.empty() && c.entry(*p.A_log).reach.numel != p.HV)
    c.report(Rule::A_log_size, cat("`A_log` must have ", p.HV, " elements (got ", c.entry(*p.A_log).reach.numel, ")."));
  if (p.dt_bias && hv_k && c.entry(*p.dt_bias).reach.error.empty() && c.entry(*p.dt_bias).reach.numel != *hv_k)
    c.report(Rule::dt_bias_size,
             cat("`dt_bias` must have ", *hv_k, " elements (got ", c.entry(*p.dt_bias).reach.numel, ")."));
  if (op.scale && !(std::isfinite(*op.scale) && *op.scale > 0))
    c.report(Rule::scale_positive, cat("`scale` must be positive and finite, got ", py_float(*op.scale), "."));
  if (op.lower_bound && !(*op.lower_bound >= -5 && *op.lower_bound < 0))
    c.report(Rule::lower_bound_range,
             cat("`lower_bound` must be in the safe range [-5, 0), got ", py_float(*op.lower_bound), "."));
  if (op.gate_in_kernel && op.safe_gate && !op.lower_bound)
    c.report(Rule::lower_bound_required,
             "`lower_bound` must be specified when `safe_gate=True` and `use_gate_in_kernel=True`.");
  if (op.gate_in_kernel && !op.lower_bound && !p.A_log)
    c.report(Rule::softplus_needs_A_log,
             "`A_log` must be provided when `use_gate_in_kernel=True` and `lower_bound` is not set.");
  if (op.allow_neg_eigval && !op.beta_from_logits)
    c.report(Rule::neg_eigval_needs_beta_logits, "`allow_neg_eigval=True` requires `use_beta_sigmoid_in_kernel=True`.");
}

// ---- states ----

void check_state_sources(Context& c) {
  const Problem& p = c.p;
  if (p.initial_state && p.state_pool)
    c.report(Rule::state_source, "initial_state and state_pool are both given; states come from one source");
  if (p.state_pool && !p.state_indices)
    c.report(Rule::state_source, "state_pool is given without state_indices; a pool is read through its indices");
  if (p.state_indices && !p.state_pool)
    c.report(Rule::state_source, "state_indices are given without a state_pool to index");
  if (p.final_state && p.state_pool)
    c.report(Rule::state_source, "final_state is given with a state_pool; the pool's slots are updated in place");
  const bool table = p.num_accepted.has_value(), scratch = p.scratch_states || p.scratch_indices;
  if (c.verify() && !table && !scratch)
    c.report(Rule::state_source, "verify reads its states through an index table with accepted counts (num_accepted) "
                                 "or from a pool with a scratch buffer (scratch_states, scratch_indices); got neither");
  if (!c.verify() && (table || scratch))
    c.report(Rule::state_source, cat(table ? "num_accepted" : "scratch_states", " belongs to a verify call; got mode ",
                                     name_of(p.mode)));
  if (table && scratch)
    c.report(Rule::state_source, "num_accepted and a scratch buffer are both given; a verify call takes one form");
  if ((table || scratch) && !p.state_pool)
    c.report(Rule::state_source, "a verify call reads the committed states from a state_pool; none is given");
  if (p.scratch_states.has_value() != p.scratch_indices.has_value())
    c.report(Rule::state_source, p.scratch_states ? "scratch_states is given without scratch_indices (its row map)"
                                                  : "scratch_indices is given without scratch_states");
  if (c.verify() && (p.chunk_states || p.token_states))
    c.report(Rule::state_source, cat("a verify call stores the state after every token in the ",
                                     table ? "pool" : "scratch buffer", "; ",
                                     p.token_states ? "token_states" : "chunk_states", " is not taken"));

  const auto& supported = c.profile.state_sources;
  auto refuse = [&](StateSource s, std::string_view what) {
    if (std::find(supported.begin(), supported.end(), s) != supported.end()) return;
    std::string list;
    for (auto x : supported) list += cat(list.empty() ? "" : ", ", name_of(x));
    c.report(Rule::state_source_supported, cat(c.profile.name, " does not take ", what, " (it supports: ", list, ")"));
  };
  if (p.initial_state) refuse(StateSource::dense, "a dense initial_state");
  if (table) refuse(StateSource::table, "an index-table verify (num_accepted)");
  else if (scratch) refuse(StateSource::scratch, "a scratch-buffer verify (scratch_states)");
  else if (p.state_pool || p.state_indices) refuse(StateSource::pool, "a state pool");
  if (!p.initial_state && !p.state_pool && !p.state_indices)
    refuse(StateSource::none, "a problem without initial states");
}

void check_state_shapes(Context& c, const Sequences& seqs) {
  const Problem& p = c.p;
  const Shape head = c.state_head();
  const std::string dims = cat("N, HV, ", c.state_dims());
  auto with_lead = [&](std::initializer_list<i64> lead) {
    Shape s(lead);
    s.push_back(p.HV);
    s.insert(s.end(), head.begin(), head.end());
    return s;
  };
  const Shape per_slot = with_lead({});
  auto inner_matches = [&](const Shape& s) { return s.size() == 4 && Shape(s.begin() + 1, s.end()) == per_slot; };
  auto count_message = [&](i64 n) {
    return cat("The number of initial states is expected to be equal to the number of input sequences, i.e., ", p.N,
               " rather than ", n, ".");
  };

  if (p.initial_state) {
    const Shape& s = p.initial_state->shape();
    if (!inner_matches(s))
      c.report(Rule::initial_state_shape, cat("initial_state must be [", dims, "] with (HV, ", c.state_dims(), ")=",
                                              py_tuple(per_slot), ", got ", py_tuple(s)));
    if (!s.empty() && s[0] != p.N) c.report(Rule::initial_state_count, count_message(s[0]));
  }
  if (p.state_indices && p.state_indices->view.rank() >= 1 && p.state_indices->shape()[0] != p.N)
    c.report(Rule::initial_state_count, count_message(p.state_indices->shape()[0]));
  if (p.final_state) expect_shape(c, Rule::final_state_shape, "final_state", *p.final_state, dims, with_lead({p.N}));
  if (p.chunk_states) {
    const Shape& s = p.chunk_states->shape();
    const std::string chunk_dims = cat("chunks, HV, ", c.state_dims());
    if (seqs.chunks)
      expect_shape(c, Rule::chunk_states_shape, "chunk_states", *p.chunk_states, chunk_dims, with_lead({*seqs.chunks}));
    else if (!inner_matches(s))
      c.report(Rule::chunk_states_shape, cat("chunk_states must be [", chunk_dims, "] with (HV, ", c.state_dims(), ")=",
                                             py_tuple(per_slot), ", got ", py_tuple(s)));
  }
  if (p.token_states)
    expect_shape(c, Rule::token_states_shape, "token_states", *p.token_states, cat("B, T, HV, ", c.state_dims()),
                 with_lead({p.B, p.T}));
}

void check_state_types(Context& c) {
  const Problem& p = c.p;
  bool any = false;
  for (auto [name, t] : {std::pair{"initial_state", &p.initial_state}, std::pair{"state_pool", &p.state_pool},
                         std::pair{"final_state", &p.final_state}, std::pair{"chunk_states", &p.chunk_states},
                         std::pair{"token_states", &p.token_states}, std::pair{"scratch_states", &p.scratch_states}})
    if (*t) {
      any = true;
      expect_dtype(c, Rule::state_dtype, name, **t, c.profile.state_dtypes);
    }
  const auto required = c.profile.state_layout;
  if (any && required && *required != p.options.state_layout) {
    const bool vk = *required == StateLayout::vk;
    c.report(Rule::state_layout, cat(c.profile.name, " keeps states as [N, HV, ", vk ? "V, K" : "K, V", "] (",
                                     vk ? "K" : "V", " contiguous), got the [N, HV, ", vk ? "K, V" : "V, K",
                                     "] layout"));
  }
}

// The FlashInfer stride contract on a buffer of states: compact inside one state row (a pool slot,
// a scratch step), the outer stride a multiple of 16 elements, the base 32-byte aligned (the payload
// itself is 256-byte aligned). `lead` is the number of outer dims (pool 1, scratch 2).
void check_state_strides(Context& c, std::string_view name, const Tensor& t, std::size_t lead) {
  const Problem& p = c.p;
  const Shape& s = t.shape();
  const Shape& st = t.view.strides;
  const bool vk = p.options.state_layout == StateLayout::vk;
  if (st.size() != lead + 3 || s.size() != lead + 3) return;
  const auto row = mul(s[lead + 1], s[lead + 2]);
  if (row && (st[lead] != *row || st[lead + 1] != s[lead + 2] || st[lead + 2] != 1))
    c.report(Rule::state_pool_inner_strides,
             cat(name == "state_pool" ? "recurrent_kda state" : name, " inner strides must be compact ",
                 vk ? "(V*K, K, 1)" : "(K*V, V, 1)", "=(", *row, ", ", s[lead + 2], ", 1); got ",
                 py_tuple({st[lead], st[lead + 1], st[lead + 2]}), " (only the ",
                 lead == 1 ? "slot" : "row and step", " stride", lead == 1 ? "" : "s", " may be non-compact)"));
  const auto base = mul(t.view.offset, static_cast<i64>(size_of(t.dtype())));
  const auto outer = std::find_if(st.begin(), st.begin() + static_cast<std::ptrdiff_t>(lead), [](i64 x) { return x % 16 != 0; });
  if (known(t.dtype()) && base && (outer != st.begin() + static_cast<std::ptrdiff_t>(lead) || *base % 32 != 0))
    c.report(Rule::state_pool_alignment,
             cat(name == "state_pool" ? "recurrent_kda state pool" : name, " breaks the compiled stride contract: ",
                 lead == 1 ? "slot stride " : "row and step strides ",
                 lead == 1 ? std::to_string(st[0]) : py_tuple({st[0], st[1]}), " elements must be ",
                 lead == 1 ? "a multiple" : "multiples", " of 16 and the base byte offset ", *base,
                 " a multiple of 32 (sym_int64(divisibility=16) / assumed_align=32)"));
}

void check_pool(Context& c) {
  const Problem& p = c.p;
  const Tensor& pool = *p.state_pool;
  const Shape& s = pool.shape();
  const bool vk = p.options.state_layout == StateLayout::vk;
  if (s.size() != 4) {
    c.report(Rule::state_pool_rank, cat("recurrent_kda needs a [N, HV, ", vk ? "V, K" : "K, V",
                                        "] state pool; got shape ", py_tuple(s)));
    return;
  }
  const Shape per_slot{p.HV, c.state_head()[0], c.state_head()[1]};
  if (Shape(s.begin() + 1, s.end()) != per_slot)
    c.report(Rule::state_pool_shape, cat("state_pool must be [N, HV, ", c.state_dims(), "] with (HV, ", c.state_dims(),
                                         ")=", py_tuple(per_slot), ", got ", py_tuple(s)));
  check_state_strides(c, "state_pool", pool, 1);
}

// Active entries (not -1) that repeat: {first place, repeating place, value}, by place order.
struct Repeat {
  std::string first, again;
  i64 value;
};
std::optional<Repeat> first_repeat(const std::vector<std::pair<i64, std::string>>& placed) {
  std::vector<std::pair<i64, std::size_t>> active;
  for (std::size_t i = 0; i < placed.size(); ++i)
    if (placed[i].first != -1) active.emplace_back(placed[i].first, i);
  std::sort(active.begin(), active.end());
  const auto dup =
      std::adjacent_find(active.begin(), active.end(), [](const auto& a, const auto& b) { return a.first == b.first; });
  if (dup == active.end()) return std::nullopt;
  return Repeat{placed[dup->second].second, placed[(dup + 1)->second].second, dup->first};
}

void check_indices(Context& c) {
  const Problem& p = c.p;
  const Tensor& idx = *p.state_indices;
  const bool table = p.num_accepted.has_value();
  if (idx.dtype() != DType::i32)
    c.report(Rule::state_indices_dtype, cat("state_indices must be int32, got ", torch_name(idx.dtype())));
  if (!table && idx.view.rank() != 1)
    c.report(Rule::state_indices_shape,
             cat("state_indices must be [N]=", py_tuple({p.N}), ", got ", py_tuple(idx.shape())));
  if (table && (idx.view.rank() != 2 || idx.shape()[1] != p.L))  // FlashInfer's wording, L = 1 + num_spec
    c.report(Rule::state_indices_shape, cat("ssm_state_indices must be 2D [N, ", p.L, "] in spec mode, got shape ",
                                            py_list(idx.shape())));
  // Every entry with its place, "state_indices[3]" or "state_indices[1, 2]".
  std::vector<std::pair<i64, std::string>> placed;
  if (idx.view.rank() != (table ? 2 : 1)) return;
  if (!table) {
    const auto values = c.integers(idx);
    if (!values) return;
    for (std::size_t i = 0; i < values->size(); ++i) placed.emplace_back((*values)[i], cat("state_indices[", i, "]"));
  } else {
    const auto rows = c.table(idx);
    if (!rows) return;
    for (std::size_t i = 0; i < rows->size(); ++i)
      for (std::size_t j = 0; j < (*rows)[i].size(); ++j)
        placed.emplace_back((*rows)[i][j], cat("state_indices[", i, ", ", j, "]"));
  }
  if (p.state_pool && p.state_pool->view.rank() >= 1) {
    const i64 slots = p.state_pool->shape()[0];
    i64 outside = 0;
    std::size_t first = 0;
    for (std::size_t i = 0; i < placed.size(); ++i) {
      if (placed[i].first >= -1 && placed[i].first < slots) continue;
      if (outside++ == 0) first = i;
    }
    if (outside)
      c.report(Rule::state_indices_range,
               cat(placed[first].second, "=", placed[first].first, " is neither a pool slot in [0, ", slots,
                   ") nor -1 (padding); ", outside, " of ", placed.size(), " indices are out of range"));
  }
  if (const auto r = first_repeat(placed))
    c.report(Rule::state_indices_distinct, cat(r->again, "=", r->value, " repeats ", r->first,
                                               table ? ": two tokens would store their states in one pool slot"
                                                     : ": two sequences would read and update one pool slot"));
}

// The index-table form's accepted counts: read only after their dtype, shape and place are known good,
// and never used as an index before they are known to lie in [1, L].
void check_accepted(Context& c) {
  const Problem& p = c.p;
  const Tensor& a = *p.num_accepted;
  if (!is_integer(a.dtype()))
    c.report(Rule::accepted_dtype, cat("num_accepted_tokens must be int32 or int64, got ", torch_name(a.dtype())));
  if (a.view.rank() != 1 || a.shape()[0] != p.N)
    c.report(Rule::accepted_shape, cat("num_accepted_tokens must be [N]=", py_tuple({p.N}), ", got ", py_tuple(a.shape())));
  const auto values = c.integers(a);
  if (!values) return;
  i64 outside = 0;
  std::size_t first = 0;
  for (std::size_t i = 0; i < values->size(); ++i) {
    if ((*values)[i] >= 1 && (*values)[i] <= p.L) continue;
    if (outside++ == 0) first = i;
  }
  if (outside)
    c.report(Rule::accepted_range,
             cat("num_accepted_tokens[", first, "]=", (*values)[first], " is outside [1, L=", p.L,
                 "]: the initial state is slot state_indices[n, num_accepted_tokens[n] - 1]; ", outside, " of ",
                 values->size(), " counts are out of range"));
}

// The scratch form: scratch_states [S, L', HV, ..] and its row map scratch_indices [N].
void check_scratch(Context& c) {
  const Problem& p = c.p;
  if (p.scratch_states) {
    const Tensor& st = *p.scratch_states;
    const Shape& s = st.shape();
    const Shape per_step{p.HV, c.state_head()[0], c.state_head()[1]};
    if (s.size() != 5 || Shape(s.begin() + 2, s.end()) != per_step)
      c.report(Rule::scratch_states_shape, cat("scratch_states must be [S, L', HV, ", c.state_dims(), "] with (HV, ",
                                               c.state_dims(), ")=", py_tuple(per_step), ", got ", py_tuple(s)));
    if (s.size() == 5 && s[1] < p.L)
      c.report(Rule::scratch_steps,
               cat("KDA verify needs ", p.L, " scratch steps, but intermediate_ssm only has ", s[1], "."));
    check_state_strides(c, "scratch_states", st, 2);
  }
  if (!p.scratch_indices) return;
  const Tensor& idx = *p.scratch_indices;
  if (idx.dtype() != DType::i32)
    c.report(Rule::scratch_indices_dtype, cat("scratch_indices must be int32, got ", torch_name(idx.dtype())));
  if (idx.view.rank() != 1 || idx.shape()[0] != p.N)
    c.report(Rule::scratch_indices_shape,
             cat("scratch_indices must be [N]=", py_tuple({p.N}), ", got ", py_tuple(idx.shape())));
  const auto values = c.integers(idx);
  if (!values) return;
  const auto& xs = *values;
  if (p.scratch_states && p.scratch_states->view.rank() >= 1) {
    const i64 rows = p.scratch_states->shape()[0];
    const auto bad = std::find_if(xs.begin(), xs.end(), [&](i64 x) { return x < -1 || x >= rows; });
    if (bad != xs.end())
      c.report(Rule::scratch_indices_range, cat("scratch_indices[", bad - xs.begin(), "]=", *bad,
                                                " is neither a row of scratch_states in [0, ", rows, ") nor -1"));
  }
  std::vector<std::pair<i64, std::string>> placed;
  for (std::size_t i = 0; i < xs.size(); ++i) placed.emplace_back(xs[i], cat("scratch_indices[", i, "]"));
  if (const auto r = first_repeat(placed))
    c.report(Rule::scratch_indices_distinct, cat(r->again, "=", r->value, " repeats ", r->first,
                                                 ": two requests would store their states in one scratch row"));
  for (std::size_t i = 0; i < xs.size(); ++i)
    if (xs[i] != static_cast<i64>(i)) {
      c.report(Rule::scratch_indices_identity, "FlashInfer KDA verify requires an identity intermediate row-map "
                                               "(verify_intermediate_state_indices must be arange).");
      break;
    }
}

// ---- memory: overlaps and index width ----

// A proof that no two indices of a view share an element: with dims sorted by stride, each stride
// steps past everything the faster dims reach. Views it cannot prove (exotic interleavings) are
// treated as overlapping: an output must be provably free of self-overlap.
std::optional<std::string> self_overlap(const View& v) {
  std::vector<std::size_t> dims;
  for (std::size_t d = 0; d < v.shape.size(); ++d)
    if (v.shape[d] > 1) dims.push_back(d);
  auto magnitude = [&](std::size_t d) { return v.strides[d] < 0 ? -v.strides[d] : v.strides[d]; };
  std::sort(dims.begin(), dims.end(), [&](auto a, auto b) { return magnitude(a) < magnitude(b); });
  i64 span = 0;  // largest element offset the faster dims reach (sound views: no overflow)
  for (auto d : dims) {
    if (magnitude(d) <= span || magnitude(d) == 0)
      return cat("dim ", d, " (size ", v.shape[d], ", stride ", v.strides[d],
                 ") revisits elements the faster dims reach");
    span += (v.shape[d] - 1) * magnitude(d);
  }
  return std::nullopt;
}

void check_overlaps(Context& c) {
  const auto& ts = c.tensors;
  for (std::size_t i = 0; i < ts.size(); ++i) {
    if (ts[i].writes() && ts[i].bytes)
      if (auto why = self_overlap(ts[i].tensor->view))
        c.report(Rule::output_self_overlap,
                 cat(ts[i].name, " view ", ts[i].tensor->view.describe(), " overlaps itself: ", *why));
    for (std::size_t j = i + 1; j < ts.size(); ++j) {
      const Entry& a = ts[i].writes() ? ts[i] : ts[j];
      const Entry& b = &a == &ts[i] ? ts[j] : ts[i];
      if (!a.writes() || !a.bytes || !b.bytes || a.tensor->buffer != b.tensor->buffer) continue;
      if (a.bytes->overlaps(*b.bytes))
        c.report(Rule::output_overlap, cat(a.name, " overlaps ", b.name, " in buffer '", a.tensor->name(), "': bytes [",
                                           a.bytes->begin, ", ", a.bytes->end, ") and [", b.bytes->begin, ", ",
                                           b.bytes->end, "); an output must not share memory with another tensor"));
    }
  }
}

// Kernels index from a tensor's data pointer (base + offset), so the offset does not count. A pool's
// slot stride is 64-bit (FlashInfer's sym_int64; kda-facts §3), so only its per-slot reach counts.
void check_index_width(Context& c) {
  constexpr i64 limit = std::numeric_limits<std::int32_t>::max();
  for (const Entry& e : c.tensors) {
    const bool pool = (c.p.state_pool && e.tensor == &*c.p.state_pool) ||
                      (c.p.scratch_states && e.tensor == &*c.p.scratch_states);
    Reach r = e.reach;
    if (pool && e.reach.error.empty() && e.tensor->view.rank() >= 1 &&
        e.tensor->view.strides.size() == e.tensor->view.shape.size()) {
      View slot = e.tensor->view;
      slot.shape.erase(slot.shape.begin()), slot.strides.erase(slot.strides.begin());
      r = reach_of(slot);
    }
    if (!r.error.empty() || r.numel == 0) continue;
    if (r.low < -limit || r.high > limit)
      c.report(Rule::index_overflow_32bit,
               cat(e.name, pool ? " (one slot)" : "", " reaches element offsets [", r.low, ", ", r.high,
                   "] from its first element; 32-bit index math stops at INT32_MAX=", limit));
  }
}

}  // namespace

std::vector<Violation> validate(const Problem& problem, const Profile& profile) {
  Context c{problem, profile, entries_of(problem), {}};
  check_sizes(c);
  check_views(c);
  check_batch(c);
  const Sequences seqs = check_sequences(c);
  check_activations(c);
  check_dtypes(c);
  check_options(c);
  check_state_sources(c);
  check_state_shapes(c, seqs);
  check_state_types(c);
  if (problem.state_pool) check_pool(c);
  if (problem.state_indices) check_indices(c);
  if (problem.num_accepted) check_accepted(c);
  check_scratch(c);
  check_overlaps(c);
  check_index_width(c);
  return std::move(c.found);
}

namespace {
std::string summary(const Profile& profile, const std::vector<Violation>& found) {
  std::string s = cat("KDA problem breaks the '", profile.name, "' contract (", found.size(), " violation",
                      found.size() == 1 ? "" : "s", "):");
  for (const auto& v : found) s += cat("\n  ", name_of(v.rule), ": ", v.message);
  return s;
}
}  // namespace

ContractError::ContractError(const Profile& profile, std::vector<Violation> found)
    : std::runtime_error(summary(profile, found)), violations(std::move(found)) {}

void require_valid(const Problem& problem, const Profile& profile) {
  auto found = validate(problem, profile);
  if (!found.empty()) throw ContractError(profile, std::move(found));
}

}  // namespace kda
