// The standard suite: the catalogue's dimensions one by one (varlen packings with empty sequences,
// GVA, both state layouts, every gate form, padded pools with -1 rows, chunk boundaries, decode
// batches, dtypes, options, strided inputs, per-chunk and per-token states, odd and realistic head
// dims, speculative-decoding verify in both forms) and every contract case.
#include "case_builder.hpp"
#include "kda/contract_cases.hpp"
#include "kda/golden/suites.hpp"

namespace kda::golden {

namespace {

using detail::CaseBuilder;
using detail::i64;
using props::GateMix;
using props::InputLayout;

std::vector<i64> many_short_lengths() {
  std::vector<i64> lengths;
  for (i64 i = 0; i < 24; ++i) lengths.push_back(i * 7 % 10);  // 0..9, each length several times
  return lengths;
}

std::vector<std::string> all_contract_cases() {
  std::vector<std::string> names;
  for (const auto& c : contract_cases()) names.push_back(c.name);
  return names;
}

std::vector<SuiteCase> valid_cases() {
  return {
      // varlen packings
      {"varlen_empty_sequences", "zero-length sequences first, between and last in a varlen packing",
       CaseBuilder({0, 17, 0, 0, 65, 1, 0}, 2, 2, 64, 64, 201)},
      {"varlen_many_short", "24 sequences of 0 to 9 tokens, int64 cu_seqlens",
       CaseBuilder(many_short_lengths(), 1, 2, 32, 32, 202).cu_seqlens(DType::i64)},
      {"varlen_long_tail", "lengths at the 16-token sub-chunk edge and a 500-token tail, bf16 activations",
       CaseBuilder({1, 15, 16, 17, 500}, 2, 2, 64, 64, 203).dtypes(DType::bf16, DType::f32)},
      {"batched_rows", "batched rows without cu_seqlens, chunk size 32",
       CaseBuilder({40, 40, 40}, 2, 4, 32, 32, 204).batched().chunk(32)},
      // grouped value attention and state layouts
      {"gva_ratio_4", "four value heads per q/k head", CaseBuilder({33, 70}, 1, 4, 64, 64, 205)},
      {"gva_kv_layout", "GVA with [K,V] states, K != V", CaseBuilder({50, 0, 31}, 2, 4, 64, 32, 206).kv_layout()},
      {"state_vk_k_above_v", "[V,K] states with K > V: a transposed state is visible",
       CaseBuilder({45, 20}, 1, 2, 64, 32, 207)},
      {"state_kv_k_below_v", "[K,V] states with K < V: a transposed state is visible",
       CaseBuilder({45, 20}, 1, 2, 32, 64, 208).kv_layout()},
      // gates
      {"gate_softplus", "softplus gate in kernel with A_log and dt_bias, l2norm, beta logits",
       CaseBuilder({64, 30}, 2, 2, 64, 64, 209).softplus_gate().l2norm().beta_logits(false)},
      {"gate_lower_bound_safe", "the safe lower-bound gate (lb = -5) with A_log",
       CaseBuilder({64, 30}, 2, 2, 64, 64, 210).lower_bound_gate(-5.0, true, true)},
      {"gate_lower_bound_without_A_log", "a lower-bound gate (lb = -3) without A_log",
       CaseBuilder({64, 30}, 2, 2, 64, 64, 211).lower_bound_gate(-3.0, false, false)},
      {"gates_saturating", "pre-activated gates at the safe floor of -5",
       CaseBuilder({64, 30}, 2, 2, 64, 64, 212).gates(GateMix::saturating)},
      {"gates_strong", "a quarter of the key channels wiped by gates of -1000",
       CaseBuilder({64, 30}, 2, 2, 64, 64, 213).gates(GateMix::strong)},
      {"gates_zeros", "no decay at all", CaseBuilder({64, 30}, 2, 2, 64, 64, 214).gates(GateMix::zeros)},
      {"gates_mixture_in_kernel", "per-token gate regimes through the softplus gate",
       CaseBuilder({64, 30}, 2, 2, 64, 64, 215).softplus_gate().gates(GateMix::mixture)},
      // state pools
      {"pool_padded_minus_one", "a pool with padded slots, an offset base, permuted indices and -1 rows",
       CaseBuilder({30, 0, 12, 50, 7}, 2, 4, 32, 32, 216).pool({5, -1, 0, -1, 2}, 8, 48, 8)},
      {"pool_bf16_state", "a bf16 pool with a padded slot stride and a -1 row",
       CaseBuilder({20, 20, 20}, 1, 2, 32, 32, 217).state_dtype(DType::bf16).pool({1, -1, 3}, 5, 16, 16)},
      {"pool_kv_layout", "a [K,V] pool, K != V", CaseBuilder({25, 9, 14}, 1, 2, 64, 32, 218).kv_layout().pool({3, 0, -1}, 4, 32, 0)},
      // chunk boundaries
      {"chunk64_boundaries", "lengths around one and two 64-token chunks, chunk states",
       CaseBuilder({63, 64, 65, 127, 128, 129}, 1, 2, 32, 32, 219).chunk_states()},
      {"chunk32_boundaries", "lengths around one and three 32-token chunks, chunk states",
       CaseBuilder({31, 32, 33, 95, 96, 97}, 1, 2, 32, 32, 220).chunk(32).chunk_states()},
      // decode
      {"decode_sglang_shape", "SGLang's decode: K = V = 128, bf16, a padded [V,K] fp32 pool with -1 rows",
       CaseBuilder({1, 1, 1, 1, 1, 1, 1, 1}, 1, 2, 128, 128, 221)
           .decode()
           .dtypes(DType::bf16, DType::bf16)
           .pool({7, -1, 0, 3, -1, 5, 1, -1}, 10, 16, 8)
           .l2norm()
           .beta_logits(false)
           .softplus_gate()},
      {"decode_dense_states", "a decode batch with dense initial and final states",
       CaseBuilder({1, 1, 1, 1, 1, 1, 1, 1}, 1, 2, 64, 64, 222).decode()},
      {"decode_token_states", "decode on a pool with per-token states (speculative decoding)",
       CaseBuilder({1, 1, 1, 1}, 1, 2, 32, 32, 223).decode().pool({2, 0, -1, 3}, 5, 0, 0).token_states()},
      // dtypes
      {"f16_activations", "f16 inputs and output", CaseBuilder({40, 25}, 1, 2, 64, 64, 224).dtypes(DType::f16, DType::f16)},
      {"f64_activations", "f64 inputs and output", CaseBuilder({40, 25}, 1, 2, 64, 64, 225).dtypes(DType::f64, DType::f64)},
      {"bf16_output", "f32 inputs, a bf16 output", CaseBuilder({40, 25}, 1, 2, 64, 64, 226).dtypes(DType::f32, DType::bf16)},
      // options
      {"scale_and_l2norm", "l2norm in kernel and an explicit scale",
       CaseBuilder({40, 25}, 2, 2, 64, 64, 227).l2norm().scale(0.3)},
      {"neg_eigval", "beta from logits with negative eigenvalues allowed",
       CaseBuilder({40, 25}, 2, 2, 64, 64, 228).beta_logits(true)},
      {"zero_initial_state", "no initial state, final states out",
       CaseBuilder({40, 0, 25}, 2, 2, 64, 64, 229).no_initial_state()},
      // strided inputs
      {"layout_padded_token_stride", "padded token strides on inputs and output",
       CaseBuilder({40, 25}, 2, 2, 32, 32, 230).layout(InputLayout::padded_token_stride, InputLayout::padded_token_stride, 5)},
      {"layout_padded_head_stride", "padded head strides on inputs and output",
       CaseBuilder({40, 25}, 2, 2, 32, 32, 231).layout(InputLayout::padded_head_stride, InputLayout::padded_head_stride, 3)},
      {"layout_fused_qkv", "q, k, v as slices of one fused projection",
       CaseBuilder({40, 25}, 2, 4, 32, 32, 232).layout(InputLayout::fused_qkv, InputLayout::padded_token_stride, 2)},
      {"layout_permuted", "head-major storage seen as [B,T,H,D], 1e30 poison in the gaps",
       CaseBuilder({40, 25}, 2, 2, 32, 32, 233)
           .layout(InputLayout::permuted, InputLayout::permuted, 4)
           .poison(props::Poison::huge)},
      // intermediate states, head dims, scale
      {"prefill_token_states", "per-token and per-chunk states over a packing with an empty sequence",
       CaseBuilder({20, 0, 13}, 1, 2, 16, 32, 234).chunk(32).chunk_states().token_states()},
      {"odd_head_dims", "K = 100, V = 60", CaseBuilder({70, 33}, 1, 2, 100, 60, 235)},
      {"realistic_k128", "Kimi Linear's heads (K = V = 128) on a bf16 varlen packing over a padded pool",
       CaseBuilder({100, 0, 37, 250, 1}, 2, 4, 128, 128, 236)
           .dtypes(DType::bf16, DType::bf16)
           .pool({4, -1, 0, 2, 6}, 7, 32, 8)
           .l2norm()
           .beta_logits(false)
           .lower_bound_gate(-5.0, true, true)},
      {"long_sequence", "one 1000-token sequence", CaseBuilder({1000}, 1, 1, 64, 64, 237)},
      // realistic scale: model shapes, where kernels pick other launch routes (kept small enough to generate quickly)
      {"realistic_prefill_hv32", "Qwen3-Next's heads (16 q/k and 32 value heads, K = V = 128) on bf16 sequences of "
                                 "200, 0 and 121 tokens from zero states",
       CaseBuilder({200, 0, 121}, 16, 32, 128, 128, 245)
           .dtypes(DType::bf16, DType::bf16)
           .no_initial_state()
           .l2norm()
           .beta_logits(false)
           .softplus_gate()},
      {"realistic_long_packing", "2601 tokens in sequences of 1500, 0, 1100 and 1, K = V = 128",
       CaseBuilder({1500, 0, 1100, 1}, 2, 4, 128, 128, 246).dtypes(DType::bf16, DType::f32)},
      {"realistic_decode_hv32", "a decode batch of 5 sequences x 32 value heads (N x HV = 160, past 128), K = V = "
                                "128, bf16, a padded fp32 pool with a -1 row",
       CaseBuilder({1, 1, 1, 1, 1}, 16, 32, 128, 128, 247)
           .decode()
           .dtypes(DType::bf16, DType::bf16)
           .pool({2, -1, 5, 0, 3}, 6, 16, 8)
           .l2norm()
           .lower_bound_gate(-5.0, true, true)},
      {"realistic_gva_ratio_8", "8 value heads per q/k head (4 and 32 heads), bf16",
       CaseBuilder({100, 60}, 4, 32, 64, 64, 248).dtypes(DType::bf16, DType::bf16)},
      {"realistic_k256_decode", "K = 256, V = 32 on a decode batch of 16 sequences x 8 value heads (N x HV = 128), "
                                "no initial state",
       CaseBuilder(std::vector<i64>(16, 1), 8, 8, 256, 32, 249).decode().no_initial_state()},
      // speculative-decoding verify
      {"verify_table_mtp3", "index-table verify, L = 4 (MTP num_spec 3): accepted 1, L and between, a padding "
                            "row, -1 entries; bf16 activations, the softplus gate, l2norm",
       CaseBuilder({4, 4, 4, 4, 4}, 1, 2, 64, 64, 238)
           .dtypes(DType::bf16, DType::bf16)
           .l2norm()
           .beta_logits(false)
           .softplus_gate()
           .verify_table(4, {1, 2, 3, 4, 5, 6, 7, 8, -1, -1, -1, -1, 9, -1, 10, 11, 12, 13, 14, -1},
                         {1, 4, 2, 3, 2}, 16)},
      {"verify_table_eagle7_strided", "index-table verify, L = 8, a column-major table, int64 counts, [K,V] "
                                      "states, ragged requests, the safe lower-bound gate",
       CaseBuilder({8, 3, 8}, 1, 2, 64, 32, 239)
           .kv_layout()
           .lower_bound_gate(-5.0, true, true)
           .verify_table(8, {17, 16, 15, 14, 13, 12, 11, 10, 1, 2, 3, -1, -1, -1, -1, -1, 4, 5, 6, 7, 8, 9, 0, 20},
                         {8, 3, 5}, 22, DType::i64),
       true},
      {"verify_table_column_major", "index-table verify, L = 4, a column-major table without gaps (every entry a "
                                    "live slot), accepted 1, L and between",
       CaseBuilder({4, 4, 4}, 1, 2, 64, 64, 244).verify_table(4, {3, 1, 4, 2, 7, 5, 8, 6, 11, 9, 12, 10}, {2, 4, 1}, 13),
       false, true},
      {"verify_table_one_token", "index-table verify with L = 1 on batched rows, a padding row",
       CaseBuilder({1, 1, 1, 1}, 1, 2, 32, 32, 240).batched().verify_table(1, {3, -1, 0, 5}, {1, 1, 1, 1}, 6)},
      {"verify_scratch_sglang", "scratch verify, L = 4 in 6 scratch steps, a permuted row map, a padding row, "
                                "K = V = 128, bf16 activations",
       CaseBuilder({4, 4, 4}, 1, 1, 128, 128, 241)
           .dtypes(DType::bf16, DType::bf16)
           .l2norm()
           .verify_scratch(4, {3, -1, 0}, 4, {2, 0, 1}, 3, 6)},
      {"verify_scratch_identity_kv", "scratch verify, L = 8, an identity row map (FlashInfer), [K,V] states",
       CaseBuilder({8, 8}, 1, 2, 64, 64, 242).kv_layout().verify_scratch(8, {1, 0}, 3, {0, 1}, 2, 8)},
      {"verify_scratch_one_token", "scratch verify, L = 1 in 2 scratch steps, GVA",
       CaseBuilder({1, 1, 1}, 1, 4, 32, 32, 243).verify_scratch(1, {2, 0, 1}, 3, {1, 2, 0}, 3, 2)},
  };
}

}  // namespace

const Suite& standard_suite() {
  static const Suite suite{"standard",
                           "the catalogue's dimensions, one case each, and every contract case",
                           valid_cases(), all_contract_cases()};
  return suite;
}

}  // namespace kda::golden
