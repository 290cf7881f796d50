#pragma once
// A kernel called with a problem that breaks a contract rule, judged on what it did: a rejection (with
// any rule) is fine if it wrote nothing; a run is judged like a valid one wherever that still means
// something: no byte outside the region a call of that shape may write; where the fp64 reference still
// defines the problem (the broken rule is an implementation limit: alignment, a head-dim set, a dtype,
// a chunk size, ...) its values under the tolerance policy; elsewhere no NaN or Inf where it writes
// (poison read, outputs left unwritten), unless the call's own numbers leave the recurrence's domain
// (a NaN lower bound, say) or its metadata names a poisoned slot as an initial state.
#include <string>
#include <vector>

#include "kda/properties/catalogue.hpp"

namespace kda::props::detail {

struct UncheckedRun {
  RunOutcome outcome;
  std::string broken;                 // "state_indices_range (upstream: state_indices[0]=-2 is neither ...)"
  bool reference_defined = false;     // the fp64 reference judged the values
  std::vector<std::string> findings;  // what the kernel did wrong, each a paragraph; empty: nothing seen

  // "the kernel ran a problem that breaks <broken>, and <findings>" (empty when nothing was found).
  std::string failure() const;
};

// Whether the fp64 reference computes `problem` the way it computes a valid one: it passes every rule
// but the implementation limits (pool alignment, head-dim sets and the key head-dim maximum, chunk
// size, state layout and source support, fixed verify tokens, identity scratch rows, 32-bit index
// math), with floating-point activations and states and integer metadata of any width.
bool reference_defines(const Problem& problem);

// Runs the context's kernel on a copy of `problem`, which breaks `rule` of `profile`, and judges it.
UncheckedRun run_unchecked(CheckContext& context, const Problem& problem, Rule rule, const Profile& profile);

}  // namespace kda::props::detail
