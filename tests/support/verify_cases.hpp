#pragma once
// The verify calls (problem.hpp), in both forms, the token-serial kernel is checked on, by its simulation
// against the fp64 reference here (tests/kernels/sim_verify_test.cpp) and by the CUDA kernel against the
// simulation on a GPU (tests/gpu/cuda_vs_sim_test.cpp); and what a verify call may write.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "kda/properties/case_spec.hpp"

namespace kda::test {

struct VerifyCase {
  std::string name;
  props::CaseSpec spec;
  bool column_major_table = false;  // the [N, L] table as a column-major view with a leading gap

  Problem build() const {
    Problem p = props::build_case(spec);
    if (!column_major_table) return p;
    const Tensor& rows = *p.state_indices;
    const std::int64_t N = rows.shape()[0], L = rows.shape()[1], pad = 3;
    Tensor columns = Tensor::with_view("state_indices", View{DType::i32, {N, L}, {1, N + pad}, 5});
    for (std::int64_t n = 0; n < N; ++n)
      for (std::int64_t t = 0; t < L; ++t) columns.set_integer(n, t, rows.integer_at(n, t));
    p.state_indices = std::move(columns);
    return p;
  }
};
inline void PrintTo(const VerifyCase& c, std::ostream* os) { *os << c.name; }  // gtest names a failing case

inline props::CaseSpec verify_spec(std::vector<std::int64_t> lengths, std::int64_t L, std::int64_t H, std::int64_t HV,
                                   std::int64_t K, std::int64_t V, StateSource form = StateSource::table) {
  props::CaseSpec c;
  ProblemSpec& s = c.problem;
  s.mode = Mode::verify, s.state = form, s.final_state = false;
  s.lengths = std::move(lengths), s.L = L;
  s.H = H, s.HV = HV, s.K = K, s.V = V;
  s.options.l2norm_qk = true;
  c.padding_pattern = false;  // keyed on pool calls' one index per sequence; verify padding rows are table rows
  c.data_seed = 4500 + static_cast<std::uint64_t>(K * 7 + V + L);
  return c;
}

// Index table: every accepted-count edge (1, L, between), a padding row (initial slot -1), a -1 slot
// after a token of a live request, ragged and empty requests, int32 and int64 counts, fp32 and bf16
// pools, each state path (staged fp32, bf16 rows, any strides) and reduction tree (16 lanes a row, 32
// with one and two chunks), slots in no order, unnamed slots between them. Scratch buffer: more steps
// than L, a row map that is not the identity, a -1 row for a live request, a padding row.
inline std::vector<VerifyCase> verify_cases() {
  std::vector<VerifyCase> out;
  {  // num_spec = 3 at the benchmark's K = V = 128: fixed L = 4 through cu_seqlens, padded pool slots.
    auto c = verify_spec(std::vector<std::int64_t>(6, 4), 4, 2, 4, 128, 128);
    auto& s = c.problem;
    s.input_dtype = s.output_dtype = DType::bf16;
    s.pool_slots = 29, s.pool_slot_stride = 4 * 128 * 128 + 32, s.pool_offset = 64;
    s.indices = {17, 3,  25, 8,   // accepted 1: starts from slot 17
                 12, -1, 5,  20,  // accepted 2: initial slot -1, a padding row
                 0,  27, 14, 9,   // accepted 4: starts from slot 9, the last token's slot
                 22, 6,  -1, 11,  // accepted 2: the state after token 2 is not stored
                 1,  19, 26, 4,   // accepted 2
                 15, 28, 10, 23};
    s.accepted = {1, 2, 4, 2, 2, 4};
    s.options.gate_in_kernel = true, s.options.beta_from_logits = true;
    s.with_A_log = s.with_dt_bias = true;
    out.push_back({"verify_table_k128_L4", c});
  }
  {  // num_spec = 7, ragged (an empty request, counts past a request's length), int64 counts, bf16
     // pool, K = V = 64 (16 lanes a row), the table column-major.
    auto c = verify_spec({8, 3, 1, 0, 5, 8}, 8, 1, 2, 64, 64);
    auto& s = c.problem;
    s.state_dtype = DType::bf16, s.pool_slots = 50;
    for (std::int64_t i = 0; i < 48; ++i) s.indices.push_back((i * 29 + 7) % 48 + 1);  // a permutation of 1..48
    s.indices[3] = -1, s.indices[5 * 8 + 1] = -1;  // after token 3 of request 0, token 1 of request 5
    s.accepted = {8, 2, 1, 1, 5, 3};
    s.accepted_dtype = DType::i64;
    s.options.gate_in_kernel = true, s.options.lower_bound = -5.0, s.options.safe_gate = true;
    s.with_A_log = true;
    c.gates = props::GateMix::mixture;
    out.push_back({"verify_table_k64_L8_ragged_bf16_pool", c, true});
  }
  {  // [K,V] states, K = 100 and V = 60 (element by element), batch rows instead of cu_seqlens.
    auto c = verify_spec({2, 2, 2}, 2, 1, 1, 100, 60);
    auto& s = c.problem;
    s.varlen = false, s.input_dtype = DType::f16, s.options.state_layout = StateLayout::kv;
    s.accepted = {2, 1, 2};
    out.push_back({"verify_table_k100_kv_L2_batched", c});
  }
  {  // K = 256: two chunks a lane, rows reduced four at a time.
    auto c = verify_spec({8, 8}, 8, 1, 1, 256, 32);
    auto& s = c.problem;
    s.accepted = {5, 8};
    s.options.beta_from_logits = true, s.options.allow_neg_eigval = true;
    out.push_back({"verify_table_k256_L8", c});
  }
  {  // The scratch form at K = V = 128: L' = 5 > L = 4, rows in no order, one -1 row, a padding row.
    auto c = verify_spec(std::vector<std::int64_t>(5, 4), 4, 2, 4, 128, 128, StateSource::scratch);
    auto& s = c.problem;
    s.input_dtype = DType::bf16;
    s.pool_slots = 7, s.indices = {3, -1, 0, 6, 2};
    s.scratch_rows = 6, s.scratch_steps = 5, s.scratch_indices = {4, 0, -1, 1, 5};
    s.options.gate_in_kernel = true, s.options.beta_from_logits = true;
    s.with_A_log = s.with_dt_bias = true;
    out.push_back({"verify_scratch_k128_L4", c});
  }
  {  // Ragged, bf16 pool and scratch buffer, [K,V] states, the identity row map (FlashInfer's).
    auto c = verify_spec({3, 1, 0, 4}, 4, 1, 2, 64, 48, StateSource::scratch);
    auto& s = c.problem;
    s.state_dtype = DType::bf16, s.options.state_layout = StateLayout::kv;
    s.pool_slots = 5, s.indices = {4, 1, 0, 2};
    out.push_back({"verify_scratch_k64_v48_kv_ragged_bf16", c});
  }
  return out;
}

// Where a verify call stores the state after token t of request n: the leading index into the pool
// (table form: {slot}) or into scratch_states (scratch form: {row, t}); empty where it stores none (a
// -1 entry, a padding row).
inline std::vector<std::int64_t> stored_at(const Problem& p, std::int64_t n, std::int64_t t) {
  if (p.initial_slot(n) < 0) return {};
  const std::int64_t where = p.token_slot(n, t);
  if (where < 0) return {};
  return p.scratch_states ? std::vector<std::int64_t>{where, t} : std::vector<std::int64_t>{where};
}
inline const Tensor& stored_states(const Problem& p) { return p.scratch_states ? *p.scratch_states : *p.state_pool; }

// Element (hv, i, j) of the state stored at `lead` (stored_at).
inline double stored_element(const Problem& p, const std::vector<std::int64_t>& lead, std::int64_t hv, std::int64_t i,
                             std::int64_t j) {
  std::vector<std::int64_t> index = lead;
  index.insert(index.end(), {hv, i, j});
  return stored_states(p).at(index);
}

// Bytes a verify call changed where it may not write: in every buffer of the problem, anything but o's
// elements and the states stored_at names, guard bands included (so the pool of a scratch-form call
// must be bit-identical). `after` is a deep_copy of `before` that a kernel ran on. One line per buffer
// that changed.
inline std::vector<std::string> verify_changes_outside_writable(const Problem& before, const Problem& after) {
  struct Region {
    const GuardedBuffer* before;
    const GuardedBuffer* after;
    std::vector<char> writable;
  };
  std::vector<Region> regions;
  const auto region_of = [&](const Tensor& b, const Tensor& a) -> Region& {
    for (Region& r : regions)
      if (r.before == b.buffer.get()) return r;
    regions.push_back({b.buffer.get(), a.buffer.get(), std::vector<char>(b.buffer->size(), 0)});
    return regions.back();
  };
  const auto mark = [](Region& r, const View& v, std::span<const std::int64_t> index) {
    const auto bytes = static_cast<std::int64_t>(size_of(v.dtype));
    const std::int64_t first = v.element_at(index) * bytes;
    std::fill_n(r.writable.begin() + first, bytes, 1);
  };
  const Tensor& stored = stored_states(before);
  for (const TensorField& f : tensor_fields()) {
    const Tensor* b = f.in(before);
    const Tensor* a = f.in(after);
    if (!b || !a) continue;
    Region& r = region_of(*b, *a);
    if (f.name == "o") for_each_index(b->shape(), [&](std::span<const std::int64_t> i) { mark(r, b->view, i); });
    if (b != &stored) continue;
    const Shape& shape = b->shape();
    const Shape head(shape.end() - 3, shape.end());
    for (std::int64_t n = 0; n < before.N; ++n)
      for (std::int64_t t = 0; t < before.length(n); ++t) {
        std::vector<std::int64_t> index = stored_at(before, n, t);
        if (index.empty()) continue;
        const std::size_t lead = index.size();
        index.resize(lead + 3);
        for_each_index(head, [&](std::span<const std::int64_t> i) {
          std::copy(i.begin(), i.end(), index.begin() + static_cast<std::ptrdiff_t>(lead));
          mark(r, b->view, index);
        });
      }
  }
  std::vector<std::string> changes;
  for (const Region& r : regions) {
    std::int64_t changed = 0;
    for (std::size_t i = 0; i < r.writable.size(); ++i)
      changed += !r.writable[i] && r.before->data()[i] != r.after->data()[i];
    if (changed) changes.push_back(r.before->name() + ": " + std::to_string(changed) + " bytes changed outside o and the named slots");
    if (r.after->check_guards()) changes.push_back(r.before->name() + ": a guard band changed");
  }
  return changes;
}

// Every element of a tensor through its view, row-major, as fp64.
inline std::vector<double> every_element(const Tensor& t) {
  std::vector<double> out;
  for_each_index(t.shape(), [&](std::span<const std::int64_t> i) { out.push_back(t.at(i)); });
  return out;
}

}  // namespace kda::test
