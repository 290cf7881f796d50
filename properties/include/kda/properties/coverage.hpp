#pragma once
// Coverage of generated cases: each case is classified into categories (rapidcheck tags), the run
// prints their distribution, and a run in which a category the kernel should see never appeared
// fails: a generator that silently stopped producing zero-length sequences is a bug of the oracle.
#include <map>
#include <string>
#include <vector>

#include "kda/kernel.hpp"
#include "kda/properties/case_spec.hpp"

namespace kda::props {

std::vector<std::string> categories(const CaseSpec& spec, const Problem& problem);

// The categories a long enough run of valid cases against this kernel must hit.
std::vector<std::string> expected_categories(const Kernel& kernel);

// Per-category counts from rapidcheck's distribution (a map from tag lists to case counts).
std::map<std::string, int> category_counts(const std::map<std::vector<std::string>, int>& distribution);

}  // namespace kda::props
