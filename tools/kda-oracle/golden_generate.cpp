// `kda-oracle golden generate --suite NAME --out FILE`: writes a suite's golden file.
#include <chrono>
#include <cstdio>

#include "golden_commands.hpp"
#include "kda/golden/generate.hpp"
#include "progress.hpp"

namespace kda::cli {

namespace {
struct GenerateArgs {
  std::string suite;
  std::string out;
  unsigned threads = 0;
};
}  // namespace

Command add_golden_generate(CLI::App& golden) {
  auto* sub = golden.add_subcommand("generate", "write a suite's cases, expected outputs and tolerances");
  auto args = std::make_shared<GenerateArgs>();
  sub->add_option("--suite", args->suite, "the suite")->required()->check(CLI::IsMember(golden::suite_names()));
  sub->add_option("--out", args->out, "the golden file to write (replaced)")->required();
  sub->add_option("--threads", args->threads, "cases computed at once (0: one per core); the file is the same")
      ->capture_default_str();
  return {sub, [args] {
            const golden::Suite& suite = *golden::find_suite(args->suite);
            const auto start = std::chrono::steady_clock::now();
            const auto stats = golden::generate(suite, args->out, {args->threads, ProgressLine("generate")});
            const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            std::printf("golden generate: suite %s, %zu cases + %zu contract cases, %s (%.2f MB) in %.1f s\n",
                        suite.name.c_str(), stats.cases, stats.contract_cases, args->out.c_str(),
                        static_cast<double>(stats.bytes) / 1e6, seconds);
            return 0;
          }};
}

}  // namespace kda::cli
