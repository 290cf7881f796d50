#pragma once
// Progress on stderr, rewritten in place on a terminal; elsewhere (logs, CI) a line only at the steps
// worth keeping, so logs stay short.
#include <chrono>
#include <cstddef>
#include <string>

#include "kda/properties/runner.hpp"

namespace kda::cli {

// One status line: redrawn on a terminal (and blanked or ended there), printed as a line of its own
// elsewhere only where the caller says it is worth keeping.
class StatusLine {
 public:
  StatusLine();
  void show(const std::string& line, bool keep_in_log);
  void end();    // a terminal's line stays and a new one starts
  void clear();  // a terminal's line is blanked

 private:
  bool terminal_;
  std::size_t width_ = 0;  // of the line shown in place, to blank it out
};

// "generate 12/97 gate_softplus": one line per tenth of the work in a log.
class ProgressLine {
 public:
  explicit ProgressLine(std::string verb) : verb_(std::move(verb)) {}
  void operator()(std::size_t done, std::size_t total, const std::string& item);

 private:
  std::string verb_;
  StatusLine line_;
};

// A property run's progress: "  matches-reference: 37/100 cases", then, once a case failed, "failed,
// shrinking (5 steps)"; blanked at the property's end on a terminal. In a log: the count at most every
// ten seconds and when all cases passed, a line when a case fails and one with the shrink's length.
class PropertyProgressLine {
 public:
  void operator()(const props::PropertyProgress& progress);

 private:
  StatusLine line_;
  std::chrono::steady_clock::time_point logged_ = std::chrono::steady_clock::now();
};

}  // namespace kda::cli
