#pragma once
// Real calls as cases: a call recorded from a serving engine or a library (its entry point, options,
// and per tensor dtype, shape, strides, storage offset and optionally its contents), as the JSON
// call format of docs/golden.md, becomes a Problem laid out exactly as recorded: each buffer whole
// between guard bands, its gaps and every output poisoned, the contents from a safetensors file or
// the call's own values, or drawn from the call's seed (fill_random) where none are given. A call
// that breaks the contract is still imported, as a contract case naming the rule it breaks.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>

#include "kda/golden/case_io.hpp"
#include "kda/problem.hpp"
#include "kda/profile.hpp"

namespace kda::golden {

inline constexpr std::string_view kCallSchemaName = "kda-oracle/call";
inline constexpr std::int64_t kCallSchemaVersion = 1;

// Anything wrong with a call file or its tensors file; the message names the file, the tensor and
// what is wrong.
struct ImportError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct ImportedCall {
  std::string entry;        // the entry point called, e.g. "fla.ops.kda.chunk_kda"
  std::uint64_t seed = 0;   // the seed inputs without contents were drawn from
  Problem problem;
  std::optional<ExpectedViolation> violation;  // the first rule of the profile the call breaks
  Metadata metadata;        // entry, seed, source file, the call's own "source" fields
};

// Reads CALL.json (and, where its tensors name keys, the safetensors file), builds the Problem and
// checks it against `profile`. Throws ImportError. `geometry_only`: floating-point tensors naming
// safetensors keys are drawn from the seed when no tensors file is given (a call seeding --around
// needs no contents; its metadata tensors still do).
ImportedCall import_call(const std::filesystem::path& call, const std::optional<std::filesystem::path>& tensors,
                         const Profile& profile, bool geometry_only = false);

// The golden case of an imported call: the contract case it is, or the problem with its fp64
// expected outputs and model tolerance (as `golden generate` computes them).
Case golden_case(const ImportedCall& call);

}  // namespace kda::golden
