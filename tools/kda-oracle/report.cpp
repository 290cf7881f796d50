// `kda-oracle report merge RESULTS_DIR... --out REPORT_DIR`: one conformance report from the results
// folders of a campaign's shards (or of one machine). Exit status: 0 written, 1 written and a unit
// failed, 2 a usage or file error (a conflicting duplicate unit, folders of different campaigns).
#include <iostream>

#include "commands.hpp"
#include "report_merge.hpp"

namespace kda::cli {

namespace {
struct MergeArgs {
  std::vector<std::string> results;
  std::string out;
  ReportOptions report;
};
}  // namespace

Command add_report(CLI::App& app) {
  auto* report = app.add_subcommand("report", "conformance reports of campaign results");
  report->require_subcommand(1);
  auto* merge = report->add_subcommand("merge", "merge campaign results folders into one report");
  auto args = std::make_shared<MergeArgs>();
  merge->add_option("results", args->results, "campaign results folders (--out of each shard)")->required();
  merge->add_option("--out", args->out, "the report folder (conformance.md, index.html, cases/, plots/)")->required();
  merge->add_option("--plotter", args->report.plotter, "the failure plotter, run as PLOTTER CASE.h5 PLOT.svg")
      ->capture_default_str();
  merge->add_flag("!--no-timings", args->report.timings,
                  "leave out seconds, speeds and dates (reports of the same results compare equal)");
  return {report, [args] {
            std::vector<std::filesystem::path> dirs(args->results.begin(), args->results.end());
            const ReportSummary summary = write_report(dirs, args->out, args->report);
            std::cout << "report merge: " << summary.done << " of " << summary.units << " units, " << summary.failed
                      << " failed, " << summary.not_run << " not run; " << args->out << "/conformance.md, "
                      << args->out << "/index.html\n";
            return summary.failed ? 1 : 0;
          }};
}

}  // namespace kda::cli
