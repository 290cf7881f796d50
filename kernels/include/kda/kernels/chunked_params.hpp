#pragma once
// One KDA prefill call as the chunked kernel executes it (docs/cuda-prefill.md): the call's tensors and
// options (the decode kernel's DecodeParams, whose access helpers both kernels share), the chunk-start
// states, the chunk table computed on the host from the Problem, and the workspace where stage A leaves
// each chunk's intermediates for stage B. The CUDA launcher builds it with device addresses, the CPU
// simulation with host ones, from a Problem that passes the strict contract.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kda/kernels/decode_params.hpp"
#include "kda/kernels/detail/fast_divisor.hpp"

namespace kda::kernels {

inline constexpr int kChunk = 64;      // tokens per chunk (the last chunk of a sequence may be shorter)
inline constexpr int kSubBlock = 16;   // rows per sub-block of Aqk and Akk
inline constexpr int kValueTile = 32;  // stage B: value channels per 8 warps

// One chunk: tokens [first, first + length) of batch row `row`, a chunk of sequence `sequence`.
struct ChunkEntry {
  std::int64_t row = 0, first = 0;
  std::int32_t length = 0, sequence = 0;
};

// Every sequence's chunks in order, sequences in order: entry c is row c of chunk_states.
// sequence_chunks[n] .. sequence_chunks[n + 1] are sequence n's entries (N + 1 values). longest_first:
// the sequences by descending number of chunks (ties in order), the order in which stage B's blocks
// take them, so that the longest chains start first (docs/cuda-prefill.md, stage B's forms).
struct ChunkTable {
  std::vector<ChunkEntry> chunks;
  std::vector<std::int64_t> sequence_chunks;
  std::vector<std::int64_t> longest_first;
  std::int64_t chunks_of(std::int64_t n) const;  // sequence n's chunks
  std::int64_t longest_chunks() const;           // the longest sequence's chunks (0 without sequences)
};
ChunkTable make_chunk_table(const Problem& problem);

// Stage A's outputs, per (chunk c, value head hv), element (c * HV + hv) of each array; fp16 bits
// (every value is bounded: see docs/cuda-prefill.md) except the fp32 decay and alpha. Rows past a
// chunk's length are zero (alpha: one). alpha is the gate kernel's output and the prepare kernel's input.
struct ChunkedWorkspace {
  float* alpha = nullptr;        // [64][K] exp(g)
  std::uint16_t* qg = nullptr;   // [64][K] q exp(Γ), q l2-normalised and scaled
  std::uint16_t* kg = nullptr;   // [64][K] k exp(Γlast - Γ)
  std::uint16_t* w = nullptr;    // [64][K] (I + Akk)^-1 (beta k exp(Γ))
  std::uint16_t* u = nullptr;    // [64][V] (I + Akk)^-1 (beta v)
  std::uint16_t* aqk = nullptr;  // [64][64] Aqk, zero above the diagonal
  float* decay = nullptr;        // [K] exp(Γlast)
};
std::size_t chunked_workspace_bytes(std::int64_t chunks, std::int64_t HV, std::int64_t K, std::int64_t V);
// The arrays laid out one after the other from `base` (256-byte aligned, as cudaMalloc gives).
ChunkedWorkspace carve_chunked_workspace(std::byte* base, std::int64_t chunks, std::int64_t HV, std::int64_t K,
                                         std::int64_t V);

// Stage B's five forms (docs/cuda-prefill.md): a block of 8 warps per 32-channel value tile, its
// inputs double-buffered, one block per SM (the shortest chain per chunk, for grids of at most one block
// per SM); the same in one buffer loaded in two parts, two blocks per SM; a block of 16 warps per two
// value tiles, double-buffered, one block per SM (two tiles sharing one copy of each chunk's w, qg, kg
// and Aqk); or a block of 16 warps per four tiles, each warp 32 channels (the throughput of larger
// grids: fewer shared-memory loads a product; V = 128, and the paired form at V = 64); or a block of 8
// warps per 128 channels, each warp 16 value rows of the transposed state S^T in its accumulators (no state
// or v_new through shared memory, one barrier a chunk; V = 128, and the paired form at V = 64).
// automatic: the launcher picks by grid size.
enum class ScanForm : std::uint8_t { automatic, double_buffered, single_buffered, paired, wide, transposed };
inline constexpr ScanForm kScanForms[] = {ScanForm::double_buffered, ScanForm::single_buffered, ScanForm::paired,
                                          ScanForm::wide, ScanForm::transposed};
const char* name_of(ScanForm form);  // "double_buffered", ..., "automatic"

struct ChunkedParams {
  DecodeParams call;        // the tensors and options; call.split is not used
  ScanForm scan_form = ScanForm::automatic;
  TensorRef chunk_states;   // strides ordered (chunk, value head, v, k) whatever the layout; absent: no data
  const ChunkEntry* chunks = nullptr;
  const std::int64_t* sequence_chunks = nullptr;
  const std::int64_t* longest_first = nullptr;  // ChunkTable::longest_first
  std::int64_t num_chunks = 0, longest_chunks = 0;
  // Stage A's slot c * HV + hv split by divisors made once: by HV into (c, hv), hv by HV / H into its key head.
  FastDivisor value_heads, head_group;
  ChunkedWorkspace work;
  // Benchmarks only (nullptr otherwise): stage A writes, for slot s = c * HV + hv, clock64() at the
  // slot's start and at the end of each phase (its last warp's arrival at the phase's closing barrier),
  // kPreparePhases + 1 values from s * (kPreparePhases + 1) (chunked_prefill.hpp).
  long long* prepare_phase_clocks = nullptr;
};

// What the kernel and its simulation compute: prefill with chunk size 64; q, k, v, g, beta in bf16,
// fp16 or fp32 through any strided view; o in any float dtype; fp32 or bf16 states in either layout
// from any source (pools in place); K and V of 64 or 128; every preprocessing option; chunk-start
// states; no token states.
const Capabilities& chunked_capabilities();
// Empty when the kernel can run the problem, else what it cannot do (the capabilities, plus the dtype
// of every activation).
std::string chunked_unsupported(const Problem& problem);

// What every entry point does first: the strict profile (rejected with the violations, nothing written),
// then the capabilities (failed, naming what `kernel` does not support); ok when the call can run.
RunOutcome admit_chunked(const Problem& problem, const std::string& kernel);

// The form stage B's launcher picks (ScanForm::automatic) on a device of `sms` SMs: the one with the
// least estimated time (docs/cuda-prefill.md, stage B's forms); never automatic. The wide and transposed
// forms only where V = 128, the paired where V is a multiple of 64.
ScanForm estimated_scan_form(const ChunkedParams& params, int sms);

// Where the chunk table's arrays live for the code that runs (host or device copies of `table`'s).
struct TableAddress {
  const ChunkEntry* chunks;
  const std::int64_t* sequence_chunks;
  const std::int64_t* longest_first;
};
ChunkedParams make_chunked_params(const Problem& problem, const PayloadAddress& payload, const ChunkTable& table,
                                  const TableAddress& at, std::byte* workspace);

}  // namespace kda::kernels
