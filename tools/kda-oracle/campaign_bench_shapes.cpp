#include "campaign_bench_shapes.hpp"

#include <algorithm>
#include <numeric>
#include <random>
#include <stdexcept>

namespace kda::cli {

namespace {

struct Size {
  std::int64_t heads, head_dim;
};

ProblemSpec common(Size size) {
  ProblemSpec s;
  s.H = s.HV = size.heads, s.K = s.V = size.head_dim;
  s.input_dtype = s.output_dtype = DType::bf16;
  s.state_dtype = DType::f32;
  s.options.l2norm_qk = s.options.gate_in_kernel = s.options.beta_from_logits = true;
  s.with_A_log = s.with_dt_bias = true;
  return s;
}

// One token per sequence, each sequence's slot of an N-slot pool drawn from a shuffled order.
ProblemSpec decode(Size size, std::int64_t N) {
  ProblemSpec s = common(size);
  s.mode = Mode::decode;
  s.lengths.assign(static_cast<std::size_t>(N), 1);
  s.state = StateSource::pool, s.pool_slots = N;
  s.indices.resize(static_cast<std::size_t>(N));
  std::iota(s.indices.begin(), s.indices.end(), 0);
  std::shuffle(s.indices.begin(), s.indices.end(), std::mt19937_64(7));
  return s;
}

// N requests of L tokens, a pool of N x L slots in a shuffled order, accepted counts drawn in [1, L].
ProblemSpec verify(Size size, std::int64_t N, std::int64_t L) {
  ProblemSpec s = decode(size, N);
  s.mode = Mode::verify, s.state = StateSource::table, s.final_state = false, s.L = L;
  s.lengths.assign(static_cast<std::size_t>(N), L);
  s.pool_slots = N * L;
  s.indices.resize(static_cast<std::size_t>(N * L));
  std::iota(s.indices.begin(), s.indices.end(), 0);
  std::mt19937_64 random(8);
  std::shuffle(s.indices.begin(), s.indices.end(), random);
  for (std::int64_t n = 0; n < N; ++n) s.accepted.push_back(1 + static_cast<std::int64_t>(random() % L));
  return s;
}

// Varlen prefill from dense initial states, with final states.
ProblemSpec prefill(Size size, std::vector<std::int64_t> lengths) {
  ProblemSpec s = common(size);
  s.lengths = std::move(lengths);
  s.state = StateSource::dense;
  return s;
}

}  // namespace

std::vector<BenchShape> bench_shapes(std::string_view set) {
  if (set == "standard") {
    const Size size{32, 128};
    return {{"decode N=64", decode(size, 64)},
            {"decode N=256", decode(size, 256)},
            {"decode N=1024", decode(size, 1024)},
            {"verify N=256 L=4", verify(size, 256, 4)},
            {"verify N=256 L=8", verify(size, 256, 8)},
            {"prefill 1x8192", prefill(size, {8192})},
            {"prefill 8x2048", prefill(size, std::vector<std::int64_t>(8, 2048))},
            {"prefill 32x512", prefill(size, std::vector<std::int64_t>(32, 512))},
            {"prefill 100,2000,37,900,4000,1,1155", prefill(size, {100, 2000, 37, 900, 4000, 1, 1155})}};
  }
  if (set == "tiny") {
    const Size size{2, 16};
    return {{"decode N=4", decode(size, 4)},
            {"verify N=4 L=4", verify(size, 4, 4)},
            {"prefill 1x64", prefill(size, {64})},
            {"prefill 16,48,5", prefill(size, {16, 48, 5})}};
  }
  throw std::invalid_argument("benchmark shapes '" + std::string(set) + "': expected standard or tiny");
}

}  // namespace kda::cli
