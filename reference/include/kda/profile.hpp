#pragma once
// The calling contract's vocabulary: one Rule per precondition of a KDA call, and Profiles, which
// say which rules a kernel enforces and with which parameters. Kernels disagree on their contracts
// (FLA, SGLang and FlashInfer each check a different subset), so a contract is a profile, not one
// global rule set. Profiles are data (profiles.cpp); the checks are code (contract.cpp).
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kda/dtype.hpp"
#include "kda/problem.hpp"
#include "kda/problem_factory.hpp"  // StateSource

namespace kda {

// Every rule, once: the enum, name_of() and all_rules() are generated from this list so they cannot
// drift apart (the contract test checks that each rule has a test case).
#define KDA_CONTRACT_RULES(X)                                                                   \
  X(problem_sizes)                /* B, T, N >= 0 and H, HV, K, V >= 1 */                       \
  X(view_in_bounds)               /* every view well-formed and inside its buffer */            \
  X(varlen_batch_one)             /* cu_seqlens given: B == 1 */                                \
  X(cu_seqlens_dtype)             /* int32 or int64 */                                          \
  X(cu_seqlens_shape)             /* 1-D with N + 1 entries */                                  \
  X(cu_seqlens_start)             /* first entry 0 */                                           \
  X(cu_seqlens_monotonic)         /* non-decreasing */                                          \
  X(cu_seqlens_end)               /* last entry T */                                            \
  X(batch_sequence_count)         /* no cu_seqlens: one sequence per batch row, N == B */       \
  X(decode_one_token)             /* decode: every sequence has exactly one token */            \
  X(qk_same_shape)                /* k has q's shape */                                         \
  X(hv_divisible)                 /* HV % H == 0 (grouped value attention) */                   \
  X(q_shape)                      /* q [B,T,H,K] */                                             \
  X(v_shape)                      /* v [B,T,HV,V] */                                            \
  X(g_shape)                      /* g [B,T,HV,K] */                                            \
  X(beta_shape)                   /* beta [B,T,HV] */                                           \
  X(o_shape)                      /* o [B,T,HV,V] */                                            \
  X(key_head_dim_max)             /* K <= profile maximum */                                    \
  X(head_dims_supported)          /* K, V in the profile's sets */                              \
  X(input_dtype)                  /* q, k, v, g, beta in the profile's dtypes */                \
  X(output_dtype)                 /* o in the profile's dtypes */                               \
  X(gate_params_dtype)            /* A_log, dt_bias floating point */                           \
  X(A_log_size)                   /* A_log has HV elements */                                   \
  X(dt_bias_size)                 /* dt_bias has HV*K elements */                               \
  X(scale_positive)               /* an explicit scale is finite and > 0 */                     \
  X(chunk_size)                   /* 32 or 64 */                                                \
  X(lower_bound_range)            /* a lower bound lies in [-5, 0) */                           \
  X(lower_bound_required)         /* safe gate in kernel needs a lower bound */                 \
  X(softplus_needs_A_log)         /* softplus gate in kernel needs A_log */                     \
  X(neg_eigval_needs_beta_logits) /* allow_neg_eigval needs beta from logits */                 \
  X(state_source)                 /* one state source, whole; verify mode <=> a verify form */  \
  X(state_source_supported)       /* the state source is one the profile takes */               \
  X(state_dtype)                  /* every state tensor in the profile's dtypes */              \
  X(state_layout)                 /* the profile's required [V,K] / [K,V] layout */             \
  X(initial_state_count)          /* one initial state (or state index) per sequence */         \
  X(initial_state_shape)          /* initial_state [N,HV,V,K] or [N,HV,K,V] */                  \
  X(final_state_shape)            /* final_state like initial_state */                          \
  X(chunk_states_shape)           /* chunk_states [total chunks,HV,..] */                       \
  X(token_states_shape)           /* token_states [B,T,HV,..] */                                \
  X(state_pool_rank)              /* pool is 4-D */                                             \
  X(state_pool_shape)             /* pool dims 1..3 are (HV, state head shape) */               \
  X(state_pool_inner_strides)     /* pool compact inside a slot */                              \
  X(state_pool_alignment)         /* slot stride % 16 elements, base offset % 32 bytes */       \
  X(state_indices_dtype)          /* int32 */                                                   \
  X(state_indices_shape)          /* 1-D */                                                     \
  X(state_indices_range)          /* each index a pool slot or -1 (padding) */                  \
  X(state_indices_distinct)       /* active indices distinct */                                 \
  X(verify_tokens)                /* verify: L >= 1 and at most L tokens per request */         \
  X(verify_fixed_tokens)          /* verify: exactly L tokens per request (fixed form) */       \
  X(accepted_dtype)               /* num_accepted int32 or int64 */                             \
  X(accepted_shape)               /* num_accepted [N] */                                        \
  X(accepted_range)               /* each accepted count in [1, L] */                           \
  X(scratch_states_shape)         /* scratch_states [S, L', HV, ..] */                          \
  X(scratch_steps)                /* scratch_states has L' >= L steps */                        \
  X(scratch_indices_dtype)        /* int32 */                                                   \
  X(scratch_indices_shape)        /* [N] */                                                     \
  X(scratch_indices_range)        /* each a scratch row in [0, S) or -1 */                      \
  X(scratch_indices_distinct)     /* active scratch rows distinct */                            \
  X(scratch_indices_identity)     /* scratch_indices = arange(N) (FlashInfer) */                \
  X(output_overlap)               /* no output shares bytes with another tensor */              \
  X(output_self_overlap)          /* no output writes one element through two indices */        \
  X(index_overflow_32bit)         /* element indices fit 32-bit index math */

enum class Rule : std::uint16_t {
#define KDA_RULE_ENUMERATOR(rule) rule,
  KDA_CONTRACT_RULES(KDA_RULE_ENUMERATOR)
#undef KDA_RULE_ENUMERATOR
};

constexpr std::string_view name_of(Rule r) {
  switch (r) {
#define KDA_RULE_NAME(rule) \
  case Rule::rule: return #rule;
    KDA_CONTRACT_RULES(KDA_RULE_NAME)
#undef KDA_RULE_NAME
  }
  return "?";
}

inline constexpr std::array kAllRules = {
#define KDA_RULE_VALUE(rule) Rule::rule,
    KDA_CONTRACT_RULES(KDA_RULE_VALUE)
#undef KDA_RULE_VALUE
};
constexpr std::span<const Rule> all_rules() { return kAllRules; }

// Upstream phrases the varlen batch error two ways; a profile picks the one its kernel raises.
enum class BatchWording : std::uint8_t {
  fla,     // "The batch size is expected to be 1 rather than {B} when using `cu_seqlens`.Please ..."
  helion,  // "varlen KDA requires batch size 1"
};

struct Profile {
  std::string name;
  std::string describes;    // the kernel and the upstream source the profile is taken from
  std::vector<Rule> rules;  // the rules the kernel enforces; validate reports no others

  // Parameters of the enforced rules.
  BatchWording batch_wording = BatchWording::fla;    // varlen_batch_one
  std::int64_t max_key_head_dim = 256;               // key_head_dim_max
  std::vector<std::int64_t> key_head_dims;           // head_dims_supported: allowed K (empty: any)
  std::vector<std::int64_t> value_head_dims;         // head_dims_supported: allowed V (empty: any)
  std::vector<DType> input_dtypes;                   // input_dtype
  std::vector<DType> output_dtypes;                  // output_dtype
  std::vector<DType> state_dtypes;                   // state_dtype
  std::optional<StateLayout> state_layout;           // state_layout (nullopt: either)
  std::vector<StateSource> state_sources;            // state_source_supported

  bool enforces(Rule r) const;
};

const Profile& profile_strict();  // every rule, most demanding parameters: the project's own kernels
const Profile* find_profile(std::string_view name);  // nullptr when unknown
std::vector<std::string_view> profile_names();

}  // namespace kda
