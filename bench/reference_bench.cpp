// Speed of the CPU reference (not a test): token-heads per second per core, and how it scales with threads.
//   prefill       H = HV = 4, K = V = 128, 32 sequences of 256 tokens (128 sequence x head pairs), dense fp32 states
//   decode        H = HV = 4, K = V = 128, 256 sequences of one token (1024 pairs), fp32 state pool; the
//                 outputs of one call are reused by the next (run_reference into a kept ReferenceOutputs)
//   decode_fresh  the same with fresh outputs every call (128 MiB of fp64 states to fault in and zero)
// Inputs fp32 with l2norm on q and k. Each case runs at 1, 2, 4, 8 and 16 threads, those above the
// machine's cores skipped. Counters: token_heads (rate over all threads, wall clock) and
// token_heads_per_core (that rate divided by the threads). After the runs, a table: per-core rate at
// 1 thread (wall clock and CPU time) and the speedup at n threads over 1 thread of the same run, with
// the share of each added core ((speedup - 1) / (n - 1)). Run: ./build/bench/reference_bench
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "kda/problem_factory.hpp"
#include "kda/reference.hpp"

namespace {

constexpr int kThreadCounts[] = {1, 2, 4, 8, 16};

kda::Problem make_case(kda::Mode mode) {
  kda::ProblemSpec spec;
  spec.mode = mode;
  spec.H = spec.HV = 4;
  spec.K = spec.V = 128;
  spec.options.l2norm_qk = true;
  if (mode == kda::Mode::prefill) {
    spec.lengths.assign(32, 256);
  } else {
    spec.lengths.assign(256, 1);
    spec.state = kda::StateSource::pool;
  }
  kda::Problem p = kda::make_problem(spec);
  kda::fill_random(p, 1);
  return p;
}

template <class Acc>
void run(benchmark::State& state, const kda::Problem& p, kda::Algorithm algorithm, int threads, bool reuse) {
  kda::ReferenceOutputs kept;
  for (auto _ : state) {
    if (reuse) {
      kda::run_reference<Acc>(p, algorithm, threads, kept);
      benchmark::DoNotOptimize(kept.o.data());
    } else {
      benchmark::DoNotOptimize(kda::run_reference<Acc>(p, algorithm, threads));
    }
  }
  const auto token_heads = static_cast<double>(state.iterations() * p.T * p.B * p.HV);
  state.counters["token_heads"] = benchmark::Counter(token_heads, benchmark::Counter::kIsRate);
  state.counters["token_heads_per_core"] = benchmark::Counter(token_heads / threads, benchmark::Counter::kIsRate);
}

// The console output, plus the best per-core rates of each case by thread count for the scaling table.
class ScalingReporter : public benchmark::ConsoleReporter {
 public:
  struct Rates {
    double wall = 0, cpu = 0;  // token-heads/s per core
  };
  std::map<std::string, std::map<int, Rates>> rates;  // case/algorithm/precision -> threads -> best rates
  std::vector<std::string> order;

  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      if (r.run_type != Run::RT_Iteration || r.error_occurred) continue;
      const std::string name = r.run_name.function_name;
      const auto at = name.rfind("/threads:");
      const std::string key = name.substr(0, at);
      const int threads = std::stoi(name.substr(at + 9));
      const double per_core = r.counters.at("token_heads_per_core").value;
      if (!rates.count(key)) order.push_back(key);
      Rates& best = rates[key][threads];
      best.wall = std::max(best.wall, per_core);
      best.cpu = std::max(best.cpu, per_core * r.GetAdjustedRealTime() / r.GetAdjustedCPUTime());
    }
  }

  void print_scaling(int cores) const {
    std::printf("\nToken-heads/s per core at 1 thread (thousands; CPU time: of the calling thread) and speedup at n"
                " threads over 1 thread, (speedup - 1) / (n - 1) in parentheses; %d cores here\n\n", cores);
    std::printf("| case | 1 thread, wall | 1 thread, CPU |");
    for (int n : kThreadCounts)
      if (n > 1) std::printf(" %d threads |", n);
    std::printf("\n|---|---|---|");
    for (int n : kThreadCounts)
      if (n > 1) std::printf("---|");
    std::printf("\n");
    for (const std::string& key : order) {
      const auto& by_threads = rates.at(key);
      if (!by_threads.count(1)) continue;
      const Rates one = by_threads.at(1);
      std::printf("| %s | %.1f | %.1f |", key.c_str(), one.wall / 1e3, one.cpu / 1e3);
      for (int n : kThreadCounts) {
        if (n == 1) continue;
        if (!by_threads.count(n)) {
          std::printf(" skipped (> %d cores) |", cores);
          continue;
        }
        const double speedup = by_threads.at(n).wall * n / one.wall;
        std::printf(" %.2fx (%.2f) |", speedup, (speedup - 1) / (n - 1));
      }
      std::printf("\n");
    }
  }
};

}  // namespace

int main(int argc, char** argv) {
  static const kda::Problem prefill = make_case(kda::Mode::prefill);
  static const kda::Problem decode = make_case(kda::Mode::decode);
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  struct Case {
    const char* name;
    const kda::Problem* problem;
    bool reuse;
  };
  for (const Case c : {Case{"prefill", &prefill, true}, Case{"decode", &decode, true}, Case{"decode_fresh", &decode, false}})
    for (auto algorithm : {kda::Algorithm::recurrent, kda::Algorithm::chunked}) {
      // Fresh outputs cost the same whatever the algorithm: the oracle's recurrent form shows it.
      if (!c.reuse && algorithm == kda::Algorithm::chunked) continue;
      for (const char* precision : {"fp64", "fp32"})
        for (int threads : kThreadCounts) {
          if (threads > cores) continue;
          const std::string name = std::string(c.name) + "/" + std::string(kda::name_of(algorithm)) + "/" + precision +
                                   "/threads:" + std::to_string(threads);
          const bool fp64 = std::string(precision) == "fp64";
          benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& s) {
            if (fp64)
              run<double>(s, *c.problem, algorithm, threads, c.reuse);
            else
              run<float>(s, *c.problem, algorithm, threads, c.reuse);
          })->UseRealTime()->Unit(benchmark::kMillisecond);
        }
    }
  benchmark::Initialize(&argc, argv);
  ScalingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.print_scaling(cores);
  benchmark::Shutdown();
}
