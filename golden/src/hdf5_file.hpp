#pragma once
// Creating and opening HDF5 files, shared by golden and results files: the 1.10 object formats
// (they checksum every chunk index, so a corrupted file fails HDF5's own checks instead of
// misleading it), no object times, links and attributes kept in object headers.
#include <filesystem>
#include <string>
#include <string_view>

#include "hdf5_read.hpp"

namespace kda::golden::detail {

// A new file (truncating any old one); std::runtime_error when it cannot be created.
hid_t create_file(const std::filesystem::path& path, const std::string& label);
// An existing file, read-only (or read-write); FormatError when it is not a readable HDF5 file.
hid_t open_file(const std::filesystem::path& path, const std::string& label, bool writable = false);
In root_of(hid_t file, const std::string& label);

// The root attributes `schema` (equal to `schema`) and `schema_version` (oldest .. version); `kind`
// names the file in messages ("golden file").
void check_schema(const In& root, std::string_view schema, std::int64_t oldest, std::int64_t version,
                  std::string_view kind);

}  // namespace kda::golden::detail
