#include "progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace kda::cli {

ProgressLine::ProgressLine(std::string verb) : verb_(std::move(verb)), terminal_(::isatty(STDERR_FILENO) == 1) {}

void ProgressLine::operator()(std::size_t done, std::size_t total, const std::string& item) {
  const std::string line = verb_ + " " + std::to_string(done) + "/" + std::to_string(total) + " " + item;
  if (terminal_) {
    std::fprintf(stderr, "\r%-*s", static_cast<int>(std::max(width_, line.size())), line.c_str());
    width_ = line.size();
    if (done == total) std::fputc('\n', stderr);
  } else if (done == total || done * 10 / total != (done - 1) * 10 / total) {
    std::fprintf(stderr, "%s\n", line.c_str());
  }
  std::fflush(stderr);
}

}  // namespace kda::cli
