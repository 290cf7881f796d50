// read_outputs: what a kernel left in the output tensors, through their strided views, as dense fp64.
#include <algorithm>

#include "kda/properties/comparison.hpp"

namespace kda::props {

namespace {

// Appends every element of `view` in row-major order, one row of the last dimension at a time.
void append_dense(const std::byte* payload, const View& view, std::vector<double>& out) {
  if (view.numel() <= 0) return;
  const Shape rows(view.shape.begin(), view.shape.end() - 1);
  const std::int64_t n = view.shape.back(), stride = view.strides.back();
  for_each_index(rows, [&](std::span<const std::int64_t> row) {
    const std::int64_t first = view.element_at(row);
    for (std::int64_t i = 0; i < n; ++i) out.push_back(load_element(payload, view.dtype, first + i * stride));
  });
}

std::vector<double> read_dense(const Tensor& t) {
  std::vector<double> out;
  out.reserve(static_cast<std::size_t>(std::max<std::int64_t>(t.numel(), 0)));
  append_dense(t.buffer->data(), t.view, out);
  return out;
}

// The final states through the indices: slot indices[n] for sequence n, zeros for a padding row.
void read_pool(const Problem& p, ReferenceOutputs& out) {
  const Tensor& pool = *p.state_pool;
  const std::size_t per_sequence = static_cast<std::size_t>(p.HV * p.K * p.V);
  out.final_state.reserve(per_sequence * static_cast<std::size_t>(p.N));
  for (std::int64_t n = 0; n < p.N; ++n) {
    const std::int64_t slot = p.state_indices->integer_at(n);
    if (slot < 0) {
      out.final_state.resize(out.final_state.size() + per_sequence, 0.0);
      out.written[static_cast<std::size_t>(n)] = 0;
      continue;
    }
    const View one_slot{pool.dtype(), Shape(pool.shape().begin() + 1, pool.shape().end()),
                        Shape(pool.view.strides.begin() + 1, pool.view.strides.end()),
                        pool.view.element_at({slot, 0, 0, 0})};
    append_dense(pool.buffer->data(), one_slot, out.final_state);
  }
}

}  // namespace

ReferenceOutputs read_outputs(const Problem& p) {
  ReferenceOutputs out;
  out.o = read_dense(p.o);
  out.written.assign(static_cast<std::size_t>(p.N), 1);
  if (p.final_state)
    out.final_state = read_dense(*p.final_state);
  else if (p.state_pool)
    read_pool(p, out);
  else  // no state output: nothing to read, zeros of the reference's size (not compared)
    out.final_state.assign(static_cast<std::size_t>(p.N * p.HV * p.K * p.V), 0.0);
  if (p.chunk_states) out.chunk_states = read_dense(*p.chunk_states);
  if (p.token_states) out.token_states = read_dense(*p.token_states);
  return out;
}

}  // namespace kda::props
