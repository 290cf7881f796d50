// Invalid cases: a rule, a base drawn with what that rule's break needs (so the break trips that rule
// alone), and a variant. Which needs each rule has follows from how break_rule breaks it.
#include <algorithm>
#include <ostream>
#include <stdexcept>

#include "generators_internal.hpp"

namespace kda::props::detail {

namespace {

bool misses_a_source(const Profile& p) {
  for (StateSource s : {StateSource::none, StateSource::dense, StateSource::pool})
    if (std::find(p.state_sources.begin(), p.state_sources.end(), s) == p.state_sources.end()) return true;
  return false;
}

}  // namespace

std::optional<Needs> needs_for(Rule rule, const Profile& profile) {
  if (!profile.enforces(rule)) return std::nullopt;
  Needs n;
  const std::vector<StateSource> pool{StateSource::pool}, stateful{StateSource::dense, StateSource::pool};
  switch (rule) {
    case Rule::index_overflow_32bit: return std::nullopt;  // such a view cannot be allocated inside its buffer
    case Rule::head_dims_supported:
      if (profile.key_head_dims.empty() && profile.value_head_dims.empty()) return std::nullopt;
      n.budget_key_dim = profile.max_key_head_dim;
      break;
    case Rule::state_layout:
      if (!profile.state_layout) return std::nullopt;
      n.sources = stateful;
      break;
    case Rule::state_source_supported:
      if (!misses_a_source(profile)) return std::nullopt;
      break;
    case Rule::key_head_dim_max: n.budget_key_dim = profile.max_key_head_dim + 16; break;
    case Rule::view_in_bounds:
    case Rule::output_overlap: n.min_tokens = 1; break;
    case Rule::output_self_overlap: n.min_tokens = 2; break;
    case Rule::varlen_batch_one:
      n.varlen = false, n.mode = Mode::prefill, n.min_sequences = 2, n.chunk_states = false;
      break;
    case Rule::cu_seqlens_dtype:
    case Rule::cu_seqlens_shape: n.varlen = true; break;
    case Rule::cu_seqlens_start:
    case Rule::cu_seqlens_end:  // the first or last length changes: keep decode and chunk counts out of it
      n.varlen = true, n.mode = Mode::prefill, n.chunk_states = false;
      break;
    case Rule::cu_seqlens_monotonic: n.varlen = true, n.min_sequences = 2; break;
    case Rule::batch_sequence_count:
      n.varlen = false, n.chunk_states = false, n.final_state = false;
      n.sources = {StateSource::none, StateSource::pool};
      break;
    case Rule::decode_one_token: n.mode = Mode::decode; break;
    case Rule::lower_bound_required: n.gate_in_kernel = true, n.A_log = true; break;
    case Rule::softplus_needs_A_log: n.gate_in_kernel = true; break;
    case Rule::state_source:
    case Rule::state_pool_rank:
    case Rule::state_pool_shape:
    case Rule::state_pool_inner_strides:
    case Rule::state_pool_alignment:
    case Rule::state_indices_dtype:
    case Rule::state_indices_shape:
    case Rule::state_indices_range: n.sources = pool; break;
    case Rule::state_indices_distinct: n.sources = pool, n.min_sequences = 2; break;
    case Rule::state_dtype:
    case Rule::initial_state_count: n.sources = stateful; break;
    case Rule::initial_state_shape: n.sources = {StateSource::dense}; break;
    case Rule::final_state_shape: n.final_state = true; break;
    case Rule::chunk_states_shape: n.chunk_states = true; break;
    case Rule::token_states_shape: n.token_states = true; break;
    default: break;  // the rest break on any base
  }
  return n;
}

}  // namespace kda::props::detail

namespace kda::props {

Problem InvalidCase::build() const {
  CaseSpec spec = base;
  if (detail::break_spec(spec, rule, variant, *profile)) return build_case(spec);
  Problem p = build_case(spec);
  detail::break_problem(p, rule, variant, *profile);
  return p;
}

std::ostream& operator<<(std::ostream& os, const InvalidCase& c) {
  return os << "break " << name_of(c.rule) << " (variant " << c.variant << ", profile " << c.profile->name
            << ") of: " << c.base.describe();
}

std::vector<Rule> breakable_rules(const Profile& profile) {
  std::vector<Rule> rules;
  for (Rule r : all_rules())
    if (detail::needs_for(r, profile)) rules.push_back(r);
  return rules;
}

std::vector<Rule> breakable_rules(const Kernel& kernel, const GenLimits& limits) {
  const detail::Allowed allowed = detail::allowed_for(kernel, limits);
  std::vector<Rule> rules;
  for (Rule r : breakable_rules(kernel.profile()))
    if (detail::feasible(allowed, *detail::needs_for(r, kernel.profile()))) rules.push_back(r);
  return rules;
}

rc::Gen<InvalidCase> gen_invalid_case(const Kernel& kernel, Rule rule, const GenLimits& limits) {
  const auto rules = breakable_rules(kernel, limits);
  if (std::find(rules.begin(), rules.end(), rule) == rules.end())
    throw std::invalid_argument("gen_invalid_case: " + std::string(name_of(rule)) + " cannot be broken alone for " +
                                kernel.name() + " under profile " + kernel.profile().name);
  const Profile* profile = &kernel.profile();
  return rc::gen::map(
      rc::gen::pair(detail::gen_case(detail::allowed_for(kernel, limits), *detail::needs_for(rule, *profile)),
                    rc::gen::map(detail::gen_uniform(0, 11), [](detail::i64 v) { return static_cast<std::uint64_t>(v); })),
      [rule, profile](const std::pair<CaseSpec, std::uint64_t>& drawn) {
        return InvalidCase{drawn.first, rule, drawn.second, profile};
      });
}

rc::Gen<InvalidCase> gen_invalid_case(const Kernel& kernel, const GenLimits& limits) {
  const auto rules = breakable_rules(kernel, limits);
  if (rules.empty()) throw std::invalid_argument("gen_invalid_case: no rule of " + kernel.profile().name + " breakable");
  std::vector<rc::Gen<InvalidCase>> gens;
  for (Rule r : rules) gens.push_back(gen_invalid_case(kernel, r, limits));
  return rc::gen::mapcat(detail::gen_index(static_cast<int>(gens.size())),
                         [gens](int i) { return gens[static_cast<std::size_t>(i)]; });
}

}  // namespace kda::props
