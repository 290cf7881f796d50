// kda-oracle: the command line that ties the oracle together.
#include <exception>
#include <iostream>
#include <vector>

#include "commands.hpp"

int main(int argc, char** argv) {
  CLI::App app{"kda-oracle: a test oracle for KDA (Kimi Delta Attention) kernels"};
  app.require_subcommand(1);
  const std::vector<kda::cli::Command> commands{kda::cli::add_smoke(app), kda::cli::add_check(app),
                                                kda::cli::add_golden(app),  kda::cli::add_campaign(app),
                                                kda::cli::add_report(app)};
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // --help is a ParseError too; every other one is a usage error
  }
  try {
    for (const auto& command : commands)
      if (command.app->parsed()) return command.run();
  } catch (const std::exception& e) {
    std::cerr << "kda-oracle: " << e.what() << '\n';
  }
  return 2;
}
