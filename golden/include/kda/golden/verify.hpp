#pragma once
// Verifying a kernel against a golden file. Each case is run live through the Kernel interface or
// read from a results file computed elsewhere, and judged the same way:
//   a valid case passes when every output's rel-RMS against the fp64 expected outputs is within the
//   bound the file stores for it (the stored tolerance; no NaN or Inf where the expected value is
//   finite) and no byte outside the region the call may write changed (gaps, unused pool slots,
//   inputs; for a live run also the guard bands around every buffer);
//   a contract case passes when the call is rejected for the expected rule, having written nothing.
// A case the kernel cannot run (a feature outside its capabilities, a rule its profile does not
// enforce; for results, a case marked unsupported) is skipped, not failed.
#include <optional>
#include <string>
#include <vector>

#include "kda/golden/case_io.hpp"
#include "kda/golden/progress.hpp"
#include "kda/golden/results_io.hpp"
#include "kda/kernel.hpp"
#include "kda/properties/comparison.hpp"

namespace kda::golden {

enum class Outcome : std::uint8_t { passed, failed, skipped };
std::string_view name_of(Outcome outcome);

struct CaseReport {
  std::string name;
  Outcome outcome = Outcome::passed;
  std::optional<Rule> expected_rule;  // set for contract cases
  // A valid case that ran: one verdict per output with the file's bound (bound and model_rel_rms are
  // the stored tolerance's; mismatches are not meaningful without the model's outputs).
  std::vector<props::TensorVerdict> outputs;
  // A valid case that ran: bytes changed outside the region the call may write, one line per region.
  std::vector<std::string> changes;
  std::vector<std::string> notes;  // why it failed or was skipped, the rejection seen
  std::string call;                // a verify case's call (verify_call); empty for other calls
};

// A verify call in words: "verify, L = 4, index-table form" or "verify, L = 4, scratch form (6 steps)";
// empty for other calls.
std::string verify_call(const Problem& p);

// One case judged. A live run stores what the kernel did into `save` when given (its outputs, its
// rejection, or why the case was skipped; nothing when it failed), for a later verify --results.
// The results overload throws FormatError when the stored buffers do not fit the case (missing, of
// another dtype or size); `label` names the results file and case in that message.
CaseReport verify_case(const std::string& name, Case golden, Kernel& kernel, ResultsFile* save = nullptr);
CaseReport verify_case(const std::string& name, Case golden, const CaseResult& result, const std::string& label);

// Every case of a golden file, in its order. The results overload also reports, as failed, cases
// the results file holds that the golden file does not, and golden cases it has no result for.
std::vector<CaseReport> verify(const File& golden, Kernel& kernel, const Progress& progress = {},
                               ResultsFile* save = nullptr);
std::vector<CaseReport> verify(const File& golden, const ResultsFile& results, const Progress& progress = {});

}  // namespace kda::golden
