// Primitive generators. rapidcheck's own choice generators either ignore shrinking (elementOf) or
// scale their range with size (inRange): a dtype or a layout should be uniform at every size and
// shrink towards the first (simplest) choice.
#include <numeric>
#include <stdexcept>

#include "generators_internal.hpp"

namespace kda::props::detail {

namespace {

template <class T>
rc::Shrinkable<T> shrinking_towards(T value, T target) {
  return rc::shrinkable::shrinkRecur(value, [target](T x) { return rc::shrink::towards<T>(x, target); });
}

}  // namespace

rc::Gen<int> gen_index(int n) {
  if (n < 1) throw std::invalid_argument("gen_index: no choices");
  return rc::Gen<int>([n](const rc::Random& random, int) {
    return shrinking_towards(static_cast<int>(rc::Random(random).next() % static_cast<std::uint64_t>(n)), 0);
  });
}

rc::Gen<int> gen_weighted_index(std::vector<int> weights) {
  const int total = std::accumulate(weights.begin(), weights.end(), 0);
  if (total < 1) throw std::invalid_argument("gen_weighted_index: weights sum to 0");
  return rc::Gen<int>([weights = std::move(weights), total](const rc::Random& random, int) {
    int pick = static_cast<int>(rc::Random(random).next() % static_cast<std::uint64_t>(total));
    int i = 0;
    while (pick >= weights[static_cast<std::size_t>(i)]) pick -= weights[static_cast<std::size_t>(i++)];
    return shrinking_towards(i, 0);
  });
}

rc::Gen<i64> gen_uniform(i64 lo, i64 hi) { return gen_uniform(lo, hi, lo); }

rc::Gen<i64> gen_uniform(i64 lo, i64 hi, i64 target) {
  if (hi < lo) throw std::invalid_argument("gen_uniform: empty range");
  return rc::Gen<i64>([lo, hi, target](const rc::Random& random, int) {
    const auto span = static_cast<std::uint64_t>(hi - lo) + 1;
    return shrinking_towards(lo + static_cast<i64>(rc::Random(random).next() % span), target);
  });
}

rc::Gen<bool> gen_bool(int percent_true) {
  return rc::gen::map(gen_weighted_index({100 - percent_true, percent_true}), [](int i) { return i == 1; });
}

rc::Gen<i64> gen_often_zero(int percent_zero, i64 hi) {
  return rc::gen::mapcat(gen_bool(100 - percent_zero),
                         [hi](bool nonzero) { return nonzero ? gen_uniform(1, hi) : rc::gen::just(i64{0}); });
}

rc::Gen<std::uint64_t> gen_seed() {
  return rc::Gen<std::uint64_t>(
      [](const rc::Random& random, int) { return rc::shrinkable::just(rc::Random(random).next()); });
}

}  // namespace kda::props::detail
