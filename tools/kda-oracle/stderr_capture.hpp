#pragma once
// For one scope, this process's stderr (file descriptor 2, so also the stderr of every child process
// started meanwhile, such as an exec adapter) goes to a file; the previous stderr is restored after.
#include <filesystem>
#include <string>

namespace kda::cli {

class StderrCapture {
 public:
  explicit StderrCapture(const std::filesystem::path& file);  // truncates the file
  ~StderrCapture();
  StderrCapture(const StderrCapture&) = delete;
  StderrCapture& operator=(const StderrCapture&) = delete;

  // The last `lines` lines written so far, joined by " | " (a reason fits on one line).
  std::string tail(int lines) const;

 private:
  std::filesystem::path file_;
  int saved_ = -1;
};

}  // namespace kda::cli
