#pragma once
// Results files: what a kernel did with each case of a golden file, computed elsewhere (a Python,
// Rust or CUDA program, another machine) and judged by `kda-oracle golden verify --results`.
// Per case, either the kernel's output buffers (each output tensor's whole buffer, in the case's
// own layout and dtype), or the rejection it raised, or the reason it cannot run such a case.
// The layout is in golden/SCHEMA.md ("Results files").
//
// Errors as in case_io.hpp: FormatError for a file being read, kda::MemoryError for outputs that
// would not fit in memory (before any is allocated), std::invalid_argument for what cannot be
// written, std::runtime_error when HDF5 fails to write. Not thread-safe.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kda/golden/case_io.hpp"

namespace kda::golden {

inline constexpr std::string_view kResultsSchemaName = "kda-oracle/results";
inline constexpr std::int64_t kResultsSchemaVersion = 1;

// The whole payload of the buffer an output tensor views, as the kernel left it.
struct OutputBuffer {
  std::string tensor;  // a tensor the call may write (kda::tensor_fields()): "o", "state_pool", "scratch_states", ...
  DType dtype = DType::f32;
  std::vector<std::byte> payload;
};

struct Rejection {
  std::string rule;  // a contract rule name, e.g. "view_in_bounds"
  std::string message;
};

// Exactly one of the three is set.
struct CaseResult {
  std::vector<OutputBuffer> outputs;       // the kernel ran (in the order of kda::tensor_fields())
  std::optional<Rejection> rejection;      // the kernel rejected the call
  std::optional<std::string> unsupported;  // the kernel cannot run such a case (skipped, not failed)
  std::optional<double> seconds;           // the call's wall seconds as the kernel's program timed it, if it did
};

class ResultsFile {
 public:
  // Creates (truncates) a results file for the named kernel.
  static ResultsFile create(const std::filesystem::path& path, const std::string& kernel);
  // Opens one read-only; checks the schema name and version.
  static ResultsFile open(const std::filesystem::path& path);

  ResultsFile(ResultsFile&& other) noexcept;
  ResultsFile& operator=(ResultsFile&& other) noexcept;
  ResultsFile(const ResultsFile&) = delete;
  ResultsFile& operator=(const ResultsFile&) = delete;
  ~ResultsFile();  // closes; close() first to see write errors

  const std::filesystem::path& path() const { return path_; }
  const std::string& kernel() const { return kernel_; }
  std::vector<std::string> case_names() const;  // sorted
  bool has_case(const std::string& name) const;

  // The buffers of every output tensor of a problem a kernel ran on.
  void write_outputs(const std::string& name, const Problem& after);
  void write_rejection(const std::string& name, const Rejection& rejection);
  void write_unsupported(const std::string& name, const std::string& reason);
  CaseResult read(const std::string& name) const;

  void close();

 private:
  ResultsFile(std::int64_t id, std::filesystem::path path, bool writable, std::string kernel);
  void check_writable(const std::string& name) const;

  std::int64_t id_ = -1;  // the HDF5 file id (hid_t)
  std::filesystem::path path_;
  bool writable_ = false;
  std::string kernel_;
};

}  // namespace kda::golden
