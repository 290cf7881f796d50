#pragma once
// A byte buffer with guard bands: poison bytes before and after the payload. After a kernel call,
// check_guards() finds any byte of a band that changed and reports where, so an out-of-bounds write
// is located (byte offset from the payload start, negative before it) and attributed to a buffer.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace kda {

struct GuardViolation {
  std::string buffer;
  std::int64_t first_byte = 0;  // relative to the payload start; < 0 before it, >= size after it
  std::int64_t last_byte = 0;   // last corrupted byte in the same band
  std::int64_t bytes_changed = 0;
  std::string describe() const;
};

class GuardedBuffer {
 public:
  static constexpr std::size_t kGuardBytes = 256;  // also the payload's alignment

  GuardedBuffer(std::string name, std::size_t payload_bytes);
  GuardedBuffer(const GuardedBuffer&) = delete;
  GuardedBuffer& operator=(const GuardedBuffer&) = delete;

  const std::string& name() const { return name_; }
  std::size_t size() const { return size_; }
  std::byte* data() { return storage_.get() + kGuardBytes; }
  const std::byte* data() const { return storage_.get() + kGuardBytes; }

  // The band's expected byte at a position: position-dependent, so a stray copy of poison
  // from one place to another is still seen.
  static std::byte poison_at(std::size_t band_position);

  // Both bands, checked byte by byte; the first corrupted band is reported (before wins).
  std::optional<GuardViolation> check_guards() const;
  // Raw access to the bands, for tests that plant an out-of-bounds write.
  std::byte* band_before() { return storage_.get(); }
  std::byte* band_after() { return data() + size_; }

 private:
  struct AlignedDelete {
    void operator()(std::byte* p) const;
  };
  std::string name_;
  std::size_t size_;
  std::unique_ptr<std::byte, AlignedDelete> storage_;
};

}  // namespace kda
