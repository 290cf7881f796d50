#include "stderr_capture.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <deque>
#include <fstream>
#include <iostream>
#include <stdexcept>

namespace kda::cli {

StderrCapture::StderrCapture(const std::filesystem::path& file) : file_(file) {
  std::filesystem::create_directories(file.parent_path());
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("cannot write " + file.string());
  std::cerr.flush();
  std::fflush(stderr);
  saved_ = ::fcntl(2, F_DUPFD_CLOEXEC, 3);
  ::dup2(fd, 2);
  ::close(fd);
}

StderrCapture::~StderrCapture() {
  std::cerr.flush();
  std::fflush(stderr);
  if (saved_ >= 0) {
    ::dup2(saved_, 2);
    ::close(saved_);
  }
}

std::string StderrCapture::tail(int lines) const {
  std::cerr.flush();
  std::fflush(stderr);
  std::ifstream in(file_);
  std::deque<std::string> last;
  for (std::string line; std::getline(in, line);) {
    if (const auto cr = line.rfind('\r'); cr != std::string::npos) line = line.substr(cr + 1);  // redrawn progress
    if (line.empty()) continue;
    last.push_back(line);
    if (static_cast<int>(last.size()) > lines) last.pop_front();
  }
  std::string text;
  for (const auto& line : last) text += (text.empty() ? "" : " | ") + line;
  return text;
}

}  // namespace kda::cli
