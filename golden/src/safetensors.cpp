#include "kda/golden/safetensors.hpp"

#include <fstream>
#include <nlohmann/json.hpp>

#include "kda/golden/call_import.hpp"

namespace kda::golden {

namespace {

struct DTypeName {
  DType dtype;
  const char* name;
};
constexpr DTypeName kDTypes[] = {{DType::bf16, "BF16"}, {DType::f16, "F16"}, {DType::f32, "F32"},
                                 {DType::f64, "F64"},   {DType::i32, "I32"}, {DType::i64, "I64"}};

DType dtype_from(const std::string& name, const std::string& where) {
  for (const auto& d : kDTypes)
    if (name == d.name) return d.dtype;
  throw ImportError(where + ": dtype '" + name + "' is not one of BF16, F16, F32, F64, I32, I64");
}

}  // namespace

std::string safetensors_dtype_name(DType dtype) {
  for (const auto& d : kDTypes)
    if (d.dtype == dtype) return d.name;
  return "?";
}

Safetensors Safetensors::read(const std::filesystem::path& path) {
  const std::string label = "safetensors file '" + path.string() + "'";
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ImportError(label + ": cannot be opened");
  Safetensors file;
  file.path_ = path;
  in.seekg(0, std::ios::end);
  const auto size = static_cast<std::size_t>(in.tellg());
  in.seekg(0);
  file.bytes_.resize(size);
  in.read(reinterpret_cast<char*>(file.bytes_.data()), static_cast<std::streamsize>(size));
  if (!in) throw ImportError(label + ": cannot be read");
  if (size < 8) throw ImportError(label + ": truncated: " + std::to_string(size) + " bytes, no 8-byte header length");
  std::uint64_t header = 0;
  for (int i = 7; i >= 0; --i) header = header << 8 | std::to_integer<std::uint64_t>(file.bytes_[static_cast<std::size_t>(i)]);
  if (header > size - 8)
    throw ImportError(label + ": truncated: the header claims " + std::to_string(header) + " bytes, the file has " +
                      std::to_string(size - 8) + " after the length");
  file.data_start_ = 8 + static_cast<std::size_t>(header);
  const std::size_t data_size = size - file.data_start_;
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(reinterpret_cast<const char*>(file.bytes_.data()) + 8,
                                 reinterpret_cast<const char*>(file.bytes_.data()) + file.data_start_);
  } catch (const nlohmann::json::exception& e) {
    throw ImportError(label + ": the header is not valid JSON: " + e.what());
  }
  if (!json.is_object()) throw ImportError(label + ": the header is not a JSON object");
  for (const auto& [name, entry] : json.items()) {
    if (name == "__metadata__") continue;
    const std::string where = label + ", tensor '" + name + "'";
    try {
      SafetensorsTensor t;
      t.dtype = dtype_from(entry.at("dtype").get<std::string>(), where);
      t.shape = entry.at("shape").get<Shape>();
      const auto offsets = entry.at("data_offsets").get<std::vector<std::size_t>>();
      if (offsets.size() != 2 || offsets[0] > offsets[1])
        throw ImportError(where + ": data_offsets must be [begin, end] with begin <= end");
      t.begin = offsets[0], t.end = offsets[1];
      std::int64_t numel = 1;
      for (auto n : t.shape) {
        if (n < 0) throw ImportError(where + ": negative size in its shape");
        numel *= n;
      }
      const auto bytes = static_cast<std::size_t>(numel) * size_of(t.dtype);
      if (t.end - t.begin != bytes)
        throw ImportError(where + ": its shape and dtype take " + std::to_string(bytes) + " bytes, its data_offsets " +
                          std::to_string(t.end - t.begin));
      if (t.end > data_size)
        throw ImportError(where + ": truncated: its data ends at byte " + std::to_string(t.end) +
                          " of a data section of " + std::to_string(data_size));
      file.tensors_[name] = t;
    } catch (const nlohmann::json::exception& e) {
      throw ImportError(where + ": malformed entry: " + e.what());
    }
  }
  return file;
}

const SafetensorsTensor& Safetensors::at(const std::string& name) const {
  const auto it = tensors_.find(name);
  if (it == tensors_.end())
    throw ImportError("safetensors file '" + path_.string() + "': no tensor '" + name + "'");
  return it->second;
}

}  // namespace kda::golden
