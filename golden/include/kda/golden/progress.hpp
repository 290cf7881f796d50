#pragma once
#include <cstddef>
#include <functional>
#include <string>

namespace kda::golden {

// Called after each case of a file or suite: cases done so far, of how many, and the case's name.
using Progress = std::function<void(std::size_t done, std::size_t total, const std::string& name)>;

}  // namespace kda::golden
