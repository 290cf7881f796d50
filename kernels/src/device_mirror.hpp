#pragma once
// A device copy of every buffer a Problem's tensors name, guard bands included, so that a stray write
// on the device lands in the same poison bytes (or gaps) it would hit on the host and is found by the
// same checks after copy_back(). Throws std::runtime_error naming the CUDA error on failure.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <map>

#include "kda/kernel.hpp"
#include "kda/kernels/decode_params.hpp"
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

// How a CUDA kernel behind kda::Kernel runs a problem: `run` launches on the device mirror of its
// buffers (addresses from `payload`) and waits (wait_for_kernel); on ok every buffer is copied back.
// CUDA errors and exceptions become failed outcomes.
RunOutcome run_mirrored(Problem& problem, const std::function<RunOutcome(const PayloadAddress& payload)>& run);

// The launch's error if there is one, else the kernel's, after waiting for the device.
RunOutcome wait_for_kernel(cudaError_t launched = cudaSuccess);

}  // namespace kda::kernels
