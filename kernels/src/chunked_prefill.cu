// The chunked prefill's kernels (stage A: the gates, then the prepare kernel; stage B: the scan, in five
// forms, kernels/src/chunked/) and their launch. chunked_prefill_sim.cpp is their CPU twin: a change to the
// arithmetic there must be made here too (tests/gpu/chunked_cuda_vs_sim_test compares the two).
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <climits>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "kda/kernels/chunked_prefill.hpp"
#include "chunked/gate_kernel.cuh"
#include "chunked/prepare_kernel.cuh"
#include "chunked/scan_kernel.cuh"
#include "chunked/scan_transposed_kernel.cuh"

namespace kda::kernels {

namespace {

// Grid size checks and the opt-in above 48 KiB of dynamic shared memory (cheap: done on every launch).
template <class Kernel>
cudaError_t prepare_launch(Kernel kernel, std::int64_t blocks, std::size_t shared) {
  if (blocks > INT_MAX) return cudaErrorInvalidConfiguration;
  return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared));
}

// The current device's SM count: the prepare kernel's grid (a block per SM) and stage B's choice of form.
cudaError_t sm_count(int& sms) {
  int device = 0;
  if (const cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
  return cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
}

template <int K>
cudaError_t launch_gates(const ChunkedParams& params, cudaStream_t stream) {
  const std::int64_t blocks = params.num_chunks * params.call.HV;
  if (blocks == 0) return cudaSuccess;
  if (const cudaError_t e = prepare_launch(gate_kernel<K>, blocks, 0); e != cudaSuccess) return e;
  gate_kernel<K><<<static_cast<unsigned>(blocks), kGateThreads, 0, stream>>>(params);
  return cudaGetLastError();
}

template <int K>
cudaError_t launch_prepare(const ChunkedParams& params, cudaStream_t stream) {
  const std::int64_t slots = params.num_chunks * params.call.HV;
  if (slots == 0) return cudaSuccess;
  if (slots > INT_MAX) return cudaErrorInvalidConfiguration;  // slot_index's range (the gates' grid, too)
  if (const cudaError_t e = launch_gates<K>(params, stream); e != cudaSuccess) return e;
  int sms = 0;
  if (const cudaError_t e = sm_count(sms); e != cudaSuccess) return e;
  const std::int64_t blocks = slots < sms ? slots : sms;  // one block per SM, slot after slot
  if (const cudaError_t e = prepare_launch(prepare_kernel<K>, blocks, PrepareLayout<K>::bytes); e != cudaSuccess)
    return e;
  prepare_kernel<K><<<static_cast<unsigned>(blocks), kPrepareThreads, PrepareLayout<K>::bytes, stream>>>(params);
  return cudaGetLastError();
}

// Pair stores when every pair stage B stores is one aligned 4-byte word: o in bf16 or fp16 with unit
// channel stride, an aligned base and even strides (a pair starts at an even channel).
OStore o_store_of(const TensorRef& o) {
  const bool half = o.dtype == DType::bf16 || o.dtype == DType::f16;
  const bool aligned = reinterpret_cast<std::uintptr_t>(o.data) % 4 == 0 && o.stride[0] % 2 == 0 &&
                       o.stride[1] % 2 == 0 && o.stride[2] % 2 == 0;
  if (!half || o.stride[3] != 1 || !aligned) return OStore::any;
  return o.dtype == DType::bf16 ? OStore::bf16_pairs : OStore::f16_pairs;
}

template <int K>
cudaError_t launch_scan(const ChunkedParams& params, cudaStream_t stream) {
  const std::int64_t value_tiles = params.call.V / kValueTile, heads = params.call.N * params.call.HV;
  if (heads == 0) return cudaSuccess;
  ScanForm form = ScanForm::automatic;
  if (const cudaError_t e = chunked_scan_form(params, form); e != cudaSuccess) return e;
  if (form == ScanForm::paired && value_tiles % 2 != 0) return cudaErrorInvalidValue;  // V of 64 or 128 only
  const auto launch = [&](auto form_constant, auto o_constant) {
    constexpr ScanForm kForm = decltype(form_constant)::value;
    constexpr OStore kO = decltype(o_constant)::value;
    using Shape = ScanShape<kForm>;
    const int tiles = static_cast<int>(value_tiles / Shape::tiles);
    const std::int64_t blocks = heads * tiles;
    const auto kernel = [] {
      if constexpr (kForm == ScanForm::transposed) return scan_transposed_kernel<K, kO>;
      else return scan_kernel<K, kForm, kO>;
    }();
    constexpr std::size_t bytes = ScanLayout<K, kForm>::bytes;
    if (const cudaError_t e = prepare_launch(kernel, blocks, bytes); e != cudaSuccess) return e;
    kernel<<<static_cast<unsigned>(blocks), Shape::threads, bytes, stream>>>(params, tiles);
    return cudaGetLastError();
  };
  const auto with_o = [&](auto form_constant) {
    switch (o_store_of(params.call.o)) {
      case OStore::bf16_pairs:
        return launch(form_constant, std::integral_constant<OStore, OStore::bf16_pairs>{});
      case OStore::f16_pairs:
        return launch(form_constant, std::integral_constant<OStore, OStore::f16_pairs>{});
      default:
        return launch(form_constant, std::integral_constant<OStore, OStore::any>{});
    }
  };
  switch (form) {
    case ScanForm::single_buffered:
      return with_o(std::integral_constant<ScanForm, ScanForm::single_buffered>{});
    case ScanForm::paired:
      return with_o(std::integral_constant<ScanForm, ScanForm::paired>{});
    case ScanForm::wide:
      return with_o(std::integral_constant<ScanForm, ScanForm::wide>{});
    case ScanForm::transposed:
      return with_o(std::integral_constant<ScanForm, ScanForm::transposed>{});
    default:
      return with_o(std::integral_constant<ScanForm, ScanForm::double_buffered>{});
  }
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

// What the kernels' thread mappings assume (admit_chunked guarantees it; checked again before a launch):
// K of 64 or 128, V a multiple of the value tile, two stage-A threads per column of [v | k].
bool launchable(const ChunkedParams& params) {
  const std::int64_t K = params.call.K, V = params.call.V;
  return (K == 64 || K == 128) && V > 0 && V % kValueTile == 0 && V <= kMaxValue;
}

}  // namespace

cudaError_t launch_chunked_gates(const ChunkedParams& params, cudaStream_t stream) {
  if (!launchable(params)) return cudaErrorInvalidValue;
  return params.call.K == 64 ? launch_gates<64>(params, stream) : launch_gates<128>(params, stream);
}

cudaError_t launch_chunked_prepare(const ChunkedParams& params, cudaStream_t stream) {
  if (!launchable(params)) return cudaErrorInvalidValue;
  return params.call.K == 64 ? launch_prepare<64>(params, stream) : launch_prepare<128>(params, stream);
}

cudaError_t chunked_scan_form(const ChunkedParams& params, ScanForm& form) {
  const std::int64_t value_tiles = params.call.V / kValueTile;
  form = params.scan_form;
  if (form == ScanForm::automatic) {
    int sms = 0;
    if (const cudaError_t e = sm_count(sms); e != cudaSuccess) return e;
    form = estimated_scan_form(params, sms);
  }
  // The wide and transposed forms' 128 channels need V = 128: at V = 64 they are the paired form.
  if ((form == ScanForm::wide || form == ScanForm::transposed) && value_tiles % 4 != 0) form = ScanForm::paired;
  return cudaSuccess;
}

cudaError_t launch_chunked_scan(const ChunkedParams& params, cudaStream_t stream) {
  if (!launchable(params)) return cudaErrorInvalidValue;
  return params.call.K == 64 ? launch_scan<64>(params, stream) : launch_scan<128>(params, stream);
}

cudaError_t launch_chunked_prefill(const ChunkedParams& params, cudaStream_t stream) {
  if (const cudaError_t e = launch_chunked_prepare(params, stream); e != cudaSuccess) return e;
  return launch_chunked_scan(params, stream);
}

ChunkedDeviceCall::ChunkedDeviceCall(const Problem& problem, const PayloadAddress& device_payload) {
  const ChunkTable table = make_chunk_table(problem);
  const auto chunks = static_cast<std::int64_t>(table.chunks.size());
  const std::size_t entries = sizeof(ChunkEntry) * table.chunks.size();
  const std::size_t sequences = sizeof(std::int64_t) * table.sequence_chunks.size();
  const std::size_t order = sizeof(std::int64_t) * table.longest_first.size();
  try {
    check(cudaMalloc(&table_, entries + sequences + order), "cudaMalloc (chunk table)");
    check(cudaMalloc(&workspace_, chunked_workspace_bytes(chunks, problem.HV, problem.K, problem.V) + 256),
          "cudaMalloc (workspace)");
    auto* device_entries = static_cast<ChunkEntry*>(table_);
    auto* device_sequences = reinterpret_cast<std::int64_t*>(static_cast<std::byte*>(table_) + entries);
    check(cudaMemcpy(device_entries, table.chunks.data(), entries, cudaMemcpyHostToDevice), "cudaMemcpy (chunks)");
    std::int64_t* device_order = device_sequences + table.sequence_chunks.size();
    check(cudaMemcpy(device_sequences, table.sequence_chunks.data(), sequences, cudaMemcpyHostToDevice),
          "cudaMemcpy (sequences)");
    check(cudaMemcpy(device_order, table.longest_first.data(), order, cudaMemcpyHostToDevice), "cudaMemcpy (order)");
    params_ = make_chunked_params(problem, device_payload, table, {device_entries, device_sequences, device_order},
                                  static_cast<std::byte*>(workspace_));
  } catch (...) {
    cudaFree(table_), cudaFree(workspace_);
    throw;
  }
}

ChunkedDeviceCall::~ChunkedDeviceCall() { cudaFree(table_), cudaFree(workspace_); }

}  // namespace kda::kernels
