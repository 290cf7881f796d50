// `kda-oracle check`: runs the property catalogue against a kernel and prints a table (--results: also as JSON).
#include <cctype>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>

#include "check_results.hpp"
#include "commands.hpp"
#include "kda/golden/call_import.hpp"
#include "kda/golden/case_io.hpp"
#include "kda/properties/comparison.hpp"
#include "kda/properties/runner.hpp"
#include "kda/properties/shell_quote.hpp"
#include "kda/properties/sharding.hpp"
#include "kda/reference.hpp"
#include "kda/registry/kernel_registry.hpp"
#include "progress.hpp"

namespace kda::cli {

namespace {
struct CheckArgs {
  std::string kernel = "ref-fp32";
  std::string scale = "small";  // props::Scale: the generator limits (props::limits_for)
  std::vector<std::string> properties;
  props::RunOptions run;
  bool coverage = false;
  bool list = false;
  std::string save_failures = "kda-failures";
  std::string shard;   // "i/n"; empty: GTEST_TOTAL_SHARDS / GTEST_SHARD_INDEX, else unsharded
  double timeout = 60;  // seconds per exec adapter request
  std::string results;  // --results: the JSON results file; empty: none
  std::map<std::string, std::filesystem::path> saved;  // property -> its saved failing case
  std::string around;   // a call file (JSON): cases are drawn around it (props::GenLimits::around)
};

// The kernel's outputs on a case, from running it once more on a copy (the property's own run is gone
// by the time the shrunk case is saved); none when the kernel does not run it.
std::optional<ReferenceOutputs> kernel_outputs(Kernel& kernel, const Problem& problem) {
  Problem ran = deep_copy(problem);
  if (kernel.run(ran).status != RunOutcome::Status::ok) return std::nullopt;
  return props::read_outputs(ran);
}

// Saves a shrunk failing case as a golden-schema HDF5 case with the fp64 expected outputs and the
// kernel's, so it can be inspected, plotted (scripts/plot_failure.py), sent to another kernel or
// attached to a bug report.
void save_case(CheckArgs& args, Kernel& kernel, const std::string& property, const Problem& problem,
               std::uint64_t seed) {
  std::filesystem::create_directories(args.save_failures);
  std::string stem = args.kernel + "-" + property;  // plugin:/path/x.so names a path: flattened
  for (char& c : stem)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
  const auto path = std::filesystem::path(args.save_failures) / (stem + ".h5");
  golden::Case c{deep_copy(problem), {{"property", property}, {"kernel", args.kernel}, {"seed", std::to_string(seed)}},
                 {}, {}, {}};
  if (validate(problem, profile_strict()).empty()) {  // the outputs of a call that breaks the contract mean nothing
    c.expected = run_reference<double>(problem, Algorithm::recurrent);
    c.kernel_outputs = kernel_outputs(kernel, problem);
  }
  auto file = golden::File::create(path, {{"purpose", "a failing case saved by kda-oracle check"}});
  file.write_case(property, c);
  file.close();
  args.saved[property] = path;
  std::cout << "saved the failing case of " << property << " to " << path.string() << '\n';
}
// The seed of cases drawn around a recorded call; the call must be valid (an invalid one seeds nothing).
std::shared_ptr<const props::CaseSpec> around_seed(const std::string& path, std::string& note) {
  const golden::ImportedCall call = golden::import_call(path, std::nullopt, profile_strict(), true);
  if (call.violation)
    throw std::invalid_argument("--around " + path + ": the call breaks " + std::string(name_of(call.violation->rule)) +
                                " (" + call.violation->message + "); only a valid call seeds cases");
  auto seed = std::make_shared<const props::CaseSpec>(props::seed_spec(call.problem, &note));
  note = call.entry + ", " + seed->describe() + "; " + note;
  return seed;
}
}  // namespace

Command add_check(CLI::App& app) {
  auto* sub = app.add_subcommand("check", "run the property catalogue against a kernel");
  auto args = std::make_shared<CheckArgs>();
  sub->add_option("--kernel", args->kernel, "kernel under test")->capture_default_str();
  sub->add_option("--properties", args->properties, "comma-separated properties (default: all)")->delimiter(',');
  sub->add_option("--cases", args->run.cases, "successful cases per property")
      ->capture_default_str()
      ->check(at_least(1));
  sub->add_option("--seed", args->run.seed, "seed; each property derives its own from it")
      ->capture_default_str()
      ->check(at_least(0));
  sub->add_option("--max-size", args->run.max_size, "rapidcheck size ceiling, 0..100")
      ->capture_default_str()
      ->check(CLI::Range(0, 100));
  sub->add_option("--scale", args->scale,
                  "case sizes: small (quick, every contract edge), realistic (model shapes: head dims 64-256, up to 64 "
                  "heads, 16k tokens, 256 sequences, decode batches at N*HV = 128, 256, ...) or stress (realistic plus "
                  "pools addressed past element 2^31: several GiB a case)")
      ->capture_default_str()
      ->check(CLI::IsMember({"small", "realistic", "stress"}));
  sub->add_option("--replay", args->run.replay, "replay one shrunk failure: the string a failure printed");
  sub->add_flag("--coverage", args->coverage, "print the distribution of case categories");
  sub->add_option("--save-failures", args->save_failures, "folder for failing cases as HDF5 files ('' to skip)")
      ->capture_default_str();
  sub->add_option("--shard", args->shard,
                  "run shard i of n (i/n, from 0): every property's cases from the shard's own seed; default: "
                  "GTEST_SHARD_INDEX/GTEST_TOTAL_SHARDS when set");
  sub->add_option("--timeout", args->timeout, "seconds an exec: adapter may take per case")
      ->capture_default_str()
      ->check(at_least(0, false));
  sub->add_option("--results", args->results,
                  "write the results as JSON to this file (schema kda-oracle/check-results), also when "
                  "properties fail");
  sub->add_option("--around", args->around,
                  "draw every case around this recorded call (docs/golden.md): its entry's options, dtypes, layouts and "
                  "state source kept, the data redrawn, sequence lengths, batch and heads varied, failures shrinking "
                  "towards the call's own geometry")
      ->check(CLI::ExistingFile);
  sub->add_flag("--list", args->list, "list the properties and kernels (Markdown tables), then exit");
  return {sub, [args] {
            if (args->list) {
              print_tables(std::cout);
              return 0;
            }
            const auto started = std::chrono::system_clock::now();
            const auto start = std::chrono::steady_clock::now();
            const std::uint64_t seed = args->run.seed;
            const auto shard = args->shard.empty() ? props::shard_from_environment() : props::parse_shard(args->shard);
            if (shard) args->run.seed = props::shard_seed(seed, *shard);
            args->run.properties = args->properties;
            props::validate(args->run);  // before a kernel starts (an exec adapter's process, a device)
            registry::KernelUnderTest kut = registry::make_kernel(
                args->kernel, {std::chrono::milliseconds(static_cast<std::int64_t>(args->timeout * 1000))});
            const props::Scale scale = props::parse_scale(args->scale);
            props::CheckContext context{*kut.kernel, *kut.model, props::limits_for(scale)};
            context.policy.compute_roundoff = kut.compute_roundoff;
            std::string around_note;
            if (!args->around.empty()) context.limits.around = around_seed(args->around, around_note);
            args->run.progress = PropertyProgressLine();
            if (!args->save_failures.empty())
              // A plain pointer: the callback is a member of *args (a copy of the shared_ptr was a cycle, leaked).
              args->run.on_failing_case = [a = args.get(), k = kut.kernel.get()](const std::string& property,
                                                                                  const Problem& problem) {
                save_case(*a, *k, property, problem, props::property_seed(a->run.seed, property));
              };
            std::cout << "kda-oracle check --kernel " << props::shell_quote(args->kernel) << " --seed " << seed
                      << " --cases " << args->run.cases;
            if (scale != props::Scale::small) std::cout << " --scale " << args->scale;
            if (!args->around.empty()) std::cout << " --around " << props::shell_quote(args->around);
            if (shard)
              std::cout << " --shard " << shard->index << '/' << shard->count << " (shard seed " << args->run.seed
                        << ')';
            std::cout << " (precision model " << registry::precision_model_name(kut) << ")\n";
            if (!around_note.empty()) std::cout << "cases around the call: " << around_note << '\n';
            const auto reports = props::run_properties(context, args->run);
            props::print_reports(std::cout, reports, args->kernel, scale, args->around);
            if (args->coverage) props::print_coverage(std::cout, reports);
            if (!args->results.empty()) {
              const CheckRun run{args->kernel, kut.kernel->name(), scale, seed, args->run.cases, shard,
                                 registry::precision_model_name(kut), started,
                                 std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
                                 args->saved, args->around};
              write_check_results(args->results, run, reports);
              std::cout << "results written to " << args->results << '\n';
            }
            bool ok = true;  // skipped properties are not failures
            for (const auto& r : reports) ok &= r.ok();
            return ok ? 0 : 1;
          }};
}

}  // namespace kda::cli
