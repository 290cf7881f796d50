// `kda-oracle campaign`: every implementation of a plan through the property catalogue, the golden
// suite and the benchmark shapes, one unit at a time, each unit's result a JSON file under
// RESULTS_DIR/units/. A unit whose file exists is not run again, so a rerun continues where the last
// run stopped; --budget stops starting units after that many seconds (exit status 3). At the end the
// folder's report is written (RESULTS_DIR/report/). Exit status: 0 every unit done and none failed,
// 1 a unit failed, 2 a usage or file error, 3 incomplete (rerun to continue).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>

#include "campaign_unit_run.hpp"
#include "commands.hpp"
#include "kda/properties/runner.hpp"
#include "report_merge.hpp"
#include "stderr_capture.hpp"

namespace kda::cli {

namespace {

namespace fs = std::filesystem;

struct CampaignArgs {
  std::string plan, out, shard;
  double budget = 0;  // seconds; 0: no limit
  bool dry_run = false;
  UnitSelection selection;
  UnitContext context;
  ReportOptions report;
};

// The machine's GPU as nvidia-smi names it, "none" without one.
std::string gpu_name() {
  FILE* pipe = popen("nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null", "r");
  if (!pipe) return "none";
  char line[256] = {};
  const bool read = std::fgets(line, sizeof line, pipe) != nullptr;
  const int status = pclose(pipe);
  std::string name = read && status == 0 ? line : "";
  while (!name.empty() && (name.back() == '\n' || name.back() == '\r')) name.pop_back();
  return name.empty() ? "none" : name;
}

// What the campaign is (plan and settings) and its units, RESULTS_DIR/campaign.json: a folder holds
// the results of one campaign only, and the report merge checks the folders it merges agree.
Json describe(const Plan& plan, const CampaignArgs& args, const std::vector<Unit>& units) {
  Json j;
  j["schema"] = "kda-oracle/campaign";
  j["version"] = 1;
  j["implementations"] = Json::array();
  for (const auto& impl : plan.implementations)
    j["implementations"].push_back({{"name", impl.name}, {"library", impl.library}, {"kind", name_of(impl.kind)},
                                    {"kernel", impl.kernel}, {"golden_kernel", impl.golden_kernel},
                                    {"bench", impl.bench}});
  j["not_run"] = Json::array();
  for (const auto& n : plan.not_run)
    j["not_run"].push_back({{"library", n.library}, {"name", n.name}, {"reason", n.reason}});
  const auto& s = args.selection;
  j["settings"] = {{"seed", args.context.seed},
                   {"implementations", s.implementations},
                   {"scales", s.scales},
                   {"properties", s.properties},
                   {"cases",
                    {{"recurrent", s.cases.recurrent},
                     {"chunked", s.cases.chunked},
                     {"realistic_recurrent", s.cases.realistic_recurrent},
                     {"realistic_chunked", s.cases.realistic_chunked}}},
                   {"golden_suite", s.golden ? args.context.golden_suite : ""},
                   {"bench_shapes", args.context.bench_shapes},
                   {"bench_calls", args.context.bench_calls}};
  j["units"] = Json::array();
  for (const auto& u : units) j["units"].push_back(u.id());
  return j;
}

void write_atomically(const fs::path& file, const Json& json) {
  fs::create_directories(file.parent_path());
  fs::path partial = file;
  partial += ".partial";
  std::ofstream(partial) << json.dump(2) << '\n';
  fs::rename(partial, file);
}

void record_campaign(const fs::path& file, const Json& campaign) {
  if (fs::exists(file)) {
    std::ifstream in(file);
    if (Json::parse(in, nullptr, false) != campaign)
      throw std::runtime_error(file.string() +
                               " describes another campaign (the plan or the settings differ): use another --out, "
                               "or delete the folder to start over");
    return;
  }
  write_atomically(file, campaign);
}

std::string duration(double seconds) {
  char text[32];
  if (seconds < 120) std::snprintf(text, sizeof text, "%.0f s", seconds);
  else if (seconds < 7200) std::snprintf(text, sizeof text, "%.0f min", seconds / 60);
  else std::snprintf(text, sizeof text, "%.1f h", seconds / 3600);
  return text;
}

Json run_unit(const Unit& unit, const UnitContext& context) {
  switch (unit.type) {
    case UnitType::check: return run_check_unit(unit, context);
    case UnitType::golden: return run_golden_unit(unit, context);
    case UnitType::speed: return run_speed_unit(unit, context);
  }
  return {};
}

int run_campaign(CampaignArgs& args) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const Plan plan = load_plan(args.plan);
  for (const auto& p : args.selection.properties)
    if (!props::find_property(p)) throw std::invalid_argument("--properties: unknown property '" + p + "'");
  for (const auto& name : args.selection.implementations)
    if (std::none_of(plan.implementations.begin(), plan.implementations.end(),
                     [&](const Implementation& i) { return i.name == name; }))
      throw std::invalid_argument("--implementations: the plan " + args.plan + " has no implementation '" + name + "'");
  const auto all = enumerate_units(plan, args.selection);
  const auto shard = !args.shard.empty() ? props::parse_shard(args.shard)
                                         : props::shard_from_environment().value_or(props::Shard{});
  const auto mine = units_of_shard(all, shard);
  std::cerr << "campaign: " << all.size() << " units, " << mine.size() << " in shard " << shard.index << '/'
            << shard.count << '\n';
  if (args.dry_run) {
    for (const auto& unit : mine) std::cout << unit.id() << '\n';
    return 0;
  }
  const fs::path out = args.out;
  args.context.results_dir = out;
  args.context.gpu = gpu_name();
  record_campaign(out / "campaign.json", describe(plan, args, all));

  std::size_t pending = 0, ran = 0;
  for (const auto& unit : mine) pending += !fs::exists(unit.file(out));
  const std::size_t already = mine.size() - pending;
  std::map<std::string, std::string> not_started;  // kernel -> why: its other units are not run either
  bool incomplete = false;
  for (std::size_t i = 0; i < mine.size(); ++i) {
    const Unit& unit = mine[i];
    const fs::path file = unit.file(out);
    if (fs::exists(file)) continue;
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    if (args.budget > 0 && elapsed >= args.budget) {
      incomplete = true;
      break;
    }
    const auto unit_start = Clock::now();
    Json result;
    const std::string kernel =
        unit.type == UnitType::golden ? unit.implementation->golden_kernel : unit.implementation->kernel;
    if (const auto it = not_started.find(kernel); it != not_started.end()) {
      result = not_run_unit(unit, args.context, it->second);
    } else {
      StderrCapture log(out / "logs" / (unit.id() + ".log"));
      try {
        result = run_unit(unit, args.context);
      } catch (const KernelNotStarted& e) {
        const std::string tail = log.tail(6);
        const std::string why = "the kernel did not start: " + (tail.empty() ? std::string(e.what()) : tail);
        not_started[kernel] = why;
        result = not_run_unit(unit, args.context, why);
      }
    }
    write_atomically(file, result);
    ++ran;
    const double total = std::chrono::duration<double>(Clock::now() - start).count();
    const double left = total / static_cast<double>(ran) * static_cast<double>(pending - ran);
    std::cerr << "campaign: unit " << already + ran << '/' << mine.size() << ' ' << unit.id() << ": "
              << result.value("status", "?") << " ("
              << duration(std::chrono::duration<double>(Clock::now() - unit_start).count()) << "); elapsed "
              << duration(total) << ", about " << duration(left) << " left\n";
  }
  const ReportSummary summary = write_report({out}, out / "report", args.report);
  std::cout << "campaign: " << summary.done << " of " << summary.units << " units done, " << summary.failed
            << " failed, " << summary.not_run << " not run; report: " << (out / "report" / "conformance.md").string()
            << '\n';
  if (incomplete) {
    std::cout << "campaign: incomplete (the budget of " << args.budget << " s is spent), rerun to continue\n";
    return 3;
  }
  return summary.failed ? 1 : 0;
}

}  // namespace

Command add_campaign(CLI::App& app) {
  auto* sub = app.add_subcommand("campaign", "run every implementation of a plan through the oracle (resumable)");
  auto args = std::make_shared<CampaignArgs>();
  auto& s = args->selection;
  auto& c = args->context;
  sub->add_option("--plan", args->plan, "the plan: a folder of <library>.json files")->required();
  sub->add_option("--out", args->out, "the results folder (a rerun continues the campaign there)");
  sub->add_option("--implementations", s.implementations,
                  "comma-separated implementations of the plan to run (default: all)")
      ->delimiter(',');
  sub->add_option("--scales", s.scales, "comma-separated scales: small, realistic, stress")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::IsMember({"small", "realistic", "stress"}));
  sub->add_option("--properties", s.properties, "comma-separated properties (default: the whole catalogue)")
      ->delimiter(',');
  sub->add_option("--recurrent-cases", s.cases.recurrent, "cases per property at small scale, recurrent kind")
      ->capture_default_str()
      ->check(at_least(1));
  sub->add_option("--chunked-cases", s.cases.chunked, "cases per property at small scale, chunked kind")
      ->capture_default_str()
      ->check(at_least(1));
  sub->add_option("--realistic-recurrent-cases", s.cases.realistic_recurrent,
                  "cases per property at realistic and stress scale, recurrent kind")
      ->capture_default_str()
      ->check(at_least(1));
  sub->add_option("--realistic-chunked-cases", s.cases.realistic_chunked,
                  "cases per property at realistic and stress scale, chunked kind")
      ->capture_default_str()
      ->check(at_least(1));
  sub->add_option("--seed", c.seed, "seed of every check unit (the same in every shard)")->capture_default_str();
  sub->add_option("--timeout", c.timeout, "seconds an exec: adapter may take per request")
      ->capture_default_str()
      ->check(at_least(0, false));
  sub->add_option("--golden-suite", c.golden_suite, "the golden suite verified against each implementation")
      ->capture_default_str();
  sub->add_flag("!--no-golden", s.golden, "no golden units");
  sub->add_option("--bench-shapes", c.bench_shapes, "standard (bench/gpu's shapes) or tiny (CPU tests)")
      ->capture_default_str()
      ->check(CLI::IsMember({"standard", "tiny"}));
  sub->add_option("--bench-calls", c.bench_calls, "timed calls per benchmark shape")
      ->capture_default_str()
      ->check(at_least(1));
  sub->add_option("--budget", args->budget, "start no unit after this many seconds (exit status 3: rerun to continue)")
      ->check(at_least(0));
  sub->add_option("--shard", args->shard,
                  "run shard i of n (i/n, from 0); default: SLURM_ARRAY_TASK_ID/COUNT, JOB_COMPLETION_INDEX with "
                  "KDA_SHARD_COUNT, GTEST_SHARD_INDEX/GTEST_TOTAL_SHARDS");
  sub->add_option("--plotter", args->report.plotter, "the failure plotter, run as PLOTTER CASE.h5 PLOT.svg")
      ->capture_default_str();
  sub->add_flag("--dry-run", args->dry_run, "list this shard's units and exit");
  return {sub, [args] {
            if (args->out.empty() && !args->dry_run) throw CLI::ValidationError("--out is required");
            return run_campaign(*args);
          }};
}

}  // namespace kda::cli
