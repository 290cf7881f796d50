#pragma once
// The verify report: one row per output of each case (case, output, metric, value, bound, verdict),
// a verify case's call (L, form) beneath its rows, the notes of failed and skipped cases beneath
// their rows, then a summary line.
#include <cstdio>
#include <vector>

#include "kda/golden/verify.hpp"

namespace kda::cli {

// Prints the table; returns whether every case passed or was skipped.
bool print_report(std::FILE* out, const std::vector<golden::CaseReport>& reports);

}  // namespace kda::cli
