// Whether a kernel can take a property's cases: the property's needs put to the generators' feasibility
// check, one need at a time, so that the reason names the first one the kernel lacks.
#include <string>

#include "generators_internal.hpp"
#include "kda/properties/catalogue.hpp"

namespace kda::props {

std::string inapplicable(const KernelNeeds& needs, const Kernel& kernel, const GenLimits& limits) {
  const detail::Allowed allowed = detail::allowed_for(kernel, limits);
  detail::Needs base;
  // Each need joins the ones before it, so that needs possible alone but not together are caught too.
  const auto lacks = [&](auto&& add) {
    add(base);
    return !detail::feasible(allowed, base);
  };
  if (needs.prefill && lacks([](detail::Needs& n) { n.mode = Mode::prefill; }))
    return "the kernel runs no prefill call";
  if (needs.initial_state &&
      lacks([](detail::Needs& n) { n.sources = {StateSource::dense, StateSource::pool}; }))
    return "the kernel takes no initial state (neither dense nor pooled)";
  if (needs.pool &&
      lacks([](detail::Needs& n) { n.sources = {StateSource::pool, StateSource::table, StateSource::scratch}; }))
    return "the kernel takes no state pool";
  if (needs.plain && lacks([](detail::Needs& n) { n.verify = false; }))
    return "the kernel takes verify calls only";
  if (needs.verify && lacks([](detail::Needs& n) { n.verify = true; }))
    return "the kernel takes no verify call (neither the index-table nor the scratch form)";
  if (needs.scratch && lacks([](detail::Needs& n) { n.sources = {StateSource::scratch}; }))
    return "the kernel takes no scratch-form verify call";
  if (needs.decode && !detail::feasible(allowed, {.mode = Mode::decode, .sources = {StateSource::pool}}) &&
      !detail::feasible(allowed, {.mode = Mode::verify, .sources = {StateSource::table}}))
    return "the kernel runs single-token steps neither as decode calls with a state pool nor as index-table verify calls";
  if (needs.sequences > 1 && lacks([&](detail::Needs& n) { n.min_sequences = needs.sequences; }))
    return "a call holds at most " + std::to_string(limits.max_sequences) + " sequence(s) here, the property needs " +
           std::to_string(needs.sequences);
  if (needs.metadata && !detail::metadata_call(allowed, needs.sequences))
    return "the kernel takes neither varlen prefill calls nor a state pool: no metadata to refill";
  if (needs.unpromised_rule && unpromised_rules(kernel, limits).empty())
    return "the kernel's profile " + kernel.profile().name + " enforces every rule strict can break on its cases";
  if (needs.both_layouts && allowed.layouts.size() < 2)
    return "the kernel takes one state layout only (" + std::string(name_of(allowed.layouts.front())) + ")";
  return {};
}

std::string describe(const KernelNeeds& needs) {
  std::string s;
  const auto add = [&](bool need, const std::string& what) {
    if (need) s += (s.empty() ? "" : ", ") + what;
  };
  add(needs.pool, "pool");
  add(needs.prefill, "prefill");
  add(needs.initial_state, "initial state");
  add(needs.both_layouts, "both layouts");
  add(needs.verify && !needs.scratch, "verify");
  add(needs.scratch, "scratch verify");
  add(needs.decode, "single-token steps");
  add(needs.plain, "prefill or decode");
  add(needs.metadata, "varlen prefill or a pool");
  add(needs.sequences > 1, std::to_string(needs.sequences) + " sequences");
  add(needs.unpromised_rule, "a rule its profile does not enforce");
  return s.empty() ? "-" : s;
}

}  // namespace kda::props
