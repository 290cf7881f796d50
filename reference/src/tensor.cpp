#include "kda/tensor.hpp"

namespace kda {

Tensor Tensor::zeros(std::string name, DType dtype, Shape shape) {
  return with_view(std::move(name), contiguous_view(dtype, std::move(shape)));
}

namespace {
std::size_t payload_bytes(const View& view) {
  const auto extent = view.byte_extent();
  return static_cast<std::size_t>(extent && extent->end > 0 ? extent->end : 0);
}
}  // namespace

Tensor Tensor::with_view(std::string name, View view) {
  return Tensor{std::make_shared<GuardedBuffer>(std::move(name), payload_bytes(view)), std::move(view)};
}

std::uint64_t Tensor::buffer_bytes(const View& view) { return payload_bytes(view) + 2 * GuardedBuffer::kGuardBytes; }

}  // namespace kda
