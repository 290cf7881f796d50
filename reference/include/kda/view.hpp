#pragma once
// Strided views into byte buffers. A view never assumes contiguity: shape and strides are in
// elements (padded, permuted, zero-size and broadcast dims allowed), offset is the element index of
// the first element, counted from the start of the buffer's payload.
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kda/dtype.hpp"

namespace kda {

using Shape = std::vector<std::int64_t>;

struct ByteRange {
  std::int64_t begin = 0;  // first byte touched, relative to the payload start
  std::int64_t end = 0;    // one past the last byte touched
  bool overlaps(const ByteRange& o) const { return begin < o.end && o.begin < end; }
};

struct View {
  DType dtype = DType::f32;
  Shape shape;
  Shape strides;  // elements
  std::int64_t offset = 0;  // elements

  int rank() const { return static_cast<int>(shape.size()); }
  std::int64_t numel() const;
  std::int64_t size(int dim) const { return shape.at(static_cast<std::size_t>(dim)); }
  std::int64_t stride(int dim) const { return strides.at(static_cast<std::size_t>(dim)); }
  std::int64_t byte_offset() const { return offset * static_cast<std::int64_t>(size_of(dtype)); }
  // Element index (from the payload start) of a multi-index; no bounds check.
  std::int64_t element_at(std::span<const std::int64_t> index) const;
  std::int64_t element_at(std::initializer_list<std::int64_t> index) const {
    return element_at(std::span<const std::int64_t>(index.begin(), index.size()));
  }
  // Bytes the view may touch; nullopt when it has no elements. Needs as many strides as dims;
  // clamped to the int64 range for views beyond it.
  std::optional<ByteRange> byte_extent() const;
  bool is_contiguous() const;
  std::string describe() const;  // "bf16[1,130,2,64]/(16640,128,64,1)+0"
};

Shape contiguous_strides(const Shape& shape);
View contiguous_view(DType dtype, Shape shape, std::int64_t offset = 0);

// Calls f(index) for every multi-index of shape in row-major order.
template <class F>
void for_each_index(const Shape& shape, F&& f) {
  for (auto n : shape)
    if (n <= 0) return;
  std::vector<std::int64_t> idx(shape.size(), 0);
  while (true) {
    f(std::span<const std::int64_t>(idx));
    int d = static_cast<int>(shape.size()) - 1;
    for (; d >= 0; --d) {
      if (++idx[static_cast<std::size_t>(d)] < shape[static_cast<std::size_t>(d)]) break;
      idx[static_cast<std::size_t>(d)] = 0;
    }
    if (d < 0) return;
  }
}

// Typed element access through a raw payload pointer; unaligned addresses are fine.
double load_element(const std::byte* payload, DType dtype, std::int64_t element);
std::int64_t load_integer(const std::byte* payload, DType dtype, std::int64_t element);
// Stores x rounded to dtype (through fp32 for bf16/fp16, as a kernel computing in fp32 does).
void store_element(std::byte* payload, DType dtype, std::int64_t element, double x);
void store_integer(std::byte* payload, DType dtype, std::int64_t element, std::int64_t x);  // i32 / i64

}  // namespace kda
