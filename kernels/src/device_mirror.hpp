#pragma once
// A device copy of every buffer a Problem's tensors name, guard bands included, so that a stray write
// on the device lands in the same poison bytes (or gaps) it would hit on the host and is found by the
// same checks after copy_back(). Throws std::runtime_error naming the CUDA error on failure.
#include <cstddef>
#include <map>

#include "kda/problem.hpp"

namespace kda::kernels {

class DeviceMirror {
 public:
  explicit DeviceMirror(const Problem& problem);  // allocates and copies every buffer in whole
  DeviceMirror(const DeviceMirror&) = delete;
  DeviceMirror& operator=(const DeviceMirror&) = delete;
  ~DeviceMirror();

  // The device address of a buffer's payload (its first byte after the guard band).
  std::byte* payload(const GuardedBuffer& buffer) const;
  // Copies every buffer back in whole, guard bands included.
  void copy_back();

 private:
  struct Copy {
    GuardedBuffer* host;
    std::byte* device;  // the allocation: guard band, payload, guard band
  };
  std::map<const GuardedBuffer*, Copy> copies_;
};

}  // namespace kda::kernels
