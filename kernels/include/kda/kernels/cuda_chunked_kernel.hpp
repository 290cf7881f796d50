#pragma once
// "cuda-chunked": the CUDA chunked prefill (chunked_prefill.hpp) behind the Kernel interface. run()
// validates the strict profile and the capabilities first and touches no device memory on a rejection;
// otherwise, like cuda-recurrent, it copies every buffer of the problem to the device in whole (guard
// bands and gaps included), runs both stages, synchronizes and copies every buffer back in whole, so
// out-of-bounds writes on the device are caught exactly as on the host. CUDA errors come back as
// RunOutcome::failed. `scan_form` forces one of stage B's five forms (tests run each; the named
// kernel lets the launcher choose).
#include <memory>

#include "kda/kernel.hpp"
#include "kda/kernels/chunked_params.hpp"

namespace kda::kernels {

std::unique_ptr<Kernel> make_cuda_chunked_kernel(ScanForm scan_form = ScanForm::automatic);

}  // namespace kda::kernels
