#pragma once
// The recurrent form of KDA (kda-facts §1), token by token (internal).
#include <vector>

#include "kda/reference/types.hpp"

namespace kda::ref {

// Advances the state S (value-major, V x K) over the block's tokens; per token t:
//   S = Diag(exp(g_t)) S;  S += beta_t k_t (v_t - S^T k_t)^T;  o_t = S^T q_t.
// o receives the outputs (tokens x V); token_states, when given, the state after each token (V x K).
// Sums over the key channel run in a fixed order of 8 partial sums (reference_recurrent.cpp).
template <class Acc>
void recurrent_block(Eigen::Ref<ValueMajorState<Acc>> S, const TokenBlock<Acc>& in, RowMatrix<Acc>& o,
                     std::vector<ValueMajorState<Acc>>* token_states);

}  // namespace kda::ref
