// The file: root attributes (schema name and version), root metadata and the /cases group.
#include <type_traits>
#include <utility>

#include "case_codec.hpp"
#include "hdf5_file.hpp"
#include "kda/golden/case_io.hpp"

namespace kda::golden {

using detail::In;
using detail::ObjectId;
using detail::Out;
using detail::root_of;

static_assert(std::is_same_v<hid_t, std::int64_t>, "File keeps its hid_t as std::int64_t");

namespace {

std::string file_label(const std::filesystem::path& path) { return "golden file '" + path.string() + "'"; }

void check_schema(const In& root) {
  detail::check_schema(root, kSchemaName, kOldestSchemaVersion, kSchemaVersion, "golden file");
  const std::string precision = root.text("reference_precision");
  if (precision != "fp64") root.fail("has reference precision '" + precision + "', expected 'fp64'");
  root.text("generator");
}

}  // namespace

File::File(std::int64_t id, std::filesystem::path path, bool writable, Metadata metadata)
    : id_(id), path_(std::move(path)), writable_(writable), metadata_(std::move(metadata)) {}

File::File(File&& other) noexcept
    : id_(std::exchange(other.id_, -1)),
      path_(std::move(other.path_)),
      writable_(other.writable_),
      metadata_(std::move(other.metadata_)),
      schema_version_(other.schema_version_) {}

File& File::operator=(File&& other) noexcept {
  if (this != &other) {
    if (id_ >= 0) H5Fclose(id_);
    id_ = std::exchange(other.id_, -1);
    path_ = std::move(other.path_);
    writable_ = other.writable_;
    metadata_ = std::move(other.metadata_);
    schema_version_ = other.schema_version_;
  }
  return *this;
}

File::~File() {
  if (id_ >= 0) H5Fclose(id_);
}

File File::create(const std::filesystem::path& path, const Metadata& metadata) {
  detail::silence_hdf5();
  for (const auto& [key, value] : metadata)
    if (key.empty()) throw std::invalid_argument("metadata keys must be non-empty");
  const std::string label = file_label(path);
  File file(detail::create_file(path, label), path, true, metadata);
  const Out root(ObjectId(H5Oopen(file.id_, "/", H5P_DEFAULT)), label, "/");
  root.text("schema", kSchemaName);
  root.int64("schema_version", kSchemaVersion);
  root.text("generator", kGenerator);
  root.text("reference_precision", "fp64");
  const Out group = root.group("metadata");
  for (const auto& [key, value] : metadata) group.text(key.c_str(), value);
  root.group("cases");
  return file;
}

File File::open(const std::filesystem::path& path) { return open(path, false); }

File File::append(const std::filesystem::path& path) { return open(path, true); }

File File::open(const std::filesystem::path& path, bool writable) {
  detail::silence_hdf5();
  const std::string label = file_label(path);
  const hid_t id = detail::open_file(path, label, writable);
  File file(id, path, writable, {});
  const In root = root_of(id, label);
  check_schema(root);
  file.schema_version_ = root.int64("schema_version");
  const In group = root.group("metadata", "group 'metadata'");
  for (const auto& key : group.attribute_names()) file.metadata_[key] = group.text(key.c_str());
  root.group("cases", "group 'cases'");
  return file;
}

std::vector<std::string> File::case_names() const {
  detail::silence_hdf5();
  return root_of(id_, file_label(path_)).group("cases", "group 'cases'").members();
}

bool File::has_case(const std::string& name) const {
  detail::silence_hdf5();
  return root_of(id_, file_label(path_)).group("cases", "group 'cases'").has(name);
}

void File::write_case(const std::string& name, const Case& c) {
  detail::silence_hdf5();
  const std::string label = file_label(path_);
  if (!writable_) throw std::invalid_argument(label + ": opened read-only, cannot write case '" + name + "'");
  detail::write_case(Out(ObjectId(H5Oopen(id_, "/cases", H5P_DEFAULT)), label, "/cases"), name, c);
}

Case File::read_case(const std::string& name, ViewCheck check) const {
  detail::silence_hdf5();
  const std::string label = file_label(path_);
  return detail::read_case(root_of(id_, label).group("cases", "group 'cases'").with_label(label), name, check);
}

void File::close() {
  if (id_ < 0) return;
  detail::silence_hdf5();
  const herr_t status = H5Fclose(std::exchange(id_, -1));
  if (status < 0)
    throw std::runtime_error(file_label(path_) + ": cannot be closed (HDF5: " + detail::hdf5_error() + ")");
}

}  // namespace kda::golden
