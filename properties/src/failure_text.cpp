#include "failure_text.hpp"

#include <cstdio>

namespace kda::props::detail {

std::string format_value(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", x);
  return text;
}

std::string lines(const std::vector<std::string>& xs) {
  std::string s;
  for (const auto& x : xs) s += "\n  " + x;
  return s;
}

std::string violations_text(const std::vector<Violation>& vs) {
  std::vector<std::string> each;
  for (const auto& v : vs) each.push_back(std::string(name_of(v.rule)) + ": " + v.message);
  return lines(each);
}

}  // namespace kda::props::detail
