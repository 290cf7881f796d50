// read_outputs: what a kernel left in the output tensors, through their strided views, as dense fp64.
#include <algorithm>
#include <initializer_list>

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

// One state (HV heads) of a pool slot or a scratch step, appended in the reference's dense order.
void append_state(const Tensor& states, std::initializer_list<std::int64_t> lead, std::vector<double>& out) {
  const std::size_t d = lead.size();
  Shape at(lead);
  at.resize(d + 3, 0);
  const View one{states.dtype(), Shape(states.shape().begin() + static_cast<std::ptrdiff_t>(d), states.shape().end()),
                 Shape(states.view.strides.begin() + static_cast<std::ptrdiff_t>(d), states.view.strides.end()),
                 states.view.element_at(at)};
  append_dense(states.buffer->data(), one, out);
}

// A verify call: the state after every token, gathered from where its form stores it (pool slot
// token_slot(n, t), or scratch_states[token_slot(n, t), t]) into [B,T,HV,..]; zeros where nothing is
// stored (a padding request, a -1 entry, tokens of no request). No final state (not compared).
void read_verify(const Problem& p, ReferenceOutputs& out) {
  const auto per_state = static_cast<std::size_t>(p.HV * p.K * p.V);
  out.final_state.assign(per_state * static_cast<std::size_t>(p.N), 0.0);
  out.token_states.assign(per_state * static_cast<std::size_t>(p.B * p.T), 0.0);
  std::vector<double> one;
  for (std::int64_t n = 0; n < p.N; ++n) {
    out.written[static_cast<std::size_t>(n)] = p.initial_slot(n) >= 0;
    if (!out.written[static_cast<std::size_t>(n)]) continue;
    for (std::int64_t t = 0; t < p.length(n); ++t) {
      const std::int64_t slot = p.token_slot(n, t);
      if (slot < 0) continue;
      one.clear();
      if (p.scratch_states)
        append_state(*p.scratch_states, {slot, t}, one);
      else
        append_state(*p.state_pool, {slot}, one);
      std::copy(one.begin(), one.end(),
                out.token_states.begin() + static_cast<std::ptrdiff_t>((p.row(n) * p.T + p.first(n) + t) * static_cast<std::int64_t>(per_state)));
    }
  }
}

}  // namespace

ReferenceOutputs read_outputs(const Problem& p) {
  ReferenceOutputs out;
  out.o = read_dense(p.o);
  out.written.assign(static_cast<std::size_t>(p.N), 1);
  if (p.mode == Mode::verify) {
    read_verify(p, out);
    return out;
  }
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
