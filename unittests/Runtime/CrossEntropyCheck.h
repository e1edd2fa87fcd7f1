//===- CrossEntropyCheck.h - the cross-entropy in float64 -------*- C++ -*-===//
//
// The float64 reference both backends' long-mean tests hold their f32
// cross-entropy to.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_UNITTESTS_RUNTIME_CROSSENTROPYCHECK_H
#define MPC_UNITTESTS_RUNTIME_CROSSENTROPYCHECK_H

#include <cmath>
#include <cstdint>

namespace mpcrt::test {

/// The mean over `rows` rows of log(sum_c exp(x_c)) - x_label, in float64
/// (no label ignored, no smoothing; logits small enough for exp).
inline double meanCrossEntropy(const float *logits, const int32_t *labels,
                               int64_t rows, int64_t classes) {
  double total = 0;
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (int64_t c = 0; c < classes; ++c)
      sum += std::exp(double(logits[r * classes + c]));
    total += std::log(sum) - logits[r * classes + labels[r]];
  }
  return total / rows;
}

} // namespace mpcrt::test

#endif // MPC_UNITTESTS_RUNTIME_CROSSENTROPYCHECK_H
