#pragma once
// The CPU reference of KDA: the oracle every kernel is judged against (kda-facts.md §1-2).
// It assumes a problem that passes the contract, reads every input through its strided view and
// computes in Acc: double for the oracle, float to model a kernel computing in fp32.
//
// Two algorithms over the same preprocessed inputs (preprocess.hpp):
//   recurrent  token by token: decay, delta update, output from the updated state;
//   chunked    the WY form over chunks of options.chunk_size tokens, restarting at every sequence.
// Independent (sequence, value head) pairs run in parallel; results do not depend on the thread count.
#include <vector>

#include "kda/problem.hpp"

namespace kda {

enum class Algorithm { recurrent, chunked };

std::string_view name_of(Algorithm a);

// Always fp64 values (an fp32 run is widened), dense row-major.
struct ReferenceOutputs {
  std::vector<double> o;             // [B,T,HV,V]; zero rows for padding sequences and tokens outside any sequence
  std::vector<double> final_state;   // [N,HV,..] in the problem's state layout; zero for padding rows
  std::vector<char> written;         // [N]: 0 for padding rows (state index -1): no state written back
  std::vector<double> chunk_states;  // [total_chunks,HV,..] chunk-start states, when problem.chunk_states is present
  std::vector<double> token_states;  // [B,T,HV,..] state after each token, when problem.token_states is present
                                     // or the problem is a verify call (its states go to the pool or scratch)
};

// threads: worker threads; 0 takes OpenMP's default (OMP_NUM_THREADS, else every core).
// Explicitly instantiated for Acc = double (the oracle) and Acc = float.
template <class Acc>
ReferenceOutputs run_reference(const Problem& problem, Algorithm algorithm, int threads = 0);

// The same into `out`, reusing its storage where a vector already has the size this problem needs:
// a caller judging many problems of one shape (a serving loop, a benchmark) keeps one ReferenceOutputs
// and skips the page faults and zero fill of fresh memory (for a decode on a pool, most of the time).
template <class Acc>
void run_reference(const Problem& problem, Algorithm algorithm, int threads, ReferenceOutputs& out);

// Stores outputs into the problem's own output tensors, rounding to their dtypes: o; the final states
// into final_state (dense) or into the pool in place through state_indices (padding rows leave the pool
// untouched); chunk_states and token_states when present. A verify call stores the state after each
// token t of request n where Problem::token_slot names (pool slot or scratch row; -1: nowhere) and
// leaves everything else alone, the committed pool of the scratch form included. Writes nothing else.
void write_outputs(const ReferenceOutputs& outputs, Problem& problem);

}  // namespace kda
