#pragma once
// CUDA kernels against their CPU simulations, element by element: every output element equal (0 ulp; a
// NaN equals a NaN whatever its payload), counted over many cases, with the first that differs and the
// largest distance in ulps of its dtype.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kda/properties/comparison.hpp"

namespace kda::test {

struct Agreement {
  std::int64_t elements = 0, mismatches = 0;
  double max_ulp = 0;
  std::string first_mismatch;

  void add(const Agreement& a) {
    elements += a.elements, mismatches += a.mismatches, max_ulp = std::max(max_ulp, a.max_ulp);
    if (first_mismatch.empty()) first_mismatch = a.first_mismatch;
  }
};

// One output, in its own dtype.
inline void compare(const char* tensor, DType dtype, const std::vector<double>& cuda, const std::vector<double>& sim,
                    Agreement& a) {
  ASSERT_EQ(cuda.size(), sim.size()) << tensor;
  for (std::size_t i = 0; i < cuda.size(); ++i) {
    ++a.elements;
    if (cuda[i] == sim[i] || (std::isnan(cuda[i]) && std::isnan(sim[i]))) continue;
    a.max_ulp = std::max(a.max_ulp, props::ulp_distance(dtype, cuda[i], sim[i]));
    if (a.mismatches++ == 0)
      a.first_mismatch = std::string(tensor) + "[" + std::to_string(i) + "]: cuda " + std::to_string(cuda[i]) +
                         ", simulation " + std::to_string(sim[i]);
  }
}

inline void expect_agreement(const Agreement& a) {
  EXPECT_EQ(a.mismatches, 0) << a.mismatches << " of " << a.elements << " elements differ, up to " << a.max_ulp
                             << " ulp; first: " << a.first_mismatch;
}

}  // namespace kda::test
