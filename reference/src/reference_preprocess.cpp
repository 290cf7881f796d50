#include "kda/reference/preprocess.hpp"

#include <cmath>

#include "kda/reference/tensor_io.hpp"

namespace kda::ref {

namespace {

template <class Acc>
Acc sigmoid(Acc x) {
  return Acc(1) / (Acc(1) + std::exp(-x));
}

template <class Acc>
Acc softplus(Acc x) {
  return x > Acc(20) ? x : std::log1p(std::exp(x));
}

// Row i of `rows` <- the last dimension of t at (b, first + i, head).
template <class Acc>
void load_rows(const Tensor& t, std::int64_t b, std::int64_t first, std::int64_t head, RowMatrix<Acc>& rows) {
  const View& v = t.view;
  for (Eigen::Index i = 0; i < rows.rows(); ++i)
    load_strided(t, v.element_at({b, first + i, head, 0}), v.stride(3), rows.cols(), rows.row(i).data());
}

template <class Acc>
void l2_normalize_rows(RowMatrix<Acc>& x) {
  for (Eigen::Index i = 0; i < x.rows(); ++i) x.row(i) /= std::sqrt(x.row(i).squaredNorm() + Acc(1e-6));
}

template <class Acc>
void apply_gate(const Problem& p, std::int64_t hv, RowMatrix<Acc>& g) {
  const std::int64_t K = p.K;
  Vector<Acc> bias = Vector<Acc>::Zero(K);
  if (p.dt_bias) load_strided(*p.dt_bias, p.dt_bias->view.element_at({hv * K}), p.dt_bias->view.stride(0), K, bias.data());
  Acc A_log = 0;  // without A_log, A = 1 and A * x is exactly x
  if (p.A_log) load_strided(*p.A_log, p.A_log->view.element_at({hv}), 1, 1, &A_log);
  const Acc A = std::exp(A_log);
  g.rowwise() += bias.transpose();
  if (const auto& lb = p.options.lower_bound)
    g = g.unaryExpr([&](Acc x) { return static_cast<Acc>(*lb) * sigmoid(A * x); });
  else
    g = g.unaryExpr([&](Acc x) { return -A * softplus(x); });
}

}  // namespace

template <class Acc>
void load_block(const Problem& p, std::int64_t n, std::int64_t hv, std::int64_t t0, std::int64_t count,
                TokenBlock<Acc>& block) {
  const Options& op = p.options;
  const std::int64_t b = p.row(n), first = p.first(n) + t0, h = hv / (p.HV / p.H);
  block.q.resize(count, p.K), block.k.resize(count, p.K), block.g.resize(count, p.K);
  block.v.resize(count, p.V), block.beta.resize(count);
  load_rows(p.q, b, first, h, block.q);
  load_rows(p.k, b, first, h, block.k);
  load_rows(p.g, b, first, hv, block.g);
  load_rows(p.v, b, first, hv, block.v);
  load_strided(p.beta, p.beta.view.element_at({b, first, hv}), p.beta.view.stride(1), count, block.beta.data());

  if (op.l2norm_qk) l2_normalize_rows(block.q), l2_normalize_rows(block.k);
  block.q *= static_cast<Acc>(op.scale_for(p.K));
  if (op.beta_from_logits) {
    const Acc factor = op.allow_neg_eigval ? Acc(2) : Acc(1);
    block.beta = block.beta.unaryExpr([&](Acc x) { return factor * sigmoid(x); });
  }
  if (op.gate_in_kernel) apply_gate(p, hv, block.g);
}

template void load_block<float>(const Problem&, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                                TokenBlock<float>&);
template void load_block<double>(const Problem&, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                                 TokenBlock<double>&);

}  // namespace kda::ref
