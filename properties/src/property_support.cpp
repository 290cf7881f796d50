#include <algorithm>

#include "kda/properties/property_bodies.hpp"

namespace kda::props {

bool with_padding_row(CaseSpec& spec) {
  ProblemSpec& p = spec.problem;
  if (p.state == StateSource::table && !p.lengths.empty()) {  // a whole request of -1 entries
    const auto L = static_cast<std::size_t>(p.L);
    for (std::size_t n = 0; n < p.lengths.size(); ++n)
      if (p.indices[n * L + static_cast<std::size_t>(p.accepted[n]) - 1] == -1) return true;
    std::fill(p.indices.begin(), p.indices.begin() + static_cast<std::ptrdiff_t>(L), -1);
    return true;
  }
  if ((p.state != StateSource::pool && p.state != StateSource::scratch) || p.lengths.empty()) return false;
  if (p.indices.empty())
    for (std::size_t n = 0; n < p.lengths.size(); ++n) p.indices.push_back(static_cast<std::int64_t>(n) + 1);
  if (std::find(p.indices.begin(), p.indices.end(), -1) == p.indices.end()) p.indices.front() = -1;
  return true;
}

}  // namespace kda::props
