#pragma once
// What a Problem looks like in a file: its tensors in the canonical order and names of
// kda::tensor_fields(), and its distinct buffers, each named once. Shared by the writer, the reader
// and the checksum.
#include <string>
#include <string_view>
#include <vector>

#include "kda/problem.hpp"

namespace kda::golden::detail {

struct NamedBuffer {
  const GuardedBuffer* buffer;
  std::string name;  // the dataset name: the buffer's own name, made a unique HDF5 link name
  DType dtype;       // every tensor on the buffer has this dtype
  bool input;        // some input tensor views it
  std::string_view first_tensor;
};

// The distinct buffers of a problem in order of first use. Throws std::invalid_argument for a
// tensor without a buffer, two dtypes on one buffer, or a payload not a whole number of elements.
std::vector<NamedBuffer> name_buffers(const Problem& p);
const NamedBuffer& buffer_entry(const std::vector<NamedBuffer>& buffers, const GuardedBuffer* buffer);

}  // namespace kda::golden::detail
