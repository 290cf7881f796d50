// Cases around an imported call (GenLimits::around): the ordinary generator with every choice the call
// made kept, and its sizes drawn near the call's, shrinking back to them.
#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

#include "generators_internal.hpp"
#include "list_helpers.hpp"

namespace kda::props {

namespace {

using i64 = std::int64_t;

// The InputLayout whose strides are nearest to a [B,T,H,D] view's, and its padding (CaseSpec::pad).
std::pair<InputLayout, i64> layout_of(const View& v, i64 rows, bool fused, std::string& how) {
  const auto& s = v.strides;
  const i64 H = v.shape[2], D = v.shape[3];
  if (s[3] != 1) how = "element stride " + std::to_string(s[3]) + " drawn as contiguous; ";
  if (s[3] != 1) return {InputLayout::contiguous, 1};
  if (fused) return {InputLayout::fused_qkv, std::max<i64>(1, s[1] - rows)};
  if (H > 1 && s[2] > s[1]) return {InputLayout::permuted, std::max<i64>(1, s[2] - v.shape[1] * D)};
  if (s[2] > D) return {InputLayout::padded_head_stride, s[2] - D};
  if (s[1] > H * D) return {InputLayout::padded_token_stride, s[1] - H * D};
  return {InputLayout::contiguous, 1};
}

template <class T>
void keep_only(std::vector<T>& list, const T& value) {
  std::erase_if(list, [&](const T& x) { return x != value; });
}

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("the kernel cannot take the imported call's " + what);
}

}  // namespace

CaseSpec seed_spec(const Problem& p, std::string* note) {
  if (p.q.view.rank() != 4 || p.k.view.rank() != 4 || p.v.view.rank() != 4 || p.o.view.rank() != 4)
    throw std::invalid_argument("an imported call seeds cases only with [B,T,H,D] q, k, v and o");
  CaseSpec c;
  ProblemSpec& s = c.problem;
  s.mode = p.mode;
  s.varlen = p.cu_seqlens.has_value();
  if (p.cu_seqlens) s.cu_seqlens_dtype = p.cu_seqlens->dtype();
  s.lengths.clear();
  for (i64 n = 0; n < p.N; ++n) s.lengths.push_back(p.length(n));
  s.H = p.H, s.HV = p.HV, s.K = p.K, s.V = p.V, s.L = p.L;
  s.options = p.options;
  s.input_dtype = p.q.dtype(), s.output_dtype = p.o.dtype();
  s.state = p.num_accepted      ? StateSource::table
            : p.scratch_states  ? StateSource::scratch
            : p.state_pool      ? StateSource::pool
            : p.initial_state   ? StateSource::dense
                                : StateSource::none;
  for (const auto* t : {&p.initial_state, &p.state_pool, &p.final_state, &p.chunk_states, &p.token_states})
    if (*t) {
      s.state_dtype = (*t)->dtype();
      break;
    }
  s.final_state = p.final_state.has_value(), s.chunk_states = p.chunk_states.has_value();
  s.token_states = p.token_states.has_value();
  s.with_A_log = p.A_log.has_value(), s.with_dt_bias = p.dt_bias.has_value();
  if (p.num_accepted) s.accepted_dtype = p.num_accepted->dtype();
  const bool fused = p.q.buffer == p.k.buffer && p.k.buffer == p.v.buffer;
  std::string how;
  const auto [layout, pad] = layout_of(p.q.view, 2 * p.H * p.K + p.HV * p.V, fused, how);
  const auto [output_layout, output_pad] = layout_of(p.o.view, 0, false, how);
  c.layout = layout, c.pad = pad;
  // fused_qkv takes o with a padded token stride; otherwise o keeps its own layout.
  c.output_layout = layout == InputLayout::fused_qkv ? InputLayout::padded_token_stride : output_layout;
  if (note)
    *note = how + "inputs " + std::string(name_of(c.layout)) + ", o " + std::string(name_of(c.output_layout)) +
            ", pad " + std::to_string(c.pad) + (output_pad != pad && c.output_layout != InputLayout::contiguous
                                                     ? " (o's own pad " + std::to_string(output_pad) + " not kept)"
                                                     : "");
  return c;
}

}  // namespace kda::props

namespace kda::props::detail {

rc::Gen<AroundDraw> gen_around_draw(const GenLimits& limits) {
  if (!limits.around) return rc::gen::just(AroundDraw{});
  const ProblemSpec& call = limits.around->problem;
  const i64 N = std::max<i64>(1, static_cast<i64>(call.lengths.size()));
  std::vector<rc::Gen<i64>> lengths;  // sequence n of the draw varies the call's sequence n mod N
  for (i64 n = 0; n < 2 * N; ++n) {
    const i64 length = call.lengths.empty() ? 1 : call.lengths[static_cast<std::size_t>(n % N)];
    lengths.push_back(gen_uniform(0, std::max<i64>(2 * length, length + 16), length));
  }
  return rc::gen::build<AroundDraw>(
      rc::gen::set(&AroundDraw::lengths, rc::gen::exec([lengths] {
        std::vector<i64> out;
        for (const auto& g : lengths) out.push_back(*g);
        return out;
      })),
      rc::gen::set(&AroundDraw::sequences, gen_uniform(1, 2 * N, N)),
      rc::gen::set(&AroundDraw::heads, gen_uniform(1, std::max<i64>(call.H, 1), call.H)));
}

GenLimits limits_around(const GenLimits& given) {
  if (!given.around) return given;
  GenLimits l = given;
  const ProblemSpec& call = given.around->problem;
  const i64 tokens = std::accumulate(call.lengths.begin(), call.lengths.end(), i64{0});
  l.head_dims = {std::min(call.K, call.V), std::max(call.K, call.V)};
  if (call.K == call.V) l.head_dims.pop_back();
  l.min_drawn_head_dim = 0;
  l.gva_ratios = {static_cast<int>(call.HV / std::max<i64>(call.H, 1))};
  l.max_heads = std::max(l.max_heads, static_cast<int>(call.HV));
  l.max_sequences = std::max<int>(l.max_sequences, 2 * static_cast<int>(call.lengths.size()));
  l.max_tokens = std::max(l.max_tokens, 2 * tokens + 32 * static_cast<i64>(call.lengths.size()));
  l.max_work = std::max(l.max_work, 4 * call.HV * call.K * call.V * (l.max_tokens + 24 * l.max_sequences));
  l.decode_batch_edges.clear();
  return l;
}

void narrow_to_call(Allowed& a, const CaseSpec& c) {
  const ProblemSpec& call = c.problem;
  require(has(a.modes, call.mode), "mode " + std::string(name_of(call.mode)));
  keep_only(a.modes, call.mode);
  require(!call.varlen || a.varlen, "cu_seqlens");
  a.varlen = call.varlen;  // a batched call stays batched (a varlen one may be batched where a property needs it)
  require(has(a.input_dtypes, call.input_dtype), "input dtype " + std::string(name_of(call.input_dtype)));
  keep_only(a.input_dtypes, call.input_dtype);
  require(has(a.output_dtypes, call.output_dtype), "output dtype " + std::string(name_of(call.output_dtype)));
  keep_only(a.output_dtypes, call.output_dtype);
  const bool states = call.state != StateSource::none || call.final_state || call.chunk_states || call.token_states;
  if (states) {
    require(has(a.state_dtypes, call.state_dtype), "state dtype " + std::string(name_of(call.state_dtype)));
    keep_only(a.state_dtypes, call.state_dtype);
  }
  require(has(a.key_dims, call.K) && has(a.value_dims, call.V),
          "head dims K = " + std::to_string(call.K) + ", V = " + std::to_string(call.V));
  a.key_dims = {call.K}, a.value_dims = {call.V}, a.first_key_dim = a.first_value_dim = 0;
  if (call.mode == Mode::prefill) {
    require(has(a.chunk_sizes, call.options.chunk_size), "chunk size " + std::to_string(call.options.chunk_size));
    keep_only(a.chunk_sizes, call.options.chunk_size);
  }
  require(has(a.layouts, call.options.state_layout), "state layout " + std::string(name_of(call.options.state_layout)));
  keep_only(a.layouts, call.options.state_layout);
  require(has(a.sources, call.state), "state source " + std::string(name_of(call.state)));
  keep_only(a.sources, call.state);
  require(!call.chunk_states || a.chunk_states, "chunk states");
  require(!call.token_states || a.token_states, "token states");
  require(!call.options.gate_in_kernel || a.gate_in_kernel, "in-kernel gate");
  require(!call.options.l2norm_qk || a.l2norm, "in-kernel l2norm");
  require(!call.options.beta_from_logits || a.beta_logits, "beta logits");
  require((c.layout == InputLayout::contiguous && c.output_layout == InputLayout::contiguous) || a.strided,
          "strided layout");
}

void heads_around(ProblemSpec& s, const AroundDraw& d, const CaseSpec& c, const Needs& n) {
  const ProblemSpec& call = c.problem;
  s.H = std::clamp<i64>(d.heads, 1, std::max<i64>(call.H, 1));
  s.HV = s.H * (call.HV / std::max<i64>(call.H, 1));
  s.varlen = n.varlen.value_or(call.varlen), s.cu_seqlens_dtype = call.cu_seqlens_dtype;
  if (s.mode == Mode::verify) s.L = call.L;
}

void keep_call(CaseSpec& c, const AroundDraw& d, const CaseSpec& seed, const Needs& n) {
  ProblemSpec& s = c.problem;
  const ProblemSpec& call = seed.problem;
  const i64 N = std::max<i64>({d.sequences, n.min_sequences, 1});
  std::vector<i64> lengths(d.lengths.begin(), d.lengths.begin() + std::min<i64>(N, static_cast<i64>(d.lengths.size())));
  lengths.resize(static_cast<std::size_t>(N), 1);
  if (s.mode == Mode::decode) {
    std::fill(lengths.begin(), lengths.end(), 1);
  } else if (s.mode == Mode::verify) {
    const bool ragged = std::any_of(call.lengths.begin(), call.lengths.end(), [&](i64 x) { return x != call.L; });
    for (auto& x : lengths) x = ragged ? std::min(x, s.L) : s.L;
  } else if (!s.varlen) {
    std::fill(lengths.begin(), lengths.end(), lengths.front());
  }
  const i64 T = std::accumulate(lengths.begin(), lengths.end(), i64{0});
  if (T < n.min_tokens) lengths.front() += n.min_tokens - T;
  s.lengths = std::move(lengths);

  const Options drawn = s.options;
  s.options = call.options;
  if (n.gate_in_kernel && !call.options.gate_in_kernel) {  // the property needs the in-kernel gate: the drawn one
    s.options.gate_in_kernel = true;
    s.options.lower_bound = drawn.lower_bound, s.options.safe_gate = drawn.safe_gate;
  } else {
    s.with_A_log = call.with_A_log, s.with_dt_bias = call.with_dt_bias;
  }
  s.with_A_log = s.with_A_log || n.A_log;
  const bool verify = s.mode == Mode::verify;
  s.final_state = s.state != StateSource::pool && !verify && n.final_state.value_or(call.final_state);
  s.chunk_states = !verify && n.chunk_states.value_or(call.chunk_states);
  s.token_states = !verify && n.token_states.value_or(call.token_states);
}

void keep_call_layout(CaseSpec& c, const CaseSpec& call) {
  c.layout = call.layout, c.output_layout = call.output_layout, c.pad = call.pad;
}

}  // namespace kda::props::detail
