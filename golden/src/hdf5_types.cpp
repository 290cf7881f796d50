#include "hdf5_types.hpp"

#include <stdexcept>
#include <string>

namespace kda::golden::detail {

StoredType stored_type(DType dtype) {
  switch (dtype) {
    case DType::bf16: return {H5T_STD_U16LE, H5T_STD_U16BE, H5T_NATIVE_UINT16, "uint16 (bf16 bit patterns)"};
    case DType::f16: return {H5T_STD_U16LE, H5T_STD_U16BE, H5T_NATIVE_UINT16, "uint16 (f16 bit patterns)"};
    case DType::f32: return {H5T_IEEE_F32LE, H5T_IEEE_F32BE, H5T_NATIVE_FLOAT, "float32"};
    case DType::f64: return {H5T_IEEE_F64LE, H5T_IEEE_F64BE, H5T_NATIVE_DOUBLE, "float64"};
    case DType::i32: return {H5T_STD_I32LE, H5T_STD_I32BE, H5T_NATIVE_INT32, "int32"};
    case DType::i64: return {H5T_STD_I64LE, H5T_STD_I64BE, H5T_NATIVE_INT64, "int64"};
  }
  throw std::invalid_argument("no stored type for dtype " + std::to_string(static_cast<int>(dtype)));
}

}  // namespace kda::golden::detail
