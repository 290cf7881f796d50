#pragma once
// A fluent way to write the suites' cases: each call changes one aspect of a props::CaseSpec.
#include <cstdint>
#include <vector>

#include "kda/properties/case_spec.hpp"

namespace kda::golden::detail {

using i64 = std::int64_t;

class CaseBuilder {
 public:
  // A varlen prefill (one batch row, int32 cu_seqlens) over these sequence lengths: f32 throughout,
  // dense initial and final states in the [V,K] layout, contiguous tensors, realistic pre-activated
  // gates, chunk size 64, inputs drawn from `seed`.
  CaseBuilder(std::vector<i64> lengths, i64 H, i64 HV, i64 K, i64 V, std::uint64_t seed);

  CaseBuilder& decode();   // decode mode: every length must be 1
  CaseBuilder& batched();  // B = N rows of equal length, no cu_seqlens
  CaseBuilder& cu_seqlens(DType dtype);
  CaseBuilder& dtypes(DType input, DType output);
  CaseBuilder& state_dtype(DType dtype);
  CaseBuilder& kv_layout();
  CaseBuilder& chunk(int size);
  CaseBuilder& no_initial_state();
  // States read and updated in place in a pool: sequence n uses slot indices[n] (-1: a padding row),
  // the slot stride is the compact HV*K*V plus stride_pad elements, the pool starts `offset`
  // elements into its buffer.
  CaseBuilder& pool(std::vector<i64> indices, i64 slots, i64 stride_pad, i64 offset);
  // A speculative-decoding verify call (mode verify, L tokens per request at most; problem.hpp),
  // its states in a compact pool of `slots` slots. Index-table form: `table` is the [N,L]
  // state_indices row by row (-1: a padding slot), `accepted` the counts in `accepted_dtype`.
  CaseBuilder& verify_table(i64 L, std::vector<i64> table, std::vector<i64> accepted, i64 slots,
                            DType accepted_dtype = DType::i32);
  // Scratch form: request n starts from slot indices[n] (-1: a padding row) of a pool it only
  // reads; its per-token states go to row rows[n] of a scratch buffer of scratch_rows x steps.
  CaseBuilder& verify_scratch(i64 L, std::vector<i64> indices, i64 slots, std::vector<i64> rows, i64 scratch_rows,
                              i64 steps);
  CaseBuilder& chunk_states();
  CaseBuilder& token_states();
  CaseBuilder& l2norm();
  CaseBuilder& scale(double s);
  CaseBuilder& beta_logits(bool allow_neg_eigval);
  CaseBuilder& softplus_gate();  // gate in kernel: -exp(A_log) * softplus(g + dt_bias)
  CaseBuilder& lower_bound_gate(double lower_bound, bool safe, bool with_A_log);
  CaseBuilder& gates(props::GateMix mix);
  CaseBuilder& layout(props::InputLayout inputs, props::InputLayout output, i64 pad);
  CaseBuilder& poison(props::Poison poison);

  // Implicit, so that a suite lists builders where specs are expected.
  operator props::CaseSpec() const { return spec_; }

 private:
  props::CaseSpec spec_;
};

}  // namespace kda::golden::detail
