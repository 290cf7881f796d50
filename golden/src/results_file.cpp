// Results files: root attributes (schema, version, kernel), /cases, and one group per case holding
// the kernel's output buffers, its rejection or why it cannot run the case.
#include <algorithm>
#include <utility>

#include "case_codec.hpp"
#include "hdf5_file.hpp"
#include "hdf5_types.hpp"
#include "kda/golden/results_io.hpp"

namespace kda::golden {

using detail::In;
using detail::ObjectId;
using detail::Out;

namespace {

std::string file_label(const std::filesystem::path& path) { return "results file '" + path.string() + "'"; }

// The output tensors of a problem (those the call may write, the pool included), in the order of
// kda::tensor_fields().
std::vector<std::pair<std::string_view, const Tensor*>> outputs_of(const Problem& p) {
  std::vector<std::pair<std::string_view, const Tensor*>> out;
  for (const auto& field : tensor_fields())
    if (const Tensor* t = field.in(p); t && field.written()) out.emplace_back(field.name, t);
  return out;
}

bool is_output_name(const std::string& name) {
  const TensorField* field = find_tensor_field(name);
  return field && field->written();
}

std::string output_names() {
  std::string names;
  for (const auto& field : tensor_fields())
    if (field.written()) names += (names.empty() ? "" : ", ") + std::string(field.name);
  return names;
}

OutputBuffer read_output(const In& kase, const std::string& tensor) {
  const In d = kase.dataset(tensor, "output " + detail::in_quotes(tensor));
  const DType dtype = detail::dtype_attribute(d);
  const detail::StoredType type = detail::stored_type(dtype);
  const auto dims = d.dims({type.file, type.file_other}, type.description, 1);
  OutputBuffer out{tensor, dtype, std::vector<std::byte>(static_cast<std::size_t>(dims[0]) * size_of(dtype))};
  d.read(type.memory, out.payload.data());
  return out;
}

}  // namespace

ResultsFile::ResultsFile(std::int64_t id, std::filesystem::path path, bool writable, std::string kernel)
    : id_(id), path_(std::move(path)), writable_(writable), kernel_(std::move(kernel)) {}

ResultsFile::ResultsFile(ResultsFile&& other) noexcept
    : id_(std::exchange(other.id_, -1)),
      path_(std::move(other.path_)),
      writable_(other.writable_),
      kernel_(std::move(other.kernel_)) {}

ResultsFile& ResultsFile::operator=(ResultsFile&& other) noexcept {
  if (this != &other) {
    if (id_ >= 0) H5Fclose(id_);
    id_ = std::exchange(other.id_, -1);
    path_ = std::move(other.path_);
    writable_ = other.writable_;
    kernel_ = std::move(other.kernel_);
  }
  return *this;
}

ResultsFile::~ResultsFile() {
  if (id_ >= 0) H5Fclose(id_);
}

ResultsFile ResultsFile::create(const std::filesystem::path& path, const std::string& kernel) {
  detail::silence_hdf5();
  const std::string label = file_label(path);
  ResultsFile file(detail::create_file(path, label), path, true, kernel);
  const Out root(ObjectId(H5Oopen(file.id_, "/", H5P_DEFAULT)), label, "/");
  root.text("schema", kResultsSchemaName);
  root.int64("schema_version", kResultsSchemaVersion);
  root.text("kernel", kernel);
  root.group("cases");
  return file;
}

ResultsFile ResultsFile::open(const std::filesystem::path& path) {
  detail::silence_hdf5();
  const std::string label = file_label(path);
  ResultsFile file(detail::open_file(path, label), path, false, {});
  const In root = detail::root_of(file.id_, label);
  detail::check_schema(root, kResultsSchemaName, kResultsSchemaVersion, kResultsSchemaVersion, "results file");
  file.kernel_ = root.text("kernel");
  root.group("cases", "group 'cases'");
  return file;
}

std::vector<std::string> ResultsFile::case_names() const {
  detail::silence_hdf5();
  return detail::root_of(id_, file_label(path_)).group("cases", "group 'cases'").members();
}

bool ResultsFile::has_case(const std::string& name) const {
  detail::silence_hdf5();
  return detail::root_of(id_, file_label(path_)).group("cases", "group 'cases'").has(name);
}

void ResultsFile::check_writable(const std::string& name) const {
  detail::silence_hdf5();
  if (!writable_)
    throw std::invalid_argument(file_label(path_) + ": opened read-only, cannot write case '" + name + "'");
  detail::check_case_name(name);
  if (has_case(name)) throw std::invalid_argument("case " + detail::in_quotes(name) + " already exists");
}

void ResultsFile::write_outputs(const std::string& name, const Problem& after) {
  check_writable(name);
  const auto outputs = outputs_of(after);
  for (const auto& [tensor, t] : outputs)
    if (!t->buffer || t->buffer->size() % size_of(t->dtype()) != 0)
      throw std::invalid_argument("output " + detail::in_quotes(tensor) + " has no whole buffer to store");
  const Out cases(ObjectId(H5Oopen(id_, "/cases", H5P_DEFAULT)), file_label(path_), "/cases");
  const Out kase = cases.group(name);
  for (const auto& [tensor, t] : outputs) {
    const detail::StoredType type = detail::stored_type(t->dtype());
    const std::vector<hsize_t> dims{t->buffer->size() / size_of(t->dtype())};
    kase.dataset(std::string(tensor), type.file, type.memory, dims, t->buffer->data()).text("dtype", name_of(t->dtype()));
  }
}

void ResultsFile::write_rejection(const std::string& name, const Rejection& rejection) {
  check_writable(name);
  const Out cases(ObjectId(H5Oopen(id_, "/cases", H5P_DEFAULT)), file_label(path_), "/cases");
  const Out kase = cases.group(name);
  kase.text("rejected_rule", rejection.rule);
  kase.text("rejected_message", rejection.message);
}

void ResultsFile::write_unsupported(const std::string& name, const std::string& reason) {
  check_writable(name);
  const Out cases(ObjectId(H5Oopen(id_, "/cases", H5P_DEFAULT)), file_label(path_), "/cases");
  cases.group(name).text("unsupported", reason);
}

CaseResult ResultsFile::read(const std::string& name) const {
  detail::silence_hdf5();
  const std::string label = file_label(path_);
  const In cases = detail::root_of(id_, label).group("cases", "group 'cases'").with_label(label);
  if (!cases.has(name)) cases.fail("has no case " + detail::in_quotes(name));
  const In kase = cases.group(name, "case " + detail::in_quotes(name));
  const auto members = kase.members();
  for (const auto& m : members)
    if (!is_output_name(m))
      kase.fail("holds " + detail::in_quotes(m) + ", which is not an output tensor (" + output_names() + ")");
  const bool rejected = kase.has_attribute("rejected_rule"), unsupported = kase.has_attribute("unsupported");
  if (int{rejected} + int{unsupported} + int{!members.empty()} != 1)
    kase.fail("must hold exactly one of: output datasets, the attributes 'rejected_rule' and 'rejected_message', "
              "or the attribute 'unsupported'");
  require_memory(kase.dataset_bytes(), kase.label());
  CaseResult r;
  if (rejected) r.rejection = Rejection{kase.text("rejected_rule"), kase.text("rejected_message")};
  if (unsupported) r.unsupported = kase.text("unsupported");
  if (kase.has_attribute("seconds")) r.seconds = kase.real("seconds");
  for (const auto& field : tensor_fields())
    if (field.written() && kase.has(std::string(field.name)))
      r.outputs.push_back(read_output(kase, std::string(field.name)));
  return r;
}

void ResultsFile::close() {
  if (id_ < 0) return;
  detail::silence_hdf5();
  if (H5Fclose(std::exchange(id_, -1)) < 0)
    throw std::runtime_error(file_label(path_) + ": cannot be closed (HDF5: " + detail::hdf5_error() + ")");
}

}  // namespace kda::golden
