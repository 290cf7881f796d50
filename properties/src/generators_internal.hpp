#pragma once
// Shared between the generator sources; not part of kda::properties' interface.
#include <rapidcheck.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <vector>

#include "kda/properties/generators.hpp"

namespace kda::props::detail {

using i64 = std::int64_t;

// ---- primitive generators (gen_primitives.cpp): uniform whatever rapidcheck's size ----

rc::Gen<int> gen_index(int n);                            // [0, n), shrinks towards 0
rc::Gen<int> gen_weighted_index(std::vector<int> weights);  // i with odds weights[i], shrinks towards 0
rc::Gen<i64> gen_uniform(i64 lo, i64 hi);                 // [lo, hi], shrinks towards lo
rc::Gen<i64> gen_uniform(i64 lo, i64 hi, i64 target);     // [lo, hi], shrinks towards target
rc::Gen<bool> gen_bool(int percent_true);                 // shrinks towards false
rc::Gen<i64> gen_often_zero(int percent_zero, i64 hi);    // 0, else [1, hi]; shrinks towards 0
rc::Gen<std::uint64_t> gen_seed();                        // any 64-bit value; never shrinks

// ---- lengths (gen_lengths.cpp) ----

// What a packing may cost: at most `tokens` tokens and `sequences` sequences, and at most `work`
// units where each token costs per_token units and each sequence per_sequence units.
struct Budget {
  i64 tokens = 0, sequences = 1;
  i64 work = std::numeric_limits<i64>::max(), per_token = 0, per_sequence = 0;
};
// The longest prefix of `lengths` within the budget; the sequence that overflows it is clamped to
// what is left. At least one sequence stays (clamped to 0 tokens if need be).
std::vector<i64> fit_lengths(const std::vector<i64>& lengths, const Budget& budget);

// ---- what a kernel lets a generator draw (gen_allowed.cpp) ----

// Capabilities, profile and limits intersected, each list in shrink order (simplest first).
struct Allowed {
  GenLimits limits;
  Profile profile;
  std::vector<Mode> modes;
  bool varlen = true;
  std::vector<DType> input_dtypes, output_dtypes, state_dtypes;
  std::vector<i64> key_dims, value_dims;
  int first_key_dim = 0, first_value_dim = 0;  // draws start there (GenLimits::min_drawn_head_dim)
  std::vector<int> gva_ratios;  // HV / H, each <= max_heads
  std::vector<int> chunk_sizes;
  std::vector<StateLayout> layouts;
  std::vector<StateSource> sources;  // the verify forms (table, scratch) only where Mode::verify is allowed
  bool gate_in_kernel = true, l2norm = true, beta_logits = true, neg_eigval = true;
  bool always_gate = false, always_l2norm = false, always_beta_logits = false;  // Capabilities::always_*
  bool explicit_scale = true;  // Capabilities::explicit_scale
  bool chunk_states = true, token_states = true, strided = true;
};
Allowed allowed_for(const Kernel& kernel, const GenLimits& limits);  // throws std::invalid_argument

// What a base case must have so that a rule can be broken on it alone.
struct Needs {
  std::optional<Mode> mode{};
  std::optional<bool> verify{};  // true: a verify call (Mode::verify); false: never one; unset: either
  std::optional<bool> varlen{};
  std::vector<StateSource> sources{};  // empty: any
  std::optional<bool> final_state{}, chunk_states{}, token_states{};
  bool gate_in_kernel = false, A_log = false;
  int min_sequences = 1;
  i64 min_tokens = 0;
  i64 budget_key_dim = 0;  // > 0: size the token budget as if K were this (the break enlarges K)
  bool adversarial = false;  // draw mostly DataMix's adversarial mixes (property finite)
};
// The allowed state sources a base with these needs may use (final_state rules out a pool).
std::vector<StateSource> sources_for(const Allowed& allowed, const Needs& needs);
// Those of them a call in `mode` takes: the verify forms in verify mode, the others elsewhere.
std::vector<StateSource> sources_for(const Allowed& allowed, const Needs& needs, Mode mode);
// The allowed modes a base with these needs may be drawn in (each with a state source it takes).
std::vector<Mode> modes_for(const Allowed& allowed, const Needs& needs);
bool feasible(const Allowed& allowed, const Needs& needs);
// The needs of a call, not verify, with `sequences` sequences whose metadata can change at one geometry:
// varlen prefill (cu_seqlens) where the kernel takes it, else a pool (state indices); nullopt: neither.
std::optional<Needs> metadata_call(const Allowed& allowed, int sequences);

// ---- cases around an imported call (gen_around.cpp; GenLimits::around) ----

// The sizes drawn around the call: sequence lengths (one per sequence, up to twice the call's count),
// how many of them, and the query heads; each shrinks towards the call's value.
struct AroundDraw {
  std::vector<i64> lengths;
  i64 sequences = 0, heads = 0;
};
rc::Gen<AroundDraw> gen_around_draw(const GenLimits& limits);  // just(AroundDraw{}) without a call
// The Allowed lists narrowed to the call's choices (an empty list: the kernel cannot take the call).
void narrow_to_call(Allowed& allowed, const CaseSpec& call);
// The limits widened to afford the call (twice its sequences and tokens, its heads) and its head dims and
// GVA ratio as the only ones; the limits unchanged without a call.
GenLimits limits_around(const GenLimits& limits);
// A case assembled from the ordinary draws made to keep the call's choices and take the around draw's
// sizes: heads_around before the lengths are set (the budget depends on the heads), keep_call after them
// (before the pool is placed), keep_call_layout last.
void heads_around(ProblemSpec& spec, const AroundDraw& draw, const CaseSpec& call, const Needs& needs);
void keep_call(CaseSpec& spec, const AroundDraw& draw, const CaseSpec& call, const Needs& needs);
void keep_call_layout(CaseSpec& spec, const CaseSpec& call);

// ---- the case generator (gen_valid.cpp) ----

rc::Gen<CaseSpec> gen_case(const Allowed& allowed, const Needs& needs);

// ---- pool geometry (gen_pool.cpp) ----

struct PoolDraw {
  i64 extra_slots = 0;             // slots beyond N + 1 (slot 0 is left unused unless permuted)
  i64 stride_pad = 0;              // elements added to the compact slot stride
  i64 offset = 0;                  // base offset, elements
  std::uint64_t permutation = 0;   // 0: sequence n uses slot n + 1; else a seeded shuffle of all slots
  std::vector<i64> padding_rows;   // rows (mod N) whose index is -1
};
rc::Gen<PoolDraw> gen_pool_draw();
// Sets the spec's pool slots, slot stride, base offset and indices; `aligned` rounds the stride up to
// a multiple of 16 elements and the base to a multiple of 32 bytes, `compact` keeps the stride compact.
// `past_int32` (GenLimits::pool_past_int32) puts every slot the draw uses past element 2^31, above
// unused slots (first_slot_past_int32).
void place_pool(ProblemSpec& spec, const PoolDraw& draw, bool aligned, bool compact, bool past_int32 = false);
// The same geometry for `entries` live indices (a verify table has N x L); returns the slot order whose
// first `entries` slots the indices take (the others are spare).
std::vector<i64> place_pool_slots(ProblemSpec& spec, const PoolDraw& draw, bool aligned, bool compact, i64 entries,
                                  bool past_int32 = false);
// The first slot whose first element lies past INT32_MAX (slot x slot_stride > INT32_MAX).
i64 first_slot_past_int32(i64 slot_stride);
// A verify call's draws (gen_verify.cpp): L, the lengths' form, the accepted counts, the index table's
// layout and padding entries, the scratch buffer's extra rows and steps and its row map.
struct VerifyDraw {
  int length = 0;                  // index into kVerifyLengths: L = 1, 2 and 8 often
  bool ragged = false;             // table form: lengths 0..L per request (else exactly L each)
  std::vector<i64> accepted;       // one draw per request: a = 1, a = L or between (shrinks to 1)
  bool accepted_i64 = false;
  int table_layout = 0;            // TableLayout
  std::vector<i64> padding_entries;  // table: a -1 at (request, token); scratch: a -1 row map entry
  i64 extra_rows = 0, extra_steps = 0;
  std::uint64_t row_map = 0;       // 0: identity scratch row map; else a seeded shuffle of the rows
};
rc::Gen<VerifyDraw> gen_verify_draw();
i64 verify_length(const VerifyDraw& draw);  // L
// Sets a verify spec's L, accepted counts, pool (slots, stride, offset, index table or indices) and
// scratch buffer from the draws; the lengths are set already. `identity` forces an identity row map.
void place_verify(CaseSpec& spec, const VerifyDraw& verify, const PoolDraw& pool, bool aligned, bool compact,
                  bool identity, bool past_int32 = false);

// Changes K and V keeping the slot stride's padding; changes the state dtype keeping the base's
// byte alignment (for breaks that rebuild a base with other dims or dtypes).
void set_head_dims(ProblemSpec& spec, i64 K, i64 V);
void set_state_dtype(ProblemSpec& spec, DType dtype);

// ---- invalid cases (gen_invalid.cpp, rule_breaks.cpp) ----

// How to break one rule alone: a row of the table in rule_breaks.cpp. Adding a rule to the contract
// is its check, its upstream message and its row. `variant` picks one of a rule's ways to break.
struct RuleBreak {
  using NeedsFn = std::function<std::optional<Needs>(const Profile&)>;
  Rule rule;
  // What a base needs for the break to trip this rule alone under a profile that enforces it;
  // nullopt: the rule cannot be broken alone there. Default: any base.
  NeedsFn needs = [](const Profile&) { return std::optional<Needs>(Needs{}); };
  // At most one break (none for a rule never breakable). spec: changes what the tensors are built
  // from (sizes, dtypes, layout, lengths); the case is rebuilt, so every tensor stays consistent with
  // the change. problem: changes one tensor, view or option of the built problem.
  std::function<void(ProblemSpec&, std::uint64_t variant, const Profile&)> spec{};
  std::function<void(Problem&, std::uint64_t variant, const Profile&)> problem{};
};
// The rule's row; throws std::logic_error naming a rule that has none.
const RuleBreak& rule_break(Rule rule);
// What a base needs for `rule` to be broken alone under `profile`; nullopt: not breakable there.
std::optional<Needs> needs_for(Rule rule, const Profile& profile);

// ---- building (build_layout.cpp, build_data.cpp) ----

// q, k, v, g, beta and o replaced by fresh, zero-filled tensors laid out per the spec.
void apply_layouts(Problem& problem, const CaseSpec& spec);
// Every element of every buffer a floating-point tensor views (integer tensors aside) set to poison.
void poison_buffers(Problem& problem, Poison poison);
// Each q and k row divided by its L2 norm. Without the in-kernel l2norm, callers pass normalized q and
// k; N(0,1) keys (norm ~sqrt(K)) would make the delta rule's I - beta k k^T grow the state
// exponentially, and the fp64 reference would overflow.
void normalize_qk(Problem& problem);
void apply_gate_mix(Problem& problem, GateMix mix, std::uint64_t seed);
void apply_data_mix(Problem& problem, DataMix mix, std::uint64_t seed);  // build_data_mix.cpp
void apply_padding_pattern(Problem& problem);
// Verify: the index table re-laid out per spec.table_layout (its gaps name a spare slot), and every
// pool slot that is no live request's initial slot filled with poison: no output may depend on one.
void apply_table_layout(Problem& problem, const CaseSpec& spec);
void poison_unread_slots(Problem& problem, Poison poison);

}  // namespace kda::props::detail
