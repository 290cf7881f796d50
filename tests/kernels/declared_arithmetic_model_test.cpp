// The precision models of declared arithmetic (chunked_precision_model.hpp): each runs every kind of call
// a third-party kernel may be given (chunk 32, a pool with a padding row, chunk and token states, verify
// calls of both forms) writing only what such a call may write, and lands as far from the fp64 oracle as
// its rounding says: further than the fp32 recurrence, bf16 operands further than fp16 or tf32 ones, all
// within a few units of their operands' roundoff.
#include <gtest/gtest.h>

#include "../support/verify_cases.hpp"
#include "kda/kernels/chunked_precision_model.hpp"
#include "kda/metrics.hpp"
#include "kda/properties/comparison.hpp"
#include "kda/problem_factory.hpp"
#include "kda/reference.hpp"

namespace kda::test {
namespace {

// A varlen prefill at chunk 32 over a pool: a zero-length sequence, a padding row (-1), unindexed slots,
// chunk and token states.
Problem pooled_prefill() {
  ProblemSpec s;
  s.lengths = {3, 70, 0, 40};
  s.H = 1, s.HV = 2, s.K = 32, s.V = 16;
  s.options.chunk_size = 32;
  s.options.l2norm_qk = true;
  s.state = StateSource::pool;
  s.pool_slots = 6;
  s.indices = {4, -1, 0, 2};
  s.chunk_states = true, s.token_states = true;
  Problem p = make_problem(s);
  fill_random(p, 11);
  return p;
}

std::vector<Problem> calls() {
  std::vector<Problem> out{pooled_prefill()};
  for (const auto& c : verify_cases()) out.push_back(c.build());
  return out;
}

// The largest rel-RMS distance from the fp64 oracle over the call's fp32 and fp64 outputs (a bf16 or fp16
// one is as far as its own rounding, whatever the arithmetic), after checking the model ran and wrote
// nothing it may not.
double error(Kernel& model, const Problem& p) {
  Problem ran = deep_copy(p);
  const props::Snapshot before(ran);
  const RunOutcome outcome = model.run(ran);
  EXPECT_EQ(outcome.status, RunOutcome::Status::ok) << model.name() << ": " << outcome.message;
  EXPECT_TRUE(before.changes_outside_writable(ran).empty()) << model.name();
  const ReferenceOutputs oracle = run_reference<double>(p, Algorithm::recurrent);
  const props::Verdict v = props::compare(ran, props::read_outputs(ran), oracle, oracle);
  double worst = 0;
  for (const auto& t : v.tensors)
    if (t.dtype == DType::f32 || t.dtype == DType::f64) worst = std::max(worst, t.rel_rms);
  return worst;
}

TEST(DeclaredArithmeticModel, NamesSayWhichModelJudges) {
  EXPECT_EQ(kernels::declared_arithmetic_model_name(Arithmetic::fp32), "ref-fp32");
  EXPECT_EQ(kernels::make_declared_arithmetic_model(Arithmetic::fp32)->name(), "ref-fp32");
  EXPECT_EQ(kernels::make_declared_arithmetic_model(Arithmetic::bf16_operands)->name(), "model-chunked-bf16-operands");
  EXPECT_EQ(kernels::make_declared_arithmetic_model(Arithmetic::f16_operands)->name(), "model-chunked-f16-operands");
  EXPECT_EQ(kernels::make_declared_arithmetic_model(Arithmetic::tf32)->name(), "model-chunked-tf32");
}

TEST(DeclaredArithmeticModel, ErrorsFollowTheDeclaredRounding) {
  auto fp32 = kernels::make_declared_arithmetic_model(Arithmetic::fp32);
  auto tf32 = kernels::make_declared_arithmetic_model(Arithmetic::tf32);
  auto f16 = kernels::make_declared_arithmetic_model(Arithmetic::f16_operands);
  auto bf16 = kernels::make_declared_arithmetic_model(Arithmetic::bf16_operands);
  for (const Problem& p : calls()) {
    SCOPED_TRACE(p.describe());
    const double e32 = error(*fp32, p), e_tf32 = error(*tf32, p), e16 = error(*f16, p), eb16 = error(*bf16, p);
    EXPECT_LT(e32, e_tf32);
    EXPECT_LT(e32, e16);
    EXPECT_LT(4 * e16, eb16);      // 3 bits fewer: about 8 times the error
    EXPECT_LT(4 * e_tf32, eb16);
    EXPECT_LT(eb16, 16 * 0x1p-8);  // a few units of bf16's roundoff on well-conditioned data
    EXPECT_LT(e16, 16 * 0x1p-11);
  }
}

TEST(DeclaredArithmeticModel, HoldsTheKernelsProfile) {
  Problem p = pooled_prefill();
  p.options.chunk_size = 48;  // strict takes 32 and 64 only
  auto model = kernels::make_declared_arithmetic_model(Arithmetic::bf16_operands);
  const RunOutcome outcome = model->run(p);
  ASSERT_EQ(outcome.status, RunOutcome::Status::rejected);
  EXPECT_EQ(outcome.violations.front().rule, Rule::chunk_size);
}

}  // namespace
}  // namespace kda::test
