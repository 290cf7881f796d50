#pragma once
// Builds well-formed Problems from a compact description: contiguous tensors (or a pool with a
// chosen slot stride and base offset), zero-filled, then optionally filled with seeded random data.
// Tests and the CLI start here; the property generators (properties/) build stranger layouts.
#include <cstdint>
#include <vector>

#include "kda/problem.hpp"

namespace kda {

// Where a call's initial states come from: zeros, a dense initial_state, a pool with one index per
// sequence, or (Mode::verify, problem.hpp) a pool through an [N,L] index table with accepted counts
// ("table") or a read-only pool whose per-token states go to a scratch buffer ("scratch").
enum class StateSource : std::uint8_t { none, dense, pool, table, scratch };
std::string_view name_of(StateSource s);  // "none", "dense", "pool", "table", "scratch"
bool is_verify_source(StateSource s);     // table or scratch

struct ProblemSpec {
  Mode mode = Mode::prefill;
  std::vector<std::int64_t> lengths{16};  // one entry per sequence
  bool varlen = true;  // true: B = 1 with cu_seqlens; false: B = N rows of equal length, no cu_seqlens
  DType cu_seqlens_dtype = DType::i32;
  std::int64_t H = 1, HV = 1, K = 16, V = 16;
  Options options;
  DType input_dtype = DType::f32;   // q, k, v, g, beta
  DType output_dtype = DType::f32;  // o
  StateSource state = StateSource::dense;
  DType state_dtype = DType::f32;
  bool final_state = true;          // dense final_state output (ignored with a pool: updated in place)
  bool chunk_states = false;
  bool token_states = false;
  bool with_A_log = false, with_dt_bias = false;
  // Pool only: slots (0: N + 2), slot stride in elements (0: compact HV*V*K), base offset in
  // elements, and the index of each sequence's slot (empty: sequence n uses slot n + 1; -1 = padding).
  std::int64_t pool_slots = 0, pool_slot_stride = 0, pool_offset = 0;
  std::vector<std::int64_t> indices;
  // Verify (mode = verify, state = table or scratch): L tokens per request at most (0: the longest
  // length). Table form: indices holds the [N,L] table row by row (empty: request n uses slots
  // n*L + 1 .. n*L + L; pool_slots 0: N*L + 2) and accepted the counts (empty: 1 each, int32 unless
  // accepted_dtype says otherwise). Scratch form: indices as for a pool, scratch_rows (0: N) rows of
  // scratch_steps (0: L) steps, scratch_indices the row map (empty: request n uses row n).
  std::int64_t L = 0;
  std::vector<std::int64_t> accepted;
  DType accepted_dtype = DType::i32;
  std::int64_t scratch_rows = 0, scratch_steps = 0;
  std::vector<std::int64_t> scratch_indices;
};

Problem make_problem(const ProblemSpec& spec);

// Seeded random inputs in realistic ranges: q, k, v ~ N(0,1) (q and k rows scaled to unit length
// when l2norm is not done in the kernel); g pre-activated in [-1, 0) or raw
// N(0,1) with the gate in kernel; beta in (0,1) or logits N(0,1); A_log = log U(1,16);
// dt_bias ~ N(0, 0.5); initial states (dense or every pool slot) ~ N(0, 0.1).
void fill_random(Problem& problem, std::uint64_t seed);

// fill_random's laws drawn on every core, from a stream of their own for each input and block of 65536
// elements: other values than fill_random's (the same for a seed whatever the cores), for problems of
// hundreds of millions of elements where only the law matters (the GPU benchmarks' timing runs;
// fill_random takes about 30 ns an element). Needs views whose elements do not overlap (make_problem's).
void fill_random_parallel(Problem& problem, std::uint64_t seed);

// A deep copy: every buffer duplicated (guard bands included), buffer sharing between tensors kept.
Problem deep_copy(const Problem& problem);

}  // namespace kda
