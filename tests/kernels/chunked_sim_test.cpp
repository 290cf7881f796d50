// The chunked kernel's CPU simulation: accuracy against its precision model (the same 11-bit
// roundings, fp64 elsewhere; the target on the benchmark's configuration is
// chunked_sim_accuracy_test), causality bit for bit, a padding row's outputs, the blocked inverse
// within its rounding bound, the chunk table, and stage B's form estimate. (Its tensor-core sums follow tensor_core_model.hpp, tested in tensor_core_model_test.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <random>
#include <vector>

#include "../support/chunked_cases.hpp"
#include "kda/kernels/chunked_precision_model.hpp"
#include "kda/kernels/chunked_prefill_sim.hpp"
#include "kda/kernels/detail/chunked_stage_a.hpp"
#include "kda/metrics.hpp"
#include "kda/properties/case_spec.hpp"
#include "kda/properties/comparison.hpp"
#include "kda/reference.hpp"

namespace kda::kernels {
namespace {

Problem random_problem(const ProblemSpec& spec, std::uint64_t seed) {
  Problem p = make_problem(spec);
  fill_random(p, seed);
  return p;
}

ReferenceOutputs simulate(const Problem& input) {
  Problem p = deep_copy(input);
  simulate_chunked_prefill(p);
  return props::read_outputs(p);
}

ReferenceOutputs model(const Problem& input) {
  Problem p = deep_copy(input);
  EXPECT_EQ(make_chunked_precision_model()->run(p).status, RunOutcome::Status::ok);
  return props::read_outputs(p);
}

class ChunkedSimCase : public testing::TestWithParam<std::pair<std::string, ProblemSpec>> {};

// FlashAttention's rule against the same-precision model: the simulation's error against the fp64
// recurrence at most twice the model's, plus the output dtype's unit roundoff (the catalogue's policy).
TEST_P(ChunkedSimCase, WithinTwiceThePrecisionModel) {
  const Problem p = random_problem(GetParam().second, 11);
  SCOPED_TRACE(p.describe());
  const ReferenceOutputs oracle = run_reference<double>(p, Algorithm::recurrent);
  const ReferenceOutputs sim = simulate(p), m = model(p);
  const double u = props::unit_roundoff(p.o.dtype());
  const double o_sim = rel_rms(sim.o, oracle.o), o_model = rel_rms(m.o, oracle.o);
  std::cout << GetParam().first << ": o rel-RMS sim " << o_sim << ", model " << o_model << "; sim vs model "
            << rel_rms(sim.o, m.o) << "\n";
  EXPECT_LE(o_sim, 2 * o_model + u);
  EXPECT_GT(o_sim, 0.0);
  // read_outputs and the references leave padding rows' states zero: they compare equal.
  const DType state_dtype = p.final_state ? p.final_state->dtype() : p.state_pool ? p.state_pool->dtype() : DType::f32;
  if (p.final_state || p.state_pool) {
    EXPECT_LE(rel_rms(sim.final_state, oracle.final_state),
              2 * rel_rms(m.final_state, oracle.final_state) + props::unit_roundoff(state_dtype));
  }
  if (p.chunk_states) {
    EXPECT_LE(rel_rms(sim.chunk_states, oracle.chunk_states), 2 * rel_rms(m.chunk_states, oracle.chunk_states) + u);
  }
}

INSTANTIATE_TEST_SUITE_P(Named, ChunkedSimCase, testing::ValuesIn(test::chunked_named_cases()),
                         [](const auto& param) { return param.param.first; });

// No output moves when a later token changes: in the same 16-row sub-block, a later sub-block of the
// same chunk and the next chunk. Bit for bit: the simulation never lets a later row into an earlier one.
TEST(ChunkedSim, CausalBitForBit) {
  ProblemSpec spec = test::benchmark_spec({150}, 1);
  spec.output_dtype = DType::f32;
  const Problem base = random_problem(spec, 13);
  const ReferenceOutputs before = simulate(base);
  const std::int64_t t = 37;
  for (std::int64_t later : {38, 47, 50, 63, 70}) {
    Problem changed = deep_copy(base);
    for (std::int64_t c = 0; c < changed.K; ++c) {
      changed.q.set({0, later, 0, c}, 0.5 - changed.q.at({0, later, 0, c}));
      changed.k.set({0, later, 0, c}, -changed.k.at({0, later, 0, c}));
      changed.g.set({0, later, 0, c}, 1.0 - changed.g.at({0, later, 0, c}));
    }
    for (std::int64_t c = 0; c < changed.V; ++c) changed.v.set({0, later, 0, c}, 2.0);
    changed.beta.set({0, later, 0}, 3.0);
    const ReferenceOutputs after = simulate(changed);
    const auto rows = static_cast<std::size_t>((t + 1) * base.V);
    EXPECT_EQ(std::memcmp(before.o.data(), after.o.data(), rows * sizeof(double)), 0) << "token " << later;
    EXPECT_NE(before.o[rows + static_cast<std::size_t>((later - t - 1) * base.V)],
              after.o[rows + static_cast<std::size_t>((later - t - 1) * base.V)])
        << "token " << later << ": the change must reach its own output";
  }
}

// A padding row (index -1) writes zero output and zero chunk-start states, as the fp64 reference does,
// and leaves its pool slot alone. Both the kernel and the simulation once left the chunk states as
// they found them (the poison), which only the GPU comparison noticed.
TEST(ChunkedSim, PaddingRowWritesZeroChunkStates) {
  ProblemSpec spec = test::benchmark_spec({70, 5}, 1);
  spec.output_dtype = DType::f32;
  spec.state = StateSource::pool, spec.pool_slots = 3;
  spec.indices = {-1, 2};
  spec.chunk_states = true;
  props::CaseSpec poisoned;  // every output element starts as NaN: nothing written stays NaN
  poisoned.problem = spec, poisoned.data_seed = 5;
  Problem p = props::build_case(poisoned);
  simulate_chunked_prefill(p);
  const Tensor& states = *p.chunk_states;
  for (std::int64_t c = 0; c < p.chunks(0); ++c)  // sequence 0's chunks come first
    for (std::int64_t hv = 0; hv < p.HV; ++hv)
      for (std::int64_t a = 0; a < states.view.size(2); ++a)
        for (std::int64_t b = 0; b < states.view.size(3); ++b)
          ASSERT_EQ(states.at({c, hv, a, b}), 0.0) << "chunk " << c << " head " << hv << " [" << a << "," << b << "]";
  for (std::int64_t t = 0; t < 70; ++t)
    for (std::int64_t v = 0; v < p.V; ++v) ASSERT_EQ(p.o.at({0, t, 0, v}), 0.0) << "token " << t;
}

// The blocked inverse T = (I + Akk)^-1 as the kernel forms it (simulate_inverse: fp16 blocks, the levels on
// tensor cores) within the bound its roundings allow, checked on the residual R = (I + A) T - I computed in
// fp64 from the returned values (A = Akk as given in fp32; the products exact, the sums' error ~1e-16, far
// below the bound). With u = 2^-11 and eta = 2^-25 (fp16's unit roundoff and half its subnormal spacing:
// |fp16(y) - y| <= u |y| + eta), gamma_16 = 16 2^-24 / (1 - 16 2^-24) (an fp32 fma chain of 16 terms) and
// e = 2^-19 (a chain of at most three mma k-steps: each term truncated at the largest term's exponent to
// 25 fractional bits, 17 terms a step, then the step rounded toward zero to fp32; under 2^-20 of the sum
// of the products' magnitudes, tensor_core_model.hpp):
//   diagonal block, T_II = fp16(x) from fp32 forward substitution:
//     |R_II| <= gamma_16 |A_II| |x| + |I + A_II| (u |x| + eta), |x| <= (|T_II| + eta) / (1 - u);
//   block (I, J) below it, P = fp16(mma(fp16(A_IM), T_MJ)) and T_IJ = fp16(-mma(T_II, P)), so that
//   R_IJ = -sum_M (fp16(A_IM) - A_IM) T_MJ - (P's mma and rounding errors) - R_II P + (I + A_II)(T_IJ's):
//     |R_IJ| <= sum_M (u |A_IM| + eta) |T_MJ| + e sum_M |fp16(A_IM)| |T_MJ| + u |X| + eta + |R_II| |P|
//               + |I + A_II| (u (1 + u) |T_IJ| + eta + e |T_II| |P|),   |X| <= (|P| + eta) / (1 - u),
// with the computed P and R_II (the diagonal blocks' own residual, computed). A wrong index, sign or order
// of blocks leaves residuals of the size of T's entries, orders of magnitude outside. Random strictly lower
// triangles with entries of both signs, at the scale of Akk for unit keys and beta in (0, 2).
TEST(ChunkedSim, BlockedInverseWithinItsRoundingBound) {
  constexpr int B = kSubBlock, N = kChunk;
  constexpr double u = 0x1p-11, eta = 0x1p-25, e = 0x1p-19, gamma16 = 16 * 0x1p-24 / (1 - 16 * 0x1p-24);
  std::mt19937_64 rng(17);
  std::normal_distribution<float> normal(0.0f, 0.2f);
  double worst = 0;  // the largest residual as a fraction of its bound
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<float> akk(N * stage_a::kAld, 0.0f), t(N * N), partials(N * N);
    for (int i = 0; i < N; ++i)
      for (int j = 0; j < i; ++j) akk[stage_a::akk_at(i, j)] = normal(rng);
    simulate_inverse(akk.data(), t.data(), partials.data());
    const auto A = [&](int i, int j) { return i == j ? 1.0 : j < i ? double(akk[stage_a::akk_at(i, j)]) : 0.0; };
    const auto A_h = [&](int i, int j) { return double(access::f16_to_f32(access::f32_to_f16(float(A(i, j))))); };
    const auto T = [&](int i, int j) { return double(t[i * N + j]); };
    const auto P = [&](int i, int j) { return double(partials[i * N + j]); };
    // R_II, every diagonal block's residual (rows and columns of one block).
    std::vector<double> R(N * N, 0.0);
    for (int i = 0; i < N; ++i)
      for (int j = i / B * B; j <= i; ++j) {
        double r = i == j ? -1.0 : 0.0;
        for (int m = j; m <= i; ++m) r += A(i, m) * T(m, j);
        R[i * N + j] = r;
      }
    for (int i = 0; i < N; ++i)
      for (int j = 0; j <= i; ++j) {
        const int I = i / B, J = j / B, first = B * I;
        double residual = i == j ? -1.0 : 0.0;
        for (int m = j; m <= i; ++m) residual += A(i, m) * T(m, j);
        double bound = 0;
        if (I == J) {
          for (int m = j; m <= i; ++m) {
            const double x = (std::abs(T(m, j)) + eta) / (1 - u);
            bound += (m < i ? gamma16 * std::abs(A(i, m)) * x : 0.0) + std::abs(A(i, m)) * (u * x + eta);
          }
        } else {
          for (int m = B * J; m < first; ++m)
            bound += (u * std::abs(A(i, m)) + eta + e * std::abs(A_h(i, m))) * std::abs(T(m, j));
          bound += u * (std::abs(P(i, j)) + eta) / (1 - u) + eta;
          for (int m = first; m <= i; ++m) bound += std::abs(R[i * N + m]) * std::abs(P(m, j));
          for (int m = first; m <= i; ++m) {  // |I + A_II| (u (1 + u) |T_IJ| + eta + e |T_II| |P|), row i
            double tp = 0;
            for (int n = first; n <= m; ++n) tp += std::abs(T(m, n)) * std::abs(P(n, j));
            bound += std::abs(A(i, m)) * (u * (1 + u) * std::abs(T(m, j)) + eta + e * tp);
          }
        }
        ASSERT_LE(std::abs(residual), bound) << "trial " << trial << ", T[" << i << "][" << j << "]";
        worst = std::max(worst, std::abs(residual) / bound);
      }
  }
  std::cout << "largest residual / its bound: " << worst << "\n";
}

// The chunk table: each sequence's chunks in order (a sequence of 0 tokens has none), and stage B's
// order, the sequences by descending number of chunks with ties in order.
TEST(ChunkTable, ChunksInOrderAndLongestFirst) {
  const Problem p = make_problem(test::benchmark_spec({100, 2000, 37, 0, 4000, 1, 1155, 64}, 1));
  const ChunkTable t = make_chunk_table(p);
  EXPECT_EQ(t.sequence_chunks, (std::vector<std::int64_t>{0, 2, 34, 35, 35, 98, 99, 118, 119}));
  EXPECT_EQ(t.longest_first, (std::vector<std::int64_t>{4, 1, 6, 0, 2, 5, 7, 3}));
  EXPECT_EQ(t.longest_chunks(), 63);
  ASSERT_EQ(t.chunks.size(), 119u);
  EXPECT_EQ(t.chunks[1].first, 64);
  EXPECT_EQ(t.chunks[1].length, 36);  // 100 = 64 + 36
  EXPECT_EQ(t.chunks[97].length, 4000 - 62 * 64);
  EXPECT_EQ(t.chunks[97].sequence, 4);
}

// Stage B's form when the launcher chooses (estimated_scan_form), on an H200's 132 SMs: for the
// benchmark's packings (32 heads, V = 128) the fastest form of its per-form table (docs/cuda-prefill.md,
// Results); the paired form where V = 64 leaves no room for the wide and transposed forms; double-buffered
// for a grid whose longest chain decides.
TEST(ScanFormEstimate, PicksTheFastestFormOfTheBenchmark) {
  const auto form_of = [](const std::vector<std::int64_t>& lengths, std::int64_t HV, std::int64_t V) {
    ChunkedParams params;
    params.call.HV = HV, params.call.V = V;
    for (const std::int64_t length : lengths) {
      const std::int64_t chunks = (length + kChunk - 1) / kChunk;
      params.num_chunks += chunks, params.longest_chunks = std::max(params.longest_chunks, chunks);
    }
    return estimated_scan_form(params, 132);
  };
  EXPECT_EQ(form_of({8192}, 32, 128), ScanForm::double_buffered);
  EXPECT_EQ(form_of(std::vector<std::int64_t>(8, 2048), 32, 128), ScanForm::transposed);
  EXPECT_EQ(form_of(std::vector<std::int64_t>(32, 512), 32, 128), ScanForm::transposed);
  EXPECT_EQ(form_of({100, 2000, 37, 900, 4000, 1, 1155}, 32, 128), ScanForm::paired);
  EXPECT_EQ(form_of(std::vector<std::int64_t>(8, 2048), 32, 64), ScanForm::paired);
  EXPECT_EQ(form_of({100}, 2, 128), ScanForm::double_buffered);
}

}  // namespace
}  // namespace kda::kernels
