#include "kda/kernels/chunked_precision_model.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include <Eigen/Dense>

#include "kda/dtype.hpp"
#include "kda/kernels/chunked_params.hpp"
#include "kda/reference.hpp"
#include "kda/reference/preprocess.hpp"
#include "kda/reference/tensor_io.hpp"

namespace kda::kernels {

namespace {

using Matrix = ref::RowMatrix<double>;

// To 11 significant bits, truncated toward zero (a tf32 operand as the tensor core reads it; the fp32
// exponent range is never left here).
double tf32(double x) {
  if (x == 0 || !std::isfinite(x)) return x;
  int e = 0;
  const double m = std::frexp(x, &e);  // |m| in [0.5, 1)
  return std::ldexp(std::trunc(std::ldexp(m, 11)), e - 11);
}
Matrix tf32(const Matrix& m) { return m.unaryExpr([](double x) { return tf32(x); }); }
Matrix fp16(const Matrix& m) { return m.unaryExpr([](double x) { return round_to(DType::f16, x); }); }

// One chunk of C <= 64 tokens: advances S (K x V) and writes the chunk's outputs (C x V) into o.
void chunk(Matrix& S, const ref::TokenBlock<double>& in, Matrix& o) {
  const Eigen::Index C = in.tokens(), K = S.rows();
  Matrix gamma = in.g;
  for (Eigen::Index i = 1; i < C; ++i) gamma.row(i) += gamma.row(i - 1);
  auto decay = [&](Eigen::Index i, Eigen::Index j) {  // exp(Γi - Γj) per channel, j <= i
    return (gamma.row(i) - gamma.row(j)).array().exp();
  };
  Matrix Aqk = Matrix::Zero(C, C), Akk = Matrix::Zero(C, C);
  for (Eigen::Index i = 0; i < C; ++i) {
    // The row's 8-row half starts at h, its 16-row sub-block at s: columns j >= h are element-wise, the
    // others a tensor-core product anchored at h (the sub-block's quadrant, j >= s) or at s (j < s).
    const Eigen::Index h = i / (kSubBlock / 2) * (kSubBlock / 2), s = i / kSubBlock * kSubBlock;
    for (Eigen::Index j = 0; j <= i; ++j) {
      double qk = 0, kk = 0;
      const Eigen::Index r = j >= s ? h : s;
      if (j >= h) {  // the half's triangle: element-wise
        const auto kd = (in.k.row(j).array() * decay(i, j)).matrix();
        qk = in.q.row(i).dot(kd), kk = in.k.row(i).dot(kd);
      } else {  // anchored at r: both factors tf32 operands
        const Matrix kj = tf32(Matrix(in.k.row(j).array() * decay(r, j)));
        qk = tf32(Matrix(in.q.row(i).array() * decay(i, r))).row(0).dot(kj.row(0));
        kk = tf32(Matrix(in.k.row(i).array() * decay(i, r))).row(0).dot(kj.row(0));
      }
      Aqk(i, j) = qk;
      if (j < i) Akk(i, j) = in.beta(i) * kk;
    }
  }
  Matrix eg(C, K), kg(C, K);
  for (Eigen::Index i = 0; i < C; ++i) {
    eg.row(i) = gamma.row(i).array().exp();
    kg.row(i) = in.k.row(i).array() * decay(C - 1, i);
  }
  // u = T (beta v), w = T (beta k exp(Γ)) with T = (I + Akk)^-1: T and the right-hand sides are fp16
  // operands of the products. T by 16-row blocks: the diagonal blocks' inverses rounded to fp16, then
  // each block below them from fp16 operands, P_IJ = fp16(sum_M fp16(Akk_IM) T_MJ) and
  // T_IJ = fp16(-(T_II P_IJ)) (the tensor-core levels of stage A's step 6).
  const Eigen::Index blocks = (C + kSubBlock - 1) / kSubBlock;
  const auto rows = [&](Eigen::Index b) { return std::min<Eigen::Index>(kSubBlock, C - kSubBlock * b); };
  const auto block = [&](Matrix& m, Eigen::Index I, Eigen::Index J) {
    return m.block(kSubBlock * I, kSubBlock * J, rows(I), rows(J));
  };
  Matrix T = Matrix::Zero(C, C);
  const Matrix Akk_h = fp16(Akk);
  for (Eigen::Index b = 0; b < blocks; ++b) {
    Matrix D = Matrix::Identity(rows(b), rows(b));
    Matrix(block(Akk, b, b)).triangularView<Eigen::UnitLower>().solveInPlace(D);
    block(T, b, b) = fp16(D);
  }
  for (Eigen::Index J = 0; J < blocks; ++J)
    for (Eigen::Index I = J + 1; I < blocks; ++I) {
      Matrix P = Matrix::Zero(rows(I), rows(J));
      for (Eigen::Index M = J; M < I; ++M) P += Matrix(Akk_h.block(kSubBlock * I, kSubBlock * M, rows(I), rows(M))) * block(T, M, J);
      block(T, I, J) = fp16(Matrix(-(block(T, I, I) * fp16(P))));
    }
  const Matrix u = fp16(Matrix(T * fp16(Matrix(in.beta.asDiagonal() * in.v))));
  const Matrix w = fp16(Matrix(T * fp16(Matrix(in.beta.asDiagonal() * (in.k.array() * eg.array()).matrix()))));
  kg = fp16(kg), Aqk = fp16(Aqk);
  const Matrix qg = fp16(Matrix(in.q.array() * eg.array()));

  const Matrix St = fp16(S);
  const Matrix v_new = fp16(Matrix(u - w * St));
  o = qg * St + Aqk * v_new;
  S = eg.row(C - 1).transpose().asDiagonal() * S;
  S += kg.transpose() * v_new;
}

ReferenceOutputs run(const Problem& p) {
  const std::int64_t KV = p.K * p.V, HV = p.HV, V = p.V;
  const StateLayout layout = p.options.state_layout;
  ReferenceOutputs out;
  out.o.assign(static_cast<std::size_t>(p.B * p.T * HV * V), 0.0);
  out.final_state.assign(static_cast<std::size_t>(p.N * HV * KV), 0.0);
  out.written.assign(static_cast<std::size_t>(p.N), 1);
  if (p.chunk_states) out.chunk_states.assign(static_cast<std::size_t>(p.total_chunks() * HV * KV), 0.0);
  ref::TokenBlock<double> block;
  Matrix o;
  for (std::int64_t n = 0, first_chunk = 0; n < p.N; first_chunk += p.chunks(n), ++n) {
    if (p.state_pool && p.state_indices->integer_at(n) < 0) {
      out.written[static_cast<std::size_t>(n)] = 0;
      continue;
    }
    for (std::int64_t hv = 0; hv < HV; ++hv) {
      Matrix S = p.state_pool     ? ref::load_state<double>(*p.state_pool, p.state_indices->integer_at(n), hv, layout)
                 : p.initial_state ? ref::load_state<double>(*p.initial_state, n, hv, layout)
                                   : Matrix::Zero(p.K, p.V);
      for (std::int64_t c = 0; c * kChunk < p.length(n); ++c) {
        const std::int64_t t0 = c * kChunk, tokens = std::min<std::int64_t>(kChunk, p.length(n) - t0);
        if (p.chunk_states) ref::store_state(S, layout, &out.chunk_states[static_cast<std::size_t>(((first_chunk + c) * HV + hv) * KV)]);
        ref::load_block(p, n, hv, t0, tokens, block);
        chunk(S, block, o);
        for (std::int64_t i = 0; i < tokens; ++i) {
          const std::int64_t at = (p.row(n) * p.T + p.first(n) + t0 + i) * HV + hv;
          for (std::int64_t j = 0; j < V; ++j) out.o[static_cast<std::size_t>(at * V + j)] = o(i, j);
        }
      }
      ref::store_state(S, layout, &out.final_state[static_cast<std::size_t>((n * HV + hv) * KV)]);
    }
  }
  return out;
}

class ChunkedPrecisionModel final : public Kernel {
 public:
  std::string name() const override { return "model-chunked-fp16"; }
  const Capabilities& capabilities() const override { return chunked_capabilities(); }
  const Profile& profile() const override { return profile_strict(); }

  RunOutcome run(Problem& problem) override {
    if (RunOutcome admitted = admit_chunked(problem, name()); admitted.status != RunOutcome::Status::ok)
      return admitted;
    write_outputs(kernels::run(problem), problem);
    return RunOutcome::ok();
  }
};

}  // namespace

std::unique_ptr<Kernel> make_chunked_precision_model() { return std::make_unique<ChunkedPrecisionModel>(); }

}  // namespace kda::kernels
