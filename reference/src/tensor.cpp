#include "kda/tensor.hpp"

namespace kda {

Tensor Tensor::zeros(std::string name, DType dtype, Shape shape) {
  return with_view(std::move(name), contiguous_view(dtype, std::move(shape)));
}

Tensor Tensor::with_view(std::string name, View view) {
  const auto extent = view.byte_extent();
  const std::int64_t bytes = extent ? extent->end : 0;
  return Tensor{std::make_shared<GuardedBuffer>(std::move(name), static_cast<std::size_t>(bytes)),
                std::move(view)};
}

}  // namespace kda
