#pragma once
// The optional preprocessing of kda-facts §1, in Acc (internal).
#include <cstdint>

#include "kda/problem.hpp"
#include "kda/reference/types.hpp"

namespace kda::ref {

// Fills `block` with tokens [t0, t0 + count) of sequence n, value head hv (GVA: q/k head hv / (HV/H)):
//   q, k: l2norm x / sqrt(sum x^2 + 1e-6) when options.l2norm_qk (in Acc: fp32 for the float run,
//         fp64 for the oracle; FLA computes it in fp32 whatever the input dtype); q then times scale;
//   beta: sigmoid(b), x2 with allow_neg_eigval, when options.beta_from_logits; else as given;
//   g:    with options.gate_in_kernel, x = raw + dt_bias[hv,:] (zeros without dt_bias) and
//           lower bound set:  g = lb * sigmoid(A * x)
//           otherwise:        g = -A * softplus(x), softplus threshold 20,
//         with A = exp(A_log[hv]), or 1 without A_log;
//         else the log decay as given.
template <class Acc>
void load_block(const Problem& p, std::int64_t n, std::int64_t hv, std::int64_t t0, std::int64_t count,
                TokenBlock<Acc>& block);

}  // namespace kda::ref
