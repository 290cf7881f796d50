// How sequences are packed does not change the answer: a varlen call equals one call per sequence,
// a batch of equal rows equals the same rows packed, and a state pool gathered through permuted
// indices equals dense initial states. Each (sequence, head) pair is computed alone by the same
// arithmetic, so all of these agree bit for bit. Padding rows (index -1) give zero output, write
// nothing back, and leave the pool bit-identical.
#include <gtest/gtest.h>

#include "reference_test_support.hpp"

namespace kda {
namespace {

ProblemSpec spec_of(std::vector<std::int64_t> lengths) {
  ProblemSpec spec;
  spec.lengths = std::move(lengths);
  spec.H = 2, spec.HV = 4, spec.K = 16, spec.V = 12;
  spec.options.l2norm_qk = true;
  spec.options.chunk_size = 32;
  spec.chunk_states = true;
  return spec;
}

std::vector<double> o_rows(const ReferenceOutputs& out, const Problem& p, std::int64_t b, std::int64_t t0, std::int64_t count) {
  std::vector<double> rows;
  for (std::int64_t t = t0; t < t0 + count; ++t)
    for (std::int64_t hv = 0; hv < p.HV; ++hv)
      for (double x : test::o_row(out, p, b, t, hv)) rows.push_back(x);
  return rows;
}

TEST(ReferencePacking, VarlenEqualsOneCallPerSequence) {
  const std::vector<std::int64_t> lengths{37, 0, 64, 1, 130};
  Problem packed = make_problem(spec_of(lengths));
  fill_random(packed, 51);
  for (auto algorithm : {Algorithm::recurrent, Algorithm::chunked}) {
    const auto all = run_reference<double>(packed, algorithm);
    std::int64_t chunk = 0;
    for (std::int64_t n = 0; n < packed.N; ++n) {
      SCOPED_TRACE(std::string(name_of(algorithm)) + " sequence " + std::to_string(n));
      const std::int64_t L = lengths[static_cast<std::size_t>(n)];
      Problem alone = make_problem(spec_of({L}));
      test::copy_tokens(packed, 0, packed.first(n), alone, 0, 0, L);
      for_each_index(alone.initial_state->shape(), [&](std::span<const std::int64_t> i) {
        alone.initial_state->set(i, packed.initial_state->at({n, i[1], i[2], i[3]}));
      });
      const auto one = run_reference<double>(alone, algorithm);
      EXPECT_EQ(o_rows(all, packed, 0, packed.first(n), L), one.o);
      EXPECT_EQ(test::states(all.final_state, packed, n, 1), one.final_state);
      EXPECT_EQ(test::states(all.chunk_states, packed, chunk, alone.total_chunks()), one.chunk_states);
      chunk += alone.total_chunks();
    }
  }
}

TEST(ReferencePacking, BatchRowsEqualTheSameRowsPacked) {
  ProblemSpec rows_spec = spec_of({50, 50, 50});
  rows_spec.varlen = false;
  Problem rows = make_problem(rows_spec), packed = make_problem(spec_of({50, 50, 50}));
  fill_random(rows, 52);
  for (std::int64_t b = 0; b < 3; ++b) test::copy_tokens(rows, b, 0, packed, 0, 50 * b, 50);
  test::copy_values(*rows.initial_state, *packed.initial_state);
  for (auto algorithm : {Algorithm::recurrent, Algorithm::chunked}) {
    SCOPED_TRACE(name_of(algorithm));
    const auto a = run_reference<double>(rows, algorithm), b = run_reference<double>(packed, algorithm);
    EXPECT_EQ(a.o, b.o);  // [3,50,..] and [1,150,..] share one flat order
    EXPECT_EQ(a.final_state, b.final_state);
    EXPECT_EQ(a.chunk_states, b.chunk_states);
  }
}

// Six sequences, two of them padding, over a pool of 9 padded slots at an offset.
const std::vector<std::int64_t> kPoolLengths{20, 5, 70, 0, 33, 9};
const std::vector<std::int64_t> kIndices{5, -1, 0, 7, 2, -1};

Problem pool_problem() {
  ProblemSpec spec = spec_of(kPoolLengths);
  spec.state = StateSource::pool;
  spec.pool_slots = 9;
  spec.pool_slot_stride = 4 * 16 * 12 + 40;
  spec.pool_offset = 24;
  spec.indices = kIndices;
  Problem p = make_problem(spec);
  fill_random(p, 53);
  return p;
}

TEST(ReferencePacking, PoolGatherEqualsDenseStates) {
  const Problem pool = pool_problem();
  std::vector<std::int64_t> live, live_lengths;
  for (std::int64_t n = 0; n < pool.N; ++n)
    if (kIndices[static_cast<std::size_t>(n)] >= 0) live.push_back(n), live_lengths.push_back(pool.length(n));
  Problem dense = make_problem(spec_of(live_lengths));
  for (std::int64_t m = 0; m < dense.N; ++m) {
    const std::int64_t n = live[static_cast<std::size_t>(m)];
    test::copy_tokens(pool, 0, pool.first(n), dense, 0, dense.first(m), dense.length(m));
    for_each_index(dense.initial_state->shape(), [&](std::span<const std::int64_t> i) {
      if (i[0] == m) dense.initial_state->set(i, pool.state_pool->at({kIndices[static_cast<std::size_t>(n)], i[1], i[2], i[3]}));
    });
  }
  for (auto algorithm : {Algorithm::recurrent, Algorithm::chunked}) {
    SCOPED_TRACE(name_of(algorithm));
    const auto a = run_reference<double>(pool, algorithm), b = run_reference<double>(dense, algorithm);
    for (std::int64_t m = 0; m < dense.N; ++m) {
      const std::int64_t n = live[static_cast<std::size_t>(m)];
      EXPECT_EQ(o_rows(a, pool, 0, pool.first(n), pool.length(n)), o_rows(b, dense, 0, dense.first(m), dense.length(m)));
      EXPECT_EQ(test::states(a.final_state, pool, n, 1), test::states(b.final_state, dense, m, 1));
      EXPECT_TRUE(a.written[static_cast<std::size_t>(n)]);
    }
    for (std::int64_t n : {1, 5}) {  // padding rows
      EXPECT_FALSE(a.written[static_cast<std::size_t>(n)]);
      const auto rows = o_rows(a, pool, 0, pool.first(n), pool.length(n));
      EXPECT_EQ(rows, std::vector<double>(rows.size(), 0.0));
    }
  }
}

TEST(ReferencePacking, PaddingRowsLeaveThePoolUntouchedAndZeroTheirOutput) {
  Problem p = pool_problem();
  for_each_index(p.o.shape(), [&](std::span<const std::int64_t> i) { p.o.set(i, 7.0); });  // stale output
  const GuardedBuffer& pool = *p.state_pool->buffer;
  const std::vector<std::byte> before(pool.data(), pool.data() + pool.size());
  const auto out = run_reference<double>(p, Algorithm::chunked);
  write_outputs(out, p);

  // Only the live slots' bytes may change; the padding between slots and unused slots stay as they were.
  std::vector<bool> may_change(pool.size(), false);
  const std::int64_t slot_bytes = p.HV * p.K * p.V * 4;
  for (std::int64_t slot : kIndices)
    if (slot >= 0)
      for (std::int64_t b = 0; b < slot_bytes; ++b)
        may_change[static_cast<std::size_t>(p.state_pool->view.element_at({slot, 0, 0, 0}) * 4 + b)] = true;
  std::size_t changed_elsewhere = 0, changed_live = 0;
  for (std::size_t i = 0; i < pool.size(); ++i) {
    const bool changed = pool.data()[i] != before[i];
    (may_change[i] ? changed_live : changed_elsewhere) += changed;
  }
  EXPECT_EQ(changed_elsewhere, 0u);
  EXPECT_GT(changed_live, 0u);
  EXPECT_FALSE(pool.check_guards());
  for (std::int64_t n : {1, 5})
    for (std::int64_t t = p.first(n); t < p.first(n) + p.length(n); ++t)
      for (std::int64_t hv = 0; hv < p.HV; ++hv)
        for (std::int64_t j = 0; j < p.V; ++j) EXPECT_EQ(p.o.at({0, t, hv, j}), 0.0);
}

}  // namespace
}  // namespace kda
