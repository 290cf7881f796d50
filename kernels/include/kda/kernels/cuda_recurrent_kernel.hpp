#pragma once
// "cuda-recurrent": the CUDA token-serial kernel (recurrent_decode.hpp) behind the Kernel interface.
// run() validates the strict profile first and rejects without touching the device; otherwise it
// copies every buffer of the problem to the device in whole (guard bands and gaps included), launches,
// synchronizes and copies every buffer back in whole, so out-of-bounds writes on the device are caught
// exactly as on the host. CUDA errors come back as RunOutcome::failed.
#include <memory>

#include "kda/kernel.hpp"
#include "kda/kernels/recurrent_decode.hpp"

namespace kda::kernels {

std::unique_ptr<Kernel> make_cuda_recurrent_kernel(const LaunchConfig& config = {});

}  // namespace kda::kernels
