#include "hdf5_file.hpp"

#include "hdf5_write.hpp"

namespace kda::golden::detail {

namespace {

PlistId file_access() {
  PlistId fapl(H5Pcreate(H5P_FILE_ACCESS));
  if (fapl.valid() && H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_V110, H5F_LIBVER_V110) < 0) fapl.reset();
  return fapl;
}

// The root group as every other group (Out::group): no times, links and attributes in its header.
PlistId file_creation() {
  PlistId fcpl(H5Pcreate(H5P_FILE_CREATE));
  if (fcpl.valid() && (H5Pset_obj_track_times(fcpl.get(), false) < 0 ||
                       H5Pset_link_phase_change(fcpl.get(), kMaxCompact, kMaxCompact) < 0 ||
                       H5Pset_attr_phase_change(fcpl.get(), kMaxCompact, kMaxCompact) < 0))
    fcpl.reset();
  return fcpl;
}

}  // namespace

hid_t create_file(const std::filesystem::path& path, const std::string& label) {
  const PlistId fcpl = file_creation(), fapl = file_access();
  if (!fcpl.valid() || !fapl.valid())
    throw std::runtime_error(label + ": cannot set up file properties (HDF5: " + hdf5_error() + ")");
  const hid_t id = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, fcpl.get(), fapl.get());
  if (id < 0) throw std::runtime_error(label + ": cannot be created (HDF5: " + hdf5_error() + ")");
  return id;
}

hid_t open_file(const std::filesystem::path& path, const std::string& label, bool writable) {
  const hid_t id = H5Fopen(path.c_str(), writable ? H5F_ACC_RDWR : H5F_ACC_RDONLY, H5P_DEFAULT);
  if (id < 0) throw FormatError(label + ": cannot be opened as an HDF5 file (HDF5: " + hdf5_error() + ")");
  return id;
}

In root_of(hid_t file, const std::string& label) {
  ObjectId root(H5Oopen(file, "/", H5P_DEFAULT));
  if (!root.valid()) throw FormatError(label + ": cannot open the root group (HDF5: " + hdf5_error() + ")");
  return In(std::move(root), label);
}

void check_schema(const In& root, std::string_view schema, std::int64_t oldest, std::int64_t version,
                  std::string_view kind) {
  if (!root.has_attribute("schema"))
    root.fail("is not a kda-oracle " + std::string(kind) + ": root attribute 'schema' is missing");
  const std::string found = root.text("schema");
  if (found != schema) root.fail("has schema '" + found + "', this reader reads '" + std::string(schema) + "'");
  const std::int64_t found_version = root.int64("schema_version");
  if (found_version > version)
    root.fail("has schema version " + std::to_string(found_version) + ", newer than this reader's version " +
              std::to_string(version));
  const std::string readable =
      oldest == version ? std::to_string(version) : std::to_string(oldest) + " to " + std::to_string(version);
  if (found_version < oldest)
    root.fail("has schema version " + std::to_string(found_version) + ", which this reader does not read (it reads " +
              readable + ")");
}

}  // namespace kda::golden::detail
