//===- Softmax.cu - softmax, softmax-dropout, losses ----------------------===//
//
// Softmax and log-softmax (a warp per row up to kWarpRowLimit elements, a
// block per row beyond), softmax fused with dropout, cross-entropy and
// accuracy, with the CPU reference's formulas (Elementwise.cu's
// conventions: accumulation type, rounding once, fixed-order sums).
//
//===----------------------------------------------------------------------===//

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

/// The row's maximum and sum of exp(x - max), with the whole block;
/// load(c) is element c of the row.
template <typename A, typename Load>
__device__ void rowStatisticsOf(Load load, int64_t cols, A &max, A &total) {
  A m = A(-INFINITY);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    m = fmax(m, A(load(c)));
  max = blockReduce<A, true>(m);
  A sum = 0;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    sum += exp(A(load(c)) - max);
  total = blockReduce<A>(sum);
}

template <typename T, typename A>
__device__ void rowStatistics(const T *row, int64_t cols, A &max, A &total) {
  rowStatisticsOf<A>([&](int64_t c) { return Storage<T>::load(row[c]); }, cols,
                     max, total);
}

/// A warp's lanes hold a row of at most 32 K elements in groups of
/// kGroup<K> neighbours, element k of a lane at column laneColumn<K>(lane,
/// k): a group moves as one access where the row and the pointers allow
/// (`whole`), one element at a time otherwise, in the same order either
/// way. Every warp kernel of a row length thus sums a row in the same
/// order, whatever its types and pointers.
template <int K> constexpr int kGroup = K < 4 ? K : 4;

template <int K, typename I> __device__ I laneColumn(I lane, int k) {
  constexpr int G = kGroup<K>;
  return (k / G) * (32 * G) + lane * G + k % G;
}

/// Whether the groups of rows of `cols` elements move whole through the
/// accessors `a`.
template <int K, typename... Access>
bool wholeGroups(int64_t cols, const Access &...a) {
  return cols % kGroup<K> == 0 && (a.groupsAt(kGroup<K>) && ...);
}

/// v[k] = the lane's elements of the row at `base` (`fill` past its end).
template <int K, typename Access, typename A>
__device__ void loadLanes(const Access &a, int64_t base, int64_t cols,
                          bool whole, A fill, A (&v)[K]) {
  constexpr int G = kGroup<K>;
  const int64_t lane = RowTeam<true>::rank();
#pragma unroll
  for (int q = 0; q < K; q += G) {
    int64_t c = laneColumn<K>(lane, q);
    if (whole && c < cols) {
      typename Access::Acc g[G];
      a.template loadGroup<G>(base + c, g);
#pragma unroll
      for (int j = 0; j < G; ++j)
        v[q + j] = A(g[j]);
    } else {
#pragma unroll
      for (int j = 0; j < G; ++j)
        v[q + j] = c + j < cols ? A(a.load(base + c + j)) : fill;
    }
  }
}

/// The lane's elements of the row at `base` = v[k] (none past its end).
template <int K, typename Access, typename A>
__device__ void storeLanes(const Access &a, int64_t base, int64_t cols,
                           bool whole, const A (&v)[K]) {
  constexpr int G = kGroup<K>;
  const int64_t lane = RowTeam<true>::rank();
#pragma unroll
  for (int q = 0; q < K; q += G) {
    int64_t c = laneColumn<K>(lane, q);
    if (whole && c < cols) {
      typename Access::Acc g[G];
#pragma unroll
      for (int j = 0; j < G; ++j)
        g[j] = v[q + j];
      a.template storeGroup<G>(base + c, g);
    } else {
#pragma unroll
      for (int j = 0; j < G; ++j)
        if (c + j < cols)
          a.store(base + c + j, v[q + j]);
    }
  }
}

/// Whether a warp softmax kernel whose accessors are `Access` takes its
/// exponentials and quotients the short way (SoftmaxMath below): where
/// every accessor holds 16-bit elements (Typed f16 or bf16).
template <typename Access> struct HoldsShort : std::false_type {};
template <typename T>
struct HoldsShort<Typed<T>> : std::bool_constant<sizeof(T) == 2> {};
template <typename... Access>
constexpr bool kShortSoftmax = (HoldsShort<Access>::value && ...);

/// A warp softmax's exp(v) for v <= 0 and its quotients y / sum. With
/// Short (kShortSoftmax: f16 and bf16 results, the arithmetic in f32),
/// exp2f(v log2 e) and y times the row's reciprocal: exp2f is within 2
/// ulps (CUDA's documented bound) and the product adds |v| 2^-24 relative,
/// the reciprocal one rounding more, together far below the half ulp of
/// the result (2^-11 for f16, 2^-8 for bf16) for every term a 16-bit
/// result can hold; expf and the rounded division cost about 40
/// instructions per element, which made the f16 forward bound by its
/// instructions (74% of the issue rate, 27% of DRAM bandwidth on an
/// H200). Otherwise (f32 and f64 results) exp and the rounded division.
/// With a factor (dropout's 1 / (1 - p)), Short multiplies y by the
/// reciprocal times the factor, rounded once a row: one multiplication an
/// element fewer, and a relative error of 2^-24 more, far below the half
/// ulp of a 16-bit result.
template <bool Short, typename A> struct SoftmaxMath {
  A sum, reciprocal, scaled;
  __device__ static A exp(A v) {
    if constexpr (Short)
      return exp2f(v * 1.4426950408889634f);
    else
      return ::exp(v);
  }
  __device__ explicit SoftmaxMath(A sum, A factor = A(1))
      : sum(sum), reciprocal(Short ? A(1) / sum : 0),
        scaled(Short ? reciprocal * factor : factor) {}
  /// y / sum.
  __device__ A over(A y) const {
    if constexpr (Short)
      return y * reciprocal;
    else
      return y / sum;
  }
  /// y / sum times the factor.
  __device__ A overScaled(A y) const {
    if constexpr (Short)
      return y * scaled;
    else
      return y / sum * scaled;
  }
};

/// warpShifted's arithmetic on the lane's elements, loaded into v.
template <bool Short, int K, typename A>
__device__ void warpShift(int64_t cols, A s, A (&v)[K], A &sum, bool exps) {
  using Warp = RowTeam<true>;
  // 32-bit columns: a warp's rows are at most kWarpRowLimit long.
  const int lane = static_cast<int>(Warp::rank()), n = static_cast<int>(cols);
  A m = A(-INFINITY);
#pragma unroll
  for (int k = 0; k < K; ++k) {
    v[k] = laneColumn<K>(lane, k) < n ? s * v[k] : A(-INFINITY);
    m = fmax(m, v[k]);
  }
  m = Warp::reduce<A, true>(m);
  sum = 0;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    v[k] -= m;
    A e = laneColumn<K>(lane, k) < n ? SoftmaxMath<Short, A>::exp(v[k]) : A(0);
    sum += e;
    if (exps)
      v[k] = e;
  }
  sum = Warp::reduce<A>(sum);
}

/// One row of softmax(s * x) for a warp: v[k] = s * x[c] - max for the
/// lane's elements (c = laneColumn<K>(lane, k); -inf past the row) and the
/// row's sum of exp(v); with `exps`, v[k] = exp(s * x[c] - max) instead
/// (0 past the row), the very terms of the sum, each computed once
/// (SoftmaxMath<Short>'s exp).
template <bool Short, int K, typename In, typename A>
__device__ void warpShifted(const In &input, int64_t base, int64_t cols,
                            bool whole, A s, A (&v)[K], A &sum,
                            bool exps = false) {
  loadLanes(input, base, cols, whole, A(0), v);
  warpShift<Short>(cols, s, v, sum, exps);
}

/// A warp kernel's row length and `whole` as constants where Full
/// (withFullRows: rows of exactly 32 K elements moved in whole groups).
template <int K, bool Full>
__device__ void fullRowShape(int64_t &cols, bool &whole) {
  if constexpr (Full) {
    cols = 32 * K;
    whole = true;
  }
}

/// Softmax (or log-softmax) of rows of at most 32 K elements, one warp per
/// row, each lane holding K of its elements: one read and one write of the
/// row (the block kernel below reads it three times). In and Out are
/// accessors (Typed, or AnyFloat where the types differ), the arithmetic
/// in the wider of their Acc types.
template <typename In, typename Out, int K, bool Full>
__global__ void softmaxWarpKernel(In input, Out output, int64_t rows,
                                  int64_t cols, bool whole, bool logarithm,
                                  double scale) {
  MPCRT_KERNEL_PROLOGUE();
  fullRowShape<K, Full>(cols, whole);
  using A = decltype(typename In::Acc() + typename Out::Acc());
  constexpr bool Short = kShortSoftmax<In, Out>;
  A s = static_cast<A>(scale);
  using Warp = RowTeam<true>;
  for (int64_t r = Warp::first(); r < rows; r += Warp::stride()) {
    int64_t base = r * cols;
    A v[K], sum;
    warpShifted<Short>(input, base, cols, whole, s, v, sum, !logarithm);
    A logSum = logarithm ? log(sum) : A(0);
    SoftmaxMath<Short, A> math(sum);
#pragma unroll
    for (int k = 0; k < K; ++k)
      v[k] = logarithm ? v[k] - logSum : math.over(v[k]);
    storeLanes(output, base, cols, whole, v);
  }
}

/// The softmax's gradient for rows of at most 32 K elements, one warp per
/// row; G, Y and X the accessors of the output gradient, the output and the
/// input gradient.
template <typename G, typename Y, typename X, int K, bool Full>
__global__ void softmaxBackwardWarpKernel(G grad, Y output, X gradInput,
                                          int64_t rows, int64_t cols,
                                          bool whole, bool logarithm,
                                          double scale) {
  MPCRT_KERNEL_PROLOGUE();
  fullRowShape<K, Full>(cols, whole);
  using A = decltype(typename G::Acc() + typename Y::Acc() + typename X::Acc());
  A s = static_cast<A>(scale);
  using Warp = RowTeam<true>;
  for (int64_t r = Warp::first(); r < rows; r += Warp::stride()) {
    int64_t base = r * cols;
    A d[K], v[K];
    loadLanes(grad, base, cols, whole, A(0), d);
    loadLanes(output, base, cols, whole, A(0), v);
    A sum = 0;
#pragma unroll
    for (int k = 0; k < K; ++k)
      sum += logarithm ? d[k] : d[k] * v[k];
    sum = Warp::reduce<A>(sum);
#pragma unroll
    for (int k = 0; k < K; ++k)
      d[k] = s * (logarithm ? d[k] - exp(v[k]) * sum : v[k] * (d[k] - sum));
    storeLanes(gradInput, base, cols, whole, d);
  }
}

/// Calls f(std::integral_constant<int, K>) with the smallest K in 1, 2, 4,
/// ..., 32 for which a warp's lanes hold `cols` elements; false past
/// kWarpRowLimit.
template <typename F> bool withLanesFor(int64_t cols, F f) {
  static_assert(kWarpRowLimit == 32 * 32, "a lane holds at most 32");
  if (cols <= 32)
    return f(std::integral_constant<int, 1>()), true;
  if (cols <= 64)
    return f(std::integral_constant<int, 2>()), true;
  if (cols <= 128)
    return f(std::integral_constant<int, 4>()), true;
  if (cols <= 256)
    return f(std::integral_constant<int, 8>()), true;
  if (cols <= 512)
    return f(std::integral_constant<int, 16>()), true;
  if (cols <= kWarpRowLimit)
    return f(std::integral_constant<int, 32>()), true;
  return false;
}

/// Calls f(std::true_type{}) where a warp kernel's rows fill its lanes
/// exactly (32 K elements each, moved in whole groups) and its accessors
/// are Typed, else f(std::false_type{}). With Full the kernel takes its
/// row length and `whole` as constants: every comparison of a column with
/// the row's end, and the element-at-a-time paths, fold away (the f16
/// softmax_dropout forward's row loop at 512 columns: 473 PTX instructions
/// per lane against 1391 with both paths and the comparisons kept).
template <int K, typename... Access, typename F>
void withFullRows(int64_t cols, bool whole, F f) {
  if constexpr (!(std::is_same_v<Access, AnyFloat> || ...))
    if (whole && cols == 32 * K)
      return f(std::true_type{});
  f(std::false_type{});
}

template <typename In, typename Out>
__global__ void softmaxKernel(In input, Out output, int64_t cols,
                              bool logarithm, double scale) {
  MPCRT_KERNEL_PROLOGUE();
  using A = decltype(typename In::Acc() + typename Out::Acc());
  A s = static_cast<A>(scale);
  int64_t base = blockIdx.x * cols;
  A max, sum;
  rowStatisticsOf<A>([&](int64_t c) { return s * A(input.load(base + c)); },
                     cols, max, sum);
  A logSum = log(sum);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    A shifted = s * A(input.load(base + c)) - max;
    output.store(base + c, logarithm ? shifted - logSum : exp(shifted) / sum);
  }
}

template <typename G, typename Y, typename X>
__global__ void softmaxBackwardKernel(G grad, Y output, X gradInput,
                                      int64_t cols, bool logarithm,
                                      double scale) {
  MPCRT_KERNEL_PROLOGUE();
  using A = decltype(typename G::Acc() + typename Y::Acc() + typename X::Acc());
  A s = static_cast<A>(scale);
  int64_t base = blockIdx.x * cols;
  A sum = 0;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    sum += logarithm ? A(grad.load(base + c))
                     : A(grad.load(base + c)) * A(output.load(base + c));
  sum = blockReduce<A>(sum);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    A d = grad.load(base + c), v = output.load(base + c);
    gradInput.store(base + c,
                    s * (logarithm ? d - exp(v) * sum : v * (d - sum)));
  }
}

/// mpc.softmax_dropout's keep bits of one row's elements [first, first +
/// cols) (at most kWarpRowLimit), for a warp, one Philox call per four
/// elements as mpcrt_dropout_* (lane bits: laneBits' bit k, the lane's
/// element k). Where a lane's groups of four are whole Philox groups
/// (kGroup<K> is 4, the row's first element and its length multiples of
/// 4), group j of lane l is the row's Philox group 32 j + l, and each lane
/// draws its own groups' bits into a register. Other rows' lanes draw the
/// row's Philox groups in turn into `nibbles` (bit e of byte g - first /
/// 4: element 4 g + e), which every lane then reads.
/// At p = 0 (an evaluation step) every element is kept and no bits are
/// drawn.
struct WarpKeeps {
  uint8_t *nibbles;
  double p;
  uint64_t seed;
  int64_t step;

  __device__ void fill(int64_t first, int64_t cols) {
    if (p == 0)
      return;
    __syncwarp(); // the previous row's reads are done
    uint64_t firstGroup = static_cast<uint64_t>(first) / 4;
    uint64_t last = static_cast<uint64_t>(first + cols - 1) / 4;
    uint64_t threshold = formulas::keepThreshold(p);
    for (uint64_t g = firstGroup + threadIdx.x % 32; g <= last; g += 32) {
      uint32_t words[4];
      formulas::dropoutWords(seed, step, g, words);
      nibbles[g - firstGroup] = uint8_t(formulas::keepBitsOf(words, threshold));
    }
    __syncwarp();
  }
  /// Bit k: whether the lane's element k (laneColumn<K>) of the row
  /// filled last, at `first`, is in the row and kept. Element c's bit is
  /// bit (first % 4 + c) % 4 of byte (first % 4 + c) / 4; a row starting
  /// at a multiple of 4 (every row of a multiple of 4 elements) has a
  /// group of four's bits in one byte, one read for four elements.
  template <int K>
  __device__ uint32_t laneBits(int64_t first, int64_t cols) const {
    constexpr int G = kGroup<K>;
    const int lane = threadIdx.x % 32, offset = static_cast<int>(first % 4);
    uint32_t bits = 0;
#pragma unroll
    for (int q = 0; q < K; q += G) {
      int c = static_cast<int>(laneColumn<K>(lane, q));
      uint32_t group = 0;
      if (p == 0)
        group = (1u << G) - 1;
      else if (G == 4 && offset == 0)
        group = nibbles[c / 4];
      else
        for (int j = 0; j < G; ++j) {
          int e = offset + c + j;
          group |= uint32_t(nibbles[e / 4] >> (e % 4) & 1) << j;
        }
      for (int j = 0; j < G; ++j)
        if (c + j >= cols)
          group &= ~(1u << j);
      bits |= group << q;
    }
    return bits;
  }
  /// The lane's bits of the row at `first` (laneBits'): its own groups'
  /// Philox calls in a loop (one copy of the rounds in the kernel's
  /// code), without the nibbles and the warp's two synchronisations,
  /// where its groups of four are Philox groups: groups of four
  /// (kGroup<K>) in a row that starts and ends at multiples of 4, however
  /// the row lies in memory (the groups are columns, whether or not they
  /// move as one access).
  template <int K> __device__ uint32_t lanes(int64_t first, int64_t cols) {
    if (kGroup<K> != 4 || first % 4 != 0 || cols % 4 != 0 || p == 0) {
      fill(first, cols);
      return laneBits<K>(first, cols);
    }
    const int lane = threadIdx.x % 32;
    const uint64_t threshold = formulas::keepThreshold(p);
    uint32_t bits = 0;
#pragma unroll 1
    for (int q = 0; q < K; q += 4) {
      int64_t c = laneColumn<K>(int64_t(lane), q);
      if (c >= cols)
        break; // the lane's later groups lie further along the row
      uint32_t words[4];
      formulas::dropoutWords(seed, step, static_cast<uint64_t>(first + c) / 4,
                             words);
      bits |= formulas::keepBitsOf(words, threshold) << q;
    }
    return bits;
  }
};

/// The bytes WarpKeeps takes per warp: a row of kWarpRowLimit elements
/// not starting at a multiple of 4 spans one group more.
constexpr int kWarpKeepBytes = kWarpRowLimit / 4 + 1;

/// Calls body(base, v, sum, bits) for each of the warp's rows of
/// softmax(s * input) (rows of at most 32 K elements): v and sum as
/// warpShifted<Short> leaves them with `exps` (the probabilities are
/// SoftmaxMath<Short>'s v / sum), bits the lane's dropout bits of the row
/// (WarpKeeps::lanes; bit k: element k of the lane kept). The
/// forward and its backward compute the same probabilities where both
/// take the same Short (every operand f16 or bf16, or not all).
template <bool Short, int K, typename In, typename A, typename Body>
__device__ void forEachDroppedRow(const In &input, int64_t rows, int64_t cols,
                                  bool whole, A s, double p, uint64_t seed,
                                  const int64_t *step, Body body) {
  __shared__ uint8_t nibbles[kThreads / 32][kWarpKeepBytes];
  WarpKeeps keeps{nibbles[threadIdx.x / 32], p, seed, *step};
  using Warp = RowTeam<true>;
  for (int64_t r = Warp::first(); r < rows; r += Warp::stride()) {
    int64_t base = r * cols;
    A v[K], sum;
    // The row's loads first, its keep bits drawn while they are in
    // flight, then warpShifted's arithmetic.
    loadLanes(input, base, cols, whole, A(0), v);
    uint32_t bits = keeps.lanes<K>(base, cols);
    warpShift<Short>(cols, s, v, sum, true);
    body(base, v, sum, bits);
  }
}

/// The blocks per multiprocessor that the warp softmax_dropout kernels ask
/// ptxas to fit (registers capped at 65536 / (kThreads * blocks)): for
/// rows of up to 512 elements of one type, f16, bf16 or f32. A row's loads,
/// its Philox rounds and its arithmetic are chains of dependent
/// instructions, which take many warps in flight to keep a multiprocessor
/// busy; uncapped, ptxas gave the f16 forward 72 registers and the
/// backward 96 (3 and 2 blocks), capped at most 64 and 80 with nothing
/// spilled. The backward of rows that fill the lanes exactly (Full:
/// BERT's 512) fits 4 blocks, 64 registers, with nothing spilled and the
/// same instructions (ptxas sm_90, its lanes' keep bits drawn in
/// registers; at 4 blocks the other forms spill 32 to 36 bytes, and at 5
/// the forward 36). Longer rows, f64 and mixed types spill when capped, so
/// they are not.
template <typename Access>
constexpr bool kCappable =
    !std::is_same_v<Access, AnyFloat> && sizeof(typename Access::Acc) == 4;
template <int K, typename... Access> constexpr int cappedBlocks(int blocks) {
  return K <= 16 && std::conjunction_v<std::bool_constant<kCappable<Access>>...>
             ? blocks
             : 1;
}

/// mpc.softmax_dropout, one warp per row: the softmax kernel's
/// probabilities, kept where mpcrt_dropout_* keeps them, scaled and
/// rounded once to Out.
template <typename In, typename Out, int K, bool Full>
__global__ void __launch_bounds__(kThreads, cappedBlocks<K, In, Out>(4))
    softmaxDropoutWarpKernel(In input, Out output, int64_t rows, int64_t cols,
                             bool whole, double scale, double p, uint64_t seed,
                             const int64_t *step) {
  MPCRT_KERNEL_PROLOGUE();
  fullRowShape<K, Full>(cols, whole);
  using A = decltype(typename In::Acc() + typename Out::Acc());
  constexpr bool Short = kShortSoftmax<In, Out>;
  A kept = static_cast<A>(1 / (1 - p));
  forEachDroppedRow<Short, K>(
      input, rows, cols, whole, static_cast<A>(scale), p, seed, step,
      [&](int64_t base, A(&v)[K], A sum, uint32_t bits) {
        // Every element's probability computed (0 past the row), then
        // selected by its bit: no branch that the lanes take apart.
        SoftmaxMath<Short, A> math(sum, kept);
#pragma unroll
        for (int k = 0; k < K; ++k) {
          A y = math.overScaled(v[k]);
          v[k] = bits >> k & 1 ? y : A(0);
        }
        storeLanes(output, base, cols, whole, v);
      });
}

/// Its backward, one warp per row: the probabilities again, the gradient
/// dropped with the same bits and rounded to G's type
/// (mpcrt_dropout_backward_*), then the softmax's gradient. Where
/// `dropped` has data (its accessor of X's, every type the same), the
/// forward's result too: its kernel's arithmetic, in the same A and Short.
template <typename G, typename In, typename X, int K, bool Full>
__global__ void __launch_bounds__(kThreads,
                                  cappedBlocks<K, G, In, X>(Full ? 4 : 3))
    softmaxDropoutBackwardWarpKernel(G grad, In input, X gradInput, X dropped,
                                     int64_t rows, int64_t cols, bool whole,
                                     double scale, double p, uint64_t seed,
                                     const int64_t *step) {
  MPCRT_KERNEL_PROLOGUE();
  fullRowShape<K, Full>(cols, whole);
  using A =
      decltype(typename G::Acc() + typename In::Acc() + typename X::Acc());
  using AG = typename G::Acc;
  constexpr bool Short = kShortSoftmax<G, In, X>;
  A s = static_cast<A>(scale), keptProbability = static_cast<A>(1 / (1 - p));
  AG kept = static_cast<AG>(1 / (1 - p));
  forEachDroppedRow<Short, K>(
      input, rows, cols, whole, s, p, seed, step,
      [&](int64_t base, A(&v)[K], A sum, uint32_t bits) {
        AG g[K];
        loadLanes(grad, base, cols, whole, AG(0), g);
        SoftmaxMath<Short, A> math(sum, keptProbability);
        A d[K], dot = 0;
        // v[k] = the probabilities; where asked for, the forward's
        // result (its arithmetic: the same bits), from the exponentials
        // where Short, else from the quotients (a division each, once).
        if constexpr (!Short)
#pragma unroll
          for (int k = 0; k < K; ++k)
            v[k] = math.over(v[k]);
        if (dropped.data) { // the same for the whole grid
#pragma unroll
          for (int k = 0; k < K; ++k) {
            A y = Short ? math.overScaled(v[k]) : v[k] * keptProbability;
            d[k] = bits >> k & 1 ? y : A(0);
          }
          storeLanes(dropped, base, cols, whole, d);
        }
        if constexpr (Short)
#pragma unroll
          for (int k = 0; k < K; ++k)
            v[k] = math.over(v[k]);
    // As the forward: computed for every element (v is 0 past the
    // row), selected by the bits.
#pragma unroll
        for (int k = 0; k < K; ++k) {
          A dropped = A(grad.round(g[k] * kept));
          d[k] = bits >> k & 1 ? dropped : A(0);
          dot += d[k] * v[k];
        }
        dot = RowTeam<true>::reduce<A>(dot);
#pragma unroll
        for (int k = 0; k < K; ++k)
          d[k] = s * (v[k] * (d[k] - dot));
        storeLanes(gradInput, base, cols, whole, d);
      });
}

/// Rows longer than a warp takes, one block per row: the block softmax's
/// statistics and probabilities, each element's keep bit drawn alone.
template <typename In, typename Out>
__global__ void softmaxDropoutKernel(In input, Out output, int64_t cols,
                                     double scale, double p, uint64_t seed,
                                     const int64_t *step) {
  MPCRT_KERNEL_PROLOGUE();
  using A = decltype(typename In::Acc() + typename Out::Acc());
  A s = static_cast<A>(scale), kept = static_cast<A>(1 / (1 - p));
  int64_t t = *step;
  int64_t base = blockIdx.x * cols;
  A max, sum;
  rowStatisticsOf<A>([&](int64_t c) { return s * A(input.load(base + c)); },
                     cols, max, sum);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    A shifted = s * A(input.load(base + c)) - max;
    output.store(base + c,
                 p == 0 || formulas::dropoutKeeps(seed, t, base + c, p)
                     ? exp(shifted) / sum * kept
                     : A(0));
  }
}

/// The block kernel's backward; `dropped` as the warp kernel's, with the
/// block forward's arithmetic.
template <typename G, typename In, typename X>
__global__ void
softmaxDropoutBackwardKernel(G grad, In input, X gradInput, X dropped,
                             int64_t cols, double scale, double p,
                             uint64_t seed, const int64_t *step) {
  MPCRT_KERNEL_PROLOGUE();
  using A =
      decltype(typename G::Acc() + typename In::Acc() + typename X::Acc());
  using AG = typename G::Acc;
  A s = static_cast<A>(scale), keptProbability = static_cast<A>(1 / (1 - p));
  AG kept = static_cast<AG>(1 / (1 - p));
  int64_t t = *step;
  int64_t base = blockIdx.x * cols;
  A max, sum;
  rowStatisticsOf<A>([&](int64_t c) { return s * A(input.load(base + c)); },
                     cols, max, sum);
  // The probability, keep bit and dropped gradient of element c.
  auto all = [&](int64_t c, A &y, bool &keep, A &d) {
    A shifted = s * A(input.load(base + c)) - max;
    y = exp(shifted) / sum;
    keep = p == 0 || formulas::dropoutKeeps(seed, t, base + c, p);
    d = keep ? A(grad.round(AG(grad.load(base + c)) * kept)) : A(0);
  };
  A dot = 0;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    A y, d;
    bool keep;
    all(c, y, keep, d);
    dot += d * y;
  }
  dot = blockReduce<A>(dot);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    A y, d;
    bool keep;
    all(c, y, keep, d);
    if (dropped.data)
      dropped.store(base + c, keep ? y * keptProbability : A(0));
    gradInput.store(base + c, s * (y * (d - dot)));
  }
}

/// Rows of at most 32 classes (a segmentation's pixels) take a thread
/// each, their classes in order as the CPU reference takes them, where a
/// block per row would leave all but a few of its threads idle.
__host__ __device__ inline bool narrowRows(int64_t classes) {
  return classes <= 32;
}

/// A narrow row's maximum and sum of exp(x - max), by its one thread, the
/// classes in order: the forward's and the backward's, the same bits.
template <typename T, typename A>
__device__ void narrowRowStatistics(const T *row, int64_t classes, A &max,
                                    A &sum) {
  max = A(-INFINITY);
  sum = 0;
  for (int64_t c = 0; c < classes; ++c)
    max = fmax(max, Storage<T>::load(row[c]));
  for (int64_t c = 0; c < classes; ++c)
    sum += exp(Storage<T>::load(row[c]) - max);
}

/// Cross-entropy, pass 1: block r's row term (a narrow row's: thread r's), max
/// + log(sum exp) minus the target-weighted logits (x[y] without label
/// smoothing; 0 for an ignored label, and for one outside [0, classes), which
/// pass 2 records). Thread 0 stores a block's term, each thread a narrow
/// row's.
template <typename T, typename A>
__device__ void
crossEntropyRows(const T *logits, const void *labels, int32_t bits, A *terms,
                 int64_t rows, int64_t classes, formulas::IgnoredLabel ignored,
                 double smoothing) {
  using S = Storage<T>;
  formulas::LabelSmoothing<A> target(smoothing, classes);
  if (narrowRows(classes)) {
    for (int64_t r = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; r < rows;
         r += int64_t(gridDim.x) * blockDim.x) {
      const T *row = logits + r * classes;
      int64_t y = formulas::indexAt(labels, bits, r);
      if (ignored(y) || y < 0 || y >= classes) {
        terms[r] = A(0);
        continue;
      }
      A max, sum, each = 0;
      narrowRowStatistics(row, classes, max, sum);
      if (smoothing != 0) {
        for (int64_t c = 0; c < classes; ++c)
          each += S::load(row[c]);
        each = target.onEach * each;
      }
      terms[r] = max + log(sum) - (target.onLabel * S::load(row[y]) + each);
    }
    return;
  }
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T *row = logits + r * classes;
    int64_t y = formulas::indexAt(labels, bits, r);
    // The same branch for the whole block.
    if (ignored(y) || y < 0 || y >= classes) {
      if (threadIdx.x == 0)
        terms[r] = A(0);
      continue;
    }
    A max, sum;
    rowStatistics<T, A>(row, classes, max, sum);
    A each = 0;
    if (smoothing != 0) { // the same branch for the whole block
      for (int64_t c = threadIdx.x; c < classes; c += blockDim.x)
        each += S::load(row[c]);
      each = target.onEach * blockReduce<A>(each);
    }
    if (threadIdx.x == 0)
      terms[r] = max + log(sum) - (target.onLabel * S::load(row[y]) + each);
  }
}

/// One block: the rows whose label is not ignored (exact below 2^53).
__device__ int64_t countedRows(const void *labels, int32_t bits, int64_t rows,
                               formulas::IgnoredLabel ignored) {
  if (!ignored.ignores)
    return rows;
  double counted = 0;
  for (int64_t r = threadIdx.x; r < rows; r += blockDim.x)
    counted += !ignored(formulas::indexAt(labels, bits, r));
  return static_cast<int64_t>(blockReduce<double>(counted));
}

/// Pass 2, one block: the row terms (other blocks' stores, read past L1)
/// summed in a fixed order (each thread's rows in turn, then the block's
/// tree), divided by the rows counted for a mean, and the first row whose
/// label is neither ignored nor in [0, classes) recorded.
template <typename T, typename A>
__device__ void
crossEntropySum(const A *terms, const void *labels, int32_t bits, T *loss,
                int64_t rows, int64_t classes, bool mean,
                formulas::IgnoredLabel ignored, unsigned long long *bad) {
  using S = Storage<T>;
  // Each thread's rows compensated (Kahan): its sum's error stays a few
  // units of roundoff however many rows it adds (1024 for a 256 x 256
  // label map of batch 4: summed plainly, 65,536 alike terms, an untrained
  // head's, were 18 units off, and 262,144 220).
  A total = 0, lost = 0;
  int64_t firstBad = -1;
  for (int64_t r = threadIdx.x; r < rows; r += blockDim.x) {
    A term = __ldcg(&terms[r]) - lost;
    A sum = total + term;
    lost = (sum - total) - term;
    total = sum;
    int64_t y = formulas::indexAt(labels, bits, r);
    if (!ignored(y) && (y < 0 || y >= classes) && firstBad < 0)
      firstBad = r;
  }
  total = blockReduce<A>(total);
  // The smallest bad row as the largest of the negated ones.
  double least = blockReduce<double, true>(
      firstBad < 0 ? -INFINITY : -static_cast<double>(firstBad));
  int64_t counted = countedRows(labels, bits, rows, ignored);
  if (threadIdx.x == 0) {
    if (least != -INFINITY)
      recordError(bad, static_cast<int64_t>(-least));
    // No row counted (an empty batch, every label ignored): loss 0, not
    // the 0/0 of a mean over no rows.
    *loss =
        S::store(mean && counted > 0 ? total / static_cast<A>(counted) : total);
  }
}

/// Both passes in one launch: each block's rows (pass 1), then the threads
/// that stored terms fence them and thread 0 counts the block in at *arrivals
/// (0 before the launch); the block that arrives last sets it back to 0 and
/// runs pass 2. The terms and their order are the two launches' (the same
/// bits).
template <typename T, typename A>
__global__ void
crossEntropyKernel(const T *logits, const void *labels, int32_t bits, A *terms,
                   T *loss, int64_t rows, int64_t classes, bool mean,
                   formulas::IgnoredLabel ignored, double smoothing,
                   unsigned long long *bad, unsigned *arrivals) {
  MPCRT_KERNEL_PROLOGUE();
  crossEntropyRows<T, A>(logits, labels, bits, terms, rows, classes, ignored,
                         smoothing);
  // Whichever threads stored terms (thread 0 of a block per row, every
  // thread of narrow rows) fence them before the block counts itself in.
  if (threadIdx.x == 0 || narrowRows(classes))
    __threadfence();
  if (arrivesLast(arrivals, gridDim.x))
    crossEntropySum<T, A>(terms, labels, bits, loss, rows, classes, mean,
                          ignored, bad);
}

/// The backward's divisor for a mean that ignores a label: the rows
/// counted, in *counted.
__global__ void crossEntropyCountKernel(const void *labels, int32_t bits,
                                        int64_t rows,
                                        formulas::IgnoredLabel ignored,
                                        int64_t *counted) {
  MPCRT_KERNEL_PROLOGUE();
  int64_t n = countedRows(labels, bits, rows, ignored);
  if (threadIdx.x == 0)
    *counted = n;
}

/// `counted`: the mean's divisor where a label is ignored (null: rows).
template <typename T>
__global__ void
crossEntropyBackwardKernel(const T *gradLoss, const T *logits,
                           const void *labels, int32_t bits, T *grad,
                           int64_t classes, int64_t rows, bool mean,
                           formulas::IgnoredLabel ignored, double smoothing,
                           const int64_t *counted, unsigned long long *bad) {
  MPCRT_KERNEL_PROLOGUE();
  using S = Storage<T>;
  using A = typename S::Acc;
  formulas::LabelSmoothing<A> target(smoothing, classes);
  int64_t divisor = !mean ? 1 : counted ? *counted : rows;
  A scale = divisor > 0 ? S::load(*gradLoss) / static_cast<A>(divisor) : A(0);
  if (narrowRows(classes)) {
    for (int64_t r = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; r < rows;
         r += int64_t(gridDim.x) * blockDim.x) {
      const T *row = logits + r * classes;
      T *out = grad + r * classes;
      int64_t y = formulas::indexAt(labels, bits, r);
      if (ignored(y) || y < 0 || y >= classes) {
        if (!ignored(y))
          recordError(bad, r);
        for (int64_t c = 0; c < classes; ++c)
          out[c] = S::store(A(0));
        continue;
      }
      A max, sum;
      narrowRowStatistics(row, classes, max, sum);
      A lse = max + log(sum);
      for (int64_t c = 0; c < classes; ++c)
        out[c] = S::store(scale *
                          (exp(S::load(row[c]) - lse) - target.target(c == y)));
    }
    return;
  }
  const T *row = logits + blockIdx.x * classes;
  int64_t y = formulas::indexAt(labels, bits, blockIdx.x);
  if (ignored(y) || y < 0 || y >= classes) {
    if (threadIdx.x == 0 && !ignored(y))
      recordError(bad, blockIdx.x);
    for (int64_t c = threadIdx.x; c < classes; c += blockDim.x)
      grad[blockIdx.x * classes + c] = S::store(A(0));
    return;
  }
  A max, sum;
  rowStatistics<T, A>(row, classes, max, sum);
  A lse = max + log(sum);
  for (int64_t c = threadIdx.x; c < classes; c += blockDim.x) {
    A p = exp(S::load(row[c]) - lse);
    grad[blockIdx.x * classes + c] =
        S::store(scale * (p - target.target(c == y)));
  }
}
} // namespace

namespace {
/// Softmax with the accessors in and out.
template <typename In, typename Out>
void softmaxWith(In in, Out out, int64_t rows, int64_t cols, bool logarithm,
                 double scale) {
  bool warp = withLanesFor(cols, [&](auto k) {
    constexpr int K = decltype(k)::value;
    bool whole = wholeGroups<K>(cols, in, out);
    withFullRows<K, In, Out>(cols, whole, [&](auto full) {
      softmaxWarpKernel<In, Out, K, decltype(full)::value>
          <<<blocksFor(rows * 32), kThreads, 0, stream()>>>(
              in, out, rows, cols, whole, logarithm, scale);
    });
  });
  if (!warp)
    softmaxKernel<In, Out>
        <<<static_cast<unsigned>(rows), kThreads, 0, stream()>>>(
            in, out, cols, logarithm, scale);
}

template <typename G, typename Y, typename X>
void softmaxBackwardWith(G dy, Y y, X dx, int64_t rows, int64_t cols,
                         bool logarithm, double scale) {
  bool warp = withLanesFor(cols, [&](auto k) {
    constexpr int K = decltype(k)::value;
    bool whole = wholeGroups<K>(cols, dy, y, dx);
    withFullRows<K, G, Y, X>(cols, whole, [&](auto full) {
      softmaxBackwardWarpKernel<G, Y, X, K, decltype(full)::value>
          <<<blocksFor(rows * 32), kThreads, 0, stream()>>>(
              dy, y, dx, rows, cols, whole, logarithm, scale);
    });
  });
  if (!warp)
    softmaxBackwardKernel<G, Y, X>
        <<<static_cast<unsigned>(rows), kThreads, 0, stream()>>>(
            dy, y, dx, cols, logarithm, scale);
}
} // namespace

void softmax(mpcrt_dtype in, const void *input, mpcrt_dtype out, void *output,
             int64_t rows, int64_t cols, bool logarithm, double scale) {
  if (rows == 0 || cols == 0)
    return;
  if (in != out)
    softmaxWith(AnyFloat{in, input}, AnyFloat{out, output}, rows, cols,
                logarithm, scale);
  else
    dispatch(in, [&](auto *t) {
      using T = MPCRT_TYPE(t);
      softmaxWith(Typed<const T>{static_cast<const T *>(input)},
                  Typed<T>{static_cast<T *>(output)}, rows, cols, logarithm,
                  scale);
    });
  MPCRT_CUDA_LAUNCHED("softmax");
}

void softmaxBackward(mpcrt_dtype gradType, const void *grad,
                     mpcrt_dtype outputType, const void *output,
                     mpcrt_dtype resultType, void *gradInput, int64_t rows,
                     int64_t cols, bool logarithm, double scale) {
  if (rows == 0 || cols == 0)
    return;
  if (gradType != outputType || gradType != resultType)
    softmaxBackwardWith(AnyFloat{gradType, grad}, AnyFloat{outputType, output},
                        AnyFloat{resultType, gradInput}, rows, cols, logarithm,
                        scale);
  else
    dispatch(gradType, [&](auto *t) {
      using T = MPCRT_TYPE(t);
      softmaxBackwardWith(Typed<const T>{static_cast<const T *>(grad)},
                          Typed<const T>{static_cast<const T *>(output)},
                          Typed<T>{static_cast<T *>(gradInput)}, rows, cols,
                          logarithm, scale);
    });
  MPCRT_CUDA_LAUNCHED("softmax_backward");
}

namespace {
template <typename In, typename Out>
void softmaxDropoutWith(In in, Out out, int64_t rows, int64_t cols,
                        double scale, double p, uint64_t seed,
                        const int64_t *step) {
  bool warp = withLanesFor(cols, [&](auto k) {
    constexpr int K = decltype(k)::value;
    bool whole = wholeGroups<K>(cols, in, out);
    withFullRows<K, In, Out>(cols, whole, [&](auto full) {
      softmaxDropoutWarpKernel<In, Out, K, decltype(full)::value>
          <<<blocksFor(rows * 32), kThreads, 0, stream()>>>(
              in, out, rows, cols, whole, scale, p, seed, step);
    });
  });
  if (!warp)
    softmaxDropoutKernel<In, Out>
        <<<static_cast<unsigned>(rows), kThreads, 0, stream()>>>(
            in, out, cols, scale, p, seed, step);
}

template <typename G, typename In, typename X>
void softmaxDropoutBackwardWith(G dy, In x, X dx, X dropped, int64_t rows,
                                int64_t cols, double scale, double p,
                                uint64_t seed, const int64_t *step) {
  bool warp = withLanesFor(cols, [&](auto k) {
    constexpr int K = decltype(k)::value;
    bool whole = wholeGroups<K>(cols, dy, x, dx, dropped);
    withFullRows<K, G, In, X>(cols, whole, [&](auto full) {
      softmaxDropoutBackwardWarpKernel<G, In, X, K, decltype(full)::value>
          <<<blocksFor(rows * 32), kThreads, 0, stream()>>>(
              dy, x, dx, dropped, rows, cols, whole, scale, p, seed, step);
    });
  });
  if (!warp)
    softmaxDropoutBackwardKernel<G, In, X>
        <<<static_cast<unsigned>(rows), kThreads, 0, stream()>>>(
            dy, x, dx, dropped, cols, scale, p, seed, step);
}
} // namespace

void softmaxDropout(mpcrt_dtype in, const void *input, mpcrt_dtype out,
                    void *output, int64_t rows, int64_t cols, double scale,
                    double p, uint64_t seed, const int64_t *step) {
  if (rows == 0 || cols == 0)
    return;
  if (in != out)
    softmaxDropoutWith(AnyFloat{in, input}, AnyFloat{out, output}, rows, cols,
                       scale, p, seed, step);
  else
    dispatch(in, [&](auto *t) {
      using T = MPCRT_TYPE(t);
      softmaxDropoutWith(Typed<const T>{static_cast<const T *>(input)},
                         Typed<T>{static_cast<T *>(output)}, rows, cols, scale,
                         p, seed, step);
    });
  MPCRT_CUDA_LAUNCHED("softmax_dropout");
}

void softmaxDropoutBackward(mpcrt_dtype gradType, const void *grad,
                            mpcrt_dtype inputType, const void *input,
                            mpcrt_dtype resultType, void *gradInput,
                            void *dropped, int64_t rows, int64_t cols,
                            double scale, double p, uint64_t seed,
                            const int64_t *step) {
  if (rows == 0 || cols == 0)
    return;
  if (gradType != inputType || gradType != resultType) {
    // Mixed types: the forward's own kernel writes its result, since the
    // forward's warp kernel may take the short math (its two types 16-bit)
    // where these do not.
    if (dropped)
      softmaxDropout(inputType, input, gradType, dropped, rows, cols, scale, p,
                     seed, step);
    softmaxDropoutBackwardWith(
        AnyFloat{gradType, grad}, AnyFloat{inputType, input},
        AnyFloat{resultType, gradInput}, AnyFloat{gradType, nullptr}, rows,
        cols, scale, p, seed, step);
  } else
    dispatch(gradType, [&](auto *t) {
      using T = MPCRT_TYPE(t);
      softmaxDropoutBackwardWith(Typed<const T>{static_cast<const T *>(grad)},
                                 Typed<const T>{static_cast<const T *>(input)},
                                 Typed<T>{static_cast<T *>(gradInput)},
                                 Typed<T>{static_cast<T *>(dropped)}, rows,
                                 cols, scale, p, seed, step);
    });
  MPCRT_CUDA_LAUNCHED("softmax_dropout_backward");
}

void crossEntropy(mpcrt_dtype dtype, const void *logits, const void *labels,
                  int32_t labelBits, void *loss, int64_t rows, int64_t classes,
                  bool mean, formulas::IgnoredLabel ignored, double smoothing) {
  dispatch(dtype, [&](auto *t) {
    using T = MPCRT_TYPE(t);
    using A = typename Storage<T>::Acc;
    // One block per row (a thread per narrow row), the last to finish
    // summing the row terms (in the f32 scratch buffer; f64 terms take two
    // of its elements each).
    auto *terms = reinterpret_cast<A *>(
        scratchF32((rows > 0 ? rows : 1) * int64_t(sizeof(A) / 4)));
    crossEntropyKernel<T, A>
        <<<blocksFor(rows, narrowRows(classes) ? kThreads : 1), kThreads, 0,
           stream()>>>(static_cast<const T *>(logits), labels, labelBits, terms,
                       static_cast<T *>(loss), rows, classes, mean, ignored,
                       smoothing, &deviceErrors()->label, arrivalCounters(1));
  });
  MPCRT_CUDA_LAUNCHED("cross_entropy");
}

/// One warp per row: the first index of the row's maximum (NaN the
/// maximum, as torch.argmax), compared with the label; the correct rows are
/// counted in the result's 4 bytes, as an unsigned integer.
template <typename T>
__global__ void accuracyCountKernel(const T *logits, const void *labels,
                                    int32_t bits, unsigned *count, int64_t rows,
                                    int64_t classes,
                                    formulas::IgnoredLabel ignored) {
  MPCRT_KERNEL_PROLOGUE();
  using S = Storage<T>;
  using A = typename S::Acc;
  using Warp = RowTeam<true>;
  const int64_t lane = Warp::rank();
  for (int64_t r = Warp::first(); r < rows; r += Warp::stride()) {
    const T *row = logits + r * classes;
    A best = 0;
    int64_t index = -1; // -1: no element seen by this lane
    for (int64_t c = lane; c < classes; c += 32) {
      A v = S::load(row[c]);
      if (index < 0 || (!isnan(best) && (isnan(v) || v > best))) {
        best = v;
        index = c;
      }
    }
    // The lanes' candidates, combined: NaN first, then the larger value,
    // then the smaller index.
    for (int offset = 16; offset > 0; offset /= 2) {
      A otherBest = __shfl_down_sync(0xffffffffu, best, offset);
      int64_t otherIndex = __shfl_down_sync(0xffffffffu, index, offset);
      if (otherIndex < 0)
        continue;
      bool take;
      if (index < 0)
        take = true;
      else if (isnan(best) != isnan(otherBest))
        take = isnan(otherBest);
      else if (isnan(best) || best == otherBest)
        take = otherIndex < index;
      else
        take = otherBest > best;
      if (take) {
        best = otherBest;
        index = otherIndex;
      }
    }
    int64_t y = formulas::indexAt(labels, bits, r);
    if (lane == 0 && !ignored(y) && index == y)
      atomicAdd(count, 1u);
  }
}

/// One block: the correct rows' count over the rows counted (0 of none).
__global__ void accuracyFinishKernel(float *accuracy, const void *labels,
                                     int32_t bits, int64_t rows,
                                     formulas::IgnoredLabel ignored) {
  MPCRT_KERNEL_PROLOGUE();
  int64_t counted = countedRows(labels, bits, rows, ignored);
  if (threadIdx.x == 0) {
    unsigned count = *reinterpret_cast<unsigned *>(accuracy);
    *accuracy = counted > 0
                    ? static_cast<float>(double(count) / double(counted))
                    : 0.0f;
  }
}

void accuracy(mpcrt_dtype dtype, const void *logits, const void *labels,
              int32_t labelBits, float *out, int64_t rows, int64_t classes,
              formulas::IgnoredLabel ignored) {
  zero(out, sizeof(float));
  if (rows > 0)
    dispatch(dtype, [&](auto *t) {
      using T = MPCRT_TYPE(t);
      accuracyCountKernel<T><<<blocksFor(rows * 32), kThreads, 0, stream()>>>(
          static_cast<const T *>(logits), labels, labelBits,
          reinterpret_cast<unsigned *>(out), rows, classes, ignored);
    });
  accuracyFinishKernel<<<1, kThreads, 0, stream()>>>(out, labels, labelBits,
                                                     rows, ignored);
  MPCRT_CUDA_LAUNCHED("accuracy");
}

void crossEntropyBackward(mpcrt_dtype dtype, const void *gradLoss,
                          const void *logits, const void *labels,
                          int32_t labelBits, void *gradLogits, int64_t rows,
                          int64_t classes, bool mean,
                          formulas::IgnoredLabel ignored, double smoothing) {
  if (rows == 0)
    return;
  // A mean that ignores a label divides by the rows counted (one block
  // counts them into the f32 scratch buffer's first 8 bytes).
  int64_t *counted = nullptr;
  if (mean && ignored.ignores) {
    counted = reinterpret_cast<int64_t *>(scratchF32(2));
    crossEntropyCountKernel<<<1, kThreads, 0, stream()>>>(
        labels, labelBits, rows, ignored, counted);
  }
  dispatch(dtype, [&](auto *t) {
    using T = MPCRT_TYPE(t);
    crossEntropyBackwardKernel<T>
        <<<narrowRows(classes) ? blocksFor(rows) : static_cast<unsigned>(rows),
           kThreads, 0, stream()>>>(
            static_cast<const T *>(gradLoss), static_cast<const T *>(logits),
            labels, labelBits, static_cast<T *>(gradLogits), classes, rows,
            mean, ignored, smoothing, counted, &deviceErrors()->label);
  });
  MPCRT_CUDA_LAUNCHED("cross_entropy_backward");
}

} // namespace mpcrt::cuda
