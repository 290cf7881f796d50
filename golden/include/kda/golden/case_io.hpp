#pragma once
// The one HDF5 serialisation of KDA cases, shared by golden files, saved failures of property runs
// and the external-program adapter. A case is a Problem (every buffer stored once, whole, gaps
// included, and every tensor as a view onto one), free-form metadata, optionally a tolerance, the
// contract violation an invalid problem must raise, and the fp64 reference outputs.
// The file layout is specified in golden/SCHEMA.md, precisely enough for an h5py reader.
//
// Errors: FormatError for anything wrong with a file being read (the message names the file, the
// case and the object); kda::MemoryError (kda/memory.hpp) when a case's stored payloads would not fit
// in the memory available, before any is allocated; std::invalid_argument for a case that cannot be
// written (the message says why); std::runtime_error when HDF5 fails to write. HDF5 never prints to
// stderr from here.
// Not thread-safe: use one File from one thread at a time.
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "kda/problem.hpp"
#include "kda/profile.hpp"
#include "kda/reference.hpp"

namespace kda::golden {

inline constexpr std::string_view kSchemaName = "kda-oracle/golden";
// The version written; readers accept kOldestSchemaVersion .. kSchemaVersion (version 2 added verify
// calls: mode "verify", attribute L, the verify tensors and their expected token_states).
inline constexpr std::int64_t kSchemaVersion = 2;
inline constexpr std::int64_t kOldestSchemaVersion = 1;
inline constexpr std::string_view kGenerator = "kda-oracle " KDA_ORACLE_VERSION;

struct FormatError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

using Metadata = std::map<std::string, std::string>;  // free-form: seed, profile, property, ...

// The bound of one output tensor, set by a model: alpha x the model's error + the unit roundoff.
struct OutputBound {
  // "o", "final_state", "chunk_states" or "token_states"; a verify call's per-token states where its
  // form stores them: "state_pool" (index table) or "scratch_states" (scratch buffer)
  std::string tensor;
  double model_error = 0;    // the model's value of the metric on this output
  double unit_roundoff = 0;  // of the tensor's dtype: the floor of the bound
  double bound = 0;          // alpha * model_error + unit_roundoff
  bool operator==(const OutputBound&) const = default;
};

struct Tolerance {
  std::string metric;  // e.g. "rel_rms": RMS(ref - out) / RMS(ref)
  double bound = 0;    // o's bound, and that of every output without an entry in `outputs`
  // How model-based bounds were set (golden files); absent / empty otherwise.
  std::optional<double> alpha;
  std::string model;                 // the model kernel, e.g. "ref-fp32"
  // In the order o, final_state, chunk_states, token_states, state_pool, scratch_states.
  std::vector<OutputBound> outputs;
  double bound_for(std::string_view tensor) const;
  bool operator==(const Tolerance&) const = default;
};

// A contract case: the problem is invalid and the contract must report this rule with this message.
struct ExpectedViolation {
  Rule rule = Rule::problem_sizes;
  std::string message;
  bool operator==(const ExpectedViolation&) const = default;
};

struct Case {
  Problem problem;
  Metadata metadata;
  std::optional<Tolerance> tolerance;
  std::optional<ExpectedViolation> violation;
  std::optional<ReferenceOutputs> expected;  // fp64 reference outputs (not for contract cases)
  // What the kernel under test wrote, read back like `expected` (a saved failure: kda-oracle check
  // --save-failures); absent elsewhere.
  std::optional<ReferenceOutputs> kernel_outputs{};
};

// How much read_case checks the views it rebuilds. Only contract cases may hold views that leave
// their buffers (that is one of the rules they test); such a problem is safe to hand to
// kda::validate, which never reads outside a buffer, and to nothing else.
enum class ViewCheck : std::uint8_t {
  inside_buffers,   // every element of every view lies inside its buffer (the default)
  well_formed_only,  // views may leave their buffers; their index arithmetic still fits 64 bits
  inside_buffers_unless_contract  // well_formed_only for contract cases, inside_buffers for the others
};

class File {
 public:
  // Creates (truncates) a file for writing, with free-form root metadata.
  static File create(const std::filesystem::path& path, const Metadata& metadata = {});
  // Opens a file read-only; checks the schema name and version.
  static File open(const std::filesystem::path& path);
  // Opens an existing file to add cases to it (its schema checked as by open).
  static File append(const std::filesystem::path& path);

  File(File&& other) noexcept;
  File& operator=(File&& other) noexcept;
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  ~File();  // closes; close() first to see write errors

  const std::filesystem::path& path() const { return path_; }
  const Metadata& metadata() const { return metadata_; }
  std::int64_t schema_version() const { return schema_version_; }  // the file's (kSchemaVersion when created)
  std::vector<std::string> case_names() const;  // sorted
  bool has_case(const std::string& name) const;

  // Writes one case under a new name (no '/', not "." or empty). Writes everything or throws; a
  // case whose views leave their buffers is refused unless it carries a violation.
  void write_case(const std::string& name, const Case& c);
  // Rebuilds a case: fresh GuardedBuffers sized to the stored payloads, buffer sharing between
  // tensors kept, the input checksum verified.
  Case read_case(const std::string& name, ViewCheck check = ViewCheck::inside_buffers) const;

  void close();  // flushes and closes; throws std::runtime_error when HDF5 cannot

 private:
  static File open(const std::filesystem::path& path, bool writable);
  File(std::int64_t id, std::filesystem::path path, bool writable, Metadata metadata);

  std::int64_t id_ = -1;  // the HDF5 file id (hid_t)
  std::filesystem::path path_;
  bool writable_ = false;
  Metadata metadata_;
  std::int64_t schema_version_ = kSchemaVersion;
};

}  // namespace kda::golden
