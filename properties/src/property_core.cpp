// matches-reference, untouched, rejects-invalid and padding-rows.
#include <rapidcheck.h>

#include "failure_text.hpp"
#include "kda/properties/coverage.hpp"
#include "kda/properties/judged_run.hpp"
#include "kda/properties/property_bodies.hpp"
#include "unchecked_run.hpp"

namespace kda::props {

using detail::format_value;
using detail::lines;

DrawnCase draw_valid_case(CheckContext& context) {
  DrawnCase drawn{*gen_valid_case(context.kernel, context.limits), {}};
  drawn.problem = build_case(drawn.spec);
  for (const auto& category : categories(drawn.spec, drawn.problem)) rc::detail::classify(category, {});
  return drawn;
}

void check_matches_reference(CheckContext& context) {
  const JudgedRun run = run_judged(context, draw_valid_case(context).problem);
  run.require_ran();
  if (!run.verdict.passed())
    RC_FAIL("outside the tolerance of precision model " + context.model.name() + ":\n" + run.verdict.describe() +
            "\n  problem: " + run.problem.describe());
}

void check_untouched(CheckContext& context) {
  const JudgedRun run = run_judged(context, draw_valid_case(context).problem);
  run.require_ran();
  if (!run.outside_changes.empty())
    RC_FAIL("bytes changed outside the region the call may write:" + lines(run.outside_changes) +
            "\n  problem: " + run.problem.describe());
}

void check_rejects_invalid(CheckContext& context) {
  const InvalidCase invalid = *gen_invalid_case(context.kernel, context.limits);
  const Problem problem = invalid.build();
  const detail::UncheckedRun run = detail::run_unchecked(context, problem, invalid.rule, *invalid.profile);
  const std::string rule(name_of(invalid.rule));
  if (run.outcome.status == RunOutcome::Status::ok)
    RC_FAIL("the kernel ran a problem that breaks " + run.broken + " instead of rejecting it" +
            (run.findings.empty() ? std::string("; nothing else wrong was seen in what it did")
                                  : ", and" + lines(run.findings)) +
            "\n  problem: " + problem.describe());
  if (run.outcome.status == RunOutcome::Status::failed)
    RC_FAIL("the kernel failed on a problem that breaks " + run.broken + " instead of rejecting it: " +
            run.outcome.message + "\n  problem: " + problem.describe());
  bool found = false;
  for (const auto& v : run.outcome.violations) found |= v.rule == invalid.rule;
  if (!found)
    RC_FAIL("rejected, but not for " + rule + "; it reported:" + detail::violations_text(run.outcome.violations) +
            "\n  problem: " + problem.describe());
  if (!run.findings.empty()) RC_FAIL("rejected for " + rule + ", but " + run.findings.front() + "\n  problem: " + problem.describe());
}

void check_padding_rows(CheckContext& context) {
  // The padding row is put in before the case is drawn, so the printed counterexample shows it.
  const CaseSpec spec = *rc::gen::map(gen_valid_case(context.kernel, context.limits), [](CaseSpec s) {
    with_padding_row(s);
    return s;
  });
  RC_PRE(spec.problem.state == StateSource::pool || is_verify_source(spec.problem.state));
  const JudgedRun run = run_judged(context, build_case(spec));
  run.require_ran();
  const Problem& p = run.problem;
  for (std::int64_t n = 0; n < p.N; ++n) {
    if (p.initial_slot(n) != -1) continue;
    for (std::int64_t t = p.first(n); t < p.first(n) + p.length(n); ++t)
      for (std::int64_t h = 0; h < p.HV; ++h)
        for (std::int64_t c = 0; c < p.V; ++c)
          if (const double x = p.o.at({p.row(n), t, h, c}); x != 0.0)
            RC_FAIL("padding sequence " + std::to_string(n) + " has output " + format_value(x) + " at token " +
                    std::to_string(t - p.first(n)) + " head " + std::to_string(h) + " channel " + std::to_string(c) +
                    " (must be zero)\n  problem: " + p.describe());
  }
  if (!run.outside_changes.empty())
    RC_FAIL("a padding row's call changed bytes it may not write:" + lines(run.outside_changes) +
            "\n  problem: " + p.describe());
}

}  // namespace kda::props
