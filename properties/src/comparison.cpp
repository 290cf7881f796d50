// compare(): each output tensor of a run judged against the fp64 oracle under the tolerance policy.
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>

#include "kda/metrics.hpp"
#include "kda/properties/comparison.hpp"

namespace kda::props {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::size_t count(std::int64_t n) { return static_cast<std::size_t>(n); }

// For each leading index of a state tensor (a sequence, a chunk, a token), whether it belongs to a
// padding sequence (oracle.written == 0), whose states are not compared.
std::vector<char> padding_leads(const Problem& p, std::string_view tensor, const std::vector<char>& written) {
  std::vector<char> padding;
  if (tensor == "final_state") {
    for (std::int64_t n = 0; n < p.N; ++n) padding.push_back(!written[count(n)]);
  } else if (tensor == "chunk_states") {
    for (std::int64_t n = 0; n < p.N; ++n) padding.insert(padding.end(), count(p.chunks(n)), !written[count(n)]);
  } else if (p.mode == Mode::verify) {  // state_pool or scratch_states, gathered per token [B,T]
    padding.assign(count(p.B * p.T), 1);  // tokens of no request: nothing stored, not compared
    for (std::int64_t n = 0; n < p.N; ++n)
      for (std::int64_t t = 0; t < p.length(n) && written[count(n)]; ++t)
        padding[count(p.row(n) * p.T + p.first(n) + t)] = p.token_slot(n, t) < 0;
  } else {  // token_states, [B,T]
    padding.assign(count(p.B * p.T), 0);
    for (std::int64_t n = 0; n < p.N; ++n)
      for (std::int64_t t = 0; t < p.length(n); ++t) padding[count(p.row(n) * p.T + p.first(n) + t)] = !written[count(n)];
  }
  return padding;
}

double rms(const std::vector<double>& x) {
  double sum = 0;
  for (double v : x) sum += v * v;
  return x.empty() ? 0.0 : std::sqrt(sum / static_cast<double>(x.size()));
}

// How far past its elementwise tolerance an element is: > 1 is a mismatch, +Inf for a non-finite value
// where the oracle is finite (or any difference where the oracle is not).
double badness(double got, double want, double tolerance) {
  if (!std::isfinite(want)) return got == want || (std::isnan(got) && std::isnan(want)) ? 0.0 : kInf;
  if (!std::isfinite(got)) return kInf;
  const double error = std::abs(got - want);
  if (error == 0) return 0.0;
  return tolerance > 0 ? error / tolerance : kInf;
}

// One tensor: the dense arrays split into `padding.size()` leading rows (all compared when empty).
TensorVerdict judge(const Problem& p, std::string name, DType dtype, const std::vector<double>& kernel,
                    const std::vector<double>& oracle, const std::vector<double>& model,
                    const std::vector<char>& padding, const TolerancePolicy& policy) {
  if (kernel.size() != oracle.size() || model.size() != oracle.size() ||
      (!padding.empty() && oracle.size() % padding.size() != 0))
    throw std::invalid_argument("compare: the " + name + " arrays do not fit the problem (kernel " +
                                std::to_string(kernel.size()) + ", oracle " + std::to_string(oracle.size()) +
                                ", model " + std::to_string(model.size()) + " values)");
  // The compared elements, gathered: the metrics take contiguous spans.
  const std::size_t per_lead = padding.empty() ? oracle.size() : oracle.size() / padding.size();
  std::vector<double> got, want, modelled, model_diff;
  std::vector<std::size_t> at;
  for (std::size_t i = 0; i < oracle.size(); ++i) {
    if (!padding.empty() && padding[i / per_lead]) continue;
    got.push_back(kernel[i]), want.push_back(oracle[i]), modelled.push_back(model[i]);
    model_diff.push_back(model[i] - oracle[i]), at.push_back(i);
  }
  TensorVerdict v;
  v.tensor = std::move(name);
  v.dtype = dtype;
  v.elements = static_cast<std::int64_t>(got.size());
  v.rel_rms = rel_rms(got, want);
  v.model_rel_rms = rel_rms(modelled, want);
  v.bound = policy.bound(v.model_rel_rms, dtype);
  v.max_abs = max_abs_diff(got, want);
  const double oracle_rms = rms(want), model_rms_diff = rms(model_diff);
  double worst = 0;
  for (std::size_t k = 0; k < got.size(); ++k) {
    if (!std::isfinite(got[k]) && std::isfinite(want[k])) v.non_finite = true;
    v.max_ulp = std::max(v.max_ulp, ulp_distance(dtype, got[k], want[k]));
    const double b =
        badness(got[k], want[k], policy.element_tolerance(model_diff[k], model_rms_diff, want[k], oracle_rms, dtype));
    if (b > 1) ++v.mismatches;
    if (b > worst) worst = b, v.worst_element = static_cast<std::int64_t>(at[k]), v.worst_got = got[k], v.worst_want = want[k];
  }
  if (v.worst_element >= 0) v.worst = locate(p, v.tensor, v.worst_element);
  return v;
}

std::string format(const char* spec, double x) {
  char text[64];
  std::snprintf(text, sizeof text, spec, x);
  return text;
}

}  // namespace

Verdict compare(const Problem& p, const ReferenceOutputs& kernel, const ReferenceOutputs& oracle,
                const ReferenceOutputs& model, const TolerancePolicy& policy) {
  if (oracle.o.size() != count(p.B * p.T * p.HV * p.V) || oracle.written.size() != count(p.N))
    throw std::invalid_argument("compare: the oracle's outputs do not fit the problem " + p.describe());
  Verdict verdict;
  verdict.tensors.push_back(judge(p, "o", p.o.dtype(), kernel.o, oracle.o, model.o, {}, policy));
  auto state = [&](const char* name, DType dtype, auto member) {
    verdict.tensors.push_back(judge(p, name, dtype, kernel.*member, oracle.*member, model.*member,
                                    padding_leads(p, name, oracle.written), policy));
  };
  if (p.mode == Mode::verify) {  // the state after every token, judged where the form stores it
    const Tensor& stored = p.scratch_states ? *p.scratch_states : *p.state_pool;
    state(p.scratch_states ? "scratch_states" : "state_pool", stored.dtype(), &ReferenceOutputs::token_states);
    return verdict;
  }
  if (p.final_state || p.state_pool)
    state("final_state", (p.final_state ? *p.final_state : *p.state_pool).dtype(), &ReferenceOutputs::final_state);
  if (p.chunk_states) state("chunk_states", p.chunk_states->dtype(), &ReferenceOutputs::chunk_states);
  if (p.token_states) state("token_states", p.token_states->dtype(), &ReferenceOutputs::token_states);
  return verdict;
}

std::string TensorVerdict::describe() const {
  std::string s = tensor + " (" + std::string(name_of(dtype)) + "): rel-RMS " + format("%.1e", rel_rms) +
                  (rel_rms <= bound ? " <= " : " > ") + "bound " + format("%.1e", bound) + " (model " +
                  format("%.1e", model_rel_rms) + "), max abs " + format("%.1e", max_abs) + ", max ulp " +
                  format("%.0f", max_ulp) + ", " + std::to_string(mismatches) + "/" + std::to_string(elements) +
                  " mismatches";
  if (non_finite) s += ", NaN/Inf where the reference is finite";
  if (worst_element < 0) return s + ", no element differs";
  return s + ", worst at " + worst.describe() + " (got " + format("%.8g", worst_got) + ", want " +
         format("%.8g", worst_want) + ")";
}

bool Verdict::passed() const {
  for (const auto& t : tensors)
    if (!t.passed()) return false;
  return true;
}

std::string Verdict::describe() const {
  const bool all = passed();
  std::string s;
  for (const auto& t : tensors)
    if (all || !t.passed()) {
      if (!s.empty()) s += '\n';
      s += t.describe();
    }
  return s;
}

const TensorVerdict* Verdict::find(std::string_view tensor) const {
  for (const auto& t : tensors)
    if (t.tensor == tensor) return &t;
  return nullptr;
}

}  // namespace kda::props
