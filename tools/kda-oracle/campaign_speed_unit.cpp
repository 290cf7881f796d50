// A campaign's speed unit: each benchmark shape (campaign_bench_shapes.hpp) the implementation can
// take, called once to warm up (compilation, autotuning) and then `bench_calls` times; the median call,
// as tokens per second. A call's seconds are the adapter's own when it reports them (the Python kit
// times each call, CUDA-synchronised), else the wall time of the call through kda-oracle.
#include <algorithm>
#include <chrono>

#include "campaign_bench_shapes.hpp"
#include "campaign_unit_run.hpp"

namespace kda::cli {

namespace {

std::string rejection(const RunOutcome& outcome) {
  if (outcome.status == RunOutcome::Status::failed) return "the call failed: " + outcome.message;
  std::string rules;
  for (const auto& v : outcome.violations) rules += (rules.empty() ? "" : ", ") + std::string(name_of(v.rule));
  return "the kernel rejected the call: " + rules;
}

Json time_shape(Kernel& kernel, const BenchShape& shape, int calls) {
  Json j{{"shape", shape.name}};
  std::int64_t tokens = 0;
  for (auto length : shape.spec.lengths) tokens += length;
  j["tokens"] = tokens;
  Problem problem = make_problem(shape.spec);
  if (auto why = kernel.capabilities().unsupported(problem); !why.empty()) {
    j["skipped"] = "outside the kernel's capabilities: " + why;
    return j;
  }
  if (auto violations = validate(problem, kernel.profile()); !violations.empty()) {
    j["skipped"] = "outside the kernel's profile: " + std::string(name_of(violations.front().rule));
    return j;
  }
  fill_random_parallel(problem, 1);
  std::vector<double> seconds;
  bool adapter_timed = false;
  for (int call = 0; call <= calls; ++call) {  // call 0 warms up
    const auto start = std::chrono::steady_clock::now();
    const RunOutcome outcome = kernel.run(problem);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (outcome.status != RunOutcome::Status::ok) {
      j["skipped"] = rejection(outcome);
      return j;
    }
    if (call > 0) seconds.push_back(outcome.seconds.value_or(wall));
    adapter_timed = outcome.seconds.has_value();
  }
  std::sort(seconds.begin(), seconds.end());
  const double median = seconds[seconds.size() / 2];
  j["calls"] = calls;
  j["timing"] = adapter_timed ? "adapter" : "wall";
  j["median_seconds"] = median;
  j["tokens_per_second"] = static_cast<double>(tokens) / median;
  return j;
}

}  // namespace

Json run_speed_unit(const Unit& unit, const UnitContext& context) {
  registry::KernelUnderTest kut = start_kernel(unit.implementation->kernel, context);
  const auto start = std::chrono::steady_clock::now();
  Json shapes = Json::array();
  int timed = 0;
  for (const auto& shape : bench_shapes(context.bench_shapes)) {
    shapes.push_back(time_shape(*kut.kernel, shape, context.bench_calls));
    timed += !shapes.back().contains("skipped");
  }
  Json j = unit_header(unit, context);
  j["adapter"] = kut.kernel->name();
  j["status"] = timed ? "pass" : "skipped";
  j["reason"] = timed ? Json() : Json("the kernel takes none of the benchmark shapes");
  j["cases"] = timed;
  j["seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  j["shape_set"] = context.bench_shapes;
  j["shapes"] = shapes;
  return j;
}

}  // namespace kda::cli
