#pragma once
// Admission before allocation: a problem built from a spec and a case read from a file are checked
// against the memory this process may still use before any of their buffers is allocated, so one too
// large for the machine (or a file that merely claims one) is refused with a message naming the sizes
// instead of ending in std::bad_alloc half-way or in the kernel's OOM killer.
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

namespace kda {

struct MemoryError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct AvailableMemory {
  std::uint64_t bytes = 0;
  std::string source;  // where the figure comes from, for messages
};

// What this process may still allocate: MemAvailable of /proc/meminfo, lowered to the room left under
// the memory limit of every cgroup holding the process (v2 memory.max - memory.current, v1
// memory.limit_in_bytes - memory.usage_in_bytes). The environment variable KDA_MEMORY_LIMIT (a byte
// count) replaces both (tests; a deliberate cap). nullopt when none of them can be read.
// Throws std::invalid_argument when KDA_MEMORY_LIMIT is set but not a byte count.
std::optional<AvailableMemory> available_memory();

// A sum of byte counts; nullopt once it no longer fits 64 bits (that is more than any memory).
class ByteTotal {
 public:
  ByteTotal& add(std::optional<std::uint64_t> bytes);
  std::optional<std::uint64_t> bytes() const { return bytes_; }

 private:
  std::optional<std::uint64_t> bytes_ = 0;
};

// Throws MemoryError when `bytes` exceeds available_memory(): "<what> needs N bytes (1.0 GiB), more
// than the M bytes (256.0 MiB) of memory available (<source>); nothing was allocated". Does nothing
// when the available memory is unknown, and admits totals under 64 MiB without asking the system
// (KDA_MEMORY_LIMIT is still applied to them).
void require_memory(const ByteTotal& bytes, const std::string& what);

}  // namespace kda
