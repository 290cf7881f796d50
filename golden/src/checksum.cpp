#include "checksum.hpp"

#include <algorithm>
#include <bit>
#include <string_view>

namespace kda::golden::detail {

// Payloads are hashed and stored as they lie in memory; the schema's byte order is little-endian.
static_assert(std::endian::native == std::endian::little, "kda::golden assumes a little-endian host");

namespace {

class Fnv1a {
 public:
  void bytes(const std::byte* p, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
      hash_ ^= static_cast<std::uint8_t>(p[i]);
      hash_ *= 0x100000001b3ull;
    }
  }
  void text(std::string_view s) {  // the UTF-8 bytes, then a NUL
    bytes(reinterpret_cast<const std::byte*>(s.data()), s.size());
    const std::byte nul{0};
    bytes(&nul, 1);
  }
  void integer(std::int64_t x) {  // 8 bytes, little-endian
    std::byte le[8];
    for (int i = 0; i < 8; ++i) le[i] = static_cast<std::byte>((static_cast<std::uint64_t>(x) >> (8 * i)) & 0xffu);
    bytes(le, 8);
  }
  std::uint64_t value() const { return hash_; }

 private:
  std::uint64_t hash_ = 0xcbf29ce484222325ull;
};

}  // namespace

std::uint64_t input_checksum(const Problem& p, const std::vector<NamedBuffer>& buffers) {
  Fnv1a h;
  for (const auto& field : tensor_fields()) {
    const Tensor* t = field.in(p);
    if (!t) continue;
    const View& v = t->view;
    h.text(field.name);
    h.text(buffer_entry(buffers, t->buffer.get()).name);
    h.text(name_of(v.dtype));
    h.integer(static_cast<std::int64_t>(v.shape.size()));
    for (auto n : v.shape) h.integer(n);
    for (auto s : v.strides) h.integer(s);
    h.integer(v.offset);
  }
  std::vector<const NamedBuffer*> inputs;
  for (const auto& b : buffers)
    if (b.input) inputs.push_back(&b);
  std::sort(inputs.begin(), inputs.end(), [](auto* a, auto* b) { return a->name < b->name; });
  for (const NamedBuffer* b : inputs) {
    h.text(b->name);
    h.integer(static_cast<std::int64_t>(b->buffer->size()));
    h.bytes(b->buffer->data(), b->buffer->size());
  }
  return h.value();
}

}  // namespace kda::golden::detail
