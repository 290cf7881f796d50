#include "kda/properties/sharding.hpp"

#include <charconv>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>

namespace kda::props {

namespace {

std::uint64_t number(std::string_view text, std::string_view what) {
  std::uint64_t x = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), x);
  if (text.empty() || error != std::errc() || end != text.data() + text.size())
    throw std::invalid_argument(std::string(what) + ": '" + std::string(text) + "' is not a non-negative integer");
  return x;
}

Shard checked(Shard s, std::string_view what) {
  if (s.count == 0 || s.index >= s.count)
    throw std::invalid_argument(std::string(what) + ": shard " + std::to_string(s.index) + " of " +
                                std::to_string(s.count) + " does not exist (need 0 <= index < count)");
  return s;
}

}  // namespace

Shard parse_shard(std::string_view text) {
  const auto slash = text.find('/');
  if (slash == std::string_view::npos)
    throw std::invalid_argument("--shard: expected i/n (shard i of n, counted from 0), got '" + std::string(text) + "'");
  return checked({number(text.substr(0, slash), "--shard"), number(text.substr(slash + 1), "--shard")}, "--shard");
}

std::optional<Shard> shard_from_environment() {
  const char* total = std::getenv("GTEST_TOTAL_SHARDS");
  const char* index = std::getenv("GTEST_SHARD_INDEX");
  if (!total && !index) return std::nullopt;
  if (!total || !index)
    throw std::invalid_argument("GTEST_TOTAL_SHARDS and GTEST_SHARD_INDEX must be set together");
  const Shard shard = checked({number(index, "GTEST_SHARD_INDEX"), number(total, "GTEST_TOTAL_SHARDS")},
                              "GTEST_SHARD_INDEX/GTEST_TOTAL_SHARDS");
  if (const char* status = std::getenv("GTEST_SHARD_STATUS_FILE")) std::ofstream touch(status, std::ios::app);
  return shard;
}

std::uint64_t shard_seed(std::uint64_t seed, const Shard& shard) { return seed + shard.index * 0x9E3779B97F4A7C15ull; }

}  // namespace kda::props
