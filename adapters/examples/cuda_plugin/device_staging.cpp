#include "device_staging.hpp"

#include <cuda_runtime.h>

#include <algorithm>

namespace kda::cuda_plugin {

namespace {

std::int64_t element_bytes(int dtype) {
  switch (dtype) {
    case KDA_BF16:
    case KDA_F16: return 2;
    case KDA_F32:
    case KDA_I32: return 4;
    default: return 8;
  }
}

bool empty(const kda_tensor& t) {
  if (!t.present || !t.data) return true;
  for (int d = 0; d < t.rank; ++d)
    if (t.shape[d] == 0) return true;
  return false;
}

// A region's device copy starts on a 256-byte boundary plus the host address's offset modulo 256, so
// every alignment the kernel tests for (16-byte rows, 32-byte pools) is the host's.
constexpr std::size_t kAlignment = 256;

}  // namespace

void DeviceStaging::add(const kda_tensor& t, bool output) {
  if (empty(t)) return;
  std::int64_t lo = 0, hi = 0;  // element offsets of the lowest and highest element
  for (int d = 0; d < t.rank; ++d) {
    const std::int64_t reach = (t.shape[d] - 1) * t.strides[d];
    (reach < 0 ? lo : hi) += reach;
  }
  const std::int64_t bytes = element_bytes(t.dtype);
  const auto* base = static_cast<const std::byte*>(t.data);
  spans_.push_back({base + lo * bytes, base + (hi + 1) * bytes, output});
}

cudaError_t DeviceStaging::upload() {
  std::sort(spans_.begin(), spans_.end(), [](const Span& a, const Span& b) { return a.lo < b.lo; });
  std::vector<Span> merged;
  for (const Span& s : spans_) {
    if (!merged.empty() && s.lo < merged.back().hi) {
      merged.back().hi = std::max(merged.back().hi, s.hi);
      merged.back().output = merged.back().output || s.output;
    } else {
      merged.push_back(s);
    }
  }
  std::size_t total = 0;
  for (const Span& s : merged) {
    const std::size_t misalign = reinterpret_cast<std::uintptr_t>(s.lo) % kAlignment;
    total = (total + kAlignment - 1) / kAlignment * kAlignment + misalign;
    regions_.push_back({const_cast<std::byte*>(s.lo), static_cast<std::size_t>(s.hi - s.lo), total, s.output});
    total += regions_.back().bytes;
  }
  if (total == 0) return cudaSuccess;
  if (const cudaError_t e = cudaMalloc(&device_, total); e != cudaSuccess) return e;
  for (const Region& r : regions_)
    if (const cudaError_t e = cudaMemcpy(device_ + r.device_offset, r.host, r.bytes, cudaMemcpyHostToDevice);
        e != cudaSuccess)
      return e;
  return cudaSuccess;
}

void* DeviceStaging::device(const kda_tensor& t) const {
  if (!t.present || !t.data) return nullptr;
  const auto* host = static_cast<const std::byte*>(t.data);
  for (const Region& r : regions_)
    if (host >= r.host && host < r.host + r.bytes) return device_ + r.device_offset + (host - r.host);
  // A tensor with no elements is never read or written; any valid address will do.
  return device_;
}

cudaError_t DeviceStaging::download() const {
  for (const Region& r : regions_)
    if (r.output)
      if (const cudaError_t e = cudaMemcpy(r.host, device_ + r.device_offset, r.bytes, cudaMemcpyDeviceToHost);
          e != cudaSuccess)
        return e;
  return cudaSuccess;
}

DeviceStaging::~DeviceStaging() { cudaFree(device_); }

}  // namespace kda::cuda_plugin
