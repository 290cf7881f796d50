// Judging one case: a live kernel run or a stored result, against the expected outputs and bounds.
#include <algorithm>
#include <cstring>
#include <optional>

#include "kda/golden/verify.hpp"
#include "kda/kernels/chunked_precision_model.hpp"

namespace kda::golden {

std::string_view name_of(Outcome outcome) {
  switch (outcome) {
    case Outcome::passed: return "pass";
    case Outcome::failed: return "FAIL";
    case Outcome::skipped: return "skip";
  }
  return "?";
}

namespace {

std::string text(const Violation& v) { return std::string(kda::name_of(v.rule)) + ": " + v.message; }

CaseReport report(const std::string& name, const Case& golden) {
  if (!golden.violation && (!golden.expected || !golden.tolerance))
    throw FormatError("case '" + name + "' is not a golden case: it has no " +
                      (golden.expected ? "tolerance" : "expected outputs") + " and no contract violation");
  CaseReport r;
  r.name = name;
  if (golden.violation) r.expected_rule = golden.violation->rule;
  r.call = verify_call(golden.problem);
  return r;
}

CaseReport fail(CaseReport r, std::string note) {
  r.outcome = Outcome::failed;
  r.notes.push_back(std::move(note));
  return r;
}

CaseReport skip(CaseReport r, std::string note) {
  r.outcome = Outcome::skipped;
  r.notes.push_back(std::move(note));
  return r;
}

// What a run left in `after`, judged against the expected outputs under the stored bounds.
CaseReport judge_outputs(CaseReport r, const Case& golden, const Problem& after, const props::Snapshot& before) {
  r.changes = before.changes_outside_writable(after);
  // compare() derives each bound from a model's outputs; a golden file stores the bounds instead, so
  // the expected outputs stand in for the model and the stored bounds replace the derived ones.
  props::Verdict verdict = props::compare(after, props::read_outputs(after), *golden.expected, *golden.expected);
  for (auto& t : verdict.tensors) {
    t.bound = golden.tolerance->bound_for(t.tensor);
    t.model_rel_rms = 0;
    for (const auto& o : golden.tolerance->outputs)
      if (o.tensor == t.tensor) t.model_rel_rms = o.model_error;
  }
  r.outcome = r.changes.empty() && verdict.passed() ? Outcome::passed : Outcome::failed;
  r.outputs = std::move(verdict.tensors);
  return r;
}

// A golden file's bounds come from fp32 models. A kernel that declares coarser arithmetic (bf16
// operands, say) is held to its declared model instead where that model's bound is the larger: run on
// `modelled` (the case as it was before the kernel ran), its error against the expected outputs sets
// the bound as the tolerance policy does. Notes which model set the bounds.
CaseReport widen_for_declared_arithmetic(CaseReport r, Case& golden, Problem modelled, const Kernel& kernel) {
  auto model = kernels::make_declared_arithmetic_model(kernel.capabilities().arithmetic, kernel.profile());
  const RunOutcome outcome = model->run(modelled);
  if (outcome.status != RunOutcome::Status::ok)
    return fail(std::move(r), "the precision model " + model->name() + " could not run the case: " +
                                  (outcome.violations.empty() ? outcome.message : text(outcome.violations.front())));
  const props::TolerancePolicy policy;
  const props::Verdict errors =
      props::compare(modelled, props::read_outputs(modelled), *golden.expected, *golden.expected);
  Tolerance& t = *golden.tolerance;
  for (OutputBound& o : t.outputs)
    if (const props::TensorVerdict* e = errors.find(o.tensor); e && policy.bound(e->rel_rms, e->dtype) > o.bound) {
      o.model_error = e->rel_rms;
      o.bound = policy.bound(e->rel_rms, e->dtype);
    }
  t.model = "max(" + t.model + ", " + model->name() + ")";
  t.bound = t.bound_for("o");
  r.notes.push_back("bounds: " + t.model + " (declared arithmetic " + std::string(kda::name_of(kernel.capabilities().arithmetic)) + ")");
  return r;
}

std::string accepted_invalid(Rule rule) {
  return "ran a call that breaks " + std::string(kda::name_of(rule)) + " instead of rejecting it";
}

// The result's buffers copied into the case's output buffers (whole payloads, gaps included): one
// for every tensor the call may write (kda::tensor_fields()), the pool included.
void install(const CaseResult& result, Problem& p, const std::string& label) {
  for (const OutputBuffer& b : result.outputs) {
    const TensorField* field = find_tensor_field(b.tensor);
    if (!field || !field->written() || !field->in(p))
      throw FormatError(label + ": output '" + b.tensor + "' is not a tensor of this case");
  }
  for (const TensorField& field : tensor_fields()) {
    Tensor* t = field.written() ? field.in(p) : nullptr;
    if (!t) continue;
    const auto b = std::find_if(result.outputs.begin(), result.outputs.end(),
                                [&field](auto& o) { return o.tensor == field.name; });
    const std::string what = label + ": output '" + std::string(field.name) + "'";
    if (b == result.outputs.end()) throw FormatError(what + " is missing (the case has that output tensor)");
    if (b->dtype != t->dtype())
      throw FormatError(what + " holds " + std::string(kda::name_of(b->dtype)) + " elements, the case's buffer " +
                        std::string(kda::name_of(t->dtype())));
    if (b->payload.size() != t->buffer->size())
      throw FormatError(what + " holds " + std::to_string(b->payload.size() / size_of(b->dtype)) +
                        " elements, the case's whole buffer '" + t->buffer->name() + "' " +
                        std::to_string(t->buffer->size() / size_of(t->dtype())));
    // An empty output has no storage: memcpy must not see its null pointers.
    if (!b->payload.empty()) std::memcpy(t->buffer->data(), b->payload.data(), b->payload.size());
  }
}

}  // namespace

std::string verify_call(const Problem& p) {
  if (p.mode != Mode::verify) return {};
  std::string s = "verify, L = " + std::to_string(p.L);
  if (p.num_accepted) return s + ", index-table form";
  if (p.scratch_states && p.scratch_states->view.rank() == 5)
    return s + ", scratch form (" + std::to_string(p.scratch_states->shape()[1]) + 
           (p.scratch_states->shape()[1] == 1 ? " step)" : " steps)");
  return s + (p.scratch_states || p.scratch_indices ? ", scratch form" : ", no verify form");
}

CaseReport verify_case(const std::string& name, Case golden, Kernel& kernel, ResultsFile* save) {
  CaseReport r = report(name, golden);
  Problem& p = golden.problem;
  auto skipped = [&](std::string why) {
    if (save) save->write_unsupported(name, why);
    return skip(std::move(r), std::move(why));
  };
  std::string unsupported;
  if (golden.violation) {
    const auto expected = validate(p, kernel.profile());
    if (std::none_of(expected.begin(), expected.end(), [&](auto& v) { return v.rule == golden.violation->rule; }))
      unsupported = "the kernel's profile " + kernel.profile().name + " does not reject this call for " +
                    std::string(kda::name_of(golden.violation->rule));
  } else {
    unsupported = kernel.capabilities().unsupported(p);
  }
  if (!unsupported.empty()) return skipped(std::move(unsupported));

  const props::Snapshot before(p);
  const bool declared = kernel.capabilities().arithmetic != Arithmetic::fp32 && !golden.violation;
  std::optional<Problem> modelled;
  if (declared) modelled = deep_copy(p);
  const RunOutcome outcome = kernel.run(p);
  if (save && outcome.status == RunOutcome::Status::ok) save->write_outputs(name, p);
  if (outcome.status == RunOutcome::Status::rejected && outcome.violations.empty())
    return fail(std::move(r), "rejected the call without naming a violated rule");
  if (outcome.status == RunOutcome::Status::rejected) {
    // Shown and saved: the violation a contract case expects when the kernel found it, else the first.
    Violation shown = outcome.violations.front();
    for (const auto& v : outcome.violations)
      if (golden.violation && v.rule == golden.violation->rule) shown = v;
    if (save) save->write_rejection(name, {std::string(kda::name_of(shown.rule)), shown.message});
    if (!golden.violation) return fail(std::move(r), "rejected a valid call: " + text(shown));
    if (shown.rule != golden.violation->rule)
      return fail(std::move(r), "rejected, but not for " + std::string(kda::name_of(golden.violation->rule)) + ": " +
                                    text(shown));
    r.notes.push_back("rejected: " + text(shown));
    for (auto& change : before.changes_anywhere(p)) r = fail(std::move(r), "rejected, but wrote first: " + change);
    return r;
  }
  if (outcome.status == RunOutcome::Status::failed) return fail(std::move(r), "failed: " + outcome.message);
  if (golden.violation) return fail(std::move(r), accepted_invalid(golden.violation->rule));
  if (declared) {
    r = widen_for_declared_arithmetic(std::move(r), golden, std::move(*modelled), kernel);
    if (r.outcome == Outcome::failed) return r;
  }
  return judge_outputs(std::move(r), golden, p, before);
}

CaseReport verify_case(const std::string& name, Case golden, const CaseResult& result, const std::string& label) {
  CaseReport r = report(name, golden);
  if (result.unsupported) return skip(std::move(r), "unsupported: " + *result.unsupported);
  if (golden.violation) {
    const std::string rule(kda::name_of(golden.violation->rule));
    if (!result.rejection) return fail(std::move(r), accepted_invalid(golden.violation->rule));
    const std::string seen = result.rejection->rule + ": " + result.rejection->message;
    if (result.rejection->rule != rule) return fail(std::move(r), "rejected, but not for " + rule + ": " + seen);
    r.notes.push_back("rejected: " + seen);
    return r;
  }
  if (result.rejection)
    return fail(std::move(r), "rejected a valid call: " + result.rejection->rule + ": " + result.rejection->message);
  const props::Snapshot before(golden.problem);
  install(result, golden.problem, label);
  return judge_outputs(std::move(r), golden, golden.problem, before);
}

}  // namespace kda::golden
