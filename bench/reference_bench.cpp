// Speed of the CPU reference (not a test): token-heads per second, on one core and on every core.
//   prefill  H = HV = 4, K = V = 128, one sequence of T = 8192 tokens, dense fp32 states
//   decode   H = HV = 4, K = V = 128, N = 256 sequences of one token, fp32 state pool in place
// Inputs fp32 with l2norm on q and k. Counters: token_heads (rate over all threads) and
// token_heads_per_core (that rate divided by the threads used).
#include <benchmark/benchmark.h>

#include <string>
#include <thread>

#include "kda/problem_factory.hpp"
#include "kda/reference.hpp"

namespace {

kda::Problem make_case(kda::Mode mode) {
  kda::ProblemSpec spec;
  spec.mode = mode;
  spec.H = spec.HV = 4;
  spec.K = spec.V = 128;
  spec.options.l2norm_qk = true;
  if (mode == kda::Mode::prefill) {
    spec.lengths = {8192};
  } else {
    spec.lengths.assign(256, 1);
    spec.state = kda::StateSource::pool;
  }
  kda::Problem p = kda::make_problem(spec);
  kda::fill_random(p, 1);
  return p;
}

template <class Acc>
void run(benchmark::State& state, const kda::Problem& p, kda::Algorithm algorithm, int threads) {
  for (auto _ : state) benchmark::DoNotOptimize(kda::run_reference<Acc>(p, algorithm, threads));
  const auto token_heads = static_cast<double>(state.iterations() * p.T * p.B * p.HV);
  state.counters["token_heads"] = benchmark::Counter(token_heads, benchmark::Counter::kIsRate);
  state.counters["token_heads_per_core"] = benchmark::Counter(token_heads / threads, benchmark::Counter::kIsRate);
}

}  // namespace

int main(int argc, char** argv) {
  static const kda::Problem prefill = make_case(kda::Mode::prefill);
  static const kda::Problem decode = make_case(kda::Mode::decode);
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (const auto* p : {&prefill, &decode})
    for (auto algorithm : {kda::Algorithm::recurrent, kda::Algorithm::chunked})
      for (int threads : {1, cores}) {
        const std::string name = std::string(kda::name_of(p->mode)) + "/" + std::string(kda::name_of(algorithm)) +
                                 "/threads:" + std::to_string(threads);
        benchmark::RegisterBenchmark((name + "/fp64").c_str(), [=](benchmark::State& s) {
          run<double>(s, *p, algorithm, threads);
        })->UseRealTime()->Unit(benchmark::kMillisecond);
        benchmark::RegisterBenchmark((name + "/fp32").c_str(), [=](benchmark::State& s) {
          run<float>(s, *p, algorithm, threads);
        })->UseRealTime()->Unit(benchmark::kMillisecond);
      }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}
