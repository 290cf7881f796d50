#pragma once
// Shared by the invariance properties (packing, split, layout, gva-expansion): a case drawn with
// what the property needs, calls that must run, outputs of several calls stitched into one call's
// layout, and the comparison of two runs that should agree. Not part of kda::properties' interface.
#include <functional>
#include <string>
#include <vector>

#include "generators_internal.hpp"
#include "kda/properties/property_bodies.hpp"

namespace kda::props {

// Why the kernel cannot run `problem` (outside its capabilities, or breaking its profile); empty when it can.
std::string unfit(const Kernel& kernel, const Problem& problem);

bool supports(const Kernel& kernel, Mode mode);
bool supports(const Kernel& kernel, StateSource source);

// A valid case with `needs` (two sequences, a pool, ...), changed by `adjust` (which must keep it
// valid), tagged with its coverage categories, and the problem it builds (DrawnCase: property_bodies.hpp).
// Fails the case when the kernel can take no such case (the property's KernelNeeds should have skipped it).
DrawnCase draw_case(CheckContext& context, const detail::Needs& needs,
                    const std::function<void(CaseSpec&)>& adjust = {});

// Runs the kernel on `problem` in place; fails the case unless it ran. `role` names the call
// ("the packed call"), `base` is the case the message describes.
void run_or_fail(Kernel& kernel, Problem& problem, const std::string& role, const Problem& base);

// The dense reference-layout arrays of `layout`'s outputs, all zero, every sequence written: where
// the outputs of several calls are stitched together.
ReferenceOutputs zero_outputs(const Problem& layout);

// Places the outputs of `part`, a one-sequence call covering tokens [offset, offset + part.length(0))
// of sequence n of `whole`, into `into` (whole's layout): o and token states at those tokens, the final
// state as sequence n's (the last part placed wins), chunk states where a chunk of `whole` starts.
void place_part(const Problem& whole, std::int64_t n, std::int64_t offset, const Problem& part,
                const ReferenceOutputs& part_out, ReferenceOutputs& into);

// Every state in the arrays (final, chunk and token states) transposed, [V,K] <-> [K,V]; `layout` is
// the problem whose layout the arrays are in.
void transpose_states(ReferenceOutputs& out, const Problem& layout);

// One output tensor of two runs that should agree.
struct TensorDifference {
  std::string tensor;  // "o", "final_state", "chunk_states", "token_states"
  DType dtype = DType::f32;
  double rel_rms = 0;        // over the elements finite in both
  bool non_finite = false;   // an element NaN or Inf in one run and not the same in the other
  std::int64_t worst = -1;   // dense index of the largest difference (the first non-finite one); -1: none
  double got = 0, want = 0;  // the two values there
};

// Each output tensor of `layout` (o; final states with a dense final_state or a pool; chunk and token
// states where both arrays have them), got against want; states of padding rows are left out.
std::vector<TensorDifference> differences(const Problem& layout, const ReferenceOutputs& got,
                                          const ReferenceOutputs& want);

// What two runs are called in a failure message.
struct Sides {
  std::string what;  // the invariance, with the sequence or split it concerns
  std::string got, want;
};

// Fails the case at the first tensor that is non-finite in one run only or whose rel-RMS exceeds
// bound(difference): which tensor, by how much, the worst element's coordinates in `layout` and both
// values, and base's describe() line.
void require_agreement(const std::vector<TensorDifference>& diffs,
                       const std::function<double(const TensorDifference&)>& bound, const Problem& layout,
                       const Sides& sides, const Problem& base);

// The bound of an invariance whose two runs take the same arithmetic path (packing, layout, GVA
// expansion): the unit roundoff of the tensor's dtype, as if only the final rounding into that dtype
// could differ (not TolerancePolicy's compute floor, which stands for an error against another path). The CPU references agree bit for bit here; a kernel whose
// two runs reduce in a different order (another tiling for [K,V] states, say) may exceed it with
// f32/f64 outputs, and that difference is then reported as a failure.
double same_path_bound(const TolerancePolicy& policy, const TensorDifference& d);

}  // namespace kda::props
