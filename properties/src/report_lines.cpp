// The lines of a property report that both the text output and the JSON results give: the command that
// replays a failure and the failure in one line.
#include <sstream>
#include <vector>

#include "kda/properties/runner.hpp"
#include "kda/properties/shell_quote.hpp"

namespace kda::props {

std::string replay_command(const PropertyReport& report, const std::string& kernel, Scale scale,
                           const std::string& around) {
  if (report.replay.empty()) return {};
  return "kda-oracle check --kernel " + shell_quote(kernel) +
         (scale == Scale::small ? "" : " --scale " + std::string(name_of(scale))) +
         (around.empty() ? "" : " --around " + shell_quote(around)) + " --properties " + report.property +
         " --replay " + shell_quote(report.replay);
}

namespace {
std::string trimmed(const std::string& line) {
  const auto first = line.find_first_not_of(' ');
  return first == std::string::npos ? std::string() : line.substr(first);
}
}  // namespace

std::string diagnosis(const PropertyReport& report) {
  if (report.failure.empty()) {
    if (report.missing_categories.empty()) return {};
    return "no case in category '" + report.missing_categories.front() + "' in " + std::to_string(report.cases) +
           " cases";
  }
  std::vector<std::string> lines;
  std::istringstream in(report.failure);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  // rapidcheck starts with the assertion's source location ("file:line:", after "gave up: " where every
  // case was discarded) and the assertion ("RC_FAIL(...)"), then a blank line and the message; an
  // assertion without a message of its own (RC_ASSERT, RC_PRE) follows with "Expands to:" instead.
  if (lines.size() >= 2 && lines[0].ends_with(':') && lines[1].starts_with("RC_")) {
    const std::string prefix = lines[0].starts_with("gave up: ") ? "gave up: " : "";
    std::size_t i = 2;
    while (i < lines.size() && lines[i].empty()) ++i;
    if (i == lines.size() || lines[i] == "Expands to:") return prefix + lines[1];
    // matches-reference's message names the precision model on a line of its own (the results name it
    // too), then the worst tensor's line: that is the one line.
    if (lines[i].starts_with("outside the tolerance of precision model ") && i + 1 < lines.size()) ++i;
    return prefix + trimmed(lines[i]);
  }
  for (const auto& line : lines)
    if (!trimmed(line).empty()) return trimmed(line);
  return {};
}

}  // namespace kda::props
