//===- Numerics.cu - numerics checks on the device ------------------------===//
//
// The records of --mpc-check-numerics (mpcrt.h), kept on the device with
// atomics: no step reads them back, and all of it can be captured in a
// CUDA Graph.
//
//===----------------------------------------------------------------------===//

#include "Device.cuh"

namespace mpcrt::cuda {

namespace {

__global__ void numericsBeginKernel(int32_t *first, float *amax,
                                    int64_t count) {
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i == 0)
    *first = static_cast<int32_t>(count);
  for (; i < count; i += int64_t(gridDim.x) * blockDim.x)
    amax[2 * i] = 0;
}

/// |v| as f32, rounded up (an f64 range is never understated).
__device__ inline float magnitude(double v) {
  return __double2float_ru(fabs(v));
}
__device__ inline float magnitude(float v) { return fabsf(v); }

template <typename T>
__global__ void checkKernel(const T *input, int64_t n, int64_t index,
                            int32_t *first, float *amax,
                            unsigned long long *counts) {
  using S = Storage<T>;
  float largest = 0;
  unsigned nonfinite = 0, belowNormal = 0, belowSubnormal = 0;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    auto v = S::load(input[i]);
    if (!isfinite(v)) {
      ++nonfinite;
      continue;
    }
    float a = magnitude(v);
    largest = fmaxf(largest, a);
    double d = fabs(static_cast<double>(v));
    belowNormal += d != 0 && d < 0x1p-14;
    belowSubnormal += d != 0 && d < 0x1p-24;
  }
  __shared__ int blockLargest;
  __shared__ unsigned blockCounts[3];
  if (threadIdx.x == 0) {
    blockLargest = 0;
    blockCounts[0] = blockCounts[1] = blockCounts[2] = 0;
  }
  __syncthreads();
  // Non-negative floats order as their bit patterns.
  atomicMax(&blockLargest, __float_as_int(largest));
  if (nonfinite)
    atomicAdd(&blockCounts[0], nonfinite);
  if (belowNormal)
    atomicAdd(&blockCounts[1], belowNormal);
  if (belowSubnormal)
    atomicAdd(&blockCounts[2], belowSubnormal);
  __syncthreads();
  if (threadIdx.x == 0) {
    atomicMax(reinterpret_cast<int *>(&amax[2 * index]), blockLargest);
    atomicMax(reinterpret_cast<int *>(&amax[2 * index + 1]), blockLargest);
    for (int c = 0; c < 3; ++c)
      if (blockCounts[c])
        atomicAdd(&counts[4 * index + c],
                  static_cast<unsigned long long>(blockCounts[c]));
    if (blockIdx.x == 0)
      atomicAdd(&counts[4 * index + 3], static_cast<unsigned long long>(n));
    if (blockCounts[0])
      atomicMin(first, static_cast<int32_t>(index));
  }
}

__global__ void numericsEndKernel(const int32_t *first, int64_t count,
                                  const int64_t *step, int64_t *events,
                                  const float *amax, float *eventAmax) {
  if (*first >= count)
    return;
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i == 0) {
    int64_t slot = 2 + 2 * (events[0] % 16);
    events[slot] = *step;
    events[slot + 1] = *first;
  }
  for (int64_t j = i; j < count; j += int64_t(gridDim.x) * blockDim.x)
    eventAmax[j] = amax[2 * j];
}

__global__ void numericsCountKernel(const int32_t *first, int64_t count,
                                    int64_t *events) {
  if (*first < count)
    ++events[0];
}

} // namespace

void numericsBegin(int32_t *first, float *amax, int64_t count) {
  numericsBeginKernel<<<blocksFor(count), kThreads, 0, stream()>>>(first, amax,
                                                                   count);
  MPCRT_CUDA_LAUNCHED("numerics_begin");
}

void checkNumerics(mpcrt_dtype dtype, const void *input, int64_t n,
                   int64_t index, int32_t *first, float *amax,
                   int64_t *counts) {
  dispatch(dtype, [&](auto *t) {
    using T = MPCRT_TYPE(t);
    checkKernel<T><<<blocksFor(n), kThreads, 0, stream()>>>(
        static_cast<const T *>(input), n, index, first, amax,
        reinterpret_cast<unsigned long long *>(counts));
  });
  MPCRT_CUDA_LAUNCHED("check_numerics");
}

void numericsEnd(const int32_t *first, int64_t count, const int64_t *step,
                 int64_t *events, const float *amax, float *eventAmax) {
  // The ring entry and the ranges first, then the count (its slot).
  numericsEndKernel<<<blocksFor(count), kThreads, 0, stream()>>>(
      first, count, step, events, amax, eventAmax);
  numericsCountKernel<<<1, 1, 0, stream()>>>(first, count, events);
  MPCRT_CUDA_LAUNCHED("numerics_end");
}

} // namespace mpcrt::cuda
