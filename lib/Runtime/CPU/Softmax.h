//===- Softmax.h - softmax rows ---------------------------------*- C++ -*-===//
//
// The reference arithmetic of mpc.softmax, shared by mpc.softmax_dropout
// and its backward, so that their probabilities are the softmax's bit for
// bit: one row's maximum and sum, then each element's shifted value and
// probability.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_LIB_RUNTIME_CPU_SOFTMAX_H
#define MPC_LIB_RUNTIME_CPU_SOFTMAX_H

#include "Storage.h"

#include <cmath>
#include <cstdint>
#include <limits>

namespace mpcrt {

/// One row of softmax(s * in) in A: the row maximum is subtracted first,
/// so exp never overflows.
template <typename A, typename T> struct SoftmaxRow {
  const T *in;
  A s, max, sum;

  SoftmaxRow(const T *in, int64_t cols, A s) : in(in), s(s) {
    max = -std::numeric_limits<A>::infinity();
    for (int64_t c = 0; c < cols; ++c)
      max = std::fmax(max, s * A(Storage<T>::load(in[c])));
    sum = 0;
    for (int64_t c = 0; c < cols; ++c)
      sum += std::exp(shifted(c));
  }
  /// s * in[c] - max.
  A shifted(int64_t c) const { return s * A(Storage<T>::load(in[c])) - max; }
  A probability(int64_t c) const { return std::exp(shifted(c)) / sum; }
};

} // namespace mpcrt

#endif // MPC_LIB_RUNTIME_CPU_SOFTMAX_H
