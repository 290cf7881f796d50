#include "results_file.hpp"

#include <cstring>

#include "kda/golden/results_io.hpp"
#include "kda/memory.hpp"
#include "rule_names.hpp"

namespace kda::adapters {

namespace {

// A tensor of the problem the call may write (the pool included), or nullptr.
Tensor* output_named(Problem& p, std::string_view name) {
  const TensorField* field = find_tensor_field(name);
  return field && field->written() ? field->in(p) : nullptr;
}

golden::CaseResult read_case(const std::filesystem::path& results, const std::string& case_name) {
  if (!std::filesystem::exists(results)) throw ResultsError("the results file " + results.string() + " does not exist");
  try {
    return golden::ResultsFile::open(results).read(case_name);
  } catch (const golden::FormatError& e) {
    throw ResultsError(e.what());
  } catch (const MemoryError& e) {
    throw ResultsError(e.what());
  }
}

}  // namespace

RunOutcome apply_results(const std::filesystem::path& results, const std::string& case_name, Problem& problem) {
  const golden::CaseResult r = read_case(results, case_name);
  const std::string where = "results file " + results.string() + ", case '" + case_name + "'";
  if (r.unsupported) throw ResultsError(where + " says the kernel cannot run the case: " + *r.unsupported);
  if (r.rejection) {
    const auto rule = rule_from_name(r.rejection->rule);
    if (!rule) throw ResultsError(where + " rejects the case with the unknown rule '" + r.rejection->rule + "'");
    return RunOutcome::rejected({{*rule, r.rejection->message}});
  }
  for (const auto& field : tensor_fields()) {
    if (!output_named(problem, field.name)) continue;
    bool returned = false;
    for (const auto& b : r.outputs) returned |= b.tensor == field.name;
    if (!returned)
      throw ResultsError(where + " lacks the buffer of output '" + std::string(field.name) +
                         "' (the whole buffer of every output tensor must come back)");
  }
  for (const auto& b : r.outputs) {
    const Tensor* t = output_named(problem, b.tensor);
    if (!t) throw ResultsError(where + " returns '" + b.tensor + "', an output this case does not have");
    if (b.dtype != t->dtype() || b.payload.size() != t->buffer->size())
      throw ResultsError(where + ": '" + b.tensor + "' must be the whole " + std::to_string(t->buffer->size()) +
                         "-byte " + std::string(name_of(t->dtype())) + " buffer, as in the request");
  }
  for (const auto& b : r.outputs) {
    GuardedBuffer& buffer = *output_named(problem, b.tensor)->buffer;
    // An empty output (o of a call with no tokens) has no storage: memcpy must not see its null pointers.
    if (!b.payload.empty()) std::memcpy(buffer.data(), b.payload.data(), b.payload.size());
  }
  RunOutcome outcome = RunOutcome::ok();
  outcome.seconds = r.seconds;
  return outcome;
}

}  // namespace kda::adapters
