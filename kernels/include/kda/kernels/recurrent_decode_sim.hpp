#pragma once
// The CPU simulation of the CUDA token-serial kernel (recurrent_decode.cu): the same warps, the same
// split of each state row over lanes, the same per-lane accumulation order and shuffle-tree reductions,
// the same fp32 rounding points and the same exp/log polynomials (decode_math.hpp). It needs no CUDA,
// so CI checks the kernel's arithmetic without a GPU; on a GPU the kernel's outputs must be
// bit-identical to it (docs/cuda-decode.md derives why and how that is tested).
#include <memory>

#include "kda/kernel.hpp"
#include "kda/kernels/decode_params.hpp"

namespace kda::kernels {

// Runs every warp of the kernel's grid, one after the other, on host memory (params built with host
// addresses). Writes exactly what the kernel writes: o, and the final states (dense or pool slots) or
// a verify call's state after every token (pool slots or scratch steps).
void simulate_recurrent_decode(const DecodeParams& params);

// "sim-recurrent": validates the strict profile (rejecting before writing anything), then simulates
// into the problem's own output tensors.
std::unique_ptr<Kernel> make_sim_recurrent_kernel();

}  // namespace kda::kernels
