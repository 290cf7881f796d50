#pragma once
// Running a rapidcheck property programmatically under a fixed seed, and reading its result: the
// message of a failure and the classification tags of a success.
#include <rapidcheck.h>

#include <cstdint>
#include <map>
#include <sstream>
#include <string>
#include <utility>

namespace kda::props::test {

template <class Testable>
rc::detail::TestResult run_property(std::uint64_t seed, int cases, Testable&& testable) {
  rc::detail::TestParams params;
  params.seed = seed;
  params.maxSuccess = cases;
  return rc::detail::checkTestable(std::forward<Testable>(testable), rc::detail::TestMetadata{}, params);
}

inline std::string message_of(const rc::detail::TestResult& result) {
  std::ostringstream s;
  rc::detail::printResultMessage(result, s);
  return s.str();
}

// The classification of a passing run: how many cases carried each tag (rapidcheck keeps a string
// tag as its printed form, quotes included).
inline std::map<std::string, int> tag_counts(const rc::detail::TestResult& result) {
  std::map<std::string, int> counts;
  if (!result.is<rc::detail::SuccessResult>()) return counts;
  for (const auto& [tags, n] : result.get<rc::detail::SuccessResult>().distribution)
    for (const auto& t : tags) counts[t.size() >= 2 && t.front() == '"' ? t.substr(1, t.size() - 2) : t] += n;
  return counts;
}

}  // namespace kda::props::test
