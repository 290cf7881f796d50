#pragma once
// A call's buffers staged on a device for a plugin that takes device memory (KDA_MEMORY_CUDA). Every
// distinct buffer the problem's tensors view is copied whole into one device allocation (a serving
// run's kept metadata buffers into blocks kept across calls), each between device guard bands: the
// host's guard band (GuardedBuffer::kGuardBytes of its poison) next to the payload and, before and
// after a state pool, one slot more of poison further out, where a slot index off by one (-1, or the
// slot count) lands. Tensors get device pointers with their own strides and
// offsets, so aliasing (q, k, v slices of one fused buffer; a pool read and written in place) is the
// host's. After the call every buffer comes back whole, payload and the host-sized part of its bands,
// into the host buffer: a stray device write there is seen by the same byte comparison as a host
// write. Bytes of the outer bands, which the host buffer has no room for, are compared here.
//
// The device is behind DeviceMemory: the CUDA runtime in kda-oracle (cuda_device_memory.hpp), host
// memory in the unit tests, so the plan and the comparison are tested without a GPU.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <vector>

#include "kda/buffer.hpp"
#include "kda/problem.hpp"

namespace kda::adapters {

// A device operation that failed; the message names the runtime call and its error.
struct DeviceError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;
  // `bytes` of device memory, aligned to GuardedBuffer::kGuardBytes.
  virtual std::byte* allocate(std::size_t bytes) = 0;
  virtual void release(std::byte* device) noexcept = 0;
  virtual void to_device(std::byte* device, const std::byte* host, std::size_t bytes) = 0;
  virtual void to_host(std::byte* host, const std::byte* device, std::size_t bytes) = 0;
  // Waits for the work the plugin enqueued on stream(); a kernel's error is thrown here.
  virtual void synchronize() = 0;
  virtual int device() const = 0;     // kda_call::device
  virtual void* stream() const = 0;   // kda_call::stream (a cudaStream_t)
};

// Where one buffer goes in the device allocation.
struct StagedBuffer {
  GuardedBuffer* host = nullptr;
  std::size_t band_before = 0, band_after = 0;  // device guard bands, at least kGuardBytes each
  std::size_t offset = 0;                        // of the band before, from the allocation's start
  std::size_t payload_offset() const { return offset + band_before; }
  std::size_t end() const { return payload_offset() + host->size() + band_after; }
};

// The buffers of `problem` in the order its tensors first name them, each placed after the previous
// one with its payload aligned to kGuardBytes (the host's alignment, so alignment rules see the same
// addresses modulo 256). A pool's bands are one slot (its slot stride in bytes, rounded up to
// kGuardBytes) wider than the host's, at most kMaxPoolBand bytes more.
std::vector<StagedBuffer> plan_staging(Problem& problem);
inline constexpr std::size_t kMaxPoolBand = std::size_t{64} << 20;

// The poison at a byte of a device band outside the host's (offset from the payload start: below
// -kGuardBytes, or at least payload + kGuardBytes). Position-dependent like the host's.
std::byte outer_poison_at(std::int64_t offset);

// Device copies that outlive a call, for the host buffers a serving run keeps (PersistentMetadata):
// a device plugin is handed the same metadata pointer, refilled, call after call, as an engine's
// captured CUDA graphs are. A copy is freed once its host buffer is no longer kept elsewhere.
class KeptDeviceBuffers {
 public:
  explicit KeptDeviceBuffers(DeviceMemory& memory) : memory_(memory) {}
  KeptDeviceBuffers(const KeptDeviceBuffers&) = delete;
  KeptDeviceBuffers& operator=(const KeptDeviceBuffers&) = delete;
  ~KeptDeviceBuffers();
  // The block of `bytes` (bands included) for `host`: the one it had, else a new one.
  std::byte* block_for(const std::shared_ptr<GuardedBuffer>& host, std::size_t bytes);
  // Frees the blocks of host buffers that only this holds (their serving run ended).
  void drop_unused();
  std::size_t size() const { return blocks_.size(); }

 private:
  struct Block {
    std::shared_ptr<GuardedBuffer> host;  // held, so that no other buffer takes its address
    std::byte* data;
    std::size_t bytes;
  };
  DeviceMemory& memory_;
  std::map<const GuardedBuffer*, Block> blocks_;
};

// One call's staging: allocated, filled and freed on every path (RAII).
class DeviceStaging {
 public:
  // Plans, allocates and copies every buffer, bands included, to the device. The buffers of
  // `persistent` go to their kept blocks (`kept`), the others to one allocation of this call.
  DeviceStaging(Problem& problem, DeviceMemory& memory,
                const std::vector<std::shared_ptr<GuardedBuffer>>& persistent = {}, KeptDeviceBuffers* kept = nullptr);
  DeviceStaging(const DeviceStaging&) = delete;
  DeviceStaging& operator=(const DeviceStaging&) = delete;

  // The device address of the tensor's element [0, ..., 0] (its view's offset into its buffer).
  void* device_data(const Tensor& tensor) const;
  DeviceMemory& memory() const { return memory_; }

  // After the call (synchronised): every buffer back whole into its host buffer, the host-sized part
  // of its bands included; returns the changed bytes of the outer bands, one per band, located to
  // the byte relative to the payload start.
  std::vector<GuardViolation> copy_back();

 private:
  // The allocation, released when the staging ends, also when its constructor throws half-way.
  struct Allocation {
    DeviceMemory& memory;
    std::byte* data = nullptr;
    ~Allocation() {
      if (data) memory.release(data);
    }
  };
  std::size_t index_of(const GuardedBuffer* host) const;
  std::byte* payload(std::size_t i) const { return bands_[i] + buffers_[i].band_before; }

  DeviceMemory& memory_;
  std::vector<StagedBuffer> buffers_;
  Allocation device_;
  std::vector<std::byte*> bands_;  // each buffer's band before: in device_, or its kept block
};

}  // namespace kda::adapters
