// Cases drawn around an imported call (GenLimits::around, check --around): the call's choices are kept,
// its sizes varied within bounds, and a failure shrinks back to the call's own geometry.
#include <gtest/gtest.h>

#include <numeric>
#include <optional>
#include <sstream>

#include "../support/rapidcheck_run.hpp"
#include "broken_kernels.hpp"
#include "kda/properties/runner.hpp"

namespace kda::props {
namespace {

using i64 = std::int64_t;

// A varlen prefill recorded with q, k, v, g and beta at a padded token stride, bf16 activations, an
// initial state and l2norm in the kernel.
CaseSpec recorded_call() {
  CaseSpec c;
  ProblemSpec& s = c.problem;
  s.lengths = {7, 13};
  s.H = 2, s.HV = 2, s.K = 32, s.V = 16;
  s.input_dtype = DType::bf16, s.output_dtype = DType::bf16;
  s.state = StateSource::dense;
  s.options.l2norm_qk = true;
  s.options.scale = 0.3;
  c.layout = InputLayout::padded_token_stride, c.pad = 5;
  return c;
}

std::unique_ptr<Kernel> reference() {
  auto k = std::make_unique<kda::test::BrokenKernel>();
  k->name_ = "ref-fp32 (test)";
  return k;
}

TEST(Around, SeedSpecReadsTheCall) {
  std::string note;
  const CaseSpec seed = seed_spec(build_case(recorded_call()), &note);
  EXPECT_EQ(seed.problem.lengths, (std::vector<i64>{7, 13}));
  EXPECT_EQ(seed.problem.H, 2);
  EXPECT_EQ(seed.problem.K, 32);
  EXPECT_EQ(seed.problem.input_dtype, DType::bf16);
  EXPECT_EQ(seed.problem.state, StateSource::dense);
  EXPECT_TRUE(seed.problem.options.l2norm_qk);
  EXPECT_EQ(seed.layout, InputLayout::padded_token_stride);
  EXPECT_EQ(seed.pad, 5);
  EXPECT_NE(note.find("padded_token_stride"), std::string::npos) << note;
}

TEST(Around, KeepsTheCallsChoicesAndVariesItsSizes) {
  const auto kernel = reference();
  GenLimits limits;
  limits.around = std::make_shared<const CaseSpec>(seed_spec(build_case(recorded_call())));
  const auto result = test::run_property(7, 100, [&] {
    const CaseSpec c = *gen_valid_case(*kernel, limits);
    const ProblemSpec& s = c.problem;
    RC_ASSERT(s.mode == Mode::prefill);
    RC_ASSERT(s.varlen);
    RC_ASSERT(s.input_dtype == DType::bf16 && s.output_dtype == DType::bf16);
    RC_ASSERT(s.K == 32 && s.V == 16 && s.H == s.HV && s.H >= 1 && s.H <= 2);
    RC_ASSERT(s.state == StateSource::dense);
    RC_ASSERT(s.options.l2norm_qk && s.options.scale == 0.3);
    RC_ASSERT(c.layout == InputLayout::padded_token_stride && c.pad == 5);
    RC_ASSERT(s.lengths.size() >= 1 && s.lengths.size() <= 4);
    for (std::size_t n = 0; n < s.lengths.size(); ++n) RC_ASSERT(s.lengths[n] <= (n % 2 ? 29 : 23));
    const bool varied = s.lengths != std::vector<i64>{7, 13};
    RC_CLASSIFY(varied, "varied");
  });
  ASSERT_TRUE(result.is<rc::detail::SuccessResult>()) << test::message_of(result);
  EXPECT_GT(test::tag_counts(result)["varied"], 50);
}

TEST(Around, AFailureShrinksToTheCallsGeometry) {
  // A kernel that is wrong on every call: its shrunk case is the call's own geometry.
  auto kernel = std::make_unique<kda::test::BrokenKernel>();
  kernel->name_ = "broken: o doubled";
  kernel->after = [](ReferenceOutputs& out, const Problem&) {
    for (auto& x : out.o) x *= 2;
  };
  const auto model = reference();
  CheckContext context{*kernel, *model};
  context.limits.around = std::make_shared<const CaseSpec>(seed_spec(build_case(recorded_call())));
  RunOptions options;
  options.properties = {"matches-reference"};
  options.cases = 20;
  std::optional<Problem> shrunk;
  options.on_failing_case = [&](const std::string&, const Problem& p) { shrunk = deep_copy(p); };
  const auto reports = run_properties(context, options);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].failed, 1);
  ASSERT_TRUE(shrunk);
  EXPECT_EQ(shrunk->N, 2);
  EXPECT_EQ(shrunk->length(0), 7);
  EXPECT_EQ(shrunk->length(1), 13);
  EXPECT_EQ(shrunk->H, 2);
  EXPECT_EQ(shrunk->q.view.strides[1], 2 * 32 + 5);  // the call's padded token stride
  std::ostringstream printed;
  print_reports(printed, reports, "KERNEL", Scale::small, "call.json");
  EXPECT_NE(printed.str().find("--around call.json --properties matches-reference --replay"), std::string::npos)
      << printed.str();
}

TEST(Around, ACallTheKernelCannotTakeIsNamed) {
  auto kernel = reference();
  static_cast<kda::test::BrokenKernel&>(*kernel).capabilities_.input_dtypes = {DType::f32};
  GenLimits limits;
  limits.around = std::make_shared<const CaseSpec>(seed_spec(build_case(recorded_call())));
  try {
    (void)gen_valid_case(*kernel, limits);
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("imported call's input dtype bf16"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kda::props
