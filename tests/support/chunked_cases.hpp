#pragma once
// Problems shared by the chunked kernel's CPU and GPU tests: the benchmark's configuration scaled down
// and named cases that reach every path of the kernel (partial chunks, empty sequences, padding rows,
// chunk states, both layouts, both gates, K = V = 64 and 128, GVA).
#include <string>
#include <utility>
#include <vector>

#include "kda/problem_factory.hpp"
#include "kda/properties/comparison.hpp"

namespace kda::test {

// The benchmark's options (bf16 inputs and output, gate with A_log and dt_bias, l2norm and beta from
// logits in the kernel, dense fp32 [V,K] initial and final states) with `heads` heads and K = V = 128.
inline ProblemSpec benchmark_spec(std::vector<std::int64_t> lengths, std::int64_t heads) {
  ProblemSpec s;
  s.lengths = std::move(lengths);
  s.H = s.HV = heads, s.K = s.V = 128;
  s.input_dtype = s.output_dtype = DType::bf16;
  s.options.l2norm_qk = s.options.gate_in_kernel = s.options.beta_from_logits = true;
  s.with_A_log = s.with_dt_bias = true;
  return s;
}

inline std::vector<std::pair<std::string, ProblemSpec>> chunked_named_cases() {
  std::vector<std::pair<std::string, ProblemSpec>> out;
  {  // every edge length, a pool with padding rows and a padded slot stride, GVA, chunk states
    ProblemSpec s = benchmark_spec({0, 1, 63, 64, 65, 129, 16}, 1);
    s.HV = 2, s.output_dtype = DType::f32;
    s.state = StateSource::pool, s.pool_slots = 9, s.pool_slot_stride = 2 * 128 * 128 + 32;
    s.indices = {3, 0, -1, 7, 5, 1, -1};
    s.chunk_states = true;
    out.emplace_back("pool_edge_lengths_gva_chunk_states", s);
  }
  {  // K = V = 64, lower-bound gate, fp16 inputs, [K,V] dense states, no dt_bias
    ProblemSpec s;
    s.lengths = {150, 7, 64};
    s.H = 1, s.HV = 2, s.K = s.V = 64;
    s.input_dtype = s.output_dtype = DType::f16;
    s.options.l2norm_qk = s.options.gate_in_kernel = true, s.options.lower_bound = -5.0;
    s.options.state_layout = StateLayout::kv;
    s.with_A_log = true;
    out.emplace_back("k64_lower_bound_kv_f16", s);
  }
  {  // pre-activated gates, no l2norm, no initial state, batched rows, bf16 states out, K 128 / V 64
    ProblemSpec s;
    s.lengths = {100, 100};
    s.varlen = false;
    s.H = s.HV = 1, s.K = 128, s.V = 64;
    s.input_dtype = DType::bf16, s.output_dtype = DType::f32;
    s.state = StateSource::none, s.state_dtype = DType::bf16;
    s.options.beta_from_logits = s.options.allow_neg_eigval = true;
    out.emplace_back("batched_preactivated_no_initial_state", s);
  }
  return out;
}

}  // namespace kda::test
