#pragma once
// One kernel run on a generated case, judged: the fp64 oracle on the untouched inputs, the kernel
// and its precision-matched model each on their own copy, the verdict of the comparison, and
// every byte that changed outside the region the call may write.
#include <string>
#include <vector>

#include "kda/properties/catalogue.hpp"

namespace kda::props {

struct JudgedRun {
  Problem problem;  // as the kernel left it
  RunOutcome outcome;
  ReferenceOutputs oracle, kernel, model;
  Verdict verdict;
  std::vector<std::string> outside_changes;  // empty when nothing outside the writable region changed

  // Fails the current rapidcheck case unless the kernel ran (a rejection of a valid, supported
  // problem is a failure too).
  void require_ran() const;
};

JudgedRun run_judged(CheckContext& context, const Problem& problem);

// The precision model's outputs on `problem`: the context's model run on a copy or, where the model's
// profile rejects the problem (a rule the kernel under test does not hold, such as the pool alignment of
// strict), the fp32 recurrent reference. A model that fails outright fails the rapidcheck case.
ReferenceOutputs model_outputs(CheckContext& context, const Problem& problem);

}  // namespace kda::props
