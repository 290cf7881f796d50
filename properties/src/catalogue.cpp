#include "kda/properties/catalogue.hpp"

#include "kda/properties/property_bodies.hpp"

namespace kda::props {

const std::vector<Property>& catalogue() {
  static const std::vector<Property> all{
      {"matches-reference",
       "Outputs and final states (dense or in the pool), chunk and token states, and a verify call's state after every "
       "token (in the pool slot or scratch step it names) agree with the fp64 recurrent reference under the tolerance "
       "policy: rel-RMS <= alpha x the rel-RMS of the precision model of the kernel's arithmetic + the larger of the "
       "output dtype's and the compute precision's unit roundoff. NaN or Inf where the reference is finite always "
       "fails.",
       {}, check_matches_reference},
      {"untouched",
       "Every byte outside the region the call may write is bit-identical afterwards: inputs, gaps of strided views, "
       "pool slots no active index names (padding rows included), gaps between pool slots, guard bands. A verify call "
       "may write o and the slots its table entries name at its requests' tokens, or its scratch rows' steps: never "
       "the committed pool of the scratch form.",
       {}, check_untouched},
      {"finite",
       "Wherever the fp64 reference is finite, o and every state the call writes (final, chunk and token states, pool "
       "slots, scratch steps) are finite, on cases drawn mostly from the adversarial data mixes: repeated and "
       "near-collinear keys with gates near 0 and at their strongest, long memory, strong gate runs, large and tiny "
       "states. Reported apart from the tolerance, naming the first NaN or Inf of each tensor: a non-finite state "
       "poisons every later token of its slot.",
       {}, check_finite},
      {"rejects-invalid",
       "A problem that breaks exactly one rule of the kernel's profile is rejected with that rule's code, and "
       "nothing at all is written. A kernel that runs it instead is reported with the rule, its upstream message and "
       "what the run did (writes outside the region, NaN or Inf, wrong values where the reference defines the problem).",
       {}, check_rejects_invalid},
      {"unchecked-invalid",
       "A problem that breaks one rule the kernel's profile does not enforce (one strict enforces): the kernel may "
       "reject it (with any rule) or run it. If it runs it, it writes nothing outside the region a call of that shape "
       "may write; where the fp64 reference still defines the problem (an implementation limit such as alignment, a "
       "head-dim set, a dtype or a chunk size was broken) its values are within the tolerance policy, elsewhere it "
       "returns no NaN or Inf where it writes (unless the call's own numbers leave the recurrence's domain or its "
       "metadata names a poisoned slot as an initial state). An out-of-range index or accepted count names no "
       "writable slot.",
       {.unpromised_rule = true}, check_unchecked_invalid},
      {"padding-rows",
       "Sequences whose state index is -1 (filled with upstream's padding pattern: gate -1000, k = v = beta = 0) get "
       "zero output rows and leave their pool slot and every other byte untouched. Verify calls too: a request whose "
       "initial slot is -1 (a table row of -1 entries, or a -1 index in the scratch form) gets zero output and writes "
       "no slot and no scratch row.",
       {.pool = true}, check_padding_rows},
      {"causality",
       "Changing any input at token t of a sequence changes no output before t, and nothing in other sequences, "
       "bit for bit: a tolerance would hide the small non-causal errors seen in real kernels (FLA issue 1240).",
       {.prefill = true}, check_causality},
      {"packing",
       "A call with N >= 2 sequences (varlen, or one per batch row) equals one call per sequence with the same inputs "
       "and initial state: o, final states (dense or pooled), chunk and token states, within the unit roundoff of each "
       "tensor's dtype. Sequences must not leak into each other through the packing.",
       {.plain = true, .sequences = 2}, check_packing},
      {"split",
       "One sequence as two prefill calls, the first call's final state the second's initial state, equals one call; "
       "where the kernel decodes, so does a prefill followed by decode steps (one token each) against one longer "
       "prefill. Bound: alpha x the precision model's disagreement on the same split (chunks move, decode takes the "
       "recurrent path) + the unit roundoffs of the tensor's and the carried state's dtypes.",
       {.prefill = true, .initial_state = true}, check_split},
      {"layout",
       "The same case with [V,K] and with [K,V] states (initial states transposed, pool geometry kept) gives the same "
       "o and transposed final, chunk and token states, within the unit roundoff of each tensor's dtype.",
       {.both_layouts = true, .plain = true}, check_layout},
      {"gva-expansion",
       "HV value heads reading H < HV q/k heads (value head hv reads q/k head hv / (HV/H)) equal the same problem "
       "with HV q/k heads, each q/k head repeated HV/H times, within the unit roundoff of each tensor's dtype.",
       {.plain = true}, check_gva_expansion},
      {"serving-loop",
       "A stateful run over a state pool (rapidcheck state commands): sequences are admitted into free slots, "
       "prefilled, decoded in batches with -1 padding rows mixed in, verified where the kernel takes a verify form (L "
       "draft tokens from each committed state, some accepted and the rest rolled back: the table form's accepted "
       "slot becomes the committed one, the scratch form's accepted step is copied into it on the host), freed and "
       "their slots reused. After every call "
       "the kernel's outputs and pool track the precision model and the fp64 recurrence (each on a pool of its own) "
       "under the tolerance policy, and every pool byte the call does not name stays bit-identical. Every call is "
       "made with persistent metadata, as an engine replaying CUDA graphs makes it: an adapter keeps one buffer per "
       "metadata tensor (cu_seqlens, state_indices, num_accepted, scratch_indices) for the run and refills it in "
       "place, so a kernel caching derived metadata by the tensor's identity serves it stale.",
       {.pool = true, .plain = true}, check_serving_loop},
      {"metadata-reuse",
       "Two calls of the same geometry in one serving run, the second's metadata buffers (cu_seqlens, or the state "
       "indices where the kernel takes no varlen calls) refilled in place with other values (the sequence lengths "
       "rotated, the indices rotated): the second call matches the reference of its own metadata, like "
       "matches-reference. A library that caches what it derives from metadata (chunk maps, sequence offsets) by "
       "the tensor's identity serves the first call's; serving-loop covers pools and verify calls, this property "
       "prefill calls of every state source.",
       {.plain = true, .metadata = true, .sequences = 2}, check_metadata_reuse},
      {"verify-commit",
       "Speculative decoding: verifying L draft tokens and taking the state after a accepted tokens (where the call "
       "stores it: the pool slot state_indices[n, a-1] of the table form, scratch_states[row, a-1] of the scratch "
       "form) equals a single-token decode steps from the same committed state, for every a, and so do the outputs "
       "o of those tokens. Bound: alpha x the precision model's verify-vs-decode disagreement + the unit roundoffs of "
       "the tensor's and the state's dtypes (each decode step rounds the carried state).",
       {.verify = true, .decode = true}, check_verify_commit},
      {"verify-keeps-committed",
       "A scratch-form verify reads the committed pool and writes the state after every token to the scratch buffer: "
       "every byte of the pool's buffer (slots, gaps, guard bands) is bit-identical afterwards.",
       {.verify = true, .scratch = true}, check_verify_keeps_committed},
      {"verify-initial-slot",
       "A verify request starts from exactly the slot its accepted count (table form) or index (scratch form) names: "
       "every other pool slot holds poison in the drawn case, and rerunning with those slots refilled with finite "
       "values gives bit-identical o and stored states.",
       {.verify = true}, check_verify_initial_slot},
  };
  return all;
}

const Property* find_property(std::string_view name) {
  for (const auto& p : catalogue())
    if (p.name == name) return &p;
  return nullptr;
}

}  // namespace kda::props
