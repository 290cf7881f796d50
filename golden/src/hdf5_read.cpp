#include "hdf5_read.hpp"

#include <algorithm>

namespace kda::golden::detail {

namespace {

constexpr std::size_t kMaxFixedString = 1 << 20;

// "2-byte unsigned integer", "8-byte float", ...: the stored type, for messages.
std::string describe_type(hid_t type) {
  const std::string size = std::to_string(H5Tget_size(type)) + "-byte ";
  switch (H5Tget_class(type)) {
    case H5T_INTEGER: return size + (H5Tget_sign(type) == H5T_SGN_NONE ? "unsigned integer" : "signed integer");
    case H5T_FLOAT: return size + "float";
    case H5T_STRING: return "string";
    case H5T_ENUM: return size + "enum";
    default: return "type of class " + std::to_string(static_cast<int>(H5Tget_class(type)));
  }
}

}  // namespace

void In::fail(const std::string& what) const { throw FormatError(label_ + ": " + what); }

bool In::has(const std::string& name) const {
  if (name.empty() || name == "." || name.find('/') != std::string::npos ||
      H5Lexists(id(), name.c_str(), H5P_DEFAULT) <= 0)
    return false;
  H5L_info_t info;
  return H5Lget_info(id(), name.c_str(), &info, H5P_DEFAULT) >= 0 && info.type == H5L_TYPE_HARD;
}

ObjectId In::member(const std::string& name, H5I_type_t type, const char* kind, const std::string& label) const {
  if (!has(name)) fail(label + " is missing");
  ObjectId o(H5Oopen(id(), name.c_str(), H5P_DEFAULT));
  if (!o.valid()) fail(label + " cannot be opened (HDF5: " + hdf5_error() + ")");
  if (H5Iget_type(o.get()) != type) fail(label + " is not " + kind);
  return o;
}

In In::group(const std::string& name, const std::string& label) const {
  return In(member(name, H5I_GROUP, "a group", label), label_ + ", " + label);
}

std::optional<In> In::optional_group(const std::string& name, const std::string& label) const {
  if (!has(name)) return std::nullopt;
  return group(name, label);
}

In In::dataset(const std::string& name, const std::string& label) const {
  return In(member(name, H5I_DATASET, "a dataset", label), label_ + ", " + label);
}

// Both listings walk HDF5's index in its native order and sort the names afterwards. Listing links by
// position (H5Lget_name_by_idx) builds a table of every link first, and libhdf5 1.10.8 frees the
// uninitialised rest of it when a block of a corrupted dense group fails its checksum: a crash found
// by fuzz_hdf5_readers (docs/reliability.md). The native walk reports the error; attribute names,
// which HDF5 tabulates the same way, are listed the same way.
namespace {

template <class Info>
herr_t collect_name(hid_t, const char* name, const Info*, void* names) noexcept {
  try {
    static_cast<std::vector<std::string>*>(names)->emplace_back(name);
    return 0;
  } catch (...) {
    return -1;
  }
}

}  // namespace

std::vector<std::string> In::members() const {
  std::vector<std::string> names;
  hsize_t at = 0;
  if (H5Literate(id(), H5_INDEX_NAME, H5_ITER_NATIVE, &at, collect_name<H5L_info_t>, &names) < 0)
    fail("cannot list members (HDF5: " + hdf5_error() + ")");
  std::sort(names.begin(), names.end());
  return names;
}

bool In::has_attribute(const char* name) const { return H5Aexists(id(), name) > 0; }

std::vector<std::string> In::attribute_names() const {
  std::vector<std::string> names;
  hsize_t at = 0;
  if (H5Aiterate2(id(), H5_INDEX_NAME, H5_ITER_NATIVE, &at, collect_name<H5A_info_t>, &names) < 0)
    fail("cannot list attributes (HDF5: " + hdf5_error() + ")");
  std::sort(names.begin(), names.end());
  return names;
}

AttributeId In::attribute(const char* name, H5T_class_t type_class, const char* class_name) const {
  const std::string quoted = "attribute '" + std::string(name) + "'";
  if (!has_attribute(name)) fail(quoted + " is missing");
  AttributeId a(H5Aopen(id(), name, H5P_DEFAULT));
  TypeId type(H5Aget_type(a.get()));
  if (!a.valid() || !type.valid()) fail(quoted + " cannot be opened (HDF5: " + hdf5_error() + ")");
  if (H5Tget_class(type.get()) != type_class)
    fail(quoted + " is a " + describe_type(type.get()) + ", expected " + class_name);
  return a;
}

namespace {

bool is_scalar(hid_t attribute) {
  SpaceId space(H5Aget_space(attribute));
  return space.valid() && H5Sget_simple_extent_type(space.get()) == H5S_SCALAR;
}

}  // namespace

std::string In::text(const char* name) const {
  const AttributeId a = attribute(name, H5T_STRING, "a string");
  const std::string quoted = "attribute '" + std::string(name) + "'";
  if (!is_scalar(a.get())) fail(quoted + " is not a scalar string");
  TypeId stored(H5Aget_type(a.get()));
  TypeId mem(H5Tcopy(H5T_C_S1));
  H5Tset_cset(mem.get(), H5Tget_cset(stored.get()));
  if (H5Tis_variable_str(stored.get()) > 0) {
    H5Tset_size(mem.get(), H5T_VARIABLE);
    char* p = nullptr;
    if (H5Aread(a.get(), mem.get(), &p) < 0) fail(quoted + " cannot be read (HDF5: " + hdf5_error() + ")");
    std::string s = p ? p : "";
    H5free_memory(p);
    return s;
  }
  const std::size_t size = H5Tget_size(stored.get());
  if (size == 0 || size > kMaxFixedString) fail(quoted + " has an unreasonable length " + std::to_string(size));
  std::string s(size, '\0');
  H5Tset_size(mem.get(), size);
  H5Tset_strpad(mem.get(), H5T_STR_NULLPAD);
  if (H5Aread(a.get(), mem.get(), s.data()) < 0) fail(quoted + " cannot be read (HDF5: " + hdf5_error() + ")");
  s.resize(std::min(s.find('\0'), s.size()));
  return s;
}

std::int64_t In::int64(const char* name) const {
  const AttributeId a = attribute(name, H5T_INTEGER, "an integer");
  if (!is_scalar(a.get())) fail("attribute '" + std::string(name) + "' is not a scalar");
  std::int64_t x = 0;
  if (H5Aread(a.get(), H5T_NATIVE_INT64, &x) < 0)
    fail("attribute '" + std::string(name) + "' cannot be read (HDF5: " + hdf5_error() + ")");
  return x;
}

std::uint64_t In::uint64(const char* name) const {
  const AttributeId a = attribute(name, H5T_INTEGER, "an integer");
  TypeId stored(H5Aget_type(a.get()));
  if (!is_scalar(a.get()) || H5Tget_size(stored.get()) != 8)
    fail("attribute '" + std::string(name) + "' is not a scalar 64-bit integer");
  // Either signedness: the 64 bits are the value (a Python writer may well use int64).
  std::uint64_t x = 0;
  const hid_t mem = H5Tget_sign(stored.get()) == H5T_SGN_NONE ? H5T_NATIVE_UINT64 : H5T_NATIVE_INT64;
  if (H5Aread(a.get(), mem, &x) < 0)
    fail("attribute '" + std::string(name) + "' cannot be read (HDF5: " + hdf5_error() + ")");
  return x;
}

double In::real(const char* name) const {
  const AttributeId a = attribute(name, H5T_FLOAT, "a float");
  if (!is_scalar(a.get())) fail("attribute '" + std::string(name) + "' is not a scalar");
  double x = 0;
  if (H5Aread(a.get(), H5T_NATIVE_DOUBLE, &x) < 0)
    fail("attribute '" + std::string(name) + "' cannot be read (HDF5: " + hdf5_error() + ")");
  return x;
}

bool In::flag(const char* name) const {
  const std::int64_t x = int64(name);
  if (x != 0 && x != 1) fail("attribute '" + std::string(name) + "' is " + std::to_string(x) + ", expected 0 or 1");
  return x == 1;
}

std::vector<std::int64_t> In::int64s(const char* name, std::size_t max_size) const {
  const AttributeId a = attribute(name, H5T_INTEGER, "an integer array");
  const std::string quoted = "attribute '" + std::string(name) + "'";
  SpaceId space(H5Aget_space(a.get()));
  hsize_t n = 0;
  if (!space.valid() || H5Sget_simple_extent_type(space.get()) != H5S_SIMPLE ||
      H5Sget_simple_extent_ndims(space.get()) != 1 || H5Sget_simple_extent_dims(space.get(), &n, nullptr) < 0)
    fail(quoted + " is not a 1-D integer array");
  if (n > max_size) fail(quoted + " has " + std::to_string(n) + " entries (at most " + std::to_string(max_size) + ")");
  std::vector<std::int64_t> values(static_cast<std::size_t>(n));
  if (n > 0 && H5Aread(a.get(), H5T_NATIVE_INT64, values.data()) < 0)
    fail(quoted + " cannot be read (HDF5: " + hdf5_error() + ")");
  return values;
}

std::vector<std::int64_t> In::dims(std::initializer_list<hid_t> accepted, const std::string& type_name,
                                   int max_rank) const {
  TypeId type(H5Dget_type(id()));
  if (!type.valid() ||
      std::none_of(accepted.begin(), accepted.end(), [&](hid_t t) { return H5Tequal(type.get(), t) > 0; }))
    fail("holds " + (type.valid() ? describe_type(type.get()) : std::string("an unreadable type")) +
         " elements, expected " + type_name);
  SpaceId space(H5Dget_space(id()));
  const int rank = space.valid() && H5Sget_simple_extent_type(space.get()) == H5S_SIMPLE
                       ? H5Sget_simple_extent_ndims(space.get())
                       : -1;
  if (rank < 1 || rank > max_rank)
    fail(max_rank == 1 ? "is not a 1-D array" : "is not an array of rank 1 to " + std::to_string(max_rank));
  std::vector<hsize_t> raw(static_cast<std::size_t>(rank));
  H5Sget_simple_extent_dims(space.get(), raw.data(), nullptr);
  std::uint64_t bytes = H5Tget_size(type.get());
  std::vector<std::int64_t> dims;
  for (hsize_t n : raw) {
    if (n > kMaxDatasetBytes || __builtin_mul_overflow(bytes, n, &bytes) || bytes > kMaxDatasetBytes)
      fail("is larger than the reader's limit of " + std::to_string(kMaxDatasetBytes) + " bytes");
    dims.push_back(static_cast<std::int64_t>(n));
  }
  return dims;
}

void In::read(hid_t mem_type, void* out) const {
  SpaceId space(H5Dget_space(id()));
  if (H5Sget_simple_extent_npoints(space.get()) == 0) return;
  if (H5Dread(id(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out) < 0)
    fail("cannot be read (HDF5: " + hdf5_error() + ")");
}

ByteTotal In::dataset_bytes() const {
  ByteTotal total;
  for (const auto& name : members()) {
    if (!has(name)) continue;
    const ObjectId o(H5Oopen(id(), name.c_str(), H5P_DEFAULT));
    if (!o.valid() || H5Iget_type(o.get()) != H5I_DATASET) continue;
    const SpaceId space(H5Dget_space(o.get()));
    const TypeId type(H5Dget_type(o.get()));
    const hssize_t n = space.valid() ? H5Sget_simple_extent_npoints(space.get()) : -1;
    const std::size_t size = type.valid() ? H5Tget_size(type.get()) : 0;
    if (n < 0 || size == 0) fail("dataset '" + name + "' has no readable size (HDF5: " + hdf5_error() + ")");
    std::uint64_t bytes = 0;
    total.add(__builtin_mul_overflow(static_cast<std::uint64_t>(n), size, &bytes) ? std::nullopt
                                                                                  : std::optional<std::uint64_t>(bytes));
  }
  return total;
}

}  // namespace kda::golden::detail
