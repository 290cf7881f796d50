// Speed of golden files (not a test): generating the standard suite (every core) and verifying it,
// with the fp32 reference run live and from a results file of its outputs. Counters: cases per
// second and the megabytes written (generate) or read (verify). Files go to the temp directory.
#include <benchmark/benchmark.h>

#include <unistd.h>

#include <filesystem>

#include "kda/golden/generate.hpp"
#include "kda/golden/verify.hpp"
#include "kda/reference_kernel.hpp"

namespace {

namespace fs = std::filesystem;

fs::path temp(const std::string& name) {
  return fs::temp_directory_path() / ("kda_golden_bench_" + std::to_string(::getpid()) + "_" + name);
}

std::size_t case_count(const kda::golden::Suite& s) { return s.cases.size() + s.contract_cases.size(); }

void report(benchmark::State& state, std::size_t cases, const fs::path& file, const char* bytes_counter) {
  const auto n = static_cast<double>(state.iterations());
  state.counters["cases"] = benchmark::Counter(n * static_cast<double>(cases), benchmark::Counter::kIsRate);
  state.counters[bytes_counter] = static_cast<double>(fs::file_size(file)) / 1e6;
}

// The standard suite, generated once for the verify benchmarks and removed at exit.
struct StandardFile {
  fs::path path = temp("standard.h5");
  StandardFile() { kda::golden::generate(kda::golden::standard_suite(), path); }
  ~StandardFile() { fs::remove(path); }
};

const fs::path& standard_file() {
  static const StandardFile file;
  return file.path;
}

void BM_GenerateStandard(benchmark::State& state) {
  const fs::path file = temp("generated.h5");
  for (auto _ : state) kda::golden::generate(kda::golden::standard_suite(), file);
  report(state, case_count(kda::golden::standard_suite()), file, "MB_written");
  fs::remove(file);
}

void BM_VerifyStandardLive(benchmark::State& state) {
  const kda::golden::File golden = kda::golden::File::open(standard_file());
  auto kernel = kda::make_reference_kernel(kda::Precision::fp32, kda::Algorithm::recurrent);
  for (auto _ : state) benchmark::DoNotOptimize(kda::golden::verify(golden, *kernel));
  report(state, golden.case_names().size(), standard_file(), "MB_read");
}

void BM_VerifyStandardResults(benchmark::State& state) {
  const kda::golden::File golden = kda::golden::File::open(standard_file());
  const fs::path results = temp("results.h5");
  {
    auto kernel = kda::make_reference_kernel(kda::Precision::fp32, kda::Algorithm::recurrent);
    auto out = kda::golden::ResultsFile::create(results, kernel->name());
    kda::golden::verify(golden, *kernel, {}, &out);
    out.close();
  }
  const auto stored = kda::golden::ResultsFile::open(results);
  for (auto _ : state) benchmark::DoNotOptimize(kda::golden::verify(golden, stored));
  report(state, golden.case_names().size(), results, "MB_read");
  state.counters["MB_read"] += static_cast<double>(fs::file_size(standard_file())) / 1e6;
  fs::remove(results);
}

BENCHMARK(BM_GenerateStandard)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_VerifyStandardLive)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_VerifyStandardResults)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
