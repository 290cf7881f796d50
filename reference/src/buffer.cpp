#include "kda/buffer.hpp"

#include <cstring>
#include <new>
#include <sstream>

namespace kda {

std::string GuardViolation::describe() const {
  std::ostringstream s;
  s << "out-of-bounds write into the guard band " << (first_byte < 0 ? "before" : "after") << " buffer '"
    << buffer << "': " << bytes_changed << " byte(s) changed, first at byte offset " << first_byte
    << ", last at " << last_byte << " (offsets relative to the payload start)";
  return s.str();
}

void GuardedBuffer::AlignedDelete::operator()(std::byte* p) const {
  ::operator delete[](p, std::align_val_t{kGuardBytes});
}

std::byte GuardedBuffer::poison_at(std::size_t i) {
  return static_cast<std::byte>((i * 167u + 0x5bu) & 0xffu);
}

GuardedBuffer::GuardedBuffer(std::string name, std::size_t payload_bytes)
    : name_(std::move(name)),
      size_(payload_bytes),
      storage_(static_cast<std::byte*>(
          ::operator new[](payload_bytes + 2 * kGuardBytes, std::align_val_t{kGuardBytes}))) {
  for (std::size_t i = 0; i < kGuardBytes; ++i) {
    band_before()[i] = poison_at(i);
    band_after()[i] = poison_at(i);
  }
  std::memset(data(), 0, size_);
}

std::optional<GuardViolation> GuardedBuffer::check_guards() const {
  auto scan = [&](const std::byte* band, std::int64_t base) -> std::optional<GuardViolation> {
    std::optional<GuardViolation> v;
    for (std::size_t i = 0; i < kGuardBytes; ++i) {
      if (band[i] == poison_at(i)) continue;
      const std::int64_t at = base + static_cast<std::int64_t>(i);
      if (!v) v = GuardViolation{name_, at, at, 0};
      v->last_byte = at;
      ++v->bytes_changed;
    }
    return v;
  };
  if (auto v = scan(storage_.get(), -static_cast<std::int64_t>(kGuardBytes))) return v;
  return scan(storage_.get() + kGuardBytes + size_, static_cast<std::int64_t>(size_));
}

}  // namespace kda
