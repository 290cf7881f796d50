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

KeptDeviceBuffers::~KeptDeviceBuffers() {
  for (auto& [host, block] : blocks_) memory_.release(block.data);
}

std::byte* KeptDeviceBuffers::block_for(const std::shared_ptr<GuardedBuffer>& host, std::size_t bytes) {
  if (auto it = blocks_.find(host.get()); it != blocks_.end()) {
    if (it->second.bytes == bytes) return it->second.data;
    memory_.release(it->second.data);
    blocks_.erase(it);
  }
  std::byte* data = memory_.allocate(bytes);
  blocks_.emplace(host.get(), Block{host, data, bytes});
  return data;
}

void KeptDeviceBuffers::drop_unused() {
  for (auto it = blocks_.begin(); it != blocks_.end();) {
    if (it->second.host.use_count() > 1) {
      ++it;
      continue;
    }
    memory_.release(it->second.data);
    it = blocks_.erase(it);
  }
}

DeviceStaging::DeviceStaging(Problem& problem, DeviceMemory& memory,
                             const std::vector<std::shared_ptr<GuardedBuffer>>& persistent, KeptDeviceBuffers* kept)
    : memory_(memory), buffers_(plan_staging(problem)), device_{memory} {
  if (buffers_.empty()) return;
  device_.data = memory_.allocate(round_up(buffers_.back().end()));
  for (const StagedBuffer& b : buffers_) {
    const auto own =
        std::find_if(persistent.begin(), persistent.end(), [&](const auto& p) { return p.get() == b.host; });
    const bool keep = kept && own != persistent.end();
    bands_.push_back(keep ? kept->block_for(*own, b.end() - b.offset) : device_.data + b.offset);
  }
  for (std::size_t i = 0; i < buffers_.size(); ++i) {
    const StagedBuffer& b = buffers_[i];
    const std::size_t size = b.host->size();
    // The host's bands and payload in one copy; the outer bands' poison around them.
    memory_.to_device(payload(i) - kGuard, b.host->band_before(), size + 2 * kGuard);
    if (b.band_before > kGuard) {
      const auto poison = outer_poison(-static_cast<std::int64_t>(b.band_before), b.band_before - kGuard);
      memory_.to_device(bands_[i], poison.data(), poison.size());
    }
    if (b.band_after > kGuard) {
      const auto poison = outer_poison(static_cast<std::int64_t>(size + kGuard), b.band_after - kGuard);
      memory_.to_device(payload(i) + size + kGuard, poison.data(), poison.size());
    }
  }
}

std::size_t DeviceStaging::index_of(const GuardedBuffer* host) const {
  for (std::size_t i = 0; i < buffers_.size(); ++i)
    if (buffers_[i].host == host) return i;
  throw std::invalid_argument("DeviceStaging: buffer '" + host->name() + "' was not staged");
}

void* DeviceStaging::device_data(const Tensor& tensor) const {
  return payload(index_of(tensor.buffer.get())) + tensor.view.byte_offset();
}

std::vector<GuardViolation> DeviceStaging::copy_back() {
  std::vector<GuardViolation> found;
  for (std::size_t i = 0; i < buffers_.size(); ++i) {
    const StagedBuffer& b = buffers_[i];
    const std::size_t size = b.host->size();
    memory_.to_host(b.host->band_before(), payload(i) - kGuard, size + 2 * kGuard);
    if (b.band_before > kGuard) {
      std::vector<std::byte> band(b.band_before - kGuard);
      memory_.to_host(band.data(), bands_[i], band.size());
      if (auto v = compare_band(b.host->name(), band, -static_cast<std::int64_t>(b.band_before))) found.push_back(*v);
    }
    if (b.band_after > kGuard) {
      std::vector<std::byte> band(b.band_after - kGuard);
      memory_.to_host(band.data(), payload(i) + size + kGuard, band.size());
      if (auto v = compare_band(b.host->name(), band, static_cast<std::int64_t>(size + kGuard))) found.push_back(*v);
    }
  }
  return found;
}

}  // namespace kda::adapters
