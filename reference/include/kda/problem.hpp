#pragma once
// One KDA call, fully described: the options, every input and output tensor (each a strided view
// into a guard-banded buffer) and the sizes the caller claims. The contract (contract.hpp) checks
// that the claims and the tensors agree; kernels and the reference read and write through the views.
//
// Tensor shapes (B = batch, T = tokens per batch row):
//   q, k [B,T,H,K]   v [B,T,HV,V]   g [B,T,HV,K]   beta [B,T,HV]   o [B,T,HV,V]
//   A_log [HV]   dt_bias [HV*K]   cu_seqlens [N+1] (varlen: B = 1, sequence n = tokens cu[n]..cu[n+1])
//   states per value head: [V,K] (StateLayout::vk, K contiguous) or [K,V] (StateLayout::kv)
//   initial_state / final_state [N,HV,..]   state_pool [slots,HV,..] + state_indices int32 [N]
//   chunk_states [total chunks over all sequences, HV, ..]   token_states [B,T,HV,..]
//
// Speculative-decoding verify (Mode::verify): request n carries length(n) <= L draft tokens
// (L = 1 + num_spec; exactly L under a fixed-form profile), run from its committed state:
//   index-table form: state_indices int32 [N,L] (any strides) and num_accepted int32/int64 [N]; the
//     initial state is slot state_indices[n, num_accepted[n] - 1], the state after token t is stored
//     in slot state_indices[n, t] (in place); a -1 entry is a padding slot: nothing read or written
//     there (a -1 initial slot makes the request a padding row: zero output, nothing written);
//   scratch form: state_indices int32 [N] into a pool that is only read, and the state after token t
//     stored in scratch_states [S, L', HV, ..] at [scratch_indices[n], t] (L' >= L; row -1: not stored).
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <string>
#include <vector>

#include "kda/tensor.hpp"

namespace kda {

enum class Mode : std::uint8_t { prefill, decode, verify };
enum class StateLayout : std::uint8_t { vk, kv };

std::string_view name_of(Mode m);
std::string_view name_of(StateLayout l);

struct Options {
  std::optional<double> scale;        // multiplied into q after l2norm; default K^-0.5
  bool l2norm_qk = false;             // x / sqrt(sum x^2 + 1e-6) on q and k, in fp32
  bool beta_from_logits = false;      // beta = sigmoid(b) (x2 when allow_neg_eigval)
  bool allow_neg_eigval = false;
  bool gate_in_kernel = false;        // g holds raw activations, gated with A_log / dt_bias
  std::optional<double> lower_bound;  // set: g = lb * sigmoid(...) ; unset: softplus gate
  bool safe_gate = false;             // FLA's bounded-exponent path; needs lower_bound
  int chunk_size = 64;
  StateLayout state_layout = StateLayout::vk;

  double scale_for(std::int64_t K) const;
};

struct Problem {
  Mode mode = Mode::prefill;
  std::int64_t B = 1, T = 0, N = 0, H = 0, HV = 0, K = 0, V = 0;
  std::int64_t L = 0;  // verify: tokens per request at most (1 + num_spec); 0 otherwise
  Options options;

  std::optional<Tensor> cu_seqlens;
  Tensor q, k, v, g, beta;
  std::optional<Tensor> A_log, dt_bias;
  // State source: a dense initial_state, or state_pool + state_indices (read and updated in place),
  // or neither (zero initial state).
  std::optional<Tensor> initial_state;
  std::optional<Tensor> state_pool, state_indices;
  Tensor o;
  std::optional<Tensor> final_state;   // dense output of the final states (not with a pool)
  std::optional<Tensor> chunk_states;  // chunk-start states (prefix caching)
  std::optional<Tensor> token_states;  // state after every token (speculative decoding)
  // Verify forms (above): accepted counts of the index-table form; scratch buffer and its row map.
  std::optional<Tensor> num_accepted;
  std::optional<Tensor> scratch_states, scratch_indices;
  // Serving mode (an engine replaying CUDA graphs): nonzero, the call is one of serving run number
  // `persistent_metadata`, and an adapter keeps one buffer per metadata tensor (metadata_tensors())
  // for that run, refilled in place, so a kernel caching what it derives from metadata by the
  // tensor's identity sees the same object with new contents. 0 (the default): fresh metadata. Not
  // part of the math: the reference and in-process kernels ignore it, golden files do not store it.
  std::uint64_t persistent_metadata = 0;

  // Sequence n covers (batch row, token) = (row(n), first(n) .. first(n) + length(n) - 1).
  // Only meaningful on a problem that passes the contract.
  std::int64_t row(std::int64_t n) const { return cu_seqlens ? 0 : n; }
  std::int64_t first(std::int64_t n) const { return cu_seqlens ? cu_seqlens->integer_at(n) : 0; }
  std::int64_t length(std::int64_t n) const {
    return cu_seqlens ? cu_seqlens->integer_at(n + 1) - cu_seqlens->integer_at(n) : T;
  }
  std::int64_t chunks(std::int64_t n) const {
    return options.chunk_size > 0 ? (length(n) + options.chunk_size - 1) / options.chunk_size : 0;
  }
  std::int64_t total_chunks() const;
  // Shape of one state per value head in the chosen layout: {V,K} or {K,V}.
  Shape state_head_shape() const;

  // With a pool: the slot sequence n starts from (-1: a padding row): state_indices[n], or a verify
  // call's table entry its accepted count names. Verify: where the state after token t of request n
  // is stored (-1: nowhere): a slot of the pool (table form) or a row of scratch_states (scratch
  // form). Only meaningful on a problem that passes the contract.
  std::int64_t initial_slot(std::int64_t n) const;
  std::int64_t token_slot(std::int64_t n, std::int64_t t) const;

  std::vector<const Tensor*> inputs() const;   // every input tensor present
  std::vector<const Tensor*> outputs() const;  // every tensor the call may write (pool included)
  std::vector<Tensor*> outputs();

  // One line for failure messages: sizes, options and every tensor's dtype/shape/strides/offset.
  std::string describe() const;
};

// Every tensor a Problem can hold, once, in the canonical order (golden files, checksums, the
// exec protocol, snapshots, the contract): adding a tensor is one row of tensor_fields().
enum class Access : std::uint8_t { read, write, read_write };
struct TensorField {
  std::string_view name;
  Access access;                                       // the pool: read_write (read only in the scratch form)
  Tensor Problem::*required = nullptr;                 // q, k, v, g, beta, o
  std::optional<Tensor> Problem::*optional = nullptr;  // the others

  bool read() const { return access != Access::write; }
  bool written() const { return access != Access::read; }
  const Tensor* in(const Problem& p) const;  // nullptr: an absent optional
  Tensor* in(Problem& p) const;
  void place(Problem& p, Tensor t) const;
};
std::span<const TensorField> tensor_fields();
// The call's metadata tensors present, in that order: cu_seqlens, state_indices, num_accepted,
// scratch_indices (what persistent_metadata keeps in persistent buffers).
std::vector<std::string_view> metadata_tensors(const Problem& p);
const TensorField* find_tensor_field(std::string_view name);  // nullptr when unknown

}  // namespace kda
