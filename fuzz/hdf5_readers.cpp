// libFuzzer target: the HDF5 readers on any file. The input is written to a file, which is read as a
// golden file (every case; the contract then runs on each problem read, which the reader promises is
// safe), as a results file (every case) and as the results an exec adapter returns for a request.
// Each reader reads the file or throws its typed error: golden::FormatError, kda::MemoryError (the file
// claims more memory than KDA_MEMORY_LIMIT, set to 256 MiB here, allows) or adapters::ResultsError.
// Any other exception, a crash or undefined behaviour in our code is a bug. libhdf5 itself is not
// instrumented: what it does with a hostile file is recorded in docs/reliability.md.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

#include "kda/contract.hpp"
#include "kda/golden/case_io.hpp"
#include "kda/golden/results_io.hpp"
#include "kda/memory.hpp"
#include "kda/problem_factory.hpp"
#include "results_file.hpp"

namespace {

namespace fs = std::filesystem;
namespace golden = kda::golden;

void read_golden(const fs::path& path) {
  try {
    const golden::File file = golden::File::open(path);
    for (const auto& name : file.case_names()) {
      const golden::Case c = file.read_case(name, golden::ViewCheck::inside_buffers_unless_contract);
      (void)kda::validate(c.problem, kda::profile_strict());
      (void)c.problem.describe();
    }
  } catch (const golden::FormatError&) {
  } catch (const kda::MemoryError&) {
  }
}

void read_results(const fs::path& path) {
  try {
    const golden::ResultsFile file = golden::ResultsFile::open(path);
    for (const auto& name : file.case_names()) (void)file.read(name);
  } catch (const golden::FormatError&) {
  } catch (const kda::MemoryError&) {
  }
}

// The results of the exec adapter's request "case": a small dense prefill.
void apply_results(const fs::path& path) {
  static kda::Problem request = kda::make_problem({});
  try {
    (void)kda::adapters::apply_results(path, "case", request);
  } catch (const kda::adapters::ResultsError&) {
  }
}

// The input as a file (libhdf5 reads files): one per process, removed when libFuzzer exits.
const fs::path& input_path() {
  static const fs::path path = fs::temp_directory_path() / ("kda-fuzz-" + std::to_string(getpid()) + ".h5");
  return path;
}
void remove_input() {
  std::error_code ignored;
  fs::remove(input_path(), ignored);
}

}  // namespace

// libhdf5 (1.10.8) leaks part of an object header it fails to decode from a corrupted file, after every
// id has been closed (docs/reliability.md): allocations made inside libhdf5 are not findings here.
extern "C" const char* __lsan_default_suppressions() { return "leak:libhdf5\n"; }

// libhdf5 allocates the size a (corrupted) file gives for a metadata block before it checks that the
// block lies in the file: an impossible size fails (malloc returns null, as glibc's does), not the run.
extern "C" const char* __asan_default_options() { return "allocator_may_return_null=1"; }

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  setenv("KDA_MEMORY_LIMIT", "268435456", 1);
  std::atexit(remove_input);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const fs::path& path = input_path();
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data),
                                                                 static_cast<std::streamsize>(size));
  read_golden(path);
  read_results(path);
  apply_results(path);
  return 0;
}
