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

// One head's state from a [lead, HV, ..] tensor (dense initial states: lead = sequence; pool: lead = slot),
// K x V (State) or V x K (ValueMajorState); `into` has that size already.
template <class Acc>
State<Acc> load_state(const Tensor& t, std::int64_t lead, std::int64_t hv, StateLayout layout);
template <class Acc>
void load_state(const Tensor& t, std::int64_t lead, std::int64_t hv, StateLayout layout, Eigen::Ref<State<Acc>> into);
template <class Acc>
void load_value_major_state(const Tensor& t, std::int64_t lead, std::int64_t hv, StateLayout layout,
                            Eigen::Ref<ValueMajorState<Acc>> into);

// An a x b working matrix into a dense fp64 array, as is or transposed (b x a).
template <class Acc>
void store_head(Eigen::Ref<const RowMatrix<Acc>> s, bool transpose, double* dst);

// Stores a working state (a matrix or a map of one) into one head of a dense array in the given layout
// ([V,K] or [K,V]).
template <class Derived>
void store_state(const Eigen::MatrixBase<Derived>& s, StateLayout layout, double* dst) {
  store_head<typename Derived::Scalar>(s, layout == StateLayout::vk, dst);
}
template <class Derived>
void store_value_major_state(const Eigen::MatrixBase<Derived>& s, StateLayout layout, double* dst) {
  store_head<typename Derived::Scalar>(s, layout == StateLayout::kv, dst);
}

}  // namespace kda::ref
