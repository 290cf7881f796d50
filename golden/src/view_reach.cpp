#include "view_reach.hpp"

#include <cstdint>

namespace kda::golden::detail {

namespace {

using i64 = std::int64_t;

std::optional<i64> mul(i64 a, i64 b) {
  i64 r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

std::optional<i64> add(i64 a, i64 b) {
  i64 r = 0;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

}  // namespace

ViewReach reach_of(const View& v) {
  const std::string overflow = "index arithmetic overflows 64 bits";
  if (v.shape.size() != v.strides.size())
    return {"has " + std::to_string(v.shape.size()) + " dims but " + std::to_string(v.strides.size()) + " strides", {}};
  if (v.shape.size() > kMaxRank)
    return {"has rank " + std::to_string(v.shape.size()) + " (at most " + std::to_string(kMaxRank) + ")", {}};
  // View::numel() multiplies the dims in order: every prefix product must fit.
  i64 numel = 1;
  for (i64 n : v.shape) {
    if (n < 0) return {"has a negative dim " + std::to_string(n), {}};
    const auto next = mul(numel, n);
    if (!next) return {overflow, {}};
    numel = *next;
  }
  const i64 es = static_cast<i64>(size_of(v.dtype));
  if (!mul(v.offset, es)) return {overflow, {}};
  if (numel == 0) return {};
  i64 lo = v.offset, hi = v.offset;
  for (std::size_t d = 0; d < v.shape.size(); ++d) {
    const auto reach = mul(v.shape[d] - 1, v.strides[d]);
    if (!reach) return {overflow, {}};
    auto& side = *reach < 0 ? lo : hi;
    const auto moved = add(side, *reach);
    if (!moved) return {overflow, {}};
    side = *moved;
  }
  const auto past = add(hi, 1);
  const auto begin = mul(lo, es);
  const auto end = past ? mul(*past, es) : std::nullopt;
  if (!begin || !end) return {overflow, {}};
  return {{}, ByteRange{*begin, *end}};
}

bool fits(const ViewReach& reach, std::size_t payload_bytes) {
  if (!reach.error.empty()) return false;
  if (!reach.bytes) return true;
  return reach.bytes->begin >= 0 && static_cast<std::uint64_t>(reach.bytes->end) <= payload_bytes;
}

}  // namespace kda::golden::detail
