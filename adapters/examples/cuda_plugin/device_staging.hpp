#pragma once
// Host memory mirrored on the device for one plugin call. kda-oracle hands a plugin host pointers
// (kda_plugin.h: KDA_MEMORY_HOST); a CUDA kernel needs device ones. Every tensor's byte span (from its
// lowest to its highest element, gaps included) is copied over; spans that overlap share one device
// region, so tensors that alias on the host (a pool read and written in place, an output written
// into an input) alias on the device too. Regions holding an output are copied back whole after the
// kernel ran: bytes it did not write come back as they went, so a stray write inside a span is seen.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kda/adapters/kda_plugin.h"

namespace kda::cuda_plugin {

class DeviceStaging {
 public:
  // Plans the regions; tensors absent or with no elements take no space.
  void add(const kda_tensor& t, bool output);
  // Allocates and copies every region to the device; then device(t) maps a tensor's data pointer.
  cudaError_t upload();
  void* device(const kda_tensor& t) const;
  // Copies the regions holding an output back to the host.
  cudaError_t download() const;
  ~DeviceStaging();

 private:
  struct Span {
    const std::byte* lo;
    const std::byte* hi;  // one past the last byte
    bool output;
  };
  struct Region {
    std::byte* host;
    std::size_t bytes;
    std::size_t device_offset;
    bool output;
  };
  std::vector<Span> spans_;
  std::vector<Region> regions_;
  std::byte* device_ = nullptr;
};

}  // namespace kda::cuda_plugin
