#include "child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace kda::adapters {

namespace {

using Clock = std::chrono::steady_clock;

std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

// A write to a child that died raises SIGPIPE, whose default action would end kda-oracle; ignored
// once, process-wide, the write fails with EPIPE instead. Children get the default back (spawn attrs).
void ignore_sigpipe() {
  static const bool done = [] {
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &ignore, nullptr);
    return true;
  }();
  (void)done;
}

}  // namespace

ChildProcess::ChildProcess(const std::string& command) {
  ignore_sigpipe();
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0) throw std::runtime_error(errno_text("pipe"));
  if (pipe2(out, O_CLOEXEC) != 0) {
    close(in[0]), close(in[1]);
    throw std::runtime_error(errno_text("pipe"));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);  // dup2 clears O_CLOEXEC on the copy
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigdefault(&attributes, &defaults);
  posix_spawnattr_setpgroup(&attributes, 0);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
  const char* argv[] = {"/bin/sh", "-c", command.c_str(), nullptr};
  const int error = posix_spawn(&pid_, "/bin/sh", &actions, &attributes, const_cast<char* const*>(argv), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  close(in[0]), close(out[1]);
  to_child_ = in[1], from_child_ = out[0];
  if (error != 0) {
    close(to_child_), close(from_child_);
    throw std::runtime_error("cannot start /bin/sh -c '" + command + "': " + std::strerror(error));
  }
}

ChildProcess::~ChildProcess() {
  stop(std::chrono::milliseconds(0));
  if (to_child_ >= 0) close(to_child_);
  if (from_child_ >= 0) close(from_child_);
}

bool ChildProcess::write_line(const std::string& line) {
  const std::string data = line + '\n';
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = write(to_child_, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

ChildProcess::Line ChildProcess::read_line(std::chrono::milliseconds timeout, std::size_t max_bytes) {
  const auto deadline = Clock::now() + timeout;
  while (true) {
    if (const auto end = buffered_.find('\n'); end != std::string::npos) {
      Line line{Line::Status::line, buffered_.substr(0, end)};
      buffered_.erase(0, end + 1);
      if (!line.text.empty() && line.text.back() == '\r') line.text.pop_back();
      return line;
    }
    if (buffered_.size() > max_bytes) return {Line::Status::too_long, buffered_.substr(0, 200)};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return {Line::Status::timeout, buffered_};
    pollfd fd{from_child_, POLLIN, 0};
    const int ready = poll(&fd, 1, static_cast<int>(std::min<long long>(left, 1'000'000)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;  // the deadline is checked above
    char chunk[4096];
    const ssize_t n = read(from_child_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return {Line::Status::eof, buffered_};
    buffered_.append(chunk, static_cast<std::size_t>(n));
  }
}

bool ChildProcess::reap(bool wait) {
  if (reaped_) return true;
  while (true) {
    const pid_t r = waitpid(pid_, &wait_status_, wait ? 0 : WNOHANG);
    if (r < 0 && errno == EINTR) continue;
    reaped_ = r == pid_ || r < 0;  // r < 0: not our child any more (nothing left to wait for)
    return reaped_;
  }
}

void ChildProcess::stop(std::chrono::milliseconds grace) {
  if (pid_ <= 0 || reaped_) return;
  const auto deadline = Clock::now() + grace;
  while (!reap(false) && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (!reaped_) {
    killed_ = true;
    kill(-pid_, SIGKILL);  // the whole group: the shell and what it started
    reap(true);
  }
}

std::string ChildProcess::exit_description(std::chrono::milliseconds grace) {
  const bool was_running = !reaped_;
  stop(grace);
  if (WIFEXITED(wait_status_)) {
    const int status = WEXITSTATUS(wait_status_);
    std::string text = "exited with status " + std::to_string(status);
    // A shell reports a child killed by signal s as status 128 + s.
    if (status > 128 && status < 128 + NSIG)
      text += " (a shell's report of signal " + std::to_string(status - 128) + ", " + strsignal(status - 128) + ")";
    return text;
  }
  if (WIFSIGNALED(wait_status_)) {
    const int sig = WTERMSIG(wait_status_);
    if (was_running && sig == SIGKILL && killed_) return "did not exit and has been killed";
    return "was killed by signal " + std::to_string(sig) + " (" + strsignal(sig) + ")";
  }
  return "ended (wait status " + std::to_string(wait_status_) + ")";
}

}  // namespace kda::adapters
