#include "device_staging.hpp"

#include <algorithm>
#include <cstdlib>
#include <optional>

namespace kda::adapters {

namespace {

constexpr std::size_t kGuard = GuardedBuffer::kGuardBytes;

std::size_t round_up(std::size_t n) { return (n + kGuard - 1) / kGuard * kGuard; }

// The extra band around a pool: one slot, so slot -1 and slot `slots` land in poison.
std::size_t pool_band(const Tensor& pool) {
  if (pool.view.rank() == 0) return 0;
  const auto slot = static_cast<std::size_t>(std::llabs(pool.view.stride(0))) * size_of(pool.dtype());
  return std::min(round_up(slot), kMaxPoolBand);
}

// The changed bytes of one outer band against its poison; `first` is the band's first offset.
std::optional<GuardViolation> compare_band(const std::string& buffer, const std::vector<std::byte>& now,
                                           std::int64_t first) {
  std::optional<GuardViolation> v;
  for (std::size_t i = 0; i < now.size(); ++i) {
    const std::int64_t at = first + static_cast<std::int64_t>(i);
    if (now[i] == outer_poison_at(at)) continue;
    if (!v) v = GuardViolation{buffer, at, at, 0};
    v->last_byte = at;
    ++v->bytes_changed;
  }
  return v;
}

std::vector<std::byte> outer_poison(std::int64_t first, std::size_t bytes) {
  std::vector<std::byte> out(bytes);
  for (std::size_t i = 0; i < bytes; ++i) out[i] = outer_poison_at(first + static_cast<std::int64_t>(i));
  return out;
}

}  // namespace

std::byte outer_poison_at(std::int64_t offset) {
  // Another sequence than the host band's (GuardedBuffer::poison_at), so the two never line up.
  return static_cast<std::byte>((static_cast<std::uint64_t>(offset) * 131u + 0x3du) & 0xffu);
}

std::vector<StagedBuffer> plan_staging(Problem& problem) {
  std::vector<StagedBuffer> plan;
  for (const TensorField& field : tensor_fields()) {
    Tensor* t = field.in(problem);
    if (!t || !t->buffer) continue;
    auto it = std::find_if(plan.begin(), plan.end(), [&](const StagedBuffer& b) { return b.host == t->buffer.get(); });
    if (it == plan.end()) it = plan.insert(plan.end(), StagedBuffer{t->buffer.get(), kGuard, kGuard, 0});
    if (field.name == "state_pool") {
      const std::size_t band = kGuard + pool_band(*t);
      it->band_before = std::max(it->band_before, band);
      it->band_after = std::max(it->band_after, band);
    }
  }
  std::size_t cursor = 0;
  for (StagedBuffer& b : plan) {
    b.offset = cursor;
    cursor = round_up(b.end());
  }
  return plan;
}

DeviceStaging::DeviceStaging(Problem& problem, DeviceMemory& memory)
    : memory_(memory), buffers_(plan_staging(problem)), device_{memory} {
  if (buffers_.empty()) return;
  device_.data = memory_.allocate(round_up(buffers_.back().end()));
  for (const StagedBuffer& b : buffers_) {
    const std::size_t size = b.host->size();
    std::byte* payload = device_.data + b.payload_offset();
    // The host's bands and payload in one copy; the outer bands' poison around them.
    memory_.to_device(payload - kGuard, b.host->band_before(), size + 2 * kGuard);
    if (b.band_before > kGuard) {
      const auto poison = outer_poison(-static_cast<std::int64_t>(b.band_before), b.band_before - kGuard);
      memory_.to_device(device_.data + b.offset, poison.data(), poison.size());
    }
    if (b.band_after > kGuard) {
      const auto poison = outer_poison(static_cast<std::int64_t>(size + kGuard), b.band_after - kGuard);
      memory_.to_device(payload + size + kGuard, poison.data(), poison.size());
    }
  }
}

const StagedBuffer& DeviceStaging::staged(const GuardedBuffer* host) const {
  for (const StagedBuffer& b : buffers_)
    if (b.host == host) return b;
  throw std::invalid_argument("DeviceStaging: buffer '" + host->name() + "' was not staged");
}

void* DeviceStaging::device_data(const Tensor& tensor) const {
  return device_.data + staged(tensor.buffer.get()).payload_offset() + tensor.view.byte_offset();
}

std::vector<GuardViolation> DeviceStaging::copy_back() {
  std::vector<GuardViolation> found;
  for (const StagedBuffer& b : buffers_) {
    const std::size_t size = b.host->size();
    const std::byte* payload = device_.data + b.payload_offset();
    memory_.to_host(b.host->band_before(), payload - kGuard, size + 2 * kGuard);
    if (b.band_before > kGuard) {
      std::vector<std::byte> band(b.band_before - kGuard);
      memory_.to_host(band.data(), device_.data + b.offset, band.size());
      if (auto v = compare_band(b.host->name(), band, -static_cast<std::int64_t>(b.band_before))) found.push_back(*v);
    }
    if (b.band_after > kGuard) {
      std::vector<std::byte> band(b.band_after - kGuard);
      memory_.to_host(band.data(), payload + size + kGuard, band.size());
      if (auto v = compare_band(b.host->name(), band, static_cast<std::int64_t>(size + kGuard))) found.push_back(*v);
    }
  }
  return found;
}

}  // namespace kda::adapters
