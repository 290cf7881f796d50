#pragma once
// Looking into and picking from the short lists of choices the generators and properties keep.
#include <algorithm>
#include <cstdint>
#include <vector>

namespace kda::props::detail {

template <class T>
bool has(const std::vector<T>& xs, const T& x) {
  return std::find(xs.begin(), xs.end(), x) != xs.end();
}

// The variant-th choice, cycling: a break's variant picks one of its ways to break.
template <class T>
T nth(const std::vector<T>& xs, std::uint64_t variant) {
  return xs[variant % xs.size()];
}

}  // namespace kda::props::detail
