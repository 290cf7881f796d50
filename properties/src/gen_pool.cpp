// State pool geometry: more slots than sequences, padded slot strides, offset bases, permuted indices
// with -1 padding rows. The FlashInfer stride contract (slot stride % 16 elements, base % 32 bytes)
// is met by rounding the drawn paddings up, so a profile that enforces it always gets a legal pool
// and one that does not also gets misaligned ones.
#include <limits>
#include <numeric>
#include <random>

#include "generators_internal.hpp"

namespace kda::props::detail {

namespace {

i64 round_up(i64 x, i64 m) { return (x + m - 1) / m * m; }

i64 compact_slot_stride(const ProblemSpec& spec) { return spec.HV * spec.K * spec.V; }

rc::Gen<std::uint64_t> gen_permutation() {
  return rc::gen::mapcat(gen_bool(75), [](bool shuffled) {
    return shuffled ? gen_seed() : rc::gen::just(std::uint64_t{0});
  });
}

// Fisher-Yates on raw engine output: std::shuffle's algorithm is not specified by the standard.
std::vector<i64> slot_order(i64 slots, std::uint64_t permutation) {
  std::vector<i64> order(static_cast<std::size_t>(slots));
  std::iota(order.begin(), order.end(), i64{0});
  if (permutation == 0) {
    std::rotate(order.begin(), order.begin() + 1, order.end());  // n -> n + 1; slot 0 stays unused
    return order;
  }
  std::mt19937_64 engine(permutation);
  for (std::size_t i = order.size() - 1; i > 0; --i) std::swap(order[i], order[engine() % (i + 1)]);
  return order;
}

}  // namespace

rc::Gen<PoolDraw> gen_pool_draw() {
  return rc::gen::build<PoolDraw>(
      rc::gen::set(&PoolDraw::extra_slots, gen_uniform(0, 3)),
      rc::gen::set(&PoolDraw::stride_pad, gen_often_zero(40, 48)),
      rc::gen::set(&PoolDraw::offset, gen_often_zero(40, 64)),
      rc::gen::set(&PoolDraw::permutation, gen_permutation()),
      // 0..3 padding rows: rapidcheck draws a container's count in [0, size].
      rc::gen::set(&PoolDraw::padding_rows, rc::gen::resize(3, rc::gen::container<std::vector<i64>>(gen_uniform(0, 63)))));
}

i64 first_slot_past_int32(i64 slot_stride) {
  constexpr i64 int32_max = std::numeric_limits<std::int32_t>::max();
  return slot_stride > 0 ? int32_max / slot_stride + 1 : 0;
}

std::vector<i64> place_pool_slots(ProblemSpec& spec, const PoolDraw& draw, bool aligned, bool compact, i64 entries,
                                  bool past_int32) {
  const i64 slots = entries + 1 + draw.extra_slots;
  const auto element = static_cast<i64>(size_of(spec.state_dtype));
  i64 stride = compact_slot_stride(spec) + (compact ? 0 : draw.stride_pad);
  i64 offset = draw.offset;
  if (aligned) stride = round_up(stride, 16), offset = round_up(offset * element, 32) / element;
  const i64 unused_below = past_int32 ? first_slot_past_int32(stride) : 0;
  spec.pool_slots = unused_below + slots;
  spec.pool_slot_stride = stride;
  spec.pool_offset = offset;
  std::vector<i64> order = slot_order(slots, draw.permutation);
  for (i64& slot : order) slot += unused_below;
  return order;
}

void place_pool(ProblemSpec& spec, const PoolDraw& draw, bool aligned, bool compact, bool past_int32) {
  const auto N = static_cast<i64>(spec.lengths.size());
  const std::vector<i64> order = place_pool_slots(spec, draw, aligned, compact, N, past_int32);
  spec.indices.assign(order.begin(), order.begin() + N);
  for (i64 row : draw.padding_rows)
    if (N > 0) spec.indices[static_cast<std::size_t>(row % N)] = -1;
}

void set_head_dims(ProblemSpec& spec, i64 K, i64 V) {
  const i64 pad = spec.pool_slot_stride ? spec.pool_slot_stride - compact_slot_stride(spec) : 0;
  spec.K = K, spec.V = V;
  if (spec.pool_slot_stride) spec.pool_slot_stride = compact_slot_stride(spec) + pad;
}

void set_state_dtype(ProblemSpec& spec, DType dtype) {
  const auto bytes = spec.pool_offset * static_cast<i64>(size_of(spec.state_dtype));
  spec.state_dtype = dtype;
  spec.pool_offset = round_up(bytes, 32) / static_cast<i64>(size_of(dtype));
}

}  // namespace kda::props::detail
