// The reference reads every input through its view: any dtype (bf16, fp16, fp32, fp64; int32 or int64
// offsets) and any strides (padded, permuted, offset). A problem built that way must give outputs
// bit-identical to a compact fp64 copy holding the same values (widening is exact).
#include <gtest/gtest.h>

#include "reference_test_support.hpp"

namespace kda {
namespace {

// t re-laid out: same shape, dtype and values, the given element strides and offset, a buffer of its own.
void relayout(Tensor& t, Shape strides, std::int64_t offset) {
  Tensor moved = Tensor::with_view(t.name(), View{t.dtype(), t.shape(), std::move(strides), offset});
  test::copy_values(t, moved);
  t = moved;
}

ProblemSpec base_spec() {
  ProblemSpec spec;
  spec.lengths = {40, 0, 70};
  spec.H = 2, spec.HV = 4, spec.K = 12, spec.V = 10;
  spec.chunk_states = spec.token_states = true;
  spec.options.l2norm_qk = spec.options.beta_from_logits = spec.options.gate_in_kernel = true;
  spec.with_A_log = spec.with_dt_bias = true;
  return spec;
}

// Every tensor in another dtype and none of them compact.
Problem strided_problem(StateSource state) {
  ProblemSpec spec = base_spec();
  spec.cu_seqlens_dtype = DType::i64;
  spec.input_dtype = DType::bf16;
  spec.state = state;
  spec.state_dtype = state == StateSource::pool ? DType::f32 : DType::bf16;
  spec.pool_slot_stride = 4 * 12 * 10 + 16;  // padded slots, at an offset, used out of order
  spec.pool_offset = 8;
  spec.indices = {4, 0, 2};
  Problem p = make_problem(spec);
  const std::int64_t T = p.T, H = p.H, HV = p.HV, K = p.K, V = p.V;
  p.k = Tensor::zeros("k", DType::f16, p.k.shape());
  p.v = Tensor::zeros("v", DType::f32, p.v.shape());
  p.g = Tensor::zeros("g", DType::f64, p.g.shape());
  fill_random(p, 31);
  relayout(p.q, {T * H * (2 * K + 3), H * (2 * K + 3), 2 * K + 3, 1}, 5);  // a slice of a fused projection
  relayout(p.k, {H * T * K, K, T * K, 1}, 0);                            // stored [B,H,T,K]
  relayout(p.v, {T * V * HV, V * HV, 1, HV}, 0);                          // stored [B,T,V,HV]
  relayout(p.g, {T * (HV * K + 7), HV * K + 7, K, 1}, 3);                // padded token rows
  relayout(p.beta, {HV * T, 1, T}, 0);                                    // stored [B,HV,T]
  relayout(*p.A_log, {2}, 1);
  relayout(*p.dt_bias, {3}, 0);
  relayout(*p.cu_seqlens, {2}, 1);
  if (p.initial_state) relayout(*p.initial_state, {HV * V * K + 5, V * K, K, 1}, 2);
  return p;
}

// The same values in compact fp64 tensors, states dense (the pool's slots gathered).
Problem compact_copy(const Problem& s) {
  ProblemSpec spec = base_spec();
  spec.input_dtype = spec.output_dtype = spec.state_dtype = DType::f64;
  spec.state = s.state_pool || s.initial_state ? StateSource::dense : StateSource::none;
  Problem c = make_problem(spec);
  test::copy_inputs(s, c);
  if (s.initial_state) test::copy_values(*s.initial_state, *c.initial_state);
  if (s.state_pool)
    for_each_index(c.initial_state->shape(), [&](std::span<const std::int64_t> i) {
      c.initial_state->set(i, s.state_pool->at({s.state_indices->integer_at(i[0]), i[1], i[2], i[3]}));
    });
  return c;
}

TEST(ReferenceInputs, AnyDtypeAndStridesReadLikeCompactFp64) {
  for (auto state : {StateSource::dense, StateSource::pool, StateSource::none}) {
    const Problem strided = strided_problem(state);
    const Problem compact = compact_copy(strided);
    for (auto algorithm : {Algorithm::recurrent, Algorithm::chunked}) {
      SCOPED_TRACE(std::string(name_of(algorithm)) + " " + strided.describe());
      const auto a = run_reference<double>(strided, algorithm);
      const auto b = run_reference<double>(compact, algorithm);
      EXPECT_EQ(a.o, b.o);
      EXPECT_EQ(a.final_state, b.final_state);
      EXPECT_EQ(a.chunk_states, b.chunk_states);
      EXPECT_EQ(a.token_states, b.token_states);
    }
  }
}

}  // namespace
}  // namespace kda
