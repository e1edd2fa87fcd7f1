//===- Training.cu - loss scaling and master-weight updates on the device -===//
//
// The multi-tensor kernels take a list of tensors by value as a kernel
// parameter (no host-to-device copy, so a step can be captured in a CUDA
// Graph) and cover all of them with one launch per kMaxTensors tensors:
// block b works on chunk b - firstBlock[t] of the tensor t it falls in.
//
//===----------------------------------------------------------------------===//

#include "mpc/Runtime/Report.h"

#include "Device.cuh"
#include "Formulas.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <type_traits>
#include <vector>

namespace mpcrt::cuda {
namespace {

constexpr int kMaxTensors = 48;
constexpr int64_t kChunk = 4096; // elements per block

struct TensorList {
  const void *data[kMaxTensors];
  float *out[kMaxTensors];
  int64_t size[kMaxTensors];
  int64_t firstBlock[kMaxTensors + 1];
  mpcrt_dtype dtype[kMaxTensors];
  /// Whether the tensor's data (and its unscaled copy) are aligned to 16
  /// bytes of its elements (and their f32 values).
  bool vectors[kMaxTensors];
  int count;
};

/// f(width, q, values) for the elements of [begin, end) of tensor t that
/// the block's thread takes, as f64 values: groups of N = 16 bytes of the
/// tensor's type (elements N q .. N q + N - 1) where the tensor allows (a
/// chunk begins at a multiple of 8 elements), the rest one at a time
/// (N = 1, q the element). `width` is std::integral_constant<int, N>.
template <typename T, typename F>
__device__ int64_t forEachGroupOf(const void *data, int64_t begin, int64_t end,
                                  F &f) {
  constexpr int N = 16 / sizeof(T);
  int64_t grouped = end / N * N;
  for (int64_t q = begin / N + threadIdx.x; q < grouped / N; q += blockDim.x) {
    Vec<T, N> in = reinterpret_cast<const Vec<T, N> *>(data)[q];
    double values[N];
#pragma unroll
    for (int k = 0; k < N; ++k)
      values[k] = static_cast<double>(Storage<T>::load(in.v[k]));
    f(std::integral_constant<int, N>{}, q, values);
  }
  return grouped;
}
template <typename F>
__device__ void forEachGradient(const TensorList &list, int t, int64_t begin,
                                int64_t end, F f) {
  const void *data = list.data[t];
  if (list.vectors[t]) {
    switch (list.dtype[t]) {
    case MPCRT_F16:
      begin = forEachGroupOf<__half>(data, begin, end, f);
      break;
    case MPCRT_BF16:
      begin = forEachGroupOf<__nv_bfloat16>(data, begin, end, f);
      break;
    case MPCRT_F32:
      begin = forEachGroupOf<float>(data, begin, end, f);
      break;
    case MPCRT_F64:
      begin = forEachGroupOf<double>(data, begin, end, f);
      break;
    }
  }
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    double value = loadAny(list.dtype[t], data, i);
    f(std::integral_constant<int, 1>{}, i, &value);
  }
}

__global__ void unscaleAndCheckKernel(TensorList list, const float *scale,
                                      uint8_t *foundInf) {
  MPCRT_KERNEL_PROLOGUE();
  int t = tensorOfBlock(list, blockIdx.x);
  int64_t begin = (blockIdx.x - list.firstBlock[t]) * kChunk;
  int64_t end = min(begin + kChunk, list.size[t]);
  float inv = 1.0f / *scale;
  float *out = list.out[t];
  bool any = false;
  // The unscaled values of a group as one access of f32 (the list holds
  // the tensor as vectors only where `out` allows it too).
  forEachGradient(list, t, begin, end,
                  [&](auto width, int64_t q, const double *values) {
                    constexpr int N = decltype(width)::value;
                    Vec<float, N> unscaled;
#pragma unroll
                    for (int k = 0; k < N; ++k) {
                      float value = static_cast<float>(values[k]);
                      any |= !isfinite(value);
                      unscaled.v[k] = value * inv;
                    }
                    if (out)
                      reinterpret_cast<Vec<float, N> *>(out)[q] = unscaled;
                  });
  // Every writer stores the same 1: no atomic needed.
  if (__syncthreads_or(any) && threadIdx.x == 0)
    *foundInf = 1;
}

/// Each block's sum of squares of its chunk, in double and a fixed order,
/// into partials[base + block]. A non-finite element makes its sum (and so
/// the norm) non-finite: that is the check.
__global__ void sumSquaresKernel(TensorList list, double *partials,
                                 int64_t base) {
  MPCRT_KERNEL_PROLOGUE();
  int t = tensorOfBlock(list, blockIdx.x);
  int64_t begin = (blockIdx.x - list.firstBlock[t]) * kChunk;
  int64_t end = min(begin + kChunk, list.size[t]);
  double sum = 0;
  forEachGradient(list, t, begin, end,
                  [&](auto width, int64_t, const double *values) {
                    for (int k = 0; k < decltype(width)::value; ++k)
                      sum += values[k] * values[k];
                  });
  sum = blockReduce<double>(sum);
  if (threadIdx.x == 0)
    partials[base + blockIdx.x] = sum;
}

/// The partials in a fixed order, then the clip factor.
__global__ void clipFactorKernel(const double *partials, int64_t count,
                                 const float *scale, double maxNorm,
                                 float *invScale, float *norm,
                                 uint8_t *foundInf) {
  MPCRT_KERNEL_PROLOGUE();
  double sum = 0;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x)
    sum += partials[i];
  sum = blockReduce<double>(sum);
  if (threadIdx.x == 0)
    formulas::clipFactor(sum, *scale, maxNorm, invScale, norm, foundInf);
}

__global__ void gradStatsKernel(TensorList list, const float *scale,
                                unsigned long long *stats) {
  MPCRT_KERNEL_PROLOGUE();
  int t = tensorOfBlock(list, blockIdx.x);
  int64_t begin = (blockIdx.x - list.firstBlock[t]) * kChunk;
  int64_t end = min(begin + kChunk, list.size[t]);
  const double inv = 1.0 / static_cast<double>(*scale);
  const double flush = 2.9802322387695312e-08; // 2^-25
  unsigned zero = 0, underflow = 0, nonfinite = 0;
  forEachGradient(list, t, begin, end,
                  [&](auto width, int64_t, const double *values) {
                    for (int k = 0; k < decltype(width)::value; ++k) {
                      double value = values[k];
                      if (value == 0.0)
                        ++zero;
                      else if (!isfinite(value))
                        ++nonfinite;
                      else if (fabs(value * inv) <= flush)
                        ++underflow;
                    }
                  });
  __shared__ unsigned counts[3];
  if (threadIdx.x < 3)
    counts[threadIdx.x] = 0;
  __syncthreads();
  if (zero)
    atomicAdd(&counts[0], zero);
  if (underflow)
    atomicAdd(&counts[1], underflow);
  if (nonfinite)
    atomicAdd(&counts[2], nonfinite);
  __syncthreads();
  if (threadIdx.x == 0) {
    atomicAdd(&stats[0], static_cast<unsigned long long>(end - begin));
    for (int c = 0; c < 3; ++c)
      if (counts[c])
        atomicAdd(&stats[1 + c], static_cast<unsigned long long>(counts[c]));
  }
}

/// Calls `launch(list, blocks)` for each run of up to kMaxTensors tensors.
template <typename Launch>
void forEachList(int64_t numTensors, const mpcrt_dtype *dtypes,
                 const void *const *grads, const int64_t *sizes,
                 float *const *unscaled, Launch launch) {
  for (int64_t first = 0; first < numTensors; first += kMaxTensors) {
    TensorList list{};
    list.count =
        static_cast<int>(std::min<int64_t>(kMaxTensors, numTensors - first));
    int64_t blocks = 0;
    for (int t = 0; t < list.count; ++t) {
      list.data[t] = grads[first + t];
      list.out[t] = unscaled ? unscaled[first + t] : nullptr;
      list.size[t] = sizes[first + t];
      list.dtype[t] = dtypes[first + t];
      // The unscaled copy takes 16 / bytes f32 values per 16-byte group.
      int64_t outBytes = 16 / bytesOf(list.dtype[t]) * 4;
      list.vectors[t] =
          alignedTo(list.data[t], 16) &&
          (!list.out[t] || alignedTo(list.out[t], size_t(outBytes)));
      list.firstBlock[t] = blocks;
      blocks += (sizes[first + t] + kChunk - 1) / kChunk;
    }
    list.firstBlock[list.count] = blocks;
    if (blocks > 0)
      launch(list, blocks);
  }
}

__global__ void updateLossScaleKernel(float *scale, int32_t *growthTracker,
                                      int32_t *hysteresisTracker,
                                      const uint8_t *foundInf,
                                      double growthFactor, double backoffFactor,
                                      int64_t growthInterval,
                                      int64_t hysteresis, double minScale,
                                      double maxScale) {
  MPCRT_KERNEL_PROLOGUE();
  formulas::updateLossScale(scale, growthTracker, hysteresisTracker,
                            *foundInf != 0, growthFactor, backoffFactor,
                            growthInterval, hysteresis, minScale, maxScale);
}

/// The low-precision copies of N parameters, elements N q .. N q + N - 1
/// of `copy` (of type `dtype`; nothing where it is null), as one access.
template <int N, typename P>
__device__ void writeCopies(const Vec<P, N> &value, mpcrt_dtype dtype,
                            void *copy, int64_t q) {
  if (!copy)
    return;
  auto write = [&](auto *out, auto convert) {
    using C = std::remove_pointer_t<decltype(out)>;
    Vec<C, N> c;
#pragma unroll
    for (int k = 0; k < N; ++k)
      c.v[k] = convert(static_cast<float>(Storage<P>::load(value.v[k])));
    reinterpret_cast<Vec<C, N> *>(copy)[q] = c;
  };
  if (dtype == MPCRT_F16)
    write(static_cast<__half *>(nullptr),
          [](float v) { return __float2half_rn(v); });
  else if (dtype == MPCRT_BF16)
    write(static_cast<__nv_bfloat16 *>(nullptr),
          [](float v) { return __float2bfloat16_rn(v); });
  else
    write(static_cast<float *>(nullptr), [](float v) { return v; });
}

// The same arithmetic, in the same order, as the CPU reference (no fused
// multiply-add contraction: the file is built with --fmad=false).
template <typename Acc>
__device__ formulas::Sgd<Acc>
sgdRule(const float *lr, const float *invScale, double momentum,
        double dampening, bool nesterov, double weightDecay, bool hasBuffer) {
  return formulas::Sgd<Acc>{static_cast<Acc>(*lr),
                            invScale ? static_cast<Acc>(*invScale) : Acc(1),
                            static_cast<Acc>(momentum),
                            static_cast<Acc>(1 - dampening),
                            static_cast<Acc>(weightDecay),
                            nesterov,
                            hasBuffer};
}

/// SGD's update of elements N q .. N q + N - 1 (nothing when the step is
/// skipped) and their copies, N elements per access (the pointers aligned
/// to N elements): the single-tensor (N = 1) and the multi-tensor kernels
/// share it.
template <int N, typename P, typename G>
__device__ void sgdElements(const formulas::Sgd<typename Storage<P>::Acc> &rule,
                            bool skip, P *param, const G *grad, P *buffer,
                            mpcrt_dtype copyDtype, void *copy, int64_t q) {
  using Acc = typename Storage<P>::Acc;
  using VP = Vec<P, N>;
  VP p = reinterpret_cast<const VP *>(param)[q];
  if (!skip) {
    Vec<G, N> g = reinterpret_cast<const Vec<G, N> *>(grad)[q];
    VP b{};
    if (buffer)
      b = reinterpret_cast<const VP *>(buffer)[q];
#pragma unroll
    for (int k = 0; k < N; ++k) {
      Acc bk = buffer ? Storage<P>::load(b.v[k]) : Acc(0);
      Acc gk = static_cast<Acc>(Storage<G>::load(g.v[k]));
      p.v[k] = Storage<P>::store(rule.step(Storage<P>::load(p.v[k]), gk, bk));
      b.v[k] = Storage<P>::store(bk);
    }
    reinterpret_cast<VP *>(param)[q] = p;
    if (buffer)
      reinterpret_cast<VP *>(buffer)[q] = b;
  }
  writeCopies<N>(p, copyDtype, copy, q);
}

template <typename P, typename G>
__global__ void sgdKernel(P *param, const G *grad, const float *lr, P *buffer,
                          const uint8_t *foundInf, const float *invScale,
                          mpcrt_dtype copyDtype, void *copy, int64_t count,
                          double momentum, double dampening, bool nesterov,
                          double weightDecay) {
  MPCRT_KERNEL_PROLOGUE();
  using Acc = typename Storage<P>::Acc;
  bool skip = foundInf && *foundInf;
  const formulas::Sgd<Acc> rule =
      sgdRule<Acc>(lr, invScale, momentum, dampening, nesterov, weightDecay,
                   buffer != nullptr);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x)
    sgdElements<1>(rule, skip, param, grad, buffer, copyDtype, copy, i);
}

/// Adam's update of elements N q .. N q + N - 1 (nothing when the step is
/// skipped) and their copies, N elements per access (the pointers aligned
/// to N elements): the single-tensor (N = 1) and the multi-tensor kernels
/// share it.
template <int N, typename P, typename G>
__device__ void
adamElements(const formulas::Adam<typename Storage<P>::Acc> &rule, bool skip,
             P *param, const G *grad, P *expAvg, P *expAvgSq,
             mpcrt_dtype copyDtype, void *copy, int64_t q) {
  using Acc = typename Storage<P>::Acc;
  using VP = Vec<P, N>;
  VP p = reinterpret_cast<const VP *>(param)[q];
  if (!skip) {
    VP m = reinterpret_cast<const VP *>(expAvg)[q],
       v = reinterpret_cast<const VP *>(expAvgSq)[q];
    Vec<G, N> g = reinterpret_cast<const Vec<G, N> *>(grad)[q];
#pragma unroll
    for (int k = 0; k < N; ++k) {
      Acc mk = Storage<P>::load(m.v[k]), vk = Storage<P>::load(v.v[k]);
      Acc pk = rule.step(Storage<P>::load(p.v[k]),
                         static_cast<Acc>(Storage<G>::load(g.v[k])), mk, vk);
      m.v[k] = Storage<P>::store(mk);
      v.v[k] = Storage<P>::store(vk);
      p.v[k] = Storage<P>::store(pk);
    }
    reinterpret_cast<VP *>(expAvg)[q] = m;
    reinterpret_cast<VP *>(expAvgSq)[q] = v;
    reinterpret_cast<VP *>(param)[q] = p;
  }
  writeCopies<N>(p, copyDtype, copy, q);
}

template <typename Acc>
__device__ formulas::Adam<Acc>
adamRule(const float *lr, const int32_t *step, const float *invScale,
         double beta1, double beta2, double eps, double weightDecay,
         bool decoupled, bool biasCorrection) {
  return formulas::Adam<Acc>(
      *lr, *step, invScale ? static_cast<Acc>(*invScale) : Acc(1), beta1, beta2,
      eps, weightDecay, decoupled, biasCorrection);
}

template <typename P, typename G>
__global__ void
adamKernel(P *param, const G *grad, P *expAvg, P *expAvgSq, const float *lr,
           const int32_t *step, const uint8_t *foundInf, const float *invScale,
           mpcrt_dtype copyDtype, void *copy, int64_t count, double beta1,
           double beta2, double eps, double weightDecay, bool decoupled,
           bool biasCorrection) {
  MPCRT_KERNEL_PROLOGUE();
  using Acc = typename Storage<P>::Acc;
  bool skip = foundInf && *foundInf;
  const formulas::Adam<Acc> rule =
      adamRule<Acc>(lr, step, invScale, beta1, beta2, eps, weightDecay,
                    decoupled, biasCorrection);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x)
    adamElements<1>(rule, skip, param, grad, expAvg, expAvgSq, copyDtype, copy,
                    i);
}

/// Up to kMaxUpdates parameters of one type pair, by value (no copy to the
/// device, capturable): block b updates chunk b - firstBlock[t] of tensor t.
constexpr int kMaxUpdates = 36;
struct UpdateList {
  void *param[kMaxUpdates];
  const void *grad[kMaxUpdates];
  void *expAvg[kMaxUpdates];
  void *expAvgSq[kMaxUpdates];
  void *copy[kMaxUpdates];
  int64_t size[kMaxUpdates];
  int64_t firstBlock[kMaxUpdates + 1];
  mpcrt_dtype copyDtype[kMaxUpdates];
  /// Whether every pointer of the tensor is aligned to 4 of its elements.
  bool vectors[kMaxUpdates];
  int count;
};

/// Calls f(std::integral_constant<int, N>{}, q) for the groups of N
/// elements [N q, N q + N) of elements [begin, end) of tensor t that the
/// block's thread takes: 4 at a time where the tensor's pointers allow (a
/// chunk begins at a multiple of 4), the rest one at a time.
template <typename F>
__device__ void forEachGroup(const UpdateList &list, int t, int64_t begin,
                             int64_t end, F f) {
  int64_t grouped = list.vectors[t] ? end / 4 * 4 : begin;
  for (int64_t q = begin / 4 + threadIdx.x; q < grouped / 4; q += blockDim.x)
    f(std::integral_constant<int, 4>{}, q);
  for (int64_t i = grouped + threadIdx.x; i < end; i += blockDim.x)
    f(std::integral_constant<int, 1>{}, i);
}

/// The momentum buffer lives in the list's expAvg slot (null for none,
/// in every tensor of a list).
template <typename P, typename G>
__global__ void sgdMultiKernel(UpdateList list, const float *lr,
                               const uint8_t *foundInf, const float *invScale,
                               double momentum, double dampening, bool nesterov,
                               double weightDecay) {
  MPCRT_KERNEL_PROLOGUE();
  using Acc = typename Storage<P>::Acc;
  int t = tensorOfBlock(list, blockIdx.x);
  int64_t begin = (blockIdx.x - list.firstBlock[t]) * kChunk;
  int64_t end = min(begin + kChunk, list.size[t]);
  bool skip = foundInf && *foundInf;
  auto *buffer = static_cast<P *>(list.expAvg[t]);
  const formulas::Sgd<Acc> rule =
      sgdRule<Acc>(lr, invScale, momentum, dampening, nesterov, weightDecay,
                   buffer != nullptr);
  auto *param = static_cast<P *>(list.param[t]);
  auto *grad = static_cast<const G *>(list.grad[t]);
  forEachGroup(list, t, begin, end, [&](auto width, int64_t q) {
    sgdElements<decltype(width)::value>(rule, skip, param, grad, buffer,
                                        list.copyDtype[t], list.copy[t], q);
  });
}

/// LAMB's sums of p^2 and u^2 over elements first, first + step, ... below
/// limit (double, fixed order), the block's into partials[2 slot],
/// [2 slot + 1]; nothing is written.
template <typename P, typename G>
__device__ void lambNorms(const formulas::Lamb<typename Storage<P>::Acc> &rule,
                          const P *param, const G *grad, const P *expAvg,
                          const P *expAvgSq, int64_t first, int64_t limit,
                          int64_t step, double *partials, int64_t slot) {
  using Acc = typename Storage<P>::Acc;
  double ps = 0, us = 0;
  for (int64_t i = first; i < limit; i += step) {
    Acc m = Storage<P>::load(expAvg[i]), v = Storage<P>::load(expAvgSq[i]);
    Acc p = Storage<P>::load(param[i]);
    Acc u =
        rule.direction(p, static_cast<Acc>(Storage<G>::load(grad[i])), m, v);
    ps += static_cast<double>(p) * p;
    us += static_cast<double>(u) * u;
  }
  ps = blockReduce<double>(ps);
  us = blockReduce<double>(us);
  if (threadIdx.x == 0) {
    partials[2 * slot] = ps;
    partials[2 * slot + 1] = us;
  }
}

/// LAMB's step of element i at rate r (nothing when skipped) and its copy.
template <typename P, typename G>
__device__ void
lambElement(const formulas::Lamb<typename Storage<P>::Acc> &rule, bool skip,
            typename Storage<P>::Acc r, P *param, const G *grad, P *expAvg,
            P *expAvgSq, mpcrt_dtype copyDtype, void *copy, int64_t i) {
  using Acc = typename Storage<P>::Acc;
  if (!skip) {
    Acc m = Storage<P>::load(expAvg[i]), v = Storage<P>::load(expAvgSq[i]);
    Acc p = Storage<P>::load(param[i]);
    Acc u =
        rule.direction(p, static_cast<Acc>(Storage<G>::load(grad[i])), m, v);
    expAvg[i] = Storage<P>::store(m);
    expAvgSq[i] = Storage<P>::store(v);
    param[i] = Storage<P>::store(p - r * u);
  }
  Vec<P, 1> updated;
  updated.v[0] = param[i];
  writeCopies<1>(updated, copyDtype, copy, i);
}

/// LAMB over a list, pass 1: each block's sums of p^2 and u^2 (double,
/// fixed order) over its chunk into partials[2 block], [2 block + 1].
template <typename P, typename G>
__global__ void
lambNormsMultiKernel(UpdateList list, const int32_t *step,
                     const uint8_t *foundInf, const float *invScale,
                     double beta1, double beta2, double eps, double weightDecay,
                     bool decoupled, bool biasCorrection, double *partials) {
  MPCRT_KERNEL_PROLOGUE();
  using Acc = typename Storage<P>::Acc;
  if (foundInf && *foundInf)
    return;
  int t = tensorOfBlock(list, blockIdx.x);
  int64_t begin = (blockIdx.x - list.firstBlock[t]) * kChunk;
  int64_t end = min(begin + kChunk, list.size[t]);
  const formulas::Lamb<Acc> rule(
      *step, invScale ? static_cast<Acc>(*invScale) : Acc(1), beta1, beta2, eps,
      weightDecay, decoupled, biasCorrection);
  lambNorms(rule, static_cast<const P *>(list.param[t]),
            static_cast<const G *>(list.grad[t]),
            static_cast<const P *>(list.expAvg[t]),
            static_cast<const P *>(list.expAvgSq[t]), begin + threadIdx.x, end,
            blockDim.x, partials, blockIdx.x);
}

/// Pass 2: one block per tensor sums its partials in order; its rate.
__global__ void lambRatesMultiKernel(UpdateList list, const double *partials,
                                     const float *lr, const uint8_t *foundInf,
                                     double *rates) {
  MPCRT_KERNEL_PROLOGUE();
  if (foundInf && *foundInf)
    return;
  int t = blockIdx.x;
  double ps = 0, us = 0;
  for (int64_t b = list.firstBlock[t] + threadIdx.x; b < list.firstBlock[t + 1];
       b += blockDim.x) {
    ps += partials[2 * b];
    us += partials[2 * b + 1];
  }
  ps = blockReduce<double>(ps);
  us = blockReduce<double>(us);
  if (threadIdx.x == 0)
    rates[t] = *lr * formulas::trustRatio(sqrt(ps), sqrt(us));
}

/// Pass 3: the moments and the step of each chunk (the copy either way).
template <typename P, typename G>
__global__ void lambMultiKernel(UpdateList list, const int32_t *step,
                                const uint8_t *foundInf, const float *invScale,
                                double beta1, double beta2, double eps,
                                double weightDecay, bool decoupled,
                                bool biasCorrection, const double *rates) {
  MPCRT_KERNEL_PROLOGUE();
  using Acc = typename Storage<P>::Acc;
  int t = tensorOfBlock(list, blockIdx.x);
  int64_t begin = (blockIdx.x - list.firstBlock[t]) * kChunk;
  int64_t end = min(begin + kChunk, list.size[t]);
  bool skip = foundInf && *foundInf;
  const formulas::Lamb<Acc> rule(
      *step, invScale ? static_cast<Acc>(*invScale) : Acc(1), beta1, beta2, eps,
      weightDecay, decoupled, biasCorrection);
  Acc r = skip ? Acc(0) : static_cast<Acc>(rates[t]);
  auto *param = static_cast<P *>(list.param[t]);
  auto *grad = static_cast<const G *>(list.grad[t]);
  auto *expAvg = static_cast<P *>(list.expAvg[t]);
  auto *expAvgSq = static_cast<P *>(list.expAvgSq[t]);
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x)
    lambElement(rule, skip, r, param, grad, expAvg, expAvgSq, list.copyDtype[t],
                list.copy[t], i);
}

template <typename P, typename G>
__global__ void adamMultiKernel(UpdateList list, const float *lr,
                                const int32_t *step, const uint8_t *foundInf,
                                const float *invScale, double beta1,
                                double beta2, double eps, double weightDecay,
                                bool decoupled, bool biasCorrection) {
  MPCRT_KERNEL_PROLOGUE();
  using Acc = typename Storage<P>::Acc;
  int t = tensorOfBlock(list, blockIdx.x);
  int64_t begin = (blockIdx.x - list.firstBlock[t]) * kChunk;
  int64_t end = min(begin + kChunk, list.size[t]);
  bool skip = foundInf && *foundInf;
  const formulas::Adam<Acc> rule =
      adamRule<Acc>(lr, step, invScale, beta1, beta2, eps, weightDecay,
                    decoupled, biasCorrection);
  auto *param = static_cast<P *>(list.param[t]);
  auto *grad = static_cast<const G *>(list.grad[t]);
  auto *expAvg = static_cast<P *>(list.expAvg[t]);
  auto *expAvgSq = static_cast<P *>(list.expAvgSq[t]);
  forEachGroup(list, t, begin, end, [&](auto width, int64_t q) {
    adamElements<decltype(width)::value>(rule, skip, param, grad, expAvg,
                                         expAvgSq, list.copyDtype[t],
                                         list.copy[t], q);
  });
}

/// LAMB, pass 1: each block's sums of p^2 and u^2 (double, fixed order)
/// into partials[2 block], [2 block + 1]; nothing is written.
template <typename P, typename G>
__global__ void lambNormsKernel(const P *param, const G *grad, const P *expAvg,
                                const P *expAvgSq, const int32_t *step,
                                const uint8_t *foundInf, const float *invScale,
                                int64_t count, double beta1, double beta2,
                                double eps, double weightDecay, bool decoupled,
                                bool biasCorrection, double *partials) {
  MPCRT_KERNEL_PROLOGUE();
  using Acc = typename Storage<P>::Acc;
  if (foundInf && *foundInf)
    return;
  const formulas::Lamb<Acc> rule(
      *step, invScale ? static_cast<Acc>(*invScale) : Acc(1), beta1, beta2, eps,
      weightDecay, decoupled, biasCorrection);
  lambNorms(rule, param, grad, expAvg, expAvgSq,
            blockIdx.x * int64_t(blockDim.x) + threadIdx.x, count,
            int64_t(gridDim.x) * blockDim.x, partials, blockIdx.x);
}

/// LAMB, pass 2: the partials in order, then lr * trust ratio into *rate.
__global__ void lambRateKernel(const double *partials, int64_t blocks,
                               const float *lr, const uint8_t *foundInf,
                               double *rate) {
  MPCRT_KERNEL_PROLOGUE();
  if (foundInf && *foundInf)
    return;
  double ps = 0, us = 0;
  for (int64_t b = threadIdx.x; b < blocks; b += blockDim.x) {
    ps += partials[2 * b];
    us += partials[2 * b + 1];
  }
  ps = blockReduce<double>(ps);
  us = blockReduce<double>(us);
  if (threadIdx.x == 0)
    *rate = *lr * formulas::trustRatio(sqrt(ps), sqrt(us));
}

/// LAMB, pass 3: the moments and the step (the copy either way).
template <typename P, typename G>
__global__ void
lambKernel(P *param, const G *grad, P *expAvg, P *expAvgSq, const int32_t *step,
           const uint8_t *foundInf, const float *invScale,
           mpcrt_dtype copyDtype, void *copy, int64_t count, double beta1,
           double beta2, double eps, double weightDecay, bool decoupled,
           bool biasCorrection, const double *rate) {
  MPCRT_KERNEL_PROLOGUE();
  using Acc = typename Storage<P>::Acc;
  bool skip = foundInf && *foundInf;
  const formulas::Lamb<Acc> rule(
      *step, invScale ? static_cast<Acc>(*invScale) : Acc(1), beta1, beta2, eps,
      weightDecay, decoupled, biasCorrection);
  Acc r = skip ? Acc(0) : static_cast<Acc>(*rate);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x)
    lambElement(rule, skip, r, param, grad, expAvg, expAvgSq, copyDtype, copy,
                i);
}

/// Calls f(P*, G*) with the storage types of the supported pairs.
template <typename F>
void dispatchPair(mpcrt_dtype p, mpcrt_dtype g, const char *what, F f) {
  if (p == MPCRT_F32 && g == MPCRT_F16)
    return f(static_cast<float *>(nullptr), static_cast<__half *>(nullptr));
  if (p == MPCRT_F32 && g == MPCRT_BF16)
    return f(static_cast<float *>(nullptr),
             static_cast<__nv_bfloat16 *>(nullptr));
  if (p == MPCRT_F32 && g == MPCRT_F32)
    return f(static_cast<float *>(nullptr), static_cast<float *>(nullptr));
  if (p == MPCRT_F16 && g == MPCRT_F16)
    return f(static_cast<__half *>(nullptr), static_cast<__half *>(nullptr));
  if (p == MPCRT_BF16 && g == MPCRT_BF16)
    return f(static_cast<__nv_bfloat16 *>(nullptr),
             static_cast<__nv_bfloat16 *>(nullptr));
  if (p == MPCRT_F64 && g == MPCRT_F64)
    return f(static_cast<double *>(nullptr), static_cast<double *>(nullptr));
  // O3 with gradient accumulation: low-precision parameters, f32 sums.
  if (p == MPCRT_F16 && g == MPCRT_F32)
    return f(static_cast<__half *>(nullptr), static_cast<float *>(nullptr));
  if (p == MPCRT_BF16 && g == MPCRT_F32)
    return f(static_cast<__nv_bfloat16 *>(nullptr),
             static_cast<float *>(nullptr));
  mpcrt::errors::reportError("%s: unsupported parameter/gradient types\n",
                             what);
  std::exit(1);
}

} // namespace

void unscaleAndCheck(const float *scale, int64_t numTensors,
                     const mpcrt_dtype *dtypes, const void *const *grads,
                     const int64_t *sizes, float *const *unscaled,
                     uint8_t *foundInf) {
  zero(foundInf, 1);
  forEachList(numTensors, dtypes, grads, sizes, unscaled,
              [&](const TensorList &list, int64_t blocks) {
                unscaleAndCheckKernel<<<static_cast<unsigned>(blocks), kThreads,
                                        0, stream()>>>(list, scale, foundInf);
                MPCRT_CUDA_LAUNCHED("unscale_and_check");
              });
}

void clipGradNorm(const float *scale, int64_t numTensors,
                  const mpcrt_dtype *dtypes, const void *const *grads,
                  const int64_t *sizes, double maxNorm, float *invScale,
                  float *norm, uint8_t *foundInf) {
  int64_t total = 0;
  for (int64_t t = 0; t < numTensors; ++t)
    total += (sizes[t] + kChunk - 1) / kChunk;
  // One double per block (the scratch buffer is counted in floats).
  auto *partials = reinterpret_cast<double *>(scratchF32(2 * (total + 1)));
  zero(partials, sizeof(double));
  int64_t base = 0;
  forEachList(numTensors, dtypes, grads, sizes, nullptr,
              [&](const TensorList &list, int64_t blocks) {
                sumSquaresKernel<<<static_cast<unsigned>(blocks), kThreads, 0,
                                   stream()>>>(list, partials, base);
                MPCRT_CUDA_LAUNCHED("clip_grad_norm");
                base += blocks;
              });
  clipFactorKernel<<<1, kThreads, 0, stream()>>>(partials, base, scale, maxNorm,
                                                 invScale, norm, foundInf);
  MPCRT_CUDA_LAUNCHED("clip_grad_norm");
}

void gradStats(const float *scale, int64_t numTensors,
               const mpcrt_dtype *dtypes, const void *const *grads,
               const int64_t *sizes, int64_t *stats) {
  zero(stats, 4 * sizeof(int64_t));
  forEachList(numTensors, dtypes, grads, sizes, nullptr,
              [&](const TensorList &list, int64_t blocks) {
                gradStatsKernel<<<static_cast<unsigned>(blocks), kThreads, 0,
                                  stream()>>>(
                    list, scale, reinterpret_cast<unsigned long long *>(stats));
                MPCRT_CUDA_LAUNCHED("grad_stats");
              });
}

void updateLossScale(float *scale, int32_t *growthTracker,
                     int32_t *hysteresisTracker, const uint8_t *foundInf,
                     double growthFactor, double backoffFactor,
                     int64_t growthInterval, int64_t hysteresis,
                     double minScale, double maxScale) {
  updateLossScaleKernel<<<1, 1, 0, stream()>>>(
      scale, growthTracker, hysteresisTracker, foundInf, growthFactor,
      backoffFactor, growthInterval, hysteresis, minScale, maxScale);
  MPCRT_CUDA_LAUNCHED("update_loss_scale");
}

void sgdUpdate(mpcrt_dtype p, mpcrt_dtype g, void *param, const void *grad,
               const float *lr, void *momentumBuffer, const uint8_t *foundInf,
               const float *invScale, mpcrt_dtype copyDtype, void *copy,
               int64_t count, double momentum, double dampening, bool nesterov,
               double weightDecay) {
  if (count <= 0)
    return;
  dispatchPair(p, g, "sgd_update", [&](auto *pt, auto *gt) {
    using P = std::remove_pointer_t<decltype(pt)>;
    using G = std::remove_pointer_t<decltype(gt)>;
    sgdKernel<P, G><<<blocksFor(count), kThreads, 0, stream()>>>(
        static_cast<P *>(param), static_cast<const G *>(grad), lr,
        static_cast<P *>(momentumBuffer), foundInf, invScale, copyDtype, copy,
        count, momentum, dampening, nesterov, weightDecay);
  });
  MPCRT_CUDA_LAUNCHED("sgd_update");
}

void adamUpdate(mpcrt_dtype p, mpcrt_dtype g, void *param, const void *grad,
                void *expAvg, void *expAvgSq, const float *lr,
                const int32_t *step, const uint8_t *foundInf,
                const float *invScale, mpcrt_dtype copyDtype, void *copy,
                int64_t count, double beta1, double beta2, double eps,
                double weightDecay, bool decoupled, bool biasCorrection,
                bool lamb) {
  if (count <= 0)
    return;
  if (lamb) {
    unsigned blocks = blocksFor(count);
    // 2 doubles per block, then the rate (the scratch is counted in floats).
    auto *partials =
        reinterpret_cast<double *>(scratchF32(4 * (int64_t(blocks) + 1)));
    double *rate = partials + 2 * blocks;
    dispatchPair(p, g, "adam_update", [&](auto *pt, auto *gt) {
      using P = std::remove_pointer_t<decltype(pt)>;
      using G = std::remove_pointer_t<decltype(gt)>;
      lambNormsKernel<P, G><<<blocks, kThreads, 0, stream()>>>(
          static_cast<const P *>(param), static_cast<const G *>(grad),
          static_cast<const P *>(expAvg), static_cast<const P *>(expAvgSq),
          step, foundInf, invScale, count, beta1, beta2, eps, weightDecay,
          decoupled, biasCorrection, partials);
      lambRateKernel<<<1, kThreads, 0, stream()>>>(partials, blocks, lr,
                                                   foundInf, rate);
      lambKernel<P, G><<<blocks, kThreads, 0, stream()>>>(
          static_cast<P *>(param), static_cast<const G *>(grad),
          static_cast<P *>(expAvg), static_cast<P *>(expAvgSq), step, foundInf,
          invScale, copyDtype, copy, count, beta1, beta2, eps, weightDecay,
          decoupled, biasCorrection, rate);
    });
    MPCRT_CUDA_LAUNCHED("adam_update (lamb)");
    return;
  }
  dispatchPair(p, g, "adam_update", [&](auto *pt, auto *gt) {
    using P = std::remove_pointer_t<decltype(pt)>;
    using G = std::remove_pointer_t<decltype(gt)>;
    adamKernel<P, G><<<blocksFor(count), kThreads, 0, stream()>>>(
        static_cast<P *>(param), static_cast<const G *>(grad),
        static_cast<P *>(expAvg), static_cast<P *>(expAvgSq), lr, step,
        foundInf, invScale, copyDtype, copy, count, beta1, beta2, eps,
        weightDecay, decoupled, biasCorrection);
  });
  MPCRT_CUDA_LAUNCHED("adam_update");
}

namespace {

/// Calls launch(p, g, list, blocks) for the tensors of each type pair, in
/// their order, kMaxUpdates a list; `expAvgs` and `expAvgSqs` may be null.
template <typename Launch>
void forEachUpdateList(int64_t numTensors, const mpcrt_dtype *paramDtypes,
                       const mpcrt_dtype *gradDtypes, void *const *params,
                       const void *const *grads, void *const *expAvgs,
                       void *const *expAvgSqs, const mpcrt_dtype *copyDtypes,
                       void *const *copies, const int64_t *sizes,
                       Launch launch) {
  std::vector<bool> done(numTensors, false);
  for (int64_t first = 0; first < numTensors; ++first) {
    if (done[first])
      continue;
    mpcrt_dtype p = paramDtypes[first], g = gradDtypes[first];
    std::vector<int64_t> members;
    for (int64_t t = first; t < numTensors; ++t)
      if (!done[t] && paramDtypes[t] == p && gradDtypes[t] == g) {
        members.push_back(t);
        done[t] = true;
      }
    for (size_t from = 0; from < members.size(); from += kMaxUpdates) {
      UpdateList list{};
      list.count = static_cast<int>(
          std::min<size_t>(kMaxUpdates, members.size() - from));
      int64_t blocks = 0;
      for (int n = 0; n < list.count; ++n) {
        int64_t t = members[from + n];
        list.param[n] = params[t];
        list.grad[n] = grads[t];
        list.expAvg[n] = expAvgs ? expAvgs[t] : nullptr;
        list.expAvgSq[n] = expAvgSqs ? expAvgSqs[t] : nullptr;
        list.copy[n] = copies[t];
        list.copyDtype[n] = copyDtypes[t];
        list.size[n] = sizes[t];
        // 4 elements per access where every pointer allows it.
        int64_t p4 = 4 * bytesOf(p), g4 = 4 * bytesOf(g);
        auto fits = [](const void *ptr, int64_t bytes) {
          return !ptr || alignedTo(ptr, size_t(bytes));
        };
        list.vectors[n] = fits(list.param[n], p4) && fits(list.grad[n], g4) &&
                          fits(list.expAvg[n], p4) &&
                          fits(list.expAvgSq[n], p4) &&
                          fits(list.copy[n], 4 * bytesOf(list.copyDtype[n]));
        list.firstBlock[n] = blocks;
        blocks += (sizes[t] + kChunk - 1) / kChunk;
      }
      list.firstBlock[list.count] = blocks;
      if (blocks > 0)
        launch(p, g, list, blocks);
    }
  }
}

} // namespace

void sgdUpdateMulti(int64_t numTensors, const mpcrt_dtype *paramDtypes,
                    const mpcrt_dtype *gradDtypes, void *const *params,
                    const void *const *grads, void *const *momentumBuffers,
                    const mpcrt_dtype *copyDtypes, void *const *copies,
                    const int64_t *sizes, const float *lr,
                    const uint8_t *foundInf, const float *invScale,
                    double momentum, double dampening, bool nesterov,
                    double weightDecay) {
  forEachUpdateList(
      numTensors, paramDtypes, gradDtypes, params, grads, momentumBuffers,
      nullptr, copyDtypes, copies, sizes,
      [&](mpcrt_dtype p, mpcrt_dtype g, const UpdateList &list,
          int64_t blocks) {
        dispatchPair(p, g, "sgd_update", [&](auto *pt, auto *gt) {
          using P = std::remove_pointer_t<decltype(pt)>;
          using G = std::remove_pointer_t<decltype(gt)>;
          sgdMultiKernel<P, G>
              <<<static_cast<unsigned>(blocks), kThreads, 0, stream()>>>(
                  list, lr, foundInf, invScale, momentum, dampening, nesterov,
                  weightDecay);
        });
        MPCRT_CUDA_LAUNCHED("sgd_update (multi-tensor)");
      });
}

void adamUpdateMulti(int64_t numTensors, const mpcrt_dtype *paramDtypes,
                     const mpcrt_dtype *gradDtypes, void *const *params,
                     const void *const *grads, void *const *expAvgs,
                     void *const *expAvgSqs, const mpcrt_dtype *copyDtypes,
                     void *const *copies, const int64_t *sizes, const float *lr,
                     const int32_t *step, const uint8_t *foundInf,
                     const float *invScale, double beta1, double beta2,
                     double eps, double weightDecay, bool decoupled,
                     bool biasCorrection, bool lamb) {
  forEachUpdateList(
      numTensors, paramDtypes, gradDtypes, params, grads, expAvgs, expAvgSqs,
      copyDtypes, copies, sizes,
      [&](mpcrt_dtype p, mpcrt_dtype g, const UpdateList &list,
          int64_t blocks) {
        dispatchPair(p, g, "adam_update", [&](auto *pt, auto *gt) {
          using P = std::remove_pointer_t<decltype(pt)>;
          using G = std::remove_pointer_t<decltype(gt)>;
          if (lamb) {
            // 2 doubles per block, then a rate per tensor (the scratch is
            // counted in floats).
            auto *partials = reinterpret_cast<double *>(
                scratchF32(4 * (blocks + int64_t(kMaxUpdates))));
            double *rates = partials + 2 * blocks;
            unsigned grid = static_cast<unsigned>(blocks);
            lambNormsMultiKernel<P, G><<<grid, kThreads, 0, stream()>>>(
                list, step, foundInf, invScale, beta1, beta2, eps, weightDecay,
                decoupled, biasCorrection, partials);
            lambRatesMultiKernel<<<list.count, kThreads, 0, stream()>>>(
                list, partials, lr, foundInf, rates);
            lambMultiKernel<P, G><<<grid, kThreads, 0, stream()>>>(
                list, step, foundInf, invScale, beta1, beta2, eps, weightDecay,
                decoupled, biasCorrection, rates);
            return;
          }
          adamMultiKernel<P, G>
              <<<static_cast<unsigned>(blocks), kThreads, 0, stream()>>>(
                  list, lr, step, foundInf, invScale, beta1, beta2, eps,
                  weightDecay, decoupled, biasCorrection);
        });
        MPCRT_CUDA_LAUNCHED("adam_update (multi-tensor)");
      });
}

} // namespace mpcrt::cuda
