// Reading one case from a file that may be hostile: every value is checked before it is used,
// views before they are built, and the input checksum as soon as the inputs are rebuilt.
#include <algorithm>
#include <cinttypes>
#include <climits>
#include <cstdio>
#include <map>
#include <memory>

#include "case_codec.hpp"
#include "case_layout.hpp"
#include "checksum.hpp"
#include "hdf5_types.hpp"
#include "view_reach.hpp"

namespace kda::golden::detail {

namespace {

using i64 = std::int64_t;

constexpr Mode kModes[] = {Mode::prefill, Mode::decode, Mode::verify};

void read_problem_attributes(const In& kase, Problem& p) {
  const std::string mode = kase.text("mode");
  const auto known = std::find_if(std::begin(kModes), std::end(kModes), [&](Mode m) { return name_of(m) == mode; });
  if (known == std::end(kModes)) kase.fail("mode " + in_quotes(mode) + " is not 'prefill', 'decode' or 'verify'");
  p.mode = *known;
  for (auto [name, member] : {std::pair{"B", &Problem::B},
                              {"T", &Problem::T},
                              {"N", &Problem::N},
                              {"H", &Problem::H},
                              {"HV", &Problem::HV},
                              {"K", &Problem::K},
                              {"V", &Problem::V}})
    p.*member = kase.int64(name);
  // L (tokens per request) exists on verify cases only.
  if (p.mode == Mode::verify)
    p.L = kase.int64("L");
  else if (kase.has_attribute("L"))
    kase.fail("holds attribute 'L', which only a verify case has (mode " + in_quotes(mode) + ")");
  Options& op = p.options;
  if (kase.has_attribute("scale")) op.scale = kase.real("scale");
  op.l2norm_qk = kase.flag("l2norm_qk");
  op.beta_from_logits = kase.flag("beta_from_logits");
  op.allow_neg_eigval = kase.flag("allow_neg_eigval");
  op.gate_in_kernel = kase.flag("gate_in_kernel");
  if (kase.has_attribute("lower_bound")) op.lower_bound = kase.real("lower_bound");
  op.safe_gate = kase.flag("safe_gate");
  const i64 chunk = kase.int64("chunk_size");
  if (chunk < INT_MIN || chunk > INT_MAX) kase.fail("chunk_size " + std::to_string(chunk) + " does not fit an int");
  op.chunk_size = static_cast<int>(chunk);
  const std::string layout = kase.text("state_layout");
  if (layout != "VK" && layout != "KV") kase.fail("state_layout " + in_quotes(layout) + " is not 'VK' or 'KV'");
  op.state_layout = layout == "VK" ? StateLayout::vk : StateLayout::kv;
}

}  // namespace

DType dtype_attribute(const In& object) {
  const std::string name = object.text("dtype");
  const auto dtype = dtype_from_name(name);
  if (!dtype) object.fail("dtype " + in_quotes(name) + " is not one of bf16, f16, f32, f64, i32, i64");
  return *dtype;
}

namespace {

struct StoredBuffer {
  std::shared_ptr<GuardedBuffer> buffer;
  DType dtype;
  bool used = false;
};

// What reading a case allocates, as its file declares it: every buffer with its guard bands and every
// expected output (the declarations are checked against each other after the admission).
ByteTotal declared_bytes(const In& kase) {
  ByteTotal total;
  if (kase.has("buffers")) {
    const In group = kase.group("buffers", "group 'buffers'");
    total.add(group.dataset_bytes().bytes());
    total.add(group.members().size() * 2 * GuardedBuffer::kGuardBytes);
  }
  for (const char* outputs : {"expected", "kernel_outputs"})
    if (const auto group = kase.optional_group(outputs, "group " + in_quotes(outputs)))
      total.add(group->dataset_bytes().bytes());
  return total;
}

std::map<std::string, StoredBuffer> read_buffers(const In& kase) {
  const In group = kase.group("buffers", "group 'buffers'").with_label(kase.label());
  std::map<std::string, StoredBuffer> buffers;
  for (const auto& name : group.members()) {
    const In d = group.dataset(name, "buffer " + in_quotes(name));
    const DType dtype = dtype_attribute(d);
    const StoredType type = stored_type(dtype);
    const auto dims = d.dims({type.file, type.file_other}, type.description, 1);
    const auto bytes = static_cast<std::size_t>(dims[0]) * size_of(dtype);
    auto buffer = std::make_shared<GuardedBuffer>(name, bytes);
    d.read(type.memory, buffer->data());
    buffers.emplace(name, StoredBuffer{std::move(buffer), dtype});
  }
  return buffers;
}

Tensor read_tensor(const In& t, std::map<std::string, StoredBuffer>& buffers, ViewCheck check) {
  const std::string buffer_name = t.text("buffer");
  const auto at = buffers.find(buffer_name);
  if (at == buffers.end()) t.fail("buffer " + in_quotes(buffer_name) + " is not in group 'buffers'");
  StoredBuffer& stored = at->second;
  View view{dtype_attribute(t), t.int64s("shape", kMaxRank), t.int64s("strides", kMaxRank), t.int64("offset")};
  if (view.dtype != stored.dtype)
    t.fail("dtype " + std::string(name_of(view.dtype)) + " differs from its buffer's " +
           std::string(name_of(stored.dtype)));
  const ViewReach reach = reach_of(view);
  if (!reach.error.empty()) t.fail("view " + view.describe() + " " + reach.error);
  const std::size_t size = stored.buffer->size();
  if (check == ViewCheck::inside_buffers && !fits(reach, size))
    t.fail("view " + view.describe() + " reaches bytes [" + std::to_string(reach.bytes->begin) + ", " +
           std::to_string(reach.bytes->end) + ") outside its " + std::to_string(size) + "-byte buffer " +
           in_quotes(buffer_name));
  stored.used = true;
  return Tensor{stored.buffer, std::move(view)};
}

void read_tensors(const In& kase, Problem& p, ViewCheck check) {
  auto buffers = read_buffers(kase);
  const In group = kase.group("tensors", "group 'tensors'").with_label(kase.label());
  const auto names = group.members();
  for (const auto& name : names)
    if (!find_tensor_field(name)) group.fail("group 'tensors' holds an unknown tensor " + in_quotes(name));
  for (const auto& field : tensor_fields()) {
    const std::string name(field.name);
    if (group.has(name))
      field.place(p, read_tensor(group.group(name, "tensor " + in_quotes(name)), buffers, check));
    else if (field.required)
      group.fail("tensor " + in_quotes(name) + " is missing");
  }
  for (const auto& [name, stored] : buffers)
    if (!stored.used) kase.fail("buffer " + in_quotes(name) + " is viewed by no tensor");
}

void verify_checksum(const In& kase, const Problem& p) {
  const std::uint64_t stored = kase.uint64("input_checksum");
  const std::uint64_t computed = input_checksum(p, name_buffers(p));
  if (stored == computed) return;
  char text[96];
  std::snprintf(text, sizeof text, "stored 0x%016" PRIx64 ", computed 0x%016" PRIx64, stored, computed);
  kase.fail("input checksum mismatch (" + std::string(text) + "): its inputs were modified or corrupted");
}

Metadata read_metadata(const In& kase) {
  const In group = kase.group("metadata", "group 'metadata'");
  Metadata m;
  for (const auto& key : group.attribute_names()) m[key] = group.text(key.c_str());
  return m;
}

std::optional<ExpectedViolation> read_violation(const In& kase) {
  const auto group = kase.optional_group("contract", "group 'contract'");
  if (!group) return std::nullopt;
  const std::string rule = group->text("rule");
  for (Rule r : all_rules())
    if (name_of(r) == rule) return ExpectedViolation{r, group->text("message")};
  group->fail("rule " + in_quotes(rule) + " is not a contract rule");
}

std::string shape_text(const std::vector<i64>& dims, bool leading_free = false) {
  std::string s = "[";
  for (std::size_t d = 0; d < dims.size(); ++d) {
    if (d) s += ',';
    s += d == 0 && leading_free ? std::string("*") : std::to_string(dims[d]);
  }
  return s + "]";
}

// An fp64 dataset of exactly the given dims (any leading dim when leading_free).
std::vector<double> read_reals(const In& group, const char* name, const std::vector<i64>& want, bool leading_free) {
  const In d = group.dataset(name, "dataset " + in_quotes(name));
  const auto dims = d.dims({H5T_IEEE_F64LE, H5T_IEEE_F64BE}, "float64", static_cast<int>(want.size()));
  const std::size_t from = leading_free ? 1 : 0;
  if (dims.size() != want.size() || !std::equal(dims.begin() + from, dims.end(), want.begin() + from))
    d.fail("has shape " + shape_text(dims) + ", the problem's sizes give " + shape_text(want, leading_free));
  std::size_t n = 1;
  for (i64 x : dims) n *= static_cast<std::size_t>(x);
  std::vector<double> values(n);
  d.read(H5T_NATIVE_DOUBLE, values.data());
  return values;
}

// One set of outputs (write_output_set): `expected` or `kernel_outputs`.
std::optional<ReferenceOutputs> read_output_set(const In& kase, const char* set, const Problem& p) {
  const auto group = kase.optional_group(set, "group " + in_quotes(set));
  if (!group) return std::nullopt;
  const Shape head = p.state_head_shape();
  ReferenceOutputs e;
  e.o = read_reals(*group, "o", {p.B, p.T, p.HV, p.V}, false);
  e.final_state = read_reals(*group, "final_state", {p.N, p.HV, head[0], head[1]}, false);
  {
    const In d = group->dataset("written", "dataset 'written'");
    const auto dims = d.dims({H5T_STD_I8LE, H5T_STD_I8BE}, "int8", 1);
    if (dims[0] != p.N) d.fail("has " + std::to_string(dims[0]) + " entries, expected N=" + std::to_string(p.N));
    e.written.resize(static_cast<std::size_t>(dims[0]));
    d.read(H5T_NATIVE_CHAR, e.written.data());
    for (char w : e.written)
      if (w != 0 && w != 1) d.fail("holds a value other than 0 or 1");
  }
  // chunk_states and token_states are expected exactly when the problem asks for them (a verify call
  // asks for token_states without such a tensor: its states go to pool slots or scratch rows).
  auto present_when_asked = [&](const char* name, bool asked) {
    if (group->has(name) == asked) return;
    if (asked && p.mode == Mode::verify) group->fail("lacks " + in_quotes(name) + ", which every verify case has");
    group->fail(std::string(asked ? "lacks " : "holds ") + in_quotes(name) + " although the problem has " +
                (asked ? "a" : "no") + " tensor of that name" + (asked ? "" : " and is not a verify call"));
  };
  present_when_asked("chunk_states", p.chunk_states.has_value());
  present_when_asked("token_states", expects_token_states(p));
  if (p.chunk_states) e.chunk_states = read_reals(*group, "chunk_states", {0, p.HV, head[0], head[1]}, true);
  if (expects_token_states(p))
    e.token_states = read_reals(*group, "token_states", {p.B, p.T, p.HV, head[0], head[1]}, false);
  return e;
}

}  // namespace

Case read_case(const In& cases, const std::string& name, ViewCheck check) {
  if (!cases.has(name)) cases.fail("has no case " + in_quotes(name));
  const In kase = cases.group(name, "case " + in_quotes(name));
  if (check == ViewCheck::inside_buffers_unless_contract)
    check = kase.has("contract") ? ViewCheck::well_formed_only : ViewCheck::inside_buffers;
  require_memory(declared_bytes(kase), kase.label());
  Case c;
  read_problem_attributes(kase, c.problem);
  read_tensors(kase, c.problem, check);
  verify_checksum(kase, c.problem);
  c.metadata = read_metadata(kase);
  if (const auto tolerance = kase.optional_group("tolerance", "group 'tolerance'"))
    c.tolerance = read_tolerance(*tolerance);
  c.violation = read_violation(kase);
  c.expected = read_output_set(kase, "expected", c.problem);
  c.kernel_outputs = read_output_set(kase, "kernel_outputs", c.problem);
  return c;
}

}  // namespace kda::golden::detail
