// Cases per second of each catalogue property against the fp64 and fp32 CPU references at the
// default generator limits: the oracle's throughput, which sets how many cases a CI minute buys.
//   ./build/bench/properties_bench
#include <benchmark/benchmark.h>

#include "kda/properties/runner.hpp"
#include "kda/reference_kernel.hpp"

namespace {

void BM_Property(benchmark::State& state, std::string property, kda::Precision precision) {
  auto kernel = kda::make_reference_kernel(precision, kda::Algorithm::recurrent);
  auto model = kda::make_reference_kernel(precision, kda::Algorithm::recurrent);
  kda::props::CheckContext context{*kernel, *model};
  kda::props::RunOptions options;
  options.properties = {property};
  options.cases = 50;
  std::int64_t cases = 0;
  for (auto _ : state) {
    options.seed = static_cast<std::uint64_t>(cases) + 1;  // fresh cases every iteration
    const auto reports = kda::props::run_properties(context, options);
    if (!reports.front().ok()) state.SkipWithError(reports.front().failure.c_str());
    cases += reports.front().cases;
  }
  state.counters["cases/s"] = benchmark::Counter(static_cast<double>(cases), benchmark::Counter::kIsRate);
}

const int registered = [] {
  for (const auto& p : kda::props::catalogue())
    for (auto [name, precision] : {std::pair{"fp64", kda::Precision::fp64}, std::pair{"fp32", kda::Precision::fp32}})
      benchmark::RegisterBenchmark(("property/" + p.name + "/" + name).c_str(), BM_Property, p.name, precision)
          ->Unit(benchmark::kMillisecond)
          ->MeasureProcessCPUTime()
          ->UseRealTime();
  return 0;
}();

}  // namespace

BENCHMARK_MAIN();
