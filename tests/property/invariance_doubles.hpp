#pragma once
// Test doubles for the invariance properties: one bug each, in the BrokenKernel pattern of
// broken_kernels.hpp, that a single call judged alone may hide but a pair of calls shows.
#include <memory>

#include "broken_kernels.hpp"

namespace kda::test {

// The state is not reset at a sequence boundary: each sequence after the first starts from the final
// state its predecessor reached instead of its own initial state (dense or none; pools are left alone).
inline std::unique_ptr<Kernel> leaks_state_across_sequences() {
  auto k = std::make_unique<BrokenKernel>();
  k->name_ = "broken: state not reset between packed sequences";
  k->before = [](Problem& p) {
    if (p.N < 2 || p.state_pool) return;
    const ReferenceOutputs first = run_reference<float>(p, Algorithm::recurrent, 1);
    const Shape head = p.state_head_shape();
    Tensor leaked = Tensor::zeros("initial_state", DType::f32, {p.N, p.HV, head[0], head[1]});
    for_each_index(leaked.shape(), [&](std::span<const std::int64_t> i) {
      if (i[0] == 0) {
        if (p.initial_state) leaked.set(i, p.initial_state->at(i));
        return;
      }
      const std::int64_t previous = (((i[0] - 1) * p.HV + i[1]) * head[0] + i[2]) * head[1] + i[3];
      leaked.set(i, first.final_state[static_cast<std::size_t>(previous)]);
    });
    p.initial_state = leaked;
  };
  return k;
}

// Honours the initial state only in its first call; later calls start from zeros (as if a captured
// graph kept the first call's state pointer).
inline std::unique_ptr<Kernel> ignores_initial_state_after_first_call() {
  auto k = std::make_unique<BrokenKernel>();
  k->name_ = "broken: initial state ignored after the first call";
  k->before = [called = std::make_shared<bool>(false)](Problem& p) {
    if (!*called) {
      *called = true;
      return;
    }
    p.initial_state.reset();
    if (!p.state_pool) return;
    for (std::int64_t n = 0; n < p.N; ++n)  // zeroed in place: the call overwrites these slots anyway
      if (const auto slot = p.state_indices->integer_at(n); slot >= 0)
        for_each_index(Shape{p.HV, p.state_head_shape()[0], p.state_head_shape()[1]},
                       [&](std::span<const std::int64_t> i) { p.state_pool->set({slot, i[0], i[1], i[2]}, 0.0); });
  };
  return k;
}

// In [K,V] mode, writes each final state in [V,K] element order (the untransposed bytes).
inline std::unique_ptr<Kernel> final_state_untransposed_in_kv() {
  auto k = std::make_unique<BrokenKernel>();
  k->name_ = "broken: [K,V] final state written as [V,K]";
  k->after = [](ReferenceOutputs& out, const Problem& p) {
    if (p.options.state_layout != StateLayout::kv) return;
    const std::int64_t K = p.K, V = p.V;
    std::vector<double> block(static_cast<std::size_t>(K * V));
    for (std::size_t at = 0; at < out.final_state.size(); at += block.size()) {
      std::copy_n(out.final_state.begin() + static_cast<std::ptrdiff_t>(at), block.size(), block.begin());
      for (std::int64_t kk = 0; kk < K; ++kk)
        for (std::int64_t v = 0; v < V; ++v)
          out.final_state[at + static_cast<std::size_t>(v * K + kk)] = block[static_cast<std::size_t>(kk * V + v)];
    }
  };
  return k;
}

// Grouped value attention mapped the wrong way: value head hv reads q/k head hv % H instead of
// hv / (HV/H) (the same when H == HV).
inline std::unique_ptr<Kernel> gva_heads_interleaved() {
  auto k = std::make_unique<BrokenKernel>();
  k->name_ = "broken: value head hv reads q/k head hv % H";
  k->before = [](Problem& p) {
    if (p.H == p.HV) return;
    for (Tensor* x : {&p.q, &p.k}) {
      Tensor wide = Tensor::zeros(x->name(), x->dtype(), {p.B, p.T, p.HV, p.K});
      for_each_index(wide.shape(), [&](std::span<const std::int64_t> i) {
        wide.set(i, x->at({i[0], i[1], i[2] % p.H, i[3]}));
      });
      *x = wide;
    }
    p.H = p.HV;  // one q/k head per value head: the reference reads head hv, which holds head hv % H
  };
  return k;
}

// After a decode step, the pool slot of the batch's last live sequence is not written back.
inline std::unique_ptr<Kernel> decode_skips_last_slot() {
  auto k = std::make_unique<BrokenKernel>();
  k->name_ = "broken: decode leaves the last sequence's slot unwritten";
  k->write = [](const ReferenceOutputs& out, Problem& p) {
    ReferenceOutputs kept = out;
    if (p.mode == Mode::decode && p.state_pool)
      for (std::int64_t n = p.N - 1; n >= 0; --n)
        if (kept.written[static_cast<std::size_t>(n)]) {
          kept.written[static_cast<std::size_t>(n)] = 0;
          break;
        }
    write_outputs(kept, p);
  };
  return k;
}

}  // namespace kda::test
