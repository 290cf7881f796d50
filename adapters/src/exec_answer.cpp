#include "exec_answer.hpp"

#include "rule_names.hpp"

namespace kda::adapters {

Answer parse_answer(const std::string& line) {
  const std::string word = line.substr(0, line.find(' '));
  const std::string rest = word.size() < line.size() ? line.substr(word.size() + 1) : "";
  Answer a;
  if (line == "ok") {
    a.kind = Answer::Kind::ok;
  } else if (word == "rejected") {
    a.kind = Answer::Kind::rejected;
    a.rule_name = rest.substr(0, rest.find(' '));
    a.rule = rule_from_name(a.rule_name);
    a.message = a.rule_name.size() < rest.size() ? rest.substr(a.rule_name.size() + 1) : "";
  } else if (word == "error") {
    a.kind = Answer::Kind::error;
    a.message = rest;
  }
  return a;
}

}  // namespace kda::adapters
