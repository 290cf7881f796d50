#pragma once
// The reading side of HDF5, for files that may be hostile: every missing object, wrong type or
// wrong shape becomes a FormatError naming the file, the object and what was expected.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hdf5_handles.hpp"
#include "kda/golden/case_io.hpp"
#include "kda/memory.hpp"

namespace kda::golden::detail {

// The reader refuses datasets larger than this before allocating memory for them.
inline constexpr std::uint64_t kMaxDatasetBytes = std::uint64_t{1} << 33;

class In {
 public:
  In(ObjectId id, std::string label) : id_(std::move(id)), label_(std::move(label)) {}
  hid_t id() const { return id_.get(); }
  const std::string& label() const { return label_; }
  In with_label(std::string label) && { return In(std::move(id_), std::move(label)); }
  [[noreturn]] void fail(const std::string& what) const;  // throws FormatError("<label>: <what>")

  // Members reached by hard links; `label` names the member in messages.
  bool has(const std::string& name) const;
  In group(const std::string& name, const std::string& label) const;
  std::optional<In> optional_group(const std::string& name, const std::string& label) const;
  In dataset(const std::string& name, const std::string& label) const;
  std::vector<std::string> members() const;  // link names, sorted

  // Scalar attributes; each fails when missing or of another type class.
  bool has_attribute(const char* name) const;
  std::vector<std::string> attribute_names() const;                                // sorted
  std::string text(const char* name) const;                                        // fixed- or variable-length string
  std::int64_t int64(const char* name) const;                                      // any integer type
  std::uint64_t uint64(const char* name) const;                                    // 64-bit, either sign
  double real(const char* name) const;                                             // any float type
  bool flag(const char* name) const;                                               // an integer 0 or 1
  std::vector<std::int64_t> int64s(const char* name, std::size_t max_size) const;  // 1-D integer

  // Datasets: the dims (at most max_rank, total size checked against kMaxDatasetBytes) when the
  // stored type equals one of the accepted types; then the whole dataset into memory.
  std::vector<std::int64_t> dims(std::initializer_list<hid_t> accepted, const std::string& type_name,
                                 int max_rank) const;
  void read(hid_t mem_type, void* out) const;
  // The memory the datasets directly in this group take once read (elements x stored element size),
  // counted before any is read.
  ByteTotal dataset_bytes() const;

 private:
  AttributeId attribute(const char* name, H5T_class_t type_class, const char* class_name) const;
  ObjectId member(const std::string& name, H5I_type_t type, const char* kind, const std::string& label) const;

  ObjectId id_;
  std::string label_;  // "golden file 'x.h5', case 'c', tensor 'q'"
};

}  // namespace kda::golden::detail
