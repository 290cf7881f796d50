#pragma once
// Pieces of the messages a failing property prints.
#include <string>
#include <vector>

#include "kda/contract.hpp"

namespace kda::props::detail {

std::string format_value(double x);                            // 9 significant digits, as a case prints
std::string lines(const std::vector<std::string>& xs);         // each on a line of its own, indented
std::string violations_text(const std::vector<Violation>& vs);  // "rule: message", each on a line of its own

}  // namespace kda::props::detail
