// The JSON call format (docs/golden.md) -> a guard-banded, poisoned Problem laid out as recorded.
#include "kda/golden/call_import.hpp"

#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "kda/contract.hpp"
#include "kda/golden/generate.hpp"
#include "kda/golden/safetensors.hpp"
#include "kda/problem_factory.hpp"
#include "kda/reference.hpp"

namespace kda::golden {

namespace {

using nlohmann::json;
using i64 = std::int64_t;

// One tensor argument of the call as the JSON gives it.
struct TensorEntry {
  const TensorField* field = nullptr;
  View view;
  std::string buffer;                  // tensors naming one buffer share it (a fused projection)
  std::optional<std::string> key;      // its contents in the tensors file
  std::optional<std::vector<double>> values;  // its contents, row-major, in the JSON
};

struct Reader {
  std::string label;  // "call file 'x.json'"

  [[noreturn]] void fail(const std::string& what) const { throw ImportError(label + ": " + what); }

  template <class T>
  T get(const json& j, const std::string& key, const std::string& where) const {
    try {
      return j.at(key).get<T>();
    } catch (const json::exception&) {
      fail(where + (j.contains(key) ? ": '" + key + "' has the wrong type" : ": '" + key + "' is missing"));
    }
  }
};

DType dtype_named(const Reader& r, const std::string& name, const std::string& tensor) {
  if (auto d = dtype_from_name(name)) return *d;
  r.fail("tensor '" + tensor + "': unknown dtype '" + name + "' (bf16, f16, f32, f64, i32, i64)");
}

TensorEntry read_tensor(const Reader& r, const std::string& name, const json& j) {
  TensorEntry e;
  e.field = find_tensor_field(name);
  if (!e.field) r.fail("unknown tensor '" + name + "'");
  const std::string where = "tensor '" + name + "'";
  if (!j.is_object()) r.fail(where + " is not a JSON object");
  for (const auto& [key, value] : j.items())
    if (key != "dtype" && key != "shape" && key != "strides" && key != "offset" && key != "buffer" &&
        key != "safetensors" && key != "values")
      r.fail(where + ": unknown field '" + key + "'");
  e.view.dtype = dtype_named(r, r.get<std::string>(j, "dtype", where), name);
  e.view.shape = r.get<Shape>(j, "shape", where);
  for (i64 n : e.view.shape)
    if (n < 0) r.fail(where + ": negative size in shape");
  e.view.strides = j.contains("strides") ? r.get<Shape>(j, "strides", where) : contiguous_strides(e.view.shape);
  if (e.view.strides.size() != e.view.shape.size())
    r.fail(where + ": " + std::to_string(e.view.strides.size()) + " strides for " +
           std::to_string(e.view.shape.size()) + " dims");
  e.view.offset = j.contains("offset") ? r.get<i64>(j, "offset", where) : 0;
  if (e.view.offset < 0) r.fail(where + ": negative storage offset");
  for (i64 s : e.view.strides)
    if (s < 0) r.fail(where + ": negative stride");
  e.buffer = j.contains("buffer") ? r.get<std::string>(j, "buffer", where) : name;
  if (j.contains("safetensors")) e.key = r.get<std::string>(j, "safetensors", where);
  if (j.contains("values")) {
    const json& v = j.at("values");
    if (!v.is_array()) r.fail(where + ": 'values' is not an array");
    e.values.emplace();
    for (const auto& x : v) {
      if (x.is_number()) e.values->push_back(x.get<double>());
      else if (x.is_string() && (x == "nan" || x == "inf" || x == "-inf"))  // JSON has no NaN or Inf
        e.values->push_back(x == "nan" ? std::numeric_limits<double>::quiet_NaN()
                                        : (x == "inf" ? 1 : -1) * std::numeric_limits<double>::infinity());
      else r.fail(where + ": 'values' holds a non-number");
    }
    if (static_cast<i64>(e.values->size()) != e.view.numel())
      r.fail(where + ": " + std::to_string(e.values->size()) + " values for shape " + View{e.view}.describe() + " (" +
             std::to_string(e.view.numel()) + " elements)");
  }
  if (e.key && e.values) r.fail(where + ": both 'values' and 'safetensors' given");
  return e;
}

Options read_options(const Reader& r, const json& j) {
  Options o;
  if (!j.is_object()) r.fail("'options' is not a JSON object");
  for (const auto& [key, value] : j.items()) {
    const std::string where = "option '" + key + "'";
    try {
      if (key == "scale") {
        if (!value.is_null()) o.scale = value.get<double>();
      } else if (key == "l2norm_qk") o.l2norm_qk = value.get<bool>();
      else if (key == "beta_from_logits") o.beta_from_logits = value.get<bool>();
      else if (key == "allow_neg_eigval") o.allow_neg_eigval = value.get<bool>();
      else if (key == "gate_in_kernel") o.gate_in_kernel = value.get<bool>();
      else if (key == "lower_bound") {
        if (!value.is_null()) o.lower_bound = value.get<double>();
      } else if (key == "safe_gate") o.safe_gate = value.get<bool>();
      else if (key == "chunk_size") o.chunk_size = value.get<int>();
      else if (key == "state_layout") {
        const auto layout = value.get<std::string>();
        if (layout != "vk" && layout != "kv") r.fail(where + ": '" + layout + "' is neither 'vk' nor 'kv'");
        o.state_layout = layout == "vk" ? StateLayout::vk : StateLayout::kv;
      } else r.fail("unknown " + where);
    } catch (const json::exception&) {
      r.fail(where + " has the wrong type");
    }
  }
  return o;
}

Mode mode_named(const Reader& r, const std::string& name) {
  for (Mode m : {Mode::prefill, Mode::decode, Mode::verify})
    if (name == name_of(m)) return m;
  r.fail("unknown mode '" + name + "' (prefill, decode, verify)");
}

// Every element of a buffer set to poison: NaN for floating-point buffers, -1 for integer ones (a
// gap of an index table reads as a padding entry, not as a slot).
void poison(GuardedBuffer& buffer, DType dtype) {
  const auto elements = static_cast<i64>(buffer.size() / size_of(dtype));
  for (i64 e = 0; e < elements; ++e) {
    if (is_float(dtype)) store_element(buffer.data(), dtype, e, std::numeric_limits<double>::quiet_NaN());
    else store_integer(buffer.data(), dtype, e, -1);
  }
}

void store(Tensor& t, std::span<const std::int64_t> idx, double x) {
  if (is_float(t.dtype())) t.set(idx, x);
  else store_integer(t.buffer->data(), t.dtype(), t.view.element_at(idx), static_cast<i64>(x));
}

void copy_values(Tensor& t, const std::vector<double>& values) {
  std::size_t i = 0;
  for_each_index(t.shape(), [&](auto idx) { store(t, idx, values[i++]); });
}

void copy_safetensor(const Reader& r, Tensor& t, const std::string& name, const Safetensors& file,
                     const std::string& key) {
  const SafetensorsTensor& s = file.at(key);
  const std::string where = "tensor '" + name + "' (safetensors key '" + key + "' in '" + file.path().string() + "')";
  if (s.dtype != t.dtype())
    r.fail(where + ": dtype mismatch: the file holds " + safetensors_dtype_name(s.dtype) + ", the call says " +
           std::string(name_of(t.dtype())));
  if (s.shape != t.shape())
    r.fail(where + ": shape mismatch: the file holds " + View{s.dtype, s.shape, contiguous_strides(s.shape), 0}.describe() +
           ", the call says " + t.view.describe());
  i64 e = 0;
  const std::byte* data = file.data(s);
  for_each_index(t.shape(), [&](auto idx) {
    const i64 element = t.view.element_at(idx);
    std::copy_n(data + e * static_cast<i64>(size_of(s.dtype)), size_of(s.dtype),
                t.buffer->data() + element * static_cast<i64>(size_of(s.dtype)));
    ++e;
  });
}

// B, T, H, K from q [B,T,H,K]; HV, V from v; N from cu_seqlens, a verify call's table or the batch;
// L from the index table (else the longest sequence). `sizes` in the JSON overrides any of them.
void set_sizes(const Reader& r, Problem& p, const json& sizes) {
  auto dim = [](const Tensor& t, std::size_t d) { return d < t.shape().size() ? t.shape()[d] : 0; };
  p.B = dim(p.q, 0), p.T = dim(p.q, 1), p.H = dim(p.q, 2), p.K = dim(p.q, 3);
  p.HV = dim(p.v, 2), p.V = dim(p.v, 3);
  p.N = p.cu_seqlens ? std::max<i64>(dim(*p.cu_seqlens, 0) - 1, 0) : p.B;
  if (p.mode == Mode::verify) {
    if (p.num_accepted && p.state_indices && p.state_indices->shape().size() == 2) p.L = dim(*p.state_indices, 1);
    else if (p.cu_seqlens) {
      for (i64 n = 0; n + 1 < dim(*p.cu_seqlens, 0); ++n)
        p.L = std::max(p.L, p.cu_seqlens->integer_at(n + 1) - p.cu_seqlens->integer_at(n));
    } else p.L = p.T;
  }
  if (!sizes.is_object()) r.fail("'sizes' is not a JSON object");
  const std::map<std::string, i64 Problem::*> fields{{"B", &Problem::B}, {"T", &Problem::T}, {"N", &Problem::N},
                                                     {"H", &Problem::H}, {"HV", &Problem::HV}, {"K", &Problem::K},
                                                     {"V", &Problem::V}, {"L", &Problem::L}};
  for (const auto& [key, value] : sizes.items()) {
    const auto it = fields.find(key);
    if (it == fields.end()) r.fail("unknown size '" + key + "' (B, T, N, H, HV, K, V, L)");
    if (!value.is_number_integer()) r.fail("size '" + key + "' is not an integer");
    p.*(it->second) = value.get<i64>();
  }
}

}  // namespace

ImportedCall import_call(const std::filesystem::path& call, const std::optional<std::filesystem::path>& tensors,
                         const Profile& profile, bool geometry_only) {
  const Reader r{"call file '" + call.string() + "'"};
  std::ifstream in(call);
  if (!in) r.fail("cannot be opened");
  json j;
  try {
    j = json::parse(in);
  } catch (const json::exception& e) {
    r.fail(std::string("not valid JSON: ") + e.what());
  }
  if (!j.is_object()) r.fail("not a JSON object");
  if (r.get<std::string>(j, "schema", "the call") != kCallSchemaName)
    r.fail("schema is not '" + std::string(kCallSchemaName) + "'");
  if (const auto version = r.get<i64>(j, "version", "the call"); version != kCallSchemaVersion)
    r.fail("version " + std::to_string(version) + " (this kda-oracle reads version " +
           std::to_string(kCallSchemaVersion) + ")");

  ImportedCall out;
  out.entry = r.get<std::string>(j, "entry", "the call");
  out.seed = j.contains("seed") ? r.get<std::uint64_t>(j, "seed", "the call") : 0;
  Problem& p = out.problem;
  p.mode = mode_named(r, r.get<std::string>(j, "mode", "the call"));
  if (j.contains("options")) p.options = read_options(r, j.at("options"));

  std::vector<TensorEntry> entries;
  if (!j.contains("tensors") || !j.at("tensors").is_object()) r.fail("'tensors' is missing or not an object");
  for (const auto& [name, value] : j.at("tensors").items()) entries.push_back(read_tensor(r, name, value));
  for (const auto& field : tensor_fields())
    if (field.required && std::none_of(entries.begin(), entries.end(), [&](auto& e) { return e.field == &field; }))
      r.fail("tensor '" + std::string(field.name) + "' is missing");

  // Each buffer sized to hold all of its views, filled with poison.
  std::map<std::string, std::pair<DType, i64>> buffers;  // name -> dtype, bytes
  for (const auto& e : entries) {
    const auto extent = e.view.byte_extent();
    const i64 end = extent ? extent->end : 0;
    auto [it, fresh] = buffers.try_emplace(e.buffer, e.view.dtype, end);
    if (!fresh && it->second.first != e.view.dtype)
      r.fail("tensor '" + std::string(e.field->name) + "' is " + std::string(name_of(e.view.dtype)) + " in buffer '" +
             e.buffer + "' of " + std::string(name_of(it->second.first)) + " tensors");
    it->second.second = std::max(it->second.second, end);
  }
  std::map<std::string, std::shared_ptr<GuardedBuffer>> made;
  for (const auto& [name, b] : buffers) {
    auto buffer = std::make_shared<GuardedBuffer>(name, static_cast<std::size_t>(b.second));
    poison(*buffer, b.first);
    made[name] = std::move(buffer);
  }
  for (const auto& e : entries) e.field->place(p, Tensor{made.at(e.buffer), e.view});

  // Integer inputs (metadata) must be given; floating-point inputs without contents are drawn from the seed.
  for (const auto& e : entries)
    if (e.field->read() && !is_float(e.view.dtype) && !e.key && !e.values)
      r.fail("tensor '" + std::string(e.field->name) + "' needs its contents ('values' or a 'safetensors' key)");
  if (p.q.shape().size() == 4 && p.k.shape() == p.q.shape()) fill_random(p, out.seed);
  std::optional<Safetensors> file;
  for (const auto& e : entries) {
    Tensor& t = *e.field->in(p);
    if (e.values) copy_values(t, *e.values);
    if (!e.key || (geometry_only && !tensors && is_float(e.view.dtype))) continue;
    if (!tensors) r.fail("tensor '" + std::string(e.field->name) + "' names safetensors key '" + *e.key +
                         "' but no tensors file was given (--tensors)");
    if (!file) file = Safetensors::read(*tensors);
    copy_safetensor(r, t, std::string(e.field->name), *file, *e.key);
  }
  // Outputs hold poison whatever was drawn into them: a kernel must write them.
  for (const auto& e : entries)
    if (!e.field->read()) {
      Tensor& t = *e.field->in(p);
      for_each_index(t.shape(), [&](auto idx) {
        if (is_float(t.dtype())) t.set(idx, std::numeric_limits<double>::quiet_NaN());
      });
    }

  set_sizes(r, p, j.contains("sizes") ? j.at("sizes") : json::object());
  if (const auto violations = validate(p, profile); !violations.empty())
    out.violation = ExpectedViolation{violations.front().rule, violations.front().message};
  out.metadata = {{"entry", out.entry}, {"seed", std::to_string(out.seed)}, {"imported_from", call.filename().string()},
                  {"profile", profile.name}};
  if (j.contains("source") && j.at("source").is_object())
    for (const auto& [key, value] : j.at("source").items())
      out.metadata["source." + key] = value.is_string() ? value.get<std::string>() : value.dump();
  return out;
}

Case golden_case(const ImportedCall& call) {
  Case c;
  c.problem = deep_copy(call.problem);
  c.metadata = call.metadata;
  if (call.violation) {
    c.violation = call.violation;
    c.metadata["covers"] = "imported call, contract rule " + std::string(name_of(call.violation->rule));
    return c;
  }
  c.metadata["covers"] = "imported call to " + call.entry;
  c.expected = run_reference<double>(c.problem, Algorithm::recurrent, 1);
  c.tolerance = golden_tolerance(c.problem, *c.expected, call.entry);
  return c;
}

}  // namespace kda::golden
