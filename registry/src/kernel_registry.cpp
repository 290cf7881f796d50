#include "kda/registry/kernel_registry.hpp"

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

namespace kda::registry {

namespace {

// Our recurrent CUDA kernel and its CPU simulation are fp32 kernels (docs/cuda-decode.md): their tolerance
// comes from the fp32 recurrence.
constexpr const char* kFp32Model = "ref-fp32";
std::unique_ptr<Kernel> fp32_model() { return make_reference_kernel(Precision::fp32, Algorithm::recurrent); }
// A third-party kernel is judged against the model of the arithmetic it declares (fp32 unless it says
// otherwise); the model holds the kernel's own profile: its valid calls are the model's too.
constexpr const char* kDeclaredModel = "of its declared arithmetic (ref-fp32 unless declared)";
KernelUnderTest with_declared_model(std::unique_ptr<Kernel> kernel) {
  auto model = kernels::make_declared_arithmetic_model(kernel->capabilities().arithmetic, kernel->profile());
  return {std::move(kernel), std::move(model)};
}
// The chunked tensor-core kernel rounds its intermediates and operands to 11 bits by design: its model
// rounds the same values the same way (docs/cuda-prefill.md).
constexpr const char* kChunkedModel = "model-chunked-fp16";

// A reference kernel is its own precision model: fp32 is judged against fp32's own error.
KernelRecord reference(const char* name, Precision precision, Algorithm algorithm, const char* doc) {
  return {name, "", "itself", false, doc, [=](const std::string&, const KernelOptions&) {
            return KernelUnderTest{make_reference_kernel(precision, algorithm),
                                   make_reference_kernel(precision, algorithm),
                                   precision == Precision::fp64 ? 0x1p-53 : 0x1p-24};
          }};
}

// Our CUDA kernels, refused up front where they cannot run: otherwise every case fails (and shrinks) on
// the same error.
KernelUnderTest make_cuda(const std::string& name) {
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

KernelRecord cuda(const char* name, const char* model, const char* doc) {
  return {name, "", model, true, doc, [=](const std::string&, const KernelOptions&) { return make_cuda(name); }};
}

std::vector<KernelRecord> all_records() {
  std::vector<KernelRecord> records{
      reference("ref-fp64", Precision::fp64, Algorithm::recurrent, "the Eigen reference: the recurrence in fp64"),
      reference("ref-fp32", Precision::fp32, Algorithm::recurrent, "the Eigen reference: the recurrence in fp32"),
      reference("ref-fp64-chunked", Precision::fp64, Algorithm::chunked,
                "the Eigen reference: the chunked form in fp64"),
      reference("ref-fp32-chunked", Precision::fp32, Algorithm::chunked,
                "the Eigen reference: the chunked form in fp32"),
      {"sim-recurrent", "", kFp32Model, false, "the CPU simulation of cuda-recurrent, bit for bit",
       [](const std::string&, const KernelOptions&) {
         return KernelUnderTest{kernels::make_sim_recurrent_kernel(), fp32_model()};
       }},
      {"sim-chunked", "", kChunkedModel, false, "the CPU simulation of cuda-chunked, bit for bit",
       [](const std::string&, const KernelOptions&) {
         return KernelUnderTest{kernels::make_sim_chunked_kernel(), kernels::make_chunked_precision_model()};
       }},
      cuda("cuda-recurrent", kFp32Model, "our CUDA recurrent kernel for sm_90 (docs/cuda-decode.md)"),
      cuda("cuda-chunked", kChunkedModel, "our CUDA chunked prefill for sm_90, on tensor cores (docs/cuda-prefill.md)"),
      {"plugin:PATH", "plugin:", kDeclaredModel, false, "a shared library behind the C ABI of kda_plugin.h (adapters/)",
       [](const std::string& path, const KernelOptions&) {
         return with_declared_model(adapters::load_plugin(path));
       }},
      {"exec:COMMAND", "exec:", kDeclaredModel, false, "a program speaking the exec line protocol (adapters/)",
       [](const std::string& command, const KernelOptions& options) {
         adapters::ExecOptions exec;
         exec.timeout = options.timeout;
         exec.log = &std::cerr;
         return with_declared_model(adapters::start_exec_adapter(command, exec));
       }},
  };
  return records;
}

}  // namespace

const std::vector<KernelRecord>& kernel_records() {
  static const std::vector<KernelRecord> records = all_records();
  return records;
}

std::string unavailable(const KernelRecord& record) {
  if (!record.needs_gpu) return {};
#if KDA_HAVE_CUDA
  const auto device = kernels::hopper_device();
  return device.available ? "" : "no sm_90 GPU: " + device.reason;
#else
  return "not in this build (built without CUDA)";
#endif
}

KernelUnderTest make_kernel(const std::string& name, const KernelOptions& options) {
  for (const auto& record : kernel_records()) {
    if (!record.prefix.empty() && name.starts_with(record.prefix))
      return record.make(name.substr(record.prefix.size()), options);
    if (record.prefix.empty() && name == record.name) return record.make({}, options);
  }
  std::string known;
  for (const auto& n : kernel_names()) known += (known.empty() ? "" : ", ") + n;
  throw std::invalid_argument("unknown kernel '" + name + "' (known: " + known + ")");
}

std::string precision_model_name(const KernelUnderTest& k) { return k.model->name(); }

std::vector<std::string> kernel_names() {
  std::vector<std::string> names;
  for (const auto& record : kernel_records()) names.push_back(record.name);
  return names;
}

}  // namespace kda::registry
