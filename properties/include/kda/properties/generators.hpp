#pragma once
// rapidcheck generators for KDA test cases. Each generator draws a CaseSpec (a plain value) that
// shrinks towards the simplest case still failing: fewer and shorter sequences, contiguous layouts,
// no pool, realistic gates; build_case() turns it into a Problem. Choices are drawn independently
// and combined so that every combination is valid by construction (no filtering, no discards).
#include <rapidcheck.h>

#include <iosfwd>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kda/kernel.hpp"
#include "kda/properties/case_spec.hpp"

namespace kda::props {

// Limits of what a generator may draw; `size` (rapidcheck's 0..100) scales lengths within them.
// limits_for(Scale) below gives the limits of each `kda-oracle check --scale`.
struct GenLimits {
  int max_sequences = 64;
  std::int64_t max_tokens = 600;           // all sequences together
  std::vector<std::int64_t> head_dims{16, 32, 60, 64, 100, 128};  // K and V, ascending (shrinks to the first)
  // Head dims are drawn from this one up; shrinking still reaches the smaller ones of head_dims, so a
  // failure at realistic head dims shrinks to a small case.
  std::int64_t min_drawn_head_dim = 0;
  int max_heads = 4;                       // H and HV
  std::vector<int> gva_ratios{1, 2, 4};    // HV / H (those up to max_heads), shrinks to the first
  // Decode calls: in half of them the batch is sized so that N x HV lies just below, at or just above
  // one of these (N = (e-1)/HV, e/HV or e/HV + 1; with HV = 1 exactly e-1, e, e+1), where kernels switch
  // launch routes; only edges the other limits afford (N above max_sequences or the work budget is
  // clamped to it). Empty: no such batches.
  std::vector<std::int64_t> decode_batch_edges{};
  // Pools whose named slots all lie past element 2^31 (slot x slot stride overflows int32 index math;
  // the contract takes a pool's slot stride as 64-bit, so every profile accepts them). The slots below
  // hold poison and no draw of data: building such a case costs a few GiB, not billions of draws.
  bool pool_past_int32 = false;
  // Bounds a case's cost (building it and running the fp64 reference), in elements of HV x K x V
  // states: a token counts once, each state tensor (initial, pool slot, final, chunk or token state)
  // eight times. Larger heads get fewer tokens and sequences: K = V = 64, HV = 2 affords 128 tokens
  // without states, or 8 sequences with dense initial and final states; K = V = 128, HV = 4 affords
  // 16 tokens, or two state tensors. Raise it for slower, larger cases.
  std::int64_t max_work = std::int64_t{1} << 20;
  // Set: every case is drawn around this call (an imported one, seed_spec()): its mode, options, dtypes,
  // head dims, GVA ratio, state source and outputs, layouts and pool padding kept, the data redrawn, the
  // sequence lengths, batch and heads varied (at most twice the call's sequences, at most its heads),
  // shrinking towards the call's own geometry. Kernel needs a property imposes still win.
  std::shared_ptr<const CaseSpec> around;
};

// A call as the seed of GenLimits::around: its geometry, options, dtypes and state source, and the
// InputLayout nearest to its q's and o's strides (`note` says when the strides matched none exactly).
// Throws std::invalid_argument for a call that is not rank-4 [B,T,H,K] activations.
CaseSpec seed_spec(const Problem& call, std::string* note = nullptr);

// How large `kda-oracle check` draws its cases:
//   small      GenLimits{}: quick cases that reach every edge of the contract (the default);
//   realistic  model shapes: head dims 64/128/256, H and HV up to 64 (GVA ratios up to 8), up to 16k
//              tokens and 256 sequences, decode batches with N x HV at 127/128/129, 255/256/257, ...;
//   stress     realistic plus pools addressed past element 2^31 (pool_past_int32).
enum class Scale : std::uint8_t { small, realistic, stress };
std::string_view name_of(Scale scale);
Scale parse_scale(std::string_view name);  // "small", "realistic", "stress"; std::invalid_argument otherwise
GenLimits limits_for(Scale scale);

// Varlen packings: 1..max_sequences lengths, drawn so that 0, 1, 15, 16, 17, 63, 64, 65 and long
// tails (up to max_tokens) all appear; few sequences are likelier than many, and size scales both
// the count and the lengths (size 0: one sequence of at most 8 tokens). The total never exceeds
// max_tokens. Shrinks by removing sequences and by shrinking each length towards those edges and 0,
// so a failure at [0, 65] shrinks to about [0, 65] rather than to many short sequences.
rc::Gen<std::vector<std::int64_t>> gen_lengths(const GenLimits& limits);

// A valid case the kernel supports (Capabilities::unsupported(build_case(spec)) is empty) and its
// profile accepts. Covers: GVA, head dims, dtypes, both layouts, every state source, padded and
// offset pools (legal multiples of 16 / 32-byte bases where the profile demands them, misaligned
// ones where it does not), permuted indices with -1 rows, each gate form and GateMix, beta as
// logits or post-sigmoid, every InputLayout for inputs and o (contiguous only when the kernel
// takes no strided inputs). Throws std::invalid_argument when the kernel's capabilities, its
// profile and the limits leave nothing to draw (no common head dim, dtype, state source, ...).
// The generator copies what it needs: the kernel need not outlive it.
rc::Gen<CaseSpec> gen_valid_case(const Kernel& kernel, const GenLimits& limits = {});
// The same, drawing mostly the adversarial data mixes (DataMix; gen_valid_case: about a third).
rc::Gen<CaseSpec> gen_adversarial_case(const Kernel& kernel, const GenLimits& limits = {});

// A valid case plus one rule of a profile broken. build() applies the break; the result breaks
// exactly that rule, except where noted at breakable_rules().
struct InvalidCase {
  CaseSpec base;
  Rule rule = Rule::problem_sizes;
  std::uint64_t variant = 0;  // which way to break it, where a rule can be broken several ways
  const Profile* profile = &profile_strict();  // the profile broken (gen_invalid_case: the kernel's)
  Problem build() const;
};
std::ostream& operator<<(std::ostream& os, const InvalidCase& c);

// Rules of the profile that InvalidCase::build can break, for some base gen_valid_case draws. All
// the profile enforces except: index_overflow_32bit (a view past INT32_MAX elements cannot be
// allocated, so it always leaves its buffer too) and the parameter rules the profile leaves
// unbreakable (head_dims_supported without head-dim sets, state_layout without a required layout,
// state_source_supported when every source is taken). A break trips a second rule only where the
// profile's parameters force it: K above max_key_head_dim is outside a head-dim set too
// (head_dims_supported). A kernel's capabilities can leave a rule without a base (a pool rule for a
// kernel without pools): breakable_rules(kernel) leaves such rules out.
std::vector<Rule> breakable_rules(const Profile& profile);
// The subset of breakable_rules(kernel.profile()) the kernel's capabilities and the limits leave a
// base for (a rule about pools needs a kernel that takes pools, ...).
std::vector<Rule> breakable_rules(const Kernel& kernel, const GenLimits& limits = {});

// One of breakable_rules(kernel) broken on a base the kernel supports; shrinks towards earlier rules.
// The cases point to kernel.profile(): the kernel must outlive them.
rc::Gen<InvalidCase> gen_invalid_case(const Kernel& kernel, const GenLimits& limits = {});
// The given rule broken; throws std::invalid_argument when it is not in breakable_rules(kernel, limits).
rc::Gen<InvalidCase> gen_invalid_case(const Kernel& kernel, Rule rule, const GenLimits& limits = {});

// Rules the kernel never promised to check: those breakable_rules(profile_strict()) holds that the
// kernel's profile does not enforce, each with a base the kernel takes (capabilities, its own profile,
// the limits). Empty where the profile enforces every rule strict can break.
std::vector<Rule> unpromised_rules(const Kernel& kernel, const GenLimits& limits = {});
// One of unpromised_rules(kernel) broken under strict's parameters on a base valid for the kernel's own
// profile (the case's profile is strict); shrinks towards earlier rules. Throws std::invalid_argument
// when there is none.
rc::Gen<InvalidCase> gen_unpromised_case(const Kernel& kernel, const GenLimits& limits = {});

}  // namespace kda::props
