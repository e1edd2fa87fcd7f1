//===- Numerics.cpp - numerics checks on the CPU reference ----------------===//
//
// The oracle of the CUDA kernels: the same records (mpcrt.h) from plain
// loops.
//
//===----------------------------------------------------------------------===//

#include "Storage.h"
#include "mpc/Runtime/mpcrt.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

using namespace mpcrt;

namespace {

template <typename T>
void check(const T *input, int64_t n, int64_t index, int32_t *first,
           float *amax, int64_t *counts) {
  double largest = 0;
  int64_t nonfinite = 0, belowNormal = 0, belowSubnormal = 0;
  for (int64_t i = 0; i < n; ++i) {
    double v = std::fabs(static_cast<double>(Storage<T>::load(input[i])));
    if (!std::isfinite(v)) {
      ++nonfinite;
      continue;
    }
    largest = std::max(largest, v);
    if (v != 0 && v < 0x1p-14)
      ++belowNormal;
    if (v != 0 && v < 0x1p-24)
      ++belowSubnormal;
  }
  // Rounded up to f32, so that the recorded range never understates.
  float a = static_cast<float>(largest);
  if (static_cast<double>(a) < largest)
    a = std::nextafter(a, INFINITY);
  amax[2 * index] = std::max(amax[2 * index], a);
  amax[2 * index + 1] = std::max(amax[2 * index + 1], a);
  counts[4 * index] += nonfinite;
  counts[4 * index + 1] += belowNormal;
  counts[4 * index + 2] += belowSubnormal;
  counts[4 * index + 3] += n;
  if (nonfinite && index < *first)
    *first = static_cast<int32_t>(index);
}

} // namespace

extern "C" {

void mpcrt_numerics_begin(int32_t *first, float *amax, int64_t count) {
  *first = static_cast<int32_t>(count);
  for (int64_t i = 0; i < count; ++i)
    amax[2 * i] = 0;
}

void mpcrt_check_numerics(int64_t num_tensors, const mpcrt_dtype *dtypes,
                          const void *const *inputs, const int64_t *sizes,
                          const int64_t *indices, int32_t *first, float *amax,
                          int64_t *counts) {
  for (int64_t t = 0; t < num_tensors; ++t)
    dispatch(dtypes[t], [&](auto *type) {
      using T = std::remove_pointer_t<decltype(type)>;
      check(static_cast<const T *>(inputs[t]), sizes[t], indices[t], first,
            amax, counts);
    });
}

void mpcrt_numerics_end(const int32_t *first, int64_t count,
                        const int64_t *step, int64_t *events, const float *amax,
                        float *event_amax) {
  if (*first >= count)
    return;
  int64_t slot = 2 + 2 * (events[0] % 16);
  events[slot] = *step;
  events[slot + 1] = *first;
  ++events[0];
  for (int64_t i = 0; i < count; ++i)
    event_amax[i] = amax[2 * i];
}

} // extern "C"
