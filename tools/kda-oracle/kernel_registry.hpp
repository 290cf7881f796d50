#pragma once
// Kernels the command line can name, each with the precision-matched model its tolerance uses.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "kda/kernel.hpp"

namespace kda::cli {

struct KernelUnderTest {
  std::unique_ptr<Kernel> kernel;
  std::unique_ptr<Kernel> model;
};

struct KernelOptions {
  std::chrono::milliseconds timeout{60'000};  // exec: per request
};

// Known names: ref-fp64, ref-fp32, ref-fp64-chunked, ref-fp32-chunked; sim-recurrent and sim-chunked
// (the CPU simulations of our CUDA kernels) and, in CUDA builds, cuda-recurrent and cuda-chunked; and
// third-party kernels (adapters/README.md): plugin:PATH (a shared library behind kda_plugin.h) and
// exec:COMMAND (a program speaking the exec line protocol). The chunked tensor-core kernels are judged
// against their precision model (chunked_precision_model.hpp), all others but the references against
// the fp32 recurrent reference. Throws std::invalid_argument listing them for an unknown name.
KernelUnderTest make_kernel(const std::string& name, const KernelOptions& options = {});
std::vector<std::string> kernel_names();

}  // namespace kda::cli
