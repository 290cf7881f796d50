#include "kda/memory.hpp"

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string_view>

namespace kda {

namespace {

namespace fs = std::filesystem;

std::optional<std::uint64_t> parse_count(std::string_view text) {
  std::uint64_t x = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), x);
  if (error != std::errc() || end == text.data()) return std::nullopt;
  return x;
}

// The first word of a one-line file as a count; nullopt when absent or not a number ("max").
std::optional<std::uint64_t> read_count(const fs::path& file) {
  std::ifstream in(file);
  std::string word;
  if (!(in >> word)) return std::nullopt;
  return parse_count(word);
}

std::optional<std::uint64_t> meminfo_available() {
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  std::uint64_t kib = 0;
  while (in >> key >> kib) {
    std::getline(in, unit);
    if (key == "MemAvailable:") return kib * 1024;
  }
  return std::nullopt;
}

// The tightest room (limit - usage) over the cgroup at `path` under `root` and its ancestors.
std::optional<AvailableMemory> cgroup_room(const fs::path& root, const std::string& path, const char* limit_file,
                                           const char* usage_file) {
  std::optional<AvailableMemory> room;
  const fs::path relative = fs::path(path).relative_path();
  for (fs::path dir = relative.empty() ? root : root / relative;; dir = dir.parent_path()) {
    const auto limit = read_count(dir / limit_file), usage = read_count(dir / usage_file);
    if (limit && usage) {
      const std::uint64_t left = *limit > *usage ? *limit - *usage : 0;
      if (!room || left < room->bytes) room = AvailableMemory{left, "the memory limit of cgroup " + dir.string()};
    }
    if (dir == root || dir == dir.parent_path()) break;
  }
  return room;
}

// The cgroups of this process from /proc/self/cgroup ("0::/path" for v2, "N:memory:/path" for v1).
std::optional<AvailableMemory> cgroup_available() {
  std::ifstream in("/proc/self/cgroup");
  std::optional<AvailableMemory> best;
  for (std::string line; std::getline(in, line);) {
    const auto first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1), path = line.substr(second + 1);
    std::optional<AvailableMemory> room;
    if (controllers.empty())
      room = cgroup_room("/sys/fs/cgroup", path, "memory.max", "memory.current");
    else if (("," + controllers + ",").find(",memory,") != std::string::npos)
      room = cgroup_room("/sys/fs/cgroup/memory", path, "memory.limit_in_bytes", "memory.usage_in_bytes");
    if (room && (!best || room->bytes < best->bytes)) best = room;
  }
  return best;
}

// "1.0 KiB", "256.0 MiB", "2.0 PiB".
std::string readable(std::uint64_t bytes) {
  constexpr const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double x = static_cast<double>(bytes) / 1024;
  std::size_t unit = 0;
  for (; x >= 1024 && unit + 1 < std::size(units); ++unit) x /= 1024;
  char text[32];
  std::snprintf(text, sizeof text, "%.1f %s", x, units[unit]);
  return text;
}

}  // namespace

std::optional<AvailableMemory> available_memory() {
  if (const char* limit = std::getenv("KDA_MEMORY_LIMIT")) {
    const auto bytes = parse_count(limit);
    if (!bytes || std::string_view(limit).find_first_not_of("0123456789") != std::string_view::npos)
      throw std::invalid_argument(std::string("KDA_MEMORY_LIMIT='") + limit + "' is not a byte count");
    return AvailableMemory{*bytes, "KDA_MEMORY_LIMIT"};
  }
  std::optional<AvailableMemory> available;
  if (const auto bytes = meminfo_available()) available = AvailableMemory{*bytes, "MemAvailable in /proc/meminfo"};
  if (const auto room = cgroup_available(); room && (!available || room->bytes < available->bytes)) available = room;
  return available;
}

ByteTotal& ByteTotal::add(std::optional<std::uint64_t> bytes) {
  std::uint64_t sum = 0;
  if (!bytes_ || !bytes || __builtin_add_overflow(*bytes_, *bytes, &sum))
    bytes_ = std::nullopt;
  else
    bytes_ = sum;
  return *this;
}

void require_memory(const ByteTotal& total, const std::string& what) {
  // Reading /proc and /sys takes 0.1 to 0.3 ms, more than building a small case: below this, only an
  // explicit KDA_MEMORY_LIMIT is consulted.
  constexpr std::uint64_t kAlwaysAdmitted = std::uint64_t{64} << 20;
  if (total.bytes() && *total.bytes() < kAlwaysAdmitted && !std::getenv("KDA_MEMORY_LIMIT")) return;
  const auto available = available_memory();
  if (!available || (total.bytes() && *total.bytes() <= available->bytes)) return;
  const std::string needed = total.bytes() ? std::to_string(*total.bytes()) + " bytes (" + readable(*total.bytes()) + ")"
                                            : std::string("more than 2^64 bytes");
  throw MemoryError(what + " needs " + needed + ", more than the " + std::to_string(available->bytes) + " bytes (" +
                    readable(available->bytes) + ") of memory available (" + available->source + "); nothing was allocated");
}

}  // namespace kda
