// run_reference: sequence by sequence, chunk by chunk, in parallel over (sequence, head group) items.
#include <omp.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

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

// Makes v n elements long, all zero; storage of the right size is reused (and zeroed only where
// zero_unwritten says), anything else comes fresh (and zero).
bool fit(std::vector<double>& v, std::size_t n) {
  if (v.size() == n) return false;
  v = zeros(n);
  return true;
}

// Sizes out for p and zeroes what no work item writes: o and per-token states outside any live sequence,
// the chunk states and final states of padding rows. Storage reused from an earlier call is not zeroed
// where the work items overwrite it (the final states of live sequences: most of a decode's output).
void prepare_outputs(const Problem& p, ReferenceOutputs& out) {
  const std::int64_t head = p.HV * p.K * p.V;
  auto zeroed = [](std::vector<double>& v, std::size_t n) {
    if (!fit(v, n)) std::fill(v.begin(), v.end(), 0.0);
  };
  zeroed(out.o, count(p.B * p.T * p.HV * p.V));
  if (p.chunk_states) zeroed(out.chunk_states, count(p.total_chunks() * head)); else out.chunk_states.clear();
  if (p.token_states || p.mode == Mode::verify) zeroed(out.token_states, count(p.B * p.T * head)); else out.token_states.clear();
  const bool fresh = fit(out.final_state, count(p.N * head));
  out.written.assign(count(p.N), 1);
  for (std::int64_t n = 0; n < p.N; ++n) {
    // A padding row (pool index -1; a verify call's initial slot -1): zero output, nothing read or written back.
    if (!p.state_pool || p.initial_slot(n) >= 0) continue;
    out.written[count(n)] = 0;
    if (!fresh) std::fill_n(out.final_state.begin() + n * head, head, 0.0);
  }
}

// The working state's layout: value-major (V x K, [V,K]) for the fp64 recurrent form, K x V ([K,V])
// for the fp32 recurrent form and the chunked one (recurrent.hpp says why the two precisions differ).
template <class Acc>
StateLayout working_layout(Algorithm algorithm) {
  return algorithm == Algorithm::recurrent && std::is_same_v<Acc, double> ? StateLayout::vk : StateLayout::kv;
}

// The state sequence n starts from: its pool slot (a verify call's names it through the accepted
// count or its index), its dense initial state, or zeros.
template <class Acc>
void initial_state(const Problem& p, StateLayout working, std::int64_t n, std::int64_t hv, Eigen::Ref<State<Acc>> into) {
  const StateLayout layout = p.options.state_layout;
  const Tensor* from = p.state_pool ? &*p.state_pool : p.initial_state ? &*p.initial_state : nullptr;
  const std::int64_t lead = p.state_pool ? p.initial_slot(n) : n;
  if (!from)
    into.setZero();
  else if (working == StateLayout::vk)
    ref::load_value_major_state<Acc>(*from, lead, hv, layout, into);
  else
    ref::load_state<Acc>(*from, lead, hv, layout, into);
}

template <class Derived>
void store_working(const Eigen::MatrixBase<Derived>& s, StateLayout layout, StateLayout working, double* dst) {
  if (working == StateLayout::vk)
    ref::store_value_major_state(s, layout, dst);
  else
    ref::store_state(s, layout, dst);
}

// One worker thread's working memory, kept across work items and calls: a K = V = 128 fp64 state is
// 128 KiB, which malloc would serve from fresh pages (mmap) every time.
template <class Acc>
struct Workspace {
  std::vector<State<Acc>> S;  // the item's heads, unless they live in the output
  ref::TokenBlock<Acc> block;
  ref::RowMatrix<Acc> o;
  std::vector<State<Acc>> token_states;
};

// Sequence n, value heads [hv0, hv0 + heads), in blocks of chunk_size tokens for both algorithms (so
// chunk-start states are recorded at the same places); first_chunk is the sequence's first row in
// chunk_states. The heads advance together chunk by chunk: their input rows share memory pages.
// An fp64 working state in the problem's layout lives in out.final_state itself: no copy at the end,
// one pass less over the largest output of a decode.
template <class Acc>
void run_sequence(const Problem& p, Algorithm algorithm, std::int64_t n, std::int64_t hv0, std::int64_t heads,
                  std::int64_t first_chunk, ReferenceOutputs& out) {
  const std::int64_t HV = p.HV, V = p.V, KV = p.K * p.V, C = p.options.chunk_size, L = p.length(n);
  const StateLayout layout = p.options.state_layout;
  const StateLayout working = working_layout<Acc>(algorithm);
  const std::int64_t rows = working == StateLayout::vk ? p.V : p.K, cols = working == StateLayout::vk ? p.K : p.V;
  const bool in_place = std::is_same_v<Acc, double> && layout == working;
  static thread_local Workspace<Acc> ws;
  auto& [own, block, o, token_states] = ws;
  std::vector<Acc*> S(count(heads));  // each head's working state, rows x cols
  own.resize(count(heads));
  for (std::int64_t h = 0; h < heads; ++h) {
    Acc*& s = S[count(h)];
    if constexpr (std::is_same_v<Acc, double>)
      if (in_place) s = &out.final_state[count((n * HV + hv0 + h) * KV)];
    if (!in_place) {
      own[count(h)].resize(rows, cols);
      s = own[count(h)].data();
    }
    initial_state<Acc>(p, working, n, hv0 + h, Eigen::Map<State<Acc>>(S[count(h)], rows, cols));
  }
  auto* token_sink = p.token_states || p.mode == Mode::verify ? &token_states : nullptr;
  for (std::int64_t c = 0; c * C < L; ++c) {
    const std::int64_t t0 = c * C, tokens = std::min(C, L - t0);
    for (std::int64_t hv = hv0; hv < hv0 + heads; ++hv) {
      Eigen::Map<State<Acc>> state(S[count(hv - hv0)], rows, cols);
      if (p.chunk_states) store_working(state, layout, working, &out.chunk_states[count(((first_chunk + c) * HV + hv) * KV)]);
      ref::load_block(p, n, hv, t0, tokens, block);
      if (algorithm == Algorithm::recurrent) {
        if constexpr (std::is_same_v<Acc, double>)
          ref::recurrent_block_value_major(state, block, o, token_sink);
        else
          ref::recurrent_block_key_major(state, block, o, token_sink);
      } else
        ref::chunked_block<Acc>(state, block, o, token_sink);
      for (std::int64_t i = 0; i < tokens; ++i) {
        const std::int64_t at = (p.row(n) * p.T + p.first(n) + t0 + i) * HV + hv;  // [B,T,HV] position
        for (std::int64_t j = 0; j < V; ++j) out.o[count(at * V + j)] = static_cast<double>(o(i, j));
        if (token_sink) store_working(token_states[count(i)], layout, working, &out.token_states[count(at * KV)]);
      }
    }
  }
  if (!in_place)
    for (std::int64_t h = 0; h < heads; ++h)
      store_working(own[count(h)], layout, working, &out.final_state[count((n * HV + hv0 + h) * KV)]);
}

// Heads per work item: a sequence's heads split into the fewest equal groups that still give every
// worker several items (sequences differ in length; the dynamic schedule evens them out).
std::int64_t heads_per_item(const Problem& p, int workers) {
  constexpr std::int64_t kItemsPerWorker = 2;
  for (std::int64_t groups = 1; groups < p.HV; ++groups)
    if (p.HV % groups == 0 && p.N * groups >= kItemsPerWorker * workers) return p.HV / groups;
  return 1;
}

}  // namespace

template <class Acc>
void run_reference(const Problem& p, Algorithm algorithm, int threads, ReferenceOutputs& out) {
  prepare_outputs(p, out);
  std::vector<std::int64_t> first_chunk(count(p.N));
  for (std::int64_t n = 0, c = 0; n < p.N; c += p.chunks(n), ++n) first_chunk[count(n)] = c;
  const int workers = threads > 0 ? threads : omp_get_max_threads();
  const std::int64_t heads = heads_per_item(p, workers), groups = p.HV / heads;
#pragma omp parallel for schedule(dynamic) num_threads(workers)
  for (std::int64_t item = 0; item < p.N * groups; ++item) {
    const std::int64_t n = item / groups, hv0 = item % groups * heads;
    if (out.written[count(n)]) run_sequence<Acc>(p, algorithm, n, hv0, heads, first_chunk[count(n)], out);
  }
}

template <class Acc>
ReferenceOutputs run_reference(const Problem& p, Algorithm algorithm, int threads) {
  ReferenceOutputs out;
  run_reference<Acc>(p, algorithm, threads, out);
  return out;
}

template void run_reference<float>(const Problem&, Algorithm, int, ReferenceOutputs&);
template void run_reference<double>(const Problem&, Algorithm, int, ReferenceOutputs&);
template ReferenceOutputs run_reference<float>(const Problem&, Algorithm, int);
template ReferenceOutputs run_reference<double>(const Problem&, Algorithm, int);

}  // namespace kda
