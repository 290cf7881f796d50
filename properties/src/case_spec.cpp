#include "kda/properties/case_spec.hpp"

#include <limits>
#include <numeric>
#include <ostream>
#include <sstream>

namespace kda::props {

namespace {

std::string list(const std::vector<std::int64_t>& xs) {
  std::ostringstream s;
  s << '[';
  for (std::size_t i = 0; i < xs.size(); ++i) s << (i ? "," : "") << xs[i];
  s << ']';
  return s.str();
}

void describe_gate(std::ostream& s, const ProblemSpec& p) {
  const Options& o = p.options;
  if (!o.gate_in_kernel) {
    s << " gate=pre-activated";
    return;
  }
  s << " gate=" << (o.lower_bound ? "lower_bound" : "softplus");
  if (o.lower_bound) s << '(' << *o.lower_bound << (o.safe_gate ? ",safe" : "") << ')';
  s << (p.with_A_log ? " A_log" : "") << (p.with_dt_bias ? " dt_bias" : "");
}

void describe_verify(std::ostream& s, const ProblemSpec& p) {
  s << " L=" << p.L;
  if (p.state == StateSource::table) s << " accepted=" << list(p.accepted) << ' ' << name_of(p.accepted_dtype);
  if (p.state == StateSource::scratch)
    s << " scratch=" << (p.scratch_rows ? p.scratch_rows : static_cast<std::int64_t>(p.lengths.size())) << 'x'
      << (p.scratch_steps ? p.scratch_steps : p.L) << " rows=" << list(p.scratch_indices);
}

void describe_states(std::ostream& s, const ProblemSpec& p) {
  s << " | state=" << name_of(p.state);
  if (p.state != StateSource::none || p.final_state || p.chunk_states || p.token_states)
    s << ' ' << name_of(p.state_dtype) << ' ' << name_of(p.options.state_layout);
  if (is_verify_source(p.state)) describe_verify(s, p);
  if (p.state == StateSource::pool || is_verify_source(p.state))
    s << " slots=" << p.pool_slots << " stride=" << p.pool_slot_stride << " offset=" << p.pool_offset
      << " indices=" << list(p.indices);
  s << (p.state != StateSource::pool && p.final_state ? " final_state" : "") << (p.chunk_states ? " chunk_states" : "")
    << (p.token_states ? " token_states" : "");
}

}  // namespace

std::string CaseSpec::describe() const {
  const ProblemSpec& p = problem;
  const Options& o = p.options;
  std::ostringstream s;
  const auto T = std::accumulate(p.lengths.begin(), p.lengths.end(), std::int64_t{0});
  s << name_of(p.mode) << (p.varlen ? " varlen" : " batched") << " lengths=" << list(p.lengths) << " (N="
    << p.lengths.size() << " T=" << T << ") H=" << p.H << " HV=" << p.HV << " K=" << p.K << " V=" << p.V
    << " | in=" << name_of(p.input_dtype) << " out=" << name_of(p.output_dtype);
  if (p.varlen) s << " cu=" << name_of(p.cu_seqlens_dtype);
  describe_states(s, p);
  s << " | chunk=" << o.chunk_size << (o.l2norm_qk ? " l2norm" : "");
  if (o.scale) s << " scale=" << *o.scale;
  s << (o.beta_from_logits ? " beta=logits" : " beta=sigmoided") << (o.allow_neg_eigval ? " neg_eigval" : "");
  describe_gate(s, p);
  s << " | layout=" << name_of(layout) << " o=" << name_of(output_layout) << " pad=" << pad
    << " poison=" << name_of(poison) << (p.state == StateSource::table ? " table=" : "")
    << (p.state == StateSource::table ? name_of(table_layout) : "") << " gates=" << name_of(gates);
  if (data != DataMix::random) s << " data=" << name_of(data);
  s << (padding_pattern ? " padding_pattern" : "") << " seed=" << data_seed;
  return s.str();
}

std::ostream& operator<<(std::ostream& os, const CaseSpec& spec) { return os << spec.describe(); }

double value_of(Poison poison) {
  return poison == Poison::nan ? std::numeric_limits<double>::quiet_NaN() : 1e30;
}

std::string_view name_of(InputLayout layout) {
  switch (layout) {
    case InputLayout::contiguous: return "contiguous";
    case InputLayout::padded_token_stride: return "padded_token_stride";
    case InputLayout::padded_head_stride: return "padded_head_stride";
    case InputLayout::fused_qkv: return "fused_qkv";
    case InputLayout::permuted: return "permuted";
  }
  return "?";
}

std::string_view name_of(TableLayout layout) {
  switch (layout) {
    case TableLayout::compact: return "compact";
    case TableLayout::transposed: return "transposed";
    case TableLayout::padded_rows: return "padded_rows";
  }
  return "?";
}

std::string_view name_of(Poison poison) { return poison == Poison::nan ? "nan" : "huge"; }

std::string_view name_of(GateMix mix) {
  switch (mix) {
    case GateMix::realistic: return "realistic";
    case GateMix::saturating: return "saturating";
    case GateMix::zeros: return "zeros";
    case GateMix::strong: return "strong";
    case GateMix::mixture: return "mixture";
  }
  return "?";
}

std::string_view name_of(DataMix mix) {
  switch (mix) {
    case DataMix::random: return "random";
    case DataMix::repeated_keys: return "repeated_keys";
    case DataMix::collinear_keys: return "collinear_keys";
    case DataMix::long_memory: return "long_memory";
    case DataMix::strong_gates: return "strong_gates";
    case DataMix::large_state: return "large_state";
    case DataMix::tiny_state: return "tiny_state";
  }
  return "?";
}

}  // namespace kda::props
