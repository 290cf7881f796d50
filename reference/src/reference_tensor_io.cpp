#include "kda/reference/tensor_io.hpp"

#include <cstring>

namespace kda::ref {

namespace {
template <class Bits>
Bits read_bits(const std::byte* payload, std::int64_t element) {
  Bits b;
  std::memcpy(&b, payload + element * static_cast<std::int64_t>(sizeof(Bits)), sizeof(Bits));
  return b;
}
}  // namespace

template <class Acc>
void load_strided(const Tensor& t, std::int64_t element, std::int64_t stride, std::int64_t count, Acc* dst) {
  const std::byte* p = t.buffer->data();
  // One dtype dispatch per call, not per element: the reference reads every input this way.
  auto each = [&](auto read) {
    if (stride == 1)  // the common contiguous row: a loop the compiler can vectorize
      for (std::int64_t i = 0; i < count; ++i) dst[i] = static_cast<Acc>(read(element + i));
    else
      for (std::int64_t i = 0; i < count; ++i) dst[i] = static_cast<Acc>(read(element + i * stride));
  };
  switch (t.dtype()) {
    case DType::bf16: each([&](std::int64_t e) { return bf16_to_f32(read_bits<std::uint16_t>(p, e)); }); break;
    case DType::f16: each([&](std::int64_t e) { return f16_to_f32(read_bits<std::uint16_t>(p, e)); }); break;
    case DType::f32: each([&](std::int64_t e) { return read_bits<float>(p, e); }); break;
    case DType::f64: each([&](std::int64_t e) { return read_bits<double>(p, e); }); break;
    default: each([&](std::int64_t e) { return load_element(p, t.dtype(), e); }); break;
  }
}

template <class Acc>
State<Acc> load_state(const Tensor& t, std::int64_t lead, std::int64_t hv, StateLayout layout) {
  const View& v = t.view;
  // The head as stored, row by row in memory order ([V,K] or [K,V]), then turned into K x V.
  RowMatrix<Acc> stored(v.size(2), v.size(3));
  for (Eigen::Index r = 0; r < stored.rows(); ++r)
    load_strided(t, v.element_at({lead, hv, r, 0}), v.stride(3), stored.cols(), stored.row(r).data());
  if (layout == StateLayout::vk) return stored.transpose();
  return stored;
}

template <class Acc>
void store_state(const State<Acc>& s, StateLayout layout, double* dst) {
  if (layout == StateLayout::vk)
    Eigen::Map<RowMatrix<double>>(dst, s.cols(), s.rows()) = s.transpose().template cast<double>();
  else
    Eigen::Map<RowMatrix<double>>(dst, s.rows(), s.cols()) = s.template cast<double>();
}

template void load_strided<float>(const Tensor&, std::int64_t, std::int64_t, std::int64_t, float*);
template void load_strided<double>(const Tensor&, std::int64_t, std::int64_t, std::int64_t, double*);
template State<float> load_state<float>(const Tensor&, std::int64_t, std::int64_t, StateLayout);
template State<double> load_state<double>(const Tensor&, std::int64_t, std::int64_t, StateLayout);
template void store_state<float>(const State<float>&, StateLayout, double*);
template void store_state<double>(const State<double>&, StateLayout, double*);

}  // namespace kda::ref
