// The value-major recurrent form (recurrent.hpp): lane sums over the key channel.
#include "kda/reference/recurrent.hpp"

#include <algorithm>

namespace kda::ref {

namespace {

using Index = Eigen::Index;

// Sums over the key channel add term d into partial sum d mod lanes (lanes: one 32-byte register, 4
// doubles), then fold the partial sums in halves: a fixed order (so results do not depend on
// the layout or on how tokens are split across calls) that vectorises, and whose rounding error bound
// (about K / lanes + log2(lanes) units) is below that of one running sum (K units).
template <class Acc>
constexpr Index kLanes = 32 / static_cast<Index>(sizeof(Acc));

template <class Acc>
using Lanes = Eigen::Array<Acc, kLanes<Acc>, 1>;

template <class Acc>
inline Acc lane_sum(const Lanes<Acc>& lanes) {
  // The first fold as one vector addition of the two halves (fixed size, so it stays in registers).
  using Half = Eigen::Array<Acc, kLanes<Acc> / 2, 1>;
  const Half folded = lanes.template head<kLanes<Acc> / 2>() + lanes.template tail<kLanes<Acc> / 2>();
  Acc part[kLanes<Acc> / 2];
  for (Index l = 0; l < kLanes<Acc> / 2; ++l) part[l] = folded(l);
  for (Index half = kLanes<Acc> / 4; half > 0; half /= 2)
    for (Index l = 0; l < half; ++l) part[l] += part[l + half];
  return part[0];
}

// Value columns (rows of S) never interact. R of them advance together, so that their partial sums form
// independent chains the processor overlaps; each row's arithmetic is its own. The lanes are Eigen
// arrays: element-wise operations, vectorised whatever the compiler proves about aliasing.
//
// One pass over rows s[r] for token t's delta update (Update: s += u[r] k, then out[r] = q . s and, with
// keep, s copied to keep[r]) fused with token t+1's decay (Decay: s = a .* s, then kS[r] = k2 . s), so
// each row is read and written once per token.
template <class Acc, int R, bool Update, bool Decay>
void pass(Acc* const* s, Index K, const Acc* u, const Acc* k, const Acc* q, Acc* out, Acc* const* keep,
          const Acc* a, const Acc* k2, Acc* kS) {
  using L = Lanes<Acc>;
  constexpr Index W = kLanes<Acc>;
  L dot_q[R], dot_k[R];
  for (int r = 0; r < R; ++r) dot_q[r].setZero(), dot_k[r].setZero();
  const Index body = K - K % W;
  for (Index d = 0; d < body; d += W) {
    // Inputs into registers before any store: the compiler cannot prove the stores to s miss them.
    L kd, qd, ad, k2d;
    if constexpr (Update) kd = Eigen::Map<const L>(k + d), qd = Eigen::Map<const L>(q + d);
    if constexpr (Decay) ad = Eigen::Map<const L>(a + d), k2d = Eigen::Map<const L>(k2 + d);
    for (int r = 0; r < R; ++r) {
      L x = Eigen::Map<const L>(s[r] + d);
      if constexpr (Update) {
        x = x + kd * u[r];
        dot_q[r] += qd * x;
        if (keep) Eigen::Map<L>(keep[r] + d) = x;
      }
      if constexpr (Decay) {
        x = ad * x;
        dot_k[r] += k2d * x;
      }
      Eigen::Map<L>(s[r] + d) = x;
    }
  }
  for (int r = 0; r < R; ++r)
    for (Index d = body; d < K; ++d) {
      Acc& x = s[r][d];
      if constexpr (Update) {
        x = x + k[d] * u[r];
        dot_q[r](d - body) += q[d] * x;
        if (keep) keep[r][d] = x;
      }
      if constexpr (Decay) {
        x = a[d] * x;
        dot_k[r](d - body) += k2[d] * x;
      }
    }
  for (int r = 0; r < R; ++r) {
    if constexpr (Update) out[r] = lane_sum(dot_q[r]);
    if constexpr (Decay) kS[r] = lane_sum(dot_k[r]);
  }
}

// Rows [j0, j0 + R) of S through every token of the block, while they sit in L1.
template <class Acc, int R>
void run_rows(Eigen::Ref<ValueMajorState<Acc>> S, Index j0, const RowMatrix<Acc>& alpha, const TokenBlock<Acc>& in,
              RowMatrix<Acc>& o, std::vector<ValueMajorState<Acc>>* token_states) {
  const Index K = S.cols(), T = in.tokens();
  Acc* s[R];
  Acc* keep[R];
  Acc kS[R], u[R], out[R];
  for (int r = 0; r < R; ++r) s[r] = S.row(j0 + r).data();
  pass<Acc, R, false, true>(s, K, nullptr, nullptr, nullptr, nullptr, nullptr, alpha.row(0).data(), in.k.row(0).data(), kS);
  for (Index t = 0; t < T; ++t) {
    for (int r = 0; r < R; ++r) u[r] = in.beta(t) * (in.v(t, j0 + r) - kS[r]);
    if (token_states)
      for (int r = 0; r < R; ++r) keep[r] = (*token_states)[static_cast<std::size_t>(t)].row(j0 + r).data();
    const Acc* k = in.k.row(t).data();
    const Acc* q = in.q.row(t).data();
    if (t + 1 < T)
      pass<Acc, R, true, true>(s, K, u, k, q, out, token_states ? keep : nullptr, alpha.row(t + 1).data(),
                               in.k.row(t + 1).data(), kS);
    else
      pass<Acc, R, true, false>(s, K, u, k, q, out, token_states ? keep : nullptr, nullptr, nullptr, nullptr);
    for (int r = 0; r < R; ++r) o(t, j0 + r) = out[r];
  }
}

constexpr int kRows = 4;  // 4 rows x 2 sums: 8 independent chains of additions hide their latency

}  // namespace

void recurrent_block_value_major(Eigen::Ref<ValueMajorState<double>> S, const TokenBlock<double>& in,
                                 RowMatrix<double>& o, std::vector<ValueMajorState<double>>* token_states) {
  const Index V = S.rows(), K = S.cols();
  o.resize(in.tokens(), V);
  if (token_states) token_states->assign(static_cast<std::size_t>(in.tokens()), ValueMajorState<double>(V, K));
  if (in.tokens() == 0) return;
  const RowMatrix<double> alpha = in.g.array().exp().matrix();  // per-channel decay factors, <= 1
  Index j = 0;
  for (; j + kRows <= V; j += kRows) run_rows<double, kRows>(S, j, alpha, in, o, token_states);
  for (; j < V; ++j) run_rows<double, 1>(S, j, alpha, in, o, token_states);
}

}  // namespace kda::ref
