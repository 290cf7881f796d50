#pragma once
// Judging one kernel run: outputs against the fp64 reference under the tolerance policy, and every
// byte outside the region the call may write against a snapshot taken before the run.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kda/problem.hpp"
#include "kda/reference.hpp"

namespace kda::props {

double unit_roundoff(DType dtype);  // 2^-8 bf16, 2^-11 f16, 2^-24 f32, 2^-53 f64; throws for integer dtypes

// How many representable values of dtype (bf16, f16, f32, f64) lie between got and want: both are
// rounded to dtype first (kda::round_to, as a kernel computing in fp32 stores them), then 0 for equal
// values (+0 and -0 included), 1 for neighbours, and so on across zero. The infinities count as the
// neighbours of the largest finite values; a NaN on either side gives +Inf. Throws for integer dtypes.
double ulp_distance(DType dtype, double got, double want);

// Tolerance policy: rel-RMS(kernel) <= alpha * rel-RMS(precision-matched model) + floor, where the
// floor is the larger of the unit roundoff of the output's dtype (rounding a value into that dtype
// alone costs up to that much) and that of the precision the kernel computes in. NaN or Inf where the
// reference is finite always fails.
struct TolerancePolicy {
  double alpha = 2.0;  // FlashAttention's rule: at most twice the error of a same-precision model
  // The unit roundoff of the compute precision (2^-24 for a kernel computing in fp32; 0: none). Every
  // output such a kernel writes is the result of an operation rounded to that precision, an error of
  // up to this much relatively that no correct kernel avoids, whatever its output dtype. The model's
  // realized error is one sample of such roundings; on a small output (a decode's 32 elements) it can
  // come out below what a kernel with the same arithmetic, rounding in another order, reaches
  // (sim-recurrent, serving-loop, seed 7: rel-RMS 1.7e-7 against 2 x 8.3e-8 + 2^-53).
  double compute_roundoff = 0;
  double floor(DType output_dtype) const;  // max(unit_roundoff(output_dtype), compute_roundoff)
  double bound(double model_error, DType output_dtype) const;
  // The elementwise tolerance behind TensorVerdict::mismatches, built the same way as bound():
  //   alpha * max(|model - oracle|, RMS(model - oracle)) + floor(dtype) * max(|oracle|, RMS(oracle))
  // The RMS terms are floors: an element where the model happens to be exact, or where the oracle is
  // near zero, still gets the tensor's typical error.
  double element_tolerance(double model_diff, double model_rms_diff, double oracle, double oracle_rms,
                           DType dtype) const;
};

// Where an element sits: o as (sequence, token within it, head, channel = column); states as
// (sequence or chunk, head, row, column) in the problem's layout.
struct Coordinates {
  std::string tensor;  // "o", "final_state", "chunk_states", "token_states"; verify: "state_pool", "scratch_states"
  std::int64_t sequence = -1, token = -1, head = -1, row = -1, column = -1;
  // chunk_states: the chunk's row in chunk_states; sequence and token then name its sequence and the
  // chunk's first token in it.
  std::int64_t chunk = -1;
  std::int64_t slot = -1;              // final_state of a pool: the slot the sequence's index names;
                                       // a verify call's state: its pool slot or scratch row
  bool request = false;                // a verify call's state after token `token` of request `sequence`,
                                       // in tensor "state_pool" or "scratch_states" (step = token)
  std::optional<StateLayout> layout;   // states: whether (row, column) is (v, k) or (k, v)
  // "sequence 1 token 64 head 2 channel 17", "sequence 0 (pool slot 3) head 1 row 4 column 2 of [K,V] (k 4, v 2)";
  // an o token of no sequence (sequence -1, token = its position in the batch row) says so.
  std::string describe() const;
};

// Coordinates of element `element` of a dense reference-layout array (ReferenceOutputs) of `tensor`.
Coordinates locate(const Problem& problem, std::string_view tensor, std::int64_t element);

struct TensorVerdict {
  std::string tensor;
  DType dtype = DType::f32;  // the tensor's dtype in the problem: sets the floor, the ULPs, the roundoff
  double rel_rms = 0, model_rel_rms = 0, bound = 0, max_abs = 0, max_ulp = 0;
  // Elements beyond TolerancePolicy::element_tolerance (non-finite ones included), of those compared.
  std::int64_t mismatches = 0, elements = 0;
  bool non_finite = false;  // NaN or Inf where the reference is finite
  // The worst element: the largest error relative to its elementwise tolerance (a non-finite value
  // before all). worst_element indexes the dense array; -1 when no element differs.
  Coordinates worst;
  std::int64_t worst_element = -1;
  double worst_got = 0, worst_want = 0;
  bool passed() const { return !non_finite && rel_rms <= bound; }
  // "o: rel-RMS 2.1e-03 <= bound 5.2e-03 (model 1.7e-03), max abs 3.1e-02, max ulp 2, 0/4096 mismatches,
  //  worst at sequence 1 token 64 head 2 channel 17 (got 0.51, want 0.53)"
  std::string describe() const;
};

struct Verdict {
  std::vector<TensorVerdict> tensors;
  bool passed() const;
  std::string describe() const;  // the failing tensors (or all, when passed) one per line
  const TensorVerdict* find(std::string_view tensor) const;  // nullptr when not compared
};

// What a run left in the problem's output tensors, read back as fp64 in the reference's dense layout
// (the pool read through the indices; padding rows' states left zero with written = 0). Like the
// reference, it assumes a problem that passes the contract.
ReferenceOutputs read_outputs(const Problem& problem);

// Compares the kernel's outputs (read_outputs of the problem after the run) with the fp64 reference;
// `model` is the precision-matched model's outputs on the same problem, setting each tensor's bound.
// One TensorVerdict per output the problem has: o, final_state (dense or pool), chunk_states,
// token_states. o is compared everywhere (padding sequences' rows against the oracle's zeros); the
// states of padding sequences (oracle.written == 0: final, chunk and token states) are not compared.
// Throws std::invalid_argument when an array's size does not fit the problem.
Verdict compare(const Problem& problem, const ReferenceOutputs& kernel, const ReferenceOutputs& oracle,
                const ReferenceOutputs& model, const TolerancePolicy& policy = {});

// Changed bytes of one buffer that belong to one thing (a tensor's elements, a pool slot, a gap, a
// guard band), summarised.
struct ByteChange {
  std::string buffer;  // the buffer's name
  std::string where;   // "slot 3, which no active index names", "elements of input 'q'", ...
  std::int64_t first_byte = 0, last_byte = 0;  // relative to the payload start; < 0: guard band before
  std::int64_t bytes = 0;                      // how many bytes changed
  // "state_pool: 64 bytes changed in slot 3, which no active index names (byte offsets 6816..6879 from
  // the payload start)"
  std::string describe() const;
};

// A byte-exact record of every buffer a problem touches, guard bands included, and the region the call
// may write: o's elements at tokens of some sequence, final_state's, chunk_states' and token_states'
// elements, and the elements of pool slots an active (non -1) index names. A verify call may write o and,
// for each request that is no padding request, the pool slots its table entries name at its tokens
// (table form) or scratch_states[its row, each of its tokens] (scratch form; the pool is read only
// there). Gaps of strided views, bytes between slots, other slots, inputs and guard bands are not writable.
class Snapshot {
 public:
  explicit Snapshot(const Problem& problem);
  // `after` is the problem the kernel ran on in place, or a deep_copy of the snapshotted problem (the
  // buffers are matched by the order the tensors name them, not by address; std::invalid_argument when
  // they do not line up). Changes are grouped per buffer and owner, in buffer order, then byte order.
  std::vector<ByteChange> changed_outside_writable(const Problem& after) const;
  std::vector<ByteChange> changed_anywhere(const Problem& after) const;  // a rejected call writes nothing
  // The same, one line each (ByteChange::describe); empty when nothing changed.
  std::vector<std::string> changes_outside_writable(const Problem& after) const;
  // Each output tensor (floating point) of `after` whose elements inside the writable region hold NaN or
  // Inf, one line each: a kernel read poison or left an output unwritten. Safe on an invalid problem.
  std::vector<std::string> non_finite_writable(const Problem& after) const;
  std::vector<std::string> changes_anywhere(const Problem& after) const;

 private:
  using ByteRanges = std::vector<std::pair<std::int64_t, std::int64_t>>;  // [begin, end) payload bytes
  // A buffer's bytes (guard band before, payload, guard band after) by blocks: a block that repeats one
  // 8-byte pattern (the poison of outputs, gaps and unused pool slots) is held as that pattern alone, so
  // a multi-GiB pool of poisoned slots costs a few bytes per block, not a second copy.
  struct Copy {
    std::string name;
    std::int64_t total = 0, payload = 0;  // bytes with and without the guard bands
    std::vector<std::byte> stored;        // the blocks that repeat no pattern, in order
    std::vector<std::int64_t> stored_at;  // per block: its offset in `stored`, or -1 for a pattern
    std::vector<std::uint64_t> pattern;   // per block: the 8 bytes it repeats (stored_at -1)
    ByteRanges writable;                  // sorted, disjoint
  };
  std::vector<ByteChange> changes(const Problem& after, bool outside_writable_only) const;

  std::vector<Copy> copies_;                 // the distinct buffers, in the order the tensors name them
  std::vector<std::int64_t> slot_sequence_;  // pool slot -> the sequence whose active index names it, or -1
  std::vector<std::int64_t> slot_token_;     // verify, table form: pool slot -> the token whose state it takes
  void mark_verify(const Problem& problem, ByteRanges& pool_mask, ByteRanges* scratch_mask);
  bool has_padding_rows_ = false;            // some index is -1 (pool[-1] is where a careless wrapper lands)
};

}  // namespace kda::props
