#pragma once
// Working types of the CPU reference (internal): Eigen matrices in the accumulation type Acc.
#include <Eigen/Core>

namespace kda::ref {

template <class Acc>
using RowMatrix = Eigen::Matrix<Acc, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class Acc>
using Vector = Eigen::Matrix<Acc, Eigen::Dynamic, 1>;

// The chunked form's working state of one value head, whatever the problem's layout: K x V, row d is
// key channel d (the [K,V] layout). Conversions happen only where states are read or written (tensor_io.hpp).
template <class Acc>
using State = RowMatrix<Acc>;

// The recurrent form's working state: V x K, row j = value column j over the key channels (the [V,K]
// layout), so each column's sums over key channels read contiguous memory and need no transpose.
template <class Acc>
using ValueMajorState = RowMatrix<Acc>;

// Preprocessed inputs of consecutive tokens of one sequence and one value head (kda-facts §1).
template <class Acc>
struct TokenBlock {
  RowMatrix<Acc> q;  // tokens x K: l2-normalised when asked, then times scale
  RowMatrix<Acc> k;  // tokens x K: l2-normalised when asked
  RowMatrix<Acc> g;  // tokens x K: log decay (natural log), gate already applied
  RowMatrix<Acc> v;  // tokens x V
  Vector<Acc> beta;  // tokens
  Eigen::Index tokens() const { return v.rows(); }
};

}  // namespace kda::ref
