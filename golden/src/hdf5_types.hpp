#pragma once
// How each element dtype is stored: bf16/f16 as uint16 bit patterns, the others natively.
// Files are written little-endian; big-endian files are read too (HDF5 swaps the bytes).
#include "hdf5_handles.hpp"
#include "kda/dtype.hpp"

namespace kda::golden::detail {

struct StoredType {
  hid_t file;        // written
  hid_t file_other;  // the same type in the other byte order, accepted when reading
  hid_t memory;
  const char* description;  // for messages: "uint16 (bf16 bit patterns)", ...
};

StoredType stored_type(DType dtype);

}  // namespace kda::golden::detail
