// The property and kernel tables of `kda-oracle check --list`: Markdown that docs/properties.md holds
// verbatim between marker comments (tests/cli checks that they agree).
#include <ostream>

#include "commands.hpp"
#include "kda/properties/catalogue.hpp"
#include "kda/registry/kernel_registry.hpp"

namespace kda::cli {

void print_tables(std::ostream& os) {
  os << "| property | needs of the kernel | what it checks |\n|---|---|---|\n";
  for (const auto& p : props::catalogue())
    os << "| `" << p.name << "` | " << props::describe(p.needs) << " | " << p.doc << " |\n";
  os << "\n| kernel | precision model | GPU | what it is |\n|---|---|---|---|\n";
  for (const auto& k : registry::kernel_records())
    os << "| `" << k.name << "` | " << k.model << " | " << (k.needs_gpu ? "sm_90" : "-") << " | " << k.doc << " |\n";
}

}  // namespace kda::cli
