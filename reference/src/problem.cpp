#include "kda/problem.hpp"

#include <array>
#include <cmath>
#include <sstream>

namespace kda {

std::string_view name_of(Mode m) {
  switch (m) {
    case Mode::prefill: return "prefill";
    case Mode::decode: return "decode";
    case Mode::verify: return "verify";
  }
  return "?";
}
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

std::int64_t Problem::initial_slot(std::int64_t n) const {
  if (num_accepted) return state_indices->integer_at(n, num_accepted->integer_at(n) - 1);
  return state_indices->integer_at(n);
}

std::int64_t Problem::token_slot(std::int64_t n, std::int64_t t) const {
  if (num_accepted) return state_indices->integer_at(n, t);
  return scratch_indices->integer_at(n);
}

namespace {

constexpr TensorField required(std::string_view name, Access a, Tensor Problem::*member) {
  return {name, a, member, nullptr};
}
constexpr TensorField optional(std::string_view name, Access a, std::optional<Tensor> Problem::*member) {
  return {name, a, nullptr, member};
}

using enum Access;
constexpr std::array kFields = {
    optional("cu_seqlens", read, &Problem::cu_seqlens),
    required("q", read, &Problem::q),
    required("k", read, &Problem::k),
    required("v", read, &Problem::v),
    required("g", read, &Problem::g),
    required("beta", read, &Problem::beta),
    optional("A_log", read, &Problem::A_log),
    optional("dt_bias", read, &Problem::dt_bias),
    optional("initial_state", read, &Problem::initial_state),
    optional("state_pool", read_write, &Problem::state_pool),
    optional("state_indices", read, &Problem::state_indices),
    optional("num_accepted", read, &Problem::num_accepted),
    optional("scratch_indices", read, &Problem::scratch_indices),
    required("o", write, &Problem::o),
    optional("final_state", write, &Problem::final_state),
    optional("chunk_states", write, &Problem::chunk_states),
    optional("token_states", write, &Problem::token_states),
    optional("scratch_states", write, &Problem::scratch_states),
};

}  // namespace

const Tensor* TensorField::in(const Problem& p) const {
  if (required) return &(p.*required);
  const auto& t = p.*optional;
  return t ? &*t : nullptr;
}

Tensor* TensorField::in(Problem& p) const {
  if (required) return &(p.*required);
  auto& t = p.*optional;
  return t ? &*t : nullptr;
}

void TensorField::place(Problem& p, Tensor t) const {
  if (required)
    p.*required = std::move(t);
  else
    p.*optional = std::move(t);
}

std::span<const TensorField> tensor_fields() { return kFields; }

const TensorField* find_tensor_field(std::string_view name) {
  for (const auto& f : kFields)
    if (f.name == name) return &f;
  return nullptr;
}

std::vector<std::string_view> metadata_tensors(const Problem& p) {
  std::vector<std::string_view> names;
  for (std::string_view name : {"cu_seqlens", "state_indices", "num_accepted", "scratch_indices"})
    if (find_tensor_field(name)->in(p)) names.push_back(name);
  return names;
}

std::vector<const Tensor*> Problem::inputs() const {
  std::vector<const Tensor*> in;
  for (const auto& f : kFields)
    if (const Tensor* t = f.in(*this); t && f.read()) in.push_back(t);
  return in;
}

std::vector<Tensor*> Problem::outputs() {
  std::vector<Tensor*> out;
  for (const auto& f : kFields)
    if (Tensor* t = f.in(*this); t && f.written()) out.push_back(t);
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
    << " V=" << V;
  if (mode == Mode::verify) s << " L=" << L;
  s << " layout=" << name_of(op.state_layout) << " chunk=" << op.chunk_size;
  if (persistent_metadata) s << " persistent_metadata";
  // Index tensors are printed only when they can be read safely: describe() also runs on
  // problems the contract rejects. A 2-D table prints row by row: [[a,b],[c,d]].
  auto integers = [&](const char* name, const std::optional<Tensor>& t) {
    if (!t) return;
    const int rank = t->view.rank();
    const bool well_formed = t->buffer && (rank == 1 || rank == 2) &&
                             t->view.strides.size() == static_cast<std::size_t>(rank) && !is_float(t->dtype());
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
    for (std::int64_t i = 0; i < n && i < 64; ++i) {
      s << (i ? "," : "");
      if (rank == 1) {
        s << t->integer_at(i);
        continue;
      }
      s << '[';
      for (std::int64_t j = 0; j < t->shape()[1] && j < 16; ++j) s << (j ? "," : "") << t->integer_at(i, j);
      s << (t->shape()[1] > 16 ? ",...]" : "]");
    }
    s << (n > 64 ? ",...]" : "]");
  };
  integers("cu_seqlens", cu_seqlens);
  integers("indices", state_indices);
  integers("accepted", num_accepted);
  integers("scratch_rows", scratch_indices);
  s << " scale=" << op.scale_for(K) << (op.l2norm_qk ? " l2norm" : "")
    << (op.beta_from_logits ? " beta=logits" : "") << (op.allow_neg_eigval ? " neg_eigval" : "");
  if (op.gate_in_kernel) s << " gate=" << (op.lower_bound ? "lower_bound" : "softplus");
  if (op.lower_bound) s << " lb=" << *op.lower_bound;
  if (op.safe_gate) s << " safe_gate";
  for (const auto& f : kFields)
    if (const Tensor* t = f.in(*this); t && f.name != "cu_seqlens" && f.name != "state_indices" &&
                                       f.name != "num_accepted" && f.name != "scratch_indices")
      s << ' ' << f.name << '=' << t->view.describe();
  return s.str();
}

}  // namespace kda
