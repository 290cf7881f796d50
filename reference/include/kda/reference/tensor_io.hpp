#pragma once
// Reading tensors into the reference's working types and writing states back (internal). Every read
// goes through the tensor's view (offset and strides), never assuming contiguity.
#include <cstdint>

#include "kda/problem.hpp"
#include "kda/reference/types.hpp"

namespace kda::ref {

// dst[i] = t's element (element + i * stride), widened or rounded to Acc, for i < count.
template <class Acc>
void load_strided(const Tensor& t, std::int64_t element, std::int64_t stride, std::int64_t count, Acc* dst);

// One head's state from a [lead, HV, ..] tensor (dense initial states: lead = sequence; pool: lead = slot).
template <class Acc>
State<Acc> load_state(const Tensor& t, std::int64_t lead, std::int64_t hv, StateLayout layout);

// Stores a working state into one head of a dense array in the given layout ([V,K] or [K,V]).
template <class Acc>
void store_state(const State<Acc>& s, StateLayout layout, double* dst);

}  // namespace kda::ref
