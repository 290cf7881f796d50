// serving-loop: a stateful property over a state pool (rapidcheck's state::Commands). Sequences are
// admitted into free slots, prefilled, decoded in batches with padding rows, verified (speculative
// decoding: draft tokens verified, some accepted, the rest rolled back), freed, and their slots reused;
// after every call the kernel's pool and outputs track the references (serving_system.hpp). Every
// call keeps its metadata in persistent buffers refilled in place, as an engine's CUDA graphs do.
#include <rapidcheck/state.h>

#include <algorithm>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "generators_internal.hpp"
#include "invariance_support.hpp"
#include "list_helpers.hpp"
#include "kda/properties/property_bodies.hpp"
#include "serving_system.hpp"

namespace kda::props {

namespace {

using i64 = std::int64_t;

enum class Use : std::uint8_t { free, admitted, live };

// rapidcheck's model: what each slot holds, and what the kernel can be asked to do.
struct Slots {
  std::vector<Use> slots;
  bool prefills = true, decodes = true;
  bool varlen = true;  // false: a prefill's sequences share one length (batch rows)
  std::optional<StateSource> verify;  // the verify form the kernel takes (table or scratch), if any
  bool fixed_verify = false;          // every verify request of exactly L tokens (the profile's rule)

  std::vector<i64> where(std::initializer_list<Use> uses) const {
    std::vector<i64> out;
    for (std::size_t i = 0; i < slots.size(); ++i)
      if (std::find(uses.begin(), uses.end(), slots[i]) != uses.end()) out.push_back(static_cast<i64>(i));
    return out;
  }
};

using Command = rc::state::Command<Slots, ServingSystem>;

constexpr i64 kMaxPrefillTokens = 70;  // past a 64-token chunk, so a prefill can end in a partial chunk
constexpr int kMaxPaddingRows = 2;
constexpr double kCommandScale = 0.5;  // rapidcheck's size 100 gives at most 51 commands

i64 pick(const std::vector<i64>& xs) {
  RC_PRE(!xs.empty());
  return xs[static_cast<std::size_t>(*detail::gen_index(static_cast<int>(xs.size())))];
}

// A non-empty subset of the candidates in a drawn order; shrinks towards the first one alone.
std::vector<i64> pick_some(std::vector<i64> candidates) {
  std::vector<i64> chosen;
  do {
    const i64 one = pick(candidates);
    chosen.push_back(one);
    std::erase(candidates, one);
  } while (!candidates.empty() && *detail::gen_bool(50));
  return chosen;
}

bool all_in(const std::vector<i64>& slots, const Slots& s, std::initializer_list<Use> uses) {
  const std::vector<i64> ok = s.where(uses);
  return std::all_of(slots.begin(), slots.end(), [&](i64 x) {
    return x == -1 || std::find(ok.begin(), ok.end(), x) != ok.end();
  });
}

std::string list(const std::vector<i64>& xs) {
  std::ostringstream s;
  s << '[';
  for (std::size_t i = 0; i < xs.size(); ++i) s << (i ? "," : "") << xs[i];
  s << ']';
  return s.str();
}

// A new sequence takes a free slot, from zeros or from a cached prefix's state.
struct Admit final : Command {
  i64 slot;
  std::uint64_t seed;  // 0: zero state
  explicit Admit(const Slots& s)
      : slot(pick(s.where({Use::free}))), seed(*detail::gen_bool(50) ? *detail::gen_seed() | 1 : 0) {}
  void checkPreconditions(const Slots& s) const override { RC_PRE(all_in({slot}, s, {Use::free})); }
  void apply(Slots& s) const override {
    s.slots[static_cast<std::size_t>(slot)] = s.prefills ? Use::admitted : Use::live;
  }
  void run(const Slots&, ServingSystem& sut) const override { sut.admit(slot, seed); }
  void show(std::ostream& os) const override {
    os << "admit slot " << slot << (seed ? " from a random state" : " from zeros");
  }
};

// One prefill call over admitted slots (a new prompt) or live ones (the next chunk of a long prompt).
struct Prefill final : Command {
  std::vector<i64> slots, lengths;
  std::uint64_t seed;
  explicit Prefill(const Slots& s) : slots(pick_some(s.where({Use::admitted, Use::live}))), seed(*detail::gen_seed()) {
    RC_PRE(s.prefills);
    for (std::size_t i = 0; i < slots.size(); ++i)
      lengths.push_back(s.varlen || i == 0 ? *detail::gen_uniform(0, kMaxPrefillTokens) : lengths.front());
  }
  void checkPreconditions(const Slots& s) const override { RC_PRE(all_in(slots, s, {Use::admitted, Use::live})); }
  void apply(Slots& s) const override {
    for (i64 x : slots) s.slots[static_cast<std::size_t>(x)] = Use::live;
  }
  void run(const Slots&, ServingSystem& sut) const override {
    std::ostringstream what;
    show(what);
    sut.call(Mode::prefill, slots, lengths, seed, what.str());
  }
  void show(std::ostream& os) const override {
    os << "prefill slots " << list(slots) << " with " << list(lengths) << " tokens";
  }
};

// One decode step over live slots, with padding rows (-1) mixed in.
struct Decode final : Command {
  std::vector<i64> indices;
  std::uint64_t seed;
  explicit Decode(const Slots& s) : indices(pick_some(s.where({Use::live}))), seed(*detail::gen_seed()) {
    RC_PRE(s.decodes);
    for (i64 pads = *detail::gen_uniform(0, kMaxPaddingRows); pads > 0; --pads)
      indices.insert(indices.begin() + *detail::gen_uniform(0, static_cast<i64>(indices.size())), -1);
  }
  void checkPreconditions(const Slots& s) const override { RC_PRE(all_in(indices, s, {Use::live})); }
  void run(const Slots&, ServingSystem& sut) const override {
    std::ostringstream what;
    show(what);
    sut.call(Mode::decode, indices, std::vector<i64>(indices.size(), 1), seed, what.str());
  }
  void show(std::ostream& os) const override { os << "decode slots " << list(indices); }
};

constexpr i64 kMaxDraftTokens = 4;  // L = 1 + num_spec

// A speculative-decoding step over live sequences: L draft tokens verified from each committed state,
// then `commit` of them accepted (the rest rolled back). Table form: each request's row holds its committed
// slot at column accepted - 1 and free slots elsewhere; the accepted token's slot becomes the committed
// one and the row's other slots are free again. Scratch form: the committed slot is only read, and the
// accepted token's state is copied back from the scratch buffer. A padding request (-1) may be mixed in.
struct Verify final : Command {
  StateSource form = StateSource::table;
  i64 L = 1;
  std::vector<i64> committed, accepted, lengths, commit, indices;
  std::uint64_t seed;
  explicit Verify(const Slots& s) : committed(pick_some(s.where({Use::live}))), seed(*detail::gen_seed()) {
    RC_PRE(s.verify.has_value());
    form = *s.verify;
    L = *detail::gen_uniform(1, kMaxDraftTokens);
    std::vector<i64> spare = s.where({Use::free});
    if (form == StateSource::table) RC_PRE(static_cast<i64>(spare.size()) >= static_cast<i64>(committed.size()) * (L - 1));
    if (*detail::gen_bool(30)) committed.insert(committed.begin() + *detail::gen_uniform(0, static_cast<i64>(committed.size())), -1);
    for (i64 slot : committed) {
      const bool pad = slot == -1;
      lengths.push_back(s.fixed_verify || !s.varlen ? L : *detail::gen_uniform(1, L));
      accepted.push_back(pad ? 1 : *detail::gen_uniform(1, L));
      commit.push_back(pad ? 0 : *detail::gen_uniform(1, lengths.back()));
      if (form == StateSource::scratch) {
        indices.push_back(slot);
        continue;
      }
      for (i64 t = 0; t < L; ++t) {
        if (pad || t == accepted.back() - 1) {
          indices.push_back(slot);
          continue;
        }
        const i64 one = pick(spare);
        std::erase(spare, one);
        indices.push_back(one);
      }
    }
  }
  void checkPreconditions(const Slots& s) const override {
    RC_PRE(all_in(committed, s, {Use::live}));
    if (form != StateSource::table) return;
    std::vector<i64> drafts;
    for (std::size_t n = 0; n < committed.size(); ++n)
      for (i64 t = 0; t < L; ++t)
        if (committed[n] != -1 && t != accepted[n] - 1) drafts.push_back(indices[n * static_cast<std::size_t>(L) + static_cast<std::size_t>(t)]);
    RC_PRE(all_in(drafts, s, {Use::free}));
  }
  void apply(Slots& s) const override {
    if (form != StateSource::table) return;
    for (std::size_t n = 0; n < committed.size(); ++n) {
      if (committed[n] == -1) continue;
      s.slots[static_cast<std::size_t>(committed[n])] = Use::free;
      s.slots[static_cast<std::size_t>(indices[n * static_cast<std::size_t>(L) + static_cast<std::size_t>(commit[n] - 1)])] = Use::live;
    }
  }
  void run(const Slots&, ServingSystem& sut) const override {
    std::ostringstream what;
    show(what);
    sut.verify(form, L, indices, accepted, lengths, commit, seed, what.str());
  }
  void show(std::ostream& os) const override {
    os << "verify (" << name_of(form) << ", L=" << L << ") slots " << list(committed) << " with " << list(lengths)
       << " tokens";
    if (form == StateSource::table) os << ", table " << list(indices) << " accepted " << list(accepted);
    os << ", then accept " << list(commit);
  }
};

// A finished sequence gives its slot back; nothing is called.
struct Free final : Command {
  i64 slot;
  explicit Free(const Slots& s) : slot(pick(s.where({Use::admitted, Use::live}))) {}
  void checkPreconditions(const Slots& s) const override { RC_PRE(all_in({slot}, s, {Use::admitted, Use::live})); }
  void apply(Slots& s) const override { s.slots[static_cast<std::size_t>(slot)] = Use::free; }
  void show(std::ostream& os) const override { os << "free slot " << slot; }
};

// Small heads keep a command cheap: head dims up to 32 and two value heads where the kernel allows.
GenLimits serving_limits(const Kernel& kernel, const GenLimits& limits) {
  GenLimits small = limits;
  std::erase_if(small.head_dims, [](i64 d) { return d > 32; });
  small.max_heads = std::min(limits.max_heads, 2);
  try {
    detail::allowed_for(kernel, small);
    return small;
  } catch (const std::invalid_argument&) {
    return limits;
  }
}

}  // namespace

void check_serving_loop(CheckContext& context) {
  Kernel& kernel = context.kernel;
  detail::Needs needs;  // feasible: the runner skips this property where the kernel takes no pool
  needs.sources = {StateSource::pool};
  const detail::Allowed allowed = detail::allowed_for(kernel, serving_limits(kernel, context.limits));
  // The drawn case gives the calls' sizes, options, dtypes and the pool's slot stride and base offset.
  const CaseSpec spec = *detail::gen_case(allowed, needs);
  std::optional<StateSource> verify;  // the verify form drawn, among those the kernel takes
  std::vector<StateSource> forms;
  for (StateSource f : {StateSource::table, StateSource::scratch})
    if (detail::has(allowed.sources, f)) forms.push_back(f);
  if (!forms.empty() && *detail::gen_bool(75)) verify = forms[static_cast<std::size_t>(*detail::gen_index(static_cast<int>(forms.size())))];
  const i64 slots = *detail::gen_uniform(2, verify ? 8 : 5);  // a verify table's draft slots need room
  Slots initial;
  initial.slots.assign(static_cast<std::size_t>(slots), Use::free);
  initial.prefills = supports(kernel, Mode::prefill), initial.decodes = supports(kernel, Mode::decode);
  initial.varlen = spec.problem.varlen;
  initial.verify = verify;
  initial.fixed_verify = allowed.profile.enforces(Rule::verify_fixed_tokens);
  ServingSystem sut(context, spec.problem, slots);
  // rc::state::check, with the command sequence scaled down to keep a case cheap.
  const auto commands = *rc::gen::scale(
      kCommandScale, rc::state::gen::commands(initial, [](const Slots& s) {
        return rc::state::gen::execOneOfWithArgs<Admit, Prefill, Decode, Verify, Free>()(s);
      }));
  rc::state::runAll(commands, initial, sut);
}

}  // namespace kda::props
