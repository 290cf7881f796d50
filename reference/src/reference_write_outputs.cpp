#include <initializer_list>

#include "kda/reference.hpp"

namespace kda {

namespace {

// Every element of t from a dense row-major array of the same shape, rounded to t's dtype.
void store_dense(const std::vector<double>& values, Tensor& t) {
  std::size_t i = 0;
  for_each_index(t.shape(), [&](std::span<const std::int64_t> idx) { t.set(idx, values[i++]); });
}

// One state (HV heads, dense row-major at `from`) into states[lead..] of a [.., HV, a, b] tensor.
void store_state(const double* from, Tensor& states, std::initializer_list<std::int64_t> lead, const Shape& head,
                 std::int64_t HV) {
  std::vector<std::int64_t> idx(lead);
  idx.resize(lead.size() + 3);
  const std::size_t d = lead.size();
  for (idx[d] = 0; idx[d] < HV; ++idx[d])
    for (idx[d + 1] = 0; idx[d + 1] < head[0]; ++idx[d + 1])
      for (idx[d + 2] = 0; idx[d + 2] < head[1]; ++idx[d + 2]) states.set(idx, *from++);
}

// A verify call: the state after each token where token_slot names, nothing else of the pool.
void write_verify_states(const ReferenceOutputs& out, Problem& p) {
  const Shape head = p.state_head_shape();
  const std::int64_t state = p.HV * p.K * p.V;
  for (std::int64_t n = 0; n < p.N; ++n) {
    if (!out.written[static_cast<std::size_t>(n)]) continue;
    for (std::int64_t t = 0; t < p.length(n); ++t) {
      const std::int64_t slot = p.token_slot(n, t);
      if (slot < 0) continue;
      const double* from = &out.token_states[static_cast<std::size_t>((p.row(n) * p.T + p.first(n) + t) * state)];
      if (p.scratch_states)
        store_state(from, *p.scratch_states, {slot, t}, head, p.HV);
      else
        store_state(from, *p.state_pool, {slot}, head, p.HV);
    }
  }
}

}  // namespace

void write_outputs(const ReferenceOutputs& out, Problem& p) {
  store_dense(out.o, p.o);
  if (p.mode == Mode::verify) return write_verify_states(out, p);
  if (p.chunk_states) store_dense(out.chunk_states, *p.chunk_states);
  if (p.token_states) store_dense(out.token_states, *p.token_states);
  if (p.final_state) store_dense(out.final_state, *p.final_state);
  if (!p.state_pool) return;
  // In place, at the sequences' slots only; padding rows (written = 0) leave the pool untouched.
  const Shape head = p.state_head_shape();
  const std::int64_t HV = p.HV, KV = p.K * p.V;
  for (std::int64_t n = 0; n < p.N; ++n) {
    if (!out.written[static_cast<std::size_t>(n)]) continue;
    const std::int64_t slot = p.state_indices->integer_at(n);
    for (std::int64_t hv = 0; hv < HV; ++hv)
      for (std::int64_t a = 0; a < head[0]; ++a)
        for (std::int64_t b = 0; b < head[1]; ++b)
          p.state_pool->set({slot, hv, a, b}, out.final_state[static_cast<std::size_t>((n * HV + hv) * KV + a * head[1] + b)]);
  }
}

}  // namespace kda
