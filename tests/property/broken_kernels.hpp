#pragma once
// Test doubles: kernels with one bug each, taken from the failures seen in real KDA kernels. The
// oracle's own tests run the catalogue against them and expect the right property to fail.
#include <algorithm>
#include <cstring>
#include <functional>

#include "kda/reference_kernel.hpp"

namespace kda::test {

// The fp32 reference with a hook that breaks it: `before` may change the problem the arithmetic
// sees, `after` may change the outputs before they are written, `write` replaces write_outputs.
class BrokenKernel : public Kernel {
 public:
  std::string name() const override { return name_; }
  const Capabilities& capabilities() const override { return capabilities_; }
  const Profile& profile() const override { return profile_strict(); }

  RunOutcome run(Problem& problem) override {
    if (auto v = validate(problem, profile()); !v.empty()) return RunOutcome::rejected(std::move(v));
    Problem seen = problem;  // shares the buffers: a bug that reinterprets views writes through them
    if (before) before(seen);
    ReferenceOutputs out = run_reference<float>(seen, Algorithm::recurrent, 1);
    if (after) after(out, seen);
    (write ? write : write_outputs)(out, seen);
    return RunOutcome::ok();
  }

  std::string name_;
  Capabilities capabilities_;
  std::function<void(Problem&)> before;
  std::function<void(ReferenceOutputs&, const Problem&)> after;
  std::function<void(const ReferenceOutputs&, Problem&)> write;
};

// Remaps a -1 padding index to the pool's last slot (a wrapper bug seen upstream): the padding row
// then reads and overwrites a slot it does not own.
inline std::unique_ptr<Kernel> ignores_padding_guard() {
  auto k = std::make_unique<BrokenKernel>();
  k->name_ = "broken: -1 remapped to the last slot";
  k->before = [](Problem& p) {
    if (!p.state_indices) return;
    Tensor remapped = Tensor::zeros("state_indices", DType::i32, {p.N});
    const std::int64_t last = p.state_pool->shape()[0] - 1;
    for (std::int64_t n = 0; n < p.N; ++n) {
      const auto i = p.state_indices->integer_at(n);
      remapped.set_integer(n, i == -1 ? last : i);
    }
    p.state_indices = remapped;
  };
  return k;
}

// Reads and writes [V,K] states as if they were [K,V] (same bytes, transposed meaning): the bug
// that passes every shape check when K = V.
inline std::unique_ptr<Kernel> transposed_state() {
  auto k = std::make_unique<BrokenKernel>();
  k->name_ = "broken: [K,V] used for [V,K]";
  k->before = [](Problem& p) {
    auto& layout = p.options.state_layout;
    layout = layout == StateLayout::vk ? StateLayout::kv : StateLayout::vk;
    for (auto* t : {&p.initial_state, &p.state_pool, &p.final_state, &p.chunk_states, &p.token_states}) {
      if (!*t) continue;
      View& v = (*t)->view;
      const int r = v.rank();
      std::swap(v.shape[r - 1], v.shape[r - 2]);
      v.strides[r - 2] = v.shape[r - 1];  // the same compact bytes, read the other way round
    }
  };
  return k;
}

// Leaves out the output of each sequence's partial last chunk (tokens past the last multiple of 64).
inline std::unique_ptr<Kernel> drops_partial_last_chunk() {
  auto k = std::make_unique<BrokenKernel>();
  k->name_ = "broken: partial last chunk dropped";
  k->after = [](ReferenceOutputs& out, const Problem& p) {
    const std::int64_t chunk = p.options.chunk_size, row_size = p.HV * p.V;
    for (std::int64_t n = 0; n < p.N; ++n) {
      const std::int64_t L = p.length(n), full = L / chunk * chunk;
      if (L <= chunk || L == full) continue;
      for (std::int64_t t = p.first(n) + full; t < p.first(n) + L; ++t)
        for (std::int64_t i = 0; i < row_size; ++i) out.o[static_cast<std::size_t>((p.row(n) * p.T + t) * row_size + i)] = 0;
    }
  };
  return k;
}

// Never writes the dense final state of a zero-length sequence (it should equal the initial state).
inline std::unique_ptr<Kernel> skips_empty_sequence_state() {
  auto k = std::make_unique<BrokenKernel>();
  k->name_ = "broken: empty sequence's final state unwritten";
  k->write = [](const ReferenceOutputs& out, Problem& p) {
    if (!p.final_state) return write_outputs(out, p);
    const std::vector<std::byte> keep(p.final_state->buffer->data(), p.final_state->buffer->data() + p.final_state->buffer->size());
    write_outputs(out, p);
    const Tensor& f = *p.final_state;
    const auto size = static_cast<std::int64_t>(size_of(f.dtype()));
    for (std::int64_t n = 0; n < p.N; ++n) {
      if (p.length(n) != 0) continue;
      const Shape head{f.shape()[1], f.shape()[2], f.shape()[3]};
      for_each_index(head, [&](std::span<const std::int64_t> i) {
        const std::int64_t at = f.view.element_at({n, i[0], i[1], i[2]}) * size;
        std::memcpy(f.buffer->data() + at, keep.data() + at, static_cast<std::size_t>(size));
      });
    }
  };
  return k;
}

// Reads q one element past the end of every row's last channel: the first byte of the gap in a
// padded layout (poison), or the next head in a compact one.
inline std::unique_ptr<Kernel> reads_past_row_end() {
  auto k = std::make_unique<BrokenKernel>();
  k->name_ = "broken: reads one element past each q row";
  k->before = [](Problem& p) {
    Tensor shifted = Tensor::zeros("q", p.q.dtype(), p.q.shape());
    for_each_index(p.q.shape(), [&](std::span<const std::int64_t> idx) {
      std::vector<std::int64_t> at(idx.begin(), idx.end());
      const bool last = at[3] == p.K - 1;
      const std::int64_t element = p.q.view.element_at(at) + (last ? p.q.view.strides[3] : 0);
      shifted.set(idx, load_element(p.q.buffer->data(), p.q.dtype(), element));
    });
    p.q = shifted;
  };
  return k;
}

// The fp32 reference's capabilities with the verify forms (index table and scratch) added.
inline Capabilities verifying() {
  Capabilities c;
  c.modes.push_back(Mode::verify);
  c.state_sources.insert(c.state_sources.end(), {StateSource::table, StateSource::scratch});
  return c;
}

// Index-table verify that starts from slot state_indices[n, a] instead of [n, a - 1] (an off-by-one in
// the accepted count; kept inside the row at a = L, where the count is right by accident).
inline std::unique_ptr<Kernel> initial_slot_off_by_one() {
  auto k = std::make_unique<BrokenKernel>();
  k->name_ = "broken: verify starts from state_indices[n, a]";
  k->capabilities_ = verifying();
  k->before = [](Problem& p) {
    if (!p.num_accepted) return;
    Tensor shifted = Tensor::zeros("num_accepted", p.num_accepted->dtype(), {p.N});
    for (std::int64_t n = 0; n < p.N; ++n) shifted.set_integer(n, std::min(p.num_accepted->integer_at(n) + 1, p.L));
    p.num_accepted = shifted;
  };
  return k;
}

// Scratch-form verify that also commits in place: the state after each request's last token written
// into the committed pool slot it read (the engine's job, done by the kernel).
inline std::unique_ptr<Kernel> commits_during_verify() {
  auto k = std::make_unique<BrokenKernel>();
  k->name_ = "broken: scratch-form verify writes the committed pool";
  k->capabilities_ = verifying();
  k->write = [](const ReferenceOutputs& out, Problem& p) {
    write_outputs(out, p);
    if (!p.scratch_states) return;
    const Shape head = p.state_head_shape();
    const std::int64_t state = p.HV * p.K * p.V;
    for (std::int64_t n = 0; n < p.N; ++n) {
      const std::int64_t slot = p.initial_slot(n), last = p.length(n) - 1;
      if (slot < 0 || last < 0) continue;
      const double* from = &out.token_states[static_cast<std::size_t>((p.row(n) * p.T + p.first(n) + last) * state)];
      for (std::int64_t h = 0; h < p.HV; ++h)
        for (std::int64_t a = 0; a < head[0]; ++a)
          for (std::int64_t b = 0; b < head[1]; ++b) p.state_pool->set({slot, h, a, b}, *from++);
    }
  };
  return k;
}

}  // namespace kda::test
