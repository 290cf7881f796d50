#include "progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace kda::cli {

StatusLine::StatusLine() : terminal_(::isatty(STDERR_FILENO) == 1) {}

void StatusLine::show(const std::string& line, bool keep_in_log) {
  if (terminal_) {
    std::fprintf(stderr, "\r%-*s", static_cast<int>(std::max(width_, line.size())), line.c_str());
    width_ = line.size();
  } else if (keep_in_log) {
    std::fprintf(stderr, "%s\n", line.c_str());
  }
  std::fflush(stderr);
}

void StatusLine::end() {
  if (terminal_ && width_ > 0) std::fputc('\n', stderr);
  width_ = 0;
}

void StatusLine::clear() {
  if (terminal_ && width_ > 0) std::fprintf(stderr, "\r%*s\r", static_cast<int>(width_), "");
  width_ = 0;
  std::fflush(stderr);
}

// True where done is the first count of a new tenth of total (and at the end).
static bool new_tenth(std::size_t done, std::size_t total) {
  return done == total || (done > 0 && done * 10 / total != (done - 1) * 10 / total);
}

void ProgressLine::operator()(std::size_t done, std::size_t total, const std::string& item) {
  line_.show(verb_ + " " + std::to_string(done) + "/" + std::to_string(total) + " " + item, new_tenth(done, total));
  if (done == total) line_.end();
}

void PropertyProgressLine::operator()(const props::PropertyProgress& p) {
  const std::string name = "  " + std::string(p.property) + ": ";
  if (p.finished) {
    if (p.failed) line_.show(name + "case " + std::to_string(p.passed + 1) + " failed, shrunk in " +
                                 std::to_string(p.shrinks) + " steps", true);
    line_.clear();
    return;
  }
  if (p.failed) {
    line_.show(name + "case " + std::to_string(p.passed + 1) + " failed, shrinking" +
                   (p.shrinks == 0 ? "" : " (" + std::to_string(p.shrinks) + " steps)"),
               p.shrinks == 0);
    return;
  }
  const auto now = std::chrono::steady_clock::now();
  const bool keep = p.passed == p.total || now - logged_ >= std::chrono::seconds(10);
  if (keep) logged_ = now;
  line_.show(name + std::to_string(p.passed) + "/" + std::to_string(p.total) + " cases", keep);
}

}  // namespace kda::cli
