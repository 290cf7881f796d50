#pragma once
// The property catalogue: each property is one named, documented check that runs against any
// kernel behind the Kernel interface. A property body draws its cases from the generators and
// fails through rapidcheck (RC_ASSERT / RC_FAIL), so a failure shrinks to a minimal case and
// replays from its reproduce string.
#include <functional>
#include <string>
#include <vector>

#include "kda/kernel.hpp"
#include "kda/properties/comparison.hpp"
#include "kda/properties/generators.hpp"

namespace kda::props {

// What every property runs against.
struct CheckContext {
  Kernel& kernel;  // under test
  Kernel& model;   // its precision-matched model: sets the tolerance (TolerancePolicy)
  GenLimits limits{};
  TolerancePolicy policy{};
  // Called with each case's problem before the kernel runs (the runner uses it to keep the shrunk
  // failing case); empty: nothing is kept.
  std::function<void(const Problem&)> on_case{};

  void note_case(const Problem& problem) const {
    if (on_case) on_case(problem);
  }
};

// What a property needs of a kernel beyond a valid case. A kernel that lacks it cannot take the
// property's cases; the runner reports the property skipped there, not failed.
struct KernelNeeds {
  bool pool = false;           // a state pool (pooled decode or prefill, or a verify form)
  bool prefill = false;        // prefill calls: sequences of several tokens
  bool initial_state = false;  // an initial state, dense or pooled
  bool both_layouts = false;   // [V,K] and [K,V] states
  bool verify = false;         // speculative-decoding verify calls (the index-table or scratch form)
  bool scratch = false;        // the scratch form of verify calls
  bool decode = false;         // single-token steps: decode calls with a state pool, or one-token table verifies
  bool plain = false;          // prefill or decode calls, not verify (the property's surgery keeps one index per sequence)
  bool metadata = false;       // metadata that can change at one geometry: varlen prefill calls (cu_seqlens) or a pool (indices)
  int sequences = 1;           // sequences in one call, at least
  bool unpromised_rule = false;  // a rule strict can break that the kernel's profile does not enforce
};

// Why `kernel`, with cases drawn under `limits`, cannot take the cases of a property with `needs`; empty
// when it can. Decided by the generators' own view of the kernel (capabilities, profile, limits).
// Throws std::invalid_argument where the kernel takes no valid case at all.
std::string inapplicable(const KernelNeeds& needs, const Kernel& kernel, const GenLimits& limits);
// The needs in words, comma-separated ("pool, prefill"); "-" for none.
std::string describe(const KernelNeeds& needs);

struct Property {
  std::string name;  // kebab-case, as on the command line: "matches-reference"
  std::string doc;   // one paragraph: what is checked and why
  KernelNeeds needs;
  std::function<void(CheckContext&)> body;  // one rapidcheck case
};

// Every property, in a fixed order.
const std::vector<Property>& catalogue();
const Property* find_property(std::string_view name);

}  // namespace kda::props
