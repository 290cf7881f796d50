#include "invariance_support.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "failure_text.hpp"
#include "kda/metrics.hpp"
#include "kda/properties/coverage.hpp"
#include "list_helpers.hpp"

namespace kda::props {

namespace {

using i64 = std::int64_t;

std::size_t count(i64 n) { return static_cast<std::size_t>(n); }

std::string format_ratio(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2e", x);
  return text;
}

i64 first_chunk(const Problem& p, i64 n) {
  i64 c = 0;
  for (i64 m = 0; m < n; ++m) c += p.chunks(m);
  return c;
}

void copy_block(const std::vector<double>& from, i64 from_block, std::vector<double>& to, i64 to_block, i64 size) {
  std::copy_n(from.begin() + from_block * size, size, to.begin() + to_block * size);
}

// Whether each leading row of a state tensor (a sequence, a chunk or a [B,T] token) belongs to a
// sequence whose states were written (not a padding row).
std::vector<char> written_leads(const Problem& p, std::string_view tensor, const std::vector<char>& written) {
  std::vector<char> leads;
  if (tensor == "final_state") {
    leads.assign(written.begin(), written.end());
  } else if (tensor == "chunk_states") {
    for (i64 n = 0; n < p.N; ++n) leads.insert(leads.end(), count(p.chunks(n)), written[count(n)]);
  } else {  // token_states
    leads.assign(count(p.B * p.T), 1);
    for (i64 n = 0; n < p.N; ++n)
      for (i64 t = 0; t < p.length(n); ++t) leads[count(p.row(n) * p.T + p.first(n) + t)] = written[count(n)];
  }
  return leads;
}

// got against want over the leads marked in `compared` (every element when it is empty).
TensorDifference measure(std::string tensor, DType dtype, const std::vector<double>& got,
                         const std::vector<double>& want, const std::vector<char>& compared) {
  if (got.size() != want.size() || (!compared.empty() && want.size() % compared.size() != 0))
    throw std::invalid_argument("differences: the " + tensor + " arrays do not fit the problem");
  TensorDifference d{std::move(tensor), dtype};
  const std::size_t per_lead = compared.empty() ? 1 : want.size() / compared.size();
  std::vector<double> finite_got, finite_want;
  double largest = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (!compared.empty() && !compared[i / per_lead]) continue;
    const double g = got[i], w = want[i];
    if (!std::isfinite(g) || !std::isfinite(w)) {
      const bool same = g == w || (std::isnan(g) && std::isnan(w));
      if (!same && !d.non_finite) d.non_finite = true, d.worst = static_cast<i64>(i), d.got = g, d.want = w;
      continue;
    }
    finite_got.push_back(g), finite_want.push_back(w);
    if (!d.non_finite && std::abs(g - w) > largest)
      largest = std::abs(g - w), d.worst = static_cast<i64>(i), d.got = g, d.want = w;
  }
  d.rel_rms = rel_rms(finite_got, finite_want);
  return d;
}

DType state_output_dtype(const Problem& p) { return p.final_state ? p.final_state->dtype() : p.state_pool->dtype(); }

}  // namespace

std::string unfit(const Kernel& kernel, const Problem& problem) {
  if (auto why = kernel.capabilities().unsupported(problem); !why.empty()) return "the kernel does not support " + why;
  if (const auto violations = validate(problem, kernel.profile()); !violations.empty())
    return "the kernel's profile rejects it: " + violations.front().message;
  return {};
}

bool supports(const Kernel& kernel, Mode mode) { return detail::has(kernel.capabilities().modes, mode); }
bool supports(const Kernel& kernel, StateSource source) {
  return detail::has(kernel.capabilities().state_sources, source);
}

DrawnCase draw_case(CheckContext& context, const detail::Needs& needs, const std::function<void(CaseSpec&)>& adjust) {
  const detail::Allowed allowed = detail::allowed_for(context.kernel, context.limits);
  // The property's KernelNeeds let it run here: a case it cannot draw is a failure, not a skip.
  if (!detail::feasible(allowed, needs)) RC_FAIL("the kernel takes no case with what this property needs");
  DrawnCase drawn{*rc::gen::map(detail::gen_case(allowed, needs),
                                [adjust](CaseSpec spec) {  // by value: shrinking replays it later
                                  if (adjust) adjust(spec);
                                  return spec;
                                }),
                  {}};
  drawn.problem = build_case(drawn.spec);
  for (const auto& category : categories(drawn.spec, drawn.problem)) rc::detail::classify(category, {});
  return drawn;
}

void run_or_fail(Kernel& kernel, Problem& problem, const std::string& role, const Problem& base) {
  const RunOutcome outcome = kernel.run(problem);
  if (outcome.status == RunOutcome::Status::ok) return;
  RC_FAIL(kernel.name() + (outcome.status == RunOutcome::Status::rejected ? " rejected " : " failed on ") + role +
          ", a valid problem it supports: " + outcome.message + detail::violations_text(outcome.violations) +
          "\n  call: " + problem.describe() + "\n  problem: " + base.describe());
}

ReferenceOutputs zero_outputs(const Problem& p) {
  const i64 head = p.HV * p.K * p.V;
  ReferenceOutputs out;
  out.o.assign(count(p.B * p.T * p.HV * p.V), 0.0);
  out.final_state.assign(count(p.N * head), 0.0);
  out.written.assign(count(p.N), 1);
  if (p.chunk_states) out.chunk_states.assign(count(p.total_chunks() * head), 0.0);
  if (p.token_states) out.token_states.assign(count(p.B * p.T * head), 0.0);
  return out;
}

void place_part(const Problem& whole, i64 n, i64 offset, const Problem& part, const ReferenceOutputs& part_out,
                ReferenceOutputs& into) {
  const i64 row_o = whole.HV * whole.V, head = whole.HV * whole.K * whole.V;
  const i64 from = part.row(0) * part.T + part.first(0), to = whole.row(n) * whole.T + whole.first(n) + offset;
  for (i64 t = 0; t < part.length(0); ++t) {
    copy_block(part_out.o, from + t, into.o, to + t, row_o);
    if (!into.token_states.empty() && !part_out.token_states.empty())
      copy_block(part_out.token_states, from + t, into.token_states, to + t, head);
  }
  copy_block(part_out.final_state, 0, into.final_state, n, head);
  into.written[count(n)] = part_out.written[0];
  if (into.chunk_states.empty() || part_out.chunk_states.empty()) return;
  const i64 C = whole.options.chunk_size;
  for (i64 c = 0; c < part.chunks(0); ++c)
    if (const i64 start = offset + c * C; start % C == 0)
      copy_block(part_out.chunk_states, c, into.chunk_states, first_chunk(whole, n) + start / C, head);
}

void transpose_states(ReferenceOutputs& out, const Problem& layout) {
  const Shape head = layout.state_head_shape();
  const i64 rows = head[0], cols = head[1];
  std::vector<double> block(count(rows * cols));
  for (auto* states : {&out.final_state, &out.chunk_states, &out.token_states})
    for (std::size_t at = 0; at + block.size() <= states->size(); at += block.size()) {
      std::copy_n(states->begin() + static_cast<std::ptrdiff_t>(at), block.size(), block.begin());
      for (i64 r = 0; r < rows; ++r)
        for (i64 c = 0; c < cols; ++c) (*states)[at + count(c * rows + r)] = block[count(r * cols + c)];
    }
}

std::vector<TensorDifference> differences(const Problem& p, const ReferenceOutputs& got, const ReferenceOutputs& want) {
  std::vector<TensorDifference> diffs{measure("o", p.o.dtype(), got.o, want.o, {})};
  if (p.final_state || p.state_pool)
    diffs.push_back(measure("final_state", state_output_dtype(p), got.final_state, want.final_state,
                            written_leads(p, "final_state", want.written)));
  if (p.chunk_states && !got.chunk_states.empty() && !want.chunk_states.empty())
    diffs.push_back(measure("chunk_states", p.chunk_states->dtype(), got.chunk_states, want.chunk_states,
                            written_leads(p, "chunk_states", want.written)));
  if (p.token_states && !got.token_states.empty() && !want.token_states.empty())
    diffs.push_back(measure("token_states", p.token_states->dtype(), got.token_states, want.token_states,
                            written_leads(p, "token_states", want.written)));
  return diffs;
}

void require_agreement(const std::vector<TensorDifference>& diffs,
                       const std::function<double(const TensorDifference&)>& bound, const Problem& layout,
                       const Sides& sides, const Problem& base) {
  for (const auto& d : diffs) {
    const double limit = bound(d);
    if (!d.non_finite && d.rel_rms <= limit) continue;
    const std::string how = d.non_finite ? " is NaN or Inf in one run only"
                                         : " differs by rel-RMS " + format_ratio(d.rel_rms) + " > bound " +
                                               format_ratio(limit);
    std::string message = sides.what + ": " + d.tensor + how + " between " + sides.got + " and " + sides.want;
    if (d.worst >= 0)
      message += "; worst at " + locate(layout, d.tensor, d.worst).describe() + " (" + sides.got + " " +
                 detail::format_value(d.got) + ", " + sides.want + " " + detail::format_value(d.want) + ")";
    RC_FAIL(message + "\n  problem: " + base.describe());
  }
}

double same_path_bound(const TolerancePolicy& /*policy*/, const TensorDifference& d) { return unit_roundoff(d.dtype); }

}  // namespace kda::props
