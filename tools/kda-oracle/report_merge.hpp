#pragma once
// `kda-oracle report merge`'s work, also the end of every campaign: the conformance report of one or
// more campaign folders (report_results.hpp) as REPORT_DIR/conformance.md and REPORT_DIR/index.html,
// with each failure's case copied to REPORT_DIR/cases/ and plotted into REPORT_DIR/plots/.
#include <filesystem>
#include <string>
#include <vector>

namespace kda::cli {

struct ReportOptions {
  // Run as `<plotter> CASE.h5 PLOT.svg` through /bin/sh from the working directory.
  std::string plotter = "python3 scripts/plot_failure.py";
  bool timings = true;  // false: no seconds, speeds or dates (reports of equal results compare equal)
};

struct ReportSummary {
  int units = 0;    // planned
  int done = 0;
  int failed = 0;   // check, golden and speed units that failed
  int not_run = 0;
};

ReportSummary write_report(const std::vector<std::filesystem::path>& results_dirs,
                           const std::filesystem::path& report_dir, const ReportOptions& options);

}  // namespace kda::cli
