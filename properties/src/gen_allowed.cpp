// What a kernel lets a generator draw: its capabilities, the parameters of the rules its profile
// enforces and the limits, intersected once so that every draw is valid by construction.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "generators_internal.hpp"
#include "list_helpers.hpp"

namespace kda::props::detail {

namespace {

// The preferred values (simplest first) that every list in `sets` holds; an unenforced set is skipped.
template <class T>
std::vector<T> common(std::vector<T> preferred, std::initializer_list<const std::vector<T>*> sets) {
  std::erase_if(preferred, [&](const T& x) {
    return std::any_of(sets.begin(), sets.end(), [&](const std::vector<T>* s) { return s && !has(*s, x); });
  });
  return preferred;
}

template <class T>
const std::vector<T>* if_enforced(const Profile& p, Rule r, const std::vector<T>& set) {
  return p.enforces(r) ? &set : nullptr;
}

void require(bool ok, const Kernel& kernel, const char* what) {
  if (!ok)
    throw std::invalid_argument("gen_valid_case: kernel " + kernel.name() + " under profile " + kernel.profile().name +
                                " leaves no " + what + " to draw");
}

}  // namespace

Allowed allowed_for(const Kernel& kernel, const GenLimits& given) {
  const GenLimits limits = limits_around(given);
  const Capabilities& caps = kernel.capabilities();
  const Profile& prof = kernel.profile();
  Allowed a;
  a.limits = limits;
  a.profile = prof;
  a.varlen = caps.varlen;
  a.gate_in_kernel = caps.gate_in_kernel, a.l2norm = caps.l2norm_in_kernel, a.beta_logits = caps.beta_from_logits;
  a.neg_eigval = caps.neg_eigval;
  a.always_gate = caps.always_gate_in_kernel, a.always_l2norm = caps.always_l2norm;
  a.always_beta_logits = caps.always_beta_from_logits;
  a.chunk_states = caps.chunk_states, a.token_states = caps.token_states, a.strided = caps.strided_inputs;
  a.explicit_scale = caps.explicit_scale;

  const std::vector<DType> floats{DType::f32, DType::bf16, DType::f16, DType::f64};
  a.input_dtypes = common(floats, {&caps.input_dtypes, if_enforced(prof, Rule::input_dtype, prof.input_dtypes)});
  a.output_dtypes = common(floats, {&caps.output_dtypes, if_enforced(prof, Rule::output_dtype, prof.output_dtypes)});
  a.state_dtypes = common(floats, {&caps.state_dtypes, if_enforced(prof, Rule::state_dtype, prof.state_dtypes)});

  auto dims = [&](const std::vector<i64>& cap_set, const std::vector<i64>& prof_set, i64 prof_max) {
    std::vector<i64> out;
    for (i64 d : limits.head_dims) {
      const bool cap_ok = cap_set.empty() ? d <= caps.max_head_dim : has(cap_set, d);
      const bool prof_ok = d >= 1 && d <= prof_max &&
                           (!prof.enforces(Rule::head_dims_supported) || prof_set.empty() || has(prof_set, d));
      if (cap_ok && prof_ok) out.push_back(d);
    }
    return out;
  };
  const i64 key_max = prof.enforces(Rule::key_head_dim_max) ? prof.max_key_head_dim : caps.max_head_dim;
  a.key_dims = dims(caps.key_head_dims, prof.key_head_dims, key_max);
  a.value_dims = dims(caps.value_head_dims, prof.value_head_dims, caps.max_head_dim);
  // The first dim drawn: the first at or above min_drawn_head_dim (none there: every dim is drawn).
  auto first_drawn = [&](const std::vector<i64>& ds) {
    const auto at = std::find_if(ds.begin(), ds.end(), [&](i64 d) { return d >= limits.min_drawn_head_dim; });
    return at == ds.end() ? 0 : static_cast<int>(at - ds.begin());
  };
  a.first_key_dim = first_drawn(a.key_dims), a.first_value_dim = first_drawn(a.value_dims);

  for (int r : limits.gva_ratios)
    if (r >= 1 && r <= limits.max_heads) a.gva_ratios.push_back(r);
  const std::vector<int> contract_chunks{64, 32};
  a.chunk_sizes = common(contract_chunks, {&caps.chunk_sizes});
  if (!prof.enforces(Rule::chunk_size))
    for (int c : caps.chunk_sizes)
      if (!has(a.chunk_sizes, c) && c > 0) a.chunk_sizes.push_back(c);

  const std::vector<StateLayout> layouts{StateLayout::vk, StateLayout::kv};
  const std::vector<StateLayout> required =
      prof.state_layout && prof.enforces(Rule::state_layout) ? std::vector{*prof.state_layout} : layouts;
  a.layouts = common(layouts, {&caps.layouts, &required});
  const std::vector<StateSource> sources{StateSource::none, StateSource::dense, StateSource::pool, StateSource::table,
                                         StateSource::scratch};
  a.sources = common(sources, {&caps.state_sources, if_enforced(prof, Rule::state_source_supported, prof.state_sources)});
  if (a.state_dtypes.empty()) {  // no state tensor at all: no initial state, no state outputs
    std::erase_if(a.sources, [](StateSource s) { return s != StateSource::none; });
    a.chunk_states = a.token_states = false;
  }

  // Decode and verify need no chunk size of the kernel's; the contract's default (64) is taken there.
  // Verify only with a verify form to take its states from.
  const bool verify_form = std::any_of(a.sources.begin(), a.sources.end(), is_verify_source);
  for (Mode m : {Mode::prefill, Mode::decode, Mode::verify})
    if (has(caps.modes, m) && (m != Mode::prefill || !a.chunk_sizes.empty()) && (m != Mode::verify || verify_form))
      a.modes.push_back(m);
  if (!has(a.modes, Mode::verify)) std::erase_if(a.sources, is_verify_source);
  if (a.chunk_sizes.empty()) a.chunk_sizes.push_back(64);
  if (limits.around) narrow_to_call(a, *limits.around);

  require(limits.max_sequences >= 1 && limits.max_tokens >= 1 && limits.max_heads >= 1 && limits.max_work >= 1,
          kernel, "room under the limits");
  require(!a.gva_ratios.empty(), kernel, "GVA ratio within max_heads");
  require(!a.modes.empty(), kernel, "mode");
  require(!a.input_dtypes.empty(), kernel, "input dtype");
  require(!a.output_dtypes.empty(), kernel, "output dtype");
  require(!a.key_dims.empty(), kernel, "key head dim");
  require(!a.value_dims.empty(), kernel, "value head dim");
  require(!a.layouts.empty(), kernel, "state layout");
  require(!a.sources.empty(), kernel, "state source with a state dtype");
  return a;
}

std::vector<StateSource> sources_for(const Allowed& a, const Needs& n) {
  std::vector<StateSource> out;
  for (StateSource s : a.sources)
    if ((n.sources.empty() || has(n.sources, s)) && (!n.final_state.value_or(false) || s != StateSource::pool))
      out.push_back(s);
  return out;
}

std::vector<StateSource> sources_for(const Allowed& a, const Needs& n, Mode mode) {
  // A verify call has no state output of its own: needing one rules the verify forms out.
  const bool verify = mode == Mode::verify;
  if (verify && (n.final_state.value_or(false) || n.chunk_states.value_or(false) || n.token_states.value_or(false)))
    return {};
  std::vector<StateSource> out = sources_for(a, n);
  std::erase_if(out, [&](StateSource s) { return is_verify_source(s) != verify; });
  return out;
}

std::vector<Mode> modes_for(const Allowed& a, const Needs& n) {
  std::vector<Mode> out;
  for (Mode m : a.modes)
    if ((!n.mode || m == *n.mode) && (!n.verify || (m == Mode::verify) == *n.verify) && !sources_for(a, n, m).empty())
      out.push_back(m);
  return out;
}

bool feasible(const Allowed& a, const Needs& n) {
  if (n.varlen.value_or(false) && !a.varlen) return false;
  if (n.chunk_states.value_or(false) && !a.chunk_states) return false;
  if (n.token_states.value_or(false) && !a.token_states) return false;
  if (n.gate_in_kernel && !a.gate_in_kernel) return false;
  if (n.final_state.value_or(false) && a.state_dtypes.empty()) return false;
  return !modes_for(a, n).empty() && n.min_sequences <= a.limits.max_sequences;
}

std::optional<Needs> metadata_call(const Allowed& a, int sequences) {
  Needs varlen_prefill{.mode = Mode::prefill, .verify = false, .varlen = true};
  varlen_prefill.min_sequences = sequences;
  if (feasible(a, varlen_prefill)) return varlen_prefill;
  Needs pooled{.verify = false, .sources = {StateSource::pool}};
  pooled.min_sequences = sequences;
  if (feasible(a, pooled)) return pooled;
  return std::nullopt;
}

}  // namespace kda::props::detail
