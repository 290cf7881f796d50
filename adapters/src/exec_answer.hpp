#pragma once
// An exec adapter's answer to a request (adapters/README.md, "Requests"): one line,
//   ok | rejected <rule> <message> | error <message>
#include <optional>
#include <string>

#include "kda/contract.hpp"

namespace kda::adapters {

struct Answer {
  enum class Kind { ok, rejected, error, unparseable };
  Kind kind = Kind::unparseable;
  std::string rule_name;    // rejected: the word after "rejected"
  std::optional<Rule> rule;  // rejected: the contract rule of that name; nullopt when there is none
  std::string message;      // rejected and error: the rest of the line
};

// Never throws: a line that is none of the three is Kind::unparseable.
Answer parse_answer(const std::string& line);

}  // namespace kda::adapters
