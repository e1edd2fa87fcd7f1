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

/// One thread's share of a check: the largest finite magnitude and the
/// counts, exact in the value's own type (f32 holds every f16 and bf16
/// value; f64 is compared as f64).
struct Tally {
  float largest = 0;
  unsigned nonfinite = 0, belowNormal = 0, belowSubnormal = 0;
  template <typename V> __device__ void add(V v) {
    if (!isfinite(v)) {
      ++nonfinite;
      return;
    }
    largest = fmaxf(largest, magnitude(v));
    V d = fabs(v);
    belowNormal += d != 0 && d < V(0x1p-14);
    belowSubnormal += d != 0 && d < V(0x1p-24);
  }
};

/// Blocks of a check: enough to keep every SM's memory traffic going,
/// few enough that their atomics on the op's one record cost little (one
/// block per 256 elements put some 10^5 atomics on one address for a
/// large tensor, which the GPU serialises).
constexpr unsigned kCheckBlocks = 1024;

/// The records of op `index` for `input` (n elements): each thread takes
/// 16 bytes at a time where `Vector` (the pointer 16-byte aligned), the
/// rest one at a time; warps and the block combine their tallies, and one
/// thread per block updates the record.
template <typename T, bool Vector>
__global__ void checkKernel(const T *input, int64_t n, int64_t index,
                            int32_t *first, float *amax,
                            unsigned long long *counts) {
  using S = Storage<T>;
  constexpr int G = 16 / sizeof(T);
  Tally tally;
  int64_t thread = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  int64_t threads = int64_t(gridDim.x) * blockDim.x;
  int64_t done = 0;
  if (Vector) {
    int64_t groups = n / G;
    for (int64_t g = thread; g < groups; g += threads) {
      Vec<T, G> v = loadVec<G>(input, g * G, true);
#pragma unroll
      for (int k = 0; k < G; ++k)
        tally.add(S::load(v.v[k]));
    }
    done = groups * G;
  }
  for (int64_t i = done + thread; i < n; i += threads)
    tally.add(S::load(input[i]));

  // Non-negative floats order as their bit patterns: the maximum of the
  // bits is the bits of the maximum.
  int largest = __float_as_int(tally.largest);
  unsigned c[3] = {tally.nonfinite, tally.belowNormal, tally.belowSubnormal};
  for (int offset = 16; offset > 0; offset >>= 1) {
    largest = max(largest, __shfl_xor_sync(0xffffffffu, largest, offset));
#pragma unroll
    for (int k = 0; k < 3; ++k)
      c[k] += __shfl_xor_sync(0xffffffffu, c[k], offset);
  }
  __shared__ int warpLargest[kThreads / 32];
  __shared__ unsigned warpCounts[3][kThreads / 32];
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) {
    warpLargest[warp] = largest;
    for (int k = 0; k < 3; ++k)
      warpCounts[k][warp] = c[k];
  }
  __syncthreads();
  if (threadIdx.x != 0)
    return;
  for (int w = 1; w < int(blockDim.x / 32); ++w) {
    largest = max(largest, warpLargest[w]);
    for (int k = 0; k < 3; ++k)
      c[k] += warpCounts[k][w];
  }
  if (largest) {
    atomicMax(reinterpret_cast<int *>(&amax[2 * index]), largest);
    atomicMax(reinterpret_cast<int *>(&amax[2 * index + 1]), largest);
  }
  for (int k = 0; k < 3; ++k)
    if (c[k])
      atomicAdd(&counts[4 * index + k], static_cast<unsigned long long>(c[k]));
  if (blockIdx.x == 0)
    atomicAdd(&counts[4 * index + 3], static_cast<unsigned long long>(n));
  if (c[0])
    atomicMin(first, static_cast<int32_t>(index));
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
    constexpr int G = 16 / sizeof(T);
    unsigned blocks = blocksFor((n + G - 1) / G);
    blocks = blocks < kCheckBlocks ? blocks : kCheckBlocks;
    auto *typed = static_cast<const T *>(input);
    auto *records = reinterpret_cast<unsigned long long *>(counts);
    if (alignedTo(input, 16))
      checkKernel<T, true><<<blocks, kThreads, 0, stream()>>>(
          typed, n, index, first, amax, records);
    else
      checkKernel<T, false><<<blocks, kThreads, 0, stream()>>>(
          typed, n, index, first, amax, records);
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
