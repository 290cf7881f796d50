#pragma once
// The cases the GPU tests compare a CUDA kernel on against its simulation: `count` cases drawn by the
// property generators for the kernel, case i from its own fixed seed, so a failure names a case that
// replays. Stops at the first fatal failure.
#include <gtest/gtest.h>

#include <cstdint>

#include "kda/properties/case_spec.hpp"
#include "kda/properties/generators.hpp"

namespace kda::test {

template <class Check>
void for_each_generated_case(const Kernel& kernel, int count, Check&& check) {
  const rc::Gen<props::CaseSpec> gen = props::gen_valid_case(kernel);
  for (int i = 0; i < count; ++i) {
    const props::CaseSpec spec = gen(rc::Random(20261201 + static_cast<std::uint64_t>(i)), i % 101).value();
    SCOPED_TRACE(spec.describe());
    check(props::build_case(spec));
    if (testing::Test::HasFatalFailure()) return;
  }
}

}  // namespace kda::test
