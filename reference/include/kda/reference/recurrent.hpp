#pragma once
// The recurrent form of KDA (kda-facts §1), token by token (internal).
#include <vector>

#include "kda/reference/types.hpp"

namespace kda::ref {

// Advance a state over the block's tokens; per token t:
//   S = Diag(exp(g_t)) S;  S += beta_t k_t (v_t - S^T k_t)^T;  o_t = S^T q_t.
// o receives the outputs (tokens x V); token_states, when given, the state after each token (in the
// working layout). The two forms differ only in the order of the sums over the key channel:
//   value-major (V x K state; the fp64 oracle): lane sums, term d into partial sum d mod lanes, the
//     partial sums folded in halves: vectorised along the contiguous channel and more accurate;
//   key-major (K x V state; the fp32 run): one running sum in channel order, the order of a kernel's
//     per-thread loop, so that the fp32 run keeps modelling such a kernel's rounding (the tolerance
//     model of a comparison is this run's distance from the oracle).
// Neither depends on the problem's layout, the thread count or how tokens are split across calls.
void recurrent_block_value_major(Eigen::Ref<ValueMajorState<double>> S, const TokenBlock<double>& in,
                                 RowMatrix<double>& o, std::vector<ValueMajorState<double>>* token_states);
void recurrent_block_key_major(Eigen::Ref<State<float>> S, const TokenBlock<float>& in, RowMatrix<float>& o,
                               std::vector<State<float>>* token_states);

}  // namespace kda::ref
