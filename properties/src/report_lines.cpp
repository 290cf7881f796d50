// The lines of a property report that both the text output and the JSON results give: the command that
// replays a failure and the failure in one line.
#include <sstream>
#include <string_view>

#include "kda/properties/runner.hpp"
#include "kda/properties/shell_quote.hpp"

namespace kda::props {

std::string replay_command(const PropertyReport& report, const std::string& kernel, Scale scale) {
  if (report.replay.empty()) return {};
  return "kda-oracle check --kernel " + shell_quote(kernel) +
         (scale == Scale::small ? "" : " --scale " + std::string(name_of(scale))) + " --properties " +
         report.property + " --replay " + shell_quote(report.replay);
}

std::string diagnosis(const PropertyReport& report) {
  if (report.failure.empty()) {
    if (report.missing_categories.empty()) return {};
    return "no case in category '" + report.missing_categories.front() + "' in " + std::to_string(report.cases) +
           " cases";
  }
  // rapidcheck puts the assertion's source location and expression first ("file:line:", "RC_FAIL(...)",
  // a blank line): the message proper starts after the first blank line, when there is one.
  std::string_view text = report.failure;
  const auto blank = text.find("\n\n");
  if (blank != std::string_view::npos && text.substr(0, blank).find("RC_") != std::string_view::npos)
    text.remove_prefix(blank + 2);
  std::istringstream in{std::string(text)};
  for (std::string line; std::getline(in, line);) {
    const auto first = line.find_first_not_of(' ');
    if (first != std::string::npos) return line.substr(first);
  }
  return {};
}

}  // namespace kda::props
