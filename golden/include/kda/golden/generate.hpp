#pragma once
// Golden-file generation: every case of a suite with its fp64 expected outputs (the recurrent
// reference) and its tolerance, written in the suite's order. The tolerance is the policy every
// verifier applies (props::TolerancePolicy): per output, rel-RMS <= alpha x the model's rel-RMS
// + the unit roundoff of the output's dtype. The model is the fp32 reference run on the case like a
// kernel (its outputs rounded into the case's output tensors), recurrent and chunked: the larger
// of the two errors counts, since a kernel may compute either way.
// Deterministic: the same suite gives a byte-identical file whatever the thread count.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

#include "kda/contract_cases.hpp"
#include "kda/golden/case_io.hpp"
#include "kda/golden/progress.hpp"
#include "kda/golden/suites.hpp"

namespace kda::golden {

inline constexpr std::string_view kToleranceModel = "max(ref-fp32, ref-fp32-chunked)";

// The golden case of one valid suite case: the problem built from its spec, expected outputs and
// tolerance computed, metadata (suite, covers, spec) filled in.
Case golden_case(const Suite& suite, const SuiteCase& c);
// A contract case: the problem, the rule and message it must be rejected with, its profile.
Case golden_case(const Suite& suite, const ContractCase& c);
// The tolerance of a valid problem with fp64 expected outputs (kToleranceModel; `name` for errors).
Tolerance golden_tolerance(const Problem& p, const ReferenceOutputs& expected, const std::string& name);

struct GenerateOptions {
  unsigned threads = 0;  // cases computed at once; 0: one per hardware thread
  Progress progress;     // optional; called after each case is written
};

struct GenerateStats {
  std::size_t cases = 0;           // valid cases
  std::size_t contract_cases = 0;  // invalid calls
  std::uintmax_t bytes = 0;        // the file's size
};

// Writes the suite to `out` (replacing it). Throws std::runtime_error when it cannot write.
GenerateStats generate(const Suite& suite, const std::filesystem::path& out, const GenerateOptions& options = {});

}  // namespace kda::golden
