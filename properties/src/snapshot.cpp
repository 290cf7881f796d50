// Snapshot: block copies of a problem's buffers (a block repeating one pattern held as the pattern), the
// writable region as byte ranges, and the changed
// bytes outside it, each attributed to what it belongs to (elements, a pool slot, a gap, a band).
// Rejected calls are snapshotted too, so nothing here may trust the problem: every read is bounds
// checked and a view with more elements than its buffer has bytes is never walked.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <map>
#include <stdexcept>

#include "kda/properties/comparison.hpp"

namespace kda::props {

namespace {

constexpr auto kGuard = static_cast<std::int64_t>(GuardedBuffer::kGuardBytes);

struct Named {
  std::string_view name;
  const Tensor* tensor;
  bool input;
};

// Every tensor present, in tensor_fields()' order: the order that identifies buffers across deep copies.
std::vector<Named> named_tensors(const Problem& p) {
  std::vector<Named> all;
  for (const TensorField& f : tensor_fields())
    if (const Tensor* t = f.in(p); t && t->buffer) all.push_back({f.name, t, f.access == Access::read});
  return all;
}

std::vector<GuardedBuffer*> distinct_buffers(const Problem& p) {
  std::vector<GuardedBuffer*> out;
  for (const Named& t : named_tensors(p))
    if (std::find(out.begin(), out.end(), t.tensor->buffer.get()) == out.end()) out.push_back(t.tensor->buffer.get());
  return out;
}

// A view is walked element by element only when it has at most one element per payload byte: any
// other view overlaps itself or leaves its buffer, and the contract rejects it.
bool walkable(const Tensor& t) {
  const std::int64_t n = t.view.numel();
  return t.buffer && n > 0 && n <= static_cast<std::int64_t>(t.buffer->size());
}

// Element `element` of an index tensor: an integer, or a floating-point value that is one (a call
// breaking cu_seqlens_dtype still says which tokens its sequences cover).
std::optional<std::int64_t> integer_element(const Tensor& t, std::int64_t element) {
  if (!is_float(t.view.dtype)) return load_integer(t.buffer->data(), t.view.dtype, element);
  const double x = load_element(t.buffer->data(), t.view.dtype, element);
  if (!(std::abs(x) < 9.0e15) || x != std::trunc(x)) return std::nullopt;
  return static_cast<std::int64_t>(x);
}

// Entry i of a 1-D index tensor (cu_seqlens, state_indices, scratch_indices); nullopt where it cannot be
// read safely. A tensor of another rank (a call breaking its shape rule, [N, 1] say) is read as its
// elements in row-major order, as a kernel that takes its data pointer reads it.
std::optional<std::int64_t> entry(const Tensor& t, std::int64_t i) {
  const View& v = t.view;
  if (!t.buffer || v.rank() < 1 || i < 0 || i >= v.numel()) return std::nullopt;
  std::int64_t element = v.offset;
  for (int d = static_cast<int>(v.rank()) - 1; d >= 0; --d) {
    element += i % v.size(d) * v.stride(d);
    i /= v.size(d);
  }
  const std::int64_t es = static_cast<std::int64_t>(size_of(v.dtype));
  if (element < 0 || (element + 1) * es > static_cast<std::int64_t>(t.buffer->size())) return std::nullopt;
  return integer_element(t, element);
}

// Entry [i, j] of a 2-D integer tensor (a verify index table); nullopt where it cannot be read safely.
std::optional<std::int64_t> entry(const Tensor& t, std::int64_t i, std::int64_t j) {
  const View& v = t.view;
  if (!t.buffer || v.rank() != 2 || i < 0 || i >= v.size(0) || j < 0 || j >= v.size(1)) return std::nullopt;
  const std::int64_t element = v.offset + i * v.stride(0) + j * v.stride(1), es = static_cast<std::int64_t>(size_of(v.dtype));
  if (element < 0 || (element + 1) * es > static_cast<std::int64_t>(t.buffer->size())) return std::nullopt;
  return integer_element(t, element);
}

// Indices [begin, end) of dimension dim, clamped to the view's extent there.
View slice(View v, int dim, std::int64_t begin, std::int64_t end) {
  const auto d = static_cast<std::size_t>(dim);
  begin = std::clamp<std::int64_t>(begin, 0, v.shape[d]), end = std::clamp<std::int64_t>(end, begin, v.shape[d]);
  v.offset += begin * v.strides[d];
  v.shape[d] = end - begin;
  return v;
}

// Calls f(first byte, byte count) for every element of v; a contiguous last dimension is one call per row.
template <class F>
void for_each_element_run(const View& v, F&& f) {
  if (v.numel() <= 0) return;
  const Shape rows(v.shape.begin(), v.shape.end() - 1);
  const std::int64_t n = v.shape.back(), stride = v.strides.back(), es = static_cast<std::int64_t>(size_of(v.dtype));
  for_each_index(rows, [&](std::span<const std::int64_t> row) {
    const std::int64_t first = v.element_at(row);
    if (stride == 1) return f(first * es, n * es);
    for (std::int64_t i = 0; i < n; ++i) f((first + i * stride) * es, es);
  });
}

// Sets bytes[first, first + count) to value, clipped to the payload.
template <class T>
void fill(std::vector<T>& bytes, std::int64_t first, std::int64_t count, T value) {
  const auto size = static_cast<std::int64_t>(bytes.size());
  const std::int64_t lo = std::clamp<std::int64_t>(first, 0, size), hi = std::clamp<std::int64_t>(first + count, lo, size);
  std::fill(bytes.begin() + lo, bytes.begin() + hi, value);
}

using ByteRanges = std::vector<std::pair<std::int64_t, std::int64_t>>;

// Adds v's element bytes to the ranges (unsorted until normalize).
void mark(ByteRanges& ranges, const View& v) {
  for_each_element_run(v, [&](std::int64_t first, std::int64_t count) {
    if (!ranges.empty() && ranges.back().second == first)
      ranges.back().second += count;
    else
      ranges.emplace_back(first, first + count);
  });
}

// Sorted, merged, clipped to [0, size).
void normalize(ByteRanges& ranges, std::int64_t size) {
  for (auto& [b, e] : ranges) b = std::clamp<std::int64_t>(b, 0, size), e = std::clamp<std::int64_t>(e, b, size);
  std::sort(ranges.begin(), ranges.end());
  ByteRanges merged;
  for (const auto& r : ranges) {
    if (r.first == r.second) continue;
    if (!merged.empty() && r.first <= merged.back().second)
      merged.back().second = std::max(merged.back().second, r.second);
    else
      merged.push_back(r);
  }
  ranges = std::move(merged);
}

// Whether every payload byte of [begin, end) lies in the ranges (end > begin).
bool covered(const ByteRanges& ranges, std::int64_t begin, std::int64_t end) {
  auto it = std::upper_bound(ranges.begin(), ranges.end(), std::pair{begin, std::numeric_limits<std::int64_t>::max()});
  return it != ranges.begin() && std::prev(it)->second >= end;
}

// Snapshot blocks: large enough that the per-block bookkeeping is negligible, small enough that the
// poisoned gaps between live data are held as patterns.
constexpr std::int64_t kSnapBlock = 1 << 14;
static_assert(kGuard % 64 == 0 && kSnapBlock % 64 == 0);

// Whether `n` bytes at p repeat their first 8 bytes (n > 8); the pattern in *pattern.
bool repeats(const std::byte* p, std::int64_t n, std::uint64_t* pattern) {
  if (n < 16) return false;
  std::memcpy(pattern, p, 8);
  return std::memcmp(p, p + 8, static_cast<std::size_t>(n - 8)) == 0;
}

// The tokens [begin, end) of batch row `row` that sequence n covers; nullopt where cu_seqlens is unreadable.
struct Tokens {
  std::int64_t row, begin, end;
};
std::optional<Tokens> tokens_of(const Problem& p, std::int64_t n) {
  if (!p.cu_seqlens) return Tokens{n, 0, p.T};
  const auto begin = entry(*p.cu_seqlens, n), end = entry(*p.cu_seqlens, n + 1);
  if (!begin || !end) return std::nullopt;
  return Tokens{0, *begin, *end};
}

bool is_pool(const Problem& p, const Tensor* t) { return p.state_pool && t == &*p.state_pool && t->view.rank() >= 1; }

}  // namespace

Snapshot::Snapshot(const Problem& p) {
  const auto buffers = distinct_buffers(p);
  for (GuardedBuffer* b : buffers) {
    const std::byte* first = b->band_before();
    Copy c;
    c.name = b->name();
    c.payload = static_cast<std::int64_t>(b->size()), c.total = c.payload + 2 * kGuard;
    for (std::int64_t at = 0; at < c.total; at += kSnapBlock) {
      const std::int64_t n = std::min(kSnapBlock, c.total - at);
      std::uint64_t pattern = 0;
      if (repeats(first + at, n, &pattern)) {
        c.stored_at.push_back(-1), c.pattern.push_back(pattern);
      } else {
        c.stored_at.push_back(static_cast<std::int64_t>(c.stored.size())), c.pattern.push_back(0);
        c.stored.insert(c.stored.end(), first + at, first + at + n);
      }
    }
    copies_.push_back(std::move(c));
  }
  // Built as ranges in any order, normalized once every mark is in.
  struct Normalize {
    std::vector<Copy>& copies;
    ~Normalize() {
      for (Copy& c : copies) normalize(c.writable, c.payload);
    }
  } normalize_at_exit{copies_};
  auto mask_of = [&](const Tensor& t) -> ByteRanges& {
    const auto at = std::find(buffers.begin(), buffers.end(), t.buffer.get()) - buffers.begin();
    return copies_[static_cast<std::size_t>(at)].writable;
  };
  if (walkable(p.o) && p.o.view.rank() >= 2)  // o: the rows of every sequence's tokens
    for (std::int64_t n = 0; n < p.N; ++n)
      if (const auto t = tokens_of(p, n)) mark(mask_of(p.o), slice(slice(p.o.view, 0, t->row, t->row + 1), 1, t->begin, t->end));
  for (const auto* t : {&p.final_state, &p.chunk_states, &p.token_states})
    if (*t && walkable(**t)) mark(mask_of(**t), (*t)->view);
  if (!p.state_pool || !p.state_indices || !is_pool(p, &*p.state_pool) || !walkable(*p.state_pool)) return;
  // The pool: the slots active indices name.
  const std::int64_t slots = std::max<std::int64_t>(p.state_pool->view.size(0), 0);
  slot_sequence_.assign(static_cast<std::size_t>(slots), -1);
  if (p.mode == Mode::verify) {
    const bool scratch = p.scratch_states && walkable(*p.scratch_states) && p.scratch_states->view.rank() == 5;
    mark_verify(p, mask_of(*p.state_pool), scratch ? &mask_of(*p.scratch_states) : nullptr);
    return;
  }
  for (std::int64_t n = 0; n < p.N; ++n) {
    const std::int64_t slot = entry(*p.state_indices, n).value_or(-2);
    has_padding_rows_ = has_padding_rows_ || slot == -1;
    if (slot < 0 || slot >= slots) continue;
    slot_sequence_[static_cast<std::size_t>(slot)] = n;
    mark(mask_of(*p.state_pool), slice(p.state_pool->view, 0, slot, slot + 1));
  }
}

// slot_token_ of a slot a scratch-form request reads its committed state from.
constexpr std::int64_t kCommitted = -2;

// A verify call, read defensively (it may be rejected): the pool slots each request's table entries name
// at its tokens, or its scratch row's steps; nothing of a padding request (initial slot -1) or one whose
// entries cannot be read. The scratch form's pool is read only: its named slots are labelled, not marked.
void Snapshot::mark_verify(const Problem& p, ByteRanges& pool_mask, ByteRanges* scratch_mask) {
  const std::int64_t slots = static_cast<std::int64_t>(slot_sequence_.size());
  slot_token_.assign(slot_sequence_.size(), -1);
  const bool table = p.num_accepted.has_value();
  for (std::int64_t n = 0; n < p.N; ++n) {
    const auto tokens = tokens_of(p, n);
    if (!tokens) continue;
    std::optional<std::int64_t> initial;
    if (!table) {
      initial = entry(*p.state_indices, n);
      if (initial && *initial >= 0 && *initial < slots)
        slot_sequence_[static_cast<std::size_t>(*initial)] = n, slot_token_[static_cast<std::size_t>(*initial)] = kCommitted;
    } else if (const auto a = entry(*p.num_accepted, n); a && *a >= 1 && *a <= p.L) {
      initial = entry(*p.state_indices, n, *a - 1);
    }
    has_padding_rows_ = has_padding_rows_ || initial == -1;
    if (!initial || *initial < 0) continue;
    for (std::int64_t t = 0; t < tokens->end - tokens->begin; ++t) {
      if (!table) {
        const auto row = p.scratch_indices ? entry(*p.scratch_indices, n) : std::nullopt;
        if (scratch_mask && row && *row >= 0 && *row < p.scratch_states->view.size(0) && t < p.scratch_states->view.size(1))
          mark(*scratch_mask, slice(slice(p.scratch_states->view, 0, *row, *row + 1), 1, t, t + 1));
        continue;
      }
      const auto slot = entry(*p.state_indices, n, t);
      if (!slot || *slot < 0 || *slot >= slots) continue;
      slot_sequence_[static_cast<std::size_t>(*slot)] = n, slot_token_[static_cast<std::size_t>(*slot)] = t;
      mark(pool_mask, slice(p.state_pool->view, 0, *slot, *slot + 1));
    }
  }
}

namespace {

// What each payload byte of a window [begin, begin + of_byte.size()) of one buffer belongs to, as an
// index into labels (-1: no tensor view). A large buffer (a stress pool of GiB) is named window by
// window, never with a map of its whole payload.
struct Owners {
  std::int64_t begin = 0;
  std::vector<std::int32_t> of_byte;
  std::vector<std::string> labels;
  std::int64_t end() const { return begin + static_cast<std::int64_t>(of_byte.size()); }
  std::int32_t add(std::string label) {
    labels.push_back(std::move(label));
    return static_cast<std::int32_t>(labels.size() - 1);
  }
  // Payload bytes [first, first + count) clipped to the window.
  void fill_bytes(std::int64_t first, std::int64_t count, std::int32_t label) { fill(of_byte, first - begin, count, label); }
  std::string label_of(std::int64_t byte) const {
    const std::int32_t o = of_byte[static_cast<std::size_t>(byte - begin)];
    return o >= 0 ? labels[static_cast<std::size_t>(o)] : "no tensor view";
  }
};
constexpr std::int64_t kOwnerWindow = std::int64_t{64} << 20;  // bytes

std::string quoted(const Named& t) { return std::string(t.input ? "input '" : "'") + std::string(t.name) + "'"; }

// Unowned bytes inside a view's extent are a gap between its elements; in a pool, the padding after a slot.
void label_gaps(Owners& owners, const Named& t, bool pool) {
  const View& v = t.tensor->view;
  const auto extent = v.byte_extent();
  if (!extent) return;
  const std::int64_t slot_bytes = pool ? v.stride(0) * static_cast<std::int64_t>(size_of(v.dtype)) : 0;
  std::map<std::int64_t, std::int32_t> after_slot;  // pool: slot -> label of the padding after it
  const std::int32_t gap = owners.add(walkable(*t.tensor)
                                          ? "a gap between elements of " + quoted(t)
                                          : "the extent of " + quoted(t) + " (more elements than its buffer has bytes)");
  for (std::int64_t b = std::max(extent->begin, owners.begin); b < std::min(extent->end, owners.end()); ++b) {
    auto& owner = owners.of_byte[static_cast<std::size_t>(b - owners.begin)];
    if (owner != -1) continue;
    owner = gap;
    if (slot_bytes <= 0) continue;
    const std::int64_t slot = (b - v.byte_offset()) / slot_bytes;
    auto [it, fresh] = after_slot.try_emplace(slot, 0);
    if (fresh) it->second = owners.add("the padding between pool slots after slot " + std::to_string(slot));
    owner = it->second;
  }
}

std::string slot_label(std::int64_t slot, std::int64_t sequence, std::int64_t token, bool python_minus_one) {
  std::string s = "slot " + std::to_string(slot);
  if (sequence >= 0 && token == kCommitted)
    return s + ", request " + std::to_string(sequence) + "'s committed state (read only in a scratch-form verify)";
  if (sequence >= 0 && token >= 0)
    return s + ", where request " + std::to_string(sequence) + " stores the state after its token " + std::to_string(token);
  if (sequence >= 0) return s + ", which sequence " + std::to_string(sequence) + "'s index names";
  s += ", which no active index names";
  return python_minus_one ? s + " (pool[-1]: where a -1 index lands as a Python index)" : s;
}

// Each slot's elements by slot, and the leading gap by the slot stride: slot -1, -2, ... before slot 0,
// where unchecked C index math sends a negative index (a -1 padding index, or an index or accepted
// count nobody checked).
void label_slots(Owners& owners, const View& pool, const std::vector<std::int64_t>& slot_sequence,
                 const std::vector<std::int64_t>& slot_token, bool padding_rows) {
  const std::int64_t slots = pool.size(0);
  const std::int64_t slot_bytes = pool.stride(0) * static_cast<std::int64_t>(size_of(pool.dtype));
  if (slot_bytes > 0) {
    std::map<std::int64_t, std::int32_t> before;  // slot -k -> its label
    for (std::int64_t b = owners.begin; b < std::min(pool.byte_offset(), owners.end()); ++b) {
      auto& owner = owners.of_byte[static_cast<std::size_t>(b - owners.begin)];
      if (owner != -1) continue;
      const std::int64_t slot = -((pool.byte_offset() - b - 1) / slot_bytes + 1);
      auto [it, fresh] = before.try_emplace(slot, 0);
      if (fresh)
        it->second = owners.add("slot " + std::to_string(slot) + ", before the pool's first slot" +
                                (slot == -1 && padding_rows ? " (where a -1 index lands in C index math)" : ""));
      owner = it->second;
    }
  }
  // Only the slots that reach into the window (with a positive slot stride; else every slot).
  std::int64_t lo = 0, hi = slots;
  if (slot_bytes > 0) {
    lo = std::clamp<std::int64_t>((owners.begin - pool.byte_offset()) / slot_bytes - 1, 0, slots);
    hi = std::clamp<std::int64_t>((owners.end() - pool.byte_offset()) / slot_bytes + 2, lo, slots);
  }
  for (std::int64_t s = lo; s < hi; ++s) {
    const auto i = static_cast<std::size_t>(s);
    const std::int32_t label = owners.add(slot_label(s, i < slot_sequence.size() ? slot_sequence[i] : -1,
                                                     i < slot_token.size() ? slot_token[i] : -1,
                                                     padding_rows && s == slots - 1));
    for_each_element_run(slice(pool, 0, s, s + 1),
                         [&](std::int64_t first, std::int64_t count) { owners.fill_bytes(first, count, label); });
  }
}

// scratch_states by row and step: "scratch_states[2, 3]".
void label_scratch(Owners& owners, const View& scratch) {
  for (std::int64_t r = 0; r < scratch.size(0); ++r)
    for (std::int64_t step = 0; step < scratch.size(1); ++step) {
      const std::int32_t label = owners.add("scratch_states[" + std::to_string(r) + ", " + std::to_string(step) + "]");
      for_each_element_run(slice(slice(scratch, 0, r, r + 1), 1, step, step + 1),
                           [&](std::int64_t first, std::int64_t count) { owners.fill_bytes(first, count, label); });
    }
}

void label_elements(Owners& owners, const Named& t, const ByteRanges& writable) {
  if (t.name == "scratch_states" && t.tensor->view.rank() == 5) return label_scratch(owners, t.tensor->view);
  const std::int32_t element = owners.add("elements of " + quoted(t));
  for_each_element_run(t.tensor->view,
                       [&](std::int64_t first, std::int64_t count) { owners.fill_bytes(first, count, element); });
  if (t.name != "o") return;
  // o's elements outside the writable region are those at tokens of no sequence.
  const std::int32_t stray = owners.add("elements of 'o' at tokens outside every sequence");
  for (std::size_t b = 0; b < owners.of_byte.size(); ++b) {
    const std::int64_t byte = owners.begin + static_cast<std::int64_t>(b);
    if (owners.of_byte[b] == element && !covered(writable, byte, byte + 1)) owners.of_byte[b] = stray;
  }
}

// What each payload byte of `buffer` in the window holding `byte` belongs to: first the gaps inside each
// view's extent, then the elements (an output aliasing an input claims the shared bytes: outputs come last).
Owners owners_of(const Problem& p, const GuardedBuffer* buffer, const ByteRanges& writable,
                 const std::vector<std::int64_t>& slot_sequence, const std::vector<std::int64_t>& slot_token,
                 bool padding_rows, std::int64_t byte) {
  const auto size = static_cast<std::int64_t>(buffer->size());
  const std::int64_t begin = size <= kOwnerWindow ? 0 : byte / kOwnerWindow * kOwnerWindow;
  Owners owners{begin, std::vector<std::int32_t>(static_cast<std::size_t>(std::min(size - begin, kOwnerWindow)), -1), {}};
  std::vector<Named> on_buffer;
  for (const Named& t : named_tensors(p))
    if (t.tensor->buffer.get() == buffer) on_buffer.push_back(t);
  for (const Named& t : on_buffer) label_gaps(owners, t, is_pool(p, t.tensor));
  for (const Named& t : on_buffer) {
    if (!walkable(*t.tensor)) continue;
    if (is_pool(p, t.tensor))
      label_slots(owners, t.tensor->view, slot_sequence, slot_token, padding_rows);
    else
      label_elements(owners, t, writable);
  }
  return owners;
}

}  // namespace

std::vector<ByteChange> Snapshot::changes(const Problem& after, bool outside_writable_only) const {
  const auto buffers = distinct_buffers(after);
  if (buffers.size() != copies_.size())
    throw std::invalid_argument("Snapshot: the problem has " + std::to_string(buffers.size()) +
                                " distinct buffers, the snapshot " + std::to_string(copies_.size()));
  std::vector<ByteChange> all;
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    const Copy& before = copies_[i];
    GuardedBuffer& buffer = *buffers[i];
    if (buffer.name() != before.name || static_cast<std::int64_t>(buffer.size()) != before.payload)
      throw std::invalid_argument("Snapshot: buffer '" + buffer.name() + "' does not match the snapshot's '" +
                                  before.name + "'");
    const std::byte* now = buffer.band_before();
    const std::int64_t size = before.payload, total = before.total;
    std::optional<Owners> owners;  // built at the first changed payload byte that needs a name, per window
    std::map<std::string, ByteChange> groups;  // by what the bytes belong to
    std::vector<std::byte> was(static_cast<std::size_t>(kSnapBlock));  // a pattern block, spelled out
    for (std::size_t k = 0; k < before.stored_at.size(); ++k) {
      const std::int64_t start = static_cast<std::int64_t>(k) * kSnapBlock, n = std::min(kSnapBlock, total - start);
      const std::byte* old = was.data();
      if (before.stored_at[k] < 0) {
        std::uint64_t pattern = 0;
        if (repeats(now + start, n, &pattern) && pattern == before.pattern[k]) continue;
        for (std::int64_t at = 0; at < n; at += 8)
          std::memcpy(was.data() + at, &before.pattern[k], static_cast<std::size_t>(std::min<std::int64_t>(8, n - at)));
      } else {
        old = before.stored.data() + before.stored_at[k];
        if (std::memcmp(now + start, old, static_cast<std::size_t>(n)) == 0) continue;
      }
      constexpr std::int64_t kBlock = 64;
      for (std::int64_t block = start; block < start + n; block += kBlock) {
        const std::int64_t end = std::min(block + kBlock, start + n);
        if (std::memcmp(now + block, old + (block - start), static_cast<std::size_t>(end - block)) == 0) continue;
        // Blocks align with the payload (kGuard is a multiple of kBlock): skip a block that is all writable.
        if (outside_writable_only && block >= kGuard && end - kGuard <= size &&
            covered(before.writable, block - kGuard, end - kGuard))
          continue;
        for (std::int64_t at = block; at < end; ++at) {
          if (now[at] == old[at - start]) continue;
          const std::int64_t offset = at - kGuard;
          const bool payload = offset >= 0 && offset < size;
          if (payload && outside_writable_only && covered(before.writable, offset, offset + 1)) continue;
          std::string where = offset < 0 ? "the guard band before the payload" : "the guard band after the payload";
          if (payload) {
            if (!owners || offset < owners->begin || offset >= owners->end())
              owners = owners_of(after, &buffer, before.writable, slot_sequence_, slot_token_, has_padding_rows_, offset);
            where = owners->label_of(offset);
          }
          auto [group, fresh] = groups.try_emplace(where);
          if (fresh) group->second.buffer = before.name, group->second.first_byte = offset, group->second.where = where;
          group->second.last_byte = offset;
          ++group->second.bytes;
        }
      }
    }
    std::vector<ByteChange> found;
    for (auto& [owner, change] : groups) found.push_back(std::move(change));
    std::sort(found.begin(), found.end(), [](const ByteChange& a, const ByteChange& b) { return a.first_byte < b.first_byte; });
    all.insert(all.end(), found.begin(), found.end());
  }
  return all;
}

std::vector<std::string> Snapshot::non_finite_writable(const Problem& after) const {
  const auto buffers = distinct_buffers(after);
  std::vector<std::string> found;
  for (const Named& t : named_tensors(after)) {
    const View& v = t.tensor->view;
    const auto at = std::find(buffers.begin(), buffers.end(), t.tensor->buffer.get()) - buffers.begin();
    if (t.input || !is_float(v.dtype) || !walkable(*t.tensor) || static_cast<std::size_t>(at) >= copies_.size()) continue;
    const Copy& copy = copies_[static_cast<std::size_t>(at)];
    const auto es = static_cast<std::int64_t>(size_of(v.dtype)), size = copy.payload;
    std::int64_t count = 0, first = -1;
    for_each_element_run(v, [&](std::int64_t byte, std::int64_t bytes) {
      for (std::int64_t b = byte; b < byte + bytes; b += es) {
        if (b < 0 || b + es > size || !covered(copy.writable, b, b + es)) continue;
        if (std::isfinite(load_element(t.tensor->buffer->data(), v.dtype, b / es))) continue;
        if (count++ == 0) first = b;
      }
    });
    if (count)
      found.push_back(std::string(t.name) + ": " + std::to_string(count) + " element(s) it may write hold NaN or Inf " +
                      "(first at byte offset " + std::to_string(first) + " of buffer '" + t.tensor->buffer->name() + "')");
  }
  return found;
}

std::vector<ByteChange> Snapshot::changed_outside_writable(const Problem& after) const { return changes(after, true); }
std::vector<ByteChange> Snapshot::changed_anywhere(const Problem& after) const { return changes(after, false); }

namespace {
std::vector<std::string> describe_each(const std::vector<ByteChange>& changes) {
  std::vector<std::string> lines;
  for (const auto& c : changes) lines.push_back(c.describe());
  return lines;
}
}  // namespace

std::vector<std::string> Snapshot::changes_outside_writable(const Problem& after) const {
  return describe_each(changed_outside_writable(after));
}
std::vector<std::string> Snapshot::changes_anywhere(const Problem& after) const {
  return describe_each(changed_anywhere(after));
}

std::string ByteChange::describe() const {
  const std::string where_bytes = first_byte == last_byte
                                      ? "byte offset " + std::to_string(first_byte)
                                      : "byte offsets " + std::to_string(first_byte) + ".." + std::to_string(last_byte);
  return buffer + ": " + std::to_string(bytes) + (bytes == 1 ? " byte" : " bytes") + " changed in " + where + " (" +
         where_bytes + " from the payload start)";
}

}  // namespace kda::props
