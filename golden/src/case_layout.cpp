#include "case_layout.hpp"

#include <algorithm>
#include <array>
#include <set>
#include <stdexcept>

namespace kda::golden::detail {

namespace {

constexpr TensorSlot required(std::string_view name, bool input, Tensor Problem::*member) {
  return {name, input, member, nullptr};
}
constexpr TensorSlot optional(std::string_view name, bool input, std::optional<Tensor> Problem::*member) {
  return {name, input, nullptr, member};
}

constexpr std::array kSlots = {
    optional("cu_seqlens", true, &Problem::cu_seqlens),
    required("q", true, &Problem::q),
    required("k", true, &Problem::k),
    required("v", true, &Problem::v),
    required("g", true, &Problem::g),
    required("beta", true, &Problem::beta),
    optional("A_log", true, &Problem::A_log),
    optional("dt_bias", true, &Problem::dt_bias),
    optional("initial_state", true, &Problem::initial_state),
    optional("state_pool", true, &Problem::state_pool),
    optional("state_indices", true, &Problem::state_indices),
    required("o", false, &Problem::o),
    optional("final_state", false, &Problem::final_state),
    optional("chunk_states", false, &Problem::chunk_states),
    optional("token_states", false, &Problem::token_states),
};

// A valid HDF5 link name: no '/', not empty, not ".".
std::string link_name(const std::string& name) {
  std::string s = name;
  std::replace(s.begin(), s.end(), '/', '_');
  if (s.empty() || s == ".") s = "buffer" + s;
  return s;
}

}  // namespace

std::span<const TensorSlot> tensor_slots() { return kSlots; }

const TensorSlot* find_slot(std::string_view name) {
  for (const auto& s : kSlots)
    if (s.name == name) return &s;
  return nullptr;
}

const Tensor* tensor_of(const Problem& p, const TensorSlot& slot) {
  if (slot.required) return &(p.*slot.required);
  const auto& t = p.*slot.optional;
  return t ? &*t : nullptr;
}

void place(Problem& p, const TensorSlot& slot, Tensor t) {
  if (slot.required)
    p.*slot.required = std::move(t);
  else
    p.*slot.optional = std::move(t);
}

std::vector<NamedBuffer> name_buffers(const Problem& p) {
  std::vector<NamedBuffer> buffers;
  std::set<std::string> taken;
  for (const auto& slot : kSlots) {
    const Tensor* t = tensor_of(p, slot);
    if (!t) continue;
    const std::string tensor(slot.name);
    if (!t->buffer) throw std::invalid_argument("tensor '" + tensor + "' has no buffer");
    if (size_of(t->dtype()) == 0) throw std::invalid_argument("tensor '" + tensor + "' has an unknown dtype");
    const auto at =
        std::find_if(buffers.begin(), buffers.end(), [&](const NamedBuffer& b) { return b.buffer == t->buffer.get(); });
    if (at != buffers.end()) {
      if (at->dtype != t->dtype())
        throw std::invalid_argument("buffer '" + at->name + "' is viewed as " + std::string(name_of(at->dtype)) +
                                    " by '" + std::string(at->first_tensor) + "' and as " +
                                    std::string(name_of(t->dtype())) + " by '" + tensor +
                                    "'; the schema stores one dtype per buffer");
      at->input = at->input || slot.input;
      continue;
    }
    if (t->buffer->size() % size_of(t->dtype()) != 0)
      throw std::invalid_argument("buffer '" + t->name() + "' of " + std::to_string(t->buffer->size()) +
                                  " bytes is not a whole number of " + std::string(name_of(t->dtype())) +
                                  " elements (viewed by '" + tensor + "')");
    std::string name = link_name(t->name());
    for (int n = 2; taken.count(name); ++n) name = link_name(t->name()) + "~" + std::to_string(n);
    taken.insert(name);
    buffers.push_back({t->buffer.get(), name, t->dtype(), slot.input, slot.name});
  }
  return buffers;
}

const NamedBuffer& buffer_entry(const std::vector<NamedBuffer>& buffers, const GuardedBuffer* buffer) {
  return *std::find_if(buffers.begin(), buffers.end(), [&](const NamedBuffer& b) { return b.buffer == buffer; });
}

}  // namespace kda::golden::detail
