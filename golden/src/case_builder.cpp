#include "case_builder.hpp"

#include <utility>

namespace kda::golden::detail {

CaseBuilder::CaseBuilder(std::vector<i64> lengths, i64 H, i64 HV, i64 K, i64 V, std::uint64_t seed) {
  ProblemSpec& p = spec_.problem;
  p.lengths = std::move(lengths);
  p.H = H, p.HV = HV, p.K = K, p.V = V;
  p.state = StateSource::dense;
  p.final_state = true;
  spec_.data_seed = seed;
}

CaseBuilder& CaseBuilder::decode() {
  spec_.problem.mode = Mode::decode;
  return *this;
}

CaseBuilder& CaseBuilder::batched() {
  spec_.problem.varlen = false;
  return *this;
}

CaseBuilder& CaseBuilder::cu_seqlens(DType dtype) {
  spec_.problem.cu_seqlens_dtype = dtype;
  return *this;
}

CaseBuilder& CaseBuilder::dtypes(DType input, DType output) {
  spec_.problem.input_dtype = input, spec_.problem.output_dtype = output;
  return *this;
}

CaseBuilder& CaseBuilder::state_dtype(DType dtype) {
  spec_.problem.state_dtype = dtype;
  return *this;
}

CaseBuilder& CaseBuilder::kv_layout() {
  spec_.problem.options.state_layout = StateLayout::kv;
  return *this;
}

CaseBuilder& CaseBuilder::chunk(int size) {
  spec_.problem.options.chunk_size = size;
  return *this;
}

CaseBuilder& CaseBuilder::no_initial_state() {
  spec_.problem.state = StateSource::none;
  return *this;
}

CaseBuilder& CaseBuilder::pool(std::vector<i64> indices, i64 slots, i64 stride_pad, i64 offset) {
  ProblemSpec& p = spec_.problem;
  p.state = StateSource::pool;
  p.final_state = false;  // the pool is updated in place
  p.indices = std::move(indices);
  p.pool_slots = slots;
  p.pool_slot_stride = p.HV * p.K * p.V + stride_pad;
  p.pool_offset = offset;
  return *this;
}

CaseBuilder& CaseBuilder::verify_table(i64 L, std::vector<i64> table, std::vector<i64> accepted, i64 slots,
                                       DType accepted_dtype) {
  ProblemSpec& p = spec_.problem;
  p.mode = Mode::verify;
  p.state = StateSource::table;
  p.final_state = false;  // the states go to the pool slots the table names
  p.L = L;
  p.indices = std::move(table);
  p.accepted = std::move(accepted);
  p.accepted_dtype = accepted_dtype;
  p.pool_slots = slots;
  return *this;
}

CaseBuilder& CaseBuilder::verify_scratch(i64 L, std::vector<i64> indices, i64 slots, std::vector<i64> rows,
                                         i64 scratch_rows, i64 steps) {
  ProblemSpec& p = spec_.problem;
  p.mode = Mode::verify;
  p.state = StateSource::scratch;
  p.final_state = false;  // the states go to the scratch rows
  p.L = L;
  p.indices = std::move(indices);
  p.pool_slots = slots;
  p.scratch_indices = std::move(rows);
  p.scratch_rows = scratch_rows;
  p.scratch_steps = steps;
  return *this;
}

CaseBuilder& CaseBuilder::chunk_states() {
  spec_.problem.chunk_states = true;
  return *this;
}

CaseBuilder& CaseBuilder::token_states() {
  spec_.problem.token_states = true;
  return *this;
}

CaseBuilder& CaseBuilder::l2norm() {
  spec_.problem.options.l2norm_qk = true;
  return *this;
}

CaseBuilder& CaseBuilder::scale(double s) {
  spec_.problem.options.scale = s;
  return *this;
}

CaseBuilder& CaseBuilder::beta_logits(bool allow_neg_eigval) {
  spec_.problem.options.beta_from_logits = true;
  spec_.problem.options.allow_neg_eigval = allow_neg_eigval;
  return *this;
}

CaseBuilder& CaseBuilder::softplus_gate() {
  spec_.problem.options.gate_in_kernel = true;
  spec_.problem.options.lower_bound.reset();
  spec_.problem.with_A_log = spec_.problem.with_dt_bias = true;
  return *this;
}

CaseBuilder& CaseBuilder::lower_bound_gate(double lower_bound, bool safe, bool with_A_log) {
  spec_.problem.options.gate_in_kernel = true;
  spec_.problem.options.lower_bound = lower_bound;
  spec_.problem.options.safe_gate = safe;
  spec_.problem.with_A_log = with_A_log;
  spec_.problem.with_dt_bias = true;
  return *this;
}

CaseBuilder& CaseBuilder::gates(props::GateMix mix) {
  spec_.gates = mix;
  return *this;
}

CaseBuilder& CaseBuilder::layout(props::InputLayout inputs, props::InputLayout output, i64 pad) {
  spec_.layout = inputs, spec_.output_layout = output, spec_.pad = pad;
  return *this;
}

CaseBuilder& CaseBuilder::poison(props::Poison poison) {
  spec_.poison = poison;
  return *this;
}

}  // namespace kda::golden::detail
