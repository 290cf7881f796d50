#include "hdf5_write.hpp"

#include <algorithm>
#include <stdexcept>

namespace kda::golden::detail {

namespace {

// Chunks of about kChunkBytes: whole trailing dims, as many leading rows as fit.
std::vector<hsize_t> chunk_dims(const std::vector<hsize_t>& dims, std::size_t element_bytes) {
  std::vector<hsize_t> chunk(dims.size(), 1);
  hsize_t inner = element_bytes;  // bytes of one step along dim d: the product of the dims after d
  for (std::size_t d = dims.size(); d-- > 0;) {
    const hsize_t rows = std::max<hsize_t>(1, kChunkBytes / inner);
    chunk[d] = std::min(dims[d], rows);
    if (chunk[d] < dims[d]) break;
    inner *= dims[d];
  }
  return chunk;
}

}  // namespace

void Out::fail(const std::string& what) const {
  const std::string reason = hdf5_error();
  throw std::runtime_error(file_ + " " + path_ + ": " + what + (reason.empty() ? "" : " (HDF5: " + reason + ")"));
}

Out Out::child(ObjectId id, const std::string& name) const {
  return Out(std::move(id), file_, path_ == "/" ? "/" + name : path_ + "/" + name);
}

Out Out::group(const std::string& name) const {
  PlistId gcpl(H5Pcreate(H5P_GROUP_CREATE));
  if (!gcpl.valid() || H5Pset_obj_track_times(gcpl.get(), false) < 0 ||
      H5Pset_link_phase_change(gcpl.get(), kMaxCompact, kMaxCompact) < 0 ||
      H5Pset_attr_phase_change(gcpl.get(), kMaxCompact, kMaxCompact) < 0)
    fail("cannot set up group '" + name + "'");
  ObjectId g(H5Gcreate2(id(), name.c_str(), H5P_DEFAULT, gcpl.get(), H5P_DEFAULT));
  if (!g.valid()) fail("cannot create group '" + name + "'");
  return child(std::move(g), name);
}

Out Out::dataset(const std::string& name, hid_t file_type, hid_t mem_type, const std::vector<hsize_t>& dims,
                 const void* data) const {
  const std::size_t element_bytes = H5Tget_size(file_type);
  hsize_t elements = 1;
  for (auto n : dims) elements *= n;
  PlistId dcpl(H5Pcreate(H5P_DATASET_CREATE));
  bool ok = dcpl.valid() && H5Pset_obj_track_times(dcpl.get(), false) >= 0;
  if (elements * element_bytes <= kCompactBytes) {
    ok = ok && H5Pset_layout(dcpl.get(), H5D_COMPACT) >= 0;
  } else {
    const auto chunk = chunk_dims(dims, element_bytes);
    ok = ok && H5Pset_chunk(dcpl.get(), static_cast<int>(chunk.size()), chunk.data()) >= 0 &&
         H5Pset_shuffle(dcpl.get()) >= 0 && H5Pset_deflate(dcpl.get(), kDeflateLevel) >= 0 &&
         H5Pset_fletcher32(dcpl.get()) >= 0;
  }
  if (!ok) fail("cannot set up dataset '" + name + "'");
  SpaceId space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr));
  ObjectId d(H5Dcreate2(id(), name.c_str(), file_type, space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT));
  if (!space.valid() || !d.valid()) fail("cannot create dataset '" + name + "'");
  if (elements > 0 && H5Dwrite(d.get(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0)
    fail("cannot write dataset '" + name + "'");
  return child(std::move(d), name);
}

void Out::attribute(const char* name, hid_t file_type, hid_t mem_type, hid_t space, const void* value) const {
  AttributeId a(H5Acreate2(id(), name, file_type, space, H5P_DEFAULT, H5P_DEFAULT));
  if (!a.valid() || H5Awrite(a.get(), mem_type, value) < 0) fail("cannot write attribute '" + std::string(name) + "'");
}

void Out::text(const char* name, std::string_view value) const {
  TypeId type(H5Tcopy(H5T_C_S1));
  SpaceId scalar(H5Screate(H5S_SCALAR));
  const std::string copy(value);
  if (!type.valid() || H5Tset_size(type.get(), std::max<std::size_t>(copy.size(), 1)) < 0 ||
      H5Tset_strpad(type.get(), H5T_STR_NULLPAD) < 0 || H5Tset_cset(type.get(), H5T_CSET_UTF8) < 0)
    fail("cannot make a string type for attribute '" + std::string(name) + "'");
  attribute(name, type.get(), type.get(), scalar.get(), copy.c_str());
}

void Out::int64(const char* name, std::int64_t value) const {
  SpaceId scalar(H5Screate(H5S_SCALAR));
  attribute(name, H5T_STD_I64LE, H5T_NATIVE_INT64, scalar.get(), &value);
}

void Out::uint64(const char* name, std::uint64_t value) const {
  SpaceId scalar(H5Screate(H5S_SCALAR));
  attribute(name, H5T_STD_U64LE, H5T_NATIVE_UINT64, scalar.get(), &value);
}

void Out::real(const char* name, double value) const {
  SpaceId scalar(H5Screate(H5S_SCALAR));
  attribute(name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, scalar.get(), &value);
}

void Out::flag(const char* name, bool value) const {
  SpaceId scalar(H5Screate(H5S_SCALAR));
  const std::uint8_t byte = value ? 1 : 0;
  attribute(name, H5T_STD_U8LE, H5T_NATIVE_UINT8, scalar.get(), &byte);
}

void Out::int64s(const char* name, std::span<const std::int64_t> values) const {
  const hsize_t n = values.size();
  SpaceId space(H5Screate_simple(1, &n, nullptr));
  const std::int64_t none = 0;  // HDF5 wants a buffer even for no values (a rank-0 view's shape)
  attribute(name, H5T_STD_I64LE, H5T_NATIVE_INT64, space.get(), values.empty() ? &none : values.data());
}

}  // namespace kda::golden::detail
