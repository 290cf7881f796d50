// The tolerance group of a case: metric and bound, and for model-based bounds the policy's alpha,
// the model's name and one subgroup per output tensor with the numbers its bound is made of.
#include <algorithm>
#include <array>
#include <stdexcept>

#include "case_codec.hpp"

namespace kda::golden {

double Tolerance::bound_for(std::string_view tensor) const {
  for (const auto& o : outputs)
    if (o.tensor == tensor) return o.bound;
  return bound;
}

namespace detail {

namespace {

// The compared outputs in their order (props::compare's): a verify call's per-token states are judged
// where its form stores them, as "state_pool" (index table) or "scratch_states" (scratch buffer).
constexpr std::array<std::string_view, 6> kOutputs{"o",           "final_state", "chunk_states",
                                                   "token_states", "state_pool", "scratch_states"};

std::string output_list() {
  std::string s;
  for (auto name : kOutputs) s += (s.empty() ? "" : ", ") + std::string(name);
  return s;
}

std::size_t output_rank(std::string_view tensor) {
  return static_cast<std::size_t>(std::find(kOutputs.begin(), kOutputs.end(), tensor) - kOutputs.begin());
}

}  // namespace

void check_tolerance(const Tolerance& t) {
  for (std::size_t i = 0; i < t.outputs.size(); ++i) {
    const std::string& tensor = t.outputs[i].tensor;
    if (output_rank(tensor) == kOutputs.size())
      throw std::invalid_argument("tolerance for " + in_quotes(tensor) + ": not an output tensor (" + output_list() +
                                  ")");
    if (i > 0 && output_rank(t.outputs[i - 1].tensor) >= output_rank(tensor))
      throw std::invalid_argument("tolerance outputs must be listed once each, in the order " + output_list());
  }
}

void write_tolerance(const Out& kase, const Tolerance& t) {
  const Out group = kase.group("tolerance");
  group.text("metric", t.metric);
  group.real("bound", t.bound);
  if (t.alpha) group.real("alpha", *t.alpha);
  if (!t.model.empty()) group.text("model", t.model);
  for (const auto& o : t.outputs) {
    const Out output = group.group(o.tensor);
    output.real("model_error", o.model_error);
    output.real("unit_roundoff", o.unit_roundoff);
    output.real("bound", o.bound);
  }
}

Tolerance read_tolerance(const In& group) {
  Tolerance t;
  t.metric = group.text("metric");
  t.bound = group.real("bound");
  if (group.has_attribute("alpha")) t.alpha = group.real("alpha");
  if (group.has_attribute("model")) t.model = group.text("model");
  for (const auto& name : group.members())
    if (output_rank(name) == kOutputs.size())
      group.fail("holds " + in_quotes(name) + ", which is not an output tensor");
  for (std::string_view tensor : kOutputs) {
    const std::string name(tensor);
    if (!group.has(name)) continue;
    const In output = group.group(name, "output " + in_quotes(name));
    t.outputs.push_back(
        OutputBound{name, output.real("model_error"), output.real("unit_roundoff"), output.real("bound")});
  }
  return t;
}

}  // namespace detail
}  // namespace kda::golden
