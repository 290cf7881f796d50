// prefill_bench: the chunked tensor-core prefill (cuda-chunked) at the shape of kda-facts §6's prefill
// anchor: H = HV = 32, K = V = 128, bf16 inputs and output, gate (softplus with A_log and dt_bias),
// l2norm and beta sigmoid in the kernel, dense fp32 [N, HV, V, K] initial and final states, varlen
// packings 1 x 8192, 8 x 2048, 32 x 512 and (100, 2000, 37, 900, 4000, 1, 1155).
//
// Timing: CUDA events, median of --reps runs after 3 warm-ups, for stage A (the gate kernel and the
// prepare kernel) alone, the gate kernel alone, stage B (scan) alone and both stages back to back (the
// headline), and stage B forced into each of its five forms (ScanForm: the launcher's choice beside
// the others, in the same run). The inputs (4 x 134 MB at 16384 tokens) and the
// workspace (about 600 MB) are many times the 60 MB L2. The device-to-device copy bandwidth is measured
// in the same run as the in-run ceiling reference. The prepare kernel is also split by phase: one more
// launch with clock64() at its phase boundaries, each the last warp's arrival at the phase's closing
// barrier (ChunkedParams::prepare_phase_clocks), its shares applied to stage A's time less the gates'.
// FLOPs: the matrix products of the chunked form per (chunk of C tokens, value head), the lower
// triangles counted once: Aqk and Akk 2 C^2 K, the forward substitution C^2 (K + V), w S, qg S and
// kg^T v_new 6 C K V, Aqk v_new C^2 V; element-wise work (gates, decays, l2norm) is not counted.
// Accuracy: o against the fp64 recurrence on a problem of the same packing with H = HV = 4 (four heads:
// the host reference of 32 heads is slow; heads are computed independently by the kernel).
//
// Usage: prefill_bench [--json PATH] [--reps N] [--timing-only]   (--timing-only: no accuracy, rel-RMS null)
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <stdexcept>
#include <iterator>
#include <string>
#include <vector>

#include "gpu_timing.hpp"
#include "kda/kernels/chunked_prefill.hpp"
#include "kda/metrics.hpp"
#include "kda/problem_factory.hpp"
#include "kda/properties/comparison.hpp"
#include "kda/reference.hpp"

namespace {

using namespace kda;
using bench::check;
using bench::json_escape;
using bench::time_median_ms;
using bench::utc_now;

constexpr std::int64_t kHeads = 32, kK = 128, kV = 128, kAccuracyHeads = 4;

struct Packing {
  std::string name;
  std::vector<std::int64_t> lengths;
  double fla_ms;  // kda-facts §6
};

std::vector<Packing> packings() {
  return {{"1x8192", {8192}, 2.05},
          {"8x2048", std::vector<std::int64_t>(8, 2048), 2.53},
          {"32x512", std::vector<std::int64_t>(32, 512), 2.60},
          {"100,2000,37,900,4000,1,1155", {100, 2000, 37, 900, 4000, 1, 1155}, 2.55}};
}

ProblemSpec spec_of(const Packing& packing, std::int64_t heads) {
  ProblemSpec s;
  s.lengths = packing.lengths;
  s.H = s.HV = heads, s.K = kK, s.V = kV;
  s.input_dtype = s.output_dtype = DType::bf16;
  s.state = StateSource::dense, s.state_dtype = DType::f32;
  s.options.l2norm_qk = s.options.gate_in_kernel = s.options.beta_from_logits = true;
  s.with_A_log = s.with_dt_bias = true;
  return s;
}

double flops(const Problem& p) {
  double total = 0;
  for (std::int64_t n = 0; n < p.N; ++n)
    for (std::int64_t t0 = 0; t0 < p.length(n); t0 += kernels::kChunk) {
      const double C = static_cast<double>(std::min<std::int64_t>(kernels::kChunk, p.length(n) - t0));
      const double K = static_cast<double>(p.K), V = static_cast<double>(p.V);
      total += 2 * C * C * K + C * C * (K + V) + 6 * C * K * V + C * C * V;
    }
  return total * static_cast<double>(p.HV);
}

// A device copy of every buffer of a problem (inputs and outputs).
class DeviceProblem {
 public:
  explicit DeviceProblem(const Problem& p) {
    std::vector<const Tensor*> tensors = p.inputs();
    for (const Tensor* t : p.outputs()) tensors.push_back(t);
    for (const Tensor* t : tensors) {
      const GuardedBuffer* b = t->buffer.get();
      if (device_.contains(b)) continue;
      void* d = nullptr;
      check(cudaMalloc(&d, b->size()), "cudaMalloc");
      device_[b] = static_cast<std::byte*>(d);
      check(cudaMemcpy(d, b->data(), b->size(), cudaMemcpyHostToDevice), "cudaMemcpy");
    }
  }
  ~DeviceProblem() {
    for (auto& [b, d] : device_) cudaFree(d);
  }
  kernels::PayloadAddress payload() const {
    return [this](GuardedBuffer& b) { return device_.at(&b); };
  }
  void copy_back(Problem& p) const {
    for (Tensor* t : p.outputs())
      check(cudaMemcpy(t->buffer->data(), device_.at(t->buffer.get()), t->buffer->size(), cudaMemcpyDeviceToHost),
            "cudaMemcpy back");
  }

 private:
  std::map<const GuardedBuffer*, std::byte*> device_;
};

struct Row {
  Packing packing;
  std::int64_t tokens = 0;
  double prepare_ms = 0, gates_ms = 0, scan_ms = 0, total_ms = 0, tflops = 0, o_rel_rms = 0;
  std::array<double, kernels::kPreparePhases> phase_share{};  // of the prepare kernel's clocks, mean over its slots
  // Stage B forced into each form (kernels::kScanForms), beside the launcher's choice.
  std::array<double, std::size(kernels::kScanForms)> scan_form_ms{};
  std::string scan_form;  // the launcher's choice
};

// One stage-A launch with phase clocks: each phase's share of the prepare kernel's clock64() cycles,
// averaged over its slots (the blocks run side by side, so the shares split its time).
std::array<double, kernels::kPreparePhases> prepare_phase_shares(kernels::ChunkedParams params) {
  constexpr int kMarks = kernels::kPreparePhases + 1;
  const std::int64_t slots = params.num_chunks * params.call.HV;
  std::vector<long long> clocks(static_cast<std::size_t>(slots * kMarks));
  long long* device = nullptr;
  check(cudaMalloc(&device, sizeof(long long) * clocks.size()), "cudaMalloc (phase clocks)");
  params.prepare_phase_clocks = device;
  check(kernels::launch_chunked_prepare(params, nullptr), "prepare (phase clocks)");
  check(cudaMemcpy(clocks.data(), device, sizeof(long long) * clocks.size(), cudaMemcpyDeviceToHost), "cudaMemcpy");
  cudaFree(device);
  std::array<double, kernels::kPreparePhases> cycles{};
  double total = 0;
  for (std::int64_t b = 0; b < slots; ++b)
    for (int ph = 0; ph < kernels::kPreparePhases; ++ph) {
      const auto d = static_cast<double>(clocks[b * kMarks + ph + 1] - clocks[b * kMarks + ph]);
      cycles[static_cast<std::size_t>(ph)] += d, total += d;
    }
  for (double& c : cycles) c /= total;
  return cycles;
}

// The timing runs' inputs drawn on every core (fill_random_parallel: fill_random's laws; the kernels' time
// does not depend on the values, and fill_random, one core at about 30 ns an element, took 25 s of a run
// for the four packings on the CI machine); the accuracy runs' from fill_random, comparable across stops.
Problem random_problem(const ProblemSpec& spec, std::uint64_t seed, bool parallel) {
  Problem p = make_problem(spec);
  if (parallel)
    fill_random_parallel(p, seed);
  else
    fill_random(p, seed);
  return p;
}

void admit(const Problem& p) {
  const RunOutcome admitted = kernels::admit_chunked(p, "cuda-chunked");
  if (admitted.status != RunOutcome::Status::ok) throw std::runtime_error("the benchmark problem: " + admitted.message);
}

void time_packing(Row& row, int reps) {
  const Problem p = random_problem(spec_of(row.packing, kHeads), 31, true);
  admit(p);
  row.tokens = p.T;
  const DeviceProblem device(p);
  const kernels::ChunkedDeviceCall call(p, device.payload());
  const kernels::ChunkedParams& params = call.params();
  row.prepare_ms = time_median_ms(reps, [&](int) { check(kernels::launch_chunked_prepare(params, nullptr), "prepare"); });
  row.gates_ms = time_median_ms(reps, [&](int) { check(kernels::launch_chunked_gates(params, nullptr), "gates"); });
  row.scan_ms = time_median_ms(reps, [&](int) { check(kernels::launch_chunked_scan(params, nullptr), "scan"); });
  kernels::ScanForm chosen = kernels::ScanForm::automatic;
  check(kernels::chunked_scan_form(params, chosen), "stage B's form");
  row.scan_form = kernels::name_of(chosen);
  for (std::size_t f = 0; f < std::size(kernels::kScanForms); ++f) {
    kernels::ChunkedParams forced = params;
    forced.scan_form = kernels::kScanForms[f];
    row.scan_form_ms[f] =
        time_median_ms(reps, [&](int) { check(kernels::launch_chunked_scan(forced, nullptr), "scan"); });
  }
  row.total_ms = time_median_ms(reps, [&](int) { check(kernels::launch_chunked_prefill(params, nullptr), "prefill"); });
  row.tflops = flops(p) / (row.total_ms * 1e-3) / 1e12;
  row.phase_share = prepare_phase_shares(params);
}

void measure_accuracy(Row& row) {
  const Problem input = random_problem(spec_of(row.packing, kAccuracyHeads), 32, false);
  admit(input);
  Problem on_gpu = deep_copy(input);
  {
    const DeviceProblem device(on_gpu);
    const kernels::ChunkedDeviceCall call(on_gpu, device.payload());
    check(kernels::launch_chunked_prefill(call.params(), nullptr), "prefill");
    check(cudaDeviceSynchronize(), "prefill (accuracy run)");
    device.copy_back(on_gpu);
  }
  const ReferenceOutputs oracle = run_reference<double>(input, Algorithm::recurrent);
  row.o_rel_rms = rel_rms(props::read_outputs(on_gpu).o, oracle.o);
}

}  // namespace

int main(int argc, char** argv) try {
  const bench::BenchRun run = bench::start_bench(argc, argv, "prefill_bench", 20, true);
  const std::string& json_path = run.json_path;
  const cudaDeviceProp& prop = run.device;
  const double copy = run.copy_tb_per_s;
  const int reps = run.reps;

  std::vector<Row> rows;
  for (const Packing& packing : packings()) {
    Row row;
    row.packing = packing;
    time_packing(row, reps);
    if (run.timing_only)
      row.o_rel_rms = std::numeric_limits<double>::quiet_NaN();
    else
      measure_accuracy(row);
    rows.push_back(row);
  }

  std::printf(
      "| packing | tokens | stage A (ms) | of which gates | stage B (ms) | total (ms) | TFLOP/s | vs FLA | o rel-RMS "
      "vs fp64 (%lld heads) |\n"
      "|---|---|---|---|---|---|---|---|---|\n",
      static_cast<long long>(kAccuracyHeads));
  for (const Row& r : rows)
    std::printf("| %s | %lld | %.3f | %.3f | %.3f | %.3f | %.1f | %.2fx (%.2f ms) | %.2e |\n", r.packing.name.c_str(),
                static_cast<long long>(r.tokens), r.prepare_ms, r.gates_ms, r.scan_ms, r.total_ms, r.tflops,
                r.packing.fla_ms / r.total_ms, r.packing.fla_ms, r.o_rel_rms);

  std::printf(
      "\nthe prepare kernel by phase (share of its slots' cycles; ms: that share of stage A's time less the "
      "gates'):\n| packing |");
  for (const char* name : kernels::kPreparePhaseNames) std::printf(" %s |", name);
  std::printf("\n|---|");
  for (int ph = 0; ph < kernels::kPreparePhases; ++ph) std::printf("---|");
  std::printf("\n");
  for (const Row& r : rows) {
    std::printf("| %s |", r.packing.name.c_str());
    for (double share : r.phase_share)
      std::printf(" %.0f%% (%.3f) |", 100 * share, share * (r.prepare_ms - r.gates_ms));
    std::printf("\n");
  }
  std::printf("\nstage B in each form (ms; the launcher's choice is the table's stage B):\n| packing | chosen |");
  for (const kernels::ScanForm form : kernels::kScanForms) std::printf(" %s |", kernels::name_of(form));
  std::printf("\n|---|---|");
  for (std::size_t f = 0; f < std::size(kernels::kScanForms); ++f) std::printf("---|");
  std::printf("\n");
  for (const Row& r : rows) {
    std::printf("| %s | %s |", r.packing.name.c_str(), r.scan_form.c_str());
    for (double ms : r.scan_form_ms) std::printf(" %.3f |", ms);
    std::printf("\n");
  }
  std::printf("\n");

  if (!json_path.empty()) {
    std::ostringstream j;
    j << "{\n  \"date\": \"" << utc_now() << "\",\n  \"gpu\": \"" << json_escape(prop.name) << "\",\n  \"command\": \""
      << json_escape(run.command) << "\",\n  \"shape\": {\"H\": " << kHeads << ", \"HV\": " << kHeads << ", \"K\": " << kK
      << ", \"V\": " << kV << ", \"states\": \"dense f32 [N,HV,V,K] in and out\", \"inputs\": \"bf16\", \"output\": "
      << "\"bf16\", \"in_kernel\": \"gate (softplus), l2norm, beta sigmoid\"},\n  \"reps\": " << reps
      << ",\n  \"copy_tb_per_s\": " << copy << ",\n  \"accuracy_heads\": " << kAccuracyHeads << ",\n  \"prefill\": [";
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      j << (i ? "," : "") << "\n    {\"packing\": \"" << r.packing.name << "\", \"tokens\": " << r.tokens
        << ", \"prepare_ms\": " << r.prepare_ms << ", \"gates_ms\": " << r.gates_ms << ", \"scan_ms\": " << r.scan_ms
        << ", \"total_ms\": " << r.total_ms << ", \"tflop_per_s\": " << r.tflops << ", \"fla_ms\": " << r.packing.fla_ms
        << ", \"o_rel_rms_vs_fp64\": ";
      if (std::isnan(r.o_rel_rms))
        j << "null";  // --timing-only
      else
        j << r.o_rel_rms;
      j << ", \"prepare_phase_share\": {";
      for (int ph = 0; ph < kernels::kPreparePhases; ++ph)
        j << (ph ? ", " : "") << "\"" << kernels::kPreparePhaseNames[ph] << "\": " << r.phase_share[static_cast<std::size_t>(ph)];
      j << "}, \"scan_form\": \"" << r.scan_form << "\", \"scan_form_ms\": {";
      for (std::size_t f = 0; f < std::size(kernels::kScanForms); ++f)
        j << (f ? ", " : "") << "\"" << kernels::name_of(kernels::kScanForms[f]) << "\": " << r.scan_form_ms[f];
      j << "}}";
    }
    j << "\n  ]\n}\n";
    std::ofstream(json_path) << j.str();
    std::printf("wrote %s\n", json_path.c_str());
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "prefill_bench: %s\n", e.what());
  return 1;
}
