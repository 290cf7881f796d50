#include "device_mirror.hpp"

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace kda::kernels {

namespace {

constexpr std::size_t kGuard = GuardedBuffer::kGuardBytes;

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

std::size_t whole(const GuardedBuffer& b) { return b.size() + 2 * kGuard; }

}  // namespace

DeviceMirror::DeviceMirror(const Problem& problem) {
  try {
    std::vector<const Tensor*> tensors = problem.inputs();
    for (const Tensor* t : problem.outputs()) tensors.push_back(t);
    for (const Tensor* t : tensors) {
      GuardedBuffer* host = t->buffer.get();
      if (copies_.contains(host)) continue;
      void* device = nullptr;
      check(cudaMalloc(&device, whole(*host)), "cudaMalloc");
      copies_[host] = {host, static_cast<std::byte*>(device)};
      check(cudaMemcpy(device, host->band_before(), whole(*host), cudaMemcpyHostToDevice), "cudaMemcpy to device");
    }
  } catch (...) {
    for (auto& [key, copy] : copies_) cudaFree(copy.device);
    throw;
  }
}

DeviceMirror::~DeviceMirror() {
  for (auto& [key, copy] : copies_) cudaFree(copy.device);
}

std::byte* DeviceMirror::payload(const GuardedBuffer& buffer) const {
  const auto it = copies_.find(&buffer);
  if (it == copies_.end()) throw std::logic_error("DeviceMirror: buffer '" + buffer.name() + "' was not mirrored");
  return it->second.device + kGuard;  // cudaMalloc aligns to 256 bytes and so does the host buffer's payload
}

void DeviceMirror::copy_back() {
  for (auto& [key, copy] : copies_)
    check(cudaMemcpy(copy.host->band_before(), copy.device, whole(*copy.host), cudaMemcpyDeviceToHost),
          "cudaMemcpy to host");
}

RunOutcome run_mirrored(Problem& problem, const std::function<RunOutcome(const PayloadAddress& payload)>& run) {
  try {
    DeviceMirror mirror(problem);
    const RunOutcome ran = run([&](GuardedBuffer& b) { return mirror.payload(b); });
    if (ran.status == RunOutcome::Status::ok) mirror.copy_back();
    return ran;
  } catch (const std::exception& e) {
    return RunOutcome::failed(e.what());
  }
}

RunOutcome wait_for_kernel(cudaError_t launched) {
  if (launched != cudaSuccess) return RunOutcome::failed(std::string("launch failed: ") + cudaGetErrorString(launched));
  if (const cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess)
    return RunOutcome::failed(std::string("kernel failed: ") + cudaGetErrorString(e));
  return RunOutcome::ok();
}

}  // namespace kda::kernels
