#include "kda/metrics.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace kda {

namespace {
void require_same_size(std::span<const double> a, std::span<const double> b) {
  if (a.size() != b.size()) throw std::invalid_argument("metrics: output and reference differ in size");
}
}  // namespace

double rel_rms(std::span<const double> out, std::span<const double> ref) {
  require_same_size(out, ref);
  double err = 0, norm = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (!std::isfinite(out[i]) || !std::isfinite(ref[i])) return std::numeric_limits<double>::infinity();
    err += (out[i] - ref[i]) * (out[i] - ref[i]);
    norm += ref[i] * ref[i];
  }
  if (norm == 0) return err == 0 ? 0.0 : std::numeric_limits<double>::infinity();
  return std::sqrt(err / norm);
}

double max_abs_diff(std::span<const double> out, std::span<const double> ref) {
  require_same_size(out, ref);
  double m = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    const double d = std::abs(out[i] - ref[i]);
    if (std::isnan(d)) return std::numeric_limits<double>::infinity();
    m = std::max(m, d);
  }
  return m;
}

}  // namespace kda
