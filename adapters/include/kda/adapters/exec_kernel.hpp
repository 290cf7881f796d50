#pragma once
// A kernel in any language, run as a separate program that speaks the line protocol of
// adapters/README.md: one case per request as an HDF5 file in the golden schema, whole buffers back
// in a results file. Crashes, hangs and garbage answers become RunOutcome::failed with a clear
// message, and the program is restarted for the next case.
#include <chrono>
#include <iosfwd>
#include <memory>
#include <stdexcept>
#include <string>

#include "kda/kernel.hpp"

namespace kda::adapters {

struct ExecOptions {
  std::chrono::milliseconds timeout{60'000};          // per request
  std::chrono::milliseconds startup_timeout{60'000};  // for the handshake, after every (re)start
  std::ostream* log = nullptr;  // each misbehaviour and restart, one line as it happens; nullptr: quiet
};

// The adapter could not be started: it did not send a valid handshake in time.
struct AdapterError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Starts `command` (through /bin/sh -c) and reads its handshake.
std::unique_ptr<Kernel> start_exec_adapter(const std::string& command, const ExecOptions& options = {});

}  // namespace kda::adapters
