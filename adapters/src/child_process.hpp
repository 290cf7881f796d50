#pragma once
// A program started through /bin/sh -c with its stdin and stdout on pipes (stderr inherited), spoken
// to in lines with a deadline on every read. It runs in a process group of its own, so killing it
// also ends whatever the shell started.
#include <chrono>
#include <string>
#include <sys/types.h>

namespace kda::adapters {

class ChildProcess {
 public:
  // Throws std::runtime_error when the shell cannot be started.
  explicit ChildProcess(const std::string& command);
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess();  // kills the process group if it still runs

  // False when the child no longer reads its stdin (it exited or closed it).
  bool write_line(const std::string& line);

  struct Line {
    enum class Status { line, eof, timeout, too_long } status;
    std::string text;  // without the newline
  };
  // The next line of stdout; at most max_bytes long.
  Line read_line(std::chrono::milliseconds timeout, std::size_t max_bytes = 1 << 16);

  // Waits up to `grace` for the child to exit by itself, then kills its process group; idempotent.
  void stop(std::chrono::milliseconds grace);
  // How it ended, e.g. "exited with status 3", "was killed by signal 11 (Segmentation fault)";
  // stops it first (stop(grace)) if it still runs.
  std::string exit_description(std::chrono::milliseconds grace);

 private:
  bool reap(bool wait);  // true once the child has been waited for

  pid_t pid_ = -1;
  int to_child_ = -1, from_child_ = -1;
  int wait_status_ = 0;
  bool reaped_ = false;
  bool killed_ = false;  // by stop()
  std::string buffered_;  // read from stdout past the last returned line
};

}  // namespace kda::adapters
