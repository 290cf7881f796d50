// The smoke suite: one small case per headline feature and a few contract cases, small enough to
// commit (golden/smoke.h5) and to verify in a second.
#include "case_builder.hpp"
#include "kda/golden/suites.hpp"

namespace kda::golden {

using detail::CaseBuilder;
using props::InputLayout;

const Suite& smoke_suite() {
  static const Suite suite{
      "smoke",
      "small cases of every headline feature and a few contract cases; committed as golden/smoke.h5",
      {
          {"varlen_empty_sequences", "zero-length sequences in a varlen packing, GVA, K != V, chunk states",
           CaseBuilder({5, 0, 17, 0, 33}, 1, 2, 16, 24, 101).chunk(32).chunk_states()},
          {"gva_bf16_kv_softplus", "bf16 activations, [K,V] states, l2norm, beta logits, softplus gate in kernel",
           CaseBuilder({20, 9}, 2, 4, 24, 16, 102)
               .dtypes(DType::bf16, DType::bf16)
               .kv_layout()
               .l2norm()
               .beta_logits(false)
               .softplus_gate()},
          {"pool_padded_minus_one", "a padded, offset pool with a -1 row; f16; the safe lower-bound gate",
           CaseBuilder({7, 12, 0, 4}, 1, 2, 16, 16, 103)
               .dtypes(DType::f16, DType::f16)
               .pool({3, -1, 0, 5}, 7, 16, 8)
               .lower_bound_gate(-5.0, true, true)},
          {"chunk_boundaries", "sequences of 63, 64 and 65 tokens around a 64-token chunk",
           CaseBuilder({63, 64, 65}, 1, 1, 16, 16, 104).chunk_states()},
          {"decode_batch", "a decode batch on a pool with padding rows, bf16 activations",
           CaseBuilder({1, 1, 1, 1, 1, 1}, 1, 2, 16, 16, 105)
               .decode()
               .dtypes(DType::bf16, DType::bf16)
               .pool({2, -1, 5, 0, -1, 7}, 8, 0, 0)
               .l2norm()
               .beta_logits(false)
               .softplus_gate()},
          {"strided_inputs", "q, k, v slices of one fused projection, a padded output, 1e30 poison in the gaps",
           CaseBuilder({10, 23}, 2, 2, 16, 16, 106)
               .layout(InputLayout::fused_qkv, InputLayout::padded_token_stride, 3)
               .poison(props::Poison::huge)},
          {"batched_token_states", "batched rows without cu_seqlens, negative eigenvalues, per-token states",
           CaseBuilder({9, 9}, 1, 1, 16, 8, 107).batched().no_initial_state().beta_logits(true).token_states()},
          {"verify_table", "index-table verify, L = 4: accepted 1, L and between, a padding row, a -1 entry, GVA",
           CaseBuilder({4, 4, 4, 4}, 1, 2, 16, 8, 108)
               .verify_table(4, {1, 2, 3, 4, 5, 6, 7, 8, -1, -1, -1, -1, 9, -1, 10, 11}, {1, 4, 1, 3}, 13)},
          {"verify_table_strided_kv", "index-table verify on a column-major table, int64 counts, [K,V] states, "
                                      "ragged requests",
           CaseBuilder({4, 2, 4}, 1, 1, 16, 8, 109)
               .kv_layout()
               .verify_table(4, {7, -1, 3, 1, 2, 5, -1, -1, 8, 9, 10, 0}, {3, 2, 4}, 12, DType::i64),
           true},
          {"verify_table_one_token", "index-table verify with L = 1 on batched rows, a padding row",
           CaseBuilder({1, 1, 1}, 1, 1, 8, 8, 110).batched().verify_table(1, {2, -1, 0}, {1, 1, 1}, 4)},
          {"verify_scratch", "scratch verify, L = 4 in 6 scratch steps, a permuted row map, a padding row",
           CaseBuilder({4, 4, 4}, 1, 2, 8, 16, 111).verify_scratch(4, {3, -1, 0}, 5, {2, 0, 1}, 4, 6)},
          {"verify_scratch_identity_kv", "scratch verify, L = 1, an identity row map, [K,V] states",
           CaseBuilder({1, 1}, 1, 2, 8, 8, 112).kv_layout().verify_scratch(1, {1, 0}, 3, {0, 1}, 2, 1)},
      },
      {"view_in_bounds", "varlen_batch_one", "chunk_size", "state_pool_alignment", "state_indices_range"},
  };
  return suite;
}

}  // namespace kda::golden
