#include "kda/reference.hpp"

namespace kda {

namespace {

// Every element of t from a dense row-major array of the same shape, rounded to t's dtype.
void store_dense(const std::vector<double>& values, Tensor& t) {
  std::size_t i = 0;
  for_each_index(t.shape(), [&](std::span<const std::int64_t> idx) { t.set(idx, values[i++]); });
}

}  // namespace

void write_outputs(const ReferenceOutputs& out, Problem& p) {
  store_dense(out.o, p.o);
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
