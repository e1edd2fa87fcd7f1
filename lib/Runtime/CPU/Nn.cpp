//===- Nn.cpp - batch norm, pooling, embedding, dropout, attention -------===//

#include "Blas.h"
#include "Formulas.h"
#include "LayerNorm.h"
#include "Parallel.h"
#include "Softmax.h"
#include "Storage.h"
#include "mpc/Runtime/mpcrt.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

using namespace mpcrt;

extern "C" void mpcrt_philox4x32(const uint32_t counter[4],
                                 const uint32_t key[2], uint32_t out[4]) {
  uint32_t c[4] = {counter[0], counter[1], counter[2], counter[3]};
  formulas::philox4x32(c, key[0], key[1]);
  std::memcpy(out, c, sizeof c);
}

namespace {

/// Copies element `from` of `in` to element `to` of `out`, elements of
/// `bytes` bytes (a fixed-size copy for the usual sizes, not a call).
inline void copyElement(char *out, int64_t to, const char *in, int64_t from,
                        int32_t bytes) {
  switch (bytes) {
  case 2:
    return std::memcpy(out + to * 2, in + from * 2, 2), void();
  case 4:
    return std::memcpy(out + to * 4, in + from * 4, 4), void();
  case 8:
    return std::memcpy(out + to * 8, in + from * 8, 8), void();
  default:
    std::memcpy(out + to * bytes, in + from * bytes, bytes);
  }
}

/// The strided walk of a copy or scatter, its elements in parallel (each
/// written once).
template <typename Fn>
void stridedWalk(const int64_t *shape, int32_t rank, const int64_t *strides,
                 int64_t offset, Fn fn) {
  parallelFor(
      elementCount(shape, rank), grainFor(4), [&](int64_t begin, int64_t end) {
        forEachStridedIn<1>(shape, rank, {strides}, {offset}, begin, end, fn);
      });
}

} // namespace

extern "C" void mpcrt_strided_copy(const void *input, int64_t offset,
                                   const int64_t *strides, void *output,
                                   const int64_t *shape, int32_t rank,
                                   int32_t bytes) {
  const char *in = static_cast<const char *>(input);
  char *out = static_cast<char *>(output);
  stridedWalk(shape, rank, strides, offset, [&](int64_t i, const int64_t *at) {
    copyElement(out, i, in, at[0], bytes);
  });
}

extern "C" void mpcrt_strided_scatter(const void *input, void *output,
                                      int64_t offset, const int64_t *strides,
                                      const int64_t *shape, int32_t rank,
                                      int32_t bytes) {
  const char *in = static_cast<const char *>(input);
  char *out = static_cast<char *>(output);
  stridedWalk(shape, rank, strides, offset, [&](int64_t i, const int64_t *at) {
    copyElement(out, at[0], in, i, bytes);
  });
}

namespace {

/// Per-channel sums over the rows of a [rows, c] tensor: fn(row, ch)
/// summed in blocks of rows (sizes that depend on c only), the blocks in
/// parallel, their partial sums added in block order.
template <typename A, size_t N, typename Fn>
std::vector<std::array<A, N>> channelSums(int64_t rows, int64_t c, Fn fn) {
  int64_t block =
      std::max<int64_t>(1, (int64_t(1) << 14) / std::max<int64_t>(c, 1));
  int64_t blocks = (rows + block - 1) / block;
  std::vector<A> partial(static_cast<size_t>(blocks * c * N), A(0));
  parallelFor(blocks, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      A *p = partial.data() + b * c * N;
      for (int64_t r = b * block; r < std::min(rows, (b + 1) * block); ++r)
        for (int64_t ch = 0; ch < c; ++ch) {
          std::array<A, N> v = fn(r, ch);
          for (size_t k = 0; k < N; ++k)
            p[ch * N + k] += v[k];
        }
    }
  });
  std::vector<std::array<A, N>> sums(static_cast<size_t>(c));
  for (int64_t ch = 0; ch < c; ++ch)
    for (size_t k = 0; k < N; ++k) {
      A total = 0;
      for (int64_t b = 0; b < blocks; ++b)
        total += partial[(b * c + ch) * N + k];
      sums[ch][k] = total;
    }
  return sums;
}

/// Rows of a [rows, c] loop in parallel blocks.
template <typename Fn> void forRows(int64_t rows, int64_t c, Fn fn) {
  parallelFor(rows, grainFor(4 * c), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      fn(r);
  });
}

/// (x - mean) * invstd: what a batch norm scales and shifts, and its
/// backward's xhat.
template <typename A> A normalized(A x, A mean, A invstd) {
  return (x - mean) * invstd;
}

/// xhat * scale + shift rounded to T: a batch norm's result before its
/// ReLU, which the backward forms again for the ReLU's mask.
template <typename T, typename A> T affine(A xhat, A scale, A shift) {
  return Storage<T>::store(xhat * scale + shift);
}

/// y = (x - mean) * invstd * scale + shift per channel, rounded, then a
/// fused ReLU of the rounded value (as mpc.relu computes it).
template <typename T, typename A>
void applyBatchNorm(const T *x, T *y, int64_t rows, int64_t c,
                    const std::vector<A> &mean, const std::vector<A> &invstds,
                    const std::vector<A> &scale, const std::vector<A> &shift,
                    bool relu) {
  using S = Storage<T>;
  forRows(rows, c, [&](int64_t r) {
    for (int64_t ch = 0; ch < c; ++ch) {
      T v = affine<T>(normalized(S::load(x[r * c + ch]), mean[ch], invstds[ch]),
                      scale[ch], shift[ch]);
      y[r * c + ch] =
          relu ? S::store(formulas::unary(MPCRT_RELU, S::load(v))) : v;
    }
  });
}

/// The sum over the ranks of a synchronised batch norm
/// (mpcrt_set_rank_sum); null: each rank's own statistics.
static void (*rankSum)(double *, int64_t) = nullptr;

extern "C" void mpcrt_set_rank_sum(void (*sum)(double *, int64_t)) {
  rankSum = sum;
}

/// The device backends' exchange; this backend sums on the host.
extern "C" void mpcrt_set_rank_gather(int32_t,
                                      void (*)(const void *, void *, int64_t)) {
}

/// A synchronised batch norm's per-channel sums (and, where `rows` is
/// given, its row count) summed over the ranks in place: each value
/// widened to double, summed in rank order, rounded back once; the same
/// bits on every rank. Without a rank sum, or on one rank, unchanged.
template <typename A, size_t N>
void sumOverRanks(std::vector<std::array<A, N>> &sums, int64_t *rows) {
  if (!rankSum)
    return;
  std::vector<double> values;
  values.reserve(sums.size() * N + 1);
  for (const std::array<A, N> &s : sums)
    for (A v : s)
      values.push_back(static_cast<double>(v));
  if (rows)
    values.push_back(static_cast<double>(*rows));
  rankSum(values.data(), static_cast<int64_t>(values.size()));
  size_t i = 0;
  for (std::array<A, N> &s : sums)
    for (A &v : s)
      v = static_cast<A>(values[i++]);
  if (rows)
    *rows = static_cast<int64_t>(values[i]);
}

template <typename T>
void batchNorm(const T *x, mpcrt_dtype pd, const void *gamma, const void *beta,
               void *runningMean, void *runningVar, T *y, float *savedMean,
               float *savedInvstd, int64_t rows, int64_t c, double momentum,
               double eps, bool relu, bool sync = false) {
  using S = Storage<T>;
  using A = typename S::Acc;
  // Two passes (mean, then squared deviations), as before; synchronised,
  // each pass's sums are over every rank (a rank with no rows still takes
  // its part in both).
  auto sum = channelSums<A, 1>(rows, c, [&](int64_t r, int64_t ch) {
    return std::array<A, 1>{S::load(x[r * c + ch])};
  });
  int64_t total = rows;
  if (sync)
    sumOverRanks(sum, &total);
  if (total == 0) { // no statistics: running ones untouched, saved ones 0
    std::fill(savedMean, savedMean + c, 0.0f);
    std::fill(savedInvstd, savedInvstd + c, 0.0f);
    return;
  }
  std::vector<A> mean(c), invstds(c), scale(c), shift(c);
  for (int64_t ch = 0; ch < c; ++ch)
    mean[ch] = sum[ch][0] / static_cast<A>(total);
  auto squares = channelSums<A, 1>(rows, c, [&](int64_t r, int64_t ch) {
    A d = S::load(x[r * c + ch]) - mean[ch];
    return std::array<A, 1>{d * d};
  });
  if (sync)
    sumOverRanks(squares, nullptr);
  for (int64_t ch = 0; ch < c; ++ch) {
    A var = squares[ch][0];
    A biased = var / static_cast<A>(total);
    A unbiased = total > 1 ? var / static_cast<A>(total - 1) : biased;
    A invstd = A(1) / std::sqrt(biased + static_cast<A>(eps));
    savedMean[ch] = static_cast<float>(mean[ch]);
    savedInvstd[ch] = static_cast<float>(invstd);
    invstds[ch] = invstd;
    scale[ch] = static_cast<A>(loadAny(pd, gamma, ch));
    shift[ch] = static_cast<A>(loadAny(pd, beta, ch));
    storeAny(pd, runningMean, ch,
             (1 - momentum) * loadAny(pd, runningMean, ch) +
                 momentum * static_cast<double>(mean[ch]));
    storeAny(pd, runningVar, ch,
             (1 - momentum) * loadAny(pd, runningVar, ch) +
                 momentum * static_cast<double>(unbiased));
  }
  applyBatchNorm(x, y, rows, c, mean, invstds, scale, shift, relu);
}

template <typename T>
void batchNormInference(const T *x, mpcrt_dtype pd, const void *gamma,
                        const void *beta, const void *runningMean,
                        const void *runningVar, T *y, int64_t rows, int64_t c,
                        double eps, bool relu) {
  using S = Storage<T>;
  using A = typename S::Acc;
  std::vector<A> mean(c), invstds(c), scale(c), shift(c);
  for (int64_t ch = 0; ch < c; ++ch) {
    mean[ch] = static_cast<A>(loadAny(pd, runningMean, ch));
    invstds[ch] = A(1) / std::sqrt(static_cast<A>(loadAny(pd, runningVar, ch)) +
                                   static_cast<A>(eps));
    scale[ch] = static_cast<A>(loadAny(pd, gamma, ch));
    shift[ch] = static_cast<A>(loadAny(pd, beta, ch));
  }
  // The training-mode formula, with the running statistics.
  applyBatchNorm(x, y, rows, c, mean, invstds, scale, shift, relu);
}

template <typename T>
void batchNormBackward(const T *dy, const T *x, mpcrt_dtype pd,
                       const void *gamma, const float *savedMean,
                       const float *savedInvstd, T *dx, void *dgamma,
                       void *dbeta, int64_t rows, int64_t c, const T *output,
                       const void *beta, const void *gammaAddend,
                       const void *betaAddend, bool sync = false) {
  using S = Storage<T>;
  using A = typename S::Acc;
  // Gamma and beta as the forward applied them (for the ReLU's output
  // formed again from x).
  std::vector<A> scale(c), shift(c);
  for (int64_t ch = 0; ch < c; ++ch) {
    scale[ch] = static_cast<A>(loadAny(pd, gamma, ch));
    shift[ch] = beta ? static_cast<A>(loadAny(pd, beta, ch)) : A(0);
  }
  // The gradient reaching the batch norm: dy, or with a fused ReLU
  // relu_grad(dy, output) rounded as mpc.relu_grad rounds it, the output
  // read or (with beta) formed again as applyBatchNorm rounds it: the
  // ReLU of a rounded value is positive exactly where that value is.
  bool relu = output || beta;
  auto gradAt = [&](int64_t i, int64_t ch, A xhat) -> A {
    if (!relu)
      return S::load(dy[i]);
    A fused = output ? S::load(output[i])
                     : S::load(affine<T>(xhat, scale[ch], shift[ch]));
    return S::load(
        S::store(S::load(dy[i]) * formulas::derivative(MPCRT_RELU, fused)));
  };
  auto xhatAt = [&](int64_t i, int64_t ch) {
    return normalized(S::load(x[i]), A(savedMean[ch]), A(savedInvstd[ch]));
  };
  // sum(dy) and sum(dy * xhat) per channel, in one pass.
  auto sums = channelSums<A, 2>(rows, c, [&](int64_t r, int64_t ch) {
    A xhat = xhatAt(r * c + ch, ch);
    A d = gradAt(r * c + ch, ch, xhat);
    return std::array<A, 2>{d, d * xhat};
  });
  // Gamma's and beta's gradients are this rank's sums (a data-parallel
  // step sums them over the ranks with the other gradients); the input's
  // gradient takes the means over every rank's rows when synchronised.
  for (int64_t ch = 0; ch < c; ++ch) {
    storeSumAny(pd, dgamma, gammaAddend, ch, sums[ch][1]);
    storeSumAny(pd, dbeta, betaAddend, ch, sums[ch][0]);
  }
  int64_t total = rows;
  if (sync)
    sumOverRanks(sums, &total);
  std::vector<A> k(c), meanDy(c), meanDyXhat(c);
  A n = static_cast<A>(total);
  for (int64_t ch = 0; ch < c; ++ch) {
    k[ch] = scale[ch] * A(savedInvstd[ch]);
    meanDy[ch] = sums[ch][0] / n;
    meanDyXhat[ch] = sums[ch][1] / n;
  }
  forRows(rows, c, [&](int64_t r) {
    for (int64_t ch = 0; ch < c; ++ch) {
      A xhat = xhatAt(r * c + ch, ch);
      dx[r * c + ch] = S::store(k[ch] * (gradAt(r * c + ch, ch, xhat) -
                                         meanDy[ch] - xhat * meanDyXhat[ch]));
    }
  });
}

/// Visits each pooling window: output index, then the valid input indices
/// and PyTorch's divisor for average pooling. Windows of different images
/// read and write disjoint elements: the images in parallel, each in the
/// same order as alone.
template <typename Fn> void forEachWindow(const mpcrt_pool2d_shape &s, Fn fn) {
  parallelFor(s.n, 1, [&](int64_t n0, int64_t n1) {
    std::vector<int64_t> inputs;
    for (int64_t n = n0; n < n1; ++n)
      for (int64_t oy = 0; oy < s.ho; ++oy)
        for (int64_t ox = 0; ox < s.wo; ++ox) {
          int64_t y0 = oy * s.stride_h - s.pad_h,
                  x0 = ox * s.stride_w - s.pad_w;
          int64_t y1 = std::min(y0 + s.kh, s.h + s.pad_h);
          int64_t x1 = std::min(x0 + s.kw, s.w + s.pad_w);
          int64_t padded = (y1 - y0) * (x1 - x0);
          y0 = std::max<int64_t>(y0, 0), x0 = std::max<int64_t>(x0, 0);
          y1 = std::min(y1, s.h), x1 = std::min(x1, s.w);
          int64_t divisor =
              s.count_include_pad ? padded : (y1 - y0) * (x1 - x0);
          for (int64_t ch = 0; ch < s.c; ++ch) {
            inputs.clear();
            for (int64_t y = y0; y < y1; ++y)
              for (int64_t x = x0; x < x1; ++x)
                inputs.push_back(((n * s.h + y) * s.w + x) * s.c + ch);
            fn(((n * s.ho + oy) * s.wo + ox) * s.c + ch, inputs, divisor);
          }
        }
  });
}

/// The first maximum of a window (a NaN wins, as in PyTorch).
template <typename T>
int64_t argmax(const T *x, const std::vector<int64_t> &inputs) {
  using S = Storage<T>;
  int64_t best = inputs.empty() ? -1 : inputs[0];
  for (int64_t i : inputs) {
    auto v = S::load(x[i]);
    if (std::isnan(v))
      return i;
    if (v > S::load(x[best]))
      best = i;
  }
  return best;
}

template <typename T>
void maxPool(const T *x, T *y, const mpcrt_pool2d_shape &s) {
  forEachWindow(s, [&](int64_t out, const std::vector<int64_t> &in, int64_t) {
    int64_t best = argmax(x, in);
    y[out] =
        best < 0
            ? Storage<T>::store(
                  -std::numeric_limits<typename Storage<T>::Acc>::infinity())
            : x[best];
  });
}

/// The input gradient: each window's to its first maximum, summed in the
/// accumulator type and rounded; with an addend (`addendRow` elements
/// from one position to the next), that rounded gradient added to it and
/// rounded again, as mpc.add of the two.
template <typename T>
void maxPoolBackward(const T *dy, const T *x, T *dx,
                     const mpcrt_pool2d_shape &s, const T *addend = nullptr,
                     int64_t addendRow = 0) {
  using S = Storage<T>;
  std::vector<typename S::Acc> acc(s.n * s.h * s.w * s.c, 0);
  forEachWindow(s, [&](int64_t out, const std::vector<int64_t> &in, int64_t) {
    int64_t best = argmax(x, in);
    if (best >= 0)
      acc[best] += S::load(dy[out]);
  });
  for (size_t i = 0; i < acc.size(); ++i) {
    T g = S::store(acc[i]);
    if (addend) {
      int64_t at = static_cast<int64_t>(i) / s.c * addendRow +
                   static_cast<int64_t>(i) % s.c;
      g = S::store(
          formulas::binary(MPCRT_ADD, S::load(addend[at]), S::load(g)));
    }
    dx[i] = g;
  }
}

template <typename T>
void avgPool(const T *x, T *y, const mpcrt_pool2d_shape &s) {
  using S = Storage<T>;
  using A = typename S::Acc;
  forEachWindow(
      s, [&](int64_t out, const std::vector<int64_t> &in, int64_t divisor) {
        A sum = 0;
        for (int64_t i : in)
          sum += S::load(x[i]);
        y[out] = S::store(sum / static_cast<A>(divisor));
      });
}

template <typename T>
void avgPoolBackward(const T *dy, T *dx, const mpcrt_pool2d_shape &s) {
  using S = Storage<T>;
  using A = typename S::Acc;
  std::vector<A> acc(s.n * s.h * s.w * s.c, 0);
  forEachWindow(
      s, [&](int64_t out, const std::vector<int64_t> &in, int64_t divisor) {
        for (int64_t i : in)
          acc[i] += S::load(dy[out]) / static_cast<A>(divisor);
      });
  for (size_t i = 0; i < acc.size(); ++i)
    dx[i] = S::store(acc[i]);
}

/// Nearest upsampling as a map from output to input element.
template <typename Fn>
void forEachUpsampled(int64_t n, int64_t h, int64_t w, int64_t c, int64_t sh,
                      int64_t sw, Fn fn) {
  int64_t ho = h * sh, wo = w * sw;
  // Images in parallel: each writes (and, backward, adds into) its own.
  parallelFor(n, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b)
      for (int64_t y = 0; y < ho; ++y)
        for (int64_t x = 0; x < wo; ++x)
          for (int64_t ch = 0; ch < c; ++ch)
            fn(((b * ho + y) * wo + x) * c + ch,
               ((b * h + y / sh) * w + x / sw) * c + ch);
  });
}

template <typename T>
int64_t embedding(const T *table, int64_t v, int64_t d, const void *indices,
                  int32_t bits, int64_t count, T *out) {
  int64_t bad = 0;
  for (int64_t i = 0; i < count && !bad; ++i) {
    int64_t row = formulas::indexAt(indices, bits, i);
    if (row < 0 || row >= v)
      bad = i + 1;
  }
  parallelFor(count, grainFor(d), [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      int64_t row = formulas::indexAt(indices, bits, i);
      if (row < 0 || row >= v)
        std::memset(out + i * d, 0, d * sizeof(T));
      else
        std::memcpy(out + i * d, table + row * d, d * sizeof(T));
    }
  });
  return bad;
}

/// Each touched row's gradient is the sum of its positions' rows of dy in
/// the accumulation type: in segments of formulas::kEmbeddingSegment
/// positions in their order, each summed from zero, the segments' sums
/// added in order from zero (the CUDA backend's order too, whose blocks
/// take a segment each): the positions sorted by row, then the rows in
/// parallel. No scratch the size of the table.
template <typename T>
int64_t embeddingBackward(const T *dy, const void *indices, int32_t bits,
                          int64_t count, int64_t v, int64_t d, int64_t padding,
                          const T *addend, T *dtable) {
  using S = Storage<T>;
  int64_t bad = 0;
  std::vector<std::pair<int64_t, int64_t>> keys; // (row, position)
  keys.reserve(count);
  for (int64_t i = 0; i < count; ++i) {
    int64_t row = formulas::indexAt(indices, bits, i);
    if (row < 0 || row >= v) {
      if (!bad)
        bad = i + 1;
    } else if (row != padding) {
      keys.emplace_back(row, i);
    }
  }
  std::sort(keys.begin(), keys.end());
  std::vector<int64_t> runs; // where each row's positions begin
  for (size_t k = 0; k < keys.size(); ++k)
    if (k == 0 || keys[k].first != keys[k - 1].first)
      runs.push_back(static_cast<int64_t>(k));
  runs.push_back(static_cast<int64_t>(keys.size()));
  // The table starts as zeros, or as the addend (in place: as it is).
  if (addend != dtable)
    parallelFor(v * d, grainFor(1), [&](int64_t i0, int64_t i1) {
      if (addend)
        std::memcpy(static_cast<void *>(dtable + i0), addend + i0,
                    (i1 - i0) * sizeof(T));
      else
        std::memset(static_cast<void *>(dtable + i0), 0, (i1 - i0) * sizeof(T));
    });
  int64_t touched = static_cast<int64_t>(runs.size()) - 1;
  parallelFor(touched, 1, [&](int64_t r0, int64_t r1) {
    using A = typename S::Acc;
    std::vector<A> acc(d), segment(d);
    for (int64_t r = r0; r < r1; ++r) {
      std::fill(acc.begin(), acc.end(), A(0));
      for (int64_t k0 = runs[r]; k0 < runs[r + 1];
           k0 += formulas::kEmbeddingSegment) {
        std::fill(segment.begin(), segment.end(), A(0));
        int64_t k1 = std::min(k0 + formulas::kEmbeddingSegment, runs[r + 1]);
        for (int64_t k = k0; k < k1; ++k) {
          const T *g = dy + keys[k].second * d;
          for (int64_t j = 0; j < d; ++j)
            segment[j] += S::load(g[j]);
        }
        for (int64_t j = 0; j < d; ++j)
          acc[j] += segment[j];
      }
      T *out = dtable + keys[runs[r]].first * d;
      for (int64_t j = 0; j < d; ++j)
        out[j] = addend ? storeAdded(out[j], acc[j]) : S::store(acc[j]);
    }
  });
  return bad;
}

/// The rank whose masks dropout draws (mpcrt_set_rank).
static int32_t dropoutRank = 0;

extern "C" void mpcrt_set_rank(int32_t rank) { dropoutRank = rank; }

using formulas::KeepBits;

/// Dropout; the result may be narrower than the input (mpc.dropout from
/// f32 to f16/bf16): computed in the input's Acc, rounded once.
template <typename T, typename TO = T>
void dropout(const T *x, TO *y, uint8_t *mask, int64_t count, double p,
             uint64_t seed, int64_t step) {
  using S = Storage<T>;
  using SO = Storage<TO>;
  using A = CommonAcc<T, TO>;
  A scale = static_cast<A>(1 / (1 - p));
  // Blocks start at multiples of 4: each Philox call serves one block.
  int64_t grain = (grainFor(32) + 3) / 4 * 4;
  parallelFor(count, grain, [&](int64_t begin, int64_t end) {
    KeepBits keeps(p, seed, step);
    for (int64_t i = begin; i < end; ++i) {
      bool keep = keeps(i);
      mask[i] = keep;
      y[i] = SO::store(keep ? A(S::load(x[i])) * scale : A(0));
    }
  });
}

/// mpc.dropout_add: the dropout's bits and rounding, then the residual
/// added and the sum rounded (no residual: the dropped value alone).
template <typename T>
void dropoutAdd(const T *x, const T *residual, T *y, int64_t count, double p,
                uint64_t seed, int64_t step) {
  using S = Storage<T>;
  using A = typename S::Acc;
  A scale = static_cast<A>(1 / (1 - p));
  int64_t grain = (grainFor(32) + 3) / 4 * 4;
  parallelFor(count, grain, [&](int64_t begin, int64_t end) {
    KeepBits keeps(p, seed, step);
    for (int64_t i = begin; i < end; ++i) {
      T dropped = S::store(keeps(i) ? S::load(x[i]) * scale : A(0));
      y[i] = residual ? S::store(S::load(dropped) + S::load(residual[i]))
                      : dropped;
    }
  });
}

template <typename T>
void dropoutBackward(const T *dy, const uint8_t *mask, T *dx, int64_t count,
                     double p) {
  using S = Storage<T>;
  using A = typename S::Acc;
  A scale = static_cast<A>(1 / (1 - p));
  parallelFor(count, grainFor(4), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      dx[i] = S::store(mask[i] ? S::load(dy[i]) * scale : A(0));
  });
}

/// mpc.softmax_dropout: the softmax's probabilities (in the input's Acc,
/// f32 for f16/bf16), dropped and scaled as mpc.dropout drops them from
/// f32, rounded once to TO.
template <typename TI, typename TO>
void softmaxDropout(const TI *x, TO *y, int64_t rows, int64_t cols,
                    double scale, double p, uint64_t seed, int64_t step) {
  using A = typename Storage<TI>::Acc;
  using SO = Storage<TO>;
  A s = static_cast<A>(scale), keptScale = static_cast<A>(1 / (1 - p));
  parallelFor(rows, grainFor(12 * cols), [&](int64_t r0, int64_t r1) {
    KeepBits keeps(p, seed, step);
    for (int64_t r = r0; r < r1; ++r) {
      SoftmaxRow<A, TI> row(x + r * cols, cols, s);
      for (int64_t c = 0; c < cols; ++c)
        y[r * cols + c] = SO::store(
            keeps(r * cols + c) ? row.probability(c) * keptScale : A(0));
    }
  });
}

/// Its gradient: the probabilities and keep bits again, the gradient
/// dropped in TG's Acc and rounded to TG (mpc.dropout_backward), then the
/// softmax's gradient in A, rounded once to TX. Where `out` is not null,
/// the forward's result (of TG, the type of its gradient) written there as
/// softmaxDropout writes it.
template <typename TG, typename TI, typename TX>
void softmaxDropoutBackward(const TG *dy, const TI *x, TX *dx, TG *out,
                            int64_t rows, int64_t cols, double scale, double p,
                            uint64_t seed, int64_t step) {
  using A = typename Storage<TI>::Acc;
  using SG = Storage<TG>;
  using AG = typename SG::Acc;
  using SX = Storage<TX>;
  A s = static_cast<A>(scale), keptProbability = static_cast<A>(1 / (1 - p));
  AG keptScale = static_cast<AG>(1 / (1 - p));
  parallelFor(rows, grainFor(16 * cols), [&](int64_t r0, int64_t r1) {
    std::vector<A> probs(cols), dropped(cols);
    KeepBits keeps(p, seed, step);
    for (int64_t r = r0; r < r1; ++r) {
      SoftmaxRow<A, TI> row(x + r * cols, cols, s);
      A sum = 0;
      for (int64_t c = 0; c < cols; ++c) {
        int64_t i = r * cols + c;
        bool keep = keeps(i);
        probs[c] = row.probability(c);
        if (out)
          out[i] = SG::store(keep ? probs[c] * keptProbability : A(0));
        dropped[c] = A(SG::load(
            SG::store(keep ? AG(SG::load(dy[i])) * keptScale : AG(0))));
        sum += dropped[c] * probs[c];
      }
      for (int64_t c = 0; c < cols; ++c)
        dx[r * cols + c] = SX::store(s * (probs[c] * (dropped[c] - sum)));
    }
  });
}

using formulas::pointwiseLoss;
using formulas::pointwiseLossGrad;

template <typename T>
void pointwiseLossKernel(int32_t kind, const T *x, const T *t, T *loss,
                         int64_t count, bool mean) {
  using S = Storage<T>;
  using A = typename S::Acc;
  // Partial sums over blocks of a size fixed by nothing but this
  // constant, added in block order.
  A sum = blockedSum(A(0), count, 4096, [&](int64_t i) {
    return pointwiseLoss(kind, S::load(x[i]), S::load(t[i]));
  });
  // Nothing to average: 0 (not 0/0).
  *loss = S::store(mean && count > 0 ? sum / static_cast<A>(count) : sum);
}

template <typename T>
void pointwiseLossBackward(int32_t kind, const T *dl, const T *x, const T *t,
                           T *dx, int64_t count, bool mean) {
  using S = Storage<T>;
  using A = typename S::Acc;
  A scale = S::load(*dl) / (mean ? static_cast<A>(count) : A(1));
  parallelFor(count, grainFor(16), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      dx[i] = S::store(scale *
                       pointwiseLossGrad(kind, S::load(x[i]), S::load(t[i])));
  });
}

/// Shapes of one mpc.attention call (mpcrt_attention).
struct AttentionShape {
  int64_t heads, sq, sk, d, dv;
  formulas::HeadRows rows;
  double scale, p;
  uint64_t seed; // the rank's key
  int64_t step;
  formulas::AttentionMask mask;
};

/// The shapes of an mpcrt_attention(_backward) call, with the rank's key.
AttentionShape attentionShape(int64_t heads, int64_t sq, int64_t sk, int64_t d,
                              int64_t dv, int64_t rowHeads, double scale,
                              double dropoutP, uint64_t seed,
                              const int64_t *step, const uint8_t *mask,
                              const int64_t *maskLayout, int32_t maskRank,
                              double maskValue, const float *bias,
                              const int64_t *biasLayout, int32_t biasRank) {
  return {heads,
          sq,
          sk,
          d,
          dv,
          formulas::HeadRows{rowHeads > 1 ? rowHeads : 1},
          scale,
          dropoutP,
          formulas::rankSeed(seed, dropoutRank),
          *step,
          formulas::attentionMask(mask, maskLayout, maskRank, maskValue, bias,
                                  biasLayout, biasRank)};
}

/// The dropout factors of head h's [sq, sk] probabilities, elements
/// h * sq * sk ... of the [heads, sq, sk] ones: 0 where mpcrt_dropout_*
/// drops them, else 1/(1-p); one Philox call per four, as the dropout
/// kernel draws them.
template <typename A>
void dropoutFactors(const AttentionShape &a, int64_t h, A *z) {
  int64_t count = a.sq * a.sk, first = h * count;
  A keep = static_cast<A>(1 / (1 - a.p));
  KeepBits keeps(a.p, a.seed, a.step);
  for (int64_t n = 0; n < count; ++n)
    z[n] = keeps(first + n) ? keep : A(0);
}

/// Head h's [rows, width] block of an attention operand, widened into
/// `out`.
template <typename T, typename A>
void loadHead(const T *x, const AttentionShape &a, int64_t h, int64_t rows,
              int64_t width, A *out) {
  int64_t first = a.rows.first(h, rows, width), stride = a.rows.stride(width);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t c = 0; c < width; ++c)
      out[i * width + c] = Storage<T>::load(x[first + i * stride + c]);
}

/// Head h's [rows, width] block of an attention operand in A, in scratch
/// `slot` (or the operand itself, where it is stored in A with the head's
/// rows together).
template <typename T>
const typename Storage<T>::Acc *headOf(const T *x, const AttentionShape &a,
                                       int64_t h, int64_t rows, int64_t width,
                                       int slot) {
  if (a.rows.inner == 1)
    return widen(x + a.rows.first(h, rows, width), rows * width, slot);
  auto *out = scratch<typename Storage<T>::Acc>(slot, rows * width);
  loadHead(x, a, h, rows, width, out);
  return out;
}

/// Head h's [rows, width] block of values, rounded into an operand.
template <typename T, typename A>
void storeHead(T *x, const A *values, const AttentionShape &a, int64_t h,
               int64_t rows, int64_t width) {
  int64_t first = a.rows.first(h, rows, width), stride = a.rows.stride(width);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t c = 0; c < width; ++c)
      x[first + i * stride + c] = Storage<T>::store(values[i * width + c]);
}

/// Head h's probabilities P = softmax(scale * q k^T, filled where
/// masked) in `p` ([sq, sk]), from the log-sum-exp of each row if `lse`
/// is given, else computing it into `lseOut`.
template <typename A>
void probabilities(const A *q, const A *k, const AttentionShape &a, int64_t h,
                   A *p, const A *lse, A *lseOut) {
  gemm(false, true, a.sq, a.sk, a.d, q, a.d, k, a.d, A(0), p, a.sk);
  formulas::HeadScores<A> score(a.mask, a.scale, h);
  for (int64_t i = 0; i < a.sq; ++i) {
    A *row = p + i * a.sk;
    for (int64_t j = 0; j < a.sk; ++j)
      row[j] = score(i, j, row[j]);
    A shift;
    if (lse) {
      shift = lse[i];
    } else {
      A max = -std::numeric_limits<A>::infinity();
      for (int64_t j = 0; j < a.sk; ++j)
        max = std::fmax(max, row[j]);
      A sum = 0;
      for (int64_t j = 0; j < a.sk; ++j)
        sum += std::exp(row[j] - max);
      shift = lseOut[i] = max + std::log(sum);
    }
    for (int64_t j = 0; j < a.sk; ++j)
      row[j] = std::exp(row[j] - shift);
  }
}

/// One head at a time (heads in parallel), its products in BLAS: the
/// [sq, sk] probabilities of one head live in a per-thread buffer, never
/// those of the whole batch.
template <typename T>
void attention(const T *query, const T *key, const T *value, T *result,
               typename Storage<T>::Acc *lse, const AttentionShape &a) {
  using S = Storage<T>;
  using A = typename S::Acc;
  parallelFor(a.heads, 1, [&](int64_t h0, int64_t h1) {
    std::vector<A> o(a.sq * a.dv), z(a.p != 0 ? a.sq * a.sk : 0);
    for (int64_t h = h0; h < h1; ++h) {
      const A *q = headOf(query, a, h, a.sq, a.d, 0);
      const A *k = headOf(key, a, h, a.sk, a.d, 1);
      const A *v = headOf(value, a, h, a.sk, a.dv, 2);
      A *p = scratch<A>(3, a.sq * a.sk);
      probabilities(q, k, a, h, p, static_cast<const A *>(nullptr),
                    lse + h * a.sq);
      if (a.p != 0) {
        dropoutFactors(a, h, z.data());
        for (int64_t n = 0; n < a.sq * a.sk; ++n)
          p[n] *= z[n];
      }
      gemm(false, false, a.sq, a.dv, a.sk, p, a.sk, v, a.dv, A(0), o.data(),
           a.dv);
      storeHead(result, o.data(), a, h, a.sq, a.dv);
    }
  });
}

/// Per head: P from the saved log-sum-exp, Pd = P Z (Z the dropout
/// factors), dPd = dO v^T, dv = Pd^T dO, dP = dPd Z, D_i = sum_j P dP,
/// dS = scale P (dP - D), dq = dS k, dk = dS^T q.
template <typename T>
void attentionBackward(const T *grad, const T *query, const T *key,
                       const T *value, const typename Storage<T>::Acc *lse,
                       T *gradQuery, T *gradKey, T *gradValue,
                       const AttentionShape &a) {
  using S = Storage<T>;
  using A = typename S::Acc;
  parallelFor(a.heads, 1, [&](int64_t h0, int64_t h1) {
    std::vector<A> go(a.sq * a.dv), dpd(a.sq * a.sk), ds(a.sq * a.sk),
        dq(a.sq * a.d), dk(a.sk * a.d), dv(a.sk * a.dv), z(a.sq * a.sk, A(1));
    for (int64_t h = h0; h < h1; ++h) {
      const A *q = headOf(query, a, h, a.sq, a.d, 0);
      const A *k = headOf(key, a, h, a.sk, a.d, 1);
      const A *v = headOf(value, a, h, a.sk, a.dv, 2);
      loadHead(grad, a, h, a.sq, a.dv, go.data());
      A *p = scratch<A>(3, a.sq * a.sk);
      probabilities(q, k, a, h, p, lse + h * a.sq, static_cast<A *>(nullptr));
      gemm(false, true, a.sq, a.sk, a.dv, go.data(), a.dv, v, a.dv, A(0),
           dpd.data(), a.sk);
      // ds holds Pd for dv, then dS.
      if (a.p != 0)
        dropoutFactors(a, h, z.data());
      for (int64_t n = 0; n < a.sq * a.sk; ++n)
        ds[n] = p[n] * z[n];
      gemm(true, false, a.sk, a.dv, a.sq, ds.data(), a.sk, go.data(), a.dv,
           A(0), dv.data(), a.dv);
      formulas::HeadScores<A> score(a.mask, a.scale, h);
      for (int64_t i = 0; i < a.sq; ++i) {
        A rowDot = 0;
        for (int64_t j = 0; j < a.sk; ++j) {
          dpd[i * a.sk + j] *= z[i * a.sk + j]; // now dP
          rowDot += p[i * a.sk + j] * dpd[i * a.sk + j];
        }
        // Filled scores do not depend on q or k.
        for (int64_t j = 0; j < a.sk; ++j)
          ds[i * a.sk + j] = score.filled(i, j)
                                 ? A(0)
                                 : score.scale * p[i * a.sk + j] *
                                       (dpd[i * a.sk + j] - rowDot);
      }
      gemm(false, false, a.sq, a.d, a.sk, ds.data(), a.sk, k, a.d, A(0),
           dq.data(), a.d);
      gemm(true, false, a.sk, a.d, a.sq, ds.data(), a.sk, q, a.d, A(0),
           dk.data(), a.d);
      storeHead(gradQuery, dq.data(), a, h, a.sq, a.d);
      storeHead(gradKey, dk.data(), a, h, a.sk, a.d);
      storeHead(gradValue, dv.data(), a, h, a.sk, a.dv);
    }
  });
}
template <typename T, typename Stat>
void addLayerNorm(const T *x, const T *residual, mpcrt_dtype paramDtype,
                  const void *gamma, const void *beta, T *sum, T *y, Stat *mean,
                  Stat *rstd, int64_t rows, int64_t cols, int64_t residualRows,
                  double epsilon, double p, uint64_t seed, int64_t step) {
  using S = Storage<T>;
  using A = typename S::Acc;
  A scale = static_cast<A>(1 / (1 - p));
  parallelFor(rows, grainFor(10 * cols), [&](int64_t r0, int64_t r1) {
    KeepBits keeps(p, seed, step);
    for (int64_t r = r0; r < r1; ++r) {
      T *s = sum + r * cols;
      const T *res = residual + (r % residualRows) * cols;
      for (int64_t c = 0; c < cols; ++c) {
        int64_t i = r * cols + c;
        // The dropped value rounded as mpc.dropout stores it.
        A d = p == 0     ? S::load(x[i])
              : keeps(i) ? S::load(S::store(S::load(x[i]) * scale))
                         : A(0);
        s[c] = S::store(d + S::load(res[c]));
      }
      layerNormRow(s, paramDtype, gamma, beta, y + r * cols, mean[r], rstd[r],
                   cols, epsilon);
    }
  });
}

template <typename T, typename Stat>
void addLayerNormBackward(const T *dy, const T *dsum, const T *sum,
                          const Stat *mean, const Stat *rstd,
                          mpcrt_dtype paramDtype, const void *gamma, T *dx,
                          T *dresidual, void *dgamma, void *dbeta,
                          const void *gammaAddend, const void *betaAddend,
                          int64_t rows, int64_t cols, double p, uint64_t seed,
                          int64_t step) {
  using S = Storage<T>;
  using A = typename S::Acc;
  A scale = static_cast<A>(1 / (1 - p));
  layerNormBackwardRows(
      dy, sum, mean, rstd, paramDtype, gamma, dgamma, dbeta, gammaAddend,
      betaAddend, rows, cols, [&](int64_t r, const A *values) {
        KeepBits keeps(p, seed, step);
        for (int64_t c = 0; c < cols; ++c) {
          int64_t i = r * cols + c;
          A v = values[c];
          if (dsum)
            v += S::load(dsum[i]);
          if (dresidual)
            dresidual[i] = S::store(v);
          if (dx)
            dx[i] = S::store(p == 0 ? v : keeps(i) ? v * scale : A(0));
        }
      });
}

} // namespace

extern "C" {

void mpcrt_dropout_mixed(mpcrt_dtype in, const void *input, mpcrt_dtype out,
                         void *output, uint8_t *mask, int64_t count, double p,
                         uint64_t seed, const int64_t *step) {
  dispatchMixable(in, [&](auto *i) {
    dispatchMixable(out, [&](auto *o) {
      using TI = std::remove_pointer_t<decltype(i)>;
      using TO = std::remove_pointer_t<decltype(o)>;
      dropout(static_cast<const TI *>(input), static_cast<TO *>(output), mask,
              count, p, formulas::rankSeed(seed, dropoutRank), *step);
    });
  });
}

void mpcrt_softmax_dropout(mpcrt_dtype in, const void *input, mpcrt_dtype out,
                           void *output, int64_t rows, int64_t cols,
                           double scale, double p, uint64_t seed,
                           const int64_t *step) {
  auto run = [&](auto *i, auto *o) {
    using TI = std::remove_pointer_t<decltype(i)>;
    using TO = std::remove_pointer_t<decltype(o)>;
    softmaxDropout(static_cast<const TI *>(input), static_cast<TO *>(output),
                   rows, cols, scale, p, formulas::rankSeed(seed, dropoutRank),
                   *step);
  };
  if (in == MPCRT_F64 && out == MPCRT_F64)
    return run(static_cast<double *>(nullptr), static_cast<double *>(nullptr));
  dispatchMixable(
      in, [&](auto *i) { dispatchMixable(out, [&](auto *o) { run(i, o); }); });
}

void mpcrt_softmax_dropout_backward(mpcrt_dtype grad, const void *grad_output,
                                    mpcrt_dtype in, const void *input,
                                    mpcrt_dtype result, void *grad_input,
                                    void *dropped, int64_t rows, int64_t cols,
                                    double scale, double p, uint64_t seed,
                                    const int64_t *step) {
  auto run = [&](auto *g, auto *i, auto *x) {
    using TG = std::remove_pointer_t<decltype(g)>;
    using TI = std::remove_pointer_t<decltype(i)>;
    using TX = std::remove_pointer_t<decltype(x)>;
    softmaxDropoutBackward(
        static_cast<const TG *>(grad_output), static_cast<const TI *>(input),
        static_cast<TX *>(grad_input), static_cast<TG *>(dropped), rows, cols,
        scale, p, formulas::rankSeed(seed, dropoutRank), *step);
  };
  if (grad == MPCRT_F64 && in == MPCRT_F64 && result == MPCRT_F64) {
    auto *d = static_cast<double *>(nullptr);
    return run(d, d, d);
  }
  dispatchMixable(grad, [&](auto *g) {
    dispatchMixable(in, [&](auto *i) {
      dispatchMixable(result, [&](auto *x) { run(g, i, x); });
    });
  });
}

void mpcrt_add_layer_norm(mpcrt_dtype dtype, const void *x,
                          const void *residual, mpcrt_dtype param_dtype,
                          const void *gamma, const void *beta, void *sum,
                          void *y, void *mean, void *rstd, int64_t rows,
                          int64_t cols, int64_t residual_rows, double epsilon,
                          double dropout_p, uint64_t seed,
                          const int64_t *step) {
  dispatch(dtype, [&](auto *t) {
    using T = std::remove_pointer_t<decltype(t)>;
    using A = typename Storage<T>::Acc;
    addLayerNorm(static_cast<const T *>(x), static_cast<const T *>(residual),
                 param_dtype, gamma, beta, static_cast<T *>(sum),
                 static_cast<T *>(y), static_cast<A *>(mean),
                 static_cast<A *>(rstd), rows, cols, residual_rows, epsilon,
                 dropout_p, formulas::rankSeed(seed, dropoutRank), *step);
  });
}

void mpcrt_add_layer_norm_backward(
    mpcrt_dtype dtype, const void *grad, const void *grad_sum, const void *sum,
    const void *mean, const void *rstd, mpcrt_dtype param_dtype,
    const void *gamma, void *grad_x, void *grad_residual, void *grad_gamma,
    void *grad_beta, const void *gamma_addend, const void *beta_addend,
    int64_t rows, int64_t cols, double dropout_p, uint64_t seed,
    const int64_t *step, void *grad_x_sums) {
  dispatch(dtype, [&](auto *t) {
    using T = std::remove_pointer_t<decltype(t)>;
    using A = typename Storage<T>::Acc;
    addLayerNormBackward(
        static_cast<const T *>(grad), static_cast<const T *>(grad_sum),
        static_cast<const T *>(sum), static_cast<const A *>(mean),
        static_cast<const A *>(rstd), param_dtype, gamma,
        static_cast<T *>(grad_x), static_cast<T *>(grad_residual), grad_gamma,
        grad_beta, gamma_addend, beta_addend, rows, cols, dropout_p,
        formulas::rankSeed(seed, dropoutRank), *step);
  });
  // The input gradient's column sums, as mpcrt_matmul_bias_grad's.
  if (grad_x_sums)
    columnSums(dtype, dtype == MPCRT_F64 ? MPCRT_F64 : MPCRT_F32, grad_x,
               nullptr, grad_x_sums, cols, rows);
}

void mpcrt_attention(mpcrt_dtype dtype, const void *query, const void *key,
                     const void *value, void *result, void *logsumexp,
                     int64_t heads, int64_t sq, int64_t sk, int64_t d,
                     int64_t dv, int64_t row_heads, double scale,
                     double dropout_p, uint64_t seed, const int64_t *step,
                     const uint8_t *mask, const int64_t *mask_layout,
                     int32_t mask_rank, double mask_value, const float *bias,
                     const int64_t *bias_layout, int32_t bias_rank) {
  AttentionShape a = attentionShape(
      heads, sq, sk, d, dv, row_heads, scale, dropout_p, seed, step, mask,
      mask_layout, mask_rank, mask_value, bias, bias_layout, bias_rank);
  dispatch(dtype, [&](auto *t) {
    using T = std::remove_pointer_t<decltype(t)>;
    using A = typename Storage<T>::Acc;
    attention(static_cast<const T *>(query), static_cast<const T *>(key),
              static_cast<const T *>(value), static_cast<T *>(result),
              static_cast<A *>(logsumexp), a);
  });
}

void mpcrt_dropout_add(mpcrt_dtype dtype, const void *x, const void *residual,
                       void *y, int64_t count, double p, uint64_t seed,
                       const int64_t *step) {
  dispatch(dtype, [&](auto *t) {
    using T = std::remove_pointer_t<decltype(t)>;
    dropoutAdd(static_cast<const T *>(x), static_cast<const T *>(residual),
               static_cast<T *>(y), count, p,
               formulas::rankSeed(seed, dropoutRank), *step);
  });
}

void mpcrt_attention_backward(
    mpcrt_dtype dtype, const void *grad, const void *query, const void *key,
    const void *value, const void *result, const void *logsumexp,
    void *grad_query, void *grad_key, void *grad_value, int64_t heads,
    int64_t sq, int64_t sk, int64_t d, int64_t dv, int64_t row_heads,
    double scale, double dropout_p, uint64_t seed, const int64_t *step,
    const uint8_t *mask, const int64_t *mask_layout, int32_t mask_rank,
    double mask_value, const float *bias, const int64_t *bias_layout,
    int32_t bias_rank) {
  (void)result; // D_i is summed from the probabilities, not dO . O
  AttentionShape a = attentionShape(
      heads, sq, sk, d, dv, row_heads, scale, dropout_p, seed, step, mask,
      mask_layout, mask_rank, mask_value, bias, bias_layout, bias_rank);
  dispatch(dtype, [&](auto *t) {
    using T = std::remove_pointer_t<decltype(t)>;
    using A = typename Storage<T>::Acc;
    attentionBackward(
        static_cast<const T *>(grad), static_cast<const T *>(query),
        static_cast<const T *>(key), static_cast<const T *>(value),
        static_cast<const A *>(logsumexp), static_cast<T *>(grad_query),
        static_cast<T *>(grad_key), static_cast<T *>(grad_value), a);
  });
}

// mpcrt_batch_norm_* and its backward (NAME empty), or the synchronised
// mpcrt_sync_batch_norm_* (NAME sync_, SYNC true).
#define MPCRT_DEFINE_BATCH_NORM(NAME, SUFFIX, ABI_T, T, SYNC)                  \
  void mpcrt_##NAME##batch_norm_##SUFFIX(                                      \
      const ABI_T *input, mpcrt_dtype pd, const void *gamma, const void *beta, \
      void *rm, void *rv, ABI_T *output, float *sm, float *si, int64_t rows,   \
      int64_t c, double momentum, double epsilon, int32_t activation) {        \
    batchNorm(reinterpret_cast<const T *>(input), pd, gamma, beta, rm, rv,     \
              reinterpret_cast<T *>(output), sm, si, rows, c, momentum,        \
              epsilon, activation == MPCRT_RELU, SYNC);                        \
  }                                                                            \
  void mpcrt_##NAME##batch_norm_backward_##SUFFIX(                             \
      const ABI_T *dy, const ABI_T *input, mpcrt_dtype pd, const void *gamma,  \
      const float *sm, const float *si, ABI_T *dx, void *dg, void *db,         \
      int64_t rows, int64_t c, const ABI_T *out, const void *beta,             \
      const void *ga, const void *ba) {                                        \
    batchNormBackward(reinterpret_cast<const T *>(dy),                         \
                      reinterpret_cast<const T *>(input), pd, gamma, sm, si,   \
                      reinterpret_cast<T *>(dx), dg, db, rows, c,              \
                      reinterpret_cast<const T *>(out), beta, ga, ba, SYNC);   \
  }

#define MPCRT_DEFINE(SUFFIX, ABI_T, T)                                         \
  MPCRT_DEFINE_BATCH_NORM(, SUFFIX, ABI_T, T, false)                           \
  MPCRT_DEFINE_BATCH_NORM(sync_, SUFFIX, ABI_T, T, true)                       \
  void mpcrt_batch_norm_inference_##SUFFIX(                                    \
      const ABI_T *input, mpcrt_dtype pd, const void *gamma, const void *beta, \
      const void *rm, const void *rv, ABI_T *output, int64_t rows, int64_t c,  \
      double epsilon, int32_t activation) {                                    \
    batchNormInference(reinterpret_cast<const T *>(input), pd, gamma, beta,    \
                       rm, rv, reinterpret_cast<T *>(output), rows, c,         \
                       epsilon, activation == MPCRT_RELU);                     \
  }                                                                            \
  void mpcrt_max_pool2d_##SUFFIX(const ABI_T *x, ABI_T *y,                     \
                                 const mpcrt_pool2d_shape *s) {                \
    maxPool(reinterpret_cast<const T *>(x), reinterpret_cast<T *>(y), *s);     \
  }                                                                            \
  void mpcrt_max_pool2d_backward_##SUFFIX(const ABI_T *dy, const ABI_T *x,     \
                                          ABI_T *dx,                           \
                                          const mpcrt_pool2d_shape *s) {       \
    maxPoolBackward(reinterpret_cast<const T *>(dy),                           \
                    reinterpret_cast<const T *>(x), reinterpret_cast<T *>(dx), \
                    *s);                                                       \
  }                                                                            \
  void mpcrt_max_pool2d_backward_add_##SUFFIX(                                 \
      const ABI_T *dy, const ABI_T *x, const ABI_T *addend,                    \
      int64_t addend_row, ABI_T *dx, const mpcrt_pool2d_shape *s) {            \
    maxPoolBackward(reinterpret_cast<const T *>(dy),                           \
                    reinterpret_cast<const T *>(x), reinterpret_cast<T *>(dx), \
                    *s, reinterpret_cast<const T *>(addend), addend_row);      \
  }                                                                            \
  void mpcrt_avg_pool2d_##SUFFIX(const ABI_T *x, ABI_T *y,                     \
                                 const mpcrt_pool2d_shape *s) {                \
    avgPool(reinterpret_cast<const T *>(x), reinterpret_cast<T *>(y), *s);     \
  }                                                                            \
  void mpcrt_avg_pool2d_backward_##SUFFIX(const ABI_T *dy, ABI_T *dx,          \
                                          const mpcrt_pool2d_shape *s) {       \
    avgPoolBackward(reinterpret_cast<const T *>(dy),                           \
                    reinterpret_cast<T *>(dx), *s);                            \
  }                                                                            \
  void mpcrt_upsample_nearest2d_##SUFFIX(const ABI_T *x, ABI_T *y, int64_t n,  \
                                         int64_t h, int64_t w, int64_t c,      \
                                         int64_t sh, int64_t sw) {             \
    forEachUpsampled(n, h, w, c, sh, sw,                                       \
                     [&](int64_t out, int64_t in) { y[out] = x[in]; });        \
  }                                                                            \
  void mpcrt_upsample_nearest2d_backward_##SUFFIX(                             \
      const ABI_T *dy, ABI_T *dx, int64_t n, int64_t h, int64_t w, int64_t c,  \
      int64_t sh, int64_t sw) {                                                \
    using S = Storage<T>;                                                      \
    std::vector<S::Acc> acc(n * h * w * c, 0);                                 \
    const T *g = reinterpret_cast<const T *>(dy);                              \
    forEachUpsampled(n, h, w, c, sh, sw, [&](int64_t out, int64_t in) {        \
      acc[in] += S::load(g[out]);                                              \
    });                                                                        \
    for (size_t i = 0; i < acc.size(); ++i)                                    \
      reinterpret_cast<T *>(dx)[i] = S::store(acc[i]);                         \
  }                                                                            \
  int64_t mpcrt_embedding_##SUFFIX(const ABI_T *table, int64_t v, int64_t d,   \
                                   const void *idx, int32_t bits,              \
                                   int64_t count, ABI_T *out) {                \
    return embedding(reinterpret_cast<const T *>(table), v, d, idx, bits,      \
                     count, reinterpret_cast<T *>(out));                       \
  }                                                                            \
  int64_t mpcrt_embedding_backward_##SUFFIX(                                   \
      const ABI_T *dy, const void *idx, int32_t bits, int64_t count,           \
      int64_t v, int64_t d, int64_t padding, const ABI_T *addend,              \
      ABI_T *dtable) {                                                         \
    return embeddingBackward(                                                  \
        reinterpret_cast<const T *>(dy), idx, bits, count, v, d, padding,      \
        reinterpret_cast<const T *>(addend), reinterpret_cast<T *>(dtable));   \
  }                                                                            \
  void mpcrt_dropout_##SUFFIX(const ABI_T *x, ABI_T *y, uint8_t *mask,         \
                              int64_t count, double p, uint64_t seed,          \
                              const int64_t *step) {                           \
    dropout(reinterpret_cast<const T *>(x), reinterpret_cast<T *>(y), mask,    \
            count, p, formulas::rankSeed(seed, dropoutRank), *step);           \
  }                                                                            \
  void mpcrt_dropout_backward_##SUFFIX(const ABI_T *dy, const uint8_t *mask,   \
                                       ABI_T *dx, int64_t count, double p) {   \
    dropoutBackward(reinterpret_cast<const T *>(dy), mask,                     \
                    reinterpret_cast<T *>(dx), count, p);                      \
  }                                                                            \
  void mpcrt_pointwise_loss_##SUFFIX(int32_t kind, const ABI_T *x,             \
                                     const ABI_T *t, ABI_T *loss,              \
                                     int64_t count, int32_t mean) {            \
    pointwiseLossKernel(kind, reinterpret_cast<const T *>(x),                  \
                        reinterpret_cast<const T *>(t),                        \
                        reinterpret_cast<T *>(loss), count, mean);             \
  }                                                                            \
  void mpcrt_pointwise_loss_backward_##SUFFIX(                                 \
      int32_t kind, const ABI_T *dl, const ABI_T *x, const ABI_T *t,           \
      ABI_T *dx, int64_t count, int32_t mean) {                                \
    pointwiseLossBackward(kind, reinterpret_cast<const T *>(dl),               \
                          reinterpret_cast<const T *>(x),                      \
                          reinterpret_cast<const T *>(t),                      \
                          reinterpret_cast<T *>(dx), count, mean);             \
  }
MPCRT_FOR_EACH_DTYPE(MPCRT_DEFINE)
#undef MPCRT_DEFINE
#undef MPCRT_DEFINE_BATCH_NORM

} // extern "C"
