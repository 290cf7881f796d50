// Printed command lines are valid shell: shell_quote's words come back unchanged through sh, and a
// failure's replay line, for a kernel whose name holds quotes, spaces and $, parses back to the argv
// that names that kernel and that replay string.
#include <gtest/gtest.h>

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "broken_kernels.hpp"
#include "../support/catalogue_check.hpp"
#include "kda/properties/shell_quote.hpp"

namespace kda::test {
namespace {

using props::shell_quote;

// What /bin/sh prints for `printf FORMAT WORDS` (popen runs its command through sh -c).
std::string shell_output(const std::string& command) {
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return "popen failed";
  std::string out;
  char buffer[256];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
  EXPECT_EQ(pclose(pipe), 0) << command;
  return out;
}

// The words sh makes of `line`, one a line (none of them holds a newline here).
std::vector<std::string> shell_words(const std::string& line) {
  std::istringstream lines(shell_output("printf '%s\\n' " + line));
  std::vector<std::string> words;
  for (std::string w; std::getline(lines, w);) words.push_back(w);
  return words;
}

TEST(ShellQuote, LeavesSafeWordsBareAndQuotesTheRest) {
  EXPECT_EQ(shell_quote("ref-fp32"), "ref-fp32");
  EXPECT_EQ(shell_quote("plugin:/tmp/lib_k.so"), "plugin:/tmp/lib_k.so");
  EXPECT_EQ(shell_quote("reproduce=BAAAAAAA-_x@%+,"), "reproduce=BAAAAAAA-_x@%+,");
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(shell_quote("a b"), "'a b'");
  EXPECT_EQ(shell_quote("$HOME"), "'$HOME'");
  EXPECT_EQ(shell_quote("back\\slash"), "'back\\slash'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote("'"), "''\\'''");
  EXPECT_EQ(shell_quote("exec:python3 -c 'print(1)'"), "'exec:python3 -c '\\''print(1)'\\'''");
}

TEST(ShellQuote, EveryWordComesBackThroughTheShell) {
  for (const std::string word :
       {"", "plain", "a b", "it's", "'", "''", "$HOME", "${x:-y}", "back\\slash", "\\'", "\"double\"", "`id`",
        "$(id)", "a;b|c&d>e<f", "*", "?", "[a]", "~", "#not a comment", "!x", "tab\tand\nnewline", "  ",
        "exec:python3 -c 'print(\"$1\")' \\ x"})
    EXPECT_EQ(shell_output("printf %s " + shell_quote(word)), word) << shell_quote(word);
}

TEST(ShellQuote, AFailureReplayLineParsesBackToItsArguments) {
  const std::string kernel_name = "exec:python3 -c 'import sys; print(\"$0\", sys.argv)' it\\'s";
  BrokenKernel kernel;  // every output off by one: matches-reference fails on the first case
  kernel.name_ = kernel_name;
  kernel.after = [](ReferenceOutputs& out, const Problem&) {
    for (double& x : out.o) x += 1;
  };
  auto model = make_reference_kernel(Precision::fp32, Algorithm::recurrent);
  props::RunOptions options;
  options.properties = {"matches-reference"};
  options.cases = 5;
  const props::PropertyReport report = run_property(kernel, *model, options);
  ASSERT_EQ(report.failed, 1);
  ASSERT_FALSE(report.replay.empty());

  std::ostringstream printed;
  props::print_reports(printed, {report}, kernel_name);
  const std::string text = printed.str(), prefix = "replay: ";
  const auto at = text.find("\n" + prefix);
  ASSERT_NE(at, std::string::npos) << text;
  const std::string line = text.substr(at + 1 + prefix.size(), text.find('\n', at + 1) - at - 1 - prefix.size());
  const std::vector<std::string> want{"kda-oracle", "check",        "--kernel", kernel_name, "--properties",
                                      "matches-reference", "--replay", report.replay};
  EXPECT_EQ(shell_words(line), want) << line;
}

}  // namespace
}  // namespace kda::test
