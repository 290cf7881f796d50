// The suite registry.
#include "kda/golden/suites.hpp"

namespace kda::golden {

std::string contract_case_name(std::string_view contract_case) { return "contract-" + std::string(contract_case); }

std::vector<std::string> suite_names() { return {smoke_suite().name, standard_suite().name}; }

const Suite* find_suite(std::string_view name) {
  for (const Suite* s : {&smoke_suite(), &standard_suite()})
    if (s->name == name) return s;
  return nullptr;
}

}  // namespace kda::golden
