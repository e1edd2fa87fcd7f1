//===- Nn.cu - batch norm, pooling, upsampling, pointwise losses ----------===//
//
// The CPU reference's formulas on the device (cuDNN's batch norm and
// pooling are not used yet). Channel statistics are column reductions
// (Columns.cuh); a loss's sum is up to 1024 blocks of partial sums added
// by one block in a fixed order; pooling gradients gather per input
// element in the accumulator type (deterministic, f64 kept f64).
//
//===----------------------------------------------------------------------===//

#include "Columns.cuh"
#include "Device.cuh"
#include "Formulas.h"

#include <algorithm>
#include <type_traits>

namespace mpcrt::cuda {
namespace {

/// Batch norm over [rows, c] (channels last): the statistics are column
/// reductions (Columns.cuh), the normalisation and its gradient elementwise.
template <typename T> struct ChannelValue {
  const T *x;
  int64_t c;
  using A = typename Storage<T>::Acc;
  __device__ Partial<A, 1> operator()(int64_t, int64_t r, int64_t ch) const {
    return {{Storage<T>::load(x[r * c + ch])}};
  }
};

/// Per channel: stats[ch] = mean, from the sum.
template <typename A> struct StoreMean {
  A *stats;
  int64_t rows;
  __device__ void operator()(int64_t, int64_t ch,
                             const Partial<A, 1> &s) const {
    stats[ch] = s.v[0] / static_cast<A>(rows);
  }
};

template <typename T> struct SquaredDeviation {
  const T *x;
  const typename Storage<T>::Acc *mean;
  int64_t c;
  using A = typename Storage<T>::Acc;
  __device__ Partial<A, 1> operator()(int64_t, int64_t r, int64_t ch) const {
    A d = Storage<T>::load(x[r * c + ch]) - mean[ch];
    return {{d * d}};
  }
};

/// Per channel, from the sum of squared deviations: stats[c + ch] =
/// invstd, the saved statistics and the running ones.
template <typename A> struct StoreVariance {
  A *stats;
  mpcrt_dtype pd;
  void *runningMean, *runningVar;
  float *savedMean, *savedInvstd;
  int64_t rows, c;
  double momentum, eps;
  __device__ void operator()(int64_t, int64_t ch,
                             const Partial<A, 1> &s) const {
    A mean = stats[ch], var = s.v[0];
    A biased = var / static_cast<A>(rows);
    A unbiased = rows > 1 ? var / static_cast<A>(rows - 1) : biased;
    A invstd = A(1) / sqrt(biased + static_cast<A>(eps));
    stats[c + ch] = invstd;
    savedMean[ch] = static_cast<float>(mean);
    savedInvstd[ch] = static_cast<float>(invstd);
    storeAny(pd, runningMean, ch,
             (1 - momentum) * loadAny(pd, runningMean, ch) +
                 momentum * static_cast<double>(mean));
    storeAny(pd, runningVar, ch,
             (1 - momentum) * loadAny(pd, runningVar, ch) +
                 momentum * static_cast<double>(unbiased));
  }
};

template <typename T>
__global__ void batchNormApplyKernel(const T *x, mpcrt_dtype pd,
                                     const void *gamma, const void *beta,
                                     const typename Storage<T>::Acc *stats,
                                     T *y, int64_t count, int64_t c) {
  using S = Storage<T>;
  using A = typename S::Acc;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t ch = i % c;
    A g = static_cast<A>(loadAny(pd, gamma, ch));
    A b = static_cast<A>(loadAny(pd, beta, ch));
    y[i] = S::store((S::load(x[i]) - stats[ch]) * stats[c + ch] * g + b);
  }
}

/// The backward sums of one element: dy and dy * xhat.
template <typename T> struct BatchNormGradTerms {
  const T *dy, *x;
  const float *savedMean, *savedInvstd;
  int64_t c;
  using A = typename Storage<T>::Acc;
  __device__ Partial<A, 2> operator()(int64_t, int64_t r, int64_t ch) const {
    using S = Storage<T>;
    A d = S::load(dy[r * c + ch]);
    A xhat = (S::load(x[r * c + ch]) - static_cast<A>(savedMean[ch])) *
             static_cast<A>(savedInvstd[ch]);
    return {{d, d * xhat}};
  }
};

/// Per channel: dgamma, dbeta, and the sums for dx in stats[2 ch ..].
template <typename A> struct StoreBatchNormGrads {
  A *stats;
  mpcrt_dtype pd;
  void *dgamma, *dbeta;
  __device__ void operator()(int64_t, int64_t ch,
                             const Partial<A, 2> &s) const {
    stats[2 * ch] = s.v[0];
    stats[2 * ch + 1] = s.v[1];
    storeAny(pd, dgamma, ch, s.v[1]);
    storeAny(pd, dbeta, ch, s.v[0]);
  }
};

template <typename T>
__global__ void batchNormGradInputKernel(const T *dy, const T *x,
                                         mpcrt_dtype pd, const void *gamma,
                                         const float *savedMean,
                                         const float *savedInvstd,
                                         const typename Storage<T>::Acc *stats,
                                         T *dx, int64_t rows, int64_t c) {
  using S = Storage<T>;
  using A = typename S::Acc;
  int64_t count = rows * c;
  A n = static_cast<A>(rows);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t ch = i % c;
    A mean = savedMean[ch], invstd = savedInvstd[ch];
    A g = static_cast<A>(loadAny(pd, gamma, ch));
    A xhat = (S::load(x[i]) - mean) * invstd;
    dx[i] = S::store(
        g * invstd *
        (S::load(dy[i]) - stats[2 * ch] / n - xhat * stats[2 * ch + 1] / n));
  }
}

/// Scratch for a batch norm: 2 c statistics of type A, then the partials.
template <typename A, int K>
A *batchNormScratch(const ColumnPlan &p, int64_t c, Partial<A, K> *&partials) {
  int64_t statBytes = (2 * c * int64_t(sizeof(A)) + 15) / 16 * 16;
  char *base = reinterpret_cast<char *>(
      scratchF32((statBytes + partialBytes<A, K>(p) + 3) / 4));
  partials = reinterpret_cast<Partial<A, K> *>(base + statBytes);
  return reinterpret_cast<A *>(base);
}

/// A pooling window of output element `out` (NHWC): its valid input range
/// and PyTorch's average divisor.
struct Window {
  int64_t n, ch, y0, y1, x0, x1, divisor;
};

__device__ Window windowOf(const mpcrt_pool2d_shape &s, int64_t out) {
  Window w;
  w.ch = out % s.c;
  int64_t rest = out / s.c;
  int64_t ox = rest % s.wo;
  rest /= s.wo;
  int64_t oy = rest % s.ho;
  w.n = rest / s.ho;
  int64_t y0 = oy * s.stride_h - s.pad_h, x0 = ox * s.stride_w - s.pad_w;
  int64_t y1 = min(y0 + s.kh, s.h + s.pad_h),
          x1 = min(x0 + s.kw, s.w + s.pad_w);
  int64_t padded = (y1 - y0) * (x1 - x0);
  w.y0 = y0 > 0 ? y0 : 0;
  w.x0 = x0 > 0 ? x0 : 0;
  w.y1 = min(y1, s.h), w.x1 = min(x1, s.w);
  w.divisor = s.count_include_pad ? padded : (w.y1 - w.y0) * (w.x1 - w.x0);
  return w;
}

/// The first maximum of the window (a NaN wins), -1 when empty.
template <typename T>
__device__ int64_t argmaxOf(const T *x, const mpcrt_pool2d_shape &s,
                            const Window &w) {
  using S = Storage<T>;
  int64_t best = -1;
  for (int64_t y = w.y0; y < w.y1; ++y)
    for (int64_t xx = w.x0; xx < w.x1; ++xx) {
      int64_t i = ((w.n * s.h + y) * s.w + xx) * s.c + w.ch;
      auto v = S::load(x[i]);
      if (isnan(v))
        return i;
      if (best < 0 || v > S::load(x[best]))
        best = i;
    }
  return best;
}

template <typename T>
__global__ void maxPoolKernel(const T *x, T *y, mpcrt_pool2d_shape s,
                              int64_t count) {
  for (int64_t out = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
       out < count; out += int64_t(gridDim.x) * blockDim.x) {
    int64_t best = argmaxOf(x, s, windowOf(s, out));
    y[out] = best < 0 ? Storage<T>::store(-INFINITY) : x[best];
  }
}

/// The output rows (or columns) whose windows hold input row `y`: the
/// half-open range [lo, hi) within [0, outputs).
__device__ void windowsHolding(int64_t y, int64_t k, int64_t stride,
                               int64_t pad, int64_t outputs, int64_t &lo,
                               int64_t &hi) {
  // oy * stride - pad <= y < oy * stride - pad + k
  int64_t first = y + pad - k + 1;
  lo = first <= 0 ? 0 : (first + stride - 1) / stride;
  hi = min((y + pad) / stride + 1, outputs);
}

/// Pooling gradients gather: each input element sums, in the accumulator
/// type and a fixed order, what the windows that hold it send back. No
/// atomics, so the result is deterministic and f64 stays f64.
template <typename T>
__global__ void maxPoolBackwardKernel(const T *dy, const T *x, T *dx,
                                      mpcrt_pool2d_shape s, int64_t count) {
  using S = Storage<T>;
  using A = typename S::Acc;
  for (int64_t in = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; in < count;
       in += int64_t(gridDim.x) * blockDim.x) {
    int64_t ch = in % s.c, rest = in / s.c;
    int64_t xx = rest % s.w;
    rest /= s.w;
    int64_t y = rest % s.h, n = rest / s.h;
    int64_t oy0, oy1, ox0, ox1;
    windowsHolding(y, s.kh, s.stride_h, s.pad_h, s.ho, oy0, oy1);
    windowsHolding(xx, s.kw, s.stride_w, s.pad_w, s.wo, ox0, ox1);
    A sum = 0;
    for (int64_t oy = oy0; oy < oy1; ++oy)
      for (int64_t ox = ox0; ox < ox1; ++ox) {
        int64_t out = ((n * s.ho + oy) * s.wo + ox) * s.c + ch;
        if (argmaxOf(x, s, windowOf(s, out)) == in)
          sum += S::load(dy[out]);
      }
    dx[in] = S::store(sum);
  }
}

template <typename T>
__global__ void avgPoolKernel(const T *x, T *y, mpcrt_pool2d_shape s,
                              int64_t count) {
  using S = Storage<T>;
  using A = typename S::Acc;
  for (int64_t out = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
       out < count; out += int64_t(gridDim.x) * blockDim.x) {
    Window w = windowOf(s, out);
    A sum = 0;
    for (int64_t yy = w.y0; yy < w.y1; ++yy)
      for (int64_t xx = w.x0; xx < w.x1; ++xx)
        sum += S::load(x[((w.n * s.h + yy) * s.w + xx) * s.c + w.ch]);
    y[out] = S::store(sum / static_cast<A>(w.divisor));
  }
}

template <typename T>
__global__ void avgPoolBackwardKernel(const T *dy, T *dx, mpcrt_pool2d_shape s,
                                      int64_t count) {
  using S = Storage<T>;
  using A = typename S::Acc;
  for (int64_t in = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; in < count;
       in += int64_t(gridDim.x) * blockDim.x) {
    int64_t ch = in % s.c, rest = in / s.c;
    int64_t xx = rest % s.w;
    rest /= s.w;
    int64_t y = rest % s.h, n = rest / s.h;
    int64_t oy0, oy1, ox0, ox1;
    windowsHolding(y, s.kh, s.stride_h, s.pad_h, s.ho, oy0, oy1);
    windowsHolding(xx, s.kw, s.stride_w, s.pad_w, s.wo, ox0, ox1);
    A sum = 0;
    for (int64_t oy = oy0; oy < oy1; ++oy)
      for (int64_t ox = ox0; ox < ox1; ++ox) {
        int64_t out = ((n * s.ho + oy) * s.wo + ox) * s.c + ch;
        Window w = windowOf(s, out);
        sum += S::load(dy[out]) / static_cast<A>(w.divisor);
      }
    dx[in] = S::store(sum);
  }
}

template <typename T>
__global__ void upsampleKernel(const T *x, T *y, int64_t n, int64_t h,
                               int64_t w, int64_t c, int64_t sh, int64_t sw) {
  int64_t ho = h * sh, wo = w * sw, count = n * ho * wo * c;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t ch = i % c, rest = i / c;
    int64_t xx = rest % wo;
    rest /= wo;
    int64_t yy = rest % ho, b = rest / ho;
    y[i] = x[((b * h + yy / sh) * w + xx / sw) * c + ch];
  }
}

/// The adjoint as a gather: each input sums its sh x sw outputs in order.
template <typename T>
__global__ void upsampleBackwardKernel(const T *dy, T *dx, int64_t n, int64_t h,
                                       int64_t w, int64_t c, int64_t sh,
                                       int64_t sw) {
  using S = Storage<T>;
  using A = typename S::Acc;
  int64_t wo = w * sw, count = n * h * w * c;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t ch = i % c, rest = i / c;
    int64_t xx = rest % w;
    rest /= w;
    int64_t yy = rest % h, b = rest / h;
    A sum = 0;
    for (int64_t dy0 = 0; dy0 < sh; ++dy0)
      for (int64_t dx0 = 0; dx0 < sw; ++dx0)
        sum += S::load(
            dy[((b * h * sh + yy * sh + dy0) * wo + xx * sw + dx0) * c + ch]);
    dx[i] = S::store(sum);
  }
}

/// Pass 1: block b's sum of the terms of its grid-stride elements.
template <typename T, typename A>
__global__ void pointwiseLossPartialsKernel(int32_t kind, const T *x,
                                            const T *t, A *partials,
                                            int64_t count) {
  using S = Storage<T>;
  A sum = 0;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x)
    sum += formulas::pointwiseLoss(kind, S::load(x[i]), S::load(t[i]));
  sum = blockReduce(sum);
  if (threadIdx.x == 0)
    partials[blockIdx.x] = sum;
}

/// Pass 2, one block: the blocks' sums in a fixed order (a grid that
/// depends on the count only), then the mean.
template <typename T, typename A>
__global__ void pointwiseLossSumKernel(const A *partials, int64_t blocks,
                                       T *loss, int64_t count, bool mean) {
  using S = Storage<T>;
  A sum = 0;
  for (int64_t b = threadIdx.x; b < blocks; b += blockDim.x)
    sum += partials[b];
  sum = blockReduce(sum);
  // Nothing to average: 0 (not 0/0), as the reference.
  if (threadIdx.x == 0)
    *loss = S::store(mean && count > 0 ? sum / static_cast<A>(count) : sum);
}

template <typename T>
__global__ void pointwiseLossBackwardKernel(int32_t kind, const T *dl,
                                            const T *x, const T *t, T *dx,
                                            int64_t count, bool mean) {
  using S = Storage<T>;
  using A = typename S::Acc;
  A scale = S::load(*dl) / (mean ? static_cast<A>(count) : A(1));
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x)
    dx[i] = S::store(scale * formulas::pointwiseLossGrad(kind, S::load(x[i]),
                                                         S::load(t[i])));
}

} // namespace

void batchNorm(mpcrt_dtype dtype, const void *input, mpcrt_dtype paramDtype,
               const void *gamma, const void *beta, void *runningMean,
               void *runningVar, void *output, float *savedMean,
               float *savedInvstd, int64_t rows, int64_t c, double momentum,
               double epsilon) {
  if (c == 0)
    return;
  if (rows == 0) { // no statistics: running ones untouched, saved ones 0
    zero(savedMean, c * sizeof(float));
    zero(savedInvstd, c * sizeof(float));
    return;
  }
  dispatch(dtype, [&](auto *t) {
    using T = MPCRT_TYPE(t);
    using A = typename Storage<T>::Acc;
    const T *x = static_cast<const T *>(input);
    ColumnPlan plan = planColumns(1, rows, c);
    Partial<A, 1> *partials;
    A *stats = batchNormScratch(plan, c, partials);
    reduceColumnsOf(plan, ChannelValue<T>{x, c}, SumOf<A, 1>{},
                    Partial<A, 1>{{A(0)}}, StoreMean<A>{stats, rows}, partials);
    reduceColumnsOf(plan, SquaredDeviation<T>{x, stats, c}, SumOf<A, 1>{},
                    Partial<A, 1>{{A(0)}},
                    StoreVariance<A>{stats, paramDtype, runningMean, runningVar,
                                     savedMean, savedInvstd, rows, c, momentum,
                                     epsilon},
                    partials);
    batchNormApplyKernel<T><<<blocksFor(rows * c), kThreads, 0, stream()>>>(
        x, paramDtype, gamma, beta, stats, static_cast<T *>(output), rows * c,
        c);
  });
  MPCRT_CUDA_LAUNCHED("batch_norm");
}

void batchNormBackward(mpcrt_dtype dtype, const void *gradOutput,
                       const void *input, mpcrt_dtype paramDtype,
                       const void *gamma, const float *savedMean,
                       const float *savedInvstd, void *gradInput,
                       void *gradGamma, void *gradBeta, int64_t rows,
                       int64_t c) {
  if (c == 0)
    return;
  if (rows == 0) { // the parameter gradients are sums of nothing
    fill(paramDtype, gradGamma, c, 0.0);
    fill(paramDtype, gradBeta, c, 0.0);
    return;
  }
  dispatch(dtype, [&](auto *t) {
    using T = MPCRT_TYPE(t);
    using A = typename Storage<T>::Acc;
    const T *dy = static_cast<const T *>(gradOutput);
    const T *x = static_cast<const T *>(input);
    ColumnPlan plan = planColumns(1, rows, c);
    Partial<A, 2> *partials;
    A *stats = batchNormScratch(plan, c, partials);
    reduceColumnsOf(
        plan, BatchNormGradTerms<T>{dy, x, savedMean, savedInvstd, c},
        SumOf<A, 2>{}, Partial<A, 2>{{A(0), A(0)}},
        StoreBatchNormGrads<A>{stats, paramDtype, gradGamma, gradBeta},
        partials);
    batchNormGradInputKernel<T><<<blocksFor(rows * c), kThreads, 0, stream()>>>(
        dy, x, paramDtype, gamma, savedMean, savedInvstd, stats,
        static_cast<T *>(gradInput), rows, c);
  });
  MPCRT_CUDA_LAUNCHED("batch_norm_backward");
}

void maxPool2d(mpcrt_dtype dtype, const void *input, void *output,
               const mpcrt_pool2d_shape &s) {
  int64_t count = s.n * s.ho * s.wo * s.c;
  if (count == 0)
    return;
  dispatch(dtype, [&](auto *t) {
    using T = MPCRT_TYPE(t);
    maxPoolKernel<T><<<blocksFor(count), kThreads, 0, stream()>>>(
        static_cast<const T *>(input), static_cast<T *>(output), s, count);
  });
  MPCRT_CUDA_LAUNCHED("max_pool2d");
}

void maxPool2dBackward(mpcrt_dtype dtype, const void *gradOutput,
                       const void *input, void *gradInput,
                       const mpcrt_pool2d_shape &s) {
  int64_t inputs = s.n * s.h * s.w * s.c;
  if (inputs == 0)
    return;
  dispatch(dtype, [&](auto *t) {
    using T = MPCRT_TYPE(t);
    maxPoolBackwardKernel<T><<<blocksFor(inputs), kThreads, 0, stream()>>>(
        static_cast<const T *>(gradOutput), static_cast<const T *>(input),
        static_cast<T *>(gradInput), s, inputs);
  });
  MPCRT_CUDA_LAUNCHED("max_pool2d_backward");
}

void avgPool2d(mpcrt_dtype dtype, const void *input, void *output,
               const mpcrt_pool2d_shape &s) {
  int64_t count = s.n * s.ho * s.wo * s.c;
  if (count == 0)
    return;
  dispatch(dtype, [&](auto *t) {
    using T = MPCRT_TYPE(t);
    avgPoolKernel<T><<<blocksFor(count), kThreads, 0, stream()>>>(
        static_cast<const T *>(input), static_cast<T *>(output), s, count);
  });
  MPCRT_CUDA_LAUNCHED("avg_pool2d");
}

void avgPool2dBackward(mpcrt_dtype dtype, const void *gradOutput,
                       void *gradInput, const mpcrt_pool2d_shape &s) {
  int64_t inputs = s.n * s.h * s.w * s.c;
  if (inputs == 0)
    return;
  dispatch(dtype, [&](auto *t) {
    using T = MPCRT_TYPE(t);
    avgPoolBackwardKernel<T><<<blocksFor(inputs), kThreads, 0, stream()>>>(
        static_cast<const T *>(gradOutput), static_cast<T *>(gradInput), s,
        inputs);
  });
  MPCRT_CUDA_LAUNCHED("avg_pool2d_backward");
}

void upsampleNearest2d(mpcrt_dtype dtype, const void *input, void *output,
                       int64_t n, int64_t h, int64_t w, int64_t c, int64_t sh,
                       int64_t sw) {
  int64_t count = n * h * sh * w * sw * c;
  if (count == 0)
    return;
  dispatch(dtype, [&](auto *t) {
    using T = MPCRT_TYPE(t);
    upsampleKernel<T><<<blocksFor(count), kThreads, 0, stream()>>>(
        static_cast<const T *>(input), static_cast<T *>(output), n, h, w, c, sh,
        sw);
  });
  MPCRT_CUDA_LAUNCHED("upsample_nearest2d");
}

void upsampleNearest2dBackward(mpcrt_dtype dtype, const void *gradOutput,
                               void *gradInput, int64_t n, int64_t h, int64_t w,
                               int64_t c, int64_t sh, int64_t sw) {
  int64_t count = n * h * w * c;
  if (count == 0)
    return;
  dispatch(dtype, [&](auto *t) {
    using T = MPCRT_TYPE(t);
    upsampleBackwardKernel<T><<<blocksFor(count), kThreads, 0, stream()>>>(
        static_cast<const T *>(gradOutput), static_cast<T *>(gradInput), n, h,
        w, c, sh, sw);
  });
  MPCRT_CUDA_LAUNCHED("upsample_nearest2d_backward");
}

void pointwiseLoss(mpcrt_dtype dtype, int32_t kind, const void *input,
                   const void *target, void *loss, int64_t count, bool mean) {
  dispatch(dtype, [&](auto *t) {
    using T = MPCRT_TYPE(t);
    using A = typename Storage<T>::Acc;
    // At most 1024 blocks of partial sums (in the f32 scratch buffer; f64
    // sums take two of its elements each), then one block.
    unsigned blocks = std::min(blocksFor(count), 1024u);
    auto *partials =
        reinterpret_cast<A *>(scratchF32(blocks * int64_t(sizeof(A) / 4)));
    pointwiseLossPartialsKernel<T, A><<<blocks, kThreads, 0, stream()>>>(
        kind, static_cast<const T *>(input), static_cast<const T *>(target),
        partials, count);
    pointwiseLossSumKernel<T, A><<<1, kThreads, 0, stream()>>>(
        partials, blocks, static_cast<T *>(loss), count, mean);
  });
  MPCRT_CUDA_LAUNCHED("pointwise_loss");
}

void pointwiseLossBackward(mpcrt_dtype dtype, int32_t kind,
                           const void *gradLoss, const void *input,
                           const void *target, void *gradInput, int64_t count,
                           bool mean) {
  if (count <= 0)
    return;
  dispatch(dtype, [&](auto *t) {
    using T = MPCRT_TYPE(t);
    pointwiseLossBackwardKernel<T><<<blocksFor(count), kThreads, 0, stream()>>>(
        kind, static_cast<const T *>(gradLoss), static_cast<const T *>(input),
        static_cast<const T *>(target), static_cast<T *>(gradInput), count,
        mean);
  });
  MPCRT_CUDA_LAUNCHED("pointwise_loss_backward");
}

} // namespace mpcrt::cuda
