#include "kda/problem_factory.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <numeric>
#include <random>
#include <stdexcept>
#include <utility>

#include "kda/memory.hpp"

namespace kda {

namespace {

// Chunks over all sequences, from the spec (Problem::total_chunks reads cu_seqlens).
std::int64_t total_chunks(const ProblemSpec& s) {
  const std::int64_t C = s.options.chunk_size;
  std::int64_t chunks = 0;
  if (C > 0)
    for (auto L : s.lengths) chunks += (L + C - 1) / C;
  return chunks;
}

}  // namespace

std::string_view name_of(StateSource s) {
  switch (s) {
    case StateSource::none: return "none";
    case StateSource::dense: return "dense";
    case StateSource::pool: return "pool";
    case StateSource::table: return "table";
    case StateSource::scratch: return "scratch";
  }
  return "?";
}

bool is_verify_source(StateSource s) { return s == StateSource::table || s == StateSource::scratch; }

Problem make_problem(const ProblemSpec& s) {
  Problem p;
  p.mode = s.mode;
  p.options = s.options;
  p.N = static_cast<std::int64_t>(s.lengths.size());
  p.H = s.H, p.HV = s.HV, p.K = s.K, p.V = s.V;
  if (s.varlen) {
    p.B = 1;
    p.T = std::accumulate(s.lengths.begin(), s.lengths.end(), std::int64_t{0});
  } else {
    p.B = p.N;
    p.T = s.lengths.empty() ? 0 : s.lengths.front();
    for (auto L : s.lengths)
      if (L != p.T) throw std::invalid_argument("make_problem: a non-varlen batch needs equal lengths");
  }
  // Every view first, then one admission check for all the buffers, then the buffers.
  std::vector<std::pair<const char*, Tensor*>> planned;
  auto plan = [&](const char* name, Tensor& t, DType dtype, Shape shape) {
    t.view = contiguous_view(dtype, std::move(shape));
    planned.emplace_back(name, &t);
  };
  const Shape head_state = p.state_head_shape();
  auto with_state = [&](Shape lead) {
    lead.push_back(p.HV);
    lead.insert(lead.end(), head_state.begin(), head_state.end());
    return lead;
  };
  if (s.varlen) plan("cu_seqlens", p.cu_seqlens.emplace(), s.cu_seqlens_dtype, {p.N + 1});
  plan("q", p.q, s.input_dtype, {p.B, p.T, p.H, p.K});
  plan("k", p.k, s.input_dtype, {p.B, p.T, p.H, p.K});
  plan("v", p.v, s.input_dtype, {p.B, p.T, p.HV, p.V});
  plan("g", p.g, s.input_dtype, {p.B, p.T, p.HV, p.K});
  plan("beta", p.beta, s.input_dtype, {p.B, p.T, p.HV});
  plan("o", p.o, s.output_dtype, {p.B, p.T, p.HV, p.V});
  if (s.with_A_log) plan("A_log", p.A_log.emplace(), DType::f32, {p.HV});
  if (s.with_dt_bias) plan("dt_bias", p.dt_bias.emplace(), DType::f32, {p.HV * p.K});
  if (s.state == StateSource::dense) plan("initial_state", p.initial_state.emplace(), s.state_dtype, with_state({p.N}));
  const bool pooled = s.state == StateSource::pool || is_verify_source(s.state);
  if (!pooled && s.final_state) plan("final_state", p.final_state.emplace(), s.state_dtype, with_state({p.N}));
  if (is_verify_source(s.state))
    p.L = s.L ? s.L : s.lengths.empty() ? 1 : *std::max_element(s.lengths.begin(), s.lengths.end());
  const bool table = s.state == StateSource::table;
  if (pooled) {
    const std::int64_t slots = s.pool_slots ? s.pool_slots : table ? p.N * p.L + 2 : p.N + 2;
    plan("state_pool", p.state_pool.emplace(), s.state_dtype, with_state({slots}));
    p.state_pool->view.offset = s.pool_offset;
    if (s.pool_slot_stride) p.state_pool->view.strides[0] = s.pool_slot_stride;
    plan("state_indices", p.state_indices.emplace(), DType::i32, table ? Shape{p.N, p.L} : Shape{p.N});
  }
  if (table) plan("num_accepted", p.num_accepted.emplace(), s.accepted_dtype, {p.N});
  if (s.state == StateSource::scratch) {
    const std::int64_t rows = s.scratch_rows ? s.scratch_rows : p.N, steps = s.scratch_steps ? s.scratch_steps : p.L;
    plan("scratch_states", p.scratch_states.emplace(), s.state_dtype, with_state({rows, steps}));
    plan("scratch_indices", p.scratch_indices.emplace(), DType::i32, {p.N});
  }
  if (s.chunk_states) plan("chunk_states", p.chunk_states.emplace(), s.state_dtype, with_state({total_chunks(s)}));
  if (s.token_states) plan("token_states", p.token_states.emplace(), s.state_dtype, with_state({p.B, p.T}));

  ByteTotal total;
  for (const auto& [name, t] : planned) total.add(Tensor::buffer_bytes(t->view));
  require_memory(total, "make_problem: the " + std::to_string(planned.size()) + " buffers of " + p.describe());
  for (auto& [name, t] : planned) *t = Tensor::with_view(name, std::move(t->view));

  if (p.cu_seqlens)
    for (std::int64_t n = 0, at = 0; n <= p.N; ++n) {
      p.cu_seqlens->set_integer(n, at);
      if (n < p.N) at += s.lengths[static_cast<std::size_t>(n)];
    }
  auto at = [](const std::vector<std::int64_t>& xs, std::int64_t i) { return xs[static_cast<std::size_t>(i)]; };
  for (std::int64_t n = 0; p.state_indices && n < p.N; ++n) {
    if (!table) {
      p.state_indices->set_integer(n, s.indices.empty() ? n + 1 : at(s.indices, n));
      continue;
    }
    for (std::int64_t t = 0; t < p.L; ++t)
      p.state_indices->set_integer(n, t, s.indices.empty() ? n * p.L + t + 1 : at(s.indices, n * p.L + t));
    p.num_accepted->set_integer(n, s.accepted.empty() ? 1 : at(s.accepted, n));
  }
  for (std::int64_t n = 0; p.scratch_indices && n < p.N; ++n)
    p.scratch_indices->set_integer(n, s.scratch_indices.empty() ? n : at(s.scratch_indices, n));
  return p;
}

namespace {

// The law of one random input: offset + scale X with X ~ N(0,1) or U(0,1), or log(1 + scale U).
struct Law {
  enum Kind : std::uint8_t { normal, uniform, log_uniform } kind = normal;
  double scale = 1, offset = 0;
  template <class Rng>
  double draw(Rng& rng, std::normal_distribution<double>& n, std::uniform_real_distribution<double>& u) const {
    if (kind == log_uniform) return std::log(1.0 + scale * u(rng));
    const double x = kind == normal ? n(rng) : u(rng);
    return offset == 0 ? scale * x : offset + scale * x;  // scale 1: x itself
  }
};

// Every random input with its law, in fill_random's order of draws (documented in the header).
std::vector<std::pair<Tensor*, Law>> random_inputs(Problem& p) {
  std::vector<std::pair<Tensor*, Law>> inputs{{&p.q, {}}, {&p.k, {}}, {&p.v, {}}};
  inputs.push_back({&p.g, p.options.gate_in_kernel ? Law{} : Law{Law::uniform, 1, -1}});
  inputs.push_back({&p.beta, p.options.beta_from_logits ? Law{} : Law{Law::uniform}});
  if (p.A_log) inputs.push_back({&*p.A_log, {Law::log_uniform, 15}});
  if (p.dt_bias) inputs.push_back({&*p.dt_bias, {Law::normal, 0.5}});
  if (p.initial_state) inputs.push_back({&*p.initial_state, {Law::normal, 0.1}});
  if (p.state_pool) inputs.push_back({&*p.state_pool, {Law::normal, 0.1}});
  return inputs;
}

// Without l2norm in the kernel, the caller normalises: unit rows keep each delta step a contraction
// (N(0,1) keys of norm ~sqrt(K) make the state grow without bound).
void normalise_qk_rows(Problem& p) {
  if (p.options.l2norm_qk) return;
  for (Tensor* x : {&p.q, &p.k})
    for_each_index(Shape{p.B, p.T, p.H}, [&](std::span<const std::int64_t> i) {
      double norm = 0;
      for (std::int64_t c = 0; c < p.K; ++c) norm += x->at({i[0], i[1], i[2], c}) * x->at({i[0], i[1], i[2], c});
      norm = std::sqrt(norm);
      if (norm > 0)
        for (std::int64_t c = 0; c < p.K; ++c) x->set({i[0], i[1], i[2], c}, x->at({i[0], i[1], i[2], c}) / norm);
    });
}

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

void fill_random(Problem& p, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (const auto& input : random_inputs(p)) {
    Tensor& t = *input.first;  // (not a structured binding: clang before 16 cannot capture one)
    const Law& law = input.second;
    for_each_index(t.shape(), [&](auto idx) { t.set(idx, law.draw(rng, normal, unit)); });
  }
  normalise_qk_rows(p);
}

void fill_random_parallel(Problem& p, std::uint64_t seed) {
  constexpr std::int64_t kBlock = 1 << 16;  // elements a stream
  const auto inputs = random_inputs(p);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    Tensor& t = *inputs[i].first;
    const Law law = inputs[i].second;
    const Shape& shape = t.shape();
    const std::int64_t blocks = (t.numel() + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(dynamic)
    for (std::int64_t b = 0; b < blocks; ++b) {
      const auto stream = (static_cast<std::uint64_t>(i) << 40) + static_cast<std::uint64_t>(b);
      std::mt19937_64 rng(splitmix64(seed ^ splitmix64(stream)));
      std::normal_distribution<double> normal(0.0, 1.0);
      std::uniform_real_distribution<double> unit(0.0, 1.0);
      std::vector<std::int64_t> idx(shape.size());  // the multi-index of element b kBlock (row-major)
      for (std::int64_t rest = b * kBlock, d = static_cast<std::int64_t>(shape.size()) - 1; d >= 0; --d) {
        const std::int64_t extent = shape[static_cast<std::size_t>(d)];
        idx[static_cast<std::size_t>(d)] = rest % extent, rest /= extent;
      }
      for (std::int64_t e = b * kBlock; e < std::min(t.numel(), (b + 1) * kBlock); ++e) {
        t.set(idx, law.draw(rng, normal, unit));
        for (auto d = static_cast<std::int64_t>(shape.size()) - 1; d >= 0; --d) {
          if (++idx[static_cast<std::size_t>(d)] < shape[static_cast<std::size_t>(d)]) break;
          idx[static_cast<std::size_t>(d)] = 0;
        }
      }
    }
  }
  normalise_qk_rows(p);
}

Problem deep_copy(const Problem& p) {
  Problem c = p;
  std::map<const GuardedBuffer*, std::shared_ptr<GuardedBuffer>> copies;
  auto copy = [&](Tensor& t) {
    auto& fresh = copies[t.buffer.get()];
    if (!fresh) {
      fresh = std::make_shared<GuardedBuffer>(t.buffer->name(), t.buffer->size());
      std::memcpy(fresh->band_before(), t.buffer->band_before(), t.buffer->size() + 2 * GuardedBuffer::kGuardBytes);
    }
    t.buffer = fresh;
  };
  for (const auto& f : tensor_fields())
    if (Tensor* t = f.in(c)) copy(*t);
  return c;
}

}  // namespace kda
