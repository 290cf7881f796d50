#pragma once
// An accepted count outside [1, L] must be rejected with accepted_range before anything is written,
// and never used as an index into the table: the one check both token-serial kernels (simulation and
// CUDA) are held to on the first verify case.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>

#include "kda/kernel.hpp"
#include "verify_cases.hpp"

namespace kda::test {

inline void expect_rejects_accepted_counts_outside_one_to_L(Kernel& kernel) {
  const VerifyCase c = verify_cases().front();
  for (const std::int64_t count : {std::int64_t{0}, c.spec.problem.L + 1, std::int64_t{-7}, std::int64_t{1} << 30}) {
    Problem input = c.build();
    input.num_accepted->set_integer(2, count);
    Problem p = deep_copy(input);
    const RunOutcome ran = kernel.run(p);
    ASSERT_EQ(ran.status, RunOutcome::Status::rejected) << count;
    EXPECT_TRUE(std::any_of(ran.violations.begin(), ran.violations.end(),
                            [](const Violation& v) { return v.rule == Rule::accepted_range; }))
        << count;
    for (const auto& [after, before] : {std::pair{&p.o, &input.o}, {&*p.state_pool, &*input.state_pool}})
      EXPECT_EQ(std::memcmp(after->buffer->data(), before->buffer->data(), before->buffer->size()), 0)
          << before->name() << " written; count " << count;
  }
}

}  // namespace kda::test
