#pragma once
// A reader of the safetensors format (Hugging Face): an 8-byte little-endian header length, a JSON
// header {"name": {"dtype": "BF16", "shape": [...], "data_offsets": [begin, end]}, "__metadata__":
// {...}}, then the raw little-endian, row-major data of every tensor. Used to import recorded calls'
// tensor contents. Errors are ImportError (kda/golden/call_import.hpp): the file, the tensor and what
// is wrong.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "kda/dtype.hpp"
#include "kda/view.hpp"

namespace kda::golden {

struct SafetensorsTensor {
  DType dtype = DType::f32;
  Shape shape;
  std::size_t begin = 0, end = 0;  // byte range within the data section
};

class Safetensors {
 public:
  // Reads the whole file; checks the header and that every tensor's range fits its shape and the file.
  static Safetensors read(const std::filesystem::path& path);

  const std::filesystem::path& path() const { return path_; }
  bool has(const std::string& name) const { return tensors_.count(name) != 0; }
  // The named tensor; ImportError naming the file and the tensor when it is not there.
  const SafetensorsTensor& at(const std::string& name) const;
  const std::byte* data(const SafetensorsTensor& t) const { return bytes_.data() + data_start_ + t.begin; }

 private:
  std::filesystem::path path_;
  std::vector<std::byte> bytes_;
  std::size_t data_start_ = 0;
  std::map<std::string, SafetensorsTensor> tensors_;
};

// The safetensors dtype names this reader takes: BF16, F16, F32, F64, I32, I64.
std::string safetensors_dtype_name(DType dtype);

}  // namespace kda::golden
