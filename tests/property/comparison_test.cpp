// The comparison layer: verdicts of the reference kernels against the fp64 oracle, planted errors
// found at the right coordinates, the snapshot's writable region and the attribution of stray bytes,
// and exact ULP distances.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <set>

#include "kda/properties/case_spec.hpp"
#include "kda/properties/comparison.hpp"
#include "kda/problem_factory.hpp"
#include "kda/reference_kernel.hpp"

namespace kda::props {
namespace {

bool contains(const std::string& text, std::string_view part) { return text.find(part) != std::string::npos; }

Problem random_problem(ProblemSpec spec, std::uint64_t seed) {
  spec.options.l2norm_qk = true;
  Problem p = make_problem(spec);
  fill_random(p, seed);
  return p;
}

// Runs a recurrent reference kernel on p in place.
void run_kernel(Problem& p, Precision precision) {
  const RunOutcome outcome = make_reference_kernel(precision, Algorithm::recurrent)->run(p);
  ASSERT_EQ(outcome.status, RunOutcome::Status::ok)
      << (outcome.violations.empty() ? outcome.message : outcome.violations.front().message);
}

// A varlen prefill with a zero-length sequence, a pool with a padded slot stride, a base offset,
// a -1 row and unindexed slots (1, 3 and 5, the last one pool[-1]), chunk and token states.
ProblemSpec pool_spec(StateLayout layout = StateLayout::vk) {
  ProblemSpec s;
  s.lengths = {3, 5, 0, 40};
  s.H = 1, s.HV = 2, s.K = 16, s.V = 16;
  s.options.chunk_size = 32;
  s.options.state_layout = layout;
  s.state = StateSource::pool;
  s.pool_slots = 6, s.pool_slot_stride = 2 * 16 * 16 + 16, s.pool_offset = 8;
  s.indices = {4, -1, 0, 2};
  s.chunk_states = true, s.token_states = true;
  return s;
}
constexpr std::int64_t kSlotElements = 2 * 16 * 16, kSlotStride = kSlotElements + 16, kPoolOffset = 8;

// A dense-state varlen prefill whose second sequence is empty, o in bf16.
ProblemSpec bf16_spec() {
  ProblemSpec s;
  s.lengths = {3, 0, 40};
  s.H = 1, s.HV = 2, s.K = 16, s.V = 16;
  s.output_dtype = DType::bf16;
  return s;
}

Verdict judge_fp64(const Problem& original, const Problem& ran) {
  const ReferenceOutputs oracle = run_reference<double>(original, Algorithm::recurrent);
  return compare(ran, read_outputs(ran), oracle, oracle);
}

// ---- verdicts ----

TEST(Compare, Fp64ReferencePassesAgainstItself) {
  ProblemSpec spec = pool_spec();
  spec.input_dtype = spec.output_dtype = DType::f64;  // states stay f32: the strict profile's pool dtypes
  const Problem p = random_problem(spec, 1);
  Problem ran = deep_copy(p);
  run_kernel(ran, Precision::fp64);
  const Verdict v = judge_fp64(p, ran);
  EXPECT_TRUE(v.passed()) << v.describe();
  ASSERT_EQ(v.tensors.size(), 4u) << v.describe();
  for (const auto& t : v.tensors) {
    EXPECT_EQ(t.max_ulp, 0.0) << t.describe();  // every value is the oracle's, rounded to its dtype
    EXPECT_EQ(t.mismatches, 0) << t.describe();
  }
  EXPECT_EQ(v.find("o")->rel_rms, 0.0);
  EXPECT_EQ(v.find("o")->worst_element, -1);
  EXPECT_TRUE(contains(v.find("o")->describe(), "no element differs")) << v.describe();
  EXPECT_GT(v.find("final_state")->rel_rms, 0.0);  // the f32 rounding of the states
  // Sequence 1 is a padding row: its states are not compared, its o rows are (zeros).
  const std::int64_t per_sequence = 2 * 16 * 16;
  EXPECT_EQ(v.find("o")->elements, 48 * 2 * 16);
  EXPECT_EQ(v.find("final_state")->elements, 3 * per_sequence);
  EXPECT_EQ(v.find("chunk_states")->elements, 3 * per_sequence);  // chunks: 1 + (1 padding) + 0 + 2
  EXPECT_EQ(v.find("token_states")->elements, 43 * per_sequence);
}

TEST(Compare, Fp32ReferencePassesWithTheFp32ModelAndFailsWithoutIt) {
  ProblemSpec spec = pool_spec();
  spec.output_dtype = DType::f64;  // no rounding floor to hide behind
  const Problem p = random_problem(spec, 2);
  Problem ran = deep_copy(p);
  run_kernel(ran, Precision::fp32);
  const ReferenceOutputs oracle = run_reference<double>(p, Algorithm::recurrent);
  const ReferenceOutputs model = run_reference<float>(p, Algorithm::recurrent);
  const Verdict with_model = compare(ran, read_outputs(ran), oracle, model);
  EXPECT_TRUE(with_model.passed()) << with_model.describe();
  EXPECT_GT(with_model.find("o")->rel_rms, 0.0);
  // Judged as if it had to be exact in fp64: the fp32 arithmetic is then an error.
  const Verdict exact = compare(ran, read_outputs(ran), oracle, oracle);
  EXPECT_FALSE(exact.find("o")->passed()) << exact.describe();
}

// The floor is the larger of the output dtype's unit roundoff and the compute precision's.
TEST(Compare, TheBoundIsFlooredByTheComputePrecision) {
  TolerancePolicy policy;
  EXPECT_EQ(policy.bound(1e-7, DType::f64), 2e-7 + 0x1p-53);  // no compute precision given: the dtype's
  policy.compute_roundoff = 0x1p-24;                          // a kernel computing in fp32
  EXPECT_EQ(policy.bound(1e-7, DType::f64), 2e-7 + 0x1p-24);
  EXPECT_EQ(policy.bound(1e-7, DType::f32), 2e-7 + 0x1p-24);
  EXPECT_EQ(policy.bound(1e-7, DType::bf16), 2e-7 + 0x1p-8);  // the output's rounding dominates
  EXPECT_EQ(policy.element_tolerance(0, 0, 2.0, 1.0, DType::f64), 0x1p-24 * 2.0);
  // An f64 output one fp32 rounding off an exactly right model: a failure without the floor, not with it.
  ProblemSpec spec = bf16_spec();
  spec.output_dtype = DType::f64;
  const Problem p = random_problem(spec, 3);
  const ReferenceOutputs oracle = run_reference<double>(p, Algorithm::recurrent);
  ReferenceOutputs kernel = oracle;
  for (double& x : kernel.o) x = static_cast<double>(static_cast<float>(x));
  EXPECT_FALSE(compare(p, kernel, oracle, oracle).find("o")->passed());
  EXPECT_TRUE(compare(p, kernel, oracle, oracle, policy).find("o")->passed());
}

TEST(Compare, PlantedErrorInBf16OutputIsFoundThroughCuSeqlens) {
  const Problem p = random_problem(bf16_spec(), 3);
  Problem ran = deep_copy(p);
  run_kernel(ran, Precision::fp32);
  const ReferenceOutputs oracle = run_reference<double>(p, Algorithm::recurrent);
  const ReferenceOutputs model = run_reference<float>(p, Algorithm::recurrent);
  const Verdict clean = compare(ran, read_outputs(ran), oracle, model);
  ASSERT_TRUE(clean.passed()) << clean.describe();
  // bf16 rounding shows in rel-RMS; in ULPs of bf16 the fp32 arithmetic is (nearly) invisible.
  EXPECT_GT(clean.find("o")->rel_rms, 0.0);
  EXPECT_LE(clean.find("o")->max_ulp, 1.0);

  // Sequence 2 starts at token 3 (sequence 1 is empty): its token 17 is row 20.
  ran.o.set({0, 20, 1, 5}, ran.o.at({0, 20, 1, 5}) + 8.0);
  const Verdict v = compare(ran, read_outputs(ran), oracle, model);
  const TensorVerdict& o = *v.find("o");
  EXPECT_FALSE(v.passed()) << v.describe();
  EXPECT_GT(o.rel_rms, o.bound);
  EXPECT_EQ(o.mismatches, 1) << o.describe();
  EXPECT_EQ(o.worst.sequence, 2);
  EXPECT_EQ(o.worst.token, 17);
  EXPECT_EQ(o.worst.head, 1);
  EXPECT_EQ(o.worst.column, 5);
  EXPECT_EQ(o.worst_element, (20 * 2 + 1) * 16 + 5);
  EXPECT_NEAR(o.worst_got - o.worst_want, 8.0, 0.1);
  EXPECT_TRUE(contains(o.describe(), "worst at sequence 2 token 17 head 1 channel 5 (got ")) << o.describe();
  EXPECT_TRUE(contains(v.describe(), "o (bf16): rel-RMS")) << v.describe();
}

TEST(Compare, NonFiniteOutputAlwaysFails) {
  const Problem p = random_problem(bf16_spec(), 4);
  Problem ran = deep_copy(p);
  run_kernel(ran, Precision::fp64);
  ran.o.set({0, 30, 0, 9}, std::numeric_limits<double>::quiet_NaN());  // sequence 2 token 27
  const Verdict v = judge_fp64(p, ran);
  const TensorVerdict& o = *v.find("o");
  EXPECT_TRUE(o.non_finite);
  EXPECT_FALSE(o.passed());
  EXPECT_TRUE(std::isinf(o.max_ulp));
  EXPECT_EQ(o.worst.sequence, 2);
  EXPECT_EQ(o.worst.token, 27);
  EXPECT_TRUE(contains(o.describe(), "NaN/Inf where the reference is finite")) << o.describe();
  // The verdict does not rest on rel-RMS: a non-finite tensor fails even when its rel-RMS is small.
  TensorVerdict small;
  small.rel_rms = 1e-9, small.bound = 1.0, small.non_finite = true;
  EXPECT_FALSE(small.passed());
}

TEST(Compare, PaddingRowsOutputMustBeZero) {
  const Problem p = random_problem(pool_spec(), 5);
  Problem ran = deep_copy(p);
  run_kernel(ran, Precision::fp64);
  ran.o.set({0, 3 + 2, 0, 0}, 0.25);  // sequence 1 (index -1) token 2
  const Verdict v = judge_fp64(p, ran);
  EXPECT_FALSE(v.find("o")->passed()) << v.describe();
  EXPECT_EQ(v.find("o")->worst.sequence, 1);
  EXPECT_EQ(v.find("o")->worst.token, 2);
  EXPECT_TRUE(v.find("final_state")->passed());
}

TEST(Compare, PlantedErrorInPoolSlotIsFoundInKVLayout) {
  const Problem p = random_problem(pool_spec(StateLayout::kv), 6);
  Problem ran = deep_copy(p);
  run_kernel(ran, Precision::fp64);
  ran.state_pool->set({0, 1, 3, 7}, ran.state_pool->at({0, 1, 3, 7}) + 1.0);  // slot 0 = sequence 2's
  const Verdict v = judge_fp64(p, ran);
  const TensorVerdict& s = *v.find("final_state");
  EXPECT_FALSE(s.passed()) << v.describe();
  EXPECT_TRUE(v.find("o")->passed());
  EXPECT_EQ(s.worst.sequence, 2);
  EXPECT_EQ(s.worst.slot, 0);
  EXPECT_EQ(s.worst.head, 1);
  EXPECT_EQ(s.worst.row, 3);
  EXPECT_EQ(s.worst.column, 7);
  EXPECT_EQ(s.worst.layout, StateLayout::kv);
  EXPECT_TRUE(contains(s.describe(), "sequence 2 (pool slot 0) head 1 row 3 column 7 of [K,V] (k 3, v 7)"))
      << s.describe();
}

TEST(Compare, TransposedFinalStateFails) {
  ProblemSpec spec = pool_spec();
  spec.state = StateSource::dense, spec.indices = {}, spec.chunk_states = spec.token_states = false;
  const Problem p = random_problem(spec, 7);
  Problem ran = deep_copy(p);
  run_kernel(ran, Precision::fp64);
  ReferenceOutputs got = read_outputs(ran);
  for (std::int64_t n = 0; n < p.N; ++n)
    for (std::int64_t h = 0; h < p.HV; ++h)
      for (std::int64_t a = 0; a < 16; ++a)
        for (std::int64_t b = 0; b < 16; ++b)
          got.final_state[static_cast<std::size_t>(((n * 2 + h) * 16 + a) * 16 + b)] = ran.final_state->at({n, h, b, a});
  const ReferenceOutputs oracle = run_reference<double>(p, Algorithm::recurrent);
  EXPECT_FALSE(compare(ran, got, oracle, oracle).find("final_state")->passed());
}

TEST(Compare, LocatesChunkAndTokenStatesAndBatchRows) {
  const Problem p = make_problem(pool_spec());
  const std::int64_t per = 2 * 16 * 16;
  // chunk_states rows: sequence 0 chunk 0, sequence 1 chunk 0, sequence 3 chunks 0 and 1.
  const Coordinates chunk = locate(p, "chunk_states", 3 * per + 16 + 2);
  EXPECT_EQ(chunk.chunk, 3);
  EXPECT_EQ(chunk.sequence, 3);
  EXPECT_EQ(chunk.token, 32);
  EXPECT_EQ(chunk.head, 0);
  EXPECT_EQ(chunk.row, 1);
  EXPECT_EQ(chunk.column, 2);
  EXPECT_TRUE(contains(chunk.describe(), "chunk 3 (sequence 3, from token 32) head 0 row 1 column 2 of [V,K] (v 1, k 2)"))
      << chunk.describe();
  const Coordinates token = locate(p, "token_states", 10 * per + per / 2);
  EXPECT_EQ(token.sequence, 3);
  EXPECT_EQ(token.token, 2);
  EXPECT_EQ(token.head, 1);

  // Token 3 ends sequence 0 and starts both the empty sequence 1 and sequence 2: it is sequence 2's first.
  const Coordinates boundary = locate(make_problem(bf16_spec()), "o", (3 * 2 + 0) * 16);
  EXPECT_EQ(boundary.sequence, 2);
  EXPECT_EQ(boundary.token, 0);

  ProblemSpec batch = bf16_spec();
  batch.lengths = {4, 4, 4}, batch.varlen = false;
  const Coordinates row = locate(make_problem(batch), "o", ((2 * 4 + 3) * 2 + 1) * 16 + 9);
  EXPECT_EQ(row.sequence, 2);
  EXPECT_EQ(row.token, 3);
  EXPECT_EQ(row.head, 1);
  EXPECT_EQ(row.column, 9);
}

TEST(Compare, ArraysOfTheWrongSizeAreRefused) {
  const Problem p = random_problem(bf16_spec(), 8);
  const ReferenceOutputs oracle = run_reference<double>(p, Algorithm::recurrent);
  ReferenceOutputs short_o = oracle;
  short_o.o.pop_back();
  EXPECT_THROW(compare(p, short_o, oracle, oracle), std::invalid_argument);
}

// ---- snapshot ----

// A clean fp64 run of pool_spec() and the snapshot taken just before it.
struct CleanRun {
  Problem problem = random_problem(pool_spec(), 11);
  Snapshot before{problem};
  CleanRun() { run_kernel(problem, Precision::fp64); }
};

// The single change reported, which must name the buffer, the byte and the owner.
void expect_one_change(const std::vector<ByteChange>& changes, std::string_view buffer, std::int64_t byte,
                       std::string_view where) {
  ASSERT_EQ(changes.size(), 1u) << (changes.empty() ? "no change" : changes.front().describe());
  const ByteChange& c = changes.front();
  EXPECT_EQ(c.buffer, buffer);
  EXPECT_EQ(c.first_byte, byte);
  EXPECT_EQ(c.last_byte, byte);
  EXPECT_EQ(c.bytes, 1);
  EXPECT_TRUE(contains(c.where, where)) << c.describe();
  EXPECT_TRUE(contains(c.describe(), std::string(buffer) + ": 1 byte changed in ")) << c.describe();
}

void flip(std::byte* at) { *at ^= std::byte{0x5a}; }

constexpr std::int64_t kF32 = 4;
std::int64_t slot_byte(std::int64_t slot) { return (kPoolOffset + slot * kSlotStride) * kF32; }

TEST(Snapshot, CleanReferenceRunChangesOnlyTheWritableRegion) {
  CleanRun run;
  EXPECT_TRUE(run.before.changed_outside_writable(run.problem).empty())
      << run.before.changes_outside_writable(run.problem).front();
  // It did write: o, the active slots, chunk and token states.
  const auto written = run.before.changed_anywhere(run.problem);
  std::set<std::string> buffers;
  for (const auto& c : written) buffers.insert(c.buffer);
  EXPECT_EQ(buffers, (std::set<std::string>{"o", "state_pool", "chunk_states", "token_states"}));
}

TEST(Snapshot, WriteIntoThePaddingBetweenSlotsIsReported) {
  CleanRun run;
  const std::int64_t byte = slot_byte(2) + kSlotElements * kF32 + 5;
  flip(run.problem.state_pool->buffer->data() + byte);
  expect_one_change(run.before.changed_outside_writable(run.problem), "state_pool", byte,
                    "the padding between pool slots after slot 2");
}

TEST(Snapshot, WriteIntoAnUnindexedSlotIsReported) {
  CleanRun run;
  const std::int64_t byte = slot_byte(3) + 100;
  flip(run.problem.state_pool->buffer->data() + byte);
  expect_one_change(run.before.changed_outside_writable(run.problem), "state_pool", byte,
                    "slot 3, which no active index names");
}

TEST(Snapshot, WriteIntoAPaddingRowsSlotIsReported) {
  // pool[-1] in Python is the last slot; in C index math a -1 index lands one slot stride before slot 0.
  CleanRun run;
  const std::int64_t last = slot_byte(5) + 7;
  flip(run.problem.state_pool->buffer->data() + last);
  expect_one_change(run.before.changed_outside_writable(run.problem), "state_pool", last, "slot 5");
  EXPECT_TRUE(contains(run.before.changes_outside_writable(run.problem).front(), "pool[-1]"));

  CleanRun c_style;
  flip(c_style.problem.state_pool->buffer->data() + slot_byte(0) - 3);
  expect_one_change(c_style.before.changed_outside_writable(c_style.problem), "state_pool", slot_byte(0) - 3,
                    "slot -1");
}

TEST(Snapshot, WriteIntoAnInputIsReported) {
  CleanRun run;
  flip(run.problem.k.buffer->data() + 33);
  expect_one_change(run.before.changed_outside_writable(run.problem), "k", 33, "elements of input 'k'");
  CleanRun indices;
  flip(indices.problem.state_indices->buffer->data() + 4);
  expect_one_change(indices.before.changed_outside_writable(indices.problem), "state_indices", 4,
                    "elements of input 'state_indices'");
}

TEST(Snapshot, WriteIntoAGuardBandIsReportedWithANegativeOffset) {
  CleanRun run;
  flip(run.problem.o.buffer->band_before() + GuardedBuffer::kGuardBytes - 2);
  expect_one_change(run.before.changed_outside_writable(run.problem), "o", -2, "the guard band before the payload");
  CleanRun after;
  const auto size = static_cast<std::int64_t>(after.problem.v.buffer->size());
  flip(after.problem.v.buffer->band_after() + 9);
  expect_one_change(after.before.changed_outside_writable(after.problem), "v", size + 9,
                    "the guard band after the payload");
}

TEST(Snapshot, WriteIntoTheGapOfAStridedOutputIsReported) {
  Problem p = random_problem(bf16_spec(), 12);
  const std::int64_t row = 2 * 16 + 8;  // 8 elements of padding after every token's heads
  p.o = Tensor::with_view("o", View{DType::bf16, {1, p.T, 2, 16}, {p.T * row, row, 16, 1}, 0});
  const Snapshot before(p);
  run_kernel(p, Precision::fp64);
  ASSERT_TRUE(before.changed_outside_writable(p).empty()) << before.changes_outside_writable(p).front();
  const std::int64_t byte = (7 * row + 2 * 16 + 3) * 2;  // token 7's padding, element 3
  flip(p.o.buffer->data() + byte);
  expect_one_change(before.changed_outside_writable(p), "o", byte, "a gap between elements of 'o'");
}

TEST(Snapshot, SeveralChangesAreGroupedPerOwnerInByteOrder) {
  CleanRun run;
  std::byte* pool = run.problem.state_pool->buffer->data();
  for (std::int64_t i = 0; i < 64; ++i) pool[slot_byte(3) + i] = std::byte{0xee};  // 64 bytes of slot 3
  flip(pool + slot_byte(1) + 2);
  const auto changes = run.before.changed_outside_writable(run.problem);
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_TRUE(contains(changes[0].where, "slot 1,")) << changes[0].describe();
  EXPECT_EQ(changes[1].bytes, 64);
  EXPECT_EQ(changes[1].first_byte, slot_byte(3));
  EXPECT_EQ(changes[1].last_byte, slot_byte(3) + 63);
  EXPECT_TRUE(contains(changes[1].describe(), "state_pool: 64 bytes changed in slot 3, which no active index names"))
      << changes[1].describe();
}

TEST(Snapshot, ChangesAnywhereCatchesWritesInsideTheWritableRegion) {
  CleanRun run;
  const Snapshot after_run(run.problem);
  EXPECT_TRUE(after_run.changed_anywhere(run.problem).empty());
  flip(run.problem.o.buffer->data() + 10);
  EXPECT_TRUE(after_run.changed_outside_writable(run.problem).empty());
  expect_one_change(after_run.changed_anywhere(run.problem), "o", 10, "elements of 'o'");
}

// The snapshot holds a block that repeats one pattern (poison) as the pattern alone: a byte changed
// inside a long poisoned gap, and a stretch rewritten with another repeated value, are still found.
TEST(Snapshot, ChangesInsideLongPoisonRunsAreFound) {
  CaseSpec spec;
  spec.problem.lengths = {3, 2};
  spec.problem.K = spec.problem.V = 16;
  spec.problem.state = StateSource::pool;
  spec.problem.indices = {1, 3};
  spec.problem.pool_slots = 4;
  spec.problem.pool_slot_stride = 16 * 16 + 20000;  // 80 KB of poison after each slot
  Problem p = build_case(spec);
  const Snapshot before(p);
  std::byte* pool = p.state_pool->buffer->data();
  flip(pool + 40000);
  expect_one_change(before.changed_outside_writable(p), "state_pool", 40000,
                    "the padding between pool slots after slot 0");
  flip(pool + 40000);
  EXPECT_TRUE(before.changed_anywhere(p).empty());
  std::memset(pool + 20000, 0x11, 50000);  // no byte of NaN's pattern is 0x11
  const auto changes = before.changed_outside_writable(p);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes.front().first_byte, 20000);
  EXPECT_EQ(changes.front().last_byte, 69999);
  EXPECT_EQ(changes.front().bytes, 50000);
}

TEST(Snapshot, RejectedCallWritesNothing) {
  Problem p = random_problem(pool_spec(), 13);
  p.state_indices->set_integer(2, 4);  // repeats sequence 0's slot: the contract rejects the call
  const Snapshot before(p);
  const RunOutcome outcome = make_reference_kernel(Precision::fp64, Algorithm::recurrent)->run(p);
  EXPECT_EQ(outcome.status, RunOutcome::Status::rejected);
  EXPECT_TRUE(before.changes_anywhere(p).empty());
}

TEST(Snapshot, BrokenProblemsAreSnapshottedWithoutTrustingThem) {
  // Rejected calls are snapshotted too: short cu_seqlens and indices, a 2-D pool, a broadcast o
  // with 2^40 tokens. Nothing may be read out of bounds or walked element by element.
  Problem p = random_problem(pool_spec(), 15);
  p.cu_seqlens = Tensor::zeros("cu_seqlens", DType::i32, {2});
  p.state_indices = Tensor::zeros("state_indices", DType::i32, {2});
  p.state_pool->view = View{DType::f32, {6, kSlotElements}, {kSlotStride, 1}, kPoolOffset};
  p.o.view.shape[1] = std::int64_t{1} << 40, p.o.view.strides[1] = 0;
  const Snapshot before(p);
  EXPECT_EQ(make_reference_kernel(Precision::fp64, Algorithm::recurrent)->run(p).status, RunOutcome::Status::rejected);
  EXPECT_TRUE(before.changed_anywhere(p).empty());
  flip(p.o.buffer->data() + 6);
  expect_one_change(before.changed_outside_writable(p), "o", 6, "the extent of 'o' (more elements than its buffer has bytes)");
  flip(p.state_pool->buffer->data() + slot_byte(3));
  const auto changes = before.changed_anywhere(p);
  ASSERT_EQ(changes.size(), 2u);  // buffers in tensor order: the pool before o
  EXPECT_TRUE(contains(changes[0].where, "slot 3, which no active index names")) << changes[0].describe();
}

TEST(Snapshot, MatchesDeepCopiesByTensorOrder) {
  const Problem p = random_problem(pool_spec(), 14);
  const Snapshot before(p);
  Problem copy = deep_copy(p);
  EXPECT_TRUE(before.changed_anywhere(copy).empty());
  flip(copy.q.buffer->data());
  expect_one_change(before.changed_anywhere(copy), "q", 0, "elements of input 'q'");
  EXPECT_THROW(before.changed_anywhere(make_problem(bf16_spec())), std::invalid_argument);
}

// ---- ULPs and the tolerance policy ----

TEST(Ulp, ExactDistances) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(ulp_distance(DType::bf16, 1.0, 1.0 + 0x1p-7), 1);
  EXPECT_EQ(ulp_distance(DType::bf16, 1.0, 2.0), 128);
  EXPECT_EQ(ulp_distance(DType::bf16, 0.0, 0x1p-133), 1);      // the smallest subnormal
  EXPECT_EQ(ulp_distance(DType::bf16, 1.0, 1.0 + 0x1p-9), 0);  // want rounds to got
  EXPECT_EQ(ulp_distance(DType::f16, 1.0, 1.0 + 0x1p-10), 1);
  EXPECT_EQ(ulp_distance(DType::f16, 1.0, 2.0), 1024);
  EXPECT_EQ(ulp_distance(DType::f16, 65504.0, inf), 1);
  EXPECT_EQ(ulp_distance(DType::f16, -1.0, 1.0), 2 * 0x3c00);
  EXPECT_EQ(ulp_distance(DType::f32, 1.0, 1.0 + 0x1p-23), 1);
  EXPECT_EQ(ulp_distance(DType::f32, -0x1p-149, 0x1p-149), 2);  // across zero
  EXPECT_EQ(ulp_distance(DType::f32, -0.0, 0.0), 0);
  EXPECT_EQ(ulp_distance(DType::f32, 1.0, 1.0 + 1e-12), 0);
  EXPECT_EQ(ulp_distance(DType::f64, 1.0, std::nextafter(1.0, 2.0)), 1);
  EXPECT_EQ(ulp_distance(DType::f64, 1.0, 2.0), 0x1p52);
  EXPECT_EQ(ulp_distance(DType::f64, -std::numeric_limits<double>::max(), std::numeric_limits<double>::max()),
            2.0 * static_cast<double>(0x7fefffffffffffffULL));
  EXPECT_TRUE(std::isinf(ulp_distance(DType::f32, nan, 1.0)));
  EXPECT_TRUE(std::isinf(ulp_distance(DType::bf16, 1.0, nan)));
  EXPECT_THROW(ulp_distance(DType::i32, 1.0, 2.0), std::invalid_argument);
}

TEST(Tolerance, BoundAndElementTolerance) {
  EXPECT_EQ(unit_roundoff(DType::bf16), 0x1p-8);
  EXPECT_EQ(unit_roundoff(DType::f16), 0x1p-11);
  EXPECT_EQ(unit_roundoff(DType::f32), 0x1p-24);
  EXPECT_EQ(unit_roundoff(DType::f64), 0x1p-53);
  EXPECT_THROW(unit_roundoff(DType::i64), std::invalid_argument);
  const TolerancePolicy policy{3.0};
  EXPECT_DOUBLE_EQ(policy.bound(1e-3, DType::bf16), 3e-3 + 0x1p-8);
  // alpha * max(|model diff|, its RMS) + u * max(|oracle|, its RMS)
  EXPECT_DOUBLE_EQ(policy.element_tolerance(-0.5, 0.1, 2.0, 4.0, DType::bf16), 1.5 + 4.0 * 0x1p-8);
  EXPECT_DOUBLE_EQ(policy.element_tolerance(0.0, 0.1, -8.0, 4.0, DType::bf16), 0.3 + 8.0 * 0x1p-8);
}

}  // namespace
}  // namespace kda::props
