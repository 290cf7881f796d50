// Activation layouts: each activation (and o) becomes a view into a buffer of its own, or q, k and v
// slices of one fused projection buffer. Views start `pad` elements in, so there is a gap before
// the first element as well as between rows or heads.
#include <memory>

#include "generators_internal.hpp"

namespace kda::props::detail {

namespace {

// A [B, T, heads, D] activation (beta: D = 1, the last dim dropped afterwards) in the given layout.
View laid_out(DType dtype, i64 B, i64 T, i64 heads, i64 D, InputLayout layout, i64 pad) {
  View v{dtype, {B, T, heads, D}, {}, pad};
  switch (layout) {
    case InputLayout::contiguous: return contiguous_view(dtype, v.shape);
    case InputLayout::padded_token_stride:
    case InputLayout::fused_qkv:  // outside q, k, v: a padded token stride
      v.strides = {T * (heads * D + pad), heads * D + pad, D, 1};
      break;
    case InputLayout::padded_head_stride: v.strides = {T * heads * (D + pad), heads * (D + pad), D + pad, 1}; break;
    case InputLayout::permuted: v.strides = {heads * (T * D + pad), D, T * D + pad, 1}; break;
  }
  return v;
}

View drop_last_dim(View v) {
  v.shape.pop_back(), v.strides.pop_back();
  return v;
}

Tensor relaid(const Tensor& t, View view) { return Tensor::with_view(t.name(), std::move(view)); }

// q, k and v as column slices of one [B, T, 2*H*K + HV*V + pad] projection, starting pad elements in.
void fuse_qkv(Problem& p, i64 pad) {
  const DType dtype = p.q.dtype();
  const i64 qk = p.H * p.K, row = 2 * qk + p.HV * p.V + pad;
  const i64 elements = pad + p.B * p.T * row;
  auto buffer = std::make_shared<GuardedBuffer>("qkv", static_cast<std::size_t>(elements) * size_of(dtype));
  auto slice = [&](i64 heads, i64 D, i64 column) {
    return View{dtype, {p.B, p.T, heads, D}, {p.T * row, row, D, 1}, pad + column};
  };
  p.q = Tensor{buffer, slice(p.H, p.K, 0)};
  p.k = Tensor{buffer, slice(p.H, p.K, qk)};
  p.v = Tensor{buffer, slice(p.HV, p.V, 2 * qk)};
}

}  // namespace

void apply_layouts(Problem& p, const CaseSpec& spec) {
  const InputLayout in = spec.layout;
  const i64 pad = spec.pad;
  const DType dt = p.q.dtype();
  if (in == InputLayout::fused_qkv) {
    fuse_qkv(p, pad);
  } else {
    p.q = relaid(p.q, laid_out(dt, p.B, p.T, p.H, p.K, in, pad));
    p.k = relaid(p.k, laid_out(dt, p.B, p.T, p.H, p.K, in, pad + 1));
    p.v = relaid(p.v, laid_out(dt, p.B, p.T, p.HV, p.V, in, pad + 2));
  }
  p.g = relaid(p.g, laid_out(dt, p.B, p.T, p.HV, p.K, in, pad + 3));
  p.beta = relaid(p.beta, drop_last_dim(laid_out(dt, p.B, p.T, p.HV, 1, in, pad + 4)));
  p.o = relaid(p.o, laid_out(p.o.dtype(), p.B, p.T, p.HV, p.V, spec.output_layout, pad + 5));
}

}  // namespace kda::props::detail
