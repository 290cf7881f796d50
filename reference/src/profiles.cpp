// The profiles: which rules each kernel enforces, and with which parameters. Upstream sources are
// pinned where known (see /work/shared/kda-facts.md §4 and the seeds).
#include <algorithm>

#include "kda/profile.hpp"

namespace kda {
namespace {

using enum Rule;

// Every profile includes these: a torch tensor can neither have negative sizes nor reach outside
// its storage, so each upstream kernel gets them for free from its framework.
std::vector<Rule> structural(std::initializer_list<Rule> more) {
  std::vector<Rule> rules{problem_sizes, view_in_bounds};
  rules.insert(rules.end(), more);
  return rules;
}

// The project's own kernels: every rule but two restrictions particular to one implementation (a
// fixed token count per verify request, an identity scratch row map), which a correct kernel need
// not impose. Inputs in any float type, states in fp32 or bf16, either state layout and every state
// source; pools follow the FlashInfer stride contract.
Profile strict() {
  Profile p;
  p.name = "strict";
  p.describes = "kda-oracle's own kernels: every rule of the contract, with the most demanding parameters";
  for (Rule r : all_rules())
    if (r != verify_fixed_tokens && r != scratch_indices_identity) p.rules.push_back(r);
  p.batch_wording = BatchWording::fla;
  p.input_dtypes = {DType::bf16, DType::f16, DType::f32, DType::f64};
  p.output_dtypes = p.input_dtypes;
  p.state_dtypes = {DType::f32, DType::bf16};
  p.state_sources = {StateSource::none, StateSource::dense, StateSource::pool, StateSource::table,
                     StateSource::scratch};
  return p;
}

// FLA fused_recurrent_kda (fla/ops/kda/fused_recurrent.py; SGLang's copy in
// python/sglang/kernels/ops/attention/fla/kda.py at 0132848349): the varlen batch and initial-state
// count checks with FLA's wording, GVA head checks, K <= 256, the gate-in-kernel parameter checks.
// Dense states only, in FLA's default [N,HV,K,V] or the state_v_first [N,HV,V,K] layout; the Triton
// kernels take bf16, fp16 or fp32 inputs.
Profile fla_fused_recurrent() {
  Profile p;
  p.name = "fla_fused_recurrent";
  p.describes = "FLA fused_recurrent_kda (flash-linear-attention fla/ops/kda/fused_recurrent.py)";
  p.rules = structural({varlen_batch_one, initial_state_count, qk_same_shape, hv_divisible, key_head_dim_max,
                        input_dtype, A_log_size, dt_bias_size, lower_bound_range, softplus_needs_A_log,
                        neg_eigval_needs_beta_logits, state_source_supported});
  p.batch_wording = BatchWording::fla;
  p.input_dtypes = {DType::bf16, DType::f16, DType::f32};
  p.state_sources = {StateSource::none, StateSource::dense};
  return p;
}

// FLA chunk_kda (fla/ops/kda/chunk.py): fused_recurrent's checks plus its own asserts: chunk size
// 32 or 64, fp32 initial state ("initial_state must be in float32."), a lower bound for the safe
// gate, and the g / beta / v shape asserts.
Profile fla_chunk() {
  Profile p = fla_fused_recurrent();
  p.name = "fla_chunk";
  p.describes = "FLA chunk_kda (flash-linear-attention fla/ops/kda/chunk.py)";
  p.rules.insert(p.rules.end(), {chunk_size, state_dtype, lower_bound_required, v_shape, g_shape, beta_shape});
  p.state_dtypes = {DType::f32};
  return p;
}

// SGLang's FlashInfer KDA decode wrapper (python/sglang/srt/layers/attention/linear/kernels/
// kda_flashinfer.py at 0132848349, around flashinfer.kda_decode.recurrent_kda): a [N,HV,V,K] fp32
// pool updated in place, selected by int32 indices, with the compiled stride contract
// (sym_int64(divisibility=16) slot stride, compact inner strides, assumed_align=32); SGLang's CUDA
// kernels take K = V = 128 and bf16 activations, cu_seqlens spanning [0, T]. FlashInfer also checks
// 32-bit index overflow and that outputs do not overlap inputs. The batch message is SGLang's own
// (Helion) wording.
Profile sglang_flashinfer_decode() {
  Profile p;
  p.name = "sglang_flashinfer_decode";
  p.describes = "SGLang FlashInferKDAKernel.decode over flashinfer recurrent_kda (kda_flashinfer.py)";
  p.rules = structural({varlen_batch_one,
                        cu_seqlens_dtype,
                        cu_seqlens_shape,
                        cu_seqlens_start,
                        cu_seqlens_end,
                        initial_state_count,
                        qk_same_shape,
                        hv_divisible,
                        key_head_dim_max,
                        head_dims_supported,
                        input_dtype,
                        output_dtype,
                        A_log_size,
                        dt_bias_size,
                        state_source,
                        state_source_supported,
                        state_dtype,
                        state_layout,
                        state_pool_rank,
                        state_pool_shape,
                        state_pool_inner_strides,
                        state_pool_alignment,
                        state_indices_dtype,
                        state_indices_shape,
                        output_overlap,
                        index_overflow_32bit});
  p.batch_wording = BatchWording::helion;
  p.key_head_dims = {128};
  p.value_head_dims = {128};
  p.input_dtypes = {DType::bf16};
  p.output_dtypes = {DType::bf16};
  p.state_dtypes = {DType::f32};
  p.state_layout = StateLayout::vk;
  p.state_sources = {StateSource::pool};
  return p;
}

const std::vector<Profile>& registry() {
  static const std::vector<Profile> profiles{strict(), fla_fused_recurrent(), fla_chunk(), sglang_flashinfer_decode()};
  return profiles;
}

}  // namespace

bool Profile::enforces(Rule r) const { return std::find(rules.begin(), rules.end(), r) != rules.end(); }

const Profile& profile_strict() { return registry().front(); }

const Profile* find_profile(std::string_view name) {
  for (const auto& p : registry())
    if (p.name == name) return &p;
  return nullptr;
}

std::vector<std::string_view> profile_names() {
  std::vector<std::string_view> names;
  for (const auto& p : registry()) names.push_back(p.name);
  return names;
}

}  // namespace kda
