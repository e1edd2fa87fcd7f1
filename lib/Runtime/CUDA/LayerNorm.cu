//===- LayerNorm.cu - layer norms -----------------------------------------===//
//
// Layer norms and their backward (a warp per row up to kWarpRowLimit
// elements, a block per row beyond), the residual add fused before them,
// and their parameters' gradients summed down the rows (Columns.cuh),
// with the CPU reference's formulas (Elementwise.cu's conventions).
//
//===----------------------------------------------------------------------===//

#include "Columns.cuh"
#include "Device.cuh"
#include "Formulas.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <type_traits>
#include <utility>

namespace mpcrt::cuda {
namespace {

/// Calls f(std::bool_constant<Vector>{}): Vector where rows of `cols`
/// elements start at multiples of 4 and every pointer (null ones aside) is
/// aligned to 4 elements of T.
template <typename T, typename F>
void withGroupsOf(int64_t cols, std::initializer_list<const void *> pointers,
                  F f) {
  bool vector = cols % 4 == 0;
  for (const void *p : pointers)
    vector = vector && (!p || alignedTo(p, 4 * sizeof(T)));
  if (vector)
    f(std::true_type{});
  else
    f(std::false_type{});
}

/// Whether forGroupsIndexed unrolls a team member's groups (below).
template <typename Team, typename T, bool Whole>
constexpr bool kUnrolledGroups = Team::kWarp && Whole && sizeof(T) == 2;

/// The groups a lane of an unrolled warp row (kUnrolledGroups) takes at
/// most.
constexpr int kLaneGroups = int(kWarpRowLimit / 128);

/// forGroupsIndexed (below) calls f(g, c0, n) for a team member's groups
/// of a row of `cols` elements, g the group's ordinal among the member's
/// groups (a constant of the unrolled loop, so that per-group registers
/// stay registers): up to four neighbours c0 .. c0 + n - 1, every
/// 4 * Team::size()-th from 4 * Team::rank(), in increasing order (the
/// same groups and order for every pass over the row). With Whole (rows of a
/// multiple of 4, as withGroupsOf's Vector) n is 4. A warp's rows are at most
/// kWarpRowLimit long, so its lanes take at most kWarpRowLimit / 128 groups
/// each; that loop is unrolled, so that the groups' loads are in flight
/// together rather than one after another (a warp per row puts all 4096
/// rows of a BERT-base batch in one wave, whose time is one row's chain of
/// loads). That is done for whole rows of 16-bit T only, the AMP steps'
/// case: every unrolled instantiation costs the build about as much as
/// the rest of its file's kernels.
template <typename Team, typename T, bool Whole, typename F>
__device__ void forGroupsIndexed(int64_t cols, F f) {
  auto size = [&](int64_t c0) {
    return Whole || cols - c0 >= 4 ? 4 : static_cast<int>(cols - c0);
  };
  if constexpr (kUnrolledGroups<Team, T, Whole>) {
#pragma unroll
    for (int g = 0; g < kLaneGroups; ++g) {
      int64_t c0 = 4 * (Team::rank() + 32 * g);
      if (c0 < cols)
        f(g, c0, size(c0));
    }
  } else {
    int g = 0;
    for (int64_t c0 = 4 * Team::rank(); c0 < cols; c0 += 4 * Team::size())
      f(g++, c0, size(c0));
  }
}

/// A team member's groups of a row of T, loaded by its first pass over the
/// row (first) and read again by the later passes (again), which take the
/// same groups (forGroupsIndexed's ordinal g). Where the groups are
/// unrolled (kUnrolledGroups: g a constant) they stay in registers, so the
/// later passes load nothing: a pass that stores as it goes (the output,
/// the input gradient) otherwise loads each group from L1 only after the
/// previous group's store, which might alias it, one round trip after
/// another. Elsewhere, or without Hold, each pass loads its groups again.
template <typename Team, typename T, bool Whole, bool Hold = true>
struct HeldGroups {
  static constexpr bool kHeld = Hold && kUnrolledGroups<Team, T, Whole>;
  Vec<T, 4> held[kHeld ? kLaneGroups : 1];
  __device__ Vec<T, 4> first(const T *p, int g, int64_t i0, int n) {
    Vec<T, 4> v = loadVec<4>(p, i0, Whole, n);
    keep(g, v);
    return v;
  }
  /// Group g as the first pass loaded it or, where it is not held, as
  /// memory holds it now (the row's own writes since included).
  __device__ Vec<T, 4> again(const T *p, int g, int64_t i0, int n) const {
    if constexpr (kHeld)
      return held[g];
    else
      return loadVec<4>(p, i0, Whole, n);
  }
  /// Group g's values, written by this member to the row's memory too.
  __device__ void keep(int g, const Vec<T, 4> &v) {
    if constexpr (kHeld)
      held[g] = v;
  }
};

/// Elements c0..c0+n-1 (n <= 4) of a parameter vector of type `dtype`
/// (gamma, beta), as one access where the group is whole and aligned.
template <typename A>
__device__ void loadParams(mpcrt_dtype dtype, const void *p, int64_t c0, int n,
                           A (&v)[4]) {
  dispatch(dtype, [&](auto *t) {
    using P = MPCRT_TYPE(t);
    const P *q = static_cast<const P *>(p);
    Vec<P, 4> g = loadVec<4>(q, c0, alignedTo(q + c0, sizeof(Vec<P, 4>)), n);
    for (int e = 0; e < n; ++e)
      v[e] = static_cast<A>(Storage<P>::load(g.v[e]));
  });
}

/// Gamma and beta as a layer norm's rows read them, up to four
/// neighbouring elements at a time in the accumulator type A, from global
/// memory in their own type: a switch over the parameter types at every
/// access (each case a copy of the access in the kernel's code).
template <typename A> struct GlobalParams {
  mpcrt_dtype dtype;
  const void *gamma, *beta;
  __device__ void gammaAt(int64_t c0, int n, A (&v)[4]) const {
    loadParams(dtype, gamma, c0, n, v);
  }
  __device__ void betaAt(int64_t c0, int n, A (&v)[4]) const {
    loadParams(dtype, beta, c0, n, v);
  }
};

/// Gamma and beta as GlobalParams gives them, from copies in A that the
/// block staged in shared memory (withParams): no switch in the rows'
/// loops. Groups start at multiples of 4 (forGroupsIndexed), and a whole group
/// of f32 is one 16-byte access.
template <typename A> struct StagedParams {
  const A *gamma, *beta;
  __device__ static void at(const A *p, int64_t c0, int n, A (&v)[4]) {
    if constexpr (sizeof(A) == 4) {
      Vec<A, 4> g = loadVec<4>(p, c0, true, n);
      for (int e = 0; e < n; ++e)
        v[e] = g.v[e];
    } else {
      for (int e = 0; e < n; ++e)
        v[e] = p[c0 + e];
    }
  }
  __device__ void gammaAt(int64_t c0, int n, A (&v)[4]) const {
    at(gamma, c0, n, v);
  }
  __device__ void betaAt(int64_t c0, int n, A (&v)[4]) const {
    at(beta, c0, n, v);
  }
};

/// Calls f(params) with a layer norm kernel's gamma and beta (beta null
/// where the kernel does not read it) as its rows read them. Where a warp
/// takes a row (Warp: rows of at most kWarpRowLimit elements), the block
/// first stages them in shared memory in A (StagedParams: every thread
/// takes part, then a barrier; converted as loadParams converts them).
/// Read with a switch at every access instead (GlobalParams), the f16
/// warp kernels' code was 2-4 times as long (PTX of the layer norm
/// backward's row kernel: 6586 lines against 1466; the file's, 285 K
/// against 136 K with the dropout change of StoreAddGradients), and the
/// residual backward's top stall on an H100 was instruction fetch. Rows
/// of a block each keep GlobalParams: their length has no bound that
/// shared memory takes.
template <bool Warp, typename A, typename F>
__device__ void withParams(mpcrt_dtype dtype, const void *gamma,
                           const void *beta, int64_t cols, F f) {
  if constexpr (Warp) {
    __shared__ __align__(16) A staged[2][kWarpRowLimit];
    dispatch(dtype, [&](auto *t) {
      using P = MPCRT_TYPE(t);
      auto *g = static_cast<const P *>(gamma),
           *b = static_cast<const P *>(beta);
      for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
        staged[0][c] = static_cast<A>(Storage<P>::load(g[c]));
        if (b)
          staged[1][c] = static_cast<A>(Storage<P>::load(b[c]));
      }
    });
    __syncthreads();
    f(StagedParams<A>{staged[0], staged[1]});
  } else {
    f(GlobalParams<A>{dtype, gamma, beta});
  }
}

/// Row `r` of a layer norm by a team (RowTeam: the block, or a warp for
/// rows of up to 1024 elements): two-pass statistics of `row`, y. Each
/// thread takes four neighbouring elements at a time (Vector: as
/// withGroupsOf, a full group as one access; the same groups and order
/// either way). `groups` holds the member's groups of `row` where Written
/// (mpc.add_layer_norm's sums, just written by this member), else the
/// first pass loads them.
template <typename Team, bool Vector, bool Written, typename T, typename Stat,
          typename Params>
__device__ void layerNormRow(const T *row, const Params &params, T *y,
                             Stat *mean, Stat *rstd, int64_t r, int64_t cols,
                             double epsilon,
                             HeldGroups<Team, T, Vector> &groups) {
  using S = Storage<T>;
  using A = typename S::Acc;
  A sum = 0;
  forGroupsIndexed<Team, T, Vector>(cols, [&](int g, int64_t c0, int n) {
    Vec<T, 4> v =
        Written ? groups.again(row, g, c0, n) : groups.first(row, g, c0, n);
    for (int e = 0; e < n; ++e)
      sum += S::load(v.v[e]);
  });
  A mu = Team::template reduce<A>(sum) / static_cast<A>(cols);
  A var = 0; // biased, two-pass
  forGroupsIndexed<Team, T, Vector>(cols, [&](int g, int64_t c0, int n) {
    Vec<T, 4> v = groups.again(row, g, c0, n);
    for (int e = 0; e < n; ++e) {
      A d = S::load(v.v[e]) - mu;
      var += d * d;
    }
  });
  var = Team::template reduce<A>(var) / static_cast<A>(cols);
  A inv = A(1) / sqrt(var + static_cast<A>(epsilon));
  if (Team::rank() == 0) {
    mean[r] = static_cast<Stat>(mu);
    rstd[r] = static_cast<Stat>(inv);
  }
  forGroupsIndexed<Team, T, Vector>(cols, [&](int g, int64_t c0, int n) {
    Vec<T, 4> v = groups.again(row, g, c0, n);
    A gs[4], bs[4];
    params.gammaAt(c0, n, gs);
    params.betaAt(c0, n, bs);
    Vec<T, 4> out;
    for (int e = 0; e < n; ++e)
      out.v[e] = S::store((S::load(v.v[e]) - mu) * inv * gs[e] + bs[e]);
    storeVec(y + r * cols, c0, Vector, out, n);
  });
}

/// The blocks per multiprocessor that the layer norms' unrolled kernels
/// (forGroupsIndexed: a warp's whole rows of 16-bit T) ask ptxas to fit: 4, at
/// most 64 registers. Uncapped they take 78 to 86, so 3 blocks (24 warps)
/// fit a multiprocessor and BERT-base's 4096 rows of a batch, a warp each,
/// run in two rounds on 132 multiprocessors (3168 at a time); at 4 blocks
/// they are one.
template <typename T, bool Warp, bool Vector>
constexpr int kLayerNormBlocks = (Warp && Vector && sizeof(T) == 2) ? 4 : 1;

/// Rows of a layer norm: a block per row, or with Warp a warp per row
/// (rows of up to 1024 elements: no block barriers, 8 rows a block).
template <typename T, typename Stat, bool Warp, bool Vector>
__global__ void __launch_bounds__(kThreads, kLayerNormBlocks<T, Warp, Vector>)
    layerNormKernel(const T *x, mpcrt_dtype paramDtype, const void *gamma,
                    const void *beta, T *y, Stat *mean, Stat *rstd,
                    int64_t rows, int64_t cols, double epsilon) {
  MPCRT_KERNEL_PROLOGUE();
  using Team = RowTeam<Warp>;
  using A = typename Storage<T>::Acc;
  withParams<Warp, A>(paramDtype, gamma, beta, cols, [&](const auto &params) {
    for (int64_t r = Team::first(); r < rows; r += Team::stride()) {
      HeldGroups<Team, T, Vector> groups;
      layerNormRow<Team, Vector, false>(x + r * cols, params, y, mean, rstd, r,
                                        cols, epsilon, groups);
    }
  });
}

/// mpc.add_layer_norm, a block per row or (Warp) a warp per row: the sum
/// (each thread four neighbouring elements at a time, one Philox call for
/// their dropout bits), then, once the team's sums are written, the row's
/// layer norm.
template <typename T, typename Stat, bool Warp, bool Vector>
__global__ void __launch_bounds__(kThreads, kLayerNormBlocks<T, Warp, Vector>)
    addLayerNormKernel(const T *x, const T *residual, mpcrt_dtype paramDtype,
                       const void *gamma, const void *beta, T *sum, T *y,
                       Stat *mean, Stat *rstd, int64_t rows, int64_t cols,
                       int64_t residualRows, double epsilon, double p,
                       uint64_t seed, const int64_t *step) {
  MPCRT_KERNEL_PROLOGUE();
  using S = Storage<T>;
  using A = typename S::Acc;
  using Team = RowTeam<Warp>;
  A scale = static_cast<A>(1 / (1 - p));
  formulas::KeepBits keep(p, seed, *step);
  withParams<Warp, A>(paramDtype, gamma, beta, cols, [&](const auto &params) {
    for (int64_t r = Team::first(); r < rows; r += Team::stride()) {
      T *row = sum + r * cols;
      const T *res = residual + (r % residualRows) * cols;
      HeldGroups<Team, T, Vector> groups;
      forGroupsIndexed<Team, T, Vector>(cols, [&](int g, int64_t c0, int n) {
        int64_t i0 = r * cols + c0;
        Vec<T, 4> xs = loadVec<4>(x, i0, Vector, n),
                  rs = loadVec<4>(res, c0, Vector, n), out;
        // Whole groups (Vector) start at multiples of 4: a Philox group each.
        uint32_t bits = Vector ? keep.group(static_cast<uint64_t>(i0) / 4) : 0;
        for (int e = 0; e < n; ++e) {
          bool kept = Vector ? (bits >> e & 1) != 0 : keep(i0 + e);
          A d = p == 0 ? S::load(xs.v[e])
                : kept ? S::load(S::store(S::load(xs.v[e]) * scale))
                       : A(0);
          out.v[e] = S::store(d + S::load(rs.v[e]));
        }
        storeVec(row, c0, Vector, out, n);
        groups.keep(g, out);
      });
      // Where the sums are not held, layerNormRow reads the other
      // threads' sums from memory.
      if constexpr (!HeldGroups<Team, T, Vector>::kHeld)
        Team::sync();
      layerNormRow<Team, Vector, true>(static_cast<const T *>(row), params, y,
                                       mean, rstd, r, cols, epsilon, groups);
    }
  });
}

/// No parameter-gradient terms taken (layerNormBackwardRow's default).
struct NoParamTerms {
  template <typename A> __device__ void operator()(int, int, A, A) const {}
};

/// Row `r` of a layer norm's input gradient by a team (the block or a
/// warp); the unrounded gradients of up to four neighbouring elements
/// handed to emit(i0, n, values), each thread's groups in increasing order
/// (Vector: as withGroupsOf, a full group read as one access). Each
/// element's parameter-gradient terms, dy and xhat, go to terms(g, e, dy,
/// xhat) (g the group's ordinal, forGroupsIndexed's; e the element's in
/// it), from the same loads. Hold: the first pass's loads kept in
/// registers for the second (HeldGroups).
template <typename Team, bool Vector, bool Hold = true, typename T,
          typename Stat, typename Params, typename Emit,
          typename Terms = NoParamTerms>
__device__ void layerNormBackwardRow(const T *dy, const T *x, const Stat *mean,
                                     const Stat *rstd, const Params &params,
                                     int64_t r, int64_t cols, Emit emit,
                                     Terms terms = {}) {
  using S = Storage<T>;
  using A = typename S::Acc;
  A mu = static_cast<A>(mean[r]), inv = static_cast<A>(rstd[r]);
  A sumGdy = 0, sumGdyXhat = 0;
  HeldGroups<Team, T, Vector, Hold> xGroups, dyGroups;
  forGroupsIndexed<Team, T, Vector>(cols, [&](int group, int64_t c0, int k) {
    int64_t i0 = r * cols + c0;
    Vec<T, 4> xs = xGroups.first(x, group, i0, k),
              ds = dyGroups.first(dy, group, i0, k);
    A g[4];
    params.gammaAt(c0, k, g);
    for (int e = 0; e < k; ++e) {
      A xhat = (S::load(xs.v[e]) - mu) * inv;
      A gdy = g[e] * S::load(ds.v[e]);
      sumGdy += gdy;
      sumGdyXhat += gdy * xhat;
    }
  });
  sumGdy = Team::template reduce<A>(sumGdy);
  sumGdyXhat = Team::template reduce<A>(sumGdyXhat);
  // The two means once a row, not a division per element (a division
  // is some ten instructions: 160 of them in the f16 row kernel's PTX).
  A n = static_cast<A>(cols);
  A meanGdy = sumGdy / n, meanGdyXhat = sumGdyXhat / n;
  forGroupsIndexed<Team, T, Vector>(cols, [&](int group, int64_t c0, int k) {
    int64_t i0 = r * cols + c0;
    Vec<T, 4> xs = xGroups.again(x, group, i0, k),
              ds = dyGroups.again(dy, group, i0, k);
    A g[4], v[4];
    params.gammaAt(c0, k, g);
    for (int e = 0; e < k; ++e) {
      A xhat = (S::load(xs.v[e]) - mu) * inv;
      A d = S::load(ds.v[e]);
      A gdy = g[e] * d;
      v[e] = inv * (gdy - meanGdy - xhat * meanGdyXhat);
      terms(group, e, d, xhat);
    }
    emit(i0, k, v);
  });
}

/// A layer norm backward's input gradient of a group, rounded to T.
template <typename T, bool Vector> struct StoreGradInput {
  T *dx;
  using A = typename Storage<T>::Acc;
  __device__ StoreGradInput make() const { return *this; }
  __device__ void operator()(int64_t i0, int n, const A (&v)[4]) const {
    Vec<T, 4> out;
    for (int e = 0; e < n; ++e)
      out.v[e] = Storage<T>::store(v[e]);
    storeVec(dx, i0, Vector, out, n);
  }
};

/// mpc.add_layer_norm_backward's gradients of a group: ds (+ the sum's own
/// gradient) to the residual, through the dropout to x.
template <typename T, bool Vector> struct StoreAddGradients {
  using S = Storage<T>;
  using A = typename S::Acc;
  const T *dsum;
  T *dx, *dresidual;
  double p;
  A scale;
  formulas::KeepBits keep; // its cached Philox group changes
  __device__ void operator()(int64_t i0, int n, const A (&v)[4]) {
    Vec<T, 4> ds, res, out;
    if (dsum)
      ds = loadVec<4>(dsum, i0, Vector, n);
    // Whole groups (Vector) start at multiples of 4: a Philox group each.
    uint32_t bits = Vector ? keep.group(static_cast<uint64_t>(i0) / 4) : 0;
    for (int e = 0; e < n; ++e) {
      A g = dsum ? v[e] + S::load(ds.v[e]) : v[e];
      bool kept = Vector ? (bits >> e & 1) != 0 : keep(i0 + e);
      res.v[e] = S::store(g);
      out.v[e] = S::store(kept ? (p == 0 ? g : g * scale) : A(0));
    }
    if (dresidual)
      storeVec(dresidual, i0, Vector, res, n);
    if (dx)
      storeVec(dx, i0, Vector, out, n);
  }
};

/// StoreAddGradients' arguments, as a kernel takes them: make() reads the
/// step on the device.
template <typename T, bool Vector> struct AddGradients {
  const T *dsum;
  T *dx, *dresidual;
  double p;
  uint64_t seed;
  const int64_t *step;
  __device__ StoreAddGradients<T, Vector> make() const {
    using A = typename Storage<T>::Acc;
    return {dsum,
            dx,
            dresidual,
            p,
            static_cast<A>(1 / (1 - p)),
            formulas::KeepBits(p, seed, *step)};
  }
};

/// A layer norm backward's input gradients (emits: StoreGradInput, or
/// AddGradients' StoreAddGradients for mpc.add_layer_norm_backward), a
/// block per row or (Warp) a warp per row.
template <typename T, typename Stat, bool Warp, bool Vector, typename Emits>
__global__ void __launch_bounds__(kThreads, kLayerNormBlocks<T, Warp, Vector>)
    layerNormBackwardKernel(const T *dy, const T *x, const Stat *mean,
                            const Stat *rstd, mpcrt_dtype paramDtype,
                            const void *gamma, Emits emits, int64_t rows,
                            int64_t cols) {
  MPCRT_KERNEL_PROLOGUE();
  using Team = RowTeam<Warp>;
  using A = typename Storage<T>::Acc;
  auto emit = emits.make();
  withParams<Warp, A>(
      paramDtype, gamma, nullptr, cols, [&](const auto &params) {
        for (int64_t r = Team::first(); r < rows; r += Team::stride())
          layerNormBackwardRow<Team, Vector>(dy, x, mean, rstd, params, r, cols,
                                             emit);
      });
}

/// The blocks the row kernel of a layer norm backward with its parameter
/// sums (layerNormBackwardSumsKernel) is cut into, about: a constant, so
/// that the cut, and so the order of the sums, is the same on every
/// device (256: two blocks of 8 warps a multiprocessor on an H100 or
/// H200). setLayerNormSumBlocks changes it for tests.
int64_t normSumBlocks = 256;

/// Rows a block of layerNormBackwardSumsKernel takes: a multiple of its
/// warps, each warp every eighth row of the block's.
inline int64_t normSumRowsPerBlock(int64_t rows) {
  constexpr int64_t kWarps = kThreads / 32;
  int64_t perWarp =
      (rows + normSumBlocks * kWarps - 1) / (normSumBlocks * kWarps);
  return kWarps * (perWarp > 1 ? perWarp : 1);
}

/// A layer norm backward whose input gradients (emits: StoreGradInput, or
/// AddGradients' StoreAddGradients) and parameter-gradient sums come from one
/// read of dy and x: a warp per row (whole rows of 16-bit T, at most
/// kWarpRowLimit long: forGroupsIndexed's unrolled groups), block b taking
/// rows [b R, b R + R) (R = normSumRowsPerBlock), warp w every eighth of
/// them from w. Each lane sums dy xhat and dy of its columns over its rows
/// in order, in registers; the block's warps are then combined in a fixed
/// tree (w + 4 into w, w + 2 into w, 1 into 0) through shared memory, and
/// warp 0 writes the block's sums, partials[b][col], which the column
/// reductions' second pass (finishColumnsOf) adds in block order. The
/// separate reduction this replaces read dy and x a second time.
template <typename T, typename Stat, int Groups, typename Emits>
__global__ void __launch_bounds__(kThreads, 2) layerNormBackwardSumsKernel(
    const T *dy, const T *x, const Stat *mean, const Stat *rstd,
    mpcrt_dtype paramDtype, const void *gamma, int64_t rows, int64_t cols,
    int64_t rowsPerBlock, Emits emits,
    Partial<typename Storage<T>::Acc, 2> *partials) {
  MPCRT_KERNEL_PROLOGUE();
  using A = typename Storage<T>::Acc;
  using Team = RowTeam<true>;
  static_assert(kUnrolledGroups<Team, T, true> && Groups <= kLaneGroups,
                "registers per group");
  constexpr int kWarps = kThreads / 32;
  // The row's groups held for the second pass where they fit beside the
  // sums: with 8 groups, held rows spill under the 2 blocks' 128
  // registers (ptxas sm_90: 64 bytes in the residual variant).
  constexpr bool kHold = Groups <= 6;
  A gammaSums[Groups][4], betaSums[Groups][4];
#pragma unroll
  for (int g = 0; g < Groups; ++g)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      gammaSums[g][e] = betaSums[g][e] = A(0);
  auto emit = emits.make();
  const int warp = threadIdx.x / 32;
  const int64_t r0 = blockIdx.x * rowsPerBlock;
  const int64_t r1 = r0 + rowsPerBlock < rows ? r0 + rowsPerBlock : rows;
  withParams<true, A>(paramDtype, gamma, nullptr, cols,
                      [&](const auto &params) {
                        for (int64_t r = r0 + warp; r < r1; r += kWarps)
                          layerNormBackwardRow<Team, true, kHold>(
                              dy, x, mean, rstd, params, r, cols, emit,
                              [&](int g, int e, A d, A xhat) {
                                if (g < Groups) { // always: cols <= 128 Groups
                                  gammaSums[g][e] += d * xhat;
                                  betaSums[g][e] += d;
                                }
                              });
                      });
  __shared__ A upper[2][kWarps / 2][kWarpRowLimit];
  for (int half = kWarps / 2; half > 0; half /= 2) {
    if (warp >= half && warp < 2 * half)
      forGroupsIndexed<Team, T, true>(cols, [&](int g, int64_t c0, int) {
        if (g < Groups)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            upper[0][warp - half][c0 + e] = gammaSums[g][e];
            upper[1][warp - half][c0 + e] = betaSums[g][e];
          }
      });
    __syncthreads();
    if (warp < half)
      forGroupsIndexed<Team, T, true>(cols, [&](int g, int64_t c0, int) {
        if (g < Groups)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            gammaSums[g][e] += upper[0][warp][c0 + e];
            betaSums[g][e] += upper[1][warp][c0 + e];
          }
      });
    __syncthreads(); // upper[] read before the next level's writes
  }
  if (warp == 0)
    forGroupsIndexed<Team, T, true>(cols, [&](int g, int64_t c0, int) {
      if (g < Groups)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          partials[blockIdx.x * cols + c0 + e] = {
              {gammaSums[g][e], betaSums[g][e]}};
    });
}

/// The parameter gradients' terms of one element: dy * xhat and dy.
template <typename T, typename Stat> struct LayerNormParamTerms {
  using Element = T;
  const T *dy, *x;
  const Stat *mean, *rstd;
  int64_t cols;
  using A = typename Storage<T>::Acc;
  bool aligned() const { return alignedTo(dy, 16) && alignedTo(x, 16); }
  template <int N>
  __device__ NoColumnValues column(int64_t, int64_t, bool) const {
    return {};
  }
  template <int N>
  __device__ void terms(int64_t, int64_t r, int64_t c, bool whole,
                        NoColumnValues, Partial<A, 2> (&t)[N]) const {
    using S = Storage<T>;
    Vec<T, N> in = loadVec<N>(x, r * cols + c, whole),
              g = loadVec<N>(dy, r * cols + c, whole);
    A m = static_cast<A>(mean[r]), s = static_cast<A>(rstd[r]);
#pragma unroll
    for (int k = 0; k < N; ++k) {
      A xhat = (S::load(in.v[k]) - m) * s;
      A d = S::load(g.v[k]);
      t[k] = {{d * xhat, d}};
    }
  }
};

template <typename A> struct StoreParamGrads {
  mpcrt_dtype paramDtype;
  void *dgamma, *dbeta;
  const void *gammaAddend, *betaAddend;
  __device__ void operator()(int64_t, int64_t c, const Partial<A, 2> &s) const {
    storeSumAny(paramDtype, dgamma, gammaAddend, c, s.v[0]);
    storeSumAny(paramDtype, dbeta, betaAddend, c, s.v[1]);
  }
};

/// LayerNormParamTerms and a third term, the input gradient gx the row
/// kernel has written (its element as columnSums' ReduceTerm loads it):
/// the bias gradient of the layer before the norm (mpcrt.h's grad_x_sums).
template <typename T, typename Stat> struct LayerNormParamAndInputTerms {
  using Element = T;
  LayerNormParamTerms<T, Stat> param;
  const T *gx;
  using A = typename Storage<T>::Acc;
  bool aligned() const { return param.aligned() && alignedTo(gx, 16); }
  template <int N>
  __device__ NoColumnValues column(int64_t, int64_t, bool) const {
    return {};
  }
  template <int N>
  __device__ void terms(int64_t o, int64_t r, int64_t c, bool whole,
                        NoColumnValues none, Partial<A, 3> (&t)[N]) const {
    Partial<A, 2> two[N];
    param.template terms<N>(o, r, c, whole, none, two);
    Vec<T, N> g = loadVec<N>(gx, r * param.cols + c, whole);
#pragma unroll
    for (int k = 0; k < N; ++k)
      t[k] = {{two[k].v[0], two[k].v[1], Storage<T>::load(g.v[k])}};
  }
};

/// StoreParamGrads and the input gradient's sums, in A (as columnSums
/// stores an f32 sum of f16/bf16 values, or of its own type's).
template <typename A> struct StoreParamAndInputGrads {
  StoreParamGrads<A> param;
  A *inputSums;
  __device__ void operator()(int64_t o, int64_t c,
                             const Partial<A, 3> &s) const {
    param(o, c, {{s.v[0], s.v[1]}});
    inputSums[c] = s.v[2];
  }
};
} // namespace

namespace {
/// Calls f(std::bool_constant<Warp>{}, grid) for a kernel over rows of
/// `cols` elements: a warp per row for rows of up to kWarpRowLimit
/// elements (no block barriers), else a block per row.
template <typename F> void withRowTeamFor(int64_t rows, int64_t cols, F f) {
  if (cols <= kWarpRowLimit)
    f(std::true_type{}, blocksFor(rows * 32));
  else
    f(std::false_type{}, static_cast<unsigned>(rows));
}
} // namespace

void layerNorm(mpcrt_dtype dtype, const void *input, mpcrt_dtype paramDtype,
               const void *gamma, const void *beta, void *output, void *mean,
               void *rstd, int64_t rows, int64_t cols, double epsilon) {
  if (rows == 0)
    return;
  dispatch(dtype, [&](auto *t) {
    using T = MPCRT_TYPE(t);
    using Stat = std::conditional_t<std::is_same_v<T, double>, double, float>;
    withRowTeamFor(rows, cols, [&](auto warp, unsigned grid) {
      withGroupsOf<T>(cols, {input, output}, [&](auto vector) {
        layerNormKernel<T, Stat, decltype(warp)::value, decltype(vector)::value>
            <<<grid, kThreads, 0, stream()>>>(
                static_cast<const T *>(input), paramDtype, gamma, beta,
                static_cast<T *>(output), static_cast<Stat *>(mean),
                static_cast<Stat *>(rstd), rows, cols, epsilon);
      });
    });
  });
  MPCRT_CUDA_LAUNCHED("layer_norm");
}

namespace {
/// layer_norm_backward's parameter gradients: the column sums of dy * xhat
/// and dy, in the same fixed order on every GPU, added to their addends
/// where not null; with gxSums, the column sums of the input gradient gx
/// too (in the plan and order of columnSums of gx: the same bits).
template <typename T, typename Stat>
void layerNormParamGrads(const T *dy, const T *x, const Stat *mean,
                         const Stat *rstd, mpcrt_dtype paramDtype,
                         void *gradGamma, void *gradBeta,
                         const void *gammaAddend, const void *betaAddend,
                         int64_t rows, int64_t cols, const T *gx,
                         void *gxSums) {
  using A = typename Storage<T>::Acc;
  ColumnPlan plan = planColumns<T>(1, rows, cols);
  LayerNormParamTerms<T, Stat> terms{dy, x, mean, rstd, cols};
  StoreParamGrads<A> store{paramDtype, gradGamma, gradBeta, gammaAddend,
                           betaAddend};
  if (gxSums) {
    auto *partials = reinterpret_cast<Partial<A, 3> *>(
        scratchF32((partialBytes<A, 3>(plan) + 3) / 4));
    reduceColumnsOf(plan, LayerNormParamAndInputTerms<T, Stat>{terms, gx},
                    SumOf<A, 3>{}, Partial<A, 3>{{A(0), A(0), A(0)}},
                    StoreParamAndInputGrads<A>{store, static_cast<A *>(gxSums)},
                    partials);
    return;
  }
  auto *partials = reinterpret_cast<Partial<A, 2> *>(
      scratchF32((partialBytes<A, 2>(plan) + 3) / 4));
  reduceColumnsOf(plan, terms, SumOf<A, 2>{}, Partial<A, 2>{{A(0), A(0)}},
                  store, partials);
}

/// Whether a layer norm backward's row kernel can take the parameter sums
/// too (layerNormBackwardSumsKernel): whole rows of 16-bit T, a warp each.
template <typename T, bool Warp, bool Vector>
constexpr bool kRowParamSums = kUnrolledGroups<RowTeam<Warp>, T, Vector>;

/// Where a layer norm backward over rows kRowParamSums takes gamma's and
/// beta's sums: 1 its row kernel, 0 the column reduction, -1 not read yet
/// (MPC_CUDA_NORM_SUMS on the first call, unless setLayerNormRowSums).
int rowParamSums = -1;

/// rowParamSums, read from MPC_CUDA_NORM_SUMS where not set: `columns`
/// (the default: 3-4% faster than the row kernel's sums at BERT-base's
/// 4096 x 768 on an H200, docs/Benchmarks.md) or `rows`, anything else an
/// error that stops the run.
bool rowSums() {
  if (rowParamSums < 0)
    rowParamSums = environmentChoice(
        "MPC_CUDA_NORM_SUMS", "columns",
        "a layer norm backward's gamma and beta sums in a column reduction "
        "reading its inputs again",
        "rows", "in its row kernel");
  return rowParamSums;
}

/// A layer norm backward in layerNormBackwardSumsKernel (its input
/// gradients stored by emits) and the second pass over its blocks' sums.
template <typename T, typename Stat, typename Emits>
void layerNormBackwardSummed(const T *dy, const T *x, const Stat *mean,
                             const Stat *rstd, mpcrt_dtype paramDtype,
                             const void *gamma, Emits emits, void *gradGamma,
                             void *gradBeta, const void *gammaAddend,
                             const void *betaAddend, int64_t rows,
                             int64_t cols) {
  using A = typename Storage<T>::Acc;
  int64_t perBlock = normSumRowsPerBlock(rows);
  int64_t blocks = (rows + perBlock - 1) / perBlock;
  ColumnPlan plan = chunkPlan(1, rows, cols, blocks, perBlock);
  auto *partials = reinterpret_cast<Partial<A, 2> *>(
      scratchF32((partialBytes<A, 2>(plan) + 3) / 4));
  // A lane's sums in registers for the groups its rows have: 4, 6 or 8
  // (rows of up to 512, 768 or 1024 elements; 8 for BERT-base's 768 left
  // ptxas 128 registers and spills with add_layer_norm_backward's dropout).
  auto launch = [&](auto groups) {
    layerNormBackwardSumsKernel<T, Stat, decltype(groups)::value>
        <<<static_cast<unsigned>(blocks), kThreads, 0, stream()>>>(
            dy, x, mean, rstd, paramDtype, gamma, rows, cols, perBlock, emits,
            partials);
  };
  if (cols <= 512)
    launch(std::integral_constant<int, 4>());
  else if (cols <= 768)
    launch(std::integral_constant<int, 6>());
  else
    launch(std::integral_constant<int, kLaneGroups>());
  finishColumnsOf(plan, SumOf<A, 2>{}, Partial<A, 2>{{A(0), A(0)}},
                  StoreParamGrads<A>{paramDtype, gradGamma, gradBeta,
                                     gammaAddend, betaAddend},
                  partials);
}

/// A layer norm backward of rows of `cols` elements whose row kernel is
/// taken by teams of W (a warp: withRowTeamFor) with V (withGroupsOf):
/// layerNormBackwardSummed where it can take the parameter sums (and no
/// input gradient's sums, gxSums, are asked for), else the row kernel and
/// the column reduction (layerNormParamGrads), which reads the input
/// gradient gx the row kernel wrote for gxSums.
template <typename T, bool W, bool V, typename Stat, typename Emits>
void layerNormBackwardOf(const T *dy, const T *x, const Stat *mean,
                         const Stat *rstd, mpcrt_dtype paramDtype,
                         const void *gamma, Emits emits, void *gradGamma,
                         void *gradBeta, const void *gammaAddend,
                         const void *betaAddend, int64_t rows, int64_t cols,
                         unsigned grid, const T *gx = nullptr,
                         void *gxSums = nullptr) {
  if constexpr (kRowParamSums<T, W, V>)
    if (rowSums() && !gxSums)
      return layerNormBackwardSummed(dy, x, mean, rstd, paramDtype, gamma,
                                     emits, gradGamma, gradBeta, gammaAddend,
                                     betaAddend, rows, cols);
  layerNormBackwardKernel<T, Stat, W, V><<<grid, kThreads, 0, stream()>>>(
      dy, x, mean, rstd, paramDtype, gamma, emits, rows, cols);
  layerNormParamGrads(dy, x, mean, rstd, paramDtype, gradGamma, gradBeta,
                      gammaAddend, betaAddend, rows, cols, gx, gxSums);
}

/// The parameter gradients of no rows: zeros, or the addends.
void paramGradsOfNoRows(mpcrt_dtype paramDtype, void *gradGamma, void *gradBeta,
                        const void *gammaAddend, const void *betaAddend,
                        int64_t cols) {
  sumsOfNoRows(gradGamma, gammaAddend, cols * bytesOf(paramDtype));
  sumsOfNoRows(gradBeta, betaAddend, cols * bytesOf(paramDtype));
}
} // namespace

bool setLayerNormRowSums(bool on) {
  bool previous = rowSums();
  rowParamSums = on;
  return previous;
}

int64_t setLayerNormSumBlocks(int64_t blocks) {
  return std::exchange(normSumBlocks, blocks > 1 ? blocks : int64_t(1));
}

void layerNormBackward(mpcrt_dtype dtype, const void *gradOutput,
                       const void *input, const void *mean, const void *rstd,
                       mpcrt_dtype paramDtype, const void *gamma,
                       void *gradInput, void *gradGamma, void *gradBeta,
                       const void *gammaAddend, const void *betaAddend,
                       int64_t rows, int64_t cols) {
  if (rows == 0)
    return paramGradsOfNoRows(paramDtype, gradGamma, gradBeta, gammaAddend,
                              betaAddend, cols);
  dispatch(dtype, [&](auto *t) {
    using T = MPCRT_TYPE(t);
    using Stat = std::conditional_t<std::is_same_v<T, double>, double, float>;
    auto *dy = static_cast<const T *>(gradOutput);
    auto *x = static_cast<const T *>(input);
    auto *m = static_cast<const Stat *>(mean);
    auto *s = static_cast<const Stat *>(rstd);
    withRowTeamFor(rows, cols, [&](auto warp, unsigned grid) {
      withGroupsOf<T>(cols, {gradOutput, input, gradInput}, [&](auto vector) {
        constexpr bool W = decltype(warp)::value, V = decltype(vector)::value;
        layerNormBackwardOf<T, W, V>(
            dy, x, m, s, paramDtype, gamma,
            StoreGradInput<T, V>{static_cast<T *>(gradInput)}, gradGamma,
            gradBeta, gammaAddend, betaAddend, rows, cols, grid);
      });
    });
  });
  MPCRT_CUDA_LAUNCHED("layer_norm_backward");
}

void addLayerNorm(mpcrt_dtype dtype, const void *x, const void *residual,
                  mpcrt_dtype paramDtype, const void *gamma, const void *beta,
                  void *sum, void *y, void *mean, void *rstd, int64_t rows,
                  int64_t cols, int64_t residualRows, double epsilon,
                  double dropoutP, uint64_t seed, const int64_t *step) {
  if (rows == 0 || cols == 0)
    return;
  dispatch(dtype, [&](auto *t) {
    using T = MPCRT_TYPE(t);
    using Stat = std::conditional_t<std::is_same_v<T, double>, double, float>;
    withRowTeamFor(rows, cols, [&](auto warp, unsigned grid) {
      withGroupsOf<T>(cols, {x, residual, sum, y}, [&](auto vector) {
        addLayerNormKernel<T, Stat, decltype(warp)::value,
                           decltype(vector)::value>
            <<<grid, kThreads, 0, stream()>>>(
                static_cast<const T *>(x), static_cast<const T *>(residual),
                paramDtype, gamma, beta, static_cast<T *>(sum),
                static_cast<T *>(y), static_cast<Stat *>(mean),
                static_cast<Stat *>(rstd), rows, cols, residualRows, epsilon,
                dropoutP, seed, step);
      });
    });
  });
  MPCRT_CUDA_LAUNCHED("add_layer_norm");
}

void addLayerNormBackward(mpcrt_dtype dtype, const void *grad,
                          const void *gradSum, const void *sum,
                          const void *mean, const void *rstd,
                          mpcrt_dtype paramDtype, const void *gamma,
                          void *gradX, void *gradResidual, void *gradGamma,
                          void *gradBeta, const void *gammaAddend,
                          const void *betaAddend, int64_t rows, int64_t cols,
                          double dropoutP, uint64_t seed, const int64_t *step,
                          void *gradXSums) {
  if (rows == 0) {
    if (gradXSums)
      sumsOfNoRows(gradXSums, nullptr,
                   cols * bytesOf(dtype == MPCRT_F64 ? MPCRT_F64 : MPCRT_F32));
    return paramGradsOfNoRows(paramDtype, gradGamma, gradBeta, gammaAddend,
                              betaAddend, cols);
  }
  if (cols == 0)
    return;
  dispatch(dtype, [&](auto *t) {
    using T = MPCRT_TYPE(t);
    using Stat = std::conditional_t<std::is_same_v<T, double>, double, float>;
    auto *dy = static_cast<const T *>(grad);
    auto *x = static_cast<const T *>(sum);
    auto *m = static_cast<const Stat *>(mean);
    auto *s = static_cast<const Stat *>(rstd);
    withRowTeamFor(rows, cols, [&](auto warp, unsigned grid) {
      withGroupsOf<T>(
          cols, {grad, gradSum, sum, gradX, gradResidual}, [&](auto vector) {
            constexpr bool W = decltype(warp)::value,
                           V = decltype(vector)::value;
            AddGradients<T, V> emits{static_cast<const T *>(gradSum),
                                     static_cast<T *>(gradX),
                                     static_cast<T *>(gradResidual),
                                     dropoutP,
                                     seed,
                                     step};
            layerNormBackwardOf<T, W, V>(
                dy, x, m, s, paramDtype, gamma, emits, gradGamma, gradBeta,
                gammaAddend, betaAddend, rows, cols, grid,
                static_cast<const T *>(gradX), gradXSums);
          });
    });
  });
  MPCRT_CUDA_LAUNCHED("add_layer_norm_backward");
}

} // namespace mpcrt::cuda
