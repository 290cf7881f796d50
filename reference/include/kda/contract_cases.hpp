#pragma once
// The contract's error inputs, described once (PyTorch OpInfo style): for every rule, a valid problem
// with exactly that rule broken, the profile it is checked against, and the message expected
// (upstream's full wording where upstream has one). The contract tests, the CLI's smoke job and the
// golden files' contract cases all consume this list.
#include <string>
#include <vector>

#include "kda/contract.hpp"

namespace kda {

struct ContractCase {
  std::string name;
  Rule rule;
  std::string message;     // expected as a substring of the violation's message
  const Profile* profile;  // the profile the case is checked against
  Problem problem;         // random inputs from fill_random(seed 7); valid but for the one rule
};

std::vector<ContractCase> contract_cases();

// Valid starting points the cases break: a feature-rich dense prefill, the same on a padded pool
// with a -1 row, the SGLang FlashInfer decode shape, a ragged verify call in the index-table form and
// in the scratch form (each with a padding row), and the fixed-token verify shape of SGLang's verify
// kernels (DSpARK MTP, FlashInfer target_verify).
ProblemSpec contract_dense_spec();
ProblemSpec contract_pool_spec();
ProblemSpec contract_sglang_spec();
ProblemSpec contract_verify_table_spec();
ProblemSpec contract_verify_scratch_spec();
ProblemSpec contract_sglang_verify_spec();

}  // namespace kda
