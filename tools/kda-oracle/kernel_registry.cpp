#include "kernel_registry.hpp"

#include <iostream>
#include <stdexcept>

#include "kda/adapters/exec_kernel.hpp"
#include "kda/adapters/plugin_kernel.hpp"
#include "kda/kernels/chunked_precision_model.hpp"
#include "kda/kernels/chunked_prefill_sim.hpp"
#include "kda/kernels/recurrent_decode_sim.hpp"
#include "kda/reference_kernel.hpp"
#if KDA_HAVE_CUDA
#include "kda/kernels/cuda_chunked_kernel.hpp"
#include "kda/kernels/cuda_recurrent_kernel.hpp"
#include "kda/kernels/device.hpp"
#endif

namespace kda::cli {

namespace {
struct Entry {
  const char* name;
  Precision precision;
  Algorithm algorithm;
};
// A reference kernel is its own precision model: fp32 is judged against fp32's own error.
constexpr Entry kReferences[] = {
    {"ref-fp64", Precision::fp64, Algorithm::recurrent},
    {"ref-fp32", Precision::fp32, Algorithm::recurrent},
    {"ref-fp64-chunked", Precision::fp64, Algorithm::chunked},
    {"ref-fp32-chunked", Precision::fp32, Algorithm::chunked},
};
}  // namespace

std::vector<std::string> kernel_names() {
  std::vector<std::string> names;
  for (const auto& e : kReferences) names.emplace_back(e.name);
  names.emplace_back("sim-recurrent");
  names.emplace_back("sim-chunked");
  names.emplace_back("cuda-recurrent");
  names.emplace_back("cuda-chunked");
  names.emplace_back("plugin:PATH");
  names.emplace_back("exec:COMMAND");
  return names;
}

KernelUnderTest make_kernel(const std::string& name, const KernelOptions& options) {
  // A kernel we did not write computes in fp32 at best: its tolerance comes from the fp32 recurrence.
  auto fp32_model = [] { return make_reference_kernel(Precision::fp32, Algorithm::recurrent); };
  if (name.starts_with("plugin:")) return {adapters::load_plugin(name.substr(7)), fp32_model()};
  if (name.starts_with("exec:")) {
    adapters::ExecOptions exec;
    exec.timeout = options.timeout;
    exec.log = &std::cerr;
    return {adapters::start_exec_adapter(name.substr(5), exec), fp32_model()};
  }
  // Our CUDA kernel and its CPU simulation are fp32 kernels too (docs/cuda-decode.md).
  if (name == "sim-recurrent") return {kernels::make_sim_recurrent_kernel(), fp32_model()};
  // The chunked tensor-core kernel rounds its intermediates and operands to 11 bits by design: its model
  // rounds the same values the same way (docs/cuda-prefill.md).
  if (name == "sim-chunked") return {kernels::make_sim_chunked_kernel(), kernels::make_chunked_precision_model()};
  // Refused up front where they cannot run: otherwise every case fails (and shrinks) on the same error.
  if (name == "cuda-recurrent" || name == "cuda-chunked") {
#if KDA_HAVE_CUDA
    if (const auto device = kernels::hopper_device(); !device.available)
      throw std::runtime_error("kernel '" + name + "' needs an sm_90 GPU: " + device.reason);
    if (name == "cuda-recurrent") return {kernels::make_cuda_recurrent_kernel(), fp32_model()};
    return {kernels::make_cuda_chunked_kernel(), kernels::make_chunked_precision_model()};
#else
    throw std::runtime_error("kernel '" + name + "' is not in this build of kda-oracle (built without CUDA: nvcc " +
                             "not found, or -DKDA_ENABLE_CUDA=OFF)");
#endif
  }
  for (const auto& e : kReferences)
    if (name == e.name)
      return {make_reference_kernel(e.precision, e.algorithm), make_reference_kernel(e.precision, e.algorithm)};
  std::string known;
  for (const auto& n : kernel_names()) known += (known.empty() ? "" : ", ") + n;
  throw std::invalid_argument("unknown kernel '" + name + "' (known: " + known + ")");
}

}  // namespace kda::cli
