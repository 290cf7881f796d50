#pragma once
// The subcommands of `kda-oracle golden`, one file each.
#include "commands.hpp"

namespace kda::cli {

Command add_golden_generate(CLI::App& golden);
Command add_golden_verify(CLI::App& golden);
Command add_golden_inspect(CLI::App& golden);
Command add_golden_import(CLI::App& golden);

}  // namespace kda::cli
