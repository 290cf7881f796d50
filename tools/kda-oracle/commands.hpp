#pragma once
// Each subcommand registers itself on the CLI11 app; its run returns the process exit code.
#include <CLI/CLI.hpp>
#include <functional>

namespace kda::cli {

struct Command {
  CLI::App* app;
  std::function<int()> run;
};

Command add_smoke(CLI::App& app);
Command add_check(CLI::App& app);
Command add_golden(CLI::App& app);

}  // namespace kda::cli
