// `kda-oracle check`: runs the property catalogue against a kernel and prints a table.
#include <iostream>

#include "commands.hpp"
#include "kda/properties/runner.hpp"
#include "kernel_registry.hpp"

namespace kda::cli {

namespace {
struct CheckArgs {
  std::string kernel = "ref-fp32";
  std::vector<std::string> properties;
  props::RunOptions run;
  bool coverage = false;
  bool list = false;
};
}  // namespace

Command add_check(CLI::App& app) {
  auto* sub = app.add_subcommand("check", "run the property catalogue against a kernel");
  auto args = std::make_shared<CheckArgs>();
  sub->add_option("--kernel", args->kernel, "kernel under test")->capture_default_str();
  sub->add_option("--properties", args->properties, "comma-separated properties (default: all)")->delimiter(',');
  sub->add_option("--cases", args->run.cases, "successful cases per property")->capture_default_str();
  sub->add_option("--seed", args->run.seed, "seed; each property derives its own from it")->capture_default_str();
  sub->add_option("--max-size", args->run.max_size, "rapidcheck size ceiling, 0..100")->capture_default_str();
  sub->add_option("--replay", args->run.replay, "replay one shrunk failure: the string a failure printed");
  sub->add_flag("--coverage", args->coverage, "print the distribution of case categories");
  sub->add_flag("--list", args->list, "list the properties and kernels, then exit");
  return {sub, [args] {
            if (args->list) {
              for (const auto& p : props::catalogue()) std::cout << p.name << "\n    " << p.doc << "\n";
              std::cout << "kernels:";
              for (const auto& k : kernel_names()) std::cout << ' ' << k;
              std::cout << '\n';
              return 0;
            }
            KernelUnderTest kut = make_kernel(args->kernel);
            props::CheckContext context{*kut.kernel, *kut.model};
            args->run.properties = args->properties;
            args->run.progress = &std::cerr;
            std::cout << "kda-oracle check --kernel " << args->kernel << " --seed " << args->run.seed << " --cases "
                      << args->run.cases << " (precision model " << kut.model->name() << ")\n";
            const auto reports = props::run_properties(context, args->run);
            props::print_reports(std::cout, reports);
            if (args->coverage) props::print_coverage(std::cout, reports);
            bool ok = true;
            for (const auto& r : reports) ok &= r.ok();
            return ok ? 0 : 1;
          }};
}

}  // namespace kda::cli
