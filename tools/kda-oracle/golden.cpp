// `kda-oracle golden generate|verify|inspect|import`: golden files, the oracle's answers for people who
// never build it (golden/SCHEMA.md). Exit status: 0 success, 1 a verification failed, 2 a usage or
// file error.
#include <vector>

#include "golden_commands.hpp"

namespace kda::cli {

Command add_golden(CLI::App& app) {
  auto* golden = app.add_subcommand("golden", "generate, verify and inspect golden files");
  golden->require_subcommand(1);
  const std::vector<Command> commands{add_golden_generate(*golden), add_golden_verify(*golden),
                                      add_golden_inspect(*golden), add_golden_import(*golden)};
  return {golden, [commands] {
            for (const auto& command : commands)
              if (command.app->parsed()) return command.run();
            return 2;
          }};
}

}  // namespace kda::cli
