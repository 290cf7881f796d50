// Valid cases by construction: every choice is drawn on its own (so each shrinks on its own, the
// others held still) and assemble() combines the draws within what the kernel allows, resolving the
// rules that tie choices together (GVA heads, gate options, pool alignment, the work budget).
#include <algorithm>
#include <numeric>
#include <optional>

#include "generators_internal.hpp"
#include "list_helpers.hpp"

namespace kda::props::detail {

namespace {

// Independent draws; indices point into the Allowed lists (simplest first). The state source's list
// depends on the needs, so its index is drawn in [0, 6): uniform over 1, 2 or 3 sources.
struct Draw {
  std::vector<i64> lengths;
  int mode = 0;
  bool batched = false;  // B = N rows of equal length, no cu_seqlens
  int gva_ratio = 0;
  i64 heads = 1;
  int key_dim = 0, value_dim = 0;
  int input_dtype = 0, output_dtype = 0, state_dtype = 0;
  bool cu_seqlens_i64 = false;
  int source = 0, state_layout = 0, chunk_size = 0;
  bool final_state = false, chunk_states = false, token_states = false;
  bool l2norm = false, beta_logits = false, neg_eigval = false, explicit_scale = false;
  bool gate_in_kernel = false, lower_bound_form = false, safe_gate = false, A_log = false, dt_bias = false;
  int lower_bound = 0;
  PoolDraw pool;
  VerifyDraw verify;
  int layout = 0, output_layout = 0;
  i64 pad = 1;
  int poison = 0, gates = 0;
  bool padding_pattern = true;
  int data = 0;         // DataMix
  i64 long_length = 0;  // DataMix::long_memory: the one sequence's length (before the budget)
  std::uint64_t data_seed = 0;
  i64 decode_edge = 0;  // 0: a decode batch of the drawn count; else an edge of GenLimits::decode_batch_edges
  AroundDraw around;    // GenLimits::around only
};

constexpr double kLowerBounds[] = {-5.0, -1.0};
constexpr double kExplicitScale = 0.3;  // differs from K^-0.5 for every K: a kernel ignoring it is seen
constexpr InputLayout kInputLayouts[] = {InputLayout::contiguous, InputLayout::padded_token_stride,
                                         InputLayout::padded_head_stride, InputLayout::fused_qkv,
                                         InputLayout::permuted};
constexpr InputLayout kOutputLayouts[] = {InputLayout::contiguous, InputLayout::padded_token_stride,
                                          InputLayout::padded_head_stride, InputLayout::permuted};

int count(std::size_t n) { return static_cast<int>(n); }

// Head counts in [1, max]: uniform up to 4 heads; over a wider range the octave [2^e, 2^(e+1)) is drawn
// first, so that 1 head and 64 heads are both common. Shrinks towards 1.
rc::Gen<i64> gen_heads(i64 max) {
  if (max <= 4) return gen_uniform(1, max);
  int octaves = 0;
  while ((i64{2} << octaves) <= max) ++octaves;  // 2^octaves <= max < 2^(octaves+1)
  return rc::gen::mapcat(gen_index(octaves + 1), [max](int e) {
    const i64 lo = i64{1} << e;
    return gen_uniform(lo, std::min(2 * lo - 1, max), 1);
  });
}

// An index into dims drawn from `first` up, shrinking towards 0 (the smallest dim).
rc::Gen<int> gen_dim(int first, std::size_t dims) {
  return rc::gen::map(gen_uniform(first, count(dims) - 1, 0), [](i64 i) { return static_cast<int>(i); });
}

template <class T>
const T& pick(const std::vector<T>& xs, int i) {
  return xs[static_cast<std::size_t>(i) % xs.size()];
}

// DataMix odds: a modest share of adversarial data among valid cases; mostly adversarial for `finite`.
std::vector<int> data_weights(bool adversarial) {
  return adversarial ? std::vector<int>{10, 15, 15, 15, 15, 15, 15} : std::vector<int>{64, 6, 6, 6, 6, 6, 6};
}

rc::Gen<Draw> gen_draw(const Allowed& a, const Needs& n) {
  using rc::gen::set;
  const i64 most = std::max<i64>(a.limits.max_tokens, 1);
  return rc::gen::build<Draw>(
      set(&Draw::lengths, gen_lengths(a.limits)), set(&Draw::mode, gen_index(count(a.modes.size()))),
      set(&Draw::batched, gen_bool(15)), set(&Draw::gva_ratio, gen_index(count(a.gva_ratios.size()))),
      set(&Draw::heads, gen_heads(a.limits.max_heads)),
      set(&Draw::key_dim, gen_dim(a.first_key_dim, a.key_dims.size())),
      set(&Draw::value_dim, gen_dim(a.first_value_dim, a.value_dims.size())),
      set(&Draw::input_dtype, gen_index(count(a.input_dtypes.size()))),
      set(&Draw::output_dtype, gen_index(count(a.output_dtypes.size()))),
      set(&Draw::state_dtype, gen_index(std::max(count(a.state_dtypes.size()), 1))),
      set(&Draw::cu_seqlens_i64, gen_bool(30)), set(&Draw::source, gen_index(6)),
      set(&Draw::state_layout, gen_index(count(a.layouts.size()))),
      set(&Draw::chunk_size, gen_index(count(a.chunk_sizes.size()))), set(&Draw::final_state, gen_bool(60)),
      set(&Draw::chunk_states, gen_bool(20)), set(&Draw::token_states, gen_bool(10)),
      set(&Draw::l2norm, gen_bool(50)), set(&Draw::beta_logits, gen_bool(50)), set(&Draw::neg_eigval, gen_bool(30)),
      set(&Draw::explicit_scale, gen_bool(20)), set(&Draw::gate_in_kernel, gen_bool(50)),
      set(&Draw::lower_bound_form, gen_bool(50)), set(&Draw::safe_gate, gen_bool(50)), set(&Draw::A_log, gen_bool(80)),
      set(&Draw::dt_bias, gen_bool(70)), set(&Draw::lower_bound, gen_index(2)), set(&Draw::pool, gen_pool_draw()),
      set(&Draw::verify, gen_verify_draw()),
      set(&Draw::layout, gen_index(5)), set(&Draw::output_layout, gen_index(4)), set(&Draw::pad, gen_uniform(1, 8)),
      set(&Draw::poison, gen_index(2)), set(&Draw::gates, gen_index(5)),
      set(&Draw::padding_pattern, rc::gen::map(gen_bool(25), [](bool plain) { return !plain; })),
      set(&Draw::data, gen_weighted_index(data_weights(n.adversarial))),
      set(&Draw::long_length, gen_uniform(std::max<i64>(most / 2, 1), most, 1)), set(&Draw::data_seed, gen_seed()),
      set(&Draw::decode_edge, gen_often_zero(50, 3 * std::max<i64>(1, static_cast<i64>(a.limits.decode_batch_edges.size())))),
      set(&Draw::around, gen_around_draw(a.limits)));
}

// The work budget, in units of one state's elements (HV x K x V): a token costs 1 (the recurrence
// touches its state a few times, cheaply) and every state tensor costs kStateCost (drawn, poisoned,
// loaded and stored element by element: the build's and the reference's dominant cost).
constexpr i64 kStateCost = 8;

Budget budget_for(const ProblemSpec& s, const Draw& d, const Allowed& a, const Needs& n) {
  const i64 per_state = std::max<i64>(1, s.HV * std::max(s.K, n.budget_key_dim) * s.V);
  const bool verify = is_verify_source(s.state);  // a pool slot or a scratch step per token
  const bool pool = s.state == StateSource::pool || verify;
  const i64 spare_slots = pool ? 1 + d.pool.extra_slots : 0;
  Budget b;
  b.tokens = a.limits.max_tokens, b.sequences = a.limits.max_sequences;
  b.work = std::max<i64>(0, a.limits.max_work / per_state - kStateCost * spare_slots);
  b.per_token = 1 + (s.token_states || verify ? kStateCost : 0);
  b.per_sequence = kStateCost * ((s.state != StateSource::none) + s.final_state + s.chunk_states);
  return b;
}

// Long memory wants one long prefill sequence: where the needs ask for more sequences, or the call is
// no prefill, the mix keeps only its gates.
bool long_memory(const Draw& d, const ProblemSpec& s, const Needs& n) {
  return static_cast<DataMix>(d.data) == DataMix::long_memory && s.mode == Mode::prefill && n.min_sequences <= 1 &&
         n.min_tokens <= 1;
}

// A decode batch at an edge of N x HV (GenLimits::decode_batch_edges) that the budget affords, or nullopt.
// The draw picks the edge (among those affordable, smallest first) and the side: below, at or above.
std::optional<i64> decode_batch_at_edge(const ProblemSpec& s, const Draw& d, const Allowed& a, i64 most) {
  if (d.decode_edge == 0) return std::nullopt;
  std::vector<i64> edges;
  for (i64 e : a.limits.decode_batch_edges)
    if (e / s.HV <= most) edges.push_back(e);
  if (edges.empty()) return std::nullopt;
  const i64 pick = d.decode_edge - 1, e = edges[static_cast<std::size_t>(pick / 3) % edges.size()];
  const i64 side = pick % 3;
  return std::clamp<i64>(side == 0 ? (e - 1) / s.HV : side == 1 ? e / s.HV : e / s.HV + 1, 1, most);
}

// Sequence lengths within the budget, then raised to what the needs ask for.
void set_lengths(ProblemSpec& s, const Draw& d, const Allowed& a, const Needs& n) {
  const Budget b = budget_for(s, d, a, n);
  const i64 drawn = static_cast<i64>(d.lengths.size());
  const i64 per_row = b.per_sequence + b.per_token;  // a sequence of one token
  if (long_memory(d, s, n)) {  // one sequence, as long as the draw and the budget allow
    s.lengths = {std::max<i64>(0, std::min({d.long_length, b.tokens, (b.work - b.per_sequence) / b.per_token}))};
  } else if (s.mode == Mode::verify) {  // N requests of L tokens (ragged: 0..L each, table form only)
    const i64 L = s.L;
    const i64 N = std::max({std::min({drawn, b.sequences, b.tokens / L, b.work / (b.per_sequence + L * b.per_token)}),
                            i64{n.min_sequences}, i64{1}});
    s.lengths.assign(static_cast<std::size_t>(N), L);
    const bool ragged = d.verify.ragged && s.varlen && s.state == StateSource::table &&
                        !a.profile.enforces(Rule::verify_fixed_tokens);
    for (std::size_t i = 0; ragged && i < d.lengths.size() && i < s.lengths.size(); ++i) s.lengths[i] = d.lengths[i] % (L + 1);
  } else if (s.mode == Mode::decode) {
    const i64 most = std::min({b.sequences, b.tokens, b.work / per_row});
    const i64 N = decode_batch_at_edge(s, d, a, most).value_or(std::min(drawn, most));
    s.lengths.assign(static_cast<std::size_t>(std::max({N, i64{n.min_sequences}, n.min_tokens, i64{1}})), 1);
  } else if (!s.varlen) {
    const i64 N = std::max({std::min({drawn, b.sequences, b.work / per_row}), i64{n.min_sequences}, i64{1}});
    const i64 L = std::min({d.lengths.front(), b.tokens / N, (b.work / N - b.per_sequence) / b.per_token});
    s.lengths.assign(static_cast<std::size_t>(N), std::max({L, (n.min_tokens + N - 1) / N, i64{0}}));
  } else {
    s.lengths = fit_lengths(d.lengths, b);
    while (static_cast<i64>(s.lengths.size()) < n.min_sequences) s.lengths.push_back(1);
    const i64 T = std::accumulate(s.lengths.begin(), s.lengths.end(), i64{0});
    if (T < n.min_tokens) s.lengths.front() += n.min_tokens - T;
  }
}

void set_gate_options(ProblemSpec& s, const Draw& d, const Allowed& a, const Needs& n) {
  Options& o = s.options;
  o.gate_in_kernel = a.gate_in_kernel && (a.always_gate || d.gate_in_kernel || n.gate_in_kernel);
  if (!o.gate_in_kernel) return;
  if (d.lower_bound_form) {
    o.lower_bound = kLowerBounds[d.lower_bound];
    o.safe_gate = d.safe_gate;
  }
  const bool softplus_needs_A_log = !o.lower_bound && a.profile.enforces(Rule::softplus_needs_A_log);
  s.with_A_log = d.A_log || n.A_log || softplus_needs_A_log;
  s.with_dt_bias = d.dt_bias;
}

// Choices a data mix is about: long memory takes prefill and the smallest heads the scale draws (so that one sequence
// can run past 512 tokens within the work budget); the state mixes take fp16 activations.
void adapt_to_data_mix(CaseSpec& c, const Allowed& a, const Needs& n) {
  ProblemSpec& s = c.problem;
  const std::vector<Mode> modes = modes_for(a, n);
  if (c.data == DataMix::long_memory && has(modes, Mode::prefill)) {
    s.mode = Mode::prefill;
    s.HV /= s.H, s.H = 1;
    s.K = std::min(s.K, pick(a.key_dims, a.first_key_dim)), s.V = std::min(s.V, pick(a.value_dims, a.first_value_dim));
  }
  if ((c.data == DataMix::large_state || c.data == DataMix::tiny_state) && has(a.input_dtypes, DType::f16))
    s.input_dtype = DType::f16;
}

CaseSpec assemble(const Allowed& a, const Needs& n, const Draw& d) {
  CaseSpec c;
  c.data = static_cast<DataMix>(d.data);
  ProblemSpec& s = c.problem;
  s.mode = pick(modes_for(a, n), d.mode);
  s.varlen = a.varlen && n.varlen.value_or(!d.batched);
  s.cu_seqlens_dtype = d.cu_seqlens_i64 ? DType::i64 : DType::i32;
  const int ratio = pick(a.gva_ratios, d.gva_ratio);
  s.H = std::min<i64>(d.heads, a.limits.max_heads / ratio), s.HV = s.H * ratio;
  s.K = pick(a.key_dims, d.key_dim), s.V = pick(a.value_dims, d.value_dim);
  s.input_dtype = pick(a.input_dtypes, d.input_dtype), s.output_dtype = pick(a.output_dtypes, d.output_dtype);
  adapt_to_data_mix(c, a, n);

  const std::vector<StateSource> sources = sources_for(a, n, s.mode);
  s.state = pick(sources, d.source);
  // The state mixes scale an initial state, long memory keeps one: take one where the call allows it.
  const bool state_mix =
      c.data == DataMix::large_state || c.data == DataMix::tiny_state || c.data == DataMix::long_memory;
  for (StateSource source : sources)
    if (state_mix && s.state == StateSource::none && source != StateSource::none) s.state = source;
  const bool states = !a.state_dtypes.empty(), verify = s.mode == Mode::verify;
  if (states) s.state_dtype = pick(a.state_dtypes, d.state_dtype);
  if (verify) s.L = std::min(verify_length(d.verify), std::max<i64>(a.limits.max_tokens, 1));
  // A verify call stores its states in the pool or the scratch buffer: no state output of its own.
  s.final_state = states && s.state != StateSource::pool && !verify && n.final_state.value_or(d.final_state);
  s.chunk_states = a.chunk_states && !verify && n.chunk_states.value_or(d.chunk_states);
  s.token_states = a.token_states && !verify && n.token_states.value_or(d.token_states);

  Options& o = s.options;
  o.state_layout = pick(a.layouts, d.state_layout);
  o.chunk_size = pick(a.chunk_sizes, d.chunk_size);
  o.l2norm_qk = a.l2norm && (a.always_l2norm || d.l2norm);
  o.beta_from_logits = a.beta_logits && (a.always_beta_logits || d.beta_logits);
  o.allow_neg_eigval = o.beta_from_logits && a.neg_eigval && d.neg_eigval;
  if (d.explicit_scale && a.explicit_scale) o.scale = kExplicitScale;
  set_gate_options(s, d, a, n);

  if (a.limits.around) heads_around(s, d.around, *a.limits.around, n);
  set_lengths(s, d, a, n);
  if (a.limits.around) keep_call(c, d.around, *a.limits.around, n);
  const bool aligned = a.profile.enforces(Rule::state_pool_alignment);
  const bool past_int32 = a.limits.pool_past_int32;
  if (s.state == StateSource::pool) place_pool(s, d.pool, aligned, !a.strided, past_int32);
  if (verify)
    place_verify(c, d.verify, d.pool, aligned, !a.strided, a.profile.enforces(Rule::scratch_indices_identity),
                 past_int32);

  c.layout = a.strided ? kInputLayouts[d.layout] : InputLayout::contiguous;
  c.output_layout = a.strided ? kOutputLayouts[d.output_layout] : InputLayout::contiguous;
  c.pad = d.pad;
  c.poison = static_cast<Poison>(d.poison);
  c.gates = static_cast<GateMix>(d.gates);
  c.padding_pattern = d.padding_pattern;
  c.data_seed = d.data_seed;
  if (a.limits.around) keep_call_layout(c, *a.limits.around);
  return c;
}

}  // namespace

rc::Gen<CaseSpec> gen_case(const Allowed& allowed, const Needs& needs) {
  return rc::gen::map(gen_draw(allowed, needs), [allowed, needs](const Draw& d) { return assemble(allowed, needs, d); });
}

}  // namespace kda::props::detail

namespace kda::props {

rc::Gen<CaseSpec> gen_valid_case(const Kernel& kernel, const GenLimits& limits) {
  return detail::gen_case(detail::allowed_for(kernel, limits), {});
}

rc::Gen<CaseSpec> gen_adversarial_case(const Kernel& kernel, const GenLimits& limits) {
  return detail::gen_case(detail::allowed_for(kernel, limits), {.adversarial = true});
}

}  // namespace kda::props
