// write_outputs stores the fp64 outputs into the problem's own tensors, each element rounded to the
// tensor's dtype (through fp32 for bf16/fp16, as a kernel computing in fp32 would), the pool in place
// at live indices only; it never touches a guard band and writes nothing else (inputs stay as they were).
#include <gtest/gtest.h>

#include "reference_test_support.hpp"

namespace kda {
namespace {

std::vector<std::byte> bytes_of(const Tensor& t) { return {t.buffer->data(), t.buffer->data() + t.buffer->size()}; }

// Every element of t equals the dense array's value rounded to t's dtype.
void expect_rounded(const Tensor& t, const std::vector<double>& values) {
  SCOPED_TRACE(t.name() + " " + t.view.describe());
  std::size_t i = 0, mismatches = 0;
  for_each_index(t.shape(), [&](std::span<const std::int64_t> idx) {
    mismatches += t.at(idx) != round_to(t.dtype(), values.at(i++));
  });
  EXPECT_EQ(i, values.size());
  EXPECT_EQ(mismatches, 0u);
}

void expect_guards_intact(const Problem& p) {
  for (const Tensor* t : p.outputs())
    if (auto violation = t->buffer->check_guards()) ADD_FAILURE() << violation->describe();
}

TEST(ReferenceWriteOutputs, RoundsIntoEachOutputDtype) {
  for (auto [out_dtype, state_dtype] : {std::pair{DType::bf16, DType::bf16}, {DType::f32, DType::f32}, {DType::f16, DType::f64}}) {
    ProblemSpec spec;
    spec.lengths = {40, 0, 9};
    spec.H = 1, spec.HV = 2, spec.K = 8, spec.V = 6;
    spec.output_dtype = out_dtype, spec.state_dtype = state_dtype;
    spec.chunk_states = spec.token_states = true;
    spec.options.l2norm_qk = true;
    Problem p = make_problem(spec);
    fill_random(p, 71);
    std::vector<std::vector<std::byte>> inputs;
    for (const Tensor* t : p.inputs()) inputs.push_back(bytes_of(*t));

    const auto out = run_reference<double>(p, Algorithm::recurrent);
    write_outputs(out, p);
    expect_rounded(p.o, out.o);
    expect_rounded(*p.final_state, out.final_state);
    expect_rounded(*p.chunk_states, out.chunk_states);
    expect_rounded(*p.token_states, out.token_states);
    expect_guards_intact(p);
    const auto in = p.inputs();
    for (std::size_t i = 0; i < in.size(); ++i) EXPECT_EQ(bytes_of(*in[i]), inputs[i]) << in[i]->name();
  }
}

TEST(ReferenceWriteOutputs, PoolWrittenInPlaceAtLiveIndicesOnly) {
  ProblemSpec spec;
  spec.lengths = {5, 3, 0, 7};
  spec.H = 1, spec.HV = 2, spec.K = 8, spec.V = 6;
  spec.state = StateSource::pool;
  spec.state_dtype = DType::bf16;
  spec.pool_slots = 6;
  spec.pool_slot_stride = 2 * 8 * 6 + 8;
  spec.indices = {3, -1, 0, 5};
  Problem p = make_problem(spec);
  fill_random(p, 72);
  const Problem untouched = deep_copy(p);

  const auto out = run_reference<double>(p, Algorithm::chunked);
  write_outputs(out, p);
  for (std::int64_t n = 0; n < p.N; ++n) {
    const std::int64_t slot = spec.indices[static_cast<std::size_t>(n)];
    if (slot < 0) continue;
    const auto written = test::slot_values(p, slot), expected = test::states(out.final_state, p, n, 1);
    for (std::size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(written[i], round_to(DType::bf16, expected[i]));
  }
  for (std::int64_t slot : {1, 2, 4})  // no sequence's slot: unchanged
    EXPECT_EQ(test::slot_values(p, slot), test::slot_values(untouched, slot));
  expect_guards_intact(p);
}

}  // namespace
}  // namespace kda
