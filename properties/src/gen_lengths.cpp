// Varlen packings. The count is drawn first so that each length can be drawn around a fair share of
// the token budget (64 sequences get short lengths, 2 sequences long ones); the list then shrinks
// like rapidcheck's containers (remove chunks, then shrink each element) but never to empty.
#include <algorithm>
#include <stdexcept>

#include "generators_internal.hpp"

namespace kda::props::detail {

namespace {

using Elements = std::vector<rc::Shrinkable<i64>>;

// Sub-chunk (16) and chunk (64) edges, where kernels' tile loops go wrong.
constexpr i64 kEdges[] = {0, 1, 15, 16, 17, 63, 64, 65};

// One length, at most `tokens`, around `share`. Kinds are ordered by simplicity: a length shrinks
// first towards an edge value (regenerated), then within its kind towards 0 (edges: along the list),
// which finds the shortest length still failing (a long tail born at 300 shrinks to exactly 65).
rc::Gen<i64> gen_length(i64 share, i64 tokens) {
  std::vector<i64> edges;
  for (i64 e : kEdges)
    if (e <= tokens) edges.push_back(e);
  const i64 tail_start = std::min<i64>(66, tokens);
  const std::vector<rc::Gen<i64>> kinds{
      rc::gen::map(gen_index(static_cast<int>(edges.size())), [edges](int i) { return edges[static_cast<std::size_t>(i)]; }),
      gen_uniform(0, std::min<i64>(8, tokens)),
      gen_uniform(0, std::min(2 * share, tokens)),
      gen_uniform(tail_start, tokens, 0),  // long tail
  };
  const int tail_weight = tokens > 65 && share < 65 ? 1 : 0;
  return rc::gen::mapcat(gen_weighted_index({3, 2, 3, tail_weight}),
                         [kinds](int kind) { return kinds[static_cast<std::size_t>(kind)]; });
}

// Few sequences are likelier than many: count - 1 = (max_count - 1) * u^2 with u uniform in [0, 1).
i64 draw_count(rc::Random random, i64 max_count) {
  const double u = static_cast<double>(random.next() >> 11) * 0x1.0p-53;
  return 1 + static_cast<i64>(static_cast<double>(max_count) * u * u);
}

}  // namespace

std::vector<i64> fit_lengths(const std::vector<i64>& lengths, const Budget& b) {
  std::vector<i64> kept;
  i64 tokens = 0, work = 0;
  for (i64 len : lengths) {
    const i64 work_left = b.work - work - b.per_sequence;
    if (static_cast<i64>(kept.size()) >= b.sequences || (work_left < 0 && !kept.empty())) break;
    i64 fits = std::max<i64>(b.tokens - tokens, 0);
    if (b.per_token > 0) fits = std::min(fits, std::max<i64>(work_left, 0) / b.per_token);
    kept.push_back(std::min(len, fits));
    tokens += kept.back(), work += b.per_sequence + kept.back() * b.per_token;
    if (kept.back() < len) break;
  }
  if (kept.empty()) kept.push_back(0);
  return kept;
}

}  // namespace kda::props::detail

namespace kda::props {

using detail::i64;

rc::Gen<std::vector<i64>> gen_lengths(const GenLimits& limits) {
  if (limits.max_sequences < 1 || limits.max_tokens < 0)
    throw std::invalid_argument("gen_lengths: needs max_sequences >= 1 and max_tokens >= 0");
  return rc::Gen<std::vector<i64>>([limits](const rc::Random& random, int size) {
    const i64 s = std::clamp(size, 0, 100);
    const i64 max_count = 1 + (limits.max_sequences - 1) * s / 100;
    const i64 tokens = std::min<i64>(limits.max_tokens, 8 + std::max<i64>(limits.max_tokens - 8, 0) * s / 100);
    rc::Random r = random;
    const i64 count = std::min(detail::draw_count(r.split(), max_count), max_count);
    const auto element = detail::gen_length(std::max<i64>(1, tokens / count), tokens);
    detail::Elements elements;
    for (i64 n = 0; n < count; ++n) elements.push_back(element(r.split(), size));

    auto shrinkable = rc::shrinkable::shrinkRecur(std::move(elements), [](const detail::Elements& es) {
      return rc::seq::concat(
          rc::seq::filter(rc::shrink::removeChunks(es), [](const detail::Elements& xs) { return !xs.empty(); }),
          rc::shrink::eachElement(es, [](const rc::Shrinkable<i64>& e) { return e.shrinks(); }));
    });
    return rc::shrinkable::map(std::move(shrinkable), [limits](const detail::Elements& es) {
      std::vector<i64> lengths;
      for (const auto& e : es) lengths.push_back(e.value());
      return detail::fit_lengths(lengths, {limits.max_tokens, limits.max_sequences});
    });
  });
}

}  // namespace kda::props
