#pragma once
// A generated test case as a plain value: what rapidcheck generates, shrinks and prints. build_case()
// turns it into a Problem deterministically, so a printed CaseSpec (or its rapidcheck reproduce string)
// rebuilds exactly the same tensors, bit for bit.
#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>

#include "kda/problem_factory.hpp"

namespace kda::props {

// How the activations q, k, v, g, beta (and o) sit in memory. Every non-contiguous layout leaves
// gaps that are filled with poison, so a kernel that reads outside the view reads poison. Strided
// views also start `pad` elements into their buffer (a leading gap). beta [B,T,HV] is laid out as
// if it were [B,T,HV,1].
enum class InputLayout : std::uint8_t {
  contiguous,
  padded_token_stride,  // token stride larger than the row
  padded_head_stride,   // head stride larger than the head dim (beta: a head stride > 1)
  fused_qkv,            // q, k and v as slices of one [B, T, 2*H*K + HV*V (+pad)] projection buffer;
                        // g and beta (and o) with a padded token stride
  permuted,             // head-major storage [B, H, T, D] (+pad per head) seen as [B, T, H, D]
};

// What fills every gap and every output element before the call: NaN, or 1e30 rounded to the
// tensor's dtype (+Inf in fp16, whose range ends at 65504).
enum class Poison : std::uint8_t { nan, huge };

// How gate values are drawn (per token, per value head, per key channel). Pre-activated gates are
// the log-decay itself; raw gates go through the in-kernel gate (Options::gate_in_kernel).
enum class GateMix : std::uint8_t {
  realistic,    // pre-activated in [-1, 0), or raw N(0,1) through the in-kernel gate
  saturating,   // pre-activated at -5 (the safe gate's floor); raw of magnitude ~30: the lower-bound
                // gate sits at lb or 0, softplus far out
  zeros,        // exactly 0: no decay at all (raw: the gate at its dt_bias value)
  strong,       // a quarter of the entries at -1000 pre-activated (key channels wiped) or raw +-1000
  mixture,      // each token picks one of the above for all its heads and channels
};

// Adversarial data, laid over fill_random's draws (build_case): where real kernels lose precision
// or range. The key and gate mixes run per sequence in runs of 16 tokens (a sub-chunk), from the
// sequence's first token; "strongest gate" is -5 per token (the safe gate's floor) pre-activated,
// the lower bound itself for the lower-bound gate and -5 through softplus (raw gates are solved
// for: the in-kernel gate maps them onto the target decay).
enum class DataMix : std::uint8_t {
  random,          // fill_random's draws as they are
  repeated_keys,   // every run of 16 tokens repeats its first key; each run's gates near 0 (-1e-4) or
                   // at the strongest; beta near 1: the intra-chunk inverse at its worst conditioning
  collinear_keys,  // k_t = k_{t-1} + eps * noise (eps 1e-3 .. 1e-6 relative, per sequence), gates and
                   // beta as for repeated keys
  long_memory,     // gates near 0 (-1e-4) and beta 0.01 .. 0.03 everywhere; the generator draws one long
                   // sequence of small heads (past 512 tokens at the default limits) with an initial
                   // state where it can: a kernel truncating history is seen
  strong_gates,    // a run of 16..32 tokens per sequence at the strongest gate (pre-activated and
                   // softplus: -5 or -20 per token): a chunk's cumulative decay far below -88
  large_state,     // initial states and pool slots (N(0, 0.1)) scaled by 1e3 .. 1e5: |h0| up to about 1e5
                   // (by 1e3 at most with fp16 states or outputs, whose range ends at 65504); the
                   // generator prefers fp16 activations and an initial state
  tiny_state,      // initial states and v scaled by 1e-4 .. 1e-7: fp16's subnormal range (fp16
                   // activations and an initial state preferred)
};

// How a verify call's [N, L] index table sits in memory: row-major, an [L, N] table seen transposed,
// or rows padded by extra entries (gaps hold a slot no request names, a spare slot full of poison).
enum class TableLayout : std::uint8_t { compact, transposed, padded_rows };

struct CaseSpec {
  ProblemSpec problem;  // sizes, lengths, options, dtypes, state source, pool geometry, indices
  InputLayout layout = InputLayout::contiguous;         // q, k, v, g, beta
  InputLayout output_layout = InputLayout::contiguous;  // o (fused_qkv: a padded token stride)
  // Elements of padding in each padded stride and leading gap. Tensor i of (q, k, v, g, beta, o)
  // pads by pad + i, so no two tensors share strides (a kernel using q's strides for k is caught).
  std::int64_t pad = 1;
  Poison poison = Poison::nan;
  GateMix gates = GateMix::realistic;
  DataMix data = DataMix::random;  // applied after the gate mix, overriding its gates where it sets them
  // Sequences whose state index is -1 get the padding pattern upstream uses: gate -1000
  // (pre-activated gates only), k = v = beta = 0.
  bool padding_pattern = true;
  TableLayout table_layout = TableLayout::compact;  // verify, table form only
  std::uint64_t data_seed = 0;

  std::string describe() const;  // one line
};

std::ostream& operator<<(std::ostream& os, const CaseSpec& spec);  // rapidcheck prints counterexamples with it

// The Problem a spec describes: make_problem's tensors re-laid out per `layout` / `output_layout`,
// every buffer's payload poisoned, then fill_random(data_seed) over the views, q and k rows
// normalized to unit length when the kernel does not l2-normalize them (as callers do: raw N(0,1)
// keys make the delta rule diverge), the gate mix, the data mix and the padding pattern. Gaps (pool gaps between slots and before its base included) and every output
// element (o, final_state, chunk_states, token_states) hold poison; a kernel must write its outputs.
// Deterministic: the same spec gives bit-identical buffers.
Problem build_case(const CaseSpec& spec);

double value_of(Poison poison);  // NaN or 1e30 (before rounding to a tensor's dtype)

std::string_view name_of(InputLayout layout);
std::string_view name_of(Poison poison);
std::string_view name_of(GateMix mix);
std::string_view name_of(TableLayout layout);
std::string_view name_of(DataMix mix);

}  // namespace kda::props
