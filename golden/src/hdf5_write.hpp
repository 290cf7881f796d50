#pragma once
// The writing side of HDF5: groups, attributes and datasets created with fixed properties (no
// object times, fixed layouts and compression) so that the same writes give byte-identical files.
// Failures throw std::runtime_error naming the object and HDF5's own reason.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hdf5_handles.hpp"

namespace kda::golden::detail {

// Datasets up to this size are stored compact (inside their object header); larger ones chunked,
// shuffled and deflated.
inline constexpr std::size_t kCompactBytes = 4096;
inline constexpr unsigned kDeflateLevel = 4;
inline constexpr std::size_t kChunkBytes = 1 << 18;
// Links and attributes stay in their object header (checksummed) instead of moving to a heap
// (not checksummed) past 8 entries, so a corrupted file fails HDF5's checks instead of crashing it.
inline constexpr unsigned kMaxCompact = 65535;

class Out {
 public:
  // `file` names the file in messages ("golden file 'x.h5'"); `path` is the object's HDF5 path.
  Out(ObjectId id, std::string file, std::string path)
      : id_(std::move(id)), file_(std::move(file)), path_(std::move(path)) {}
  hid_t id() const { return id_.get(); }

  Out group(const std::string& name) const;
  // A dataset of `dims` elements of file_type, read from data (memory layout mem_type, row-major).
  Out dataset(const std::string& name, hid_t file_type, hid_t mem_type, const std::vector<hsize_t>& dims,
              const void* data) const;

  // Scalar attributes and an int64 vector. Strings are fixed-length UTF-8, stored in the object
  // header (variable-length ones live in the global heap, which HDF5 reads unchecked: a corrupted
  // heap crashes it). Flags are uint8 0/1.
  void text(const char* name, std::string_view value) const;
  void int64(const char* name, std::int64_t value) const;
  void uint64(const char* name, std::uint64_t value) const;
  void real(const char* name, double value) const;
  void flag(const char* name, bool value) const;
  void int64s(const char* name, std::span<const std::int64_t> values) const;

 private:
  [[noreturn]] void fail(const std::string& what) const;
  void attribute(const char* name, hid_t file_type, hid_t mem_type, hid_t space, const void* value) const;

  Out child(ObjectId id, const std::string& name) const;

  ObjectId id_;
  std::string file_, path_;
};

}  // namespace kda::golden::detail
