#include "unchecked_run.hpp"

#include <algorithm>
#include <cmath>

#include "failure_text.hpp"
#include "kda/properties/case_spec.hpp"
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

// The rules that keep the numbers of a call in the recurrence's domain: a call breaking one of them
// (a NaN lower bound, a missing A_log, integer activations, ...) may have NaN or Inf as its honest
// answer, so those are no finding there.
const Profile& numeric_domain() {
  static const Profile p = [] {
    Profile d = computable();
    d.name = "numeric domain";
    d.rules = {Rule::scale_positive,       Rule::lower_bound_range, Rule::lower_bound_required,
               Rule::softplus_needs_A_log, Rule::neg_eigval_needs_beta_logits, Rule::gate_params_dtype,
               Rule::A_log_size,           Rule::dt_bias_size,      Rule::input_dtype,
               Rule::output_dtype,         Rule::state_dtype};
    return d;
  }();
  return p;
}

// Entry `at` (row-major) of an index tensor, read whatever its dtype and rank; nullopt when absent.
std::optional<std::int64_t> index_entry(const std::optional<Tensor>& t, std::int64_t at) {
  if (!t || t->view.rank() < 1 || at < 0 || at >= t->numel()) return std::nullopt;
  std::int64_t element = t->view.offset;
  for (int d = t->view.rank() - 1; d >= 0; --d) element += at % t->view.size(d) * t->view.stride(d), at /= t->view.size(d);
  const double x = load_element(t->buffer->data(), t->dtype(), element);
  return x == std::trunc(x) && std::abs(x) < 9.0e15 ? std::optional<std::int64_t>(static_cast<std::int64_t>(x)) : std::nullopt;
}

// Whether a pool slot some request's (possibly invalid) metadata names as its initial state holds
// poison (NaN, Inf or 1e30): an invalid call can point a kernel at a slot the case filled with poison, and the kernel
// that reads it there does what the call says.
bool names_a_poisoned_initial_slot(const Problem& p) {
  if (!p.state_pool || p.state_pool->view.rank() < 1) return false;
  const std::int64_t slots = p.state_pool->shape()[0];
  const std::int64_t columns = p.state_indices && p.state_indices->view.rank() == 2 ? p.state_indices->shape()[1] : 1;
  for (std::int64_t n = 0; n < p.N; ++n) {
    std::optional<std::int64_t> slot = index_entry(p.state_indices, n * columns);
    if (p.num_accepted) {
      const auto a = index_entry(p.num_accepted, n);
      slot = a && *a >= 1 && *a <= columns ? index_entry(p.state_indices, n * columns + *a - 1) : std::nullopt;
    }
    if (!slot || *slot < 0 || *slot >= slots) continue;
    bool poisoned = false;
    const View& v = p.state_pool->view;
    const Shape inner(v.shape.begin() + 1, v.shape.end());
    for_each_index(inner, [&](std::span<const std::int64_t> i) {
      std::int64_t element = v.offset + *slot * v.stride(0);
      for (std::size_t d = 0; d < i.size(); ++d) element += i[d] * v.stride(static_cast<int>(d) + 1);
      const double x = load_element(p.state_pool->buffer->data(), v.dtype, element);
      poisoned = poisoned || !(std::abs(x) < 0.5 * value_of(Poison::huge));  // NaN, Inf or the huge poison
    });
    if (poisoned) return true;
  }
  return false;
}

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
    const bool finite_answer = validate(problem, numeric_domain()).empty() && !names_a_poisoned_initial_slot(problem);
    if (const auto bad = before.non_finite_writable(ran); finite_answer && !bad.empty())
      judged.findings.push_back("it returned NaN or Inf (poison read, or outputs left unwritten):" + lines(bad));
    return judged;
  }
  const ReferenceOutputs oracle = run_reference<double>(problem, Algorithm::recurrent, 1);
  const Verdict verdict = compare(ran, read_outputs(ran), oracle, model_outputs(context, problem), context.policy);
  if (!verdict.passed())
    judged.findings.push_back("its values are wrong (the fp64 reference defines this problem; precision model " +
                              context.model.name() + "):\n" + verdict.describe());
  return judged;
}

}  // namespace kda::props::detail
