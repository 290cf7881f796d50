// Speculative-decoding verify calls: L tokens per request at most (num_spec edges: L = 1, 2 and 8
// drawn often), accepted counts at 1, at L and between, int32 and int64; -1 entries (a whole padding
// request, a -1 in a table column, a -1 in the scratch row map); identity and shuffled scratch row maps
// with more rows than requests and more steps than L. The pool's geometry is drawn as for a pool.
#include <numeric>
#include <random>

#include "generators_internal.hpp"

namespace kda::props::detail {

namespace {

constexpr i64 kVerifyLengths[] = {1, 2, 8, 3, 4, 5, 6, 7};  // simplest first: shrinks towards L = 1

// Draw x of a request: kind x % 3 is a = 1, a = L or a count between (for L <= 2: any count).
i64 accepted_count(i64 x, i64 L) {
  switch (x % 3) {
    case 0: return 1;
    case 1: return L;
    default: return L > 2 ? 2 + x / 3 % (L - 2) : 1 + x / 3 % L;
  }
}

std::vector<i64> shuffled_rows(i64 rows, std::uint64_t seed) {  // Fisher-Yates on raw engine output
  std::vector<i64> order(static_cast<std::size_t>(rows));
  std::iota(order.begin(), order.end(), i64{0});
  std::mt19937_64 engine(seed);
  for (std::size_t i = order.size(); i-- > 1;) std::swap(order[i], order[engine() % (i + 1)]);
  return order;
}

}  // namespace

rc::Gen<VerifyDraw> gen_verify_draw() {
  using rc::gen::set;
  return rc::gen::build<VerifyDraw>(
      set(&VerifyDraw::length, gen_weighted_index({3, 3, 3, 1, 1, 1, 1, 1})), set(&VerifyDraw::ragged, gen_bool(30)),
      set(&VerifyDraw::accepted, rc::gen::container<std::vector<i64>>(8, gen_uniform(0, 63))),
      set(&VerifyDraw::accepted_i64, gen_bool(40)), set(&VerifyDraw::table_layout, gen_index(3)),
      // 0..2 entries: rapidcheck draws a container's count in [0, size].
      set(&VerifyDraw::padding_entries, rc::gen::resize(2, rc::gen::container<std::vector<i64>>(gen_uniform(0, 255)))),
      set(&VerifyDraw::extra_rows, gen_uniform(0, 2)), set(&VerifyDraw::extra_steps, gen_uniform(0, 2)),
      set(&VerifyDraw::row_map, rc::gen::mapcat(gen_bool(60), [](bool shuffled) {
            return shuffled ? gen_seed() : rc::gen::just(std::uint64_t{0});
          })));
}

i64 verify_length(const VerifyDraw& draw) { return kVerifyLengths[draw.length]; }

void place_verify(CaseSpec& c, const VerifyDraw& v, const PoolDraw& pool, bool aligned, bool compact, bool identity,
                  bool past_int32) {
  ProblemSpec& s = c.problem;
  const auto N = static_cast<i64>(s.lengths.size());
  const i64 L = s.L;
  const bool table = s.state == StateSource::table;
  s.accepted.clear();
  for (i64 n = 0; table && n < N; ++n)
    s.accepted.push_back(accepted_count(v.accepted[static_cast<std::size_t>(n) % v.accepted.size()], L));
  s.accepted_dtype = v.accepted_i64 ? DType::i64 : DType::i32;
  const i64 entries = table ? N * L : N;
  const std::vector<i64> order = place_pool_slots(s, pool, aligned, compact, entries, past_int32);
  s.indices.assign(order.begin(), order.begin() + entries);
  for (i64 row : pool.padding_rows)  // a whole padding request
    for (i64 t = 0; t < (table ? L : 1); ++t) s.indices[static_cast<std::size_t>(row % N * (table ? L : 1) + t)] = -1;
  if (table) {
    for (i64 e : v.padding_entries) s.indices[static_cast<std::size_t>(e % N * L + e / N % L)] = -1;
    c.table_layout = static_cast<TableLayout>(v.table_layout);
    return;
  }
  s.scratch_rows = N + v.extra_rows, s.scratch_steps = L + v.extra_steps;
  s.scratch_indices.resize(static_cast<std::size_t>(N));
  if (identity || v.row_map == 0) {
    std::iota(s.scratch_indices.begin(), s.scratch_indices.end(), i64{0});
  } else {
    const std::vector<i64> rows = shuffled_rows(s.scratch_rows, v.row_map);
    s.scratch_indices.assign(rows.begin(), rows.begin() + N);
  }
  if (!identity)
    for (i64 e : v.padding_entries) s.scratch_indices[static_cast<std::size_t>(e % N)] = -1;
}

}  // namespace kda::props::detail
