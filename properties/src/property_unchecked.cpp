// unchecked-invalid: calls breaking a rule the kernel never promised to check.
#include <rapidcheck.h>

#include "kda/properties/property_bodies.hpp"
#include "unchecked_run.hpp"

namespace kda::props {

void check_unchecked_invalid(CheckContext& context) {
  const InvalidCase invalid = *gen_unpromised_case(context.kernel, context.limits);
  const Problem problem = invalid.build();
  const detail::UncheckedRun run = detail::run_unchecked(context, problem, invalid.rule, *invalid.profile);
  // An error without a rule (an exception an adapter's table does not map) is a refusal too; the
  // adapter's message is on stderr.
  rc::detail::classify(run.outcome.status == RunOutcome::Status::ok         ? "ran"
                       : run.outcome.status == RunOutcome::Status::rejected ? "rejected"
                                                                             : "failed without naming a rule",
                       {});
  if (run.outcome.status == RunOutcome::Status::ok)
    rc::detail::classify(run.reference_defined ? "values judged" : "math undefined", {});
  if (!run.findings.empty()) RC_FAIL(run.failure() + "\n  problem: " + problem.describe());
}

}  // namespace kda::props
