#pragma once
// The first line an exec adapter writes (adapters/README.md, "Handshake"):
//   kda-adapter <protocol version> <name> <profile> [key=value ...]
#include <string>

#include "declared_kernel.hpp"

namespace kda::adapters {

inline constexpr int kExecProtocolVersion = 1;

// Throws std::invalid_argument saying what is wrong with the line (another protocol version, an
// unknown profile or key, a malformed value).
Declaration parse_handshake(const std::string& line);

}  // namespace kda::adapters
