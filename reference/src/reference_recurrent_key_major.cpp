// The key-major recurrent form (recurrent.hpp): running sums over the key channel in order.
#include "kda/reference/recurrent.hpp"

#include <algorithm>

namespace kda::ref {

namespace {

// Value columns never interact in the recurrence (decay and update act per key channel, the sums
// run over key channels), so the state is processed in strips of columns, each carried through every
// token of the block while it sits in L1. Two passes per token over the strip: decay fused with S^T k,
// then the rank-1 update fused with S^T q. Sums run over the key channel in order, so the result does
// not depend on the strip width.
constexpr Eigen::Index kStripBytes = 128;

template <class Acc, class Row>
void run_strip(Eigen::Ref<State<Acc>> S, Eigen::Index j0, Eigen::Index width, const RowMatrix<Acc>& alpha,
               const TokenBlock<Acc>& in, RowMatrix<Acc>& o, std::vector<State<Acc>>* token_states) {
  const Eigen::Index K = S.rows();
  // Contiguous copy: rows of S lie V elements apart, a stride that maps them onto few L1 sets.
  RowMatrix<Acc> strip = S.middleCols(j0, width);
  for (Eigen::Index t = 0; t < in.tokens(); ++t) {
    const Acc* a = alpha.row(t).data();
    const Acc* k = in.k.row(t).data();
    const Acc* q = in.q.row(t).data();
    Row kS = Row::Zero(width);  // S^T k_t after the decay
    for (Eigen::Index d = 0; d < K; ++d) {
      Eigen::Map<Row> s(strip.row(d).data(), width);
      const Row decayed = a[d] * s;
      s = decayed;
      kS += k[d] * decayed;
    }
    const Row u = in.beta(t) * (in.v.row(t).segment(j0, width).transpose().array() - kS);
    Row out = Row::Zero(width);  // S^T q_t after the update
    for (Eigen::Index d = 0; d < K; ++d) {
      Eigen::Map<Row> s(strip.row(d).data(), width);
      const Row updated = s + k[d] * u;
      s = updated;
      out += q[d] * updated;
    }
    o.row(t).segment(j0, width) = out.matrix().transpose();
    if (token_states) (*token_states)[static_cast<std::size_t>(t)].middleCols(j0, width) = strip;
  }
  S.middleCols(j0, width) = strip;
}

}  // namespace

void recurrent_block_key_major(Eigen::Ref<State<float>> S, const TokenBlock<float>& in, RowMatrix<float>& o,
                               std::vector<State<float>>* token_states) {
  using Acc = float;
  constexpr Eigen::Index W = kStripBytes / static_cast<Eigen::Index>(sizeof(Acc));
  using FullRow = Eigen::Array<Acc, W, 1>;
  using TailRow = Eigen::Array<Acc, Eigen::Dynamic, 1, 0, W, 1>;
  const Eigen::Index V = S.cols();
  const RowMatrix<Acc> alpha = in.g.array().exp().matrix();  // per-channel decay factors, <= 1
  o.resize(in.tokens(), V);
  if (token_states) token_states->assign(static_cast<std::size_t>(in.tokens()), State<Acc>(S.rows(), V));
  for (Eigen::Index j0 = 0; j0 < V; j0 += W) {
    const Eigen::Index width = std::min(W, V - j0);
    if (width == W)
      run_strip<Acc, FullRow>(S, j0, width, alpha, in, o, token_states);
    else
      run_strip<Acc, TailRow>(S, j0, width, alpha, in, o, token_states);
  }
}

}  // namespace kda::ref
