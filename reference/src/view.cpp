#include "kda/view.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

namespace kda {

std::int64_t View::numel() const {
  // An empty dim empties the view whatever the others hold; otherwise saturates instead of
  // overflowing: hostile shapes reach here before the contract rejects them.
  if (std::any_of(shape.begin(), shape.end(), [](std::int64_t s) { return s <= 0; })) return 0;
  std::int64_t n = 1;
  for (auto s : shape)
    if (__builtin_mul_overflow(n, s, &n)) return std::numeric_limits<std::int64_t>::max();
  return n;
}

std::int64_t View::element_at(std::span<const std::int64_t> index) const {
  std::int64_t e = offset;
  for (std::size_t d = 0; d < index.size(); ++d) e += index[d] * strides[d];
  return e;
}

namespace {
__extension__ using Wide = __int128;  // GCC/Clang 128-bit integer (no overflow for 64-bit products)
}  // namespace

std::optional<ByteRange> View::byte_extent() const {
  if (numel() <= 0) return std::nullopt;
  // 128-bit arithmetic clamped to the 64-bit range at every step: hostile views must give an (absurd)
  // answer the contract rejects, never signed-overflow undefined behaviour. A product of two 64-bit
  // values fits 127 bits, and lo only falls and hi only rises, so clamping as it goes clamps the result.
  auto clamp = [](Wide x) {
    constexpr auto max = std::numeric_limits<std::int64_t>::max(), min = std::numeric_limits<std::int64_t>::min();
    return static_cast<std::int64_t>(x > max ? max : x < min ? min : x);
  };
  Wide lo = offset, hi = offset;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    const Wide reach = static_cast<Wide>(shape[d] - 1) * strides[d];
    Wide& side = reach < 0 ? lo : hi;
    side = clamp(side + reach);
  }
  const auto es = static_cast<Wide>(size_of(dtype));
  return ByteRange{clamp(lo * es), clamp((hi + 1) * es)};
}

bool View::is_contiguous() const { return strides == contiguous_strides(shape); }

std::string View::describe() const {
  std::ostringstream s;
  s << name_of(dtype) << '[';
  for (std::size_t d = 0; d < shape.size(); ++d) s << (d ? "," : "") << shape[d];
  s << "]/(";
  for (std::size_t d = 0; d < strides.size(); ++d) s << (d ? "," : "") << strides[d];
  s << ")+" << offset;
  return s.str();
}

Shape contiguous_strides(const Shape& shape) {
  Shape strides(shape.size(), 1);
  for (int d = static_cast<int>(shape.size()) - 2; d >= 0; --d) {
    const auto u = static_cast<std::size_t>(d);
    strides[u] = strides[u + 1] * std::max<std::int64_t>(shape[u + 1], 1);
  }
  return strides;
}

View contiguous_view(DType dtype, Shape shape, std::int64_t offset) {
  View v{dtype, std::move(shape), {}, offset};
  v.strides = contiguous_strides(v.shape);
  return v;
}

namespace {
template <class T>
T read(const std::byte* p, std::int64_t element) {
  T x;
  std::memcpy(&x, p + element * static_cast<std::int64_t>(sizeof(T)), sizeof(T));
  return x;
}
template <class T>
void write(std::byte* p, std::int64_t element, T x) {
  std::memcpy(p + element * static_cast<std::int64_t>(sizeof(T)), &x, sizeof(T));
}
}  // namespace

double load_element(const std::byte* p, DType dtype, std::int64_t e) {
  switch (dtype) {
    case DType::bf16: return bf16_to_f32(read<std::uint16_t>(p, e));
    case DType::f16: return f16_to_f32(read<std::uint16_t>(p, e));
    case DType::f32: return read<float>(p, e);
    case DType::f64: return read<double>(p, e);
    case DType::i32: return read<std::int32_t>(p, e);
    case DType::i64: return static_cast<double>(read<std::int64_t>(p, e));
  }
  return 0;
}

std::int64_t load_integer(const std::byte* p, DType dtype, std::int64_t e) {
  switch (dtype) {
    case DType::i32: return read<std::int32_t>(p, e);
    case DType::i64: return read<std::int64_t>(p, e);
    default: {
      // A float read as an index: truncated, with NaN and out-of-range values mapped to 0 (casting
      // them would be undefined behaviour).
      const double x = load_element(p, dtype, e);
      return std::isfinite(x) && std::abs(x) < 9.0e18 ? static_cast<std::int64_t>(x) : 0;
    }
  }
}

void store_element(std::byte* p, DType dtype, std::int64_t e, double x) {
  switch (dtype) {
    case DType::bf16: write(p, e, f32_to_bf16(static_cast<float>(x))); break;
    case DType::f16: write(p, e, f32_to_f16(static_cast<float>(x))); break;
    case DType::f32: write(p, e, static_cast<float>(x)); break;
    case DType::f64: write(p, e, x); break;
    case DType::i32:
    case DType::i64: store_integer(p, dtype, e, static_cast<std::int64_t>(x)); break;
  }
}

void store_integer(std::byte* p, DType dtype, std::int64_t e, std::int64_t x) {
  if (dtype == DType::i32)
    write(p, e, static_cast<std::int32_t>(x));
  else
    write(p, e, x);
}

}  // namespace kda
