#include "case_layout.hpp"

#include <algorithm>
#include <set>
#include <stdexcept>

namespace kda::golden::detail {

namespace {

// A valid HDF5 link name: no '/', not empty, not ".".
std::string link_name(const std::string& name) {
  std::string s = name;
  std::replace(s.begin(), s.end(), '/', '_');
  if (s.empty() || s == ".") s = "buffer" + s;
  return s;
}

}  // namespace

std::vector<NamedBuffer> name_buffers(const Problem& p) {
  std::vector<NamedBuffer> buffers;
  std::set<std::string> taken;
  for (const auto& field : tensor_fields()) {
    const Tensor* t = field.in(p);
    if (!t) continue;
    const std::string tensor(field.name);
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
      at->input = at->input || field.read();
      continue;
    }
    if (t->buffer->size() % size_of(t->dtype()) != 0)
      throw std::invalid_argument("buffer '" + t->name() + "' of " + std::to_string(t->buffer->size()) +
                                  " bytes is not a whole number of " + std::string(name_of(t->dtype())) +
                                  " elements (viewed by '" + tensor + "')");
    std::string name = link_name(t->name());
    for (int n = 2; taken.count(name); ++n) name = link_name(t->name()) + "~" + std::to_string(n);
    taken.insert(name);
    buffers.push_back({t->buffer.get(), name, t->dtype(), field.read(), field.name});
  }
  return buffers;
}

const NamedBuffer& buffer_entry(const std::vector<NamedBuffer>& buffers, const GuardedBuffer* buffer) {
  return *std::find_if(buffers.begin(), buffers.end(), [&](const NamedBuffer& b) { return b.buffer == buffer; });
}

}  // namespace kda::golden::detail
