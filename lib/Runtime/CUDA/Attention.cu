//===- Attention.cu - mpc.attention without the score matrix -------------===//
//
// The CPU reference's function (lib/Runtime/CPU/Nn.cpp), computed without
// writing the [heads, sq, sk] scores: one warp per query row streams the
// keys with an online softmax (running maximum and sum, the accumulator
// rescaled when the maximum grows) and keeps its output row in registers,
// the head sizes split over the lanes. The dropout bits are the dropout
// kernel's (formulas::dropoutKeeps on the index into the [heads, sq, sk]
// probabilities), the mask's fill formulas::masked's. The backward pass is
// two kernels: one warp per query row
// for dq (and D_i = sum_j P dP, kept for the second), one warp per key row
// for dk and dv; each recomputes the probabilities from the log-sum-exp.
//
// These are plain CUDA-core kernels (dot products as warp reductions), not
// Tensor Core flash attention: correct first, and the place cuDNN's fused
// attention would take. Head sizes up to 256.
//
//===----------------------------------------------------------------------===//

#include "Device.cuh"
#include "Formulas.h"
#include "Kernels.h"

#include <cstdio>
#include <cstdlib>

namespace mpcrt::cuda {
namespace {

constexpr int kWarp = 32;
constexpr int kMaxPerLane = 8; // head size <= 256
constexpr int kWarpsPerBlock = kThreads / kWarp;

struct Dims {
  int64_t heads, sq, sk, d, dv;
  double scale, p;
  uint64_t seed;
  formulas::AttentionMask mask;
};

/// Score (h, i, j) from its dot product: scaled plus the bias, or the
/// mask's fill.
template <typename A>
__device__ A score(const Dims &m, int64_t h, int64_t i, int64_t j, A dot) {
  return formulas::masked(m.mask, h, i, j)
             ? static_cast<A>(m.mask.value)
             : static_cast<A>(m.scale) * dot +
                   static_cast<A>(formulas::scoreBias(m.mask, h, i, j));
}

template <typename A> __device__ A warpSum(A v) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2)
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

/// Two rows of n elements dotted, spread over the lanes (lane c takes
/// elements c, c + 32, ...); every lane gets the sum.
template <typename T, typename A>
__device__ A dotRows(const T *a, const T *b, int64_t n, int lane) {
  using S = Storage<T>;
  A sum = 0;
  for (int64_t c = lane; c < n; c += kWarp)
    sum += S::load(a[c]) * S::load(b[c]);
  return warpSum(sum);
}

/// 0 where dropout drops element (h, i, j) of the probabilities, else
/// 1/(1 - p).
template <typename A>
__device__ A keepFactor(const Dims &m, int64_t step, int64_t h, int64_t i,
                        int64_t j) {
  if (m.p == 0)
    return A(1);
  int64_t index = (h * m.sq + i) * m.sk + j;
  return formulas::dropoutKeeps(m.seed, step, index, m.p)
             ? static_cast<A>(1 / (1 - m.p))
             : A(0);
}

/// Score (i, j) of head h recomputed for the backward pass: the
/// probability P (from the row's saved log-sum-exp), the dropout factor Z
/// and dP = (dO_i . v_j) Z, given the rows q_i, k_j, dO_i and v_j.
template <typename A> struct PairTerms { A p, z, dp; };
template <typename T, typename A>
__device__ PairTerms<A> pairTerms(const Dims &m, int64_t step, int64_t h,
                                  int64_t i, int64_t j, const T *qi,
                                  const T *kj, const T *goi, const T *vj, A lse,
                                  int lane) {
  A p = exp(score(m, h, i, j, dotRows<T, A>(qi, kj, m.d, lane)) - lse);
  A z = keepFactor<A>(m, step, h, i, j);
  return {p, z, dotRows<T, A>(goi, vj, m.dv, lane) * z};
}

/// dS of score (i, j): none through a filled score.
template <typename A>
__device__ A scoreGrad(const Dims &m, int64_t h, int64_t i, int64_t j,
                       const PairTerms<A> &x, A rowDot) {
  return formulas::masked(m.mask, h, i, j)
             ? A(0)
             : static_cast<A>(m.scale) * x.p * (x.dp - rowDot);
}

template <typename T>
__global__ void attentionKernel(const T *query, const T *key, const T *value,
                                T *result, typename Storage<T>::Acc *lse,
                                Dims m, const int64_t *step) {
  using S = Storage<T>;
  using A = typename S::Acc;
  int lane = threadIdx.x % kWarp;
  int64_t row = blockIdx.x * int64_t(kWarpsPerBlock) + threadIdx.x / kWarp;
  if (row >= m.heads * m.sq)
    return;
  int64_t h = row / m.sq, i = row % m.sq, t = *step;
  const T *q = query + row * m.d;
  const T *k = key + h * m.sk * m.d;
  const T *v = value + h * m.sk * m.dv;
  A acc[kMaxPerLane];
  for (int e = 0; e < kMaxPerLane; ++e)
    acc[e] = 0;
  A max = -INFINITY, sum = 0;
  for (int64_t j = 0; j < m.sk; ++j) {
    A s = score(m, h, i, j, dotRows<T, A>(q, k + j * m.d, m.d, lane));
    A newMax = s > max ? s : max;
    A rescale = exp(max - newMax); // 0 on the first key (max = -inf)
    A e = exp(s - newMax);
    sum = sum * rescale + e;
    A weight = e * keepFactor<A>(m, t, h, i, j);
    for (int n = 0; n < kMaxPerLane; ++n) {
      int64_t c = lane + int64_t(n) * kWarp;
      acc[n] = acc[n] * rescale +
               (c < m.dv ? weight * S::load(v[j * m.dv + c]) : A(0));
    }
    max = newMax;
  }
  for (int n = 0; n < kMaxPerLane; ++n) {
    int64_t c = lane + int64_t(n) * kWarp;
    if (c < m.dv)
      result[row * m.dv + c] = S::store(acc[n] / sum);
  }
  if (lane == 0)
    lse[row] = max + log(sum);
}

/// dq of query row i, and D_i = sum_j P_ij dP_ij into `rowDot`.
template <typename T>
__global__ void
attentionGradQueryKernel(const T *grad, const T *query, const T *key,
                         const T *value, const typename Storage<T>::Acc *lse,
                         T *gradQuery, typename Storage<T>::Acc *rowDot, Dims m,
                         const int64_t *step) {
  using S = Storage<T>;
  using A = typename S::Acc;
  int lane = threadIdx.x % kWarp;
  int64_t row = blockIdx.x * int64_t(kWarpsPerBlock) + threadIdx.x / kWarp;
  if (row >= m.heads * m.sq)
    return;
  int64_t h = row / m.sq, i = row % m.sq, t = *step;
  const T *q = query + row * m.d, *go = grad + row * m.dv;
  const T *k = key + h * m.sk * m.d, *v = value + h * m.sk * m.dv;
  auto terms = [&](int64_t j) {
    return pairTerms<T, A>(m, t, h, i, j, q, k + j * m.d, go, v + j * m.dv,
                           lse[row], lane);
  };
  A dot = 0;
  for (int64_t j = 0; j < m.sk; ++j) {
    PairTerms<A> x = terms(j);
    dot += x.p * x.dp;
  }
  A dq[kMaxPerLane];
  for (int n = 0; n < kMaxPerLane; ++n)
    dq[n] = 0;
  for (int64_t j = 0; j < m.sk; ++j) {
    A ds = scoreGrad(m, h, i, j, terms(j), dot);
    for (int n = 0; n < kMaxPerLane; ++n) {
      int64_t c = lane + int64_t(n) * kWarp;
      if (c < m.d)
        dq[n] += ds * S::load(k[j * m.d + c]);
    }
  }
  for (int n = 0; n < kMaxPerLane; ++n) {
    int64_t c = lane + int64_t(n) * kWarp;
    if (c < m.d)
      gradQuery[row * m.d + c] = S::store(dq[n]);
  }
  if (lane == 0)
    rowDot[row] = dot;
}

/// dk and dv of key row j: sums over the query rows.
template <typename T>
__global__ void
attentionGradKeyValueKernel(const T *grad, const T *query, const T *key,
                            const T *value, const typename Storage<T>::Acc *lse,
                            const typename Storage<T>::Acc *rowDot, T *gradKey,
                            T *gradValue, Dims m, const int64_t *step) {
  using S = Storage<T>;
  using A = typename S::Acc;
  int lane = threadIdx.x % kWarp;
  int64_t row = blockIdx.x * int64_t(kWarpsPerBlock) + threadIdx.x / kWarp;
  if (row >= m.heads * m.sk)
    return;
  int64_t h = row / m.sk, j = row % m.sk, t = *step;
  const T *k = key + row * m.d, *v = value + row * m.dv;
  const T *q = query + h * m.sq * m.d, *go = grad + h * m.sq * m.dv;
  A dk[kMaxPerLane], dv[kMaxPerLane];
  for (int n = 0; n < kMaxPerLane; ++n)
    dk[n] = dv[n] = 0;
  for (int64_t i = 0; i < m.sq; ++i) {
    int64_t r = h * m.sq + i;
    PairTerms<A> x = pairTerms<T, A>(m, t, h, i, j, q + i * m.d, k,
                                     go + i * m.dv, v, lse[r], lane);
    A ds = scoreGrad(m, h, i, j, x, rowDot[r]);
    for (int n = 0; n < kMaxPerLane; ++n) {
      int64_t c = lane + int64_t(n) * kWarp;
      if (c < m.dv)
        dv[n] += x.p * x.z * S::load(go[i * m.dv + c]);
      if (c < m.d)
        dk[n] += ds * S::load(q[i * m.d + c]);
    }
  }
  for (int n = 0; n < kMaxPerLane; ++n) {
    int64_t c = lane + int64_t(n) * kWarp;
    if (c < m.dv)
      gradValue[row * m.dv + c] = S::store(dv[n]);
    if (c < m.d)
      gradKey[row * m.d + c] = S::store(dk[n]);
  }
}

unsigned blocksForRows(int64_t rows) {
  return static_cast<unsigned>((rows + kWarpsPerBlock - 1) / kWarpsPerBlock);
}

void checkHeadSizes(int64_t d, int64_t dv) {
  if (d <= kWarp * kMaxPerLane && dv <= kWarp * kMaxPerLane)
    return;
  std::fprintf(stderr,
               "error: mpc.attention: head sizes up to %d on the GPU, got "
               "%lld and %lld\n",
               kWarp * kMaxPerLane, static_cast<long long>(d),
               static_cast<long long>(dv));
  std::exit(1);
}

} // namespace

void attention(mpcrt_dtype dtype, const void *query, const void *key,
               const void *value, void *result, void *logsumexp, int64_t heads,
               int64_t sq, int64_t sk, int64_t d, int64_t dv, double scale,
               double dropoutP, uint64_t seed, const int64_t *step,
               const formulas::AttentionMask &mask) {
  if (heads * sq == 0)
    return;
  checkHeadSizes(d, dv);
  Dims m{heads, sq, sk, d, dv, scale, dropoutP, seed, mask};
  dispatch(dtype, [&](auto *t) {
    using T = MPCRT_TYPE(t);
    using A = typename Storage<T>::Acc;
    attentionKernel<T><<<blocksForRows(heads * sq), kThreads, 0, stream()>>>(
        static_cast<const T *>(query), static_cast<const T *>(key),
        static_cast<const T *>(value), static_cast<T *>(result),
        static_cast<A *>(logsumexp), m, step);
  });
  MPCRT_CUDA_LAUNCHED("attention");
}

void attentionBackward(mpcrt_dtype dtype, const void *grad, const void *query,
                       const void *key, const void *value,
                       const void *logsumexp, void *gradQuery, void *gradKey,
                       void *gradValue, int64_t heads, int64_t sq, int64_t sk,
                       int64_t d, int64_t dv, double scale, double dropoutP,
                       uint64_t seed, const int64_t *step,
                       const formulas::AttentionMask &mask) {
  if (heads * (sq + sk) == 0)
    return;
  checkHeadSizes(d, dv);
  Dims m{heads, sq, sk, d, dv, scale, dropoutP, seed, mask};
  dispatch(dtype, [&](auto *t) {
    using T = MPCRT_TYPE(t);
    using A = typename Storage<T>::Acc;
    // D_i, in the accumulation type, between the two kernels.
    A *rowDot = reinterpret_cast<A *>(
        scratchF32(heads * sq * int64_t(sizeof(A) / sizeof(float))));
    auto *stats = static_cast<const A *>(logsumexp);
    attentionGradQueryKernel<T>
        <<<blocksForRows(heads * sq), kThreads, 0, stream()>>>(
            static_cast<const T *>(grad), static_cast<const T *>(query),
            static_cast<const T *>(key), static_cast<const T *>(value), stats,
            static_cast<T *>(gradQuery), rowDot, m, step);
    MPCRT_CUDA_LAUNCHED("attention_backward (query)");
    attentionGradKeyValueKernel<T>
        <<<blocksForRows(heads * sk), kThreads, 0, stream()>>>(
            static_cast<const T *>(grad), static_cast<const T *>(query),
            static_cast<const T *>(key), static_cast<const T *>(value), stats,
            rowDot, static_cast<T *>(gradKey), static_cast<T *>(gradValue), m,
            step);
  });
  MPCRT_CUDA_LAUNCHED("attention_backward (key, value)");
}

} // namespace mpcrt::cuda
