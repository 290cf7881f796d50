#include "kda/kernels/chunked_params.hpp"

#include <algorithm>

namespace kda::kernels {

namespace {

std::size_t aligned(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

struct WorkspaceSizes {
  std::size_t heads, alpha, qg, u, aqk, decay;  // bytes of one array each
};
WorkspaceSizes sizes(std::int64_t chunks, std::int64_t HV, std::int64_t K, std::int64_t V) {
  const auto heads = static_cast<std::size_t>(chunks * HV);
  return {heads,
          aligned(heads * kChunk * K * 4),
          aligned(heads * kChunk * K * 2),
          aligned(heads * kChunk * V * 2),
          aligned(heads * kChunk * kChunk * 2),
          aligned(heads * K * 4)};
}

// The estimate: the longer of the longest sequence's chain (its chunks times a chunk's time in that form
// when its SM is full: the chain cannot go faster than its own block's share) and the grid's work spread
// over the SMs (32-channel tile-chunks times their cost at full occupancy). Microseconds a chunk of one
// 32-channel tile, from prefill_bench's table of stage B in each form (H200, run of 2026-12-03T09:16Z;
// 8 x 2048: double-buffered 0.498 ms, single-buffered 0.460, paired 0.424, wide 0.357, each over 248
// tile-chunks an SM; the transposed form, on wgmma, 0.306 in a run of about 2026-12-04T20:02Z, wide 0.356
// there too); a block of `tiles` tiles takes tiles * cost a chunk, and two single-buffered blocks share an SM.
struct ScanFormCost {
  ScanForm form;
  int tiles, blocks_per_sm;
  double tile_chunk_us;
};
constexpr ScanFormCost kScanFormCosts[] = {{ScanForm::double_buffered, 1, 1, 2.01},
                                           {ScanForm::single_buffered, 1, 2, 1.85},
                                           {ScanForm::paired, 2, 1, 1.71},
                                           {ScanForm::wide, 4, 1, 1.44},
                                           {ScanForm::transposed, 4, 1, 1.23}};

}  // namespace

ChunkTable make_chunk_table(const Problem& p) {
  ChunkTable t;
  t.sequence_chunks.push_back(0);
  for (std::int64_t n = 0; n < p.N; ++n) {
    const std::int64_t length = p.length(n);
    for (std::int64_t c = 0; c * kChunk < length; ++c)
      t.chunks.push_back({p.row(n), p.first(n) + c * kChunk, static_cast<std::int32_t>(std::min<std::int64_t>(kChunk, length - c * kChunk)),
                          static_cast<std::int32_t>(n)});
    t.sequence_chunks.push_back(static_cast<std::int64_t>(t.chunks.size()));
  }
  t.longest_first.resize(static_cast<std::size_t>(p.N));
  for (std::int64_t n = 0; n < p.N; ++n) t.longest_first[static_cast<std::size_t>(n)] = n;
  std::stable_sort(t.longest_first.begin(), t.longest_first.end(),
                   [&](std::int64_t a, std::int64_t b) { return t.chunks_of(a) > t.chunks_of(b); });
  return t;
}

std::int64_t ChunkTable::chunks_of(std::int64_t n) const {
  return sequence_chunks[static_cast<std::size_t>(n + 1)] - sequence_chunks[static_cast<std::size_t>(n)];
}

std::int64_t ChunkTable::longest_chunks() const { return longest_first.empty() ? 0 : chunks_of(longest_first[0]); }

const char* name_of(ScanForm form) {
  switch (form) {
    case ScanForm::double_buffered: return "double_buffered";
    case ScanForm::single_buffered: return "single_buffered";
    case ScanForm::paired: return "paired";
    case ScanForm::wide: return "wide";
    case ScanForm::transposed: return "transposed";
    case ScanForm::automatic: break;
  }
  return "automatic";
}

ScanForm estimated_scan_form(const ChunkedParams& params, int sms) {
  const std::int64_t value_tiles = params.call.V / kValueTile;
  const auto tile_chunks = static_cast<double>(params.num_chunks * params.call.HV * value_tiles);
  ScanForm best = ScanForm::double_buffered;
  double best_us = 0;
  for (const ScanFormCost& f : kScanFormCosts) {
    if (value_tiles % f.tiles != 0) continue;
    const double chain_us = static_cast<double>(params.longest_chunks) * f.tiles * f.blocks_per_sm * f.tile_chunk_us;
    const double spread_us = tile_chunks * f.tile_chunk_us / sms;
    const double us = std::max(chain_us, spread_us);
    if (best_us == 0 || us < best_us) best = f.form, best_us = us;
  }
  return best;
}

std::size_t chunked_workspace_bytes(std::int64_t chunks, std::int64_t HV, std::int64_t K, std::int64_t V) {
  const WorkspaceSizes s = sizes(chunks, HV, K, V);
  return s.alpha + 3 * s.qg + s.u + s.aqk + s.decay;
}

ChunkedWorkspace carve_chunked_workspace(std::byte* base, std::int64_t chunks, std::int64_t HV, std::int64_t K,
                                         std::int64_t V) {
  const WorkspaceSizes s = sizes(chunks, HV, K, V);
  ChunkedWorkspace w;
  auto take = [&](std::size_t bytes) {
    std::byte* at = base;
    base += bytes;
    return at;
  };
  w.alpha = reinterpret_cast<float*>(take(s.alpha));
  w.qg = reinterpret_cast<std::uint16_t*>(take(s.qg));
  w.kg = reinterpret_cast<std::uint16_t*>(take(s.qg));
  w.w = reinterpret_cast<std::uint16_t*>(take(s.qg));
  w.u = reinterpret_cast<std::uint16_t*>(take(s.u));
  w.aqk = reinterpret_cast<std::uint16_t*>(take(s.aqk));
  w.decay = reinterpret_cast<float*>(take(s.decay));
  return w;
}

const Capabilities& chunked_capabilities() {
  static const Capabilities caps = [] {
    Capabilities c;
    c.modes = {Mode::prefill};
    c.input_dtypes = {DType::bf16, DType::f16, DType::f32};
    c.state_dtypes = {DType::f32, DType::bf16};
    c.key_head_dims = {64, 128};
    c.value_head_dims = {64, 128};
    c.max_head_dim = 128;
    c.chunk_sizes = {kChunk};
    c.token_states = false;
    return c;
  }();
  return caps;
}

std::string chunked_unsupported(const Problem& p) {
  const Capabilities& caps = chunked_capabilities();
  if (std::string why = caps.unsupported(p); !why.empty()) return why;
  for (const Tensor* t : {&p.k, &p.v, &p.g, &p.beta})
    if (std::find(caps.input_dtypes.begin(), caps.input_dtypes.end(), t->dtype()) == caps.input_dtypes.end())
      return t->name() + " in " + std::string(name_of(t->dtype()));
  return {};
}

RunOutcome admit_chunked(const Problem& problem, const std::string& kernel) {
  if (auto violations = validate(problem, profile_strict()); !violations.empty())
    return RunOutcome::rejected(std::move(violations));
  if (const std::string why = chunked_unsupported(problem); !why.empty())
    return RunOutcome::failed(kernel + " does not support " + why);
  return RunOutcome::ok();
}

ChunkedParams make_chunked_params(const Problem& problem, const PayloadAddress& payload, const ChunkTable& table,
                                  const TableAddress& at, std::byte* workspace) {
  ChunkedParams c;
  c.call = make_decode_params(problem, payload);
  c.chunk_states = state_ref(problem.chunk_states, problem.options.state_layout, payload);
  c.chunks = at.chunks, c.sequence_chunks = at.sequence_chunks, c.longest_first = at.longest_first;
  c.num_chunks = static_cast<std::int64_t>(table.chunks.size()), c.longest_chunks = table.longest_chunks();
  c.value_heads = FastDivisor(problem.HV), c.head_group = FastDivisor(problem.HV / problem.H);
  c.work = carve_chunked_workspace(workspace, c.num_chunks, problem.HV, problem.K, problem.V);
  return c;
}

}  // namespace kda::kernels
