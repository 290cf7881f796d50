// libFuzzer target: the calling contract on any Problem. The bytes decode into a profile, the mode,
// the sizes, the options and every tensor of a call (dtype, rank, shape, strides, offset; a buffer of
// its own or one an earlier tensor views; the buffer's size and contents), the verify forms included
// (an [N, L] index table with accepted counts, or a scratch buffer with its row map). Each choice
// leans towards a valid call (the shape the contract expects, a usual dtype, a buffer that fits,
// cu_seqlens that add up, indices and counts near their valid range) so that the deep checks run,
// and otherwise takes anything at all. validate() must return a verdict
// naming only rules the profile enforces, and describe() a line, whatever the problem holds.
// Buffers hold at most kMaxBufferBytes and their guard bands are poisoned for AddressSanitizer, so
// a read outside a payload is reported, not only one outside the allocation.
#include <fuzzer/FuzzedDataProvider.h>
#include <sanitizer/asan_interface.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "kda/contract.hpp"

namespace {

using kda::DType;
using kda::GuardedBuffer;
using kda::Shape;
using kda::Tensor;
using kda::View;
using i64 = std::int64_t;

constexpr i64 kMaxBufferBytes = 1 << 17;  // one [HV=1, 128, 128] f32 state slot fits, twice

class Decoder {
 public:
  Decoder(const std::uint8_t* data, std::size_t size) : in_(data, size) {}

  bool flag() { return in_.ConsumeBool(); }
  bool mostly() { return in_.ConsumeIntegralInRange(0, 7) != 0; }  // true 7 times in 8
  std::size_t index(std::size_t n) { return in_.ConsumeIntegralInRange<std::size_t>(0, n - 1); }
  i64 small(i64 max) { return in_.ConsumeIntegralInRange<i64>(0, max); }

  // Mostly small, where valid calls live; otherwise an edge of 32- or 64-bit arithmetic, or anything.
  i64 number() {
    constexpr i64 max = std::numeric_limits<i64>::max(), min = std::numeric_limits<i64>::min();
    switch (in_.ConsumeIntegralInRange(0, 7)) {
      case 0: return in_.ConsumeIntegral<i64>();
      case 1: return in_.PickValueInArray<i64>({-1, 1 << 15, (i64{1} << 31) - 1, i64{1} << 31, i64{1} << 32, max, min});
      default: return in_.ConsumeIntegralInRange<i64>(-1, 70);
    }
  }
  // Any double (NaN and the infinities included), or one in [0, 1].
  double real() {
    return flag() ? std::bit_cast<double>(in_.ConsumeIntegral<std::uint64_t>()) : in_.ConsumeProbability<double>();
  }

  // A tensor the contract expects with `shape` and (usually) dtype `usual`: mostly that shape,
  // contiguous from a small offset in a buffer that holds it, when it fits kMaxBufferBytes; otherwise
  // any view at all over any buffer, or one without a buffer. The dtype may be no dtype (codes 6, 7).
  Tensor tensor(const char* name, const Shape& shape, DType usual) {
    View view{mostly() ? usual : static_cast<DType>(in_.ConsumeIntegralInRange(0, 7)), {}, {}, 0};
    const int form = in_.ConsumeIntegralInRange(0, 15);
    if (form == 0) return Tensor{nullptr, std::move(view)};
    if (form == 1 || !fits(shape, view.dtype)) {
      view.shape.resize(index(7));
      view.strides.resize(flag() ? view.shape.size() : index(7));  // as many strides as dims, mostly
      for (auto& n : view.shape) n = number();
      for (auto& s : view.strides) s = number();
      view.offset = number();
      return Tensor{buffer(name, small(kMaxBufferBytes)), std::move(view)};
    }
    view = kda::contiguous_view(view.dtype, shape, mostly() ? 0 : small(3));
    const auto extent = view.byte_extent();
    const i64 bytes = extent ? extent->end : 0;
    return Tensor{buffer(name, mostly() ? bytes : small(kMaxBufferBytes)), std::move(view)};
  }

  // Integers near [low, high] (one below and above included) in a contiguous int32 tensor of `shape`,
  // an index table or accepted counts a contract check reads; or a tensor like any other.
  Tensor integers(const char* name, const Shape& shape, i64 low, i64 high) {
    if (!flag() || !fits(shape, DType::i64) || std::any_of(shape.begin(), shape.end(), [](i64 n) { return n < 0; }))
      return tensor(name, shape, DType::i32);
    Tensor t = Tensor::with_view(name, kda::contiguous_view(mostly() ? DType::i32 : DType::i64, shape));
    i64 width = 0;
    const bool near = !__builtin_sub_overflow(high, low, &width) && width >= 0 && width < (i64{1} << 40);
    const i64 span = near ? width + 2 : 2;
    for (i64 i = 0; i < t.numel(); ++i)
      kda::store_integer(t.buffer->data(), t.dtype(), i, low - 1 + in_.ConsumeIntegralInRange<i64>(0, span));
    poison(*t.buffer);
    buffers_.push_back(t.buffer);
    return t;
  }

  // cu_seqlens: offsets of `sequences` sequences of 0 to 70 tokens, with the tokens they add up to;
  // or a tensor like any other.
  std::pair<Tensor, std::optional<i64>> offsets(i64 sequences) {
    if (sequences < 0 || sequences >= kMaxBufferBytes / 8 || !flag())
      return {tensor("cu_seqlens", {sequences == std::numeric_limits<i64>::max() ? sequences : sequences + 1},
                     DType::i32),
              std::nullopt};
    Tensor t = Tensor::with_view("cu_seqlens", kda::contiguous_view(flag() ? DType::i32 : DType::i64, {sequences + 1}));
    i64 at = 0;
    for (i64 n = 0; n <= sequences; at += n < sequences ? small(70) : 0, ++n) t.set_integer(n, at);
    poison(*t.buffer);
    buffers_.push_back(t.buffer);
    return {std::move(t), at};
  }

 private:
  // Whether a contiguous tensor of this shape holds at most kMaxBufferBytes (negative dims as 1).
  static bool fits(const Shape& shape, DType dtype) {
    i64 bytes = std::max<i64>(static_cast<i64>(kda::size_of(dtype)), 1) * 4;  // and its offset
    for (i64 n : shape)
      if (__builtin_mul_overflow(bytes, std::max<i64>(n, 1), &bytes) || bytes > kMaxBufferBytes) return false;
    return true;
  }

  static void poison(GuardedBuffer& b) {
    ASAN_POISON_MEMORY_REGION(b.band_before(), GuardedBuffer::kGuardBytes);
    ASAN_POISON_MEMORY_REGION(b.band_after(), GuardedBuffer::kGuardBytes);
  }

  // A fresh buffer filled from the input, or (one time in eight) one an earlier tensor views.
  std::shared_ptr<GuardedBuffer> buffer(const char* name, i64 bytes) {
    if (!buffers_.empty() && !mostly()) return buffers_[index(buffers_.size())];
    auto b = std::make_shared<GuardedBuffer>(name, static_cast<std::size_t>(bytes));
    const auto fill = in_.ConsumeBytes<std::uint8_t>(b->size());
    std::copy(fill.begin(), fill.end(), reinterpret_cast<std::uint8_t*>(b->data()));
    poison(*b);
    buffers_.push_back(b);
    return b;
  }

  FuzzedDataProvider in_;
  std::vector<std::shared_ptr<GuardedBuffer>> buffers_;
};

// A size the contract expects, saturating where the decoded sizes overflow.
i64 times(i64 a, i64 b) {
  i64 r = 0;
  return __builtin_mul_overflow(a, b, &r) ? std::numeric_limits<i64>::max() : r;
}

// The largest index below a count (saturating at the lowest value).
i64 below(i64 count) { return count == std::numeric_limits<i64>::min() ? count : count - 1; }

kda::Problem decode_problem(Decoder& d) {
  kda::Problem p;
  p.mode = static_cast<kda::Mode>(d.index(3));
  for (i64* size : {&p.B, &p.T, &p.N, &p.H, &p.HV, &p.K, &p.V}) *size = d.number();
  const bool verify = p.mode == kda::Mode::verify;
  if (verify) p.L = d.mostly() ? 1 + d.small(7) : d.number();
  kda::Options& op = p.options;
  if (d.flag()) op.scale = d.real();
  op.l2norm_qk = d.flag(), op.beta_from_logits = d.flag(), op.allow_neg_eigval = d.flag();
  op.gate_in_kernel = d.flag(), op.safe_gate = d.flag();
  if (d.flag()) op.lower_bound = -5 * d.real();
  op.chunk_size = d.mostly() ? (d.flag() ? 64 : 32) : static_cast<int>(d.number());
  op.state_layout = d.flag() ? kda::StateLayout::vk : kda::StateLayout::kv;
  if (d.flag()) {
    auto [offsets, tokens] = d.offsets(p.N);
    p.cu_seqlens = std::move(offsets);
    if (tokens && d.mostly()) p.T = *tokens;
  }
  const Shape head = p.state_head_shape();
  auto state = [&](Shape lead) {
    lead.push_back(p.HV);
    lead.insert(lead.end(), head.begin(), head.end());
    return lead;
  };
  auto maybe = [&](std::optional<Tensor>& t, const char* name, const Shape& shape, DType usual) {
    if (d.flag()) t = d.tensor(name, shape, usual);
  };
  p.q = d.tensor("q", {p.B, p.T, p.H, p.K}, DType::f32);
  p.k = d.tensor("k", {p.B, p.T, p.H, p.K}, DType::f32);
  p.v = d.tensor("v", {p.B, p.T, p.HV, p.V}, DType::f32);
  p.g = d.tensor("g", {p.B, p.T, p.HV, p.K}, DType::f32);
  p.beta = d.tensor("beta", {p.B, p.T, p.HV}, DType::f32);
  maybe(p.A_log, "A_log", {p.HV}, DType::f32);
  maybe(p.dt_bias, "dt_bias", {times(p.HV, p.K)}, DType::f32);
  maybe(p.initial_state, "initial_state", state({p.N}), DType::f32);
  const i64 slots = d.number();
  maybe(p.state_pool, "state_pool", state({slots}), DType::f32);
  // The verify forms: mostly one of them in verify mode, rarely either elsewhere.
  const std::size_t form = verify ? d.index(3) : d.mostly() ? 2 : d.index(2);  // 0 table, 1 scratch, 2 neither
  if (d.flag()) p.state_indices = d.integers("state_indices", form == 0 ? Shape{p.N, p.L} : Shape{p.N}, -1, below(slots));
  if (form == 0) p.num_accepted = d.integers("num_accepted", {p.N}, 1, p.L);
  if (form == 1) {
    const i64 rows = d.number();
    maybe(p.scratch_states, "scratch_states", state({rows, d.mostly() ? p.L : d.number()}), DType::f32);
    if (d.mostly()) p.scratch_indices = d.integers("scratch_indices", {p.N}, -1, below(rows));
  }
  p.o = d.tensor("o", {p.B, p.T, p.HV, p.V}, DType::f32);
  maybe(p.final_state, "final_state", state({p.N}), DType::f32);
  maybe(p.chunk_states, "chunk_states", state({d.number()}), DType::f32);
  maybe(p.token_states, "token_states", state({p.B, p.T}), DType::f32);
  return p;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Decoder d(data, size);
  const auto names = kda::profile_names();
  const kda::Profile& profile = *kda::find_profile(names[d.index(names.size())]);
  const kda::Problem p = decode_problem(d);
  for (const kda::Violation& v : kda::validate(p, profile))
    if (!profile.enforces(v.rule) || v.message.empty()) __builtin_trap();
  (void)p.describe();
  return 0;
}
