#include "kda/kernel.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <utility>

namespace kda {

namespace {
template <class T>
bool contains(const std::vector<T>& xs, const T& x) {
  return std::find(xs.begin(), xs.end(), x) != xs.end();
}
}  // namespace

namespace {
constexpr std::pair<Arithmetic, std::string_view> kArithmetics[] = {{Arithmetic::fp32, "fp32"},
                                                                     {Arithmetic::tf32, "tf32"},
                                                                     {Arithmetic::bf16_operands, "bf16-operands"},
                                                                     {Arithmetic::f16_operands, "f16-operands"}};
}  // namespace

std::string_view name_of(Arithmetic a) {
  for (const auto& [value, name] : kArithmetics)
    if (value == a) return name;
  return "?";
}

std::optional<Arithmetic> arithmetic_from_name(std::string_view name) {
  for (const auto& [value, text] : kArithmetics)
    if (text == name) return value;
  return std::nullopt;
}

StateSource state_source_of(const Problem& p) {
  if (p.scratch_states || p.scratch_indices) return StateSource::scratch;
  if (p.num_accepted) return StateSource::table;
  if (p.state_pool) return StateSource::pool;
  return p.initial_state ? StateSource::dense : StateSource::none;
}

std::string Capabilities::unsupported(const Problem& p) const {
  std::ostringstream why;
  auto dims_ok = [&](const std::vector<std::int64_t>& allowed, std::int64_t d) {
    return allowed.empty() ? d <= max_head_dim : contains(allowed, d);
  };
  if (!contains(modes, p.mode)) why << "mode " << name_of(p.mode);
  else if (!contains(input_dtypes, p.q.dtype())) why << "input dtype " << name_of(p.q.dtype());
  else if (!contains(output_dtypes, p.o.dtype())) why << "output dtype " << name_of(p.o.dtype());
  else if (!contains(layouts, p.options.state_layout)) why << "state layout " << name_of(p.options.state_layout);
  else if (!contains(state_sources, state_source_of(p))) why << "this state source";
  else if (!dims_ok(key_head_dims, p.K)) why << "key head dim " << p.K;
  else if (!dims_ok(value_head_dims, p.V)) why << "value head dim " << p.V;
  else if (!contains(chunk_sizes, p.options.chunk_size) && p.mode == Mode::prefill)
    why << "chunk size " << p.options.chunk_size;
  else if (!varlen && p.cu_seqlens) why << "cu_seqlens";
  else if (!gate_in_kernel && p.options.gate_in_kernel) why << "gate in kernel";
  else if (!l2norm_in_kernel && p.options.l2norm_qk) why << "l2norm in kernel";
  else if (!explicit_scale && p.options.scale && *p.options.scale != 1.0 / std::sqrt(static_cast<double>(p.K)))
    why << "a scale other than K^-0.5";
  else if (!beta_from_logits && p.options.beta_from_logits) why << "beta from logits";
  else if (!neg_eigval && p.options.allow_neg_eigval) why << "allow_neg_eigval";
  else if (always_gate_in_kernel && !p.options.gate_in_kernel) why << "a gate computed outside the kernel";
  else if (always_l2norm && !p.options.l2norm_qk) why << "no l2norm in kernel";
  else if (always_beta_from_logits && !p.options.beta_from_logits) why << "beta not from logits";
  else if (!chunk_states && p.chunk_states) why << "chunk states";
  else if (!token_states && p.token_states) why << "token states";
  else {
    for (const Tensor* t : {p.initial_state ? &*p.initial_state : nullptr, p.state_pool ? &*p.state_pool : nullptr,
                            p.final_state ? &*p.final_state : nullptr, p.scratch_states ? &*p.scratch_states : nullptr})
      if (t && !contains(state_dtypes, t->dtype())) return "state dtype " + std::string(name_of(t->dtype()));
    if (!strided_inputs)
      for (const Tensor* t : p.inputs())
        if (!t->view.is_contiguous()) return "strided input " + t->name();
    return {};
  }
  return why.str();
}

}  // namespace kda
