#pragma once
// The chunked (WY) form of KDA (kda-facts §2) for one chunk (internal).
#include <vector>

#include "kda/reference/types.hpp"

namespace kda::ref {

// Advances the state S (K x V, the state at the chunk's start) over one chunk: the block's tokens.
// o receives the outputs (tokens x V); token_states, when given, the state after each token.
template <class Acc>
void chunked_block(Eigen::Ref<State<Acc>> S, const TokenBlock<Acc>& in, RowMatrix<Acc>& o,
                   std::vector<State<Acc>>* token_states);

}  // namespace kda::ref
