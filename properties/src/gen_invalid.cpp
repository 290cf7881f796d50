// Invalid cases: a rule, a base drawn with what that rule's break needs (so the break trips that rule
// alone), and a variant. Each rule's needs and break are its row in rule_breaks.cpp.
#include <algorithm>
#include <ostream>
#include <stdexcept>

#include "generators_internal.hpp"

namespace kda::props::detail {

std::optional<Needs> needs_for(Rule rule, const Profile& profile) {
  const RuleBreak& row = rule_break(rule);  // first: a rule without a row fails under every profile
  if (!profile.enforces(rule)) return std::nullopt;
  std::optional<Needs> needs = row.needs(profile);
  // A verify base for the rows that ask for one (a verify mode, or verify forms only), never one for
  // the rows that name other sources only (their breaks change one-index-per-sequence pools and dense
  // states, which a verify call does not have); either kind for the rest.
  if (needs && !needs->verify) {
    const auto& s = needs->sources;
    const auto verify_forms = std::count_if(s.begin(), s.end(), is_verify_source);
    if (needs->mode == Mode::verify || (!s.empty() && verify_forms == static_cast<std::ptrdiff_t>(s.size())))
      needs->verify = true;
    else if (!s.empty() && verify_forms == 0)
      needs->verify = false;
  }
  return needs;
}

}  // namespace kda::props::detail

namespace kda::props {

Problem InvalidCase::build() const {
  const detail::RuleBreak& row = detail::rule_break(rule);
  CaseSpec spec = base;
  if (row.spec) {
    row.spec(spec.problem, variant, *profile);
    return build_case(spec);
  }
  if (!row.problem) throw std::logic_error("InvalidCase: " + std::string(name_of(rule)) + " cannot be broken alone");
  Problem p = build_case(spec);
  row.problem(p, variant, *profile);
  return p;
}

std::ostream& operator<<(std::ostream& os, const InvalidCase& c) {
  return os << "break " << name_of(c.rule) << " (variant " << c.variant << ", profile " << c.profile->name
            << ") of: " << c.base.describe();
}

std::vector<Rule> breakable_rules(const Profile& profile) {
  std::vector<Rule> rules;
  for (Rule r : all_rules())
    if (detail::needs_for(r, profile)) rules.push_back(r);
  return rules;
}

std::vector<Rule> breakable_rules(const Kernel& kernel, const GenLimits& limits) {
  const detail::Allowed allowed = detail::allowed_for(kernel, limits);
  std::vector<Rule> rules;
  for (Rule r : breakable_rules(kernel.profile()))
    if (detail::feasible(allowed, *detail::needs_for(r, kernel.profile()))) rules.push_back(r);
  return rules;
}

namespace {

// `rule` of `profile` broken on a base the kernel takes; the rule must be breakable there.
rc::Gen<InvalidCase> gen_break(const Kernel& kernel, const Profile* profile, Rule rule, const GenLimits& limits) {
  return rc::gen::map(
      rc::gen::pair(detail::gen_case(detail::allowed_for(kernel, limits), *detail::needs_for(rule, *profile)),
                    rc::gen::map(detail::gen_uniform(0, 11), [](detail::i64 v) { return static_cast<std::uint64_t>(v); })),
      [rule, profile](const std::pair<CaseSpec, std::uint64_t>& drawn) {
        return InvalidCase{drawn.first, rule, drawn.second, profile};
      });
}

// One of the rules' generators, shrinking towards the first.
rc::Gen<InvalidCase> one_of(std::vector<rc::Gen<InvalidCase>> gens) {
  return rc::gen::mapcat(detail::gen_index(static_cast<int>(gens.size())),
                         [gens](int i) { return gens[static_cast<std::size_t>(i)]; });
}

}  // namespace

rc::Gen<InvalidCase> gen_invalid_case(const Kernel& kernel, Rule rule, const GenLimits& limits) {
  const auto rules = breakable_rules(kernel, limits);
  if (std::find(rules.begin(), rules.end(), rule) == rules.end())
    throw std::invalid_argument("gen_invalid_case: " + std::string(name_of(rule)) + " cannot be broken alone for " +
                                kernel.name() + " under profile " + kernel.profile().name);
  return gen_break(kernel, &kernel.profile(), rule, limits);
}

std::vector<Rule> unpromised_rules(const Kernel& kernel, const GenLimits& limits) {
  const detail::Allowed allowed = detail::allowed_for(kernel, limits);
  std::vector<Rule> rules;
  for (Rule r : breakable_rules(profile_strict()))
    if (!kernel.profile().enforces(r) && detail::feasible(allowed, *detail::needs_for(r, profile_strict())))
      rules.push_back(r);
  return rules;
}

rc::Gen<InvalidCase> gen_unpromised_case(const Kernel& kernel, const GenLimits& limits) {
  const auto rules = unpromised_rules(kernel, limits);
  if (rules.empty())
    throw std::invalid_argument("gen_unpromised_case: " + kernel.profile().name + " enforces every rule strict can break");
  std::vector<rc::Gen<InvalidCase>> gens;
  for (Rule r : rules) gens.push_back(gen_break(kernel, &profile_strict(), r, limits));
  return one_of(std::move(gens));
}

rc::Gen<InvalidCase> gen_invalid_case(const Kernel& kernel, const GenLimits& limits) {
  const auto rules = breakable_rules(kernel, limits);
  if (rules.empty()) throw std::invalid_argument("gen_invalid_case: no rule of " + kernel.profile().name + " breakable");
  std::vector<rc::Gen<InvalidCase>> gens;
  for (Rule r : rules) gens.push_back(gen_invalid_case(kernel, r, limits));
  return one_of(std::move(gens));
}

}  // namespace kda::props
