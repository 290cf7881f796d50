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

// FLA fused_recurrent_kda (fla-core 0.6.0, fla/ops/kda/fused_recurrent.py): its only checks are the
// varlen batch ("The batch size is expected to be 1 rather than {B} when using `cu_seqlens`..."), the
// initial-state count (with cu_seqlens only: a batch-mode call with the wrong count runs) and
// "`allow_neg_eigval=True` requires `use_beta_sigmoid_in_kernel=True`."; q/k shapes, GVA heads, K, the
// dtypes and the gate parameters go to the Triton kernel unchecked. Dense states only (the entry point
// takes no pool: the adapter refuses one, state_source_supported), in FLA's default [N,HV,K,V] or the
// state_v_first [N,HV,V,K] layout; the Triton kernels take bf16, fp16 or fp32 inputs.
Profile fla_fused_recurrent() {
  Profile p;
  p.name = "fla_fused_recurrent";
  p.describes = "FLA fused_recurrent_kda (flash-linear-attention 0.6.0, fla/ops/kda/fused_recurrent.py)";
  p.rules = structural({varlen_batch_one, initial_state_count, neg_eigval_needs_beta_logits, state_source_supported});
  p.batch_wording = BatchWording::fla;
  p.input_dtypes = {DType::bf16, DType::f16, DType::f32};
  p.state_sources = {StateSource::none, StateSource::dense};
  return p;
}

// FLA chunk_kda (fla-core 0.6.0, fla/ops/kda/chunk.py, ChunkKDAFunction's caller): fused_recurrent's
// checks plus its own: "initial_state must be in float32." (initial states only; FLA returns final and
// chunk-start states itself, so the adapter refuses other dtypes for those), "`A_log` must be provided
// when ...", "`chunk_size` must be either 32 or 64 for KDA, got {cs}.", "`lower_bound` must be specified
// when `safe_gate=True` and `use_gate_in_kernel=True`." and the asserts on q/k shapes, K <= 256, HV % H,
// g and beta shapes. Its lower-bound range check runs only for the safe gate in kernel, so
// lower_bound_range is not a promise of this profile; v is not checked.
Profile fla_chunk() {
  Profile p = fla_fused_recurrent();
  p.name = "fla_chunk";
  p.describes = "FLA chunk_kda (flash-linear-attention 0.6.0, fla/ops/kda/chunk.py)";
  p.rules.insert(p.rules.end(), {state_dtype, softplus_needs_A_log, chunk_size, lower_bound_required, qk_same_shape,
                                 key_head_dim_max, hv_divisible, g_shape, beta_shape});
  p.state_dtypes = {DType::f32};
  return p;
}

// FLA fused_recurrent_kda_fwd (fla-core 0.6.0, fla/ops/kda/fused_recurrent.py) with a 1-D
// ssm_state_indices, the pool updated in place (inplace_final_state): its one check is a bare
// `assert out.shape == v.shape` (o_shape). Indices, their dtype, the pool's shape and strides (the kernel
// takes the slot stride and assumes compact slots), cu_seqlens and every other parameter go to the Triton
// kernel unchecked. The entry takes pools only (the adapter refuses another source).
Profile fla_pooled_decode() {
  Profile p;
  p.name = "fla_pooled_decode";
  p.describes = "FLA fused_recurrent_kda_fwd with ssm_state_indices (flash-linear-attention 0.6.0)";
  p.rules = structural({o_shape, state_source_supported});
  p.input_dtypes = {DType::bf16, DType::f16, DType::f32};
  p.state_sources = {StateSource::pool};
  return p;
}

// The same function as a speculative verify (a 2-D ssm_state_indices with num_accepted_tokens, the
// index-table form): still only `assert out.shape == v.shape`. num_accepted_tokens - 1 is loaded as a
// column index with no bound, the table's column stride is taken as 1, and L is never compared with the
// tokens (kda-facts §7).
Profile fla_verify() {
  Profile p = fla_pooled_decode();
  p.name = "fla_verify";
  p.describes = "FLA fused_recurrent_kda_fwd with ssm_state_indices [N, L] and num_accepted_tokens (flash-linear-attention 0.6.0)";
  p.state_sources = {StateSource::table};
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

// The SGLang profiles below (adapters/sglang, docs/conformance-sglang.md) also hold state_source_supported and
// state_layout: SGLang's calls take one state form, [slots, HV, V, K] with no layout option, so its adapter
// refuses another form or [K, V] states under those rules.
// SGLang's Triton KDA decode (TritonKDAKernel.decode in python/sglang/srt/layers/attention/linear/
// kernels/kda_triton.py over fused_sigmoid_gating_delta_rule_update in python/sglang/kernels/ops/attention/
// linear/fused_sigmoid_gating_recurrent.py, sglang 0.5.23): a [slots, HV, V, K] pool updated in place
// through state indices (< 0: a padding row, nothing read or stored), the gate and beta formed in the
// kernel. Its one check is `assert scale > 0, "scale must be positive"`; the pool's slot stride is taken
// from stride(0) and its slots assumed compact, the indices read without a stride, and shapes, dtypes and
// cu_seqlens go to the kernel unchecked.
Profile sglang_triton_decode() {
  Profile p;
  p.name = "sglang_triton_decode";
  p.describes = "SGLang TritonKDAKernel.decode (fused_sigmoid_gating_recurrent.py, sglang 0.5.23)";
  p.rules = structural({scale_positive, state_source_supported, state_layout});
  p.state_layout = StateLayout::vk;
  p.state_sources = {StateSource::pool};
  return p;
}

// SGLang's Triton KDA prefill (TritonKDAKernel.extend over chunk_kda in python/sglang/kernels/ops/attention/
// fla/kda.py, sglang 0.5.23): chunk size 64, a [slots, HV, V, K] pool read and updated in place through
// initial_state_indices (< 0: nothing read or stored), the gate in kernel when A_log is given. Its checks:
// "Only batch size 1 is supported when cu_seqlens are provided" (kda_gate_chunk_cumsum and
// chunk_local_cumsum, both gate forms) and "current kernel does not support head dimension larger than
// 256." (chunk_gated_delta_rule_fwd_h). q/k/v/g/beta shapes, dtypes and the pool's shape go unchecked.
Profile sglang_triton_chunk() {
  Profile p;
  p.name = "sglang_triton_chunk";
  p.describes = "SGLang TritonKDAKernel.extend over chunk_kda (python/sglang/kernels/ops/attention/fla/kda.py)";
  p.rules = structural({varlen_batch_one, key_head_dim_max, state_source_supported, state_layout});
  p.state_layout = StateLayout::vk;
  p.state_sources = {StateSource::pool};
  return p;
}

// SGLang's Helion KDA prefill (chunk_kda in python/sglang/kernels/ops/attention/helion/kda_prefill.py,
// sglang 0.5.23; HelionKDAKernel.extend): the Triton chunk_kda's call contract, with its own checks:
// "varlen KDA requires batch size 1" (gate_chunk_cumsum_operands), "KDA prefill requires an indexed
// initial-state pool" and "g and beta must cover every q token" (only g or beta with fewer tokens than q:
// not g_shape or beta_shape). A call whose q holds one token goes to the Triton chunk_kda, whose batch
// check words the same rule its own way. No head-dim limit is checked.
Profile sglang_helion_chunk() {
  Profile p;
  p.name = "sglang_helion_chunk";
  p.describes = "SGLang Helion chunk_kda (python/sglang/kernels/ops/attention/helion/kda_prefill.py)";
  p.rules = structural({varlen_batch_one, state_source_supported, state_layout});
  p.batch_wording = BatchWording::helion;
  p.state_layout = StateLayout::vk;
  p.state_sources = {StateSource::pool};
  return p;
}

// SGLang's packed KDA decode (TritonKDAKernel.packed_decode over fused_recurrent_kda_packed_decode in
// python/sglang/kernels/ops/attention/fla/fused_recurrent.py, sglang 0.5.23): one token per row of a
// packed [B, 2*H*K + HV*V] mixed_qkv, a [B, HV*K] gate input, a [B, HV] beta logit, a [slots, HV, V, K]
// pool updated in place (index < 0: zero output, nothing stored). Its ValueErrors: 1-D indices ("must be
// 1D for packed decode"), one per row ("must have shape [B]"), a 4-D pool, a, b and out shaped by the
// pool's HV, V, K (so the pool's shape), A_log with HV and dt_bias with HV*K elements, HV a multiple of the
// H inferred from mixed_qkv. Only the pool's last stride is checked, so not its inner strides.
Profile sglang_packed_decode() {
  Profile p;
  p.name = "sglang_packed_decode";
  p.describes = "SGLang fused_recurrent_kda_packed_decode (python/sglang/kernels/ops/attention/fla/fused_recurrent.py)";
  p.rules = structural({initial_state_count, hv_divisible, A_log_size, dt_bias_size, state_source_supported,
                        state_layout, state_pool_rank, state_pool_shape, state_indices_shape});
  p.state_layout = StateLayout::vk;
  p.state_sources = {StateSource::pool};
  return p;
}

// SGLang's Helion packed decode (helion_fused_recurrent_kda_packed_decode in python/sglang/kernels/ops/
// attention/helion/kda_decode.py, validate_packed_decode_inputs, sglang 0.5.23): the Triton packed decode's
// checks word for word, plus "Helion KDA decode requires power-of-two key and value head dimensions".
Profile sglang_helion_packed_decode() {
  Profile p = sglang_packed_decode();
  p.name = "sglang_helion_packed_decode";
  p.describes = "SGLang helion_fused_recurrent_kda_packed_decode (python/sglang/kernels/ops/attention/helion/kda_decode.py)";
  p.rules.push_back(head_dims_supported);
  p.key_head_dims = {1, 2, 4, 8, 16, 32, 64, 128, 256};
  p.value_head_dims = p.key_head_dims;
  return p;
}

// ---- speculative-decoding verify (problem.hpp: the index-table and scratch forms) ----
// Not one shipped verify path bounds the accepted counts (accepted_range): FlashInfer clamps counts
// above 1 + S and leaves ">= 1" to the caller, FLA and vLLM load `num_accepted - 1` as an index as it
// is. None checks the index values either (range, distinct): a verify profile holds no such rule.

// FlashInfer's fused speculative decode (flashinfer/kda_kernels/recurrent_kda.py, run_recurrent_kda,
// flashinfer-python 0.7.2; the deprecated flashinfer.kda_decode.recurrent_kda forwards to it): the
// index-table form, num_spec_tokens = L - 1 with a [N, 1 + S] ssm_state_indices ("ssm_state_indices
// must be 2D [N, {1+S}] in spec mode", "ssm_state_indices.shape[0]=... must equal N=..."), batch 1
// with cu_seqlens, K = V in {64, 128} (K == V itself is not a rule here), bf16 q/k/v/g/beta, HV a
// multiple of H, float32 A_log and dt_bias, A_log required with the gate in kernel; states
// [slots, HV, V, K]. The table is flattened through .to(int32).contiguous() (any dtype and strides),
// num_accepted_tokens through .to(int32); cu_seqlens stepping by 1 + S is documented as "not validated
// at runtime", so verify_fixed_tokens is not enforced. The pool is documented bf16 but not checked.
Profile flashinfer_verify() {
  Profile p;
  p.name = "flashinfer_verify";
  p.describes = "FlashInfer recurrent_kda speculative decode (flashinfer/kda_kernels/recurrent_kda.py, 0.7.2)";
  p.rules = structural({varlen_batch_one, hv_divisible, head_dims_supported, input_dtype, gate_params_dtype,
                        softplus_needs_A_log, initial_state_count, state_source_supported, state_layout,
                        state_indices_shape});
  p.key_head_dims = {64, 128};
  p.value_head_dims = {64, 128};
  p.input_dtypes = {DType::bf16};
  p.state_layout = StateLayout::vk;
  p.state_sources = {StateSource::table};
  return p;
}

// SGLang's FlashInfer target_verify (python/sglang/srt/layers/attention/linear/kernels/kda_flashinfer.py,
// sglang 0.5.23, FlashInferKDAKernel.target_verify): the scratch form over recurrent_kda. The wrapper
// raises "KDA verify needs {T} scratch steps, but intermediate_ssm only has {S}." and, building its
// [N, T] scratch-slot table from the row map, "FlashInfer KDA verify requires an identity intermediate
// row-map (verify_intermediate_state_indices must be arange)."; recurrent_kda adds its head-dim, head
// and gate checks. The wrapper casts q, k, v, g to bf16 and A_log, dt_bias to fp32 itself (any dtype
// goes in), returns a bf16 output, seeds step 0 of each scratch row from pool[max(index, 0)] (a padding
// row is computed from slot 0) and views the scratch buffer as [S * L', HV, V, K] (its row and step strides must merge).
// The identity check runs when the [N, T] table is built, which is cached by the row map's id(): a row
// map refilled in place is not checked again. Its fused-accept mode is the index-table form of
// flashinfer_verify over the scratch slots.
Profile sglang_flashinfer_verify() {
  Profile p;
  p.name = "sglang_flashinfer_verify";
  p.describes = "SGLang FlashInferKDAKernel.target_verify over flashinfer recurrent_kda (kda_flashinfer.py)";
  p.rules = structural({hv_divisible, head_dims_supported, output_dtype, state_source_supported, state_layout,
                        scratch_steps, scratch_indices_identity});
  p.key_head_dims = {64, 128};
  p.value_head_dims = {64, 128};
  p.output_dtypes = {DType::bf16};
  p.state_layout = StateLayout::vk;
  p.state_sources = {StateSource::scratch};
  return p;
}

// SGLang's Helion verify (python/sglang/kernels/ops/attention/helion/kda_verify.py, sglang 0.5.23,
// helion_kda_verify): the scratch form with per-candidate snapshots. It checks packed [1, T, H, K]
// inputs ("Helion KDA verify expects packed [1, T, H, K] inputs"), k like q and HV a multiple of H
// ("Inconsistent Helion KDA verify query/key head layout"), that snapshots are given ("requires
// per-candidate state snapshots") and have the steps ("snapshot capacity is smaller than
// cache_steps"). Any float dtype (it computes in fp32), states [.., HV, V, K]; a pool index < 0 reads a
// zero state (the padding row's output is still computed), a scratch row < 0 stores nothing.
Profile sglang_helion_verify() {
  Profile p;
  p.name = "sglang_helion_verify";
  p.describes = "SGLang helion_kda_verify (python/sglang/kernels/ops/attention/helion/kda_verify.py)";
  p.rules = structural({varlen_batch_one, qk_same_shape, hv_divisible, state_source, state_source_supported,
                        state_layout, scratch_steps});
  p.batch_wording = BatchWording::helion;
  p.state_layout = StateLayout::vk;
  p.state_sources = {StateSource::scratch};
  return p;
}

// SGLang's Triton target_verify (kda_triton.py, TritonKDAKernel.target_verify, over
// fused_sigmoid_gating_delta_rule_update in python/sglang/kernels/ops/attention/linear/
// fused_sigmoid_gating_recurrent.py, sglang 0.5.23; SGLang's reference for its KDA verify tests): the
// scratch form with the committed pool read only (disable_state_update). Its one check is
// "scale must be positive". It does not compare the scratch buffer's steps with the tokens: it takes
// stride(0) // (HV*K*V) as the steps per row and assumes compact steps. States [.., HV, V, K]; pool
// index < 0 reads a zero state, scratch row < 0 stores nothing.
Profile sglang_triton_verify() {
  Profile p;
  p.name = "sglang_triton_verify";
  p.describes = "SGLang TritonKDAKernel.target_verify (fused_sigmoid_gating_recurrent.py, disable_state_update)";
  p.rules = structural({scale_positive, state_source_supported, state_layout});
  p.state_layout = StateLayout::vk;
  p.state_sources = {StateSource::scratch};
  return p;
}

// SGLang's Kimi-K3 DSpARK MTP verify (python/sglang/kernels/ops/attention/kda_decode_mtp.py, sglang
// 0.5.23, fused_kda_decode_mtp_dspark; CuTe DSL with the short convolution fused in, which the oracle's
// problem does not model: this profile is the recurrence's contract). Fixed tokens: "DSpARK KDA MTP
// requires a fixed 1 + num_spec dense tokens per request; got T={T}, N={N}" (T % N, num_spec = T / N - 1);
// q/k/v/g [1, T, H, 128] and beta [1, T, H] (so also HV == H, not a rule here); a fp32 [pool, H, 128,
// 128] recurrent state, compact inside a slot; intermediate_ssm [scratch, >= 1 + num_spec, H, 128, 128].
// state_dtype here also holds the scratch buffer to fp32, which upstream does not check. Its alignment
// check (slot stride and offset multiples of 4 elements) is looser than state_pool_alignment, so that
// rule is not enforced.
Profile sglang_dspark_mtp() {
  Profile p;
  p.name = "sglang_dspark_mtp";
  p.describes = "SGLang Kimi-K3 DSpARK MTP verify (python/sglang/kernels/ops/attention/kda_decode_mtp.py)";
  p.rules = structural({verify_fixed_tokens, qk_same_shape, v_shape, g_shape, beta_shape, head_dims_supported,
                        state_source_supported, state_dtype, state_layout, state_pool_inner_strides,
                        scratch_states_shape, scratch_steps});
  p.key_head_dims = {128};
  p.value_head_dims = {128};
  p.state_dtypes = {DType::f32};
  p.state_layout = StateLayout::vk;
  p.state_sources = {StateSource::scratch};
  return p;
}

// ---- vLLM 0.33 (vllm/models/kimi_k3/nvidia/ops/third_party/kda/, the Triton KDA of KimiK3's NVIDIA path) ----

// fused_recurrent_kda_fwd (fused_recurrent.py) with a 1-D ssm_state_indices, the pool updated in place.
// Its checks are bare asserts: batch 1 (it always takes cu_seqlens), k like q, g/beta/out shapes built
// from q's H (so also HV == H: the adapter repeats q and k heads for grouped calls); v's heads are checked
// but its V is read from v itself, so a wider v fails the out or pool assert instead (v_shape is not
// promised), a [slots, H, V, K] pool compact inside a slot, a 1-D or
// 2-D index tensor, T == N with 1-D indices (not the per-sequence token count: not decode_one_token),
// A_log given with the gate in kernel (also with a lower bound), and compact heads of every activation
// (the adapter passes contiguous copies). Index values are not checked; any index <= 0 is a padding row
// (vLLM reserves slot 0: the adapter shifts the oracle's slots by one). States are [V, K] only (no layout
// parameter: the adapter refuses [K, V], state_layout).
Profile vllm_fused_recurrent() {
  Profile p;
  p.name = "vllm_fused_recurrent";
  p.describes = "vLLM Kimi-K3 fused_recurrent_kda_fwd decode (vllm/models/kimi_k3/nvidia/ops/third_party/kda/"
                "fused_recurrent.py)";
  p.rules = structural({varlen_batch_one, qk_same_shape, g_shape, beta_shape, o_shape, softplus_needs_A_log,
                        state_source_supported, state_layout, state_pool_shape, state_pool_inner_strides});
  p.input_dtypes = {DType::bf16, DType::f16, DType::f32};
  p.state_layout = StateLayout::vk;
  p.state_sources = {StateSource::pool};
  return p;
}

// The same function as a speculative verify (called with spec_state_indices_tensor and
// num_accepted_tokens from vllm/models/kimi_k3/nvidia/kda.py): the index-table form, in place. The same
// asserts, and a 2-D table's column stride must be 1 (no rule: such a table is refused with
// "assert ssm_state_indices.stride(1) == 1"). Nothing bounds num_accepted_tokens.
Profile vllm_fused_recurrent_verify() {
  Profile p = vllm_fused_recurrent();
  p.name = "vllm_fused_recurrent_verify";
  p.describes = "vLLM Kimi-K3 fused_recurrent_kda_fwd speculative decode (vllm/models/kimi_k3/nvidia/ops/"
                "third_party/kda/fused_recurrent.py)";
  p.state_sources = {StateSource::table};
  return p;
}

// fused_recurrent_kda_packed_decode (fused_recurrent.py), the decode KimiK3's Triton path runs: q, k, v
// packed per token in one mixed_qkv row, l2norm, gate (dt_bias required) and beta sigmoid always in the
// kernel, H, V and K taken from the [slots, H, V, K] pool. Its ValueErrors that name one rule:
// "`initial_state` must have shape [cache, H, V, K]." (rank), "`initial_state` must be contiguous within
// each cache slot.", "`state_indices` must be one-dimensional." and "`state_indices` must contain one
// entry per token." (a count per token: initial_state_count). Its gate, beta and packed-shape messages
// ("Unexpected raw gate shape ...") compare against the pool's H, V, K, so they stand for several rules
// and none is promised. Any index <= 0 is a padding row, as in fused_recurrent_kda_fwd.
Profile vllm_packed_decode() {
  Profile p;
  p.name = "vllm_packed_decode";
  p.describes = "vLLM Kimi-K3 fused_recurrent_kda_packed_decode (vllm/models/kimi_k3/nvidia/ops/third_party/kda/"
                "fused_recurrent.py)";
  p.rules = structural({state_pool_rank, state_pool_inner_strides, state_indices_shape, initial_state_count,
                        state_source_supported, state_layout});
  p.input_dtypes = {DType::bf16, DType::f16, DType::f32};
  p.state_layout = StateLayout::vk;
  p.state_sources = {StateSource::pool};
  return p;
}

// chunk_kda (chunk.py): prefill from dense [N, H, V, K] states, gate and beta precomputed. Its checks:
// "Only batch size 1 is supported when cu_seqlens are provided" (chunk_local_cumsum) and "current kernel
// does not support head dimension larger than 256." (chunk_gated_delta_rule_fwd_h in
// vllm/third_party/flash_linear_attention/ops/chunk_delta_h.py). The chunk size is fixed at 64
// (FLA_CHUNK_SIZE), l2norm is the only option besides scale; final states are fp32 [N, H, V, K].
Profile vllm_chunk() {
  Profile p;
  p.name = "vllm_chunk";
  p.describes = "vLLM Kimi-K3 chunk_kda (vllm/models/kimi_k3/nvidia/ops/third_party/kda/chunk.py)";
  p.rules = structural({varlen_batch_one, key_head_dim_max, state_source_supported, state_layout});
  p.input_dtypes = {DType::bf16, DType::f16, DType::f32};
  p.state_layout = StateLayout::vk;
  p.state_sources = {StateSource::none, StateSource::dense};
  return p;
}

// chunk_kda_with_fused_gate (chunk.py), the prefill vLLM's KimiK3 layer serves: the gate (softplus, or
// lower_bound * sigmoid, which also selects the safe-gate path) and the beta sigmoid in the kernel
// (fused_kda_gate_chunk_cumsum). Adds "Expected raw_beta shape {(B, T, H)}, got ..." to chunk_kda's
// checks. A missing A_log is not checked (an AttributeError on A_log.reshape: the adapter passes zeros,
// A = 1, the contract's meaning).
Profile vllm_chunk_fused_gate() {
  Profile p = vllm_chunk();
  p.name = "vllm_chunk_fused_gate";
  p.describes = "vLLM Kimi-K3 chunk_kda_with_fused_gate (vllm/models/kimi_k3/nvidia/ops/third_party/kda/chunk.py)";
  p.rules.push_back(beta_shape);
  return p;
}

// FlashInfer's CuTe DSL decode (flashinfer/kda_kernels/recurrent_kda.py, run_recurrent_kda, through
// flashinfer.kda.recurrent_kda with backend="cute-dsl", flashinfer-python 0.7.2): one token per sequence,
// a [slots, HV, V, K] pool selected by a 1-D ssm_state_indices, in place. Its checks: "Batch size must be
// 1 with cu_seqlens, got B={B}", "K must equal V, got ...", "HEAD_DIM must be 64 or 128, got K={K}",
// "{name} must be bfloat16, got ..." for q, k, v, g, beta, "HV must be a positive multiple of H, ...",
// "A_log is required when use_gate_in_kernel=True", "A_log must be float32, ..." (and dt_bias), and
// "lower_bound must be negative" (the upper end of lower_bound_range only: not promised). Indices are
// cast with .to(int32) and not bounded; -1 is not special-cased in the wrapper.
Profile flashinfer_decode() {
  Profile p;
  p.name = "flashinfer_decode";
  p.describes = "FlashInfer recurrent_kda CuTe DSL decode (flashinfer/kda_kernels/recurrent_kda.py, 0.7.2)";
  p.rules = structural({varlen_batch_one, head_dims_supported, input_dtype, hv_divisible, softplus_needs_A_log,
                        gate_params_dtype, state_source_supported, state_layout});
  p.key_head_dims = {64, 128};
  p.value_head_dims = {64, 128};
  p.input_dtypes = {DType::bf16};
  p.state_layout = StateLayout::vk;
  p.state_sources = {StateSource::pool};
  return p;
}

const std::vector<Profile>& registry() {
  static const std::vector<Profile> profiles{strict(),
                                             fla_fused_recurrent(),
                                             fla_chunk(),
                                             fla_pooled_decode(),
                                             fla_verify(),
                                             sglang_flashinfer_decode(),
                                             sglang_triton_decode(),
                                             sglang_triton_chunk(),
                                             sglang_helion_chunk(),
                                             sglang_packed_decode(),
                                             sglang_helion_packed_decode(),
                                             flashinfer_verify(),
                                             sglang_flashinfer_verify(),
                                             sglang_helion_verify(),
                                             sglang_triton_verify(),
                                             sglang_dspark_mtp(),
                                             vllm_fused_recurrent(),
                                             vllm_fused_recurrent_verify(),
                                             vllm_packed_decode(),
                                             vllm_chunk(),
                                             vllm_chunk_fused_gate(),
                                             flashinfer_decode()};
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
