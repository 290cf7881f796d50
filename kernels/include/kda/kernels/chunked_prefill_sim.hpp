#pragma once
// The CPU simulation of the CUDA chunked prefill (chunked_prefill.cu): the same two stages, the same
// chunking (64 tokens, 16-row sub-blocks), the same element-wise fp32 arithmetic (detail/chunked_stage_a.hpp,
// shared with the kernel), the same fp16 storage of the intermediates and the same rounding of every
// tensor-core operand (tf32 in stage A, fp16 in stage B), and every chain of mma k-steps through the
// Hopper tensor-core model (tensor_core_model.hpp): CUDA and simulation agree bit for bit
// (tests/gpu/chunked_cuda_vs_sim_test).
#include <memory>

#include "kda/kernel.hpp"
#include "kda/kernels/chunked_params.hpp"

namespace kda::kernels {

// Stage A (the gates, then the rest) for chunk table entry c, value head hv: fills the workspace (host
// addresses in params).
void simulate_chunk_prepare(const ChunkedParams& params, std::int64_t c, std::int64_t hv);
// Stage B for sequence n, value head hv: o, chunk-start states and the final state.
void simulate_chunk_scan(const ChunkedParams& params, std::int64_t n, std::int64_t hv);

// Stage A's T = (I + Akk)^-1 of one chunk as the kernel forms it (step 6): from Akk's strictly lower entries
// (akk[stage_a::akk_at(i, j)]), t[64 i + j] gets T's fp16 rounding (the diagonal blocks' fp32 inverses
// rounded, the blocks below them T_IJ = fp16(-(T_II P_IJ)), zero above the block diagonal) and p[64 i + j],
// below the block diagonal, the fp16 P_IJ = sum_{M = J}^{I - 1} fp16(Akk_IM) T_MJ they came from (both
// products through the tensor-core model).
void simulate_inverse(const float* akk, float* t, float* p);

// Both stages over the whole problem, into its own output tensors; the workspace is allocated here.
void simulate_chunked_prefill(Problem& problem);

// "sim-chunked": validates the strict profile (rejecting before writing anything), then simulates.
std::unique_ptr<Kernel> make_sim_chunked_kernel();

}  // namespace kda::kernels
