#pragma once
// What the GPU benchmarks share: CUDA error checks, the median-of-launches and graph-replay timers, the
// device-to-device copy bandwidth (the ceiling each benchmark reports beside its own figure), the
// command line and the run's header, and the date and JSON escaping of their reports.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <stdexcept>
#include <string>
#include <vector>

namespace kda::bench {

inline void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

// Median milliseconds of `reps` calls of launch(i), each between its own pair of events, after 3
// warm-up calls.
template <class Launch>
double time_median_ms(int reps, Launch&& launch) {
  for (int i = 0; i < 3; ++i) launch(i);
  std::vector<cudaEvent_t> events(2 * static_cast<std::size_t>(reps));
  for (auto& e : events) check(cudaEventCreate(&e), "cudaEventCreate");
  for (int i = 0; i < reps; ++i) {
    check(cudaEventRecord(events[2 * i]), "cudaEventRecord");
    launch(i);
    check(cudaEventRecord(events[2 * i + 1]), "cudaEventRecord");
  }
  check(cudaEventSynchronize(events.back()), "cudaEventSynchronize");
  std::vector<float> ms(static_cast<std::size_t>(reps));
  for (int i = 0; i < reps; ++i) check(cudaEventElapsedTime(&ms[i], events[2 * i], events[2 * i + 1]), "elapsed");
  for (auto& e : events) cudaEventDestroy(e);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// Milliseconds per call of launch(0 .. calls - 1) captured once in a CUDA graph (on a stream of its own)
// and replayed: the median over `reps` replays, each between a pair of events, divided by `calls`. No
// launch overhead between calls: how FLA's anchor is timed (bench/gpu/fla_anchor.py).
template <class Launch>
double time_graph_ms(int calls, int reps, Launch&& launch) {
  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
  for (int i = 0; i < calls; ++i) launch(i, stream);
  check(cudaStreamEndCapture(stream, &graph), "cudaStreamEndCapture");
  check(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate");
  check(cudaGraphLaunch(exec, stream), "cudaGraphLaunch");  // warm-up
  std::vector<cudaEvent_t> events(2 * static_cast<std::size_t>(reps));
  for (auto& e : events) check(cudaEventCreate(&e), "cudaEventCreate");
  for (int r = 0; r < reps; ++r) {
    check(cudaEventRecord(events[2 * r], stream), "cudaEventRecord");
    check(cudaGraphLaunch(exec, stream), "cudaGraphLaunch");
    check(cudaEventRecord(events[2 * r + 1], stream), "cudaEventRecord");
  }
  check(cudaEventSynchronize(events.back()), "cudaEventSynchronize");
  std::vector<float> ms(static_cast<std::size_t>(reps));
  for (int r = 0; r < reps; ++r) check(cudaEventElapsedTime(&ms[r], events[2 * r], events[2 * r + 1]), "elapsed");
  for (auto& e : events) cudaEventDestroy(e);
  cudaGraphExecDestroy(exec), cudaGraphDestroy(graph), cudaStreamDestroy(stream);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2] / calls;
}

// Bytes read + written per second (TB/s) of a 1 GiB device-to-device copy.
inline double copy_bandwidth_tb_per_s(int reps) {
  constexpr std::size_t bytes = std::size_t{1} << 30;
  void *a = nullptr, *b = nullptr;
  check(cudaMalloc(&a, bytes), "cudaMalloc"), check(cudaMalloc(&b, bytes), "cudaMalloc");
  check(cudaMemset(a, 1, bytes), "cudaMemset");
  const double ms =
      time_median_ms(reps, [&](int) { check(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice), "copy"); });
  cudaFree(a), cudaFree(b);
  return 2.0 * bytes / (ms * 1e-3) / 1e12;
}

// A benchmark's command line (`NAME [--json PATH] [--reps N]`, at least 5 reps; `--timing-only` where
// the benchmark has an accuracy part to skip) and the facts every report starts with: the device, and
// the copy bandwidth measured now (printed as they are found).
struct BenchRun {
  std::string json_path, command;
  int reps = 0;
  bool timing_only = false;
  cudaDeviceProp device{};
  double copy_tb_per_s = 0;
};

inline BenchRun start_bench(int argc, char** argv, const char* name, int default_reps, bool has_accuracy = false) {
  BenchRun run;
  run.reps = default_reps;
  for (int i = 0; i < argc; ++i) run.command += (i ? " " : "") + std::string(argv[i]);
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--json" && i + 1 < argc)
      run.json_path = argv[++i];
    else if (a == "--reps" && i + 1 < argc)
      run.reps = std::max(5, std::atoi(argv[++i]));
    else if (a == "--timing-only" && has_accuracy)
      run.timing_only = true;
    else
      throw std::invalid_argument(std::string("usage: ") + name + " [--json PATH] [--reps N]" +
                                  (has_accuracy ? " [--timing-only]" : ""));
  }
  check(cudaGetDeviceProperties(&run.device, 0), "cudaGetDeviceProperties");
  std::printf("device: %s, %d SMs, L2 %d MB\n", run.device.name, run.device.multiProcessorCount,
              run.device.l2CacheSize >> 20);
  run.copy_tb_per_s = copy_bandwidth_tb_per_s(20);
  std::printf("device-to-device copy (1 GiB, read + written): %.2f TB/s\n\n", run.copy_tb_per_s);
  return run;
}

inline std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

inline std::string json_escape(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '"' || c == '\\' ? std::string("\\") + c : std::string(1, c);
  return out;
}

}  // namespace kda::bench
