#pragma once
// The CUDA token-serial KDA kernel for Hopper (sm_90a): decode (one token per sequence), prefill
// (several) and speculative verify (several, the state after each stored) through one kernel that
// carries each state in registers from token to token. One warp owns `rows_per_warp` value channels of
// one (sequence, value head): it reads those rows of the state once, runs every token of the sequence
// and writes them back (after every token, for a verify call). Design and numbers: docs/cuda-decode.md.
#include <cuda_runtime_api.h>

#include "kda/kernel.hpp"
#include "kda/kernels/decode_params.hpp"

namespace kda::kernels {

struct LaunchConfig {
  int steps = 0;            // row groups per warp: 4, 8 or 16 (WarpSplit); 0: default_steps()
  int warps_per_block = 4;  // 1 to 8
};

// 16 row groups per warp where the state's rows stream through shared memory (fp32 rows, contiguous in
// k, 16-byte aligned: the decode fast path), else 8 (rows held in registers, or a verify call, whose
// per-token stores leave 16 staged row groups too few registers).
int default_steps(const DecodeParams& params);

// Validates `problem` against the strict profile and returns the violations without launching; else
// launches on `stream`, reading and writing the problem's tensors at their device addresses
// (`device_payload` maps each buffer to its device copy). Returns failed with the CUDA error when the
// launch fails. Does not synchronize: the outputs are ready when the stream is.
RunOutcome launch_recurrent_decode(const Problem& problem, const PayloadAddress& device_payload, cudaStream_t stream,
                                   const LaunchConfig& config = {});

// Launches an already validated call (a timing loop validates once): params built with device addresses.
cudaError_t launch_recurrent_decode(const DecodeParams& params, cudaStream_t stream, int warps_per_block = 4);

}  // namespace kda::kernels
