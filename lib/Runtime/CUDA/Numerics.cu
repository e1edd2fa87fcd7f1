//===- Numerics.cu - numerics checks on the device ------------------------===//
//
// The records of --mpc-check-numerics (mpcrt.h), kept on the device with
// atomics: no step reads them back, and all of it can be captured in a
// CUDA Graph.
//
//===----------------------------------------------------------------------===//

#include "Device.cuh"

#include <cstdint>
#include <cstring>

namespace mpcrt::cuda {

namespace {

__global__ void numericsBeginKernel(int32_t *first, float *amax,
                                    int64_t count) {
  MPCRT_KERNEL_PROLOGUE();
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

/// The bit patterns (sign cleared) of a 16-bit float type's infinity and
/// of 2^-14 and 2^-24, Tally's thresholds: f16's least normal value is
/// 2^-14 and its least subnormal 2^-24 (no nonzero f16 value lies below
/// it).
template <typename T> struct Bits16;
template <> struct Bits16<__half> {
  static constexpr unsigned kInf = 0x7c00, kNormal = 0x0400, kSubnormal = 1;
};
template <> struct Bits16<__nv_bfloat16> {
  static constexpr unsigned kInf = 0x7f80, kNormal = 0x3880,
                            kSubnormal = 0x3380;
};

/// Tally's counts and maximum of 16-bit values taken from their bit
/// patterns (the sign cleared, magnitudes order as their bits): some 10
/// integer PTX instructions a value and no branch, where converting each to
/// f32 and testing it took about 14 and a branch. The same counts and
/// maximum as Tally::add of each value.
template <typename T> struct BitTally {
  unsigned largest = 0, nonfinite = 0, belowNormal = 0, belowSubnormal = 0;
  __device__ void add(uint16_t bits) {
    using B = Bits16<T>;
    unsigned a = bits & 0x7fffu;
    bool finite = a < B::kInf;
    nonfinite += !finite;
    unsigned magnitude = finite ? a : 0u;
    largest = magnitude > largest ? magnitude : largest;
    belowNormal += a - 1 < B::kNormal - 1; // 0 < a < kNormal, unsigned
    if constexpr (B::kSubnormal > 1)
      belowSubnormal += a - 1 < B::kSubnormal - 1;
  }
  /// Added to `tally`: the largest magnitude converted once.
  __device__ void into(Tally &tally) const {
    uint16_t bits = static_cast<uint16_t>(largest);
    T value;
    memcpy(&value, &bits, sizeof(value));
    tally.largest = fmaxf(tally.largest, Storage<T>::load(value));
    tally.nonfinite += nonfinite;
    tally.belowNormal += belowNormal;
    tally.belowSubnormal += belowSubnormal;
  }
};

/// A check's launch: up to kMaxChecks values by value as a kernel
/// parameter (nothing copied to the device, so a step's checks can be
/// captured in a CUDA Graph), each cut into chunks of kCheckChunkBytes,
/// a block per chunk: block b checks chunk b - firstBlock[t] of the value
/// t it falls in.
constexpr int kMaxChecks = 64;
/// 128 bytes a thread: eight 16-byte loads in flight. A 4096x3072 f16
/// result is 768 blocks, and so as many updates of its one record (one
/// block per 256 elements, some 10^5 atomics on one address, was the
/// check's cost before).
constexpr int64_t kCheckChunkBytes = 128 * kThreads;

struct CheckList {
  const void *data[kMaxChecks];
  int64_t size[kMaxChecks];
  int64_t index[kMaxChecks];
  int64_t firstBlock[kMaxChecks + 1];
  mpcrt_dtype dtype[kMaxChecks];
  /// The data is aligned to 16 bytes.
  bool vector[kMaxChecks];
  int count;
};

/// The thread's tally of elements [begin, end) of `input` (a chunk, begun
/// at a multiple of 16 bytes): 16 bytes at a time where `Vector` (the data
/// aligned to them), its eight loads issued before any is tallied, and the
/// value's last elements short of 16 bytes one at a time; one element at a
/// time otherwise.
template <typename T, bool Vector>
__device__ Tally tallyChunk(const T *input, int64_t begin, int64_t end) {
  using S = Storage<T>;
  Tally tally;
  int64_t rest = begin;
  if (Vector) {
    constexpr int G = 16 / sizeof(T);
    constexpr int kLoads = kCheckChunkBytes / kThreads / 16;
    int64_t g0 = begin / G + threadIdx.x, g1 = end / G;
    // 16-bit values tallied from their bits (BitTally), read as such.
    constexpr bool kBits = sizeof(T) == 2;
    using E = std::conditional_t<kBits, uint16_t, T>;
    const E *from = reinterpret_cast<const E *>(input);
    Vec<E, G> v[kLoads];
#pragma unroll
    for (int k = 0; k < kLoads; ++k)
      if (g0 + k * kThreads < g1)
        v[k] = loadVec<G>(from, (g0 + k * kThreads) * G, true);
    BitTally<T> bits; // unused for wider T
#pragma unroll
    for (int k = 0; k < kLoads; ++k)
      if (g0 + k * kThreads < g1)
#pragma unroll
        for (int e = 0; e < G; ++e) {
          if constexpr (kBits)
            bits.add(v[k].v[e]);
          else
            tally.add(S::load(v[k].v[e]));
        }
    if constexpr (kBits)
      bits.into(tally);
    rest = g1 * G > begin ? g1 * G : begin;
  }
  for (int64_t i = rest + threadIdx.x; i < end; i += kThreads)
    tally.add(S::load(input[i]));
  return tally;
}

/// Each block: its chunk's tally, combined by warp shuffles and then the
/// warps in turn, one update of the value's record by one thread (the
/// maxima and counts do not depend on the order).
__global__ void checkKernel(CheckList list, int32_t *first, float *amax,
                            unsigned long long *counts) {
  MPCRT_KERNEL_PROLOGUE();
  int t = tensorOfBlock(list, blockIdx.x);
  int64_t chunk = blockIdx.x - list.firstBlock[t];
  int64_t n = list.size[t];
  Tally tally;
  dispatch(list.dtype[t], [&](auto *type) {
    using T = MPCRT_TYPE(type);
    int64_t perChunk = kCheckChunkBytes / int64_t(sizeof(T));
    int64_t begin = chunk * perChunk;
    int64_t end = begin + perChunk < n ? begin + perChunk : n;
    auto *input = static_cast<const T *>(list.data[t]);
    tally = list.vector[t] ? tallyChunk<T, true>(input, begin, end)
                           : tallyChunk<T, false>(input, begin, end);
  });

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
  int64_t index = list.index[t];
  if (largest) {
    atomicMax(reinterpret_cast<int *>(&amax[2 * index]), largest);
    atomicMax(reinterpret_cast<int *>(&amax[2 * index + 1]), largest);
  }
  for (int k = 0; k < 3; ++k)
    if (c[k])
      atomicAdd(&counts[4 * index + k], static_cast<unsigned long long>(c[k]));
  if (chunk == 0)
    atomicAdd(&counts[4 * index + 3], static_cast<unsigned long long>(n));
  if (c[0])
    atomicMin(first, static_cast<int32_t>(index));
}

__global__ void numericsEndKernel(const int32_t *first, int64_t count,
                                  const int64_t *step, int64_t *events,
                                  const float *amax, float *eventAmax) {
  MPCRT_KERNEL_PROLOGUE();
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
  MPCRT_KERNEL_PROLOGUE();
  if (*first < count)
    ++events[0];
}

} // namespace

void numericsBegin(int32_t *first, float *amax, int64_t count) {
  numericsBeginKernel<<<blocksFor(count), kThreads, 0, stream()>>>(first, amax,
                                                                   count);
  MPCRT_CUDA_LAUNCHED("numerics_begin");
}

void checkNumerics(int64_t numTensors, const mpcrt_dtype *dtypes,
                   const void *const *inputs, const int64_t *sizes,
                   const int64_t *indices, int32_t *first, float *amax,
                   int64_t *counts) {
  auto *records = reinterpret_cast<unsigned long long *>(counts);
  for (int64_t from = 0; from < numTensors; from += kMaxChecks) {
    CheckList list{};
    int64_t blocks = 0;
    for (int64_t t = from; t < numTensors && t < from + kMaxChecks; ++t) {
      int n = list.count++;
      list.data[n] = inputs[t];
      list.size[n] = sizes[t];
      list.index[n] = indices[t];
      list.dtype[n] = dtypes[t];
      list.vector[n] = alignedTo(inputs[t], 16);
      list.firstBlock[n] = blocks;
      int64_t perChunk = kCheckChunkBytes / bytesOf(dtypes[t]);
      blocks += (sizes[t] + perChunk - 1) / perChunk;
    }
    list.firstBlock[list.count] = blocks;
    if (blocks > 0)
      checkKernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream()>>>(
          list, first, amax, records);
  }
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
