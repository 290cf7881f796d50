#pragma once
// Kernels the command line can name, each with the precision-matched model its tolerance uses.
#include <memory>
#include <string>
#include <vector>

#include "kda/kernel.hpp"

namespace kda::cli {

struct KernelUnderTest {
  std::unique_ptr<Kernel> kernel;
  std::unique_ptr<Kernel> model;
};

// Known names: ref-fp64, ref-fp32, ref-fp64-chunked, ref-fp32-chunked. Throws std::invalid_argument
// listing them for an unknown name.
KernelUnderTest make_kernel(const std::string& name);
std::vector<std::string> kernel_names();

}  // namespace kda::cli
