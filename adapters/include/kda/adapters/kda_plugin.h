/* kda_plugin.h: the C ABI of a kda-oracle kernel plugin, version 3.
 *
 * A plugin is a shared library that exports one function,
 *
 *     const kda_plugin* kda_plugin_descriptor(void);
 *
 * returning a descriptor with static storage duration: what the kernel is called, what it can
 * compute (its capabilities), which calling contract it follows (a kda-oracle profile) and the
 * function that runs one KDA call. `kda-oracle check --kernel plugin:PATH.so` loads it and runs the
 * property catalogue against it.
 *
 * The header is plain C (C99 and later, and C++): no C++ types, no allocation across the boundary.
 * Every tensor of a call is passed as a pointer into kda-oracle's own guard-banded buffers with its
 * shape and strides, so a plugin that writes outside its views or reads the poison kda-oracle puts in
 * every gap is caught. A plugin declaring KDA_MEMORY_CUDA gets device pointers: kda-oracle stages
 * every buffer whole on the GPU between guard bands and checks them after the call. A plugin runs in
 * kda-oracle's process: a crash takes kda-oracle down with it (use the exec adapter of
 * adapters/README.md for isolation).
 *
 * Versioning: KDA_PLUGIN_ABI_VERSION changes whenever any struct or enum below changes. abi_version is
 * the first member of the descriptor and stays there in every version, so kda-oracle can refuse a
 * plugin built against another version before reading anything else. Versions only append: enum
 * values and struct members are added at the end, so the prefix an older plugin knows is unchanged.
 * kda-oracle loads plugins of versions 1, 2 and 3:
 *   1  prefill and decode. A version-1 plugin is never sent a verify call (verify bits in its
 *      descriptor are ignored) and gets calls whose abi_version is 1; it reads only their version-1
 *      prefix (everything before L).
 *   2  adds speculative verify: KDA_MODE_VERIFY, KDA_STATE_TABLE, KDA_STATE_SCRATCH and the members
 *      of kda_call from L on.
 *   3  adds kda_plugin.arithmetic (the arithmetic the kernel computes in, which sets the precision
 *      model that judges it); calls are laid out as in version 2. Older plugins are judged as fp32.
 */
#ifndef KDA_ADAPTERS_KDA_PLUGIN_H
#define KDA_ADAPTERS_KDA_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KDA_PLUGIN_ABI_VERSION 3u

/* Tensors have at most this many dimensions (token_states [B,T,HV,a,b] has five). */
#define KDA_MAX_RANK 5

/* Element types; the same order as kda::DType. */
typedef enum kda_dtype {
  KDA_BF16 = 0, /* bfloat16, the upper half of an IEEE binary32 */
  KDA_F16 = 1,  /* IEEE binary16 */
  KDA_F32 = 2,
  KDA_F64 = 3,
  KDA_I32 = 4,
  KDA_I64 = 5
} kda_dtype;

/* Verify (version 2): a speculative-decoding target verify, one request per sequence of at most L
 * draft tokens run from its committed state, the state after every token kept (kda_call below). */
typedef enum kda_mode { KDA_MODE_PREFILL = 0, KDA_MODE_DECODE = 1, KDA_MODE_VERIFY = 2 } kda_mode;

/* How one value head's state is stored: [V,K] (K contiguous, SGLang/vLLM/FlashInfer pools) or [K,V]
 * (FLA's default). */
typedef enum kda_state_layout { KDA_LAYOUT_VK = 0, KDA_LAYOUT_KV = 1 } kda_state_layout;

/* Where a call's initial states come from: zeros, a dense initial_state, or a pool with indices; for a
 * verify call (version 2) a pool through an [N,L] index table with accepted counts (TABLE), or a pool
 * that is only read with a scratch buffer for the states after every token (SCRATCH). */
typedef enum kda_state_source {
  KDA_STATE_NONE = 0,
  KDA_STATE_DENSE = 1,
  KDA_STATE_POOL = 2,
  KDA_STATE_TABLE = 3,
  KDA_STATE_SCRATCH = 4
} kda_state_source;

/* Where the data pointers of a call point (kda_plugin.memory: where the plugin wants them). */
typedef enum kda_memory { KDA_MEMORY_HOST = 0, KDA_MEMORY_CUDA = 1 } kda_memory;

/* The arithmetic a kernel computes in (version 3; kda::Arithmetic): it is judged against the precision
 * model with the same rounding points, so a kernel that declares more precision than it has fails. */
typedef enum kda_arithmetic {
  KDA_ARITHMETIC_FP32 = 0,          /* fp32 storage and arithmetic throughout */
  KDA_ARITHMETIC_TF32 = 1,          /* matmul operands rounded to tf32; fp32 accumulation and storage */
  KDA_ARITHMETIC_BF16_OPERANDS = 2, /* matmul operands and stored intermediates in bf16; fp32 accumulation */
  KDA_ARITHMETIC_F16_OPERANDS = 3   /* the same in fp16 */
} kda_arithmetic;

/* What run() returns. */
typedef enum kda_status {
  KDA_STATUS_OK = 0,       /* every output written */
  KDA_STATUS_REJECTED = 1, /* the call breaks the contract; nothing written; message names the rules */
  KDA_STATUS_FAILED = 2    /* the kernel could not run (a launch error, out of memory, ...); message says why */
} kda_status;

/* Capability bitmasks: bit (1u << value) set for every supported value of the enum. */
#define KDA_BIT(value) (1u << (unsigned)(value))

/* Capability flags (kda_plugin.flags). */
#define KDA_CAP_VARLEN 0x01u           /* takes cu_seqlens (varlen, B = 1) */
#define KDA_CAP_GATE_IN_KERNEL 0x02u   /* computes the gate from raw g with A_log / dt_bias */
#define KDA_CAP_L2NORM_IN_KERNEL 0x04u /* l2-normalises q and k itself */
#define KDA_CAP_BETA_FROM_LOGITS 0x08u /* computes beta = sigmoid(logits) itself */
#define KDA_CAP_CHUNK_STATES 0x10u     /* writes chunk-start states (chunk_states) */
#define KDA_CAP_TOKEN_STATES 0x20u     /* writes the state after every token (token_states) */
#define KDA_CAP_STRIDED_INPUTS 0x40u   /* inputs may be any strided view (else: contiguous only) */
/* The plugin checks its own calling contract and is called with invalid problems too, which it must
 * reject (naming the rule) without writing anything. Without this flag kda-oracle checks the declared
 * profile itself and calls run() only with valid problems. Either way kda-oracle never passes a view
 * that leaves its buffer (rule view_in_bounds): a C call carries no buffer extents to check it with. */
#define KDA_CAP_CHECKS_CONTRACT 0x80u

/* One tensor of a call. Element [i0, i1, ...] is at
 *     (element type*)data + i0 * strides[0] + i1 * strides[1] + ...
 * Strides are in elements, may be padded (gaps between rows), permuted, zero (broadcast) or negative.
 * Gaps hold poison (NaN or 1e30) and must be neither read nor written. */
typedef struct kda_tensor {
  int present;                     /* 0: the tensor is absent (an optional input or output not asked for) */
  int dtype;                       /* a kda_dtype */
  int rank;                        /* number of dimensions, <= KDA_MAX_RANK */
  void* data;                      /* the element at index [0, ..., 0]; NULL when absent */
  int64_t shape[KDA_MAX_RANK];     /* sizes; entries past rank are 0 */
  int64_t strides[KDA_MAX_RANK];   /* in elements; entries past rank are 0 */
} kda_tensor;

/* One KDA call (kda-facts §1; kda::Problem in reference/include/kda/problem.hpp). Shapes:
 *   q, k [B,T,H,K]   v [B,T,HV,V]   g [B,T,HV,K]   beta [B,T,HV]   o [B,T,HV,V]
 *   A_log [HV]   dt_bias [HV*K] (viewed [HV,K])   cu_seqlens [N+1] i32 or i64 (varlen: B = 1)
 *   a state per value head [V,K] (KDA_LAYOUT_VK) or [K,V] (KDA_LAYOUT_KV), called [a,b] below
 *   initial_state, final_state [N,HV,a,b]   state_pool [slots,HV,a,b] + state_indices i32 [N]
 *   chunk_states [chunks of all sequences,HV,a,b]   token_states [B,T,HV,a,b]
 * Sequence n covers tokens cu_seqlens[n] .. cu_seqlens[n+1]-1 of row 0 (varlen), else row n, tokens
 * 0..T-1. Its initial state is initial_state[n], or state_pool[state_indices[n]] (index -1: a padding
 * row: its output rows are zero and the pool is left alone), or zero. With a pool the final states
 * are written back into the pool in place; final_state is then absent.
 *
 * A verify call (mode KDA_MODE_VERIFY, version 2) has N requests of L = 1 + num_spec tokens at most:
 * request n is sequence n above (length(n) <= L tokens: cu_seqlens with varlen, else B = N rows of
 * T <= L tokens), computed like a prefill of its tokens from one pool slot, with o as for any call.
 * final_state, chunk_states and token_states are absent; the states go where the form says:
 *   table form (num_accepted present): state_indices i32 [N,L], any strides; num_accepted i32 or
 *     i64 [N], each in [1, L]. The initial state is slot state_indices[n, num_accepted[n] - 1]; the
 *     state after token t (0 <= t < length(n)) is written to slot state_indices[n, t], in place (the
 *     initial slot included: its state is read before it is overwritten). An entry -1 names no
 *     slot: the state after that token is written nowhere. An initial slot of -1 makes request n a
 *     padding row: its output rows are zero and nothing of the pool is read or written for it.
 *   scratch form (scratch_states present): state_indices i32 [N] as for a pool, but the pool is only
 *     read: not one byte of it is written. scratch_indices i32 [N] maps request n to a row of
 *     scratch_states [S, L', HV, a, b] (L' >= L steps); the state after token t is written to
 *     scratch_states[scratch_indices[n], t]. A row of -1 stores nothing; an initial slot
 *     state_indices[n] of -1 makes request n a padding row (zero output, nothing written).
 * Every other pool slot, scratch row and step is left alone. Entries are distinct unless the
 * declared profile says otherwise, and the state source (TABLE or SCRATCH) is one the plugin
 * declares in state_sources. */
typedef struct kda_call {
  uint32_t abi_version; /* KDA_PLUGIN_ABI_VERSION of the caller */
  int mode;             /* a kda_mode; decode: every sequence has exactly one token */
  int64_t B, T, N, H, HV, K, V;

  /* Options, in the order they apply. */
  int l2norm_qk;        /* q, k <- x / sqrt(sum(x^2) + 1e-6) per head, computed in fp32 */
  int has_scale;        /* 0: scale = K^-0.5 */
  double scale;         /* multiplied into q after the l2norm, when has_scale */
  int beta_from_logits; /* beta <- sigmoid(beta), x2 when allow_neg_eigval */
  int allow_neg_eigval;
  int gate_in_kernel;   /* g holds raw activations x; with x' = x + dt_bias[hv,:] (0 without dt_bias) and
                           A = exp(A_log[hv]) (1 without A_log): g = lower_bound * sigmoid(A * x') when
                           has_lower_bound, else g = -A * softplus(x') (softplus(y) = y > 20 ? y : log1p(exp(y))) */
  int has_lower_bound;
  double lower_bound;
  int safe_gate;        /* FLA's bounded-exponent chunked path; needs a lower bound */
  int chunk_size;       /* 32 or 64: the blocks chunk_states are recorded at */
  int state_layout;     /* a kda_state_layout */

  /* Inputs. Present: q, k, v, g, beta always; the others when the call uses them. */
  kda_tensor cu_seqlens, q, k, v, g, beta, A_log, dt_bias, initial_state, state_pool, state_indices;
  /* Outputs (state_pool above is both). o always; the others when asked for. */
  kda_tensor o, final_state, chunk_states, token_states;

  /* Where the data pointers point. KDA_MEMORY_HOST: host memory (device and stream are 0/NULL).
   * KDA_MEMORY_CUDA: memory of CUDA device `device`; run on `stream` (a cudaStream_t) and return
   * after the work is enqueued or done; kda-oracle synchronises the stream before reading results. */
  int memory;
  int device;
  void* stream;

  /* Version 2 (speculative verify, above). A version-1 plugin does not see these members. */
  int64_t L;                    /* verify: tokens per request at most, 1 + num_spec; 0 otherwise */
  kda_tensor num_accepted;      /* table form: accepted counts i32 or i64 [N]; else absent */
  kda_tensor scratch_indices;   /* scratch form: row map i32 [N] into scratch_states (-1: none); else absent */
  kda_tensor scratch_states;    /* scratch form: output [S, L', HV, a, b]; else absent */
} kda_call;

/* Runs one call. Returns a kda_status. `message` (message_size bytes, zeroed by the caller) receives a
 * NUL-terminated text: for KDA_STATUS_REJECTED one line per violated rule, "<rule>: <message>", where
 * <rule> is a kda-oracle contract rule name (kda::name_of(kda::Rule), e.g. "state_pool_alignment") and
 * <message> the kernel's own error text; for KDA_STATUS_FAILED what went wrong; unused for
 * KDA_STATUS_OK. A rejection writes nothing. May be called many times, from one thread at a time. */
typedef int (*kda_run_fn)(const kda_call* call, char* message, size_t message_size);

/* What the plugin is. Array members point to static storage; a NULL array with count 0 means "any". */
typedef struct kda_plugin {
  uint32_t abi_version; /* KDA_PLUGIN_ABI_VERSION the plugin was built against; always the first member */
  const char* name;     /* shown in reports, e.g. "my-kda-loop" */
  const char* profile;  /* the contract followed: a name of kda::profile_names(), e.g. "strict",
                           "fla_chunk" or "sglang_flashinfer_verify" */

  /* Capabilities: cases outside them are never generated (that is not a failure of the kernel). */
  uint32_t modes;          /* KDA_BIT(kda_mode) for each supported mode (verify: with TABLE and/or
                              SCRATCH in state_sources) */
  uint32_t input_dtypes;   /* KDA_BIT(kda_dtype) for q, k, v, g, beta */
  uint32_t output_dtypes;  /* KDA_BIT(kda_dtype) for o */
  uint32_t state_dtypes;   /* KDA_BIT(kda_dtype) for initial_state, state_pool, final_state,
                              scratch_states */
  uint32_t layouts;        /* KDA_BIT(kda_state_layout) */
  uint32_t state_sources;  /* KDA_BIT(kda_state_source); TABLE and SCRATCH need version 2 */
  const int64_t* key_head_dims; /* the K it takes; NULL with count 0: any K up to max_head_dim */
  size_t key_head_dim_count;
  const int64_t* value_head_dims; /* the V it takes; NULL with count 0: any V up to max_head_dim */
  size_t value_head_dim_count;
  int64_t max_head_dim;
  const int* chunk_sizes;  /* the chunk sizes it takes (prefill); NULL with count 0: 32 and 64 */
  size_t chunk_size_count;
  uint32_t flags;          /* KDA_CAP_* */

  int memory;              /* the kda_memory its pointers must be in: KDA_MEMORY_CUDA makes kda-oracle
                              allocate and stage every buffer on the device (refused without CUDA) */
  kda_run_fn run;

  /* Version 3. A version-1 or -2 descriptor ends before this member: it is fp32. */
  int arithmetic;          /* a kda_arithmetic */
} kda_plugin;

#if defined(_WIN32)
#define KDA_PLUGIN_EXPORT __declspec(dllexport)
#else
#define KDA_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

/* The one symbol a plugin exports (defined by the plugin; declared here so that a C++ definition gets
 * C linkage). kda-oracle looks it up by name with dlsym. */
KDA_PLUGIN_EXPORT const kda_plugin* kda_plugin_descriptor(void);
#define KDA_PLUGIN_DESCRIPTOR_SYMBOL "kda_plugin_descriptor"
typedef const kda_plugin* (*kda_plugin_descriptor_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* KDA_ADAPTERS_KDA_PLUGIN_H */
