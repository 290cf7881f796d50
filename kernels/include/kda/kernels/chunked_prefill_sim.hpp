#pragma once
// The CPU simulation of the CUDA chunked prefill (chunked_prefill.cu): the same two stages, the same
// chunking (64 tokens, 16-row sub-blocks), the same element-wise fp32 arithmetic (detail/chunked_stage_a.hpp,
// shared with the kernel), the same fp16 storage of the intermediates and the same rounding of every
// tensor-core operand (tf32 in stage A, fp16 in stage B). Tensor-core products are modelled as fp32 fma
// chains in index order; the device's accumulation order inside an mma is not specified, so CUDA and
// simulation agree within the bound of docs/cuda-prefill.md, not bit for bit.
#include <memory>

#include "kda/kernel.hpp"
#include "kda/kernels/chunked_params.hpp"

namespace kda::kernels {

// Which order the simulation sums tensor-core products in: ascending index (the model), or descending,
// a second valid order whose distance from the first measures the sensitivity to accumulation order
// (the basis of the CUDA-vs-simulation bound).
enum class SumOrder : std::uint8_t { ascending, descending };

// Stage A (the gates, then the rest) for chunk table entry c, value head hv: fills the workspace (host
// addresses in params).
void simulate_chunk_prepare(const ChunkedParams& params, std::int64_t c, std::int64_t hv, SumOrder order);
// Stage B for sequence n, value head hv: o, chunk-start states and the final state.
void simulate_chunk_scan(const ChunkedParams& params, std::int64_t n, std::int64_t hv, SumOrder order);

// Both stages over the whole problem, into its own output tensors; the workspace is allocated here.
void simulate_chunked_prefill(Problem& problem, SumOrder order = SumOrder::ascending);

// "sim-chunked": validates the strict profile (rejecting before writing anything), then simulates.
std::unique_ptr<Kernel> make_sim_chunked_kernel();

}  // namespace kda::kernels
