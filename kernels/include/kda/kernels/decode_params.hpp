#pragma once
// One KDA call as the token-serial kernel executes it: every tensor reduced to the address of its first
// element, its dtype and its strides in elements; the options resolved to the fp32 values the kernel
// computes with; and the warp split. The CUDA launcher builds it with device addresses, the CPU
// simulation with host ones, from a Problem that passes the strict contract.
#include <cstddef>
#include <cstdint>
#include <functional>

#include "kda/kernel.hpp"
#include "kda/problem.hpp"

namespace kda::kernels {

struct TensorRef {
  std::byte* data = nullptr;              // the view's first element; nullptr when the tensor is absent
  DType dtype = DType::f32;
  std::int64_t stride[4] = {0, 0, 0, 0};  // elements
};

// Where states come from and go: none (zero initial state, no state output), dense initial / final
// states, a pool updated in place through one index per sequence, or a verify call (problem.hpp):
// table, the initial state from slot indices[n, accepted[n] - 1] and the state after token t stored in
// slot indices[n, t]; scratch, the initial state from slot indices[n] of a pool that is only read and
// the state after token t stored in the scratch buffer at [scratch_indices[n], t].
enum class StateKind : std::uint8_t { none, dense, pool, table, scratch };

// How a warp divides one head's state. lanes_per_row lanes share a state row (a value channel v): 16
// when K <= 64, else 32. Each lane owns 4 consecutive key channels per chunk; chunk j covers channels
// [j * 4 * lanes_per_row, (j + 1) * 4 * lanes_per_row), so chunks = 1 up to K = 128 and 2 up to 256.
// The warp holds 32 / lanes_per_row rows side by side and `steps` such row groups. Only lanes_per_row
// and chunks shape the arithmetic (the reduction trees); steps and warps per block do not.
struct WarpSplit {
  int lanes_per_row = 32;
  int chunks = 1;
  int steps = 8;
  int rows_per_step() const { return 32 / lanes_per_row; }
  int rows_per_warp() const { return steps * rows_per_step(); }
};

inline constexpr std::int64_t kMaxKeyDim = 256;
inline constexpr int kDefaultSteps = 8;
WarpSplit split_for(std::int64_t K, int steps = kDefaultSteps);

struct DecodeParams {
  std::int64_t B = 0, T = 0, N = 0, H = 0, HV = 0, K = 0, V = 0;
  TensorRef q, k, v, g, beta, o;  // [B,T,heads,D]; beta [B,T,HV]
  TensorRef A_log, dt_bias;       // 1-D; absent: A = 1, zero bias
  TensorRef cu_seqlens;           // i32 or i64; absent: sequence n is batch row n
  TensorRef indices;              // i32: [N] (pool, scratch) or the [N, L] table (table), any strides
  TensorRef accepted;             // table only: the accepted counts, i32 or i64 [N], each in [1, L]
  TensorRef scratch_indices;      // scratch only: i32 [N], a row of the scratch buffer or -1
  StateKind source = StateKind::none;
  // States with strides ordered (sequence or slot, value head, value channel v, key channel k), whatever
  // the layout: [V,K] and [K,V] differ only in the last two strides. A pool (pool, table) is both
  // state_in and state_out. The scratch form's state_out is the scratch buffer [S, L', HV, ..] with
  // strides (row, value head, v, k), its step stride apart.
  TensorRef state_in, state_out;
  std::int64_t scratch_step_stride = 0;  // elements
  bool l2norm = false;
  bool beta_sigmoid = false;
  float beta_factor = 1.0f;  // 2 with negative eigenvalues allowed
  bool gate_in_kernel = false;
  bool gate_lower_bound = false;  // lb * sigmoid(A x); else -A softplus(x)
  float lower_bound = 0.0f;
  float scale = 1.0f;
  WarpSplit split;
};

// What the kernel and its simulation compute: decode, token-serial prefill and speculative verify in
// both forms; activations in bf16, fp16 or fp32 and o in any float dtype, through any strided view;
// fp32 or bf16 states in either layout from any source (pools in place); K and V up to 256; every
// preprocessing option; no chunk or token states.
const Capabilities& token_serial_capabilities();
// Empty when the kernel can run the problem, else what it cannot do: the capabilities, plus the dtype of
// every activation (Capabilities looks at q's alone).
std::string token_serial_unsupported(const Problem& problem);

// Where a buffer's payload lives for the code that runs: the host buffer itself, or its device mirror.
using PayloadAddress = std::function<std::byte*(GuardedBuffer&)>;

// A state tensor [lead, HV, ..] (lead: sequence, slot or chunk) with its last two strides ordered (v, k)
// whatever the layout; absent: data nullptr.
TensorRef state_ref(const std::optional<Tensor>& t, StateLayout layout, const PayloadAddress& payload);

DecodeParams make_decode_params(const Problem& problem, const PayloadAddress& payload, int steps = kDefaultSteps);

}  // namespace kda::kernels
