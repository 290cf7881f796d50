#include "kda/properties/coverage.hpp"

#include "list_helpers.hpp"

namespace kda::props {

namespace {
using detail::has;

bool any_sequence(const Problem& p, auto&& pred) {
  for (std::int64_t n = 0; n < p.N; ++n)
    if (pred(p.length(n))) return true;
  return false;
}

// A verify call's form, accepted-count edges, -1 entries, table layout and scratch row map.
void verify_categories(const CaseSpec& spec, const Problem& p, std::vector<std::string>& c) {
  auto add = [&](bool when, const char* name) {
    if (when) c.emplace_back(name);
  };
  const bool table = p.num_accepted.has_value();
  c.emplace_back(table ? "verify (index table)" : "verify (scratch)");
  bool padding_request = false, padding_entry = false, one = false, all = false, between = false;
  for (std::int64_t n = 0; n < p.N; ++n) {
    padding_request |= p.initial_slot(n) == -1;
    for (std::int64_t t = 0; t < p.length(n); ++t) padding_entry |= p.initial_slot(n) != -1 && p.token_slot(n, t) == -1;
    if (!table) continue;
    const std::int64_t a = p.num_accepted->integer_at(n);
    one |= a == 1, all |= a == p.L && p.L > 1, between |= 1 < a && a < p.L;
  }
  add(padding_request, "verify padding request");
  add(padding_entry, "verify -1 entry");
  add(one, "accepted a = 1");
  add(all, "accepted a = L");
  add(between, "accepted 1 < a < L");
  add(table && spec.table_layout != TableLayout::compact, "strided index table");
  add(any_sequence(p, [&](auto len) { return len != p.L; }), "ragged verify");
  if (table) return;
  bool identity = true;
  for (std::int64_t n = 0; n < p.N; ++n) identity &= p.scratch_indices->integer_at(n) == n;
  add(identity, "identity row map");
  add(!identity, "other row map");
  add(p.scratch_states->shape()[0] > p.N || p.scratch_states->shape()[1] > p.L, "spare scratch rows/steps");
}

const char* data_category(DataMix mix) {
  switch (mix) {
    case DataMix::random: break;
    case DataMix::repeated_keys: return "repeated keys";
    case DataMix::collinear_keys: return "near-collinear keys";
    case DataMix::long_memory: return "long memory";
    case DataMix::strong_gates: return "strong gate run";
    case DataMix::large_state: return "large states";
    case DataMix::tiny_state: return "tiny states";
  }
  return "random data";
}

}  // namespace

std::vector<std::string> categories(const CaseSpec& spec, const Problem& p) {
  std::vector<std::string> c;
  auto add = [&](bool when, const char* name) {
    if (when) c.emplace_back(name);
  };
  const auto chunk = p.options.chunk_size;
  add(any_sequence(p, [](auto L) { return L == 0; }), "zero-length sequence");
  add(any_sequence(p, [](auto L) { return L == 15 || L == 16 || L == 17; }), "sub-chunk edge length");
  add(any_sequence(p, [&](auto L) { return L == chunk - 1 || L == chunk || L == chunk + 1; }), "chunk edge length");
  add(any_sequence(p, [&](auto L) { return L > chunk && L % chunk != 0; }), "partial last chunk");
  add(p.N > 1, "several sequences");
  add(p.mode == Mode::decode, "decode");
  if (p.mode == Mode::verify) verify_categories(spec, p, c);
  add(p.HV > p.H, "GVA");
  add(spec.layout != InputLayout::contiguous, "strided inputs");
  add(p.options.state_layout == StateLayout::kv, "[K,V] state layout");
  add(p.q.dtype() == DType::bf16, "bf16 inputs");
  add(p.q.dtype() == DType::f16, "f16 inputs");
  add(p.initial_state.has_value(), "dense initial state");
  if (p.state_pool) {
    const View& pool = p.state_pool->view;
    c.emplace_back("state pool");
    add(pool.strides[0] > pool.strides[1] * pool.shape[1], "padded pool slot stride");
    add(pool.offset != 0, "pool base offset");
    add(pool.byte_offset() % 32 != 0 || pool.strides[0] % 16 != 0, "misaligned pool");
    bool padding = false;
    for (std::int64_t n = 0; n < p.N && p.mode != Mode::verify; ++n) padding |= p.state_indices->integer_at(n) == -1;
    add(padding, "padding rows");
  }
  if (p.options.gate_in_kernel)
    c.emplace_back(p.options.lower_bound ? "lower-bound gate" : "softplus gate");
  else
    c.emplace_back("pre-activated gate");
  add(spec.gates == GateMix::strong || spec.gates == GateMix::mixture, "strong gates");
  add(p.options.beta_from_logits, "beta from logits");
  if (spec.data != DataMix::random) c.emplace_back(data_category(spec.data));
  return c;
}

std::vector<std::string> expected_categories(const Kernel& kernel) {
  const Capabilities& cap = kernel.capabilities();
  const Profile& profile = kernel.profile();
  std::vector<std::string> e{"zero-length sequence", "sub-chunk edge length", "chunk edge length", "several sequences"};
  auto add = [&](bool when, const char* name) {
    if (when) e.emplace_back(name);
  };
  add(has(cap.modes, Mode::prefill) && cap.varlen, "partial last chunk");
  add(has(cap.modes, Mode::decode), "decode");
  add(cap.strided_inputs, "strided inputs");
  add(has(cap.layouts, StateLayout::kv), "[K,V] state layout");
  add(has(cap.input_dtypes, DType::bf16), "bf16 inputs");
  add(has(cap.state_sources, StateSource::dense), "dense initial state");
  if (has(cap.state_sources, StateSource::pool)) {
    e.insert(e.end(), {"state pool", "padded pool slot stride", "pool base offset", "padding rows"});
    add(!profile.enforces(Rule::state_pool_alignment), "misaligned pool");
  }
  if (has(cap.modes, Mode::verify) && has(cap.state_sources, StateSource::table))
    e.insert(e.end(), {"verify (index table)", "accepted a = 1", "accepted a = L", "accepted 1 < a < L",
                       "verify padding request", "verify -1 entry", "strided index table"});
  if (has(cap.modes, Mode::verify) && has(cap.state_sources, StateSource::scratch)) {
    e.insert(e.end(), {"verify (scratch)", "identity row map", "spare scratch rows/steps"});
    add(!profile.enforces(Rule::scratch_indices_identity), "other row map");
  }
  add(cap.gate_in_kernel, "softplus gate");
  add(cap.gate_in_kernel, "lower-bound gate");
  e.emplace_back("strong gates");
  add(cap.beta_from_logits, "beta from logits");
  for (DataMix mix : {DataMix::repeated_keys, DataMix::collinear_keys, DataMix::long_memory, DataMix::strong_gates,
                      DataMix::large_state, DataMix::tiny_state})
    e.emplace_back(data_category(mix));
  return e;
}

std::map<std::string, int> category_counts(const std::map<std::vector<std::string>, int>& distribution) {
  std::map<std::string, int> counts;
  for (const auto& [tags, n] : distribution)
    for (const auto& t : tags) counts[t] += n;
  return counts;
}

}  // namespace kda::props
