#pragma once
// A conformance campaign's plan: a folder of JSON files, one per library (conformance/plan/), each
// naming the library, its implementations (a kernel name as `check --kernel` takes it, a kind that sets
// the default case counts, whether to time it) and what could not be run, with the reason.
#include <filesystem>
#include <string>
#include <vector>

namespace kda::cli {

enum class ImplementationKind { recurrent, chunked };

struct Implementation {
  std::string name;           // a word, unique over the plan: the matrix row
  std::string library;        // the plan file's "library", e.g. "fla-core 0.6.0"
  std::string kernel;         // e.g. "exec:python3 adapters/fla/fla_adapter.py --entry recurrent"
  std::string golden_kernel;  // the kernel the golden suite is verified with ("golden_kernel"; default: kernel)
  ImplementationKind kind = ImplementationKind::recurrent;
  bool bench = false;
};

struct NotRun {
  std::string library, name, reason;
};

struct Plan {
  std::vector<Implementation> implementations;  // file by file (sorted by name), in each file's order
  std::vector<NotRun> not_run;
};

// Reads every *.json of `dir`; throws std::runtime_error naming the file and the field at fault (a
// missing or mistyped field, an unknown kind, a name used twice).
Plan load_plan(const std::filesystem::path& dir);

std::string_view name_of(ImplementationKind kind);

}  // namespace kda::cli
