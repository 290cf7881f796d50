#pragma once
// What the GPU tests do before comparing a CUDA kernel with its simulation: both run on copies of the
// same input, both must succeed, and the CUDA kernel must write nothing outside the writable region.
#include <gtest/gtest.h>

#include "kda/kernel.hpp"
#include "kda/properties/comparison.hpp"

namespace kda::test {

struct RunPair {
  Problem cuda, simulation;  // the input after each ran
};

// Fatal failures return early: callers check HasFatalFailure() before using `ran`.
inline void run_against_simulation(Kernel& cuda, Kernel& simulation, const Problem& input, RunPair& ran) {
  ran.cuda = deep_copy(input), ran.simulation = deep_copy(input);
  const props::Snapshot before(input);
  const RunOutcome outcome = cuda.run(ran.cuda);
  ASSERT_EQ(outcome.status, RunOutcome::Status::ok) << outcome.message;
  const RunOutcome simulated = simulation.run(ran.simulation);
  ASSERT_EQ(simulated.status, RunOutcome::Status::ok) << simulated.message;
  for (const auto& change : before.changes_outside_writable(ran.cuda)) ADD_FAILURE() << change;
}

}  // namespace kda::test
