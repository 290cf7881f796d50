#pragma once
// Each subcommand registers itself on the CLI11 app; its run returns the process exit code.
#include <CLI/CLI.hpp>
#include <functional>
#include <iosfwd>
#include <string>

namespace kda::cli {

struct Command {
  CLI::App* app;
  std::function<int()> run;
};

// An option's lower bound, "--cases: must be at least 1, got 0" (CLI11's own ranges print their upper
// bound in full, a 300-digit number for a double).
inline CLI::Validator at_least(double least, bool inclusive = true) {
  const std::string bound = (inclusive ? "at least " : "more than ") + CLI::detail::to_string(least);
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        double value = 0;
        if (!CLI::detail::lexical_cast(text, value)) return "must be a number, got " + text;
        return (inclusive ? value >= least : value > least) ? "" : "must be " + bound + ", got " + text;
      },
      bound);
}

// The property table (name, needs, doc) and the kernel table (name, precision model, GPU, doc) in
// Markdown, as `check --list` prints them and docs/properties.md holds them.
void print_tables(std::ostream& os);

Command add_smoke(CLI::App& app);
Command add_check(CLI::App& app);
Command add_golden(CLI::App& app);
Command add_campaign(CLI::App& app);
Command add_report(CLI::App& app);

}  // namespace kda::cli
