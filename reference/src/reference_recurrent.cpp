#include "kda/reference/recurrent.hpp"

#include <algorithm>

namespace kda::ref {

namespace {

using Index = Eigen::Index;

// Sums over the key channel add term d into partial sum d mod kLanes, then the partial sums pairwise:
// a fixed order (so results do not depend on the layout or on how tokens are split across calls) that
// vectorises, and whose rounding error bound (K/8 + 3 units) is below that of one running sum (K units).
constexpr Index kLanes = 8;

template <class Acc>
Acc lane_sum(const Acc (&part)[kLanes]) {
  return ((part[0] + part[4]) + (part[1] + part[5])) + ((part[2] + part[6]) + (part[3] + part[7]));
}

// s <- a .* s (the decay); returns k . s after it.
template <class Acc>
Acc decay(Acc* s, const Acc* a, const Acc* k, Index K) {
  Acc part[kLanes] = {};
  Index d = 0;
  for (; d + kLanes <= K; d += kLanes)
    for (Index l = 0; l < kLanes; ++l) {
      const Acc decayed = a[d + l] * s[d + l];
      s[d + l] = decayed;
      part[l] += k[d + l] * decayed;
    }
  for (Index l = 0; d + l < K; ++l) {
    const Acc decayed = a[d + l] * s[d + l];
    s[d + l] = decayed;
    part[l] += k[d + l] * decayed;
  }
  return lane_sum(part);
}

// s <- s + u k (the delta update); returns q . s after it.
template <class Acc>
Acc update(Acc* s, Acc u, const Acc* k, const Acc* q, Index K) {
  Acc part[kLanes] = {};
  Index d = 0;
  for (; d + kLanes <= K; d += kLanes)
    for (Index l = 0; l < kLanes; ++l) {
      const Acc updated = s[d + l] + k[d + l] * u;
      s[d + l] = updated;
      part[l] += q[d + l] * updated;
    }
  for (Index l = 0; d + l < K; ++l) {
    const Acc updated = s[d + l] + k[d + l] * u;
    s[d + l] = updated;
    part[l] += q[d + l] * updated;
  }
  return lane_sum(part);
}

// Value columns never interact, so a group of kRows rows of S is carried through every token of the
// block while it sits in L1, and each token's decay, k and q rows are read once per group.
constexpr Index kRows = 8;

}  // namespace

template <class Acc>
void recurrent_block(Eigen::Ref<ValueMajorState<Acc>> S, const TokenBlock<Acc>& in, RowMatrix<Acc>& o,
                     std::vector<ValueMajorState<Acc>>* token_states) {
  const Index V = S.rows(), K = S.cols(), T = in.tokens();
  const RowMatrix<Acc> alpha = in.g.array().exp().matrix();  // per-channel decay factors, <= 1
  o.resize(T, V);
  if (token_states) token_states->assign(static_cast<std::size_t>(T), ValueMajorState<Acc>(V, K));
  for (Index j0 = 0; j0 < V; j0 += kRows) {
    const Index j1 = std::min(j0 + kRows, V);
    for (Index t = 0; t < T; ++t) {
      const Acc* a = alpha.row(t).data();
      const Acc* k = in.k.row(t).data();
      const Acc* q = in.q.row(t).data();
      for (Index j = j0; j < j1; ++j) {
        Acc* s = S.row(j).data();
        const Acc u = in.beta(t) * (in.v(t, j) - decay(s, a, k, K));
        o(t, j) = update(s, u, k, q, K);
        if (token_states) (*token_states)[static_cast<std::size_t>(t)].row(j) = S.row(j);
      }
    }
  }
}

template void recurrent_block<float>(Eigen::Ref<ValueMajorState<float>>, const TokenBlock<float>&, RowMatrix<float>&,
                                     std::vector<ValueMajorState<float>>*);
template void recurrent_block<double>(Eigen::Ref<ValueMajorState<double>>, const TokenBlock<double>&, RowMatrix<double>&,
                                      std::vector<ValueMajorState<double>>*);

}  // namespace kda::ref
