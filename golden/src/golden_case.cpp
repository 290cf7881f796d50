// One golden case: the problem, its fp64 expected outputs and its model-based tolerance.
#include <algorithm>
#include <stdexcept>

#include "kda/golden/generate.hpp"
#include "kda/properties/comparison.hpp"
#include "kda/reference_kernel.hpp"

namespace kda::golden {

namespace {

using i64 = std::int64_t;

// The errors of one fp32 model on every output: the reference run on a copy of the case like a
// kernel, its outputs rounded into the case's output tensors.
std::vector<props::TensorVerdict> model_errors(const Problem& p, const ReferenceOutputs& expected, Algorithm algorithm,
                                               const std::string& name) {
  Problem modelled = deep_copy(p);
  const RunOutcome outcome = make_reference_kernel(Precision::fp32, algorithm)->run(modelled);
  if (outcome.status != RunOutcome::Status::ok)
    throw std::logic_error("suite case '" + name + "' is not a valid call: " +
                           (outcome.violations.empty() ? outcome.message : outcome.violations[0].message));
  const ReferenceOutputs model = props::read_outputs(modelled);
  return props::compare(p, model, expected, model).tensors;
}

// Each output's bound from the larger error of the fp32 reference's two algorithms: a kernel may
// compute either way, and the chunked form's extra rounding is legitimate.
Tolerance model_tolerance(const Problem& p, const ReferenceOutputs& expected, const std::string& name) {
  const auto recurrent = model_errors(p, expected, Algorithm::recurrent, name);
  const auto chunked = model_errors(p, expected, Algorithm::chunked, name);
  const props::TolerancePolicy policy;
  Tolerance t;
  t.metric = "rel_rms";
  t.alpha = policy.alpha;
  t.model = kToleranceModel;
  for (std::size_t i = 0; i < recurrent.size(); ++i) {
    const double error = std::max(recurrent[i].model_rel_rms, chunked[i].model_rel_rms);
    t.outputs.push_back({recurrent[i].tensor, error, props::unit_roundoff(recurrent[i].dtype),
                         policy.bound(error, recurrent[i].dtype)});
  }
  t.bound = t.bound_for("o");
  return t;
}

// The [N,L] index table moved into a buffer of its own, column-major: with gaps, a column stride of
// N + 1 and a leading gap of one element, the gaps holding -1, so a kernel that ignores the strides
// reads padding slots where it should read the table; without, a column stride of N.
void stride_table(Problem& p, bool with_gaps) {
  const Tensor& table = *p.state_indices;
  const i64 N = table.shape()[0], L = table.shape()[1];
  const View view = with_gaps ? View{table.dtype(), {N, L}, {1, N + 1}, 1} : View{table.dtype(), {N, L}, {1, N}, 0};
  Tensor strided = Tensor::with_view(table.name(), view);
  const auto elements = static_cast<i64>(strided.buffer->size() / size_of(table.dtype()));
  for (i64 e = 0; e < elements; ++e) store_integer(strided.buffer->data(), table.dtype(), e, -1);
  for (i64 n = 0; n < N; ++n)
    for (i64 t = 0; t < L; ++t) strided.set_integer(n, t, table.integer_at(n, t));
  p.state_indices = std::move(strided);
}

}  // namespace

Tolerance golden_tolerance(const Problem& p, const ReferenceOutputs& expected, const std::string& name) {
  return model_tolerance(p, expected, name);
}

Case golden_case(const Suite& suite, const SuiteCase& c) {
  Case out;
  out.problem = props::build_case(c.spec);
  if (c.strided_table || c.column_major_table) stride_table(out.problem, c.strided_table);
  out.metadata = {{"suite", suite.name}, {"covers", c.covers}, {"spec", c.spec.describe()}};
  if (c.strided_table) out.metadata["state_indices"] = "column-major, column stride N + 1, -1 in the gaps";
  if (c.column_major_table) out.metadata["state_indices"] = "column-major, column stride N, no gaps";
  out.expected = run_reference<double>(out.problem, Algorithm::recurrent, 1);
  out.tolerance = model_tolerance(out.problem, *out.expected, c.name);
  return out;
}

Case golden_case(const Suite& suite, const ContractCase& c) {
  Case out;
  out.problem = c.problem;
  out.metadata = {{"suite", suite.name}, {"profile", c.profile->name}, {"covers", "contract rule " + std::string(name_of(c.rule))}};
  out.violation = ExpectedViolation{c.rule, c.message};
  return out;
}

}  // namespace kda::golden
