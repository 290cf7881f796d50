#include "kda/problem_factory.hpp"

#include <cmath>
#include <cstring>
#include <map>
#include <numeric>
#include <random>
#include <stdexcept>

namespace kda {

Problem make_problem(const ProblemSpec& s) {
  Problem p;
  p.mode = s.mode;
  p.options = s.options;
  p.N = static_cast<std::int64_t>(s.lengths.size());
  p.H = s.H, p.HV = s.HV, p.K = s.K, p.V = s.V;
  if (s.varlen) {
    p.B = 1;
    p.T = std::accumulate(s.lengths.begin(), s.lengths.end(), std::int64_t{0});
    p.cu_seqlens = Tensor::zeros("cu_seqlens", s.cu_seqlens_dtype, {p.N + 1});
    std::int64_t at = 0;
    for (std::int64_t n = 0; n <= p.N; ++n) {
      p.cu_seqlens->set_integer(n, at);
      if (n < p.N) at += s.lengths[static_cast<std::size_t>(n)];
    }
  } else {
    p.B = p.N;
    p.T = s.lengths.empty() ? 0 : s.lengths.front();
    for (auto L : s.lengths)
      if (L != p.T) throw std::invalid_argument("make_problem: a non-varlen batch needs equal lengths");
  }
  const Shape head_state = p.state_head_shape();
  auto with_state = [&](std::int64_t lead, std::int64_t second = -1) {
    Shape sh{lead};
    if (second >= 0) sh.push_back(second);
    sh.push_back(p.HV);
    sh.insert(sh.end(), head_state.begin(), head_state.end());
    return sh;
  };
  p.q = Tensor::zeros("q", s.input_dtype, {p.B, p.T, p.H, p.K});
  p.k = Tensor::zeros("k", s.input_dtype, {p.B, p.T, p.H, p.K});
  p.v = Tensor::zeros("v", s.input_dtype, {p.B, p.T, p.HV, p.V});
  p.g = Tensor::zeros("g", s.input_dtype, {p.B, p.T, p.HV, p.K});
  p.beta = Tensor::zeros("beta", s.input_dtype, {p.B, p.T, p.HV});
  p.o = Tensor::zeros("o", s.output_dtype, {p.B, p.T, p.HV, p.V});
  if (s.with_A_log) p.A_log = Tensor::zeros("A_log", DType::f32, {p.HV});
  if (s.with_dt_bias) p.dt_bias = Tensor::zeros("dt_bias", DType::f32, {p.HV * p.K});
  if (s.state == StateSource::dense) p.initial_state = Tensor::zeros("initial_state", s.state_dtype, with_state(p.N));
  if (s.state != StateSource::pool && s.final_state)
    p.final_state = Tensor::zeros("final_state", s.state_dtype, with_state(p.N));
  if (s.state == StateSource::pool) {
    const std::int64_t slots = s.pool_slots ? s.pool_slots : p.N + 2;
    View pool = contiguous_view(s.state_dtype, with_state(slots), s.pool_offset);
    if (s.pool_slot_stride) pool.strides[0] = s.pool_slot_stride;
    p.state_pool = Tensor::with_view("state_pool", pool);
    p.state_indices = Tensor::zeros("state_indices", DType::i32, {p.N});
    for (std::int64_t n = 0; n < p.N; ++n)
      p.state_indices->set_integer(n, s.indices.empty() ? n + 1 : s.indices[static_cast<std::size_t>(n)]);
  }
  if (s.chunk_states) p.chunk_states = Tensor::zeros("chunk_states", s.state_dtype, with_state(p.total_chunks()));
  if (s.token_states) {
    Shape sh{p.B, p.T, p.HV};
    sh.insert(sh.end(), head_state.begin(), head_state.end());
    p.token_states = Tensor::zeros("token_states", s.state_dtype, sh);
  }
  return p;
}

void fill_random(Problem& p, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  auto fill = [&](Tensor& t, auto&& draw) { for_each_index(t.shape(), [&](auto idx) { t.set(idx, draw()); }); };
  fill(p.q, [&] { return normal(rng); });
  fill(p.k, [&] { return normal(rng); });
  // Without l2norm in the kernel, the caller normalises: unit rows keep each delta step a
  // contraction (N(0,1) keys of norm ~sqrt(K) make the state grow without bound).
  if (!p.options.l2norm_qk)
    for (Tensor* x : {&p.q, &p.k})
      for_each_index(Shape{p.B, p.T, p.H}, [&](std::span<const std::int64_t> i) {
        double norm = 0;
        for (std::int64_t c = 0; c < p.K; ++c) norm += x->at({i[0], i[1], i[2], c}) * x->at({i[0], i[1], i[2], c});
        norm = std::sqrt(norm);
        if (norm > 0)
          for (std::int64_t c = 0; c < p.K; ++c) x->set({i[0], i[1], i[2], c}, x->at({i[0], i[1], i[2], c}) / norm);
      });
  fill(p.v, [&] { return normal(rng); });
  if (p.options.gate_in_kernel)
    fill(p.g, [&] { return normal(rng); });
  else
    fill(p.g, [&] { return -1.0 + unit(rng); });
  if (p.options.beta_from_logits)
    fill(p.beta, [&] { return normal(rng); });
  else
    fill(p.beta, [&] { return unit(rng); });
  if (p.A_log) fill(*p.A_log, [&] { return std::log(1.0 + 15.0 * unit(rng)); });
  if (p.dt_bias) fill(*p.dt_bias, [&] { return 0.5 * normal(rng); });
  if (p.initial_state) fill(*p.initial_state, [&] { return 0.1 * normal(rng); });
  if (p.state_pool) fill(*p.state_pool, [&] { return 0.1 * normal(rng); });
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
  for (Tensor* t : {&c.q, &c.k, &c.v, &c.g, &c.beta, &c.o}) copy(*t);
  for (auto* t : {&c.cu_seqlens, &c.A_log, &c.dt_bias, &c.initial_state, &c.state_pool, &c.state_indices,
                  &c.final_state, &c.chunk_states, &c.token_states})
    if (*t) copy(**t);
  return c;
}

}  // namespace kda
