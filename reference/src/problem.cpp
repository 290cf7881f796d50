#include "kda/problem.hpp"

#include <cmath>
#include <sstream>

namespace kda {

std::string_view name_of(Mode m) { return m == Mode::prefill ? "prefill" : "decode"; }
std::string_view name_of(StateLayout l) { return l == StateLayout::vk ? "VK" : "KV"; }

double Options::scale_for(std::int64_t K) const {
  return scale ? *scale : 1.0 / std::sqrt(static_cast<double>(K));
}

std::int64_t Problem::total_chunks() const {
  std::int64_t c = 0;
  for (std::int64_t n = 0; n < N; ++n) c += chunks(n);
  return c;
}

Shape Problem::state_head_shape() const {
  return options.state_layout == StateLayout::vk ? Shape{V, K} : Shape{K, V};
}

std::vector<const Tensor*> Problem::inputs() const {
  std::vector<const Tensor*> in{&q, &k, &v, &g, &beta};
  for (const auto* t : {&cu_seqlens, &A_log, &dt_bias, &initial_state, &state_pool, &state_indices})
    if (*t) in.push_back(&**t);
  return in;
}

std::vector<Tensor*> Problem::outputs() {
  std::vector<Tensor*> out{&o};
  for (auto* t : {&state_pool, &final_state, &chunk_states, &token_states})
    if (*t) out.push_back(&**t);
  return out;
}

std::vector<const Tensor*> Problem::outputs() const {
  auto out = const_cast<Problem*>(this)->outputs();
  return {out.begin(), out.end()};
}

std::string Problem::describe() const {
  std::ostringstream s;
  const auto& op = options;
  s << name_of(mode) << " B=" << B << " T=" << T << " N=" << N << " H=" << H << " HV=" << HV << " K=" << K
    << " V=" << V << " layout=" << name_of(op.state_layout) << " chunk=" << op.chunk_size;
  // Index tensors are printed only when they can be read safely: describe() also runs on
  // problems the contract rejects.
  auto integers = [&](const char* name, const std::optional<Tensor>& t) {
    if (!t) return;
    const bool well_formed = t->buffer && t->view.rank() == 1 && t->view.strides.size() == 1 && !is_float(t->dtype());
    const auto extent = well_formed ? t->view.byte_extent() : std::nullopt;
    const bool readable =
        well_formed && (!extent || (extent->begin >= 0 && extent->end <= static_cast<std::int64_t>(t->buffer->size())));
    s << ' ' << name << '=';
    if (!readable) {
      s << "<unreadable>";
      return;
    }
    const auto n = t->shape()[0];
    s << '[';
    for (std::int64_t i = 0; i < n && i < 64; ++i) s << (i ? "," : "") << t->integer_at(i);
    s << (n > 64 ? ",...]" : "]");
  };
  integers("cu_seqlens", cu_seqlens);
  integers("indices", state_indices);
  s << " scale=" << op.scale_for(K) << (op.l2norm_qk ? " l2norm" : "")
    << (op.beta_from_logits ? " beta=logits" : "") << (op.allow_neg_eigval ? " neg_eigval" : "");
  if (op.gate_in_kernel) s << " gate=" << (op.lower_bound ? "lower_bound" : "softplus");
  if (op.lower_bound) s << " lb=" << *op.lower_bound;
  if (op.safe_gate) s << " safe_gate";
  auto tensor = [&](const char* name, const Tensor& t) { s << ' ' << name << '=' << t.view.describe(); };
  auto maybe = [&](const char* name, const std::optional<Tensor>& t) {
    if (t) tensor(name, *t);
  };
  tensor("q", q), tensor("k", k), tensor("v", v), tensor("g", g), tensor("beta", beta);
  maybe("A_log", A_log), maybe("dt_bias", dt_bias), maybe("initial_state", initial_state);
  maybe("state_pool", state_pool), tensor("o", o), maybe("final_state", final_state);
  maybe("chunk_states", chunk_states), maybe("token_states", token_states);
  return s.str();
}

}  // namespace kda
