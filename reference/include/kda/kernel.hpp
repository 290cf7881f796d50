#pragma once
// The one interface every kernel under test sits behind: the fp64/fp32 references, the CPU
// simulations, our CUDA kernels, C-ABI plugins and external programs. A kernel declares what it
// supports (Capabilities) and which contract it enforces (Profile); run() either writes its outputs
// into the problem's own output tensors or rejects the problem with typed violations.
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kda/contract.hpp"
#include "kda/problem.hpp"
#include "kda/problem_factory.hpp"

namespace kda {

// The arithmetic a kernel declares (adapters/README.md, capability `arithmetic`): where it rounds, and so
// which precision model judges it (registry: model_for). Products always accumulate in fp32 at least.
//   fp32           fp32 storage and arithmetic throughout
//   tf32           matmul operands rounded to tf32 (11 significant bits); fp32 accumulation and storage
//   bf16_operands  matmul operands and the intermediates stored between kernels in bf16; fp32 accumulation
//   f16_operands   the same in fp16
enum class Arithmetic : std::uint8_t { fp32, tf32, bf16_operands, f16_operands };
std::string_view name_of(Arithmetic a);                              // "fp32", "tf32", "bf16-operands", "f16-operands"
std::optional<Arithmetic> arithmetic_from_name(std::string_view name);  // inverse of name_of

// What a kernel can compute. A generator asks supports() before handing it a problem; a problem
// outside the capabilities is not a failure of the kernel, a rejection of a supported one is.
struct Capabilities {
  std::vector<Mode> modes{Mode::prefill, Mode::decode};
  std::vector<DType> input_dtypes{DType::bf16, DType::f16, DType::f32, DType::f64};
  std::vector<DType> output_dtypes{DType::bf16, DType::f16, DType::f32, DType::f64};
  std::vector<DType> state_dtypes{DType::bf16, DType::f32, DType::f64};
  std::vector<StateLayout> layouts{StateLayout::vk, StateLayout::kv};
  std::vector<StateSource> state_sources{StateSource::none, StateSource::dense, StateSource::pool};
  std::vector<std::int64_t> key_head_dims;    // empty: any K up to max_head_dim
  std::vector<std::int64_t> value_head_dims;  // empty: any V up to max_head_dim
  std::int64_t max_head_dim = 256;
  std::vector<int> chunk_sizes{32, 64};
  bool varlen = true;
  bool gate_in_kernel = true;
  bool l2norm_in_kernel = true;
  bool beta_from_logits = true;
  bool neg_eigval = true;  // allow_neg_eigval calls (beta = 2 * sigmoid(b)); false: never
  // Options a fused code path always applies (it has no form without them): every call it gets sets them.
  bool always_gate_in_kernel = false, always_l2norm = false, always_beta_from_logits = false;
  bool chunk_states = true;
  bool token_states = true;
  bool strided_inputs = true;  // inputs may be any strided view (false: contiguous only)
  bool explicit_scale = true;  // false: the kernel always scales q by K^-0.5 (no scale option)
  Arithmetic arithmetic = Arithmetic::fp32;  // what it computes in (not a limit on the cases it is given)

  // Empty when the kernel can run the problem; otherwise the first unsupported feature, in words.
  std::string unsupported(const Problem& problem) const;
};

// Where a problem's initial state comes from.
StateSource state_source_of(const Problem& problem);

struct RunOutcome {
  enum class Status { ok, rejected, failed };
  Status status = Status::ok;
  std::vector<Violation> violations;  // rejected: what the kernel's contract check found
  std::string message;                // failed: what went wrong (a launch error, a crash of a plugin, ...)
  std::optional<double> seconds;      // ok: the call's own wall time, when the kernel reports it (an exec adapter)

  static RunOutcome ok() { return {}; }
  static RunOutcome rejected(std::vector<Violation> v) { return {Status::rejected, std::move(v), {}, {}}; }
  static RunOutcome failed(std::string m) { return {Status::failed, {}, std::move(m), {}}; }
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual std::string name() const = 0;
  virtual const Capabilities& capabilities() const = 0;
  virtual const Profile& profile() const = 0;
  // Runs one call. Must validate its profile first and, on a violation, write nothing.
  virtual RunOutcome run(Problem& problem) = 0;
};

}  // namespace kda
