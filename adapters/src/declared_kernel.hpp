#pragma once
// What an external kernel (a plugin, an exec adapter) declares about itself, and the Kernel base that
// answers name(), capabilities() and profile() from it.
#include <string>

#include "kda/kernel.hpp"

namespace kda::adapters {

struct Declaration {
  std::string name;
  const Profile* profile = &profile_strict();
  Capabilities capabilities;
  bool checks_contract = false;  // called with invalid problems too (KDA_CAP_CHECKS_CONTRACT)
};

class DeclaredKernel : public Kernel {
 public:
  explicit DeclaredKernel(Declaration declaration) : declaration_(std::move(declaration)) {}
  std::string name() const override { return declaration_.name; }
  const Capabilities& capabilities() const override { return declaration_.capabilities; }
  const Profile& profile() const override { return *declaration_.profile; }

 protected:
  const Declaration& declaration() const { return declaration_; }

 private:
  Declaration declaration_;
};

// The profile of that name; throws std::invalid_argument listing the known names.
const Profile& profile_named(const std::string& name);

}  // namespace kda::adapters
