// Coordinates: a dense reference-layout index mapped back to sequences, tokens, chunks and pool slots.
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "kda/properties/comparison.hpp"

namespace kda::props {

namespace {

// The sequence holding token t of batch row b, and t's position in it; sequence -1 (position t)
// when no sequence covers it. Zero-length sequences cover nothing.
std::pair<std::int64_t, std::int64_t> sequence_of(const Problem& p, std::int64_t b, std::int64_t t) {
  if (!p.cu_seqlens) return {b, t};
  for (std::int64_t n = 0; n < p.N; ++n)
    if (p.first(n) <= t && t < p.first(n) + p.length(n)) return {n, t - p.first(n)};
  return {-1, t};
}

// Splits a dense index into row-major coordinates of `shape` (last dimension first).
Shape unravel(std::int64_t element, const Shape& shape) {
  Shape idx(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    idx[d] = element % shape[d];
    element /= shape[d];
  }
  return idx;
}

}  // namespace

Coordinates locate(const Problem& p, std::string_view tensor, std::int64_t element) {
  Coordinates c;
  c.tensor = std::string(tensor);
  if (tensor == "o") {
    const Shape i = unravel(element, {p.B, p.T, p.HV, p.V});
    std::tie(c.sequence, c.token) = sequence_of(p, i[0], i[1]);
    c.head = i[2], c.column = i[3];
    return c;
  }
  const Shape head = p.state_head_shape();
  c.layout = p.options.state_layout;
  const std::int64_t per_lead = p.HV * p.K * p.V, lead = element / per_lead;  // lead: sequence, chunk or token
  const Shape i = unravel(element % per_lead, {p.HV, head[0], head[1]});
  c.head = i[0], c.row = i[1], c.column = i[2];
  if (tensor == "final_state") {
    c.sequence = lead;
    if (p.state_pool) c.slot = p.state_indices->integer_at(lead);
  } else if (tensor == "chunk_states") {
    c.chunk = lead;
    for (std::int64_t n = 0, first = 0; n < p.N; first += p.chunks(n), ++n)
      if (lead < first + p.chunks(n)) {
        c.sequence = n, c.token = (lead - first) * p.options.chunk_size;
        break;
      }
  } else if (tensor == "token_states") {
    std::tie(c.sequence, c.token) = sequence_of(p, lead / p.T, lead % p.T);
  } else if (tensor == "state_pool" || tensor == "scratch_states") {  // a verify call's state after a token
    std::tie(c.sequence, c.token) = sequence_of(p, lead / p.T, lead % p.T);
    if (c.sequence >= 0) c.slot = p.token_slot(c.sequence, c.token);
    c.request = true;
  } else {
    throw std::invalid_argument("locate: no output tensor named '" + c.tensor + "'");
  }
  return c;
}

std::string Coordinates::describe() const {
  std::ostringstream s;
  if (request) {  // "state_pool slot 7 (request 1 token 2)", "scratch_states[3, 2] (request 1 token 2)"
    s << tensor;
    if (tensor == "scratch_states") s << '[' << slot << ", " << token << ']';
    else s << " slot " << slot;
    s << " (request " << sequence << " token " << token << ") head " << head;
    const bool vk = layout == StateLayout::vk;
    s << " row " << row << " column " << column << " of " << (vk ? "[V,K]" : "[K,V]");
    return s.str();
  }
  if (chunk >= 0) s << "chunk " << chunk << " (sequence " << sequence << ", from token " << token << ")";
  else if (sequence < 0 && token >= 0) s << "token " << token << " (outside every sequence)";
  else if (sequence >= 0) s << "sequence " << sequence;
  if (slot >= 0) s << " (pool slot " << slot << ")";
  if (chunk < 0 && sequence >= 0 && token >= 0) s << " token " << token;
  s << " head " << head;
  if (!layout) {
    s << " channel " << column;
    return s.str();
  }
  const bool vk = *layout == StateLayout::vk;
  s << " row " << row << " column " << column << " of " << (vk ? "[V,K] (v " : "[K,V] (k ") << row
    << (vk ? ", k " : ", v ") << column << ")";
  return s.str();
}

}  // namespace kda::props
