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
#include <numeric>
#include <type_traits>

namespace mpcrt::cuda {
namespace {

/// Batch norm over [rows, c] (channels last): the statistics are one
/// column reduction (Columns.cuh) of each channel's count, mean and sum of
/// squared deviations: each thread's from shifted sums (FoldMoments),
/// then combined pairwise (Chan, Golub and LeVeque): one read of the input
/// instead of two (the CPU reference's mean, then squared deviations).
/// The normalisation and its gradient are elementwise.
///
/// The values are taken relative to their channel's first (row 0), and
/// so are the partials' means: a channel far from 0 next to its spread
/// (the offset test's 1000 +- 0.05) otherwise kept its threads' means to
/// the ulp of 1000, and the pairwise combination's squared differences of
/// those means lost the between-thread part of the variance to them (a
/// relative 2.5e-4 in the variance, one seed in eleven, with 16 rows a
/// thread). StoreStatistics adds the first value back.
template <typename T> struct ChannelMoments {
  using Element = T;
  /// Eight rows' 16-byte loads in flight a thread, three blocks a
  /// multiprocessor (at most 85 registers: ptxas gives the f16 and bf16
  /// forms 79-80, no spills): 96 KiB in flight a multiprocessor, where two
  /// rows (the default for its 24 values a row) and four blocks took 32
  /// KiB. On an H100 that pass reached 61% of the DRAM's peak, 57% of its
  /// stalls on loads (docs/Benchmarks.md, 2026-12-05). Four rows under
  /// four blocks' 64 registers spilled 208 bytes; uncapped, 96 registers
  /// (two blocks: no more in flight than before).
  static constexpr int kRowsInFlight = 8;
  static constexpr int kMinBlocks = 3;
  const T *x;
  int64_t c;
  using A = typename Storage<T>::Acc;
  bool aligned() const { return alignedTo(x, 16); }
  /// The channels' first values (row 0).
  template <int N>
  __device__ Vec<T, N> column(int64_t, int64_t ch, bool whole) const {
    return loadVec<N>(x, ch, whole);
  }
  template <int N>
  __device__ void terms(int64_t, int64_t r, int64_t ch, bool whole,
                        const Vec<T, N> &first, Partial<A, 3> (&t)[N]) const {
    Vec<T, N> v = loadVec<N>(x, r * c + ch, whole);
#pragma unroll
    for (int k = 0; k < N; ++k)
      t[k] = {{A(1), Storage<T>::load(v.v[k]) - Storage<T>::load(first.v[k]),
               A(0)}};
  }
};

/// Two sets of moments as one: {count, mean, sum of squared deviations}.
/// The counts are of type A: exact up to 2^24 rows in f32.
template <typename A> struct CombineMoments {
  __device__ Partial<A, 3> operator()(Partial<A, 3> a,
                                      const Partial<A, 3> &b) const {
    if (b.v[0] == A(0))
      return a;
    if (a.v[0] == A(0))
      return b;
    A n = a.v[0] + b.v[0], delta = b.v[1] - a.v[1], share = b.v[0] / n;
    a.v[1] += delta * share;
    a.v[2] += b.v[2] + delta * delta * a.v[0] * share;
    a.v[0] = n;
    return a;
  }
};

/// How a thread folds its rows of a channel into moments: sums of the
/// deviations from the first value it reads (the shift s), turned into
/// {count, mean, sum of squared deviations} at the end. Combining each
/// value in turn (CombineMoments: a division and two branches a value)
/// made the statistics pass of a 16x128x128x128 f16 batch norm bound by
/// its instructions: about 75 of the forward's 112 us, for 64 MiB read.
/// The shifted sums' rounding error in a thread's sum of squared
/// deviations M is about n u (M + n (mean - s)^2) for its n values (u the
/// accumulator's unit roundoff); s is one of the values, so n (mean -
/// s)^2 <= n M and the error is at most about n (n + 1) u M: a relative
/// 1.6e-5 in f32 for the 16 rows a thread takes at that shape, however
/// far s lies in the tail (an outlier as s is part of M).
template <typename A> struct FoldMoments {
  struct State {
    A shift, n, sum, squares;
  };
  __device__ State start(const Partial<A, 3> &first) const {
    return {first.v[1], A(0), A(0), A(0)};
  }
  __device__ void add(State &s, const Partial<A, 3> &t) const {
    A d = t.v[1] - s.shift;
    s.n += t.v[0];
    s.sum += d;
    s.squares += d * d;
  }
  __device__ Partial<A, 3> partial(const State &s) const {
    if (s.n == A(0))
      return {{A(0), A(0), A(0)}};
    A mean = s.sum / s.n, squares = s.squares - s.sum * mean;
    return {{s.n, s.shift + mean, squares > A(0) ? squares : A(0)}};
  }
};

/// Per channel, from its moments: stats[ch] = mean, stats[c + ch] =
/// invstd, the saved statistics and the running ones.
/// What batchNormApplyKernel reads of channel ch, N channels at a time:
/// its mean, invstd, gamma and beta in the accumulator type, in
/// stats[ch], stats[c + ch], stats[2c + ch] and stats[3c + ch].
template <typename A>
__device__ void storeChannel(A *stats, int64_t c, int64_t ch, A mean, A invstd,
                             mpcrt_dtype pd, const void *gamma,
                             const void *beta) {
  stats[ch] = mean;
  stats[c + ch] = invstd;
  stats[2 * c + ch] = static_cast<A>(loadAny(pd, gamma, ch));
  stats[3 * c + ch] = static_cast<A>(loadAny(pd, beta, ch));
}

/// Per channel: what the normalisation reads (storeChannel), the saved
/// statistics, and the running ones updated.
template <typename T, typename A> struct StoreStatistics {
  const T *x; // the channels' first values, row 0 (ChannelMoments)
  A *stats;
  mpcrt_dtype pd;
  const void *gamma, *beta;
  void *runningMean, *runningVar;
  float *savedMean, *savedInvstd;
  int64_t rows, c;
  double momentum, eps;
  __device__ void operator()(int64_t, int64_t ch,
                             const Partial<A, 3> &s) const {
    finish(ch, Storage<T>::load(x[ch]) + s.v[1], s.v[2], rows);
  }
  /// Channel ch's mean and sum of squared deviations over `count` rows.
  __device__ void finish(int64_t ch, A mean, A var, int64_t count) const {
    A biased = var / static_cast<A>(count);
    A unbiased = count > 1 ? var / static_cast<A>(count - 1) : biased;
    A invstd = A(1) / sqrt(biased + static_cast<A>(eps));
    storeChannel(stats, c, ch, mean, invstd, pd, gamma, beta);
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

/// A synchronised batch norm's exchange (setRankGather): the job's ranks
/// and the function that gathers their values on the stream.
int32_t gatherRanks = 1;
void (*rankGather)(const void *, void *, int64_t) = nullptr;

/// The ranks a batch norm's statistics come from: 1 unless synchronised
/// in a job of several with a gather.
int32_t ranksOf(bool sync) {
  return sync && rankGather ? std::max(gatherRanks, 1) : 1;
}

/// Every rank's `values` doubles at `mine`, in rank order: `all` after the
/// gather (ranks * values), or `mine` itself in a job of one.
const double *gatherOverRanks(const double *mine, double *all, int64_t values) {
  if (ranksOf(true) == 1)
    return mine;
  rankGather(mine, all, values * int64_t(sizeof(double)));
  return all;
}

/// A rank's moments of each channel, for a synchronised batch norm, in
/// double: {count, mean (the channel's first value added back), sum of
/// squared deviations}.
template <typename T, typename A> struct StoreRankMoments {
  const T *x; // the channels' first values, row 0 (ChannelMoments)
  double *mine;
  __device__ void operator()(int64_t, int64_t ch,
                             const Partial<A, 3> &s) const {
    mine[3 * ch] = static_cast<double>(s.v[0]);
    mine[3 * ch + 1] = static_cast<double>(Storage<T>::load(x[ch])) +
                       static_cast<double>(s.v[1]);
    mine[3 * ch + 2] = static_cast<double>(s.v[2]);
  }
};

/// Every rank's moments of channel ch combined in rank order (Chan, Golub
/// and LeVeque, in double), then what StoreStatistics stores. The same
/// bits on every rank; in a job of one those of StoreStatistics alone (a
/// single rounding of exact double sums and quotients of A values).
template <typename T, typename A>
__global__ void syncStatisticsKernel(const double *all, int32_t ranks,
                                     StoreStatistics<T, A> store) {
  MPCRT_KERNEL_PROLOGUE();
  int64_t ch = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (ch >= store.c)
    return;
  double n = 0, mean = 0, squares = 0;
  for (int32_t r = 0; r < ranks; ++r) {
    const double *m = all + (int64_t(r) * store.c + ch) * 3;
    if (m[0] == 0)
      continue;
    if (n == 0) {
      n = m[0], mean = m[1], squares = m[2];
      continue;
    }
    double total = n + m[0], delta = m[1] - mean, share = m[0] / total;
    mean += delta * share;
    squares += m[2] + delta * delta * n * share;
    n = total;
  }
  store.finish(ch, static_cast<A>(mean), static_cast<A>(squares),
               static_cast<int64_t>(n));
}

/// The gradient reaching a batch norm: dy, or with a fused ReLU (its output
/// `out`) relu_grad(dy, out), rounded as mpc.relu_grad rounds it.
template <typename T>
__device__ typename Storage<T>::Acc normGradOf(T dy, T out, bool relu) {
  using S = Storage<T>;
  if (!relu)
    return S::load(dy);
  return S::load(
      S::store(S::load(dy) * formulas::derivative(MPCRT_RELU, S::load(out))));
}

/// (x - mean) * invstd: what a batch norm scales and shifts, and its
/// backward's xhat (the kernels are built without contraction: these
/// operations round as written, in every kernel alike).
template <typename A> __device__ A normalizedOf(A x, A mean, A invstd) {
  return (x - mean) * invstd;
}

/// A batch norm's result before its ReLU, rounded: xhat * gamma + beta.
/// The fused ReLU's output is positive exactly where this is, so the
/// backward forms the ReLU's gradient from it as from that output.
template <typename T>
__device__ T affineOf(typename Storage<T>::Acc xhat,
                      typename Storage<T>::Acc gamma,
                      typename Storage<T>::Acc beta) {
  return Storage<T>::store(xhat * gamma + beta);
}

/// The group of channels (v % cv) of a thread's indices in
/// gridStrideAhead: one for all of them where the grid's stride is a
/// multiple of cv (channelGroupBlocks makes it so where it can), else
/// computed for each (a remainder of a division: about as many
/// instructions as the access's arithmetic).
template <typename I> struct ThreadGroup {
  I cv, fixed; // fixed: the thread's group, or -1 where it changes
  /// For the indices of `vectors` (a multiple of cv) as SecondPass hands
  /// them out, reversed or not.
  __device__ ThreadGroup(I cv, I vectors, bool reversed) : cv(cv), fixed(-1) {
    int64_t stride = int64_t(gridDim.x) * blockDim.x,
            first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (stride % cv == 0 && first < vectors)
      fixed = I((reversed ? vectors - 1 - first : first) % cv);
  }
  __device__ I of(I v) const { return fixed >= 0 ? fixed : v % cv; }
};

/// The order of a batch norm's second pass over its tensor (the forward's
/// normalisation after the statistics, the backward's input gradient after
/// its sums), both from the end (`reversed`, the default): the first pass
/// reads the tensor from its first rows to its last, so what it read last
/// is the likeliest to be still in L2 when the second pass begins, which
/// reads that first. A 16x128x128x128 f16 tensor is 64 MiB, over an
/// H100's 50 MiB of L2: the normalisation found 52% of its bytes there
/// in the first order (setBatchNormGroupBytes takes groups of channels
/// that fit). The same values in either order.
struct SecondPass {
  bool reversed;
  /// The index the pass takes for gridStrideAhead's `v` of `vectors`.
  template <typename I> __device__ I at(I v, I vectors) const {
    return reversed ? vectors - 1 - v : v;
  }
};
bool secondPassReversed = true;

/// The channels a batch norm's elementwise pass runs over: all of a row's
/// cv accesses, or a group of gv (a power of two below cv) from access
/// `first` of each row (setBatchNormGroupBytes). The kernel counts the
/// group's accesses, rows x gv, and at() places them in [rows, cv].
template <typename I> struct ChannelGroup {
  I cv, gv, first;
  int shift; // log2(gv)
  __device__ I at(I v) const {
    return gv == cv ? v : (v >> shift) * cv + first + (v & (gv - 1));
  }
};

/// y = (x - mean) * invstd * gamma + beta over [rows, c] (with a fused ReLU
/// of the rounded value), N channels of a row per access (c = cv * N); the
/// channels' mean, invstd, gamma and beta N at a time from stats (4 c
/// values, storeChannel).
template <typename T, int N, typename I>
__global__ void batchNormApplyKernel(const T *x,
                                     const typename Storage<T>::Acc *stats,
                                     T *y, I vectors, ChannelGroup<I> channels,
                                     bool relu, SecondPass pass) {
  MPCRT_KERNEL_PROLOGUE();
  using S = Storage<T>;
  using A = typename S::Acc;
  using V = Vec<T, N>;
  using P = Vec<A, N>;
  const I cv = channels.cv;
  auto *params = reinterpret_cast<const P *>(stats) + channels.first;
  P mean, invstd, gamma, beta;
  I loaded = -1; // the group whose values the thread holds
  ThreadGroup<I> groups(channels.gv, vectors, pass.reversed);
  constexpr int kAhead = 4;
  V in[kAhead];
  gridStrideAhead<kAhead>(
      vectors,
      [&](I v, int a) {
        in[a] =
            reinterpret_cast<const V *>(x)[channels.at(pass.at(v, vectors))];
      },
      [&](I v, int a) {
        v = pass.at(v, vectors);
        if (I group = groups.of(v); group != loaded) {
          mean = params[group], invstd = params[cv + group],
          gamma = params[2 * cv + group], beta = params[3 * cv + group];
          loaded = group;
        }
        V out;
#pragma unroll
        for (int k = 0; k < N; ++k) {
          out.v[k] = affineOf<T>(
              normalizedOf(S::load(in[a].v[k]), mean.v[k], invstd.v[k]),
              gamma.v[k], beta.v[k]);
          if (relu)
            out.v[k] = S::store(formulas::unary(MPCRT_RELU, S::load(out.v[k])));
        }
        reinterpret_cast<V *>(y)[channels.at(v)] = out;
      });
}

/// Per channel, what the normalisation reads (storeChannel) with the
/// running statistics' mean and 1/sqrt(var + eps) (inference mode).
template <typename A>
__global__ void runningStatisticsKernel(mpcrt_dtype pd, const void *runningMean,
                                        const void *runningVar,
                                        const void *gamma, const void *beta,
                                        A *stats, int64_t c, double eps) {
  MPCRT_KERNEL_PROLOGUE();
  for (int64_t ch = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; ch < c;
       ch += int64_t(gridDim.x) * blockDim.x) {
    storeChannel(stats, c, ch, static_cast<A>(loadAny(pd, runningMean, ch)),
                 A(1) / sqrt(static_cast<A>(loadAny(pd, runningVar, ch)) +
                             static_cast<A>(eps)),
                 pd, gamma, beta);
  }
}

/// A batch norm backward's per-channel values in the accumulator type,
/// stats[k c + ch]: k = 0, 1 the means of dy and dy * xhat, 2 the saved
/// mean, 3 the saved invstd, 4 gamma, and with a fused ReLU's output
/// formed again 5 beta, all stored by the sums' finish (BatchNormParams::
/// store: StoreBatchNormGrads, or syncGradMeansKernel). The kernels read
/// them N channels at a time (c and the group's first channel are
/// multiples of N, and the scratch is aligned).
template <typename A> struct BatchNormParams {
  mpcrt_dtype pd;
  const void *gamma, *beta; // beta null unless the output is formed again
  const float *savedMean, *savedInvstd;
  /// Channel ch's saved statistics and parameters in A, as stats holds
  /// them.
  __device__ A mean(int64_t ch) const { return A(savedMean[ch]); }
  __device__ A invstd(int64_t ch) const { return A(savedInvstd[ch]); }
  __device__ A gammaOf(int64_t ch) const {
    return static_cast<A>(loadAny(pd, gamma, ch));
  }
  __device__ A betaOf(int64_t ch) const {
    return static_cast<A>(loadAny(pd, beta, ch));
  }
  /// Stores them at stats[2 c + ch] and on.
  __device__ void store(A *stats, int64_t c, int64_t ch) const {
    stats[2 * c + ch] = mean(ch);
    stats[3 * c + ch] = invstd(ch);
    stats[4 * c + ch] = gammaOf(ch);
    if (beta)
      stats[5 * c + ch] = betaOf(ch);
  }
};

/// N channels' values of array k of stats (BatchNormParams).
template <int N, typename A>
__device__ Vec<A, N> channelValues(const A *stats, int64_t c, int k,
                                   int64_t ch) {
  return *reinterpret_cast<const Vec<A, N> *>(stats + k * c + ch);
}

/// How the gradient reaching a batch norm is read: dy itself, through a
/// fused ReLU whose output is read (`output`), or through one whose output
/// is formed again from x, gamma and beta.
enum class NormGrad { Plain, ReadOutput, FormOutput };

/// The backward sums of one element: dy and dy * xhat. The way is a
/// template parameter: with it a run-time flag, the loop of
/// columnPartialsKernel loaded gamma and beta again for every row (behind
/// the flag's branch the compiler did not take them out of the loop, as
/// it did the mean and invstd).
template <typename T, NormGrad Way> struct BatchNormGradTerms {
  using Element = T;
  using A = typename Storage<T>::Acc;
  const T *dy, *x, *output; // output: a fused ReLU's (ReadOutput)
  BatchNormParams<A> params;
  int64_t c;
  bool aligned() const {
    return alignedTo(dy, 16) && alignedTo(x, 16) && alignedTo(output, 16);
  }
  /// The channels' mean and invstd, and gamma and beta where the ReLU's
  /// output is formed again.
  template <int N> struct Channels {
    Vec<A, N> mean, invstd, gamma, beta;
  };
  template <int N>
  __device__ Channels<N> column(int64_t, int64_t ch, bool) const {
    Channels<N> v{};
#pragma unroll
    for (int k = 0; k < N; ++k) {
      v.mean.v[k] = params.mean(ch + k);
      v.invstd.v[k] = params.invstd(ch + k);
      if constexpr (Way == NormGrad::FormOutput) {
        v.gamma.v[k] = params.gammaOf(ch + k);
        v.beta.v[k] = params.betaOf(ch + k);
      }
    }
    return v;
  }
  template <int N>
  __device__ void terms(int64_t, int64_t r, int64_t ch, bool whole,
                        const Channels<N> &v, Partial<A, 2> (&t)[N]) const {
    using S = Storage<T>;
    int64_t i = r * c + ch;
    Vec<T, N> g = loadVec<N>(dy, i, whole), in = loadVec<N>(x, i, whole), out;
    if constexpr (Way == NormGrad::ReadOutput)
      out = loadVec<N>(output, i, whole);
#pragma unroll
    for (int k = 0; k < N; ++k) {
      A xhat = normalizedOf(S::load(in.v[k]), v.mean.v[k], v.invstd.v[k]);
      A d;
      if constexpr (Way == NormGrad::Plain)
        d = S::load(g.v[k]);
      else if constexpr (Way == NormGrad::ReadOutput)
        d = normGradOf(g.v[k], out.v[k], true);
      else
        d = normGradOf(g.v[k], affineOf<T>(xhat, v.gamma.v[k], v.beta.v[k]),
                       true);
      t[k] = {{d, d * xhat}};
    }
  }
};

/// Per channel: the means of dy and dy * xhat over the rows into
/// stats[ch], stats[c + ch], the saved statistics and parameters beside
/// them (BatchNormParams::store; all read N channels at a time by
/// batchNormGradInputKernel), and the parameters' gradients (the sums,
/// added to their addends where given).
template <typename A> struct StoreBatchNormGrads {
  A *stats;
  BatchNormParams<A> params;
  void *dgamma, *dbeta;
  const void *gammaAddend, *betaAddend;
  int64_t c, rows;
  __device__ void operator()(int64_t, int64_t ch,
                             const Partial<A, 2> &s) const {
    stats[ch] = s.v[0] / static_cast<A>(rows);
    stats[c + ch] = s.v[1] / static_cast<A>(rows);
    params.store(stats, c, ch);
    storeSumAny(params.pd, dgamma, gammaAddend, ch, s.v[1]);
    storeSumAny(params.pd, dbeta, betaAddend, ch, s.v[0]);
  }
};

/// A synchronised backward's own sums: the parameters' gradients as
/// StoreBatchNormGrads stores them, and sum(d), sum(d xhat) per channel
/// in double for the other ranks.
template <typename A> struct StoreRankGradSums {
  mpcrt_dtype pd;
  void *dgamma, *dbeta;
  const void *gammaAddend, *betaAddend;
  double *mine;
  __device__ void operator()(int64_t, int64_t ch,
                             const Partial<A, 2> &s) const {
    mine[2 * ch] = static_cast<double>(s.v[0]);
    mine[2 * ch + 1] = static_cast<double>(s.v[1]);
    storeSumAny(pd, dgamma, gammaAddend, ch, s.v[1]);
    storeSumAny(pd, dbeta, betaAddend, ch, s.v[0]);
  }
};

/// The means over every rank's rows of d and d xhat (the ranks' sums
/// added in rank order, in double) where StoreBatchNormGrads puts them,
/// and the saved statistics and parameters beside them.
template <typename A>
__global__ void syncGradMeansKernel(const double *all, int32_t ranks, A *stats,
                                    int64_t c, double rows,
                                    BatchNormParams<A> params) {
  MPCRT_KERNEL_PROLOGUE();
  int64_t ch = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (ch >= c)
    return;
  params.store(stats, c, ch);
  double dy = 0, dyXhat = 0;
  for (int32_t r = 0; r < ranks; ++r) {
    dy += all[(int64_t(r) * c + ch) * 2];
    dyXhat += all[(int64_t(r) * c + ch) * 2 + 1];
  }
  stats[ch] = static_cast<A>(dy / rows);
  stats[c + ch] = static_cast<A>(dyXhat / rows);
}

/// dx = gamma invstd (d - mean(d) - xhat mean(d xhat)), d the gradient
/// reaching the norm (read the Way BatchNormGradTerms reads it), as the
/// CPU reference forms it; N channels per access. The channels' values N
/// at a time from stats (5 (6) c values, StoreBatchNormGrads), gamma
/// invstd formed once per group.
template <typename T, int N, typename I, NormGrad Way>
__global__ void
batchNormGradInputKernel(const T *dy, const T *x, const T *output,
                         const typename Storage<T>::Acc *stats, T *dx,
                         I vectors, ChannelGroup<I> channels, SecondPass pass) {
  MPCRT_KERNEL_PROLOGUE();
  using S = Storage<T>;
  using A = typename S::Acc;
  using V = Vec<T, N>;
  using P = Vec<A, N>;
  const I cv = channels.cv;
  auto *params = reinterpret_cast<const P *>(stats) + channels.first;
  P meanDy, meanDyXhat, mean, invstd, k, gamma, beta;
  I loaded = -1; // the group whose values the thread holds
  ThreadGroup<I> groups(channels.gv, vectors, pass.reversed);
  constexpr int kAhead = 2;
  V g[kAhead], in[kAhead], out[kAhead];
  gridStrideAhead<kAhead>(
      vectors,
      [&](I v, int a) {
        v = channels.at(pass.at(v, vectors));
        g[a] = reinterpret_cast<const V *>(dy)[v];
        in[a] = reinterpret_cast<const V *>(x)[v];
        if constexpr (Way == NormGrad::ReadOutput)
          out[a] = reinterpret_cast<const V *>(output)[v];
      },
      [&](I v, int a) {
        v = pass.at(v, vectors);
        if (I group = groups.of(v); group != loaded) {
          meanDy = params[group], meanDyXhat = params[cv + group],
          mean = params[2 * cv + group], invstd = params[3 * cv + group],
          gamma = params[4 * cv + group];
          if constexpr (Way == NormGrad::FormOutput)
            beta = params[5 * cv + group];
#pragma unroll
          for (int j = 0; j < N; ++j)
            k.v[j] = gamma.v[j] * invstd.v[j];
          loaded = group;
        }
        V result;
#pragma unroll
        for (int j = 0; j < N; ++j) {
          A xhat = normalizedOf(S::load(in[a].v[j]), mean.v[j], invstd.v[j]);
          A d;
          if constexpr (Way == NormGrad::Plain)
            d = S::load(g[a].v[j]);
          else if constexpr (Way == NormGrad::ReadOutput)
            d = normGradOf(g[a].v[j], out[a].v[j], true);
          else
            d = normGradOf(g[a].v[j], affineOf<T>(xhat, gamma.v[j], beta.v[j]),
                           true);
          result.v[j] =
              S::store(k.v[j] * (d - meanDy.v[j] - xhat * meanDyXhat.v[j]));
        }
        reinterpret_cast<V *>(dx)[channels.at(v)] = result;
      });
}

/// channelGroupBlocks' accesses per thread (setChannelVectorsPerThread).
int64_t channelVectorsPerThread = 4;

/// Blocks of kThreads for `vectors` accesses of [rows, cv] (cv groups of
/// channels per row), so that a thread's accesses, kThreads * blocks
/// apart, stay in its group: it reads the group's per-channel values once
/// for about channelVectorsPerThread accesses instead of once for each
/// (those values take several times the bytes of the access itself; 4
/// unless setChannelVectorsPerThread changed it). Where no such
/// count is small enough, plainly one access per thread (the kernels then
/// read the values again as the group changes).
unsigned channelGroupBlocks(int64_t vectors, int64_t cv) {
  int64_t step = cv / std::gcd(cv, int64_t(kThreads));
  int64_t blocks = (vectors + kThreads * channelVectorsPerThread - 1) /
                   (kThreads * channelVectorsPerThread);
  blocks = (std::max<int64_t>(blocks, 1) + step - 1) / step * step;
  if (blocks > 65535 * 8)
    return blocksFor(vectors);
  return static_cast<unsigned>(blocks);
}

/// Scratch for a batch norm: `arrays` c values of type A per channel (its
/// statistics and parameters), then the partials.
/// A synchronised batch norm's takes `doubles` more after them
/// (`exchange`: its own values and every rank's).
template <typename A, int K>
A *batchNormScratch(const ColumnPlan &p, int64_t c, int64_t arrays,
                    Partial<A, K> *&partials, int64_t doubles = 0,
                    double **exchange = nullptr) {
  int64_t statBytes = (arrays * c * int64_t(sizeof(A)) + 15) / 16 * 16;
  int64_t bytes = statBytes + partialBytes<A, K>(p);
  int64_t exchangeAt = (bytes + 15) / 16 * 16;
  if (doubles > 0)
    bytes = exchangeAt + doubles * int64_t(sizeof(double));
  char *base = reinterpret_cast<char *>(scratchF32((bytes + 3) / 4));
  partials = reinterpret_cast<Partial<A, K> *>(base + statBytes);
  if (exchange)
    *exchange = reinterpret_cast<double *>(base + exchangeAt);
  return reinterpret_cast<A *>(base);
}

/// A pooling shape in the launch's index type, with its divisors.
template <typename I> struct Pool {
  I n, h, w, c, ho, wo, kh, kw, sh, sw, ph, pw;
  bool includePad;
  IndexDivisor<I> byC, byH, byW, byHo, byWo, byStrideH, byStrideW;
  /// Counts channels in accesses of `c` (set before a vector launch).
  void setChannels(I channels) {
    c = channels;
    byC = IndexDivisor<I>(channels);
  }
};

template <typename I> Pool<I> poolOf(const mpcrt_pool2d_shape &s) {
  Pool<I> p{I(s.n),
            I(s.h),
            I(s.w),
            I(s.c),
            I(s.ho),
            I(s.wo),
            I(s.kh),
            I(s.kw),
            I(s.stride_h),
            I(s.stride_w),
            I(s.pad_h),
            I(s.pad_w),
            s.count_include_pad != 0,
            IndexDivisor<I>(s.c),
            IndexDivisor<I>(s.h),
            IndexDivisor<I>(s.w),
            IndexDivisor<I>(s.ho),
            IndexDivisor<I>(s.wo),
            IndexDivisor<I>(s.stride_h),
            IndexDivisor<I>(s.stride_w)};
  return p;
}

/// Every index of a pooling (input, output, padded window corners) fits I.
int64_t poolBound(const mpcrt_pool2d_shape &s) {
  return std::max({s.n * s.h * s.w * s.c, s.n * s.ho * s.wo * s.c,
                   (s.ho + 1) * s.stride_h + s.kh + s.h,
                   (s.wo + 1) * s.stride_w + s.kw + s.w});
}

/// Calls f(T *, Pool<I>) with the storage type of `dtype` and the shape in
/// the index type every offset of the pooling fits.
/// `also`: another offset the kernel computes (an addend's last).
template <typename F>
void withPool(mpcrt_dtype dtype, const mpcrt_pool2d_shape &s, F f,
              int64_t also = 0) {
  dispatch(dtype, [&](auto *t) {
    withIndexFor(std::max(poolBound(s), also),
                 [&](auto *i) { f(t, poolOf<MPCRT_TYPE(i)>(s)); });
  });
}

/// A pooling window of output element `out` (NHWC): its valid input range
/// and PyTorch's average divisor.
template <typename I> struct Window {
  I n, ch, y0, y1, x0, x1, divisor;
};

template <typename I> __device__ Window<I> windowOf(const Pool<I> &s, I out) {
  Window<I> w;
  I rest = out;
  w.ch = s.byC.split(rest);
  I ox = s.byWo.split(rest);
  I oy = s.byHo.split(rest);
  w.n = rest;
  I y0 = oy * s.sh - s.ph, x0 = ox * s.sw - s.pw;
  I y1 = min(y0 + s.kh, s.h + s.ph), x1 = min(x0 + s.kw, s.w + s.pw);
  I padded = (y1 - y0) * (x1 - x0);
  w.y0 = y0 > 0 ? y0 : 0;
  w.x0 = x0 > 0 ? x0 : 0;
  w.y1 = min(y1, s.h), w.x1 = min(x1, s.w);
  w.divisor = s.includePad ? padded : (w.y1 - w.y0) * (w.x1 - w.x0);
  return w;
}

/// The maxima of a window for each of the N channels of one access: the
/// first maximum (a NaN wins) and its position in accesses, or -inf and
/// -1 where the window is empty.
template <typename T, int N, typename I> struct WindowMax {
  Vec<T, N> value;
  I at[N];
};

/// The WindowMax of window `w` of x, read as accesses of N channels (s.c
/// counts accesses).
template <typename T, int N, typename I>
__device__ WindowMax<T, N, I> maxOf(const Vec<T, N> *x, const Pool<I> &s,
                                    const Window<I> &w) {
  using S = Storage<T>;
  WindowMax<T, N, I> m;
  bool nan[N];
#pragma unroll
  for (int k = 0; k < N; ++k) {
    m.value.v[k] = S::store(-INFINITY);
    m.at[k] = -1;
    nan[k] = false;
  }
  // The window's positions in order, kAhead loads at a time issued before
  // any is compared (a 2x2 window's four in flight together, where a load
  // waited for the comparisons of the one before), from a cursor (y, xx)
  // rather than a division per position.
  constexpr int kAhead = 4;
  I y = w.y0, xx = w.x0;
  if (w.x0 >= w.x1)
    y = w.y1; // no columns: an empty window
  while (y < w.y1) {
    Vec<T, N> v[kAhead];
    I at[kAhead];
    int loaded = 0;
#pragma unroll
    for (int a = 0; a < kAhead; ++a)
      if (y < w.y1) {
        at[a] = ((w.n * s.h + y) * s.w + xx) * s.c + w.ch;
        v[a] = x[at[a]];
        loaded = a + 1;
        if (++xx == w.x1) {
          xx = w.x0;
          ++y;
        }
      }
#pragma unroll
    for (int a = 0; a < kAhead; ++a) {
      if (a >= loaded)
        break;
#pragma unroll
      for (int k = 0; k < N; ++k) {
        if (nan[k])
          continue;
        auto value = S::load(v[a].v[k]);
        nan[k] = isnan(value);
        if (nan[k] || m.at[k] < 0 || value > S::load(m.value.v[k])) {
          m.value.v[k] = v[a].v[k];
          m.at[k] = at[a];
        }
      }
    }
  }
  return m;
}

/// The first maximum of the window (a NaN wins), -1 when empty.
template <typename T, typename I>
__device__ I argmaxOf(const T *x, const Pool<I> &s, const Window<I> &w) {
  return maxOf(reinterpret_cast<const Vec<T, 1> *>(x), s, w).at[0];
}

/// y = the window maxima, N channels per access (s.c and count in
/// accesses).
template <typename T, int N, typename I>
__global__ void maxPoolKernel(const T *x, T *y, Pool<I> s, I count) {
  MPCRT_KERNEL_PROLOGUE();
  using V = Vec<T, N>;
  for (I out = blockIdx.x * I(blockDim.x) + threadIdx.x; out < count;
       out += I(gridDim.x) * blockDim.x)
    reinterpret_cast<V *>(y)[out] =
        maxOf(reinterpret_cast<const V *>(x), s, windowOf(s, out)).value;
}

/// The output rows (or columns) whose windows hold input row `y`: the
/// half-open range [lo, hi) within [0, outputs).
template <typename I>
__device__ void windowsHolding(I y, I k, const IndexDivisor<I> &stride, I pad,
                               I outputs, I &lo, I &hi) {
  // oy * stride - pad <= y < oy * stride - pad + k
  I first = y + pad - k + 1;
  lo = first <= 0 ? 0 : stride.quotient(first + stride.value - 1);
  hi = min(stride.quotient(y + pad) + 1, outputs);
}

/// The input element `in`'s position and the windows that hold it.
template <typename I> struct Held {
  I n, ch, pixel, oy0, oy1, ox0, ox1;
};

template <typename I> __device__ Held<I> heldBy(const Pool<I> &s, I in) {
  Held<I> h;
  I rest = in;
  h.ch = s.byC.split(rest);
  h.pixel = rest;
  I xx = s.byW.split(rest);
  I y = s.byH.split(rest);
  h.n = rest;
  windowsHolding(y, s.kh, s.byStrideH, s.ph, s.ho, h.oy0, h.oy1);
  windowsHolding(xx, s.kw, s.byStrideW, s.pw, s.wo, h.ox0, h.ox1);
  return h;
}

/// Pooling gradients of overlapping windows gather: each input element
/// sums, in the accumulator type and a fixed order, what the windows that
/// hold it send back. No atomics, so the result is deterministic and f64
/// stays f64.
/// With an addend (`row` elements from one position to the next), each
/// rounded sum is added to it and rounded again (mpc.add's values).
template <typename T, typename I>
__global__ void maxPoolBackwardKernel(const T *dy, const T *x, T *dx, Pool<I> s,
                                      I count, const T *addend, I row) {
  MPCRT_KERNEL_PROLOGUE();
  using S = Storage<T>;
  using A = typename S::Acc;
  for (I in = blockIdx.x * I(blockDim.x) + threadIdx.x; in < count;
       in += I(gridDim.x) * blockDim.x) {
    Held<I> h = heldBy(s, in);
    A sum = 0;
    for (I oy = h.oy0; oy < h.oy1; ++oy)
      for (I ox = h.ox0; ox < h.ox1; ++ox) {
        I out = ((h.n * s.ho + oy) * s.wo + ox) * s.c + h.ch;
        if (argmaxOf(x, s, windowOf(s, out)) == in)
          sum += S::load(dy[out]);
      }
    T g = S::store(sum);
    if (addend)
      g = S::store(S::load(addend[h.pixel * row + h.ch]) + S::load(g));
    dx[in] = g;
  }
}

/// Windows that do not overlap (stride >= kernel): one thread per window
/// and N channels finds their maxima once and writes the whole window's
/// gradient, the maximum's (0 + dy, as the gather sums) and zeros (s.c and
/// count in accesses). Inputs outside every window are zeroed before.
template <typename T, int N, typename I>
__global__ void maxPoolBackwardWindowsKernel(const T *dy, const T *x, T *dx,
                                             Pool<I> s, I count,
                                             const T *addend, I row) {
  MPCRT_KERNEL_PROLOGUE();
  using S = Storage<T>;
  using A = typename S::Acc;
  using V = Vec<T, N>;
  for (I out = blockIdx.x * I(blockDim.x) + threadIdx.x; out < count;
       out += I(gridDim.x) * blockDim.x) {
    Window<I> w = windowOf(s, out);
    WindowMax<T, N, I> m = maxOf(reinterpret_cast<const V *>(x), s, w);
    V g = reinterpret_cast<const V *>(dy)[out], grad, zero;
#pragma unroll
    for (int k = 0; k < N; ++k) {
      A sum = 0;
      sum += S::load(g.v[k]);
      grad.v[k] = S::store(sum);
      zero.v[k] = S::store(A(0));
    }
    for (I y = w.y0; y < w.y1; ++y)
      for (I xx = w.x0; xx < w.x1; ++xx) {
        I pixel = (w.n * s.h + y) * s.w + xx, i = pixel * s.c + w.ch;
        V d;
#pragma unroll
        for (int k = 0; k < N; ++k)
          d.v[k] = i == m.at[k] ? grad.v[k] : zero.v[k];
        if (addend) {
          // row is in accesses of N channels here.
          V a = reinterpret_cast<const V *>(addend)[pixel * row + w.ch];
#pragma unroll
          for (int k = 0; k < N; ++k)
            d.v[k] = S::store(S::load(a.v[k]) + S::load(d.v[k]));
        }
        reinterpret_cast<V *>(dx)[i] = d;
      }
  }
}

template <typename T, typename I>
__global__ void avgPoolKernel(const T *x, T *y, Pool<I> s, I count) {
  MPCRT_KERNEL_PROLOGUE();
  using S = Storage<T>;
  using A = typename S::Acc;
  for (I out = blockIdx.x * I(blockDim.x) + threadIdx.x; out < count;
       out += I(gridDim.x) * blockDim.x) {
    Window<I> w = windowOf(s, out);
    A sum = 0;
    for (I yy = w.y0; yy < w.y1; ++yy)
      for (I xx = w.x0; xx < w.x1; ++xx)
        sum += S::load(x[((w.n * s.h + yy) * s.w + xx) * s.c + w.ch]);
    y[out] = S::store(sum / static_cast<A>(w.divisor));
  }
}

template <typename T, typename I>
__global__ void avgPoolBackwardKernel(const T *dy, T *dx, Pool<I> s, I count) {
  MPCRT_KERNEL_PROLOGUE();
  using S = Storage<T>;
  using A = typename S::Acc;
  for (I in = blockIdx.x * I(blockDim.x) + threadIdx.x; in < count;
       in += I(gridDim.x) * blockDim.x) {
    Held<I> h = heldBy(s, in);
    A sum = 0;
    for (I oy = h.oy0; oy < h.oy1; ++oy)
      for (I ox = h.ox0; ox < h.ox1; ++ox) {
        I out = ((h.n * s.ho + oy) * s.wo + ox) * s.c + h.ch;
        Window<I> w = windowOf(s, out);
        sum += S::load(dy[out]) / static_cast<A>(w.divisor);
      }
    dx[in] = S::store(sum);
  }
}

/// Nearest upsampling by (sh, sw) of [n, h, w, c]: one thread per input
/// access of N channels, which it reads once and writes sh * sw times
/// (c = cv * N).
template <typename I> struct Upsample {
  I n, h, w, cv, sh, sw;
  IndexDivisor<I> byCv, byW, byH;
  /// Input access i's channel access, column, row and image.
  __device__ void positionOf(I i, I &cc, I &xx, I &yy, I &b) const {
    cc = byCv.split(i);
    xx = byW.split(i);
    yy = byH.split(i);
    b = i;
  }
};

template <typename I>
Upsample<I> upsampleOf(int64_t n, int64_t h, int64_t w, int64_t cv, int64_t sh,
                       int64_t sw) {
  return {I(n),
          I(h),
          I(w),
          I(cv),
          I(sh),
          I(sw),
          IndexDivisor<I>(cv),
          IndexDivisor<I>(w),
          IndexDivisor<I>(h)};
}

template <typename T, int N, typename I>
__global__ void upsampleKernel(const T *x, T *y, Upsample<I> u) {
  MPCRT_KERNEL_PROLOGUE();
  using V = Vec<T, N>;
  I h = u.h, w = u.w, cv = u.cv, sh = u.sh, sw = u.sw;
  I count = u.n * h * w * cv, wo = w * sw;
  for (I i = blockIdx.x * I(blockDim.x) + threadIdx.x; i < count;
       i += I(gridDim.x) * blockDim.x) {
    I cc, xx, yy, b;
    u.positionOf(i, cc, xx, yy, b);
    V v = reinterpret_cast<const V *>(x)[i];
    for (I a = 0; a < sh; ++a) {
      I row = ((b * h + yy) * sh + a) * wo + xx * sw;
      for (I e = 0; e < sw; ++e)
        reinterpret_cast<V *>(y)[(row + e) * cv + cc] = v;
    }
  }
}

/// The adjoint as a gather: each input access of N channels sums its
/// sh x sw outputs in order (rows, then columns).
template <typename T, int N, typename I>
__global__ void upsampleBackwardKernel(const T *dy, T *dx, Upsample<I> u) {
  MPCRT_KERNEL_PROLOGUE();
  using S = Storage<T>;
  using A = typename S::Acc;
  using V = Vec<T, N>;
  I h = u.h, w = u.w, cv = u.cv, sh = u.sh, sw = u.sw;
  I count = u.n * h * w * cv, wo = w * sw;
  for (I i = blockIdx.x * I(blockDim.x) + threadIdx.x; i < count;
       i += I(gridDim.x) * blockDim.x) {
    I cc, xx, yy, b;
    u.positionOf(i, cc, xx, yy, b);
    A sum[N] = {};
    for (I a = 0; a < sh; ++a) {
      I row = ((b * h + yy) * sh + a) * wo + xx * sw;
      for (I e = 0; e < sw; ++e) {
        V g = reinterpret_cast<const V *>(dy)[(row + e) * cv + cc];
#pragma unroll
        for (int k = 0; k < N; ++k)
          sum[k] += S::load(g.v[k]);
      }
    }
    V out;
#pragma unroll
    for (int k = 0; k < N; ++k)
      out.v[k] = S::store(sum[k]);
    reinterpret_cast<V *>(dx)[i] = out;
  }
}

/// A pointwise loss in one launch: block b sums the terms of its
/// grid-stride elements into partials[b], fences and counts itself in at
/// *arrivals (0 before the launch); the block that arrives last sets it
/// back to 0 and sums the blocks' partials in a fixed order (a grid that
/// depends on the count only), then takes the mean.
template <typename T, typename A>
__global__ void pointwiseLossKernel(int32_t kind, const T *x, const T *t,
                                    A *partials, T *loss, int64_t count,
                                    bool mean, unsigned *arrivals) {
  MPCRT_KERNEL_PROLOGUE();
  using S = Storage<T>;
  A sum = 0;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x)
    sum += formulas::pointwiseLoss(kind, S::load(x[i]), S::load(t[i]));
  sum = blockReduce(sum);
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = sum;
    __threadfence();
  }
  if (!arrivesLast(arrivals, gridDim.x))
    return;
  sum = 0;
  for (int64_t b = threadIdx.x; b < gridDim.x; b += blockDim.x)
    sum += __ldcg(&partials[b]);
  sum = blockReduce(sum);
  // Nothing to average: 0 (not 0/0), as the reference.
  if (threadIdx.x == 0)
    *loss = S::store(mean && count > 0 ? sum / static_cast<A>(count) : sum);
}

template <typename T>
__global__ void pointwiseLossBackwardKernel(int32_t kind, const T *dl,
                                            const T *x, const T *t, T *dx,
                                            int64_t count, bool mean) {
  MPCRT_KERNEL_PROLOGUE();
  using S = Storage<T>;
  using A = typename S::Acc;
  A scale = S::load(*dl) / (mean ? static_cast<A>(count) : A(1));
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x)
    dx[i] = S::store(scale * formulas::pointwiseLossGrad(kind, S::load(x[i]),
                                                         S::load(t[i])));
}

/// setBatchNormGroupBytes: -1 until MPC_CUDA_BN_GROUPS is read.
int64_t groupBytes = -1;
/// lastBatchNormGroups.
int64_t lastGroups = 1;

int64_t batchNormGroupBytes() {
  if (groupBytes < 0) {
    bool l2 = environmentChoice(
        "MPC_CUDA_BN_GROUPS", "off",
        "a batch norm's passes each run over every channel at once", "l2",
        "a batch norm runs both its passes over one group of channels, then "
        "over the next, the bytes each group's second pass reads and writes "
        "within the L2");
    groupBytes = 0;
    if (l2) {
      int device = 0, bytes = 0;
      MPCRT_CUDA_CHECK(cudaGetDevice(&device));
      MPCRT_CUDA_CHECK(
          cudaDeviceGetAttribute(&bytes, cudaDevAttrL2CacheSize, device));
      groupBytes = bytes;
    }
  }
  return groupBytes;
}

/// The fewest 16-byte accesses of a row a group of channels takes: 64
/// bytes, HBM3's burst, so that each row's part of a group is read from
/// memory whole (a group of 32 bytes would leave half of each burst to a
/// group that comes later, by when the L2 has let it go).
constexpr int64_t kGroupAccesses = 4;

/// The channels of each group a batch norm over [rows, c] of T runs over,
/// its second pass reading and writing `arrays` such tensors (the
/// forward's x and y; the backward's dy, x, dx and a read output): c where
/// those bytes fit setBatchNormGroupBytes' bytes, where it is 0, or where
/// no group can be formed. A group is a power of two of the elementwise
/// kernels' 16-byte accesses, at least kGroupAccesses, that divides the
/// row's accesses; so groups need every pointer on 16 bytes and c a
/// multiple of 16 bytes' elements, as those accesses do.
template <typename T>
int64_t groupChannels(int64_t rows, int64_t c, int arrays, bool sync,
                      std::initializer_list<const void *> pointers) {
  constexpr int64_t N = 16 / sizeof(T);
  int64_t budget = sync ? 0 : batchNormGroupBytes();
  int64_t perChannel = rows * arrays * int64_t(sizeof(T));
  if (budget <= 0 || c % N != 0 || perChannel * c <= budget)
    return c;
  for (const void *p : pointers)
    if (!alignedTo(p, 16))
      return c;
  int64_t cv = c / N, best = 0;
  for (int64_t g = kGroupAccesses;
       g < cv && cv % g == 0 && perChannel * g * N <= budget; g *= 2)
    best = g;
  return best ? best * N : c;
}

/// The group of cg channels from channel ch0 of [rows, c] in accesses of n
/// channels (cg == c: every channel).
template <typename I>
ChannelGroup<I> channelGroupOf(int64_t c, int64_t ch0, int64_t cg, int n) {
  return {I(c / n), I(cg / n), I(ch0 / n),
          cg == c ? 0 : __builtin_ctzll(uint64_t(cg / n))};
}

/// p advanced by `channels` values of dtype; null stays null.
const void *channelsOn(const void *p, mpcrt_dtype dtype, int64_t channels) {
  return p ? static_cast<const char *>(p) + channels * bytesOf(dtype) : p;
}
void *channelsOn(void *p, mpcrt_dtype dtype, int64_t channels) {
  return p ? static_cast<char *>(p) + channels * bytesOf(dtype) : p;
}

/// y = (x - mean) * invstd * gamma + beta (then a ReLU) over channels ch0
/// to ch0 + cg of [rows, c] (cg 0: every channel) with each channel's
/// values in stats as storeChannel lays them out, 16 bytes at a time where
/// the channels and pointers allow (always where cg < c: groupChannels).
template <typename T, typename A>
void applyBatchNorm(const T *x, const A *stats, T *y, int64_t rows, int64_t c,
                    bool relu, int64_t ch0 = 0, int64_t cg = 0) {
  cg = cg ? cg : c;
  withVectorsOf<T>(c, {x, y}, [&](auto width) {
    constexpr int N = decltype(width)::value;
    withIndexFor(rows * c, [&](auto *i) {
      using I = MPCRT_TYPE(i);
      batchNormApplyKernel<T, N, I><<<channelGroupBlocks(rows * cg / N, cg / N),
                                      kThreads, 0, stream()>>>(
          x, stats, y, I(rows * cg / N), channelGroupOf<I>(c, ch0, cg, N), relu,
          SecondPass{secondPassReversed});
    });
  });
}

} // namespace

int64_t setBatchNormGroupBytes(int64_t bytes) {
  int64_t before = batchNormGroupBytes();
  groupBytes = std::max<int64_t>(bytes, 0);
  return before;
}

int64_t lastBatchNormGroups() { return lastGroups; }

bool setBatchNormSecondPassReversed(bool reversed) {
  return std::exchange(secondPassReversed, reversed);
}

int64_t setChannelVectorsPerThread(int64_t vectors) {
  return std::exchange(channelVectorsPerThread, std::max<int64_t>(vectors, 1));
}

void batchNorm(mpcrt_dtype dtype, const void *input, mpcrt_dtype paramDtype,
               const void *gamma, const void *beta, void *runningMean,
               void *runningVar, void *output, float *savedMean,
               float *savedInvstd, int64_t rows, int64_t c, double momentum,
               double epsilon, bool relu, bool sync) {
  lastGroups = 1;
  if (c == 0)
    return;
  // Synchronised, every rank has these rows (the same compiled shape): a
  // job with none exchanges nothing on any rank.
  if (rows == 0) { // no statistics: running ones untouched, saved ones 0
    zero(savedMean, c * sizeof(float));
    zero(savedInvstd, c * sizeof(float));
    return;
  }
  dispatch(dtype, [&](auto *t) {
    using T = MPCRT_TYPE(t);
    using A = typename Storage<T>::Acc;
    const T *x = static_cast<const T *>(input);
    T *y = static_cast<T *>(output);
    // Both passes over each group of cg channels in turn (all of them
    // unless setBatchNormGroupBytes says otherwise).
    int64_t cg = groupChannels<T>(rows, c, 2, sync, {x, y});
    lastGroups = c / cg;
    ColumnPlan plan = planColumns<T>(1, rows, cg);
    Partial<A, 3> *partials;
    int32_t ranks = ranksOf(sync);
    double *mine = nullptr;
    A *stats = batchNormScratch(plan, c, 4, partials,
                                sync ? 3 * c * (1 + ranks) : 0, &mine);
    for (int64_t ch0 = 0; ch0 < c; ch0 += cg) {
      // The group's channels: its columns of x, stats' arrays (c apart)
      // and the per-channel arrays from channel ch0 on.
      const T *xg = x + ch0;
      StoreStatistics<T, A> store{xg,
                                  stats + ch0,
                                  paramDtype,
                                  channelsOn(gamma, paramDtype, ch0),
                                  channelsOn(beta, paramDtype, ch0),
                                  channelsOn(runningMean, paramDtype, ch0),
                                  channelsOn(runningVar, paramDtype, ch0),
                                  savedMean + ch0,
                                  savedInvstd + ch0,
                                  rows,
                                  c,
                                  momentum,
                                  epsilon};
      auto moments = [&](auto finish) {
        reduceColumnsOf(plan, ChannelMoments<T>{xg, c}, CombineMoments<A>{},
                        FoldMoments<A>{}, Partial<A, 3>{{A(0), A(0), A(0)}},
                        finish, partials);
      };
      if (!sync) {
        moments(store);
      } else {
        // This rank's moments, every rank's gathered, combined in rank
        // order (one group: groupChannels).
        moments(StoreRankMoments<T, A>{xg, mine});
        const double *all = gatherOverRanks(mine, mine + 3 * c, 3 * c);
        syncStatisticsKernel<T, A>
            <<<blocksFor(c), kThreads, 0, stream()>>>(all, ranks, store);
      }
      applyBatchNorm(x, stats, y, rows, c, relu, ch0, cg);
    }
  });
  MPCRT_CUDA_LAUNCHED("batch_norm");
}

void batchNormInference(mpcrt_dtype dtype, const void *input,
                        mpcrt_dtype paramDtype, const void *gamma,
                        const void *beta, const void *runningMean,
                        const void *runningVar, void *output, int64_t rows,
                        int64_t c, double epsilon, bool relu) {
  if (c == 0 || rows == 0)
    return;
  dispatch(dtype, [&](auto *t) {
    using T = MPCRT_TYPE(t);
    using A = typename Storage<T>::Acc;
    A *stats =
        reinterpret_cast<A *>(scratchF32((4 * c * int64_t(sizeof(A)) + 3) / 4));
    runningStatisticsKernel<A><<<blocksFor(c), kThreads, 0, stream()>>>(
        paramDtype, runningMean, runningVar, gamma, beta, stats, c, epsilon);
    applyBatchNorm(static_cast<const T *>(input), stats,
                   static_cast<T *>(output), rows, c, relu);
  });
  MPCRT_CUDA_LAUNCHED("batch_norm_inference");
}

void batchNormBackward(mpcrt_dtype dtype, const void *gradOutput,
                       const void *input, mpcrt_dtype paramDtype,
                       const void *gamma, const float *savedMean,
                       const float *savedInvstd, void *gradInput,
                       void *gradGamma, void *gradBeta, int64_t rows, int64_t c,
                       const void *output, const void *beta,
                       const void *gammaAddend, const void *betaAddend,
                       bool sync) {
  lastGroups = 1;
  if (c == 0)
    return;
  if (rows == 0) { // the parameter gradients are sums of nothing
    sumsOfNoRows(gradGamma, gammaAddend, c * bytesOf(paramDtype));
    sumsOfNoRows(gradBeta, betaAddend, c * bytesOf(paramDtype));
    return;
  }
  dispatch(dtype, [&](auto *t) {
    using T = MPCRT_TYPE(t);
    using A = typename Storage<T>::Acc;
    const T *dy = static_cast<const T *>(gradOutput);
    const T *x = static_cast<const T *>(input);
    const T *out = static_cast<const T *>(output);
    // The ReLU's output formed again (no output read): beta too.
    bool formed = !out && beta;
    T *dx = static_cast<T *>(gradInput);
    // Both passes over each group of cg channels in turn (all of them
    // unless setBatchNormGroupBytes says otherwise): the second reads dy
    // and x again, and a read output, and writes dx.
    int64_t cg = groupChannels<T>(rows, c, out ? 4 : 3, sync, {dy, x, dx, out});
    lastGroups = c / cg;
    ColumnPlan plan = planColumns<T>(1, rows, cg);
    Partial<A, 2> *partials;
    int32_t ranks = ranksOf(sync);
    double *mine = nullptr;
    A *stats = batchNormScratch(plan, c, formed ? 6 : 5, partials,
                                sync ? 2 * c * (1 + ranks) : 0, &mine);
    auto run = [&](auto way, int64_t ch0) {
      constexpr NormGrad Way = decltype(way)::value;
      // The sums' terms read the saved statistics (and gamma and beta) as
      // they are; their finish stores them into stats beside the means for
      // the input gradient's kernel: no launch of their own. All from the
      // group's first channel, ch0, on.
      BatchNormParams<A> params{paramDtype, channelsOn(gamma, paramDtype, ch0),
                                formed ? channelsOn(beta, paramDtype, ch0)
                                       : nullptr,
                                savedMean + ch0, savedInvstd + ch0};
      const T *outg = out ? out + ch0 : nullptr;
      auto sums = [&](auto finish) {
        reduceColumnsOf(
            plan,
            BatchNormGradTerms<T, Way>{dy + ch0, x + ch0, outg, params, c},
            SumOf<A, 2>{}, Partial<A, 2>{{A(0), A(0)}}, finish, partials);
      };
      if (!sync) {
        sums(StoreBatchNormGrads<A>{
            stats + ch0, params, channelsOn(gradGamma, paramDtype, ch0),
            channelsOn(gradBeta, paramDtype, ch0),
            channelsOn(gammaAddend, paramDtype, ch0),
            channelsOn(betaAddend, paramDtype, ch0), c, rows});
      } else {
        // The parameters' gradients from this rank's sums; the input's
        // from every rank's, gathered and added in rank order (one group:
        // groupChannels).
        sums(StoreRankGradSums<A>{paramDtype, gradGamma, gradBeta, gammaAddend,
                                  betaAddend, mine});
        const double *all = gatherOverRanks(mine, mine + 2 * c, 2 * c);
        syncGradMeansKernel<A><<<blocksFor(c), kThreads, 0, stream()>>>(
            all, ranks, stats, c, double(rows) * double(ranks), params);
      }
      withVectorsOf<T>(c, {dy, x, dx, out ? out : dy}, [&](auto width) {
        constexpr int N = decltype(width)::value;
        withIndexFor(rows * c, [&](auto *i) {
          using I = MPCRT_TYPE(i);
          batchNormGradInputKernel<T, N, I, Way>
              <<<channelGroupBlocks(rows * cg / N, cg / N), kThreads, 0,
                 stream()>>>(dy, x, out, stats, dx, I(rows * cg / N),
                             channelGroupOf<I>(c, ch0, cg, N),
                             SecondPass{secondPassReversed});
        });
      });
    };
    for (int64_t ch0 = 0; ch0 < c; ch0 += cg) {
      if (out)
        run(std::integral_constant<NormGrad, NormGrad::ReadOutput>{}, ch0);
      else if (formed)
        run(std::integral_constant<NormGrad, NormGrad::FormOutput>{}, ch0);
      else
        run(std::integral_constant<NormGrad, NormGrad::Plain>{}, ch0);
    }
  });
  MPCRT_CUDA_LAUNCHED("batch_norm_backward");
}

void setRankGather(int32_t ranks,
                   void (*gather)(const void *, void *, int64_t)) {
  gatherRanks = ranks;
  rankGather = gather;
}

void maxPool2d(mpcrt_dtype dtype, const void *input, void *output,
               const mpcrt_pool2d_shape &s) {
  int64_t count = s.n * s.ho * s.wo * s.c;
  if (count == 0)
    return;
  withPool(dtype, s, [&](auto *t, auto pool) {
    using T = MPCRT_TYPE(t);
    using I = decltype(pool.n);
    withVectorsOf<T>(s.c, {input, output}, [&](auto width) {
      constexpr int N = decltype(width)::value;
      pool.setChannels(pool.c / N);
      maxPoolKernel<T, N, I><<<blocksFor(count / N), kThreads, 0, stream()>>>(
          static_cast<const T *>(input), static_cast<T *>(output), pool,
          I(count / N));
    });
  });
  MPCRT_CUDA_LAUNCHED("max_pool2d");
}

void maxPool2dBackward(mpcrt_dtype dtype, const void *gradOutput,
                       const void *input, void *gradInput,
                       const mpcrt_pool2d_shape &s, const void *addend,
                       int64_t addendRow) {
  int64_t inputs = s.n * s.h * s.w * s.c, outputs = s.n * s.ho * s.wo * s.c;
  if (inputs == 0)
    return;
  // Windows that do not overlap are written whole by one thread each;
  // inputs outside every window (a stride beyond the kernel, padding, rows
  // or columns past the last window) are zeroed first. With an addend
  // those get addend + 0 too, so there each input gathers instead.
  bool apart = s.stride_h >= s.kh && s.stride_w >= s.kw;
  bool covered = s.stride_h == s.kh && s.stride_w == s.kw && s.pad_h == 0 &&
                 s.pad_w == 0 && s.ho * s.kh == s.h && s.wo * s.kw == s.w;
  if (addend && !covered)
    apart = false;
  if (apart && !covered)
    zero(gradInput, inputs * bytesOf(dtype));
  // One past the addend's last element: its offsets fit the index type.
  int64_t addendEnd = addend ? (s.n * s.h * s.w - 1) * addendRow + s.c : 0;
  withPool(
      dtype, s,
      [&](auto *t, auto pool) {
        using T = MPCRT_TYPE(t);
        using I = decltype(pool.n);
        auto *dy = static_cast<const T *>(gradOutput);
        auto *x = static_cast<const T *>(input);
        auto *dx = static_cast<T *>(gradInput);
        auto *a = static_cast<const T *>(addend);
        if (apart) {
          // The addend's rows as accesses: aligned where its next row is too.
          const void *next = a ? static_cast<const void *>(a + addendRow) : dx;
          if (outputs > 0)
            withVectorsOf<T>(
                s.c, {dy, x, dx, a ? a : dx, next}, [&](auto width) {
                  constexpr int N = decltype(width)::value;
                  pool.setChannels(pool.c / N);
                  maxPoolBackwardWindowsKernel<T, N, I>
                      <<<blocksFor(outputs / N), kThreads, 0, stream()>>>(
                          dy, x, dx, pool, I(outputs / N), a, I(addendRow / N));
                });
        } else {
          maxPoolBackwardKernel<T, I>
              <<<blocksFor(inputs), kThreads, 0, stream()>>>(
                  dy, x, dx, pool, I(inputs), a, I(addendRow));
        }
      },
      addendEnd);
  MPCRT_CUDA_LAUNCHED("max_pool2d_backward");
}

void avgPool2d(mpcrt_dtype dtype, const void *input, void *output,
               const mpcrt_pool2d_shape &s) {
  int64_t count = s.n * s.ho * s.wo * s.c;
  if (count == 0)
    return;
  withPool(dtype, s, [&](auto *t, auto pool) {
    using T = MPCRT_TYPE(t);
    using I = decltype(pool.n);
    avgPoolKernel<T, I><<<blocksFor(count), kThreads, 0, stream()>>>(
        static_cast<const T *>(input), static_cast<T *>(output), pool,
        I(count));
  });
  MPCRT_CUDA_LAUNCHED("avg_pool2d");
}

void avgPool2dBackward(mpcrt_dtype dtype, const void *gradOutput,
                       void *gradInput, const mpcrt_pool2d_shape &s) {
  int64_t inputs = s.n * s.h * s.w * s.c;
  if (inputs == 0)
    return;
  withPool(dtype, s, [&](auto *t, auto pool) {
    using T = MPCRT_TYPE(t);
    using I = decltype(pool.n);
    avgPoolBackwardKernel<T, I><<<blocksFor(inputs), kThreads, 0, stream()>>>(
        static_cast<const T *>(gradOutput), static_cast<T *>(gradInput), pool,
        I(inputs));
  });
  MPCRT_CUDA_LAUNCHED("avg_pool2d_backward");
}

void upsampleNearest2d(mpcrt_dtype dtype, const void *input, void *output,
                       int64_t n, int64_t h, int64_t w, int64_t c, int64_t sh,
                       int64_t sw) {
  int64_t inputs = n * h * w * c, count = inputs * sh * sw;
  if (count == 0)
    return;
  dispatch(dtype, [&](auto *t) {
    using T = MPCRT_TYPE(t);
    withVectorsOf<T>(c, {input, output}, [&](auto width) {
      constexpr int N = decltype(width)::value;
      withIndexFor(count, [&](auto *i) {
        using I = MPCRT_TYPE(i);
        upsampleKernel<T, N, I>
            <<<blocksFor(inputs / N), kThreads, 0, stream()>>>(
                static_cast<const T *>(input), static_cast<T *>(output),
                upsampleOf<I>(n, h, w, c / N, sh, sw));
      });
    });
  });
  MPCRT_CUDA_LAUNCHED("upsample_nearest2d");
}

void upsampleNearest2dBackward(mpcrt_dtype dtype, const void *gradOutput,
                               void *gradInput, int64_t n, int64_t h, int64_t w,
                               int64_t c, int64_t sh, int64_t sw) {
  int64_t inputs = n * h * w * c, count = inputs * sh * sw;
  if (inputs == 0)
    return;
  dispatch(dtype, [&](auto *t) {
    using T = MPCRT_TYPE(t);
    withVectorsOf<T>(c, {gradOutput, gradInput}, [&](auto width) {
      constexpr int N = decltype(width)::value;
      withIndexFor(count, [&](auto *i) {
        using I = MPCRT_TYPE(i);
        upsampleBackwardKernel<T, N, I>
            <<<blocksFor(inputs / N), kThreads, 0, stream()>>>(
                static_cast<const T *>(gradOutput), static_cast<T *>(gradInput),
                upsampleOf<I>(n, h, w, c / N, sh, sw));
      });
    });
  });
  MPCRT_CUDA_LAUNCHED("upsample_nearest2d_backward");
}

void pointwiseLoss(mpcrt_dtype dtype, int32_t kind, const void *input,
                   const void *target, void *loss, int64_t count, bool mean) {
  dispatch(dtype, [&](auto *t) {
    using T = MPCRT_TYPE(t);
    using A = typename Storage<T>::Acc;
    // At most 1024 blocks of partial sums (in the f32 scratch buffer; f64
    // sums take two of its elements each), the last of them adding them.
    unsigned blocks = std::min(blocksFor(count), 1024u);
    auto *partials =
        reinterpret_cast<A *>(scratchF32(blocks * int64_t(sizeof(A) / 4)));
    pointwiseLossKernel<T, A><<<blocks, kThreads, 0, stream()>>>(
        kind, static_cast<const T *>(input), static_cast<const T *>(target),
        partials, static_cast<T *>(loss), count, mean, arrivalCounters(1));
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
