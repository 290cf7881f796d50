// The token-serial kernel. recurrent_decode_sim.cpp is its CPU twin: a change to the arithmetic or to
// the split of work here must be made there too (the GPU test compares the two bit for bit).
#include <cuda_runtime.h>

#include <climits>
#include <type_traits>

#include "decode_state.cuh"
#include "decode_token.cuh"
#include "kda/kernels/detail/decode_access.hpp"
#include "kda/kernels/recurrent_decode.hpp"

namespace kda::kernels {

namespace {

using access::load;
using access::store;

constexpr int kWarp = 32;
constexpr int kMaxWarpsPerBlock = 8;

// One token's per-key-channel inputs, shared by the warps of a block (all of one head): q and k as
// read, and the decay exp(g) with the gate applied. Each channel is computed by one thread. They live
// in dynamic shared memory ahead of the state rows, `width` channels each (the lanes' reach: 4 L J);
// one buffer, so a barrier before each token's inputs are written keeps the last token's readers safe.
struct TokenInputs {
  float *q, *k, *alpha;
  __device__ TokenInputs(float* at, int width) : q(at), k(at + width), alpha(at + 2 * width) {}
  __host__ __device__ static constexpr std::size_t bytes(int width) { return 3 * sizeof(float) * static_cast<std::size_t>(width); }
};

// Thread i fills channels i, i + blockDim.x, ...: one or two per thread in the usual launches. Each
// channel's four loads are issued together, then used.
__device__ __forceinline__ void load_token_inputs(const DecodeParams& p, std::int64_t b, std::int64_t tok,
                                                  std::int64_t h, std::int64_t hv, float A, const TokenInputs& in) {
  const std::int64_t q_at = b * p.q.stride[0] + tok * p.q.stride[1] + h * p.q.stride[2];
  const std::int64_t k_at = b * p.k.stride[0] + tok * p.k.stride[1] + h * p.k.stride[2];
  const std::int64_t g_at = b * p.g.stride[0] + tok * p.g.stride[1] + hv * p.g.stride[2];
  const bool biased = p.gate_in_kernel && p.dt_bias.data;
#pragma unroll 1
  for (std::int64_t c = threadIdx.x; c < p.K; c += blockDim.x) {
    const std::uint32_t q_bits = access::load_bits(p.q, q_at + c * p.q.stride[3]);
    const std::uint32_t k_bits = access::load_bits(p.k, k_at + c * p.k.stride[3]);
    const std::uint32_t g_bits = access::load_bits(p.g, g_at + c * p.g.stride[3]);
    const float bias = biased ? load(p.dt_bias, (hv * p.K + c) * p.dt_bias.stride[0]) : 0.0f;
    in.q[c] = access::widen(p.q.dtype, q_bits);
    in.k[c] = access::widen(p.k.dtype, k_bits);
    in.alpha[c] = math::exp(token::gate(p, access::widen(p.g.dtype, g_bits), bias, A));
  }
}

// One warp per (sequence n, value head hv, group of STEPS * 32 / L value channels); a block holds
// consecutive groups of one head. Lane (half, sub) owns key channels j * 4L + 4 sub + [0, 4) of chunk
// j < J in rows row0 + s * 32 / L, s < STEPS, with row0 = group start + half. TOKEN_STATES: a verify
// call, which stores the state after every token and has no final state (its own instantiations: the
// store in the token loop would cost decode's fast path registers, and spills, even where it never
// runs).
template <int L, int J, int STEPS, class State, bool TOKEN_STATES>
__global__ void __launch_bounds__(kWarp* kMaxWarpsPerBlock, State::kMinBlocksPerSm)
    token_serial_kernel(const __grid_constant__ DecodeParams p, const unsigned groups, const unsigned blocks_per_head) {
  extern __shared__ float4 shared[];
  constexpr int E = State::E, RPS = kWarp / L, RPW = STEPS * RPS, kWidth = 4 * L * J;
  // One row per step (32 lanes a row): kRowGroup rows reduced together (token::scattered_row_sums: the
  // same bits as a butterfly per row, fewer shuffles).
  constexpr int kRowGroup = 4;
  constexpr bool kGrouped = L == kWarp && STEPS % kRowGroup == 0;
  TokenInputs in(reinterpret_cast<float*>(shared), kWidth);
  float4* stage = shared + TokenInputs::bytes(kWidth) / sizeof(float4);
  const int lane = static_cast<int>(threadIdx.x) % kWarp, warp = static_cast<int>(threadIdx.x) / kWarp;
  const unsigned head = blockIdx.x / blocks_per_head;  // < N * HV <= INT_MAX: 32-bit division suffices
  const unsigned group = blockIdx.x % blocks_per_head * (blockDim.x / kWarp) + warp;
  // A head's last block may hold warps past its last row: they still load the token's inputs.
  const bool has_rows = group < groups;
  const std::int64_t hv = head % static_cast<unsigned>(p.HV), n = head / static_cast<unsigned>(p.HV);
  const int sub = lane % L;
  const std::int64_t row0 = static_cast<std::int64_t>(group) * RPW + lane / L;
  const std::int64_t key0 = 4 * sub;  // element e is key channel key0 + (e / 4) * 4L + e % 4

  // The state first: its address waits on one load (the pool index), and its rows are then in flight
  // while the sequence's bounds and the token's inputs are read and preprocessed.
  const access::HeadStates hs = TOKEN_STATES ? access::verify_head_states(p, n, hv) : access::head_states(p, n, hv);
  State state(stage + warp * (State::kSharedBytesPerWarp / sizeof(float4)), lane);
  if (has_rows) state.load(p.state_in, hs.in, p.V, p.K, row0, key0);

  const access::SequenceRange seq = access::sequence_range(p, n);
  const std::int64_t o_head = seq.row * p.o.stride[0] + hv * p.o.stride[2];
  const std::int64_t o_row = row0 + sub * RPS;  // the row this lane writes, when sub < STEPS
  const bool writes_o = has_rows && sub < STEPS && o_row < p.V;
  if (hs.padding) {  // index -1 (the same for the whole block): zero output, the pool untouched
    for (std::int64_t t = 0; t < seq.length; ++t)
      if (writes_o) store(p.o, o_head + (seq.first + t) * p.o.stride[1] + o_row * p.o.stride[3], 0.0f);
    return;
  }

  const float A = token::gate_A(p, hv);
  const std::int64_t h = hv / (p.HV / p.H);
  for (std::int64_t t = 0; t < seq.length; ++t) {
    const std::int64_t b = seq.row, tok = seq.first + t;
    // v and beta first: their loads are in flight while the block computes the gates.
    const std::int64_t v_at = b * p.v.stride[0] + tok * p.v.stride[1] + hv * p.v.stride[2];
    std::uint32_t v_bits[STEPS];
#pragma unroll
    for (int s = 0; s < STEPS; ++s) {
      const std::int64_t v = row0 + s * RPS;
      v_bits[s] = has_rows && v < p.V ? access::load_bits(p.v, v_at + v * p.v.stride[3]) : 0u;
    }
    const std::uint32_t beta_bits =
        access::load_bits(p.beta, b * p.beta.stride[0] + tok * p.beta.stride[1] + hv * p.beta.stride[2]);
    if (t > 0) __syncthreads();  // every warp has read the last token's inputs
    load_token_inputs(p, b, tok, h, hv, A, in);
    float beta = access::widen(p.beta.dtype, beta_bits);
    if (p.beta_sigmoid) beta = math::mul(p.beta_factor, math::sigmoid(beta));
    __syncthreads();  // `in` is complete
    if (!has_rows) continue;

    // The lane's channels, 16 bytes per chunk (conflict-free); channels >= K (never written) as 0.
    float q[E], k[E], alpha[E];
#pragma unroll
    for (int j = 0; j < J; ++j) {
      const std::int64_t k0 = key0 + j * 4 * L;
      const float4 q4 = *reinterpret_cast<const float4*>(in.q + k0);
      const float4 k4 = *reinterpret_cast<const float4*>(in.k + k0);
      const float4 a4 = *reinterpret_cast<const float4*>(in.alpha + k0);
      const float qs[4] = {q4.x, q4.y, q4.z, q4.w}, ks[4] = {k4.x, k4.y, k4.z, k4.w};
      const float as[4] = {a4.x, a4.y, a4.z, a4.w};
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const bool valid = k0 + c < p.K;
        q[4 * j + c] = valid ? qs[c] : 0.0f;
        k[4 * j + c] = valid ? ks[c] : 0.0f;
        alpha[4 * j + c] = valid ? as[c] : 0.0f;
      }
    }
    token::prepare_qk<L>(p, q, k);

    state.wait();
    float mine = 0.0f;
    if constexpr (kGrouped) {
      constexpr int kHolders = kWarp / kRowGroup;  // lanes holding each row's sum
#pragma unroll
      for (int s0 = 0; s0 < STEPS; s0 += kRowGroup) {
        float x[kRowGroup][E], kS[kRowGroup], o[kRowGroup];
#pragma unroll
        for (int g = 0; g < kRowGroup; ++g) {
          state.get(s0 + g, x[g]);
          kS[g] = token::decay_project(x[g], k, alpha);
        }
        const float kS_scattered = token::scattered_row_sums<kRowGroup>(kS);
#pragma unroll
        for (int g = 0; g < kRowGroup; ++g) {
          const float row_kS = __shfl_sync(0xffffffffu, kS_scattered, kHolders * g);
          o[g] = token::update_project(x[g], q, k, beta, access::widen(p.v.dtype, v_bits[s0 + g]), row_kS);
          state.put(s0 + g, x[g]);
        }
        // Lane s0 + g (sub == step) takes row s0 + g's output from lane kHolders * g.
        const float o_row = __shfl_sync(0xffffffffu, token::scattered_row_sums<kRowGroup>(o), kHolders * (lane % kRowGroup));
        if (lane / kRowGroup == s0 / kRowGroup) mine = o_row;
      }
    } else {
#pragma unroll
      for (int s = 0; s < STEPS; ++s) {
        float x[E];
        state.get(s, x);
        const float kS = token::butterfly_sum<L>(token::decay_project(x, k, alpha));
        const float partial_o = token::update_project(x, q, k, beta, access::widen(p.v.dtype, v_bits[s]), kS);
        state.put(s, x);
        const float o = token::butterfly_sum<L>(partial_o);
        if (sub == s) mine = o;
      }
    }
    if (writes_o) store(p.o, o_head + tok * p.o.stride[1] + o_row * p.o.stride[3], mine);
    // A verify call stores the state after this token: in its table slot or its scratch row's step t.
    if constexpr (TOKEN_STATES) {
      if (std::byte* const token_out = access::token_state_head(p, n, t, hv))
        state.store(p.state_out, token_out, p.V, p.K, row0, key0);
    }
  }
  if constexpr (!TOKEN_STATES)
    if (has_rows && hs.out) state.store(p.state_out, hs.out, p.V, p.K, row0, key0);
}

struct KernelChoice {
  void (*kernel)(DecodeParams, unsigned, unsigned);
  std::size_t shared_bytes_per_block, shared_bytes_per_warp;  // token inputs; state rows
};

template <template <int, int, int> class State, int L, int J, bool TS>
KernelChoice with_steps(int steps) {
  constexpr std::size_t inputs = TokenInputs::bytes(4 * L * J);
  switch (steps) {
    case 4: return {token_serial_kernel<L, J, 4, State<L, J, 4>, TS>, inputs, State<L, J, 4>::kSharedBytesPerWarp};
    case 8: return {token_serial_kernel<L, J, 8, State<L, J, 8>, TS>, inputs, State<L, J, 8>::kSharedBytesPerWarp};
    default: return {token_serial_kernel<L, J, 16, State<L, J, 16>, TS>, inputs, State<L, J, 16>::kSharedBytesPerWarp};
  }
}

template <template <int, int, int> class State, bool TS>
KernelChoice with_split(const WarpSplit& s) {
  if (s.lanes_per_row == 16) return with_steps<State, 16, 1, TS>(s.steps);
  return s.chunks == 1 ? with_steps<State, 32, 1, TS>(s.steps) : with_steps<State, 32, 2, TS>(s.steps);
}

template <template <int, int, int> class State>
KernelChoice with_token_states(const DecodeParams& p) {
  return access::stores_token_states(p) ? with_split<State, true>(p.split) : with_split<State, false>(p.split);
}

template <int L, int J, int STEPS>
using Bf16Registers = RegisterState<L, J, STEPS, Bf16Rows>;
template <int L, int J, int STEPS>
using StridedRegisters = RegisterState<L, J, STEPS, AnyStrides>;

// Can every state row of t be read and written 4 key channels at a time, 4-element aligned?
bool rows_vectorizable(const TensorRef& t, std::int64_t K) {
  const auto bytes = static_cast<std::uintptr_t>(access::element_size(t.dtype));
  return K % 4 == 0 && t.stride[3] == 1 && t.stride[0] % 4 == 0 && t.stride[1] % 4 == 0 && t.stride[2] % 4 == 0 &&
         reinterpret_cast<std::uintptr_t>(t.data) % (4 * bytes) == 0;
}

enum class RowsPath : std::uint8_t { staged, bf16_registers, strided_registers };

RowsPath rows_path(const DecodeParams& p) {
  bool vectorized = true;
  bool any = false;
  DType dtype = DType::f32;
  for (const TensorRef* t : {&p.state_in, &p.state_out}) {
    if (!t->data) continue;
    vectorized = vectorized && rows_vectorizable(*t, p.K) && (!any || t->dtype == dtype);
    any = true, dtype = t->dtype;
  }
  // The scratch buffer's steps are another stride of state_out.
  vectorized = vectorized && (p.source != StateKind::scratch || p.scratch_step_stride % 4 == 0);
  if (any && vectorized && dtype == DType::f32) return RowsPath::staged;
  if (any && vectorized && dtype == DType::bf16) return RowsPath::bf16_registers;
  return RowsPath::strided_registers;
}

KernelChoice pick_kernel(const DecodeParams& p) {
  switch (rows_path(p)) {
    case RowsPath::staged: return with_token_states<StagedState>(p);
    case RowsPath::bf16_registers: return with_token_states<Bf16Registers>(p);
    default: return with_token_states<StridedRegisters>(p);
  }
}

}  // namespace

int default_steps(const DecodeParams& params) {
  // A verify call's per-token stores need registers that 16 staged steps, at the 85 the launch bounds
  // allow, can only spill (docs/cuda-decode.md, resource usage).
  return rows_path(params) == RowsPath::staged && !access::stores_token_states(params) ? 16 : 8;
}

cudaError_t launch_recurrent_decode(const DecodeParams& params, cudaStream_t stream, int warps_per_block) {
  if (warps_per_block < 1 || warps_per_block > kMaxWarpsPerBlock) return cudaErrorInvalidValue;
  const std::int64_t rows = params.split.rows_per_warp();
  const std::int64_t groups = (params.V + rows - 1) / rows;
  const std::int64_t blocks_per_head = (groups + warps_per_block - 1) / warps_per_block;
  const std::int64_t blocks = params.N * params.HV * blocks_per_head;
  if (blocks == 0) return cudaSuccess;
  if (blocks > INT_MAX) return cudaErrorInvalidConfiguration;
  const KernelChoice choice = pick_kernel(params);
  const std::size_t shared = choice.shared_bytes_per_block + choice.shared_bytes_per_warp * warps_per_block;
  // Above 48 KiB a kernel must opt in; the call is cheap, so always.
  if (const cudaError_t e = cudaFuncSetAttribute(choice.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                 static_cast<int>(shared));
      e != cudaSuccess)
    return e;
  choice.kernel<<<static_cast<unsigned>(blocks), kWarp * warps_per_block, shared, stream>>>(
      params, static_cast<unsigned>(groups), static_cast<unsigned>(blocks_per_head));
  return cudaGetLastError();
}

RunOutcome launch_recurrent_decode(const Problem& problem, const PayloadAddress& device_payload, cudaStream_t stream,
                                   const LaunchConfig& config) {
  if (auto violations = validate(problem, profile_strict()); !violations.empty())
    return RunOutcome::rejected(std::move(violations));
  if (const std::string why = token_serial_unsupported(problem); !why.empty())
    return RunOutcome::failed("cuda-recurrent does not support " + why);
  DecodeParams params = make_decode_params(problem, device_payload, config.steps ? config.steps : kDefaultSteps);
  if (config.steps == 0) params.split = split_for(problem.K, default_steps(params));
  if (const cudaError_t e = launch_recurrent_decode(params, stream, config.warps_per_block); e != cudaSuccess)
    return RunOutcome::failed(std::string("launch failed: ") + cudaGetErrorString(e));
  return RunOutcome::ok();
}

}  // namespace kda::kernels
