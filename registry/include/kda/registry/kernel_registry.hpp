#pragma once
// Every kernel kda-oracle can name, one record each: how to make it with the precision model its
// tolerance uses, whether it needs a GPU, and a line of doc. The command line (`--kernel`,
// `check --list`), the catalogue test over every kernel and docs/properties.md's kernel table read it.
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kda/kernel.hpp"

namespace kda::registry {

struct KernelUnderTest {
  std::unique_ptr<Kernel> kernel;
  std::unique_ptr<Kernel> model;  // its precision-matched model (props::CheckContext::model)
  // The unit roundoff of the precision the kernel computes in (props::TolerancePolicy::compute_roundoff):
  // fp32 (or coarser, accumulating in fp32) for every kernel but the fp64 references.
  double compute_roundoff = 0x1p-24;
};

struct KernelOptions {
  std::chrono::milliseconds timeout{60'000};  // exec: per request
};

struct KernelRecord {
  std::string name;    // as on the command line: "ref-fp64"; a prefix with its argument in words: "plugin:PATH"
  std::string prefix;  // "plugin:" where the kernel is named by a prefix and an argument; empty otherwise
  std::string model;   // the precision model, in words
  bool needs_gpu = false;
  std::string doc;  // one line
  // The kernel and its model; `argument` is what follows a prefix (empty otherwise). Throws
  // std::runtime_error where it cannot run here (no device, not in this build).
  std::function<KernelUnderTest(const std::string& argument, const KernelOptions& options)> make;
};

// Every record, in a fixed order (the same in every build: CUDA kernels are listed without CUDA too).
const std::vector<KernelRecord>& kernel_records();

// Why the record's kernel cannot run here (not in this build, no sm_90 device); empty when it can.
std::string unavailable(const KernelRecord& record);

// The kernel `name` names: a record's name, or a prefix and its argument (plugin:PATH, exec:COMMAND).
// Throws std::invalid_argument listing the known names for an unknown one, std::runtime_error where
// the kernel cannot run here.
KernelUnderTest make_kernel(const std::string& name, const KernelOptions& options = {});

// The name of the precision model that judges the kernel ("ref-fp32", "model-chunked-bf16-operands", ...):
// what `check` prints in its header, a failure's diagnosis names and results files record.
std::string precision_model_name(const KernelUnderTest& kernel);

// The names as a user types them: "ref-fp64", ..., "plugin:PATH", "exec:COMMAND".
std::vector<std::string> kernel_names();

}  // namespace kda::registry
