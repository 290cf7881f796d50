#include "rule_names.hpp"

#include <stdexcept>

namespace kda::adapters {

std::optional<Rule> rule_from_name(std::string_view name) {
  for (Rule r : all_rules())
    if (name_of(r) == name) return r;
  return std::nullopt;
}

std::vector<Violation> parse_rejection(std::string_view text) {
  std::vector<Violation> violations;
  while (!text.empty()) {
    const auto end = text.find('\n');
    const std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
    if (line.empty()) continue;
    const auto colon = line.find(':');
    const std::string_view name = line.substr(0, colon);
    const auto rule = rule_from_name(name);
    if (!rule)
      throw std::invalid_argument("the rejection names no contract rule: '" + std::string(line) +
                                  "' (expected '<rule>: <message>' with a rule such as state_pool_alignment)");
    std::string_view message = colon == std::string_view::npos ? std::string_view{} : line.substr(colon + 1);
    if (!message.empty() && message.front() == ' ') message.remove_prefix(1);
    violations.push_back({*rule, std::string(message)});
  }
  if (violations.empty()) throw std::invalid_argument("the rejection names no contract rule (empty message)");
  return violations;
}

}  // namespace kda::adapters
