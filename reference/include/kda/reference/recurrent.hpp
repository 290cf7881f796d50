#pragma once
// The recurrent form of KDA (kda-facts §1), token by token (internal).
#include <vector>

#include "kda/reference/types.hpp"

namespace kda::ref {

// Advances the state S (K x V) over the block's tokens; per token t:
//   S = Diag(exp(g_t)) S;  S += beta_t k_t (v_t - S^T k_t)^T;  o_t = S^T q_t.
// o receives the outputs (tokens x V); token_states, when given, the state after each token.
template <class Acc>
void recurrent_block(State<Acc>& S, const TokenBlock<Acc>& in, RowMatrix<Acc>& o,
                     std::vector<State<Acc>>* token_states);

}  // namespace kda::ref
