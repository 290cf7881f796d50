#pragma once
// Problem surgery: variants of a valid Problem that a correct kernel must answer consistently with
// the original (the invariance properties). Each helper returns a new problem with buffers of its
// own; the original is only read. Whether a variant is still within a kernel's capabilities and
// profile is for the caller to check.
#include <cstdint>
#include <optional>

#include "kda/kernel.hpp"  // state_source_of

namespace kda::props {

// Which tokens of which sequence become a problem of their own, and how it holds its states.
struct Cut {
  std::int64_t sequence = 0;
  std::int64_t first = 0;    // first token taken, counted from the sequence's start
  std::int64_t length = -1;  // tokens taken; -1: up to the sequence's end
  std::optional<Mode> mode;  // unset: the original's
  // Where the cut's initial state lives; unset: the original's kind (none, dense or pool).
  std::optional<StateSource> source;
  std::optional<DType> state_dtype;  // unset: the original's state tensors' dtype (f32 if it has none)
  bool final_state = false;  // add a dense final_state output where the original has none (not with a pool)
  bool chunk_states = true;  // keep the original's chunk_states output, if any (false: leave it out)
};

// The cut as a one-sequence problem with compact tensors: the same options, dtypes, gate parameters,
// varlen-ness (cu_seqlens dtype included) and state outputs (chunk and token states) as the original,
// and the sequence's initial state (zeros when the original has none). A pool becomes a fresh one-slot
// pool that meets the strictest stride contract (slot stride a multiple of 16 elements, 32-byte base)
// with index 0, or -1 for a padding row. A verify call's request cut (as a decode or prefill call with
// a pool) starts from the slot its accepted count names. Cut as an index-table verify (source table),
// the request gets a pool of L = length slots, table row 0..L-1 and accepted count 1: it starts from
// slot 0 and stores the state after token t in slot t.
Problem extract_sequence(const Problem& problem, const Cut& cut);

// Copies `from`'s final state of sequence 0 (its dense final_state or the pool slot its index names)
// into `to`'s initial state of sequence 0 (dense or pool slot), converting to `to`'s state dtype: the
// state carried from one call into the next. Both problems need the same heads, dims and layout.
void carry_state(const Problem& from, Problem& to);

// The same problem with the other state layout: initial states (every pool slot, at the same slot
// stride and base offset) transposed, state outputs reallocated in the new layout.
Problem transpose_state_layout(const Problem& problem);

// Grouped value attention undone: H' = HV q/k heads, head hv holding a copy of q/k head hv / (HV / H).
Problem expand_gva(const Problem& problem);

}  // namespace kda::props
