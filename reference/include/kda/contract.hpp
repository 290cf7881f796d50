#pragma once
// The calling contract: does a Problem satisfy a kernel's Profile? validate() lists every violated
// rule with a message naming the offending values (upstream's exact wording where one exists, so a
// user can search for it). It never throws and never reads outside a buffer, whatever the Problem
// holds: structural failures (a view outside its buffer, cu_seqlens of the wrong rank or dtype)
// are reported and the checks that would read through them are skipped.
#include <stdexcept>
#include <string>
#include <vector>

#include "kda/problem.hpp"
#include "kda/profile.hpp"

namespace kda {

struct Violation {
  Rule rule;
  std::string message;
};

// Every violated rule the profile enforces, in a fixed check order; empty when the call is valid.
std::vector<Violation> validate(const Problem& problem, const Profile& profile);

struct ContractError : std::runtime_error {
  ContractError(const Profile& profile, std::vector<Violation> found);
  std::vector<Violation> violations;
};

// Throws ContractError carrying every violation when validate() finds any.
void require_valid(const Problem& problem, const Profile& profile);

}  // namespace kda
