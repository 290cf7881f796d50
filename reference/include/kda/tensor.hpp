#pragma once
// A tensor is a strided view into a guard-banded buffer. Several tensors may share one buffer
// (q, k and v as slices of a fused projection, an output aliasing an input).
#include <cstdint>
#include <memory>
#include <string>

#include "kda/buffer.hpp"
#include "kda/view.hpp"

namespace kda {

struct Tensor {
  std::shared_ptr<GuardedBuffer> buffer;
  View view;

  // A compact tensor in a buffer of its own, zero-filled.
  static Tensor zeros(std::string name, DType dtype, Shape shape);
  // A view into a fresh buffer sized to hold it exactly (offset and padding included), zero-filled.
  static Tensor with_view(std::string name, View view);
  // The memory with_view takes for a view: its payload and the two guard bands.
  static std::uint64_t buffer_bytes(const View& view);

  const std::string& name() const { return buffer->name(); }
  DType dtype() const { return view.dtype; }
  const Shape& shape() const { return view.shape; }
  std::int64_t numel() const { return view.numel(); }

  double at(std::initializer_list<std::int64_t> index) const {
    return load_element(buffer->data(), view.dtype, view.element_at(index));
  }
  double at(std::span<const std::int64_t> index) const {
    return load_element(buffer->data(), view.dtype, view.element_at(index));
  }
  std::int64_t integer_at(std::int64_t i) const {  // 1-D integer tensors (cu_seqlens, indices)
    return load_integer(buffer->data(), view.dtype, view.offset + i * view.strides.at(0));
  }
  std::int64_t integer_at(std::int64_t i, std::int64_t j) const {  // 2-D integer tensors (index tables)
    return load_integer(buffer->data(), view.dtype, view.offset + i * view.strides.at(0) + j * view.strides.at(1));
  }
  void set(std::initializer_list<std::int64_t> index, double x) {
    store_element(buffer->data(), view.dtype, view.element_at(index), x);
  }
  void set(std::span<const std::int64_t> index, double x) {
    store_element(buffer->data(), view.dtype, view.element_at(index), x);
  }
  void set_integer(std::int64_t i, std::int64_t x) {
    store_integer(buffer->data(), view.dtype, view.offset + i * view.strides.at(0), x);
  }
  void set_integer(std::int64_t i, std::int64_t j, std::int64_t x) {
    store_integer(buffer->data(), view.dtype, view.offset + i * view.strides.at(0) + j * view.strides.at(1), x);
  }
};

}  // namespace kda
