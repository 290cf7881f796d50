// `kda-oracle golden verify --golden FILE (--kernel NAME | --results FILE)`: judges a kernel on every
// case of a golden file, run live or read from a results file computed elsewhere.
#include <cstdio>
#include <optional>

#include "golden_commands.hpp"
#include "golden_report.hpp"
#include "kda/golden/verify.hpp"
#include "kda/registry/kernel_registry.hpp"
#include "progress.hpp"

namespace kda::cli {

namespace {
struct VerifyArgs {
  std::string golden;
  std::string kernel;
  std::string results;
  std::string save_results;
};
}  // namespace

Command add_golden_verify(CLI::App& golden) {
  auto* sub = golden.add_subcommand("verify", "judge a kernel, or stored results, on every case of a golden file");
  auto args = std::make_shared<VerifyArgs>();
  sub->add_option("--golden", args->golden, "the golden file")->required();
  auto* kernel = sub->add_option("--kernel", args->kernel, "run this kernel on every case");
  auto* results = sub->add_option("--results", args->results, "judge the outputs stored in this results file");
  auto* save = sub->add_option("--save-results", args->save_results,
                               "with --kernel: also store what the kernel did, as a results file");
  kernel->excludes(results);
  save->needs(kernel);
  return {sub, [args] {
            if (args->kernel.empty() == args->results.empty())
              throw CLI::ValidationError("give one of --kernel and --results");
            const golden::File file = golden::File::open(args->golden);
            std::vector<golden::CaseReport> reports;
            if (!args->kernel.empty()) {
              registry::KernelUnderTest kut = registry::make_kernel(args->kernel);
              std::optional<golden::ResultsFile> saved;
              if (!args->save_results.empty()) saved = golden::ResultsFile::create(args->save_results, kut.kernel->name());
              // The file's bounds come from fp32 models; a kernel declaring coarser arithmetic gets its own model's
              // where larger (golden::verify_case).
              const Arithmetic arithmetic = kut.kernel->capabilities().arithmetic;
              std::printf("golden verify: %s against kernel %s (bounds: the file's%s)\n", args->golden.c_str(),
                          kut.kernel->name().c_str(),
                          arithmetic == Arithmetic::fp32
                              ? ""
                              : (" or " + registry::precision_model_name(kut) + "'s, the larger").c_str());
              reports = golden::verify(file, *kut.kernel, ProgressLine("verify"), saved ? &*saved : nullptr);
              if (saved) saved->close();
            } else {
              const auto stored = golden::ResultsFile::open(args->results);
              std::printf("golden verify: %s against the results of kernel %s in %s\n", args->golden.c_str(),
                          stored.kernel().c_str(), args->results.c_str());
              reports = golden::verify(file, stored, ProgressLine("verify"));
            }
            return print_report(stdout, reports) ? 0 : 1;
          }};
}

}  // namespace kda::cli
