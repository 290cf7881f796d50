#pragma once
// The CUDA chunked prefill for Hopper (sm_90a) on tensor cores (mma.sync, tf32 in stage A and fp16 in
// stage B, fp32 accumulate):
//   stage A (prepare), one block per (chunk, value head): gate, l2norm, beta, the decays, Aqk and Akk
//     (off-diagonal 16-row sub-blocks on tensor cores, diagonal ones element-wise), the exact forward
//     substitution for u and w; the intermediates go to a workspace in fp16;
//   stage B (scan), one block per (sequence, value head, 32 value channels): the state in registers,
//     chunk after chunk: v_new = u - w S, o = qg S + Aqk v_new, S = exp(Γlast) S + kg^T v_new.
// Design, numerics and the bound against the simulation: docs/cuda-prefill.md.
#include <cuda_runtime_api.h>

#include "kda/kernel.hpp"
#include "kda/kernels/chunked_params.hpp"

namespace kda::kernels {

// The device side of one call: the chunk table and the workspace in device memory (allocated here,
// freed by the destructor; the kernels must be done by then) and the params with device addresses.
// Throws std::runtime_error naming the CUDA error. The problem must have passed admit_chunked.
class ChunkedDeviceCall {
 public:
  ChunkedDeviceCall(const Problem& problem, const PayloadAddress& device_payload);
  ChunkedDeviceCall(const ChunkedDeviceCall&) = delete;
  ChunkedDeviceCall& operator=(const ChunkedDeviceCall&) = delete;
  ~ChunkedDeviceCall();
  const ChunkedParams& params() const { return params_; }

 private:
  void* table_ = nullptr;
  void* workspace_ = nullptr;
  ChunkedParams params_;
};

// Stage A's phases, in order, as ChunkedParams::prepare_phase_clocks times them.
// Step 6 in three: the right-hand sides' staging beside the diagonal blocks' inverses, T's levels (as the
// first warp sees their last barrier), the products with T and the stores beside the loaders' next loads.
inline constexpr int kPreparePhases = 8;
inline constexpr const char* kPreparePhaseNames[kPreparePhases] = {
    "inputs", "l2norm", "diagonal sub-blocks", "decay chains", "off-diagonal (mma)",
    "right-hand sides, diagonal inverses", "inverse's levels", "products and stores"};

// The two stages, each on `stream`, without synchronizing; both together in order. Stage A is two
// kernels, the gates and then the prepare kernel; the gates alone (benchmarks) also have their launch.
cudaError_t launch_chunked_gates(const ChunkedParams& params, cudaStream_t stream);
cudaError_t launch_chunked_prepare(const ChunkedParams& params, cudaStream_t stream);
cudaError_t launch_chunked_scan(const ChunkedParams& params, cudaStream_t stream);
// The form stage B runs in: params.scan_form, or where automatic the launcher's choice for this device.
cudaError_t chunked_scan_form(const ChunkedParams& params, ScanForm& form);
cudaError_t launch_chunked_prefill(const ChunkedParams& params, cudaStream_t stream);

}  // namespace kda::kernels
