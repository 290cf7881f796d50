#include "kda/reference/tensor_io.hpp"

#include <algorithm>
#include <cstring>

namespace kda::ref {

namespace {

template <class Bits>
Bits read_bits(const std::byte* payload, std::int64_t element) {
  Bits b;
  std::memcpy(&b, payload + element * static_cast<std::int64_t>(sizeof(Bits)), sizeof(Bits));
  return b;
}

// Rows and columns of a transposed head are moved in tiles of this many, so the reads run along
// the stored rows and the writes touch few cache lines at a time.
constexpr std::int64_t kTile = 8;

// One head of a [lead, HV, a, b] tensor into an a x b matrix (transpose: b x a).
template <class Acc>
void load_head(const Tensor& t, std::int64_t lead, std::int64_t hv, bool transpose, Eigen::Ref<RowMatrix<Acc>> s) {
  const View& v = t.view;
  const std::int64_t a = v.size(2), b = v.size(3), first = v.element_at({lead, hv, 0, 0});
  if (!transpose) {
    for (std::int64_t r = 0; r < a; ++r) load_strided(t, first + r * v.stride(2), v.stride(3), b, s.row(r).data());
    return;
  }
  RowMatrix<Acc> rows(kTile, b);
  for (std::int64_t r0 = 0; r0 < a; r0 += kTile) {
    const std::int64_t n = std::min(kTile, a - r0);
    for (std::int64_t i = 0; i < n; ++i)
      load_strided(t, first + (r0 + i) * v.stride(2), v.stride(3), b, rows.row(i).data());
    s.middleCols(r0, n) = rows.topRows(n).transpose();
  }
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
void store_head(Eigen::Ref<const RowMatrix<Acc>> s, bool transpose, double* dst) {
  const std::int64_t a = s.rows(), b = s.cols();
  if (!transpose) {
    Eigen::Map<RowMatrix<double>>(dst, a, b) = s.template cast<double>();
    return;
  }
  Eigen::Map<RowMatrix<double>> out(dst, b, a);
  for (std::int64_t r0 = 0; r0 < a; r0 += kTile) {
    const std::int64_t n = std::min(kTile, a - r0);
    out.middleCols(r0, n) = s.middleRows(r0, n).transpose().template cast<double>();
  }
}

template <class Acc>
void load_state(const Tensor& t, std::int64_t lead, std::int64_t hv, StateLayout layout, Eigen::Ref<State<Acc>> into) {
  load_head<Acc>(t, lead, hv, layout == StateLayout::vk, into);
}

template <class Acc>
State<Acc> load_state(const Tensor& t, std::int64_t lead, std::int64_t hv, StateLayout layout) {
  State<Acc> s(t.view.size(layout == StateLayout::vk ? 3 : 2), t.view.size(layout == StateLayout::vk ? 2 : 3));
  load_state<Acc>(t, lead, hv, layout, s);
  return s;
}

template <class Acc>
void load_value_major_state(const Tensor& t, std::int64_t lead, std::int64_t hv, StateLayout layout,
                            Eigen::Ref<ValueMajorState<Acc>> into) {
  load_head<Acc>(t, lead, hv, layout == StateLayout::kv, into);
}

template void store_head<float>(Eigen::Ref<const RowMatrix<float>>, bool, double*);
template void store_head<double>(Eigen::Ref<const RowMatrix<double>>, bool, double*);
template void load_strided<float>(const Tensor&, std::int64_t, std::int64_t, std::int64_t, float*);
template void load_strided<double>(const Tensor&, std::int64_t, std::int64_t, std::int64_t, double*);
template State<float> load_state<float>(const Tensor&, std::int64_t, std::int64_t, StateLayout);
template State<double> load_state<double>(const Tensor&, std::int64_t, std::int64_t, StateLayout);
template void load_state<float>(const Tensor&, std::int64_t, std::int64_t, StateLayout, Eigen::Ref<State<float>>);
template void load_state<double>(const Tensor&, std::int64_t, std::int64_t, StateLayout, Eigen::Ref<State<double>>);
template void load_value_major_state<float>(const Tensor&, std::int64_t, std::int64_t, StateLayout,
                                                Eigen::Ref<ValueMajorState<float>>);
template void load_value_major_state<double>(const Tensor&, std::int64_t, std::int64_t, StateLayout,
                                                Eigen::Ref<ValueMajorState<double>>);

}  // namespace kda::ref
