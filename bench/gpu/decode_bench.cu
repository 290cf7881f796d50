// decode_bench: state bytes read + written per second of the token-serial kernel in decode, at the
// shape of kda-facts §6's anchor: H = HV = 32, K = V = 128, an fp32 [slots, HV, V, K] pool updated in
// place through int32 indices, bf16 inputs, gate / l2norm / beta in the kernel, one token per sequence,
// N = 64, 256, 1024. Then the index-table verify of speculative decoding at the same shape, N = 256
// requests of L = 1 + num_spec tokens (num_spec = 3 and 7): each (request, head) reads one state (the
// slot its accepted count names) and writes L (one slot per token), so its state bytes are
// (1 + L) x K x V x 4; as for decode, the inputs and o (under 2% of the bytes) are not counted. The
// device-to-device copy bandwidth is measured in the same run as the ceiling.
//
// Timing: CUDA events around each launch, median of --reps launches after warm-up; and, for the default
// launch, a CUDA graph of one launch per pool copy replayed --reps times (the median replay over its
// launches), as FLA's anchor is timed (bench/gpu/fla_anchor.py). Each launch uses the
// next of several pool copies (at least 1 GiB together, many times the 60 MB L2), so no launch finds
// its states in the cache. In decode every launch configuration (row steps per warp x warps per block)
// is timed, the default one the headline; so it is in verify. Accuracy: o and the pool against the fp64 reference on a random
// problem of the same shape (N = 64), and the count of elements that differ from the CPU simulation.
//
// Usage: decode_bench [--json PATH] [--reps N]
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <numeric>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpu_timing.hpp"
#include "kda/kernels/cuda_recurrent_kernel.hpp"
#include "kda/kernels/recurrent_decode_sim.hpp"
#include "kda/metrics.hpp"
#include "kda/problem_factory.hpp"
#include "kda/properties/comparison.hpp"
#include "kda/reference.hpp"

namespace {

using namespace kda;
using bench::check;
using bench::json_escape;
using bench::time_graph_ms;
using bench::time_median_ms;
using bench::utc_now;

constexpr std::int64_t kH = 32, kHV = 32, kK = 128, kV = 128;
constexpr std::size_t kRotationBytes = std::size_t{1} << 30;  // pool copies per N cover at least this

struct Timing {
  int steps = 0, warps = 0;
  double median_ms = 0, tb_per_s = 0;
};

struct Row {
  std::int64_t N = 0;
  double state_bytes = 0;
  std::vector<Timing> configs;  // the default first
  double graph_ms = 0, graph_tb_per_s = 0;  // the default launch, one per pool copy in a replayed CUDA graph
};

// The decode problem of the benchmark: one token for each of N sequences, slots in a shuffled order.
ProblemSpec decode_spec(std::int64_t N) {
  ProblemSpec s;
  s.mode = Mode::decode;
  s.lengths.assign(static_cast<std::size_t>(N), 1);
  s.H = kH, s.HV = kHV, s.K = kK, s.V = kV;
  s.input_dtype = s.output_dtype = DType::bf16;
  s.state = StateSource::pool, s.state_dtype = DType::f32, s.pool_slots = N;
  s.indices.resize(static_cast<std::size_t>(N));
  std::iota(s.indices.begin(), s.indices.end(), 0);
  std::shuffle(s.indices.begin(), s.indices.end(), std::mt19937_64(7));
  s.options.l2norm_qk = s.options.gate_in_kernel = s.options.beta_from_logits = true;
  s.with_A_log = s.with_dt_bias = true;
  return s;
}

// The index-table verify of the benchmark: N requests of L tokens through cu_seqlens (the fixed form),
// a pool of N x L slots, each request's L slots drawn from a shuffled order, accepted counts drawn in
// [1, L].
ProblemSpec verify_spec(std::int64_t N, std::int64_t L) {
  ProblemSpec s = decode_spec(N);
  s.mode = Mode::verify, s.state = StateSource::table, s.final_state = false, s.L = L;
  s.lengths.assign(static_cast<std::size_t>(N), L);
  s.pool_slots = N * L;
  s.indices.resize(static_cast<std::size_t>(N * L));
  std::iota(s.indices.begin(), s.indices.end(), 0);
  std::mt19937_64 random(8);
  std::shuffle(s.indices.begin(), s.indices.end(), random);
  s.accepted.clear();
  for (std::int64_t n = 0; n < N; ++n) s.accepted.push_back(1 + static_cast<std::int64_t>(random() % L));
  return s;
}

// Pool values uniform in [-0.17, 0.17] (standard deviation 0.1, as fill_random draws), from a hash.
__global__ void fill_pool(float* pool, std::size_t n, std::uint64_t seed) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n; i += std::size_t{gridDim.x} * blockDim.x) {
    std::uint64_t x = (i + seed) * 0x9e3779b97f4a7c15ull;
    x ^= x >> 31, x *= 0xbf58476d1ce4e5b9ull, x ^= x >> 29;
    pool[i] = (static_cast<float>(x >> 40) * 0x1p-24f - 0.5f) * 0.34f;
  }
}

// Device buffers for every buffer of a problem; the pool's buffer `rotations` times over.
class DeviceProblem {
 public:
  DeviceProblem(const Problem& p, int rotations) {
    std::vector<const Tensor*> tensors = p.inputs();
    for (const Tensor* t : p.outputs()) tensors.push_back(t);
    pool_ = p.state_pool->buffer.get();
    for (const Tensor* t : tensors) {
      const GuardedBuffer* b = t->buffer.get();
      if (device_.contains(b)) continue;
      const std::size_t bytes = b == pool_ ? b->size() * static_cast<std::size_t>(rotations) : b->size();
      void* d = nullptr;
      check(cudaMalloc(&d, bytes), "cudaMalloc");
      device_[b] = static_cast<std::byte*>(d);
      if (b == pool_)
        fill_pool<<<1024, 256>>>(static_cast<float*>(d), bytes / sizeof(float), 1);
      else
        check(cudaMemcpy(d, b->data(), b->size(), cudaMemcpyHostToDevice), "cudaMemcpy");
    }
    check(cudaDeviceSynchronize(), "fill");
  }
  ~DeviceProblem() {
    for (auto& [b, d] : device_) cudaFree(d);
  }
  // Addresses with the pool at its copy `rotation`.
  kernels::PayloadAddress payload(int rotation) const {
    return [this, rotation](GuardedBuffer& b) {
      std::byte* d = device_.at(&b);
      return &b == pool_ ? d + b.size() * static_cast<std::size_t>(rotation) : d;
    };
  }
 private:
  const GuardedBuffer* pool_ = nullptr;
  std::map<const GuardedBuffer*, std::byte*> device_;
};

// Times the call `spec` describes, moving `state_bytes` of state per launch: the default launch (per
// launch and as graph replays), then every other launch configuration.
Row time_call(const ProblemSpec& spec, double state_bytes, int reps) {
  Problem p = make_problem(spec);
  // fill_random would also draw every pool element on the host (2 MiB a slot); the pool is filled on the
  // device instead, so it is set aside while the inputs are drawn.
  std::optional<Tensor> pool = std::move(p.state_pool);
  p.state_pool.reset();
  fill_random(p, 11);
  p.state_pool = std::move(pool);
  const std::size_t pool_bytes = p.state_pool->buffer->size();
  const int rotations = static_cast<int>(std::max<std::size_t>(2, (kRotationBytes + pool_bytes - 1) / pool_bytes));
  const DeviceProblem device(p, rotations);

  // Validated once through the launcher; the timed launches reuse the checked parameters.
  const RunOutcome first = kernels::launch_recurrent_decode(p, device.payload(0), nullptr);
  if (first.status != RunOutcome::Status::ok) throw std::runtime_error("the benchmark problem: " + first.message);

  Row row;
  row.N = p.N;
  row.state_bytes = state_bytes;
  // The default launch (what LaunchConfig{} picks) first.
  const int steps0 = kernels::default_steps(kernels::make_decode_params(p, device.payload(0)));
  std::vector<std::pair<int, int>> configs{{steps0, kernels::LaunchConfig{}.warps_per_block}};
  for (int steps : {4, 8, 16})
    for (int warps : {2, 4, 8})
      if (std::pair{steps, warps} != configs.front()) configs.emplace_back(steps, warps);
  for (const auto& [steps, warps] : configs) {
    std::vector<kernels::DecodeParams> params;
    for (int r = 0; r < rotations; ++r) params.push_back(kernels::make_decode_params(p, device.payload(r), steps));
    const double ms = time_median_ms(reps, [&](int i) {
      check(kernels::launch_recurrent_decode(params[static_cast<std::size_t>(i % rotations)], nullptr, warps), "launch");
    });
    row.configs.push_back({steps, warps, ms, row.state_bytes / (ms * 1e-3) / 1e12});
    if (row.configs.size() == 1) {
      row.graph_ms = time_graph_ms(rotations, reps, [&](int i, cudaStream_t stream) {
        check(kernels::launch_recurrent_decode(params[static_cast<std::size_t>(i)], stream, warps), "launch");
      });
      row.graph_tb_per_s = row.state_bytes / (row.graph_ms * 1e-3) / 1e12;
    }
  }
  return row;
}

constexpr double kStateBytes = static_cast<double>(kHV * kK * kV) * sizeof(float);  // one state of all heads

// Decode: each sequence's state read and written once.
Row time_decode(std::int64_t N, int reps) { return time_call(decode_spec(N), 2.0 * N * kStateBytes, reps); }

// Verify: one state read and L written per request, whatever the accepted counts.
Row time_verify(std::int64_t N, std::int64_t L, int reps) {
  return time_call(verify_spec(N, L), static_cast<double>(1 + L) * N * kStateBytes, reps);
}

struct VerifyRow {
  std::int64_t num_spec = 0;
  Row timing;
};

const Timing& best_of(const Row& r) {
  return *std::max_element(r.configs.begin(), r.configs.end(),
                           [](const Timing& a, const Timing& b) { return a.tb_per_s < b.tb_per_s; });
}

// Every configuration's TB/s, one line each, a column per row (the rows' configurations in one order).
void print_configurations(const std::vector<const Row*>& rows, const std::vector<std::string>& columns) {
  std::printf("| steps x warps |");
  for (const std::string& c : columns) std::printf(" %s |", c.c_str());
  std::printf("\n|---|");
  for (std::size_t i = 0; i < columns.size(); ++i) std::printf("---|");
  std::printf("\n");
  for (std::size_t c = 0; c < rows.front()->configs.size(); ++c) {
    std::printf("| %d x %d%s |", rows.front()->configs[c].steps, rows.front()->configs[c].warps, c == 0 ? " (default)" : "");
    for (const Row* r : rows) std::printf(" %.2f |", r->configs[c].tb_per_s);
    std::printf("\n");
  }
}

void configs_json(std::ostringstream& j, const Row& r) {
  j << "\"configs\": [";
  for (std::size_t c = 0; c < r.configs.size(); ++c)
    j << (c ? ", " : "") << "{\"steps\": " << r.configs[c].steps << ", \"warps_per_block\": " << r.configs[c].warps
      << ", \"default\": " << (c == 0 ? "true" : "false") << ", \"median_ms\": " << r.configs[c].median_ms
      << ", \"tb_per_s\": " << r.configs[c].tb_per_s << "}";
  j << "]";
}

struct Accuracy {
  double o_rel_rms = 0, pool_rel_rms = 0;
  std::int64_t elements = 0, differ_from_simulation = 0;
};

Accuracy accuracy(std::int64_t N) {
  ProblemSpec spec = decode_spec(N);
  spec.pool_slots = N + 2;
  for (auto& i : spec.indices) ++i;  // slots 0 and N + 1 unused
  const Problem input = [&] {
    Problem p = make_problem(spec);
    fill_random(p, 12);
    return p;
  }();
  Problem on_gpu = deep_copy(input), on_cpu = deep_copy(input);
  const RunOutcome ran = kernels::make_cuda_recurrent_kernel()->run(on_gpu);
  if (ran.status != RunOutcome::Status::ok) throw std::runtime_error("accuracy run: " + ran.message);
  kernels::make_sim_recurrent_kernel()->run(on_cpu);
  const ReferenceOutputs oracle = run_reference<double>(input, Algorithm::recurrent);
  const ReferenceOutputs gpu = props::read_outputs(on_gpu), sim = props::read_outputs(on_cpu);
  Accuracy a;
  a.o_rel_rms = rel_rms(gpu.o, oracle.o);
  a.pool_rel_rms = rel_rms(gpu.final_state, oracle.final_state);
  for (auto [x, y] : {std::pair{&gpu.o, &sim.o}, {&gpu.final_state, &sim.final_state}})
    for (std::size_t i = 0; i < x->size(); ++i, ++a.elements) a.differ_from_simulation += (*x)[i] != (*y)[i];
  return a;
}

}  // namespace

int main(int argc, char** argv) try {
  const bench::BenchRun run = bench::start_bench(argc, argv, "decode_bench", 50);
  const std::string& json_path = run.json_path;
  const cudaDeviceProp& prop = run.device;
  const double copy = run.copy_tb_per_s;
  const int reps = run.reps;
  std::vector<Row> rows;
  for (std::int64_t N : {64, 256, 1024}) rows.push_back(time_decode(N, reps));
  constexpr std::int64_t kVerifyRequests = 256;
  std::vector<VerifyRow> verify;
  for (std::int64_t num_spec : {3, 7}) verify.push_back({num_spec, time_verify(kVerifyRequests, 1 + num_spec, reps)});
  const Accuracy acc = accuracy(64);

  std::printf("| N | time (ms) | state TB/s | of copy | graph replay: time (ms) | TB/s | of copy | best config (steps x warps) | best TB/s |\n"
              "|---|---|---|---|---|---|---|---|---|\n");
  for (const Row& r : rows) {
    const Timing& d = r.configs.front();
    const Timing& best = best_of(r);
    std::printf("| %lld | %.4f | %.2f | %.0f%% | %.4f | %.2f | %.0f%% | %d x %d | %.2f |\n", static_cast<long long>(r.N),
                d.median_ms, d.tb_per_s, 100 * d.tb_per_s / copy, r.graph_ms, r.graph_tb_per_s,
                100 * r.graph_tb_per_s / copy, best.steps, best.warps, best.tb_per_s);
  }
  std::printf("\nall configurations (TB/s):\n");
  std::vector<const Row*> decode_rows;
  std::vector<std::string> decode_columns;
  for (const Row& r : rows) decode_rows.push_back(&r), decode_columns.push_back("N=" + std::to_string(r.N));
  print_configurations(decode_rows, decode_columns);

  std::printf("\nindex-table verify, N = %lld requests of L = 1 + num_spec tokens (state bytes: 1 read + L written "
              "per request and head):\n| num_spec | L | state bytes | time (ms) | state TB/s | of copy | graph replay: "
              "time (ms) | TB/s | of copy | best config (steps x warps) | best TB/s |\n"
              "|---|---|---|---|---|---|---|---|---|---|---|\n",
              static_cast<long long>(kVerifyRequests));
  std::vector<const Row*> verify_rows;
  std::vector<std::string> verify_columns;
  for (const VerifyRow& v : verify) {
    const Timing& d = v.timing.configs.front();
    const Timing& best = best_of(v.timing);
    std::printf("| %lld | %lld | %.3e | %.4f | %.2f | %.0f%% | %.4f | %.2f | %.0f%% | %d x %d | %.2f |\n",
                static_cast<long long>(v.num_spec), static_cast<long long>(v.num_spec + 1), v.timing.state_bytes,
                d.median_ms, d.tb_per_s, 100 * d.tb_per_s / copy, v.timing.graph_ms, v.timing.graph_tb_per_s,
                100 * v.timing.graph_tb_per_s / copy, best.steps, best.warps, best.tb_per_s);
    verify_rows.push_back(&v.timing), verify_columns.push_back("num_spec=" + std::to_string(v.num_spec));
  }
  std::printf("\nverify, all configurations (TB/s):\n");
  print_configurations(verify_rows, verify_columns);
  std::printf("\naccuracy (N = 64): o rel-RMS vs fp64 %.3e, pool rel-RMS %.3e; %lld of %lld elements differ from the "
              "CPU simulation\n",
              acc.o_rel_rms, acc.pool_rel_rms, static_cast<long long>(acc.differ_from_simulation),
              static_cast<long long>(acc.elements));

  if (!json_path.empty()) {
    std::ostringstream j;
    j << "{\n  \"date\": \"" << utc_now() << "\",\n  \"gpu\": \"" << json_escape(prop.name) << "\",\n  \"command\": \""
      << json_escape(run.command) << "\",\n  \"shape\": {\"H\": " << kH << ", \"HV\": " << kHV << ", \"K\": " << kK
      << ", \"V\": " << kV << ", \"pool\": \"f32 [slots,HV,V,K]\", \"inputs\": \"bf16\", \"in_kernel\": \"gate (softplus), "
      << "l2norm, beta sigmoid\", \"tokens_per_sequence\": 1},\n  \"reps\": " << reps << ",\n  \"copy_tb_per_s\": " << copy
      << ",\n  \"decode\": [";
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      j << (i ? "," : "") << "\n    {\"N\": " << r.N << ", \"state_bytes\": " << r.state_bytes
        << ", \"graph_replay_ms\": " << r.graph_ms << ", \"graph_replay_tb_per_s\": " << r.graph_tb_per_s << ", ";
      configs_json(j, r);
      j << "}";
    }
    j << "\n  ],\n  \"verify\": [";
    for (std::size_t i = 0; i < verify.size(); ++i) {
      const Row& r = verify[i].timing;
      j << (i ? "," : "") << "\n    {\"num_spec\": " << verify[i].num_spec << ", \"L\": " << verify[i].num_spec + 1
        << ", \"N\": " << r.N << ", \"state_bytes\": " << r.state_bytes
        << ", \"state_bytes_rule\": \"(1 read + L written) x N x HV x K x V x 4\", \"graph_replay_ms\": " << r.graph_ms
        << ", \"graph_replay_tb_per_s\": " << r.graph_tb_per_s << ", ";
      configs_json(j, r);
      j << "}";
    }
    j << "\n  ],\n  \"accuracy\": {\"N\": 64, \"o_rel_rms_vs_fp64\": " << acc.o_rel_rms
      << ", \"pool_rel_rms_vs_fp64\": " << acc.pool_rel_rms << ", \"elements\": " << acc.elements
      << ", \"differ_from_simulation\": " << acc.differ_from_simulation << "}\n}\n";
    std::ofstream(json_path) << j.str();
    std::printf("wrote %s\n", json_path.c_str());
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "decode_bench: %s\n", e.what());
  return 1;
}
