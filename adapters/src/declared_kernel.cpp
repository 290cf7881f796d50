#include "declared_kernel.hpp"

#include <stdexcept>

namespace kda::adapters {

const Profile& profile_named(const std::string& name) {
  if (const Profile* p = find_profile(name)) return *p;
  std::string known;
  for (auto n : profile_names()) known += (known.empty() ? "" : ", ") + std::string(n);
  throw std::invalid_argument("unknown profile '" + name + "' (known: " + known + ")");
}

}  // namespace kda::adapters
