#pragma once
// A private temporary directory (mode 0700, under $TMPDIR or /tmp), removed with its contents.
#include <filesystem>

namespace kda::adapters {

class TempDir {
 public:
  explicit TempDir(const char* prefix);  // throws std::runtime_error when it cannot be created
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir();
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace kda::adapters
