#include "kda/reference/chunked.hpp"

#include <algorithm>

#include <Eigen/Dense>

namespace kda::ref {

namespace {

// Aqk and Akk are built in sub-blocks of 16 rows (as FLA does): a pair j < b0 <= i across sub-blocks
// uses exp(Γi - Γj) = exp(Γi - Γb0) * exp(Γb0 - Γj), two factors <= 1, so the cross-block part is a
// matrix product; pairs inside a sub-block take exp(Γi - Γj) directly.
constexpr Eigen::Index kSubBlock = 16;

}  // namespace

// Notation of kda-facts §2, with q already scaled (so no further scale appears), C = tokens in the
// chunk and Γ the inclusive cumulative sum of g over the chunk. Every exponential has the form
// exp(Γi - Γj) with j <= i (or exp(Γi) alone): never a positive exponent, so nothing overflows however
// strong the gates; exp(Γ) and exp(-Γ) are never formed separately.
template <class Acc>
void chunked_block(Eigen::Ref<State<Acc>> S, const TokenBlock<Acc>& in, RowMatrix<Acc>& o,
                   std::vector<State<Acc>>* token_states) {
  using Matrix = RowMatrix<Acc>;
  const Eigen::Index C = in.tokens(), K = S.rows();
  Matrix gamma = in.g;
  for (Eigen::Index i = 1; i < C; ++i) gamma.row(i) += gamma.row(i - 1);
  const Matrix decay = gamma.array().exp().matrix();  // exp(Γ) <= 1

  // Rows j0..i of k_j * exp(Γi - Γj).
  Matrix keys(C, K);
  auto decayed_keys = [&](Eigen::Index i, Eigen::Index j0) {
    // Row by row: Eigen does not vectorize exp over a broadcast (rowwise) expression.
    for (Eigen::Index j = j0; j <= i; ++j)
      keys.row(j) = in.k.row(j).array() * (gamma.row(i) - gamma.row(j)).array().exp();
    return keys.middleRows(j0, i + 1 - j0);
  };

  // Aqk[i,j] = q_i . k_j exp(Γi - Γj) for j <= i;  Akk[i,j] = beta_i k_i . k_j exp(Γi - Γj) for j < i.
  Matrix Aqk = Matrix::Zero(C, C), Akk = Matrix::Zero(C, C);
  for (Eigen::Index b0 = 0; b0 < C; b0 += kSubBlock) {
    const Eigen::Index rows = std::min(kSubBlock, C - b0);
    if (b0 > 0) {
      Matrix to_b0(rows, K), from_b0(b0, K);  // exp(Γi - Γb0) for i in the sub-block; k_j exp(Γb0 - Γj), j < b0
      for (Eigen::Index r = 0; r < rows; ++r) to_b0.row(r) = (gamma.row(b0 + r) - gamma.row(b0)).array().exp();
      for (Eigen::Index j = 0; j < b0; ++j)
        from_b0.row(j) = in.k.row(j).array() * (gamma.row(b0) - gamma.row(j)).array().exp();
      Aqk.block(b0, 0, rows, b0).noalias() =
          (in.q.middleRows(b0, rows).array() * to_b0.array()).matrix() * from_b0.transpose();
      Akk.block(b0, 0, rows, b0).noalias() =
          in.beta.segment(b0, rows).asDiagonal() *
          ((in.k.middleRows(b0, rows).array() * to_b0.array()).matrix() * from_b0.transpose());
    }
    for (Eigen::Index i = b0; i < b0 + rows; ++i) {
      const auto kd = decayed_keys(i, b0);
      Aqk.row(i).segment(b0, i + 1 - b0).noalias() = in.q.row(i) * kd.transpose();
      Akk.row(i).segment(b0, i - b0).noalias() = in.beta(i) * in.k.row(i) * kd.topRows(i - b0).transpose();
    }
  }

  // u = (I + Akk)^-1 (beta v), w = (I + Akk)^-1 (beta k exp(Γ)): forward substitution on the unit
  // lower-triangular I + Akk (UnitLower reads only the strict lower part of Akk and takes 1 on the diagonal).
  Matrix u = in.beta.asDiagonal() * in.v;
  Matrix w = in.beta.asDiagonal() * (in.k.array() * decay.array()).matrix();
  Akk.template triangularView<Eigen::UnitLower>().solveInPlace(u);
  Akk.template triangularView<Eigen::UnitLower>().solveInPlace(w);

  Matrix v_new = u;
  v_new.noalias() -= w * S;
  o.noalias() = (in.q.array() * decay.array()).matrix() * S;
  o.noalias() += Aqk.template triangularView<Eigen::Lower>() * v_new;

  // The state after token i: Diag(exp(Γi)) S + sum_{j<=i} (k_j exp(Γi - Γj))^T v_new_j; the chunk's
  // last token gives the next chunk's start state (kg = k exp(Γ_last - Γ)).
  auto state_after = [&](Eigen::Index i) {
    State<Acc> next = decay.row(i).transpose().asDiagonal() * S;
    next.noalias() += decayed_keys(i, 0).transpose() * v_new.topRows(i + 1);
    return next;
  };
  if (token_states) {
    token_states->resize(static_cast<std::size_t>(C));
    for (Eigen::Index i = 0; i < C; ++i) (*token_states)[static_cast<std::size_t>(i)] = state_after(i);
  }
  S = state_after(C - 1);
}

template void chunked_block<float>(Eigen::Ref<State<float>>, const TokenBlock<float>&, RowMatrix<float>&,
                                   std::vector<State<float>>*);
template void chunked_block<double>(Eigen::Ref<State<double>>, const TokenBlock<double>&, RowMatrix<double>&,
                                    std::vector<State<double>>*);

}  // namespace kda::ref
