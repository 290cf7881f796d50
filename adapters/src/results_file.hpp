#pragma once
// What an exec adapter hands back: a results file in the layout of golden/SCHEMA.md ("Results
// files"), read into the problem its request was written from.
#include <filesystem>
#include <stdexcept>
#include <string>

#include "kda/kernel.hpp"

namespace kda::adapters {

struct ResultsError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Case `case_name` of the results file: output buffers (every output tensor of the problem must come
// back, each the whole buffer it views, in its dtype) are copied into the problem's buffers and give
// ok; a rejection naming a contract rule gives rejected. Throws ResultsError saying what is wrong
// (a file that is no results file, a missing or misshapen buffer, buffers larger than the memory
// available, an unknown rule, "unsupported").
// Copies nothing unless everything checks out.
RunOutcome apply_results(const std::filesystem::path& results, const std::string& case_name, Problem& problem);

}  // namespace kda::adapters
