#pragma once
// The input checksum of a case: 64-bit FNV-1a over every tensor's view and every input buffer's
// payload, in the byte sequence SCHEMA.md spells out (so a Python writer can compute it too).
#include <cstdint>
#include <vector>

#include "case_layout.hpp"

namespace kda::golden::detail {

std::uint64_t input_checksum(const Problem& p, const std::vector<NamedBuffer>& buffers);

}  // namespace kda::golden::detail
