#include "kda/properties/judged_run.hpp"

#include <rapidcheck.h>

#include "failure_text.hpp"

namespace kda::props {

using detail::violations_text;

void JudgedRun::require_ran() const {
  if (outcome.status == RunOutcome::Status::rejected)
    RC_FAIL("the kernel rejected a valid problem it claims to support:" + violations_text(outcome.violations) +
            "\n  problem: " + problem.describe());
  if (outcome.status == RunOutcome::Status::failed)
    RC_FAIL("the kernel failed: " + outcome.message + "\n  problem: " + problem.describe());
}

ReferenceOutputs model_outputs(CheckContext& context, const Problem& problem) {
  Problem modelled = deep_copy(problem);
  const RunOutcome outcome = context.model.run(modelled);
  if (outcome.status == RunOutcome::Status::rejected) return run_reference<float>(problem, Algorithm::recurrent, 1);
  if (outcome.status != RunOutcome::Status::ok)
    RC_FAIL("the precision model " + context.model.name() + " could not run the case: " + outcome.message);
  return read_outputs(modelled);
}

JudgedRun run_judged(CheckContext& context, const Problem& input) {
  context.note_case(input);
  JudgedRun run{deep_copy(input), {}, {}, {}, {}, {}, {}};
  // One thread for a small case (ctest runs property shards side by side); every core for a large one
  // (--scale realistic), whose (sequence, head) pairs are plenty.
  const bool large = input.B * input.T * input.HV * input.K * input.V > (std::int64_t{1} << 24);
  run.oracle = run_reference<double>(input, Algorithm::recurrent, large ? 0 : 1);
  const Snapshot before(run.problem);
  run.outcome = context.kernel.run(run.problem);
  if (run.outcome.status != RunOutcome::Status::ok) return run;
  run.outside_changes = before.changes_outside_writable(run.problem);
  run.kernel = read_outputs(run.problem);
  run.model = model_outputs(context, input);
  run.verdict = compare(run.problem, run.kernel, run.oracle, run.model, context.policy);
  return run;
}

}  // namespace kda::props
