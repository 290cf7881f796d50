#pragma once
// A progress counter on stderr: "generate 12/97 gate_softplus", rewritten in place on a terminal;
// elsewhere (logs, CI) one line per tenth of the work, so logs stay short.
#include <cstddef>
#include <string>

namespace kda::cli {

class ProgressLine {
 public:
  explicit ProgressLine(std::string verb);
  void operator()(std::size_t done, std::size_t total, const std::string& item);

 private:
  std::string verb_;
  bool terminal_;
  std::size_t width_ = 0;  // of the last line written in place, to blank it out
};

}  // namespace kda::cli
