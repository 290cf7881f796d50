#pragma once
// Contract rules named by external kernels (a plugin's rejection message, an adapter's answer).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kda/contract.hpp"

namespace kda::adapters {

std::optional<Rule> rule_from_name(std::string_view name);  // nullopt: not a rule of the contract

// A rejection's text: one "<rule>: <message>" per line (kda_plugin.h). Throws std::invalid_argument
// naming the offending line for an empty text, a line without a rule or an unknown rule name.
std::vector<Violation> parse_rejection(std::string_view text);

}  // namespace kda::adapters
