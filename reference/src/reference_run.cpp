// run_reference: sequence by sequence, chunk by chunk, in parallel over (sequence, head group) items.
#include <omp.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstdint>

#include "kda/reference.hpp"
#include "kda/reference/chunked.hpp"
#include "kda/reference/preprocess.hpp"
#include "kda/reference/recurrent.hpp"
#include "kda/reference/tensor_io.hpp"

namespace kda {

std::string_view name_of(Algorithm a) { return a == Algorithm::recurrent ? "recurrent" : "chunked"; }

namespace {

using ref::State;

std::size_t count(std::int64_t n) { return static_cast<std::size_t>(n); }

// n zeros. Outputs of large problems are hundreds of MiB of fresh memory (a 256-sequence decode returns
// 128 MiB of fp64 states) and filling them is mostly page faults: half the time of such a decode.
// Transparent huge pages (a hint, ignored where disabled) cut the faults 512-fold.
std::vector<double> zeros(std::size_t n) {
  std::vector<double> v;
  v.reserve(n);
  constexpr std::uintptr_t kPage = 4096;
  const auto begin = (reinterpret_cast<std::uintptr_t>(v.data()) + kPage - 1) & ~(kPage - 1);
  const auto end = reinterpret_cast<std::uintptr_t>(v.data() + n) & ~(kPage - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
  v.assign(n, 0.0);
  return v;
}

ReferenceOutputs zero_outputs(const Problem& p) {
  const std::int64_t head = p.HV * p.K * p.V;
  ReferenceOutputs out;
  out.o = zeros(count(p.B * p.T * p.HV * p.V));
  out.final_state = zeros(count(p.N * head));
  out.written.assign(count(p.N), 1);
  if (p.chunk_states) out.chunk_states = zeros(count(p.total_chunks() * head));
  if (p.token_states || p.mode == Mode::verify) out.token_states = zeros(count(p.B * p.T * head));
  return out;
}

// The state sequence n starts from: its pool slot (a verify call's names it through the accepted
// count or its index), its dense initial state, or zeros.
template <class Acc>
State<Acc> initial_state(const Problem& p, std::int64_t n, std::int64_t hv) {
  const StateLayout layout = p.options.state_layout;
  if (p.state_pool) return ref::load_state<Acc>(*p.state_pool, p.initial_slot(n), hv, layout);
  if (p.initial_state) return ref::load_state<Acc>(*p.initial_state, n, hv, layout);
  return State<Acc>::Zero(p.K, p.V);
}

// Sequence n, value heads [hv0, hv0 + heads), in blocks of chunk_size tokens for both algorithms (so
// chunk-start states are recorded at the same places); first_chunk is the sequence's first row in
// chunk_states. The heads advance together chunk by chunk: their input rows share memory pages.
template <class Acc>
void run_sequence(const Problem& p, Algorithm algorithm, std::int64_t n, std::int64_t hv0, std::int64_t heads,
                  std::int64_t first_chunk, ReferenceOutputs& out) {
  const std::int64_t HV = p.HV, V = p.V, KV = p.K * p.V, C = p.options.chunk_size, L = p.length(n);
  const StateLayout layout = p.options.state_layout;
  std::vector<State<Acc>> S;
  for (std::int64_t h = 0; h < heads; ++h) S.push_back(initial_state<Acc>(p, n, hv0 + h));
  ref::TokenBlock<Acc> block;
  ref::RowMatrix<Acc> o;
  std::vector<State<Acc>> token_states;
  auto* token_sink = p.token_states || p.mode == Mode::verify ? &token_states : nullptr;
  for (std::int64_t c = 0; c * C < L; ++c) {
    const std::int64_t t0 = c * C, tokens = std::min(C, L - t0);
    for (std::int64_t hv = hv0; hv < hv0 + heads; ++hv) {
      State<Acc>& state = S[count(hv - hv0)];
      if (p.chunk_states) ref::store_state(state, layout, &out.chunk_states[count(((first_chunk + c) * HV + hv) * KV)]);
      ref::load_block(p, n, hv, t0, tokens, block);
      if (algorithm == Algorithm::recurrent)
        ref::recurrent_block(state, block, o, token_sink);
      else
        ref::chunked_block(state, block, o, token_sink);
      for (std::int64_t i = 0; i < tokens; ++i) {
        const std::int64_t at = (p.row(n) * p.T + p.first(n) + t0 + i) * HV + hv;  // [B,T,HV] position
        for (std::int64_t j = 0; j < V; ++j) out.o[count(at * V + j)] = static_cast<double>(o(i, j));
        if (token_sink) ref::store_state(token_states[count(i)], layout, &out.token_states[count(at * KV)]);
      }
    }
  }
  for (std::int64_t hv = hv0; hv < hv0 + heads; ++hv)
    ref::store_state(S[count(hv - hv0)], layout, &out.final_state[count((n * HV + hv) * KV)]);
}

// Heads per work item: a sequence's heads split into the fewest equal groups that still give every
// worker an item.
std::int64_t heads_per_item(const Problem& p, int workers) {
  for (std::int64_t groups = 1; groups < p.HV; ++groups)
    if (p.HV % groups == 0 && p.N * groups >= workers) return p.HV / groups;
  return 1;
}

}  // namespace

template <class Acc>
ReferenceOutputs run_reference(const Problem& p, Algorithm algorithm, int threads) {
  ReferenceOutputs out = zero_outputs(p);
  std::vector<std::int64_t> first_chunk(count(p.N));
  for (std::int64_t n = 0, c = 0; n < p.N; c += p.chunks(n), ++n) {
    first_chunk[count(n)] = c;
    // A padding row (pool index -1; a verify call's initial slot -1): zero output, nothing read or written back.
    if (p.state_pool && p.initial_slot(n) < 0) out.written[count(n)] = 0;
  }
  const int workers = threads > 0 ? threads : omp_get_max_threads();
  const std::int64_t heads = heads_per_item(p, workers), groups = p.HV / heads;
#pragma omp parallel for schedule(dynamic) num_threads(workers)
  for (std::int64_t item = 0; item < p.N * groups; ++item) {
    const std::int64_t n = item / groups, hv0 = item % groups * heads;
    if (out.written[count(n)]) run_sequence<Acc>(p, algorithm, n, hv0, heads, first_chunk[count(n)], out);
  }
  return out;
}

template ReferenceOutputs run_reference<float>(const Problem&, Algorithm, int);
template ReferenceOutputs run_reference<double>(const Problem&, Algorithm, int);

}  // namespace kda
