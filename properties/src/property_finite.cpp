// finite: wherever the fp64 reference is finite, so is every output and every written state. Judged
// apart from the tolerance: a single non-finite state poisons every later token of its slot.
#include <cmath>
#include <rapidcheck.h>

#include "failure_text.hpp"
#include "kda/properties/coverage.hpp"
#include "kda/properties/judged_run.hpp"
#include "kda/properties/property_bodies.hpp"

namespace kda::props {

namespace {

// One line for the dense array of `tensor` when some element is NaN or Inf where the oracle's is
// finite, naming the first such element (in the array's order: by batch row, then token, for o and
// token states); empty when there is none. Elements the call may not write (tokens of no sequence)
// and the states of padding sequences hold no result and are skipped.
std::string non_finite(const Problem& p, std::string_view tensor, const std::vector<double>& got,
                       const std::vector<double>& want, const std::vector<char>& written) {
  std::int64_t count = 0, first = -1;
  for (std::size_t e = 0; e < got.size() && e < want.size(); ++e) {
    if (std::isfinite(got[e]) || !std::isfinite(want[e])) continue;
    const Coordinates at = locate(p, tensor, static_cast<std::int64_t>(e));
    if (at.sequence < 0 || (tensor != "o" && !written[static_cast<std::size_t>(at.sequence)])) continue;
    if (count++ == 0) first = static_cast<std::int64_t>(e);
  }
  if (count == 0) return {};
  const auto e = static_cast<std::size_t>(first);
  return std::string(tensor) + ": " + std::to_string(count) + " of " + std::to_string(got.size()) +
         " elements NaN or Inf, first at " + locate(p, tensor, first).describe() + " (got " +
         detail::format_value(got[e]) + ", reference " + detail::format_value(want[e]) + ")";
}

}  // namespace

void check_finite(CheckContext& context) {
  const CaseSpec spec = *gen_adversarial_case(context.kernel, context.limits);
  const Problem problem = build_case(spec);
  for (const auto& category : categories(spec, problem)) rc::detail::classify(category, {});
  const JudgedRun run = run_judged(context, problem);
  run.require_ran();
  const Problem& p = run.problem;
  const ReferenceOutputs &got = run.kernel, &want = run.oracle;
  std::vector<std::string> found;
  auto judge = [&](std::string_view tensor, const std::vector<double>& g, const std::vector<double>& w) {
    if (std::string line = non_finite(p, tensor, g, w, want.written); !line.empty()) found.push_back(std::move(line));
  };
  judge("o", got.o, want.o);
  if (p.mode == Mode::verify) {
    judge(p.scratch_states ? "scratch_states" : "state_pool", got.token_states, want.token_states);
  } else {
    if (p.final_state || p.state_pool) judge("final_state", got.final_state, want.final_state);
    if (p.chunk_states) judge("chunk_states", got.chunk_states, want.chunk_states);
    if (p.token_states) judge("token_states", got.token_states, want.token_states);
  }
  if (!found.empty())
    RC_FAIL("NaN or Inf where the fp64 reference is finite:" + detail::lines(found) + "\n  problem: " + p.describe());
}

}  // namespace kda::props
