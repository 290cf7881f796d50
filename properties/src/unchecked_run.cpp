#include "unchecked_run.hpp"

#include <algorithm>

#include "failure_text.hpp"
#include "kda/properties/comparison.hpp"
#include "kda/properties/judged_run.hpp"

namespace kda::props::detail {

namespace {

// The rules whose break leaves the recurrence defined: limits of one implementation, not of the math.
// The dtype rules stay, with every floating-point dtype allowed; the index dtype rules are replaced
// by "any integer dtype" (reference_defines).
const Profile& computable() {
  static const Profile p = [] {
    Profile c = profile_strict();
    c.name = "reference";
    for (Rule r : {Rule::state_pool_alignment, Rule::key_head_dim_max, Rule::head_dims_supported, Rule::chunk_size,
                   Rule::state_layout, Rule::state_source_supported, Rule::index_overflow_32bit,
                   Rule::state_indices_dtype, Rule::scratch_indices_dtype})
      std::erase(c.rules, r);
    c.state_dtypes = {DType::bf16, DType::f16, DType::f32, DType::f64};
    return c;
  }();
  return p;
}

bool integer_or_absent(const std::optional<Tensor>& t) { return !t || !is_float(t->dtype()); }

std::string upstream_message(const Problem& problem, Rule rule, const Profile& profile) {
  for (const Violation& v : validate(problem, profile))
    if (v.rule == rule) return v.message;
  return "(the contract names no violation of it on this problem)";
}

}  // namespace

bool reference_defines(const Problem& problem) {
  return problem.options.chunk_size >= 1 && integer_or_absent(problem.state_indices) &&
         integer_or_absent(problem.scratch_indices) && validate(problem, computable()).empty();
}

std::string UncheckedRun::failure() const {
  if (findings.empty()) return {};
  std::string s = std::string("the kernel ") + (outcome.status == RunOutcome::Status::rejected ? "rejected" : "ran") +
                  " a problem that breaks " + broken;
  for (const auto& f : findings) s += "\n" + f;
  return s;
}

UncheckedRun run_unchecked(CheckContext& context, const Problem& problem, Rule rule, const Profile& profile) {
  context.note_case(problem);
  UncheckedRun judged;
  judged.broken = std::string(name_of(rule)) + " (upstream: " + upstream_message(problem, rule, profile) + ")";
  Problem ran = deep_copy(problem);
  const Snapshot before(ran);
  judged.outcome = context.kernel.run(ran);
  if (judged.outcome.status == RunOutcome::Status::rejected) {
    if (const auto changes = before.changes_anywhere(ran); !changes.empty())
      judged.findings.push_back("it wrote before rejecting it:" + lines(changes));
    return judged;
  }
  if (judged.outcome.status != RunOutcome::Status::ok) return judged;
  if (const auto changes = before.changes_outside_writable(ran); !changes.empty())
    judged.findings.push_back("it wrote outside the region a call of this shape may write:" + lines(changes));
  judged.reference_defined = reference_defines(problem);
  if (!judged.reference_defined) {
    if (const auto bad = before.non_finite_writable(ran); !bad.empty())
      judged.findings.push_back("it returned NaN or Inf (poison read, or outputs left unwritten):" + lines(bad));
    return judged;
  }
  const ReferenceOutputs oracle = run_reference<double>(problem, Algorithm::recurrent, 1);
  const Verdict verdict = compare(ran, read_outputs(ran), oracle, model_outputs(context, problem), context.policy);
  if (!verdict.passed())
    judged.findings.push_back("its values are wrong (the fp64 reference defines this problem):\n" + verdict.describe());
  return judged;
}

}  // namespace kda::props::detail
