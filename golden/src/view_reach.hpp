#pragma once
// Overflow-checked view arithmetic: whether a view is well-formed (View's own index arithmetic
// cannot overflow) and which bytes it touches. The writer refuses malformed views and the reader
// never builds one, so nothing downstream meets undefined behaviour through a stored view.
#include <cstddef>
#include <optional>
#include <string>

#include "kda/view.hpp"

namespace kda::golden::detail {

inline constexpr std::size_t kMaxRank = 16;

struct ViewReach {
  std::string error;               // why the view is malformed; empty when well-formed
  std::optional<ByteRange> bytes;  // bytes touched, from the payload start; nullopt when no elements
};

ViewReach reach_of(const View& view);

// A well-formed view whose elements all lie in a payload of `payload_bytes` bytes.
bool fits(const ViewReach& reach, std::size_t payload_bytes);

}  // namespace kda::golden::detail
