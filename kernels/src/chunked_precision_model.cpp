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
#include "kda/reference_kernel.hpp"

namespace kda::kernels {

namespace {

using Matrix = ref::RowMatrix<double>;

// To 11 significant bits, truncated toward zero (a tf32 operand as the tensor core reads it; the fp32
// exponent range is never left here).
double tf32_truncated(double x) {
  if (x == 0 || !std::isfinite(x)) return x;
  int e = 0;
  const double m = std::frexp(x, &e);  // |m| in [0.5, 1)
  return std::ldexp(std::trunc(std::ldexp(m, 11)), e - 11);
}
// To 11 significant bits, to nearest (a tf32 operand converted from fp32 by cvt.rna, as Triton and cuBLAS do).
double tf32_nearest(double x) {
  if (x == 0 || !std::isfinite(x)) return x;
  int e = 0;
  const double m = std::frexp(x, &e);
  return std::ldexp(std::round(std::ldexp(m, 11)), e - 11);
}
double bf16(double x) { return round_to(DType::bf16, x); }
double fp16(double x) { return round_to(DType::f16, x); }

// Where a model rounds: `operand` takes every value a product reads or a kernel stores between its
// stages; anchored_tf32 makes the off-diagonal sub-blocks of Aqk and Akk products of truncated tf32
// factors, as our tensor-core kernel computes them (a declared arithmetic forms them element-wise).
struct Rounding {
  double (*operand)(double);
  bool anchored_tf32 = false;
};
Matrix rounded(const Matrix& m, const Rounding& r) { return m.unaryExpr(r.operand); }
Matrix tf32(const Matrix& m) { return m.unaryExpr([](double x) { return tf32_truncated(x); }); }

// One chunk of C <= 64 tokens: advances S (K x V) and writes the chunk's outputs (C x V) into o and,
// given `token_states`, the state after each of its tokens (C of them, K x V).
void chunk(Matrix& S, const ref::TokenBlock<double>& in, const Rounding& rounding, Matrix& o,
           std::vector<Matrix>* token_states) {
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
      if (!rounding.anchored_tf32 || j >= h) {  // element-wise (our kernel: the half's triangle only)
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
  // u = T (beta v), w = T (beta k exp(Γ)) with T = (I + Akk)^-1: T and the right-hand sides are rounded
  // operands of the products. T by 16-row blocks: the diagonal blocks' inverses rounded, then each
  // block below them from rounded operands, P_IJ = op(sum_M op(Akk_IM) T_MJ) and T_IJ = op(-(T_II P_IJ))
  // (the tensor-core levels of our stage A's step 6; FLA's solve_tril merges 16-row blocks alike).
  const Eigen::Index blocks = (C + kSubBlock - 1) / kSubBlock;
  const auto rows = [&](Eigen::Index b) { return std::min<Eigen::Index>(kSubBlock, C - kSubBlock * b); };
  const auto block = [&](Matrix& m, Eigen::Index I, Eigen::Index J) {
    return m.block(kSubBlock * I, kSubBlock * J, rows(I), rows(J));
  };
  Matrix T = Matrix::Zero(C, C);
  const Matrix Akk_h = rounded(Akk, rounding);
  for (Eigen::Index b = 0; b < blocks; ++b) {
    Matrix D = Matrix::Identity(rows(b), rows(b));
    Matrix(block(Akk, b, b)).triangularView<Eigen::UnitLower>().solveInPlace(D);
    block(T, b, b) = rounded(D, rounding);
  }
  for (Eigen::Index J = 0; J < blocks; ++J)
    for (Eigen::Index I = J + 1; I < blocks; ++I) {
      Matrix P = Matrix::Zero(rows(I), rows(J));
      for (Eigen::Index M = J; M < I; ++M) P += Matrix(Akk_h.block(kSubBlock * I, kSubBlock * M, rows(I), rows(M))) * block(T, M, J);
      block(T, I, J) = rounded(Matrix(-(block(T, I, I) * rounded(P, rounding))), rounding);
    }
  const Matrix u = rounded(Matrix(T * rounded(Matrix(in.beta.asDiagonal() * in.v), rounding)), rounding);
  const Matrix w =
      rounded(Matrix(T * rounded(Matrix(in.beta.asDiagonal() * (in.k.array() * eg.array()).matrix()), rounding)), rounding);
  kg = rounded(kg, rounding), Aqk = rounded(Aqk, rounding);
  const Matrix qg = rounded(Matrix(in.q.array() * eg.array()), rounding);

  const Matrix St = rounded(S, rounding);
  const Matrix v_new = rounded(Matrix(u - w * St), rounding);
  o = qg * St + Aqk * v_new;
  if (token_states) {  // after token i: Diag(exp(Γi)) S + sum_{j <= i} (k_j exp(Γi - Γj))^T v_new_j
    token_states->resize(static_cast<std::size_t>(C));
    for (Eigen::Index i = 0; i < C; ++i) {
      Matrix Si = eg.row(i).transpose().asDiagonal() * S;
      for (Eigen::Index j = 0; j <= i; ++j)
        Si += Matrix((in.k.row(j).array() * decay(i, j)).matrix()).transpose() * v_new.row(j);
      (*token_states)[static_cast<std::size_t>(i)] = std::move(Si);
    }
  }
  S = eg.row(C - 1).transpose().asDiagonal() * S;
  S += kg.transpose() * v_new;
}

// Every output the call asks for, in the reference's dense layout; write_outputs stores them as the
// reference's are stored (pools in place, a verify call's states where its form names).
ReferenceOutputs run(const Problem& p, const Rounding& r) {
  const std::int64_t KV = p.K * p.V, HV = p.HV, V = p.V, C = p.options.chunk_size > 0 ? p.options.chunk_size : kChunk;
  const StateLayout layout = p.options.state_layout;
  const bool per_token = p.token_states || p.mode == Mode::verify;
  ReferenceOutputs out;
  out.o.assign(static_cast<std::size_t>(p.B * p.T * HV * V), 0.0);
  out.final_state.assign(static_cast<std::size_t>(p.N * HV * KV), 0.0);
  out.written.assign(static_cast<std::size_t>(p.N), 1);
  if (p.chunk_states) out.chunk_states.assign(static_cast<std::size_t>(p.total_chunks() * HV * KV), 0.0);
  if (per_token) out.token_states.assign(static_cast<std::size_t>(p.B * p.T * HV * KV), 0.0);
  ref::TokenBlock<double> block;
  Matrix o;
  std::vector<Matrix> token_states;
  for (std::int64_t n = 0, first_chunk = 0; n < p.N; first_chunk += p.chunks(n), ++n) {
    const std::int64_t slot = p.state_pool ? p.initial_slot(n) : n;
    if (slot < 0) {  // a padding row: zero output, nothing read or written
      out.written[static_cast<std::size_t>(n)] = 0;
      continue;
    }
    for (std::int64_t hv = 0; hv < HV; ++hv) {
      Matrix S = p.state_pool     ? ref::load_state<double>(*p.state_pool, slot, hv, layout)
                 : p.initial_state ? ref::load_state<double>(*p.initial_state, n, hv, layout)
                                   : Matrix::Zero(p.K, p.V);
      for (std::int64_t c = 0; c * C < p.length(n); ++c) {
        const std::int64_t t0 = c * C, tokens = std::min<std::int64_t>(C, p.length(n) - t0);
        if (p.chunk_states) ref::store_state(S, layout, &out.chunk_states[static_cast<std::size_t>(((first_chunk + c) * HV + hv) * KV)]);
        ref::load_block(p, n, hv, t0, tokens, block);
        chunk(S, block, r, o, per_token ? &token_states : nullptr);
        for (std::int64_t i = 0; i < tokens; ++i) {
          const std::int64_t at = (p.row(n) * p.T + p.first(n) + t0 + i) * HV + hv;
          for (std::int64_t j = 0; j < V; ++j) out.o[static_cast<std::size_t>(at * V + j)] = o(i, j);
          if (per_token) ref::store_state(token_states[static_cast<std::size_t>(i)], layout, &out.token_states[static_cast<std::size_t>(at * KV)]);
        }
      }
      ref::store_state(S, layout, &out.final_state[static_cast<std::size_t>((n * HV + hv) * KV)]);
    }
  }
  return out;
}

// Our chunked tensor-core kernel's model (its capabilities, the strict profile), or a declared
// arithmetic's (any case, the kernel's own profile).
class ChunkedPrecisionModel final : public Kernel {
 public:
  ChunkedPrecisionModel(std::string name, Rounding rounding, const Profile& profile, bool own_kernel)
      : name_(std::move(name)), rounding_(rounding), profile_(profile), own_kernel_(own_kernel) {}
  std::string name() const override { return name_; }
  const Capabilities& capabilities() const override { return own_kernel_ ? chunked_capabilities() : any_; }
  const Profile& profile() const override { return profile_; }

  RunOutcome run(Problem& problem) override {
    if (own_kernel_) {
      if (RunOutcome admitted = admit_chunked(problem, name()); admitted.status != RunOutcome::Status::ok)
        return admitted;
    } else if (auto violations = validate(problem, profile_); !violations.empty()) {
      return RunOutcome::rejected(std::move(violations));
    }
    write_outputs(kernels::run(problem, rounding_), problem);
    return RunOutcome::ok();
  }

 private:
  std::string name_;
  Rounding rounding_;
  const Profile& profile_;
  bool own_kernel_;
  Capabilities any_;
};

}  // namespace

std::unique_ptr<Kernel> make_chunked_precision_model() {
  return std::make_unique<ChunkedPrecisionModel>("model-chunked-fp16", Rounding{fp16, true}, profile_strict(), true);
}

std::string declared_arithmetic_model_name(Arithmetic arithmetic) {
  return arithmetic == Arithmetic::fp32 ? "ref-fp32" : "model-chunked-" + std::string(name_of(arithmetic));
}

std::unique_ptr<Kernel> make_declared_arithmetic_model(Arithmetic arithmetic, const Profile& profile) {
  if (arithmetic == Arithmetic::fp32) return make_reference_kernel(Precision::fp32, Algorithm::recurrent, profile);
  const Rounding rounding{arithmetic == Arithmetic::tf32            ? tf32_nearest
                          : arithmetic == Arithmetic::bf16_operands ? bf16
                                                                    : fp16};
  return std::make_unique<ChunkedPrecisionModel>(declared_arithmetic_model_name(arithmetic), rounding, profile, false);
}

}  // namespace kda::kernels
