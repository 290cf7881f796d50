#include "contract_gate.hpp"

namespace kda::adapters {

namespace {
const Profile& bounds_only() {
  static const Profile p = [] {
    Profile bounds;
    bounds.name = "view_in_bounds";
    bounds.rules = {Rule::problem_sizes, Rule::view_in_bounds};
    return bounds;
  }();
  return p;
}
}  // namespace

std::optional<RunOutcome> reject_before_call(const Problem& problem, const Profile& profile,
                                             bool kernel_checks_contract) {
  auto violations = validate(problem, kernel_checks_contract ? bounds_only() : profile);
  if (violations.empty()) return std::nullopt;
  return RunOutcome::rejected(std::move(violations));
}

}  // namespace kda::adapters
