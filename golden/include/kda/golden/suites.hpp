#pragma once
// Golden-file suites: deterministic, named lists of KDA cases. A valid case is a props::CaseSpec
// (props::build_case rebuilds its Problem bit for bit from it); contract cases are taken by name
// from kda::contract_cases(). The lists live in code (suite_smoke.cpp, suite_standard.cpp) with
// fixed seeds, in a fixed order, so a suite always generates the same file.
#include <string>
#include <string_view>
#include <vector>

#include "kda/properties/case_spec.hpp"

namespace kda::golden {

struct SuiteCase {
  std::string name;    // the case's name in the file
  std::string covers;  // what the case is there for, in a few words (stored as metadata "covers")
  props::CaseSpec spec;
  // Verify, index-table form: state_indices stored column-major with a padded column stride (N + 1
  // elements, starting one element in, -1 in the gaps) instead of build_case's row-major table.
  bool strided_table = false;
  // Verify, index-table form: state_indices stored column-major without gaps (column stride N, the
  // transpose of a compact [L,N] buffer): a kernel that ignores the column stride reads other live
  // entries, valid slots, and so shows the mistake in its values rather than in a guard band.
  bool column_major_table = false;
};

struct Suite {
  std::string name;
  std::string description;
  std::vector<SuiteCase> cases;
  std::vector<std::string> contract_cases;  // names of kda::contract_cases() entries
};

// A contract case's name in a golden file: "contract-" + its name in kda::contract_cases().
std::string contract_case_name(std::string_view contract_case);

const Suite& smoke_suite();     // small enough to commit (golden/smoke.h5, under 1 MB)
const Suite& standard_suite();  // the catalogue's dimensions; generates in under a minute on 2 cores
std::vector<std::string> suite_names();
const Suite* find_suite(std::string_view name);  // nullptr when unknown

}  // namespace kda::golden
