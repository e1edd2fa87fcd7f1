//===- Elementwise.cu - elementwise ops, reductions, softmax, losses -----===//
//
// The CPU reference's formulas (lib/Runtime/CPU), one thread per element or
// one block per row: values are loaded into the accumulation type (f32, f64
// for f64), computed there and rounded once when stored. Row sums are
// reduced in a fixed tree order, so results are deterministic (but not in
// the reference's sequential order: they agree to rounding).
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

using formulas::derivative;

/// Both operands' offsets of the dense index i, from one division per
/// dimension (forPositions).
template <typename I>
__device__ void offsetsOf(const Layout<2> &shape, I i, I &l, I &r) {
  l = r = 0;
  forPositions(shape, i, [&](int d, I at) {
    l += at * static_cast<I>(shape.strides[0][d]);
    r += at * static_cast<I>(shape.strides[1][d]);
  });
}

/// I: the index type, 32 bits whenever every offset fits (integer division
/// by a dimension is the kernel's main cost otherwise).
template <typename T, typename I>
__global__ void binaryKernel(mpcrt_binary_op op, const T *lhs, const T *rhs,
                             T *out, Layout<2> shape, I count) {
  using S = Storage<T>;
  for (I i = blockIdx.x * I(blockDim.x) + threadIdx.x; i < count;
       i += I(gridDim.x) * blockDim.x) {
    I l, r;
    offsetsOf(shape, i, l, r);
    out[i] = S::store(formulas::binary(op, S::load(lhs[l]), S::load(rhs[r])));
  }
}

/// binaryKernel for N elements per access (see vectorLayout): one 32-bit
/// division per dimension for N elements, not one per element. An
/// operand whose innermost stride is 0 has one element for the N.
template <typename T, int N>
__global__ void binaryVectorKernel(mpcrt_binary_op op, const T *lhs,
                                   const T *rhs, T *out, Layout<2> shape,
                                   uint32_t vectors) {
  using S = Storage<T>;
  using V = Vec<T, N>;
  int last = shape.rank - 1;
  bool lhsRuns = shape.strides[0][last] == 1,
       rhsRuns = shape.strides[1][last] == 1;
  for (uint32_t v = blockIdx.x * blockDim.x + threadIdx.x; v < vectors;
       v += gridDim.x * blockDim.x) {
    uint32_t l, r;
    offsetsOf(shape, v * N, l, r);
    V x, y, z;
    if (lhsRuns)
      x = *reinterpret_cast<const V *>(lhs + l);
    else
      for (int k = 0; k < N; ++k)
        x.v[k] = lhs[l];
    if (rhsRuns)
      y = *reinterpret_cast<const V *>(rhs + r);
    else
      for (int k = 0; k < N; ++k)
        y.v[k] = rhs[r];
#pragma unroll
    for (int k = 0; k < N; ++k)
      z.v[k] = S::store(formulas::binary(op, S::load(x.v[k]), S::load(y.v[k])));
    reinterpret_cast<V *>(out)[v] = z;
  }
}

template <typename T>
__global__ void unaryKernel(mpcrt_unary_op op, const T *in, T *out,
                            int64_t count) {
  using S = Storage<T>;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x)
    out[i] = S::store(formulas::unary(op, S::load(in[i])));
}

/// out = grad * op'(saved), grad of type G: T, or the f32 product of
/// f16/bf16 operands (matmulActivationGrad), so that out is rounded once.
template <typename T, typename G = T>
__global__ void unaryGradKernel(mpcrt_unary_op op, const G *grad,
                                const T *saved, T *out, int64_t count) {
  using S = Storage<T>;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x)
    out[i] =
        S::store(Storage<G>::load(grad[i]) * derivative(op, S::load(saved[i])));
}

/// out[i] = op(a[i], b[i]) over flat, same-shape operands (b may be null:
/// op(a[i], a[i])), N elements per access; the last count % N elements
/// one at a time. N = 1 when a pointer is not aligned to N elements.
template <typename T, int N, typename Op>
__global__ void mapKernel(Op op, const T *a, const T *b, T *out,
                          uint32_t count) {
  using V = Vec<T, N>;
  uint32_t stride = gridDim.x * blockDim.x,
           first = blockIdx.x * blockDim.x + threadIdx.x;
  uint32_t vectors = count / N;
  for (uint32_t v = first; v < vectors; v += stride) {
    V x = reinterpret_cast<const V *>(a)[v];
    V y = b ? reinterpret_cast<const V *>(b)[v] : x;
    V z;
#pragma unroll
    for (int k = 0; k < N; ++k)
      z.v[k] = op(x.v[k], y.v[k]);
    reinterpret_cast<V *>(out)[v] = z;
  }
  for (uint32_t i = vectors * N + first; i < count; i += stride)
    out[i] = op(a[i], b ? b[i] : a[i]);
}

template <typename T> struct BinaryOp {
  mpcrt_binary_op op;
  __device__ T operator()(T x, T y) const {
    using S = Storage<T>;
    return S::store(formulas::binary(op, S::load(x), S::load(y)));
  }
};

/// A unary op known when the kernel is compiled: with the op a kernel
/// argument, formulas::unary's switch was a chain of comparisons and
/// branches for each element (the f16 exact GELU kernel issued about 66
/// instructions an element, at 83% of the issue rate, and took as long as
/// the f32 one reading twice the bytes).
template <typename T, mpcrt_unary_op Op> struct UnaryOp {
  __device__ T operator()(T x, T) const {
    using S = Storage<T>;
    return S::store(formulas::unary(Op, S::load(x)));
  }
};

template <typename T, mpcrt_unary_op Op> struct UnaryGradOp {
  __device__ T operator()(T grad, T saved) const {
    using S = Storage<T>;
    return S::store(S::load(grad) * derivative(Op, S::load(saved)));
  }
};

/// Returns f(std::integral_constant<mpcrt_unary_op, op>{}); false for a
/// value outside the enumeration (whose results formulas::unary makes
/// NaN: the caller's generic kernel then runs).
template <typename F> bool withUnaryOp(mpcrt_unary_op op, F f) {
#define MPCRT_UNARY_CASE(OP)                                                   \
  case OP:                                                                     \
    return f(std::integral_constant<mpcrt_unary_op, OP>{})
  switch (op) {
    MPCRT_UNARY_CASE(MPCRT_NEG);
    MPCRT_UNARY_CASE(MPCRT_EXP);
    MPCRT_UNARY_CASE(MPCRT_LOG);
    MPCRT_UNARY_CASE(MPCRT_SQRT);
    MPCRT_UNARY_CASE(MPCRT_RSQRT);
    MPCRT_UNARY_CASE(MPCRT_TANH);
    MPCRT_UNARY_CASE(MPCRT_SIGMOID);
    MPCRT_UNARY_CASE(MPCRT_RELU);
    MPCRT_UNARY_CASE(MPCRT_GELU);
    MPCRT_UNARY_CASE(MPCRT_GELU_TANH);
    MPCRT_UNARY_CASE(MPCRT_SIN);
    MPCRT_UNARY_CASE(MPCRT_COS);
  }
#undef MPCRT_UNARY_CASE
  return false;
}

/// out[i] = op(a[i], *scalar) (op(*scalar, a[i]) where scalarLeft) over a
/// flat operand and a one-element one (a tensor times a scalar: an
/// attention's scale, a loss's mean), the scalar read once per thread, N
/// elements per access as mapKernel.
template <typename T, int N>
__global__ void scalarMapKernel(mpcrt_binary_op op, const T *a, const T *scalar,
                                bool scalarLeft, T *out, uint32_t count) {
  using S = Storage<T>;
  using V = Vec<T, N>;
  auto c = S::load(*scalar);
  auto apply = [&](T x) {
    auto v = S::load(x);
    return S::store(scalarLeft ? formulas::binary(op, c, v)
                               : formulas::binary(op, v, c));
  };
  uint32_t stride = gridDim.x * blockDim.x,
           first = blockIdx.x * blockDim.x + threadIdx.x;
  uint32_t vectors = count / N;
  for (uint32_t v = first; v < vectors; v += stride) {
    V x = reinterpret_cast<const V *>(a)[v], z;
#pragma unroll
    for (int k = 0; k < N; ++k)
      z.v[k] = apply(x.v[k]);
    reinterpret_cast<V *>(out)[v] = z;
  }
  for (uint32_t i = vectors * N + first; i < count; i += stride)
    out[i] = apply(a[i]);
}

/// Launches mapKernel with 16-byte accesses when every pointer allows,
/// else one element at a time. Counts below 2^31 only (32-bit indices).
template <typename T, typename Op>
void launchMap(Op op, const T *a, const T *b, T *out, int64_t count) {
  constexpr int N = 16 / sizeof(T);
  if (alignedTo(a, 16) && (!b || alignedTo(b, 16)) && alignedTo(out, 16))
    mapKernel<T, N><<<blocksFor((count + N - 1) / N), kThreads, 0, stream()>>>(
        op, a, b, out, static_cast<uint32_t>(count));
  else
    mapKernel<T, 1><<<blocksFor(count), kThreads, 0, stream()>>>(
        op, a, b, out, static_cast<uint32_t>(count));
}

/// Below this, counts use launchMap (a grid-stride step cannot wrap).
constexpr int64_t kMapLimit = int64_t(1) << 31;

/// A unary op or its gradient with the op compiled in (UnaryOp,
/// UnaryGradOp: withUnaryOp), 16 bytes per access: where the type is f16,
/// bf16 or f32, the count below kMapLimit and the pointers aligned
/// (false otherwise: the generic kernel, the op an argument, takes the
/// rest, which keeps the build from compiling every op at every width;
/// gradients only for the ops with a derivative).
template <typename T>
bool launchFixedUnary(mpcrt_unary_op op, bool gradient, const T *a, const T *b,
                      T *out, int64_t count) {
  if constexpr (sizeof(T) == 8) {
    return false;
  } else {
    constexpr int N = 16 / sizeof(T);
    if (count >= kMapLimit || !alignedTo(a, 16) || (b && !alignedTo(b, 16)) ||
        !alignedTo(out, 16))
      return false;
    return withUnaryOp(op, [&](auto fixed) {
      constexpr mpcrt_unary_op Op = decltype(fixed)::value;
      auto launch = [&](auto map) {
        mapKernel<T, N>
            <<<blocksFor((count + N - 1) / N), kThreads, 0, stream()>>>(
                map, a, b, out, static_cast<uint32_t>(count));
        return true;
      };
      if (!gradient)
        return launch(UnaryOp<T, Op>{});
      if constexpr (formulas::hasDerivative(Op))
        return launch(UnaryGradOp<T, Op>{});
      return false; // no derivative: the generic kernel's NaN
    });
  }
}

/// One thread per output: the reduced dimension is strided by `inner`,
/// so neighbouring threads read neighbouring elements.
template <typename T>
__global__ void reduceColumnsKernel(mpcrt_reduce_op op, const T *in, T *out,
                                    int64_t outer, int64_t reduced,
                                    int64_t inner) {
  using S = Storage<T>;
  using A = typename S::Acc;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
       i < outer * inner; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t o = i / inner, j = i % inner;
    A acc = op == MPCRT_REDUCE_MAX ? A(-INFINITY) : A(0);
    for (int64_t r = 0; r < reduced; ++r) {
      A x = S::load(in[(o * reduced + r) * inner + j]);
      acc = op == MPCRT_REDUCE_MAX ? (isnan(x) || x > acc ? x : acc) : acc + x;
    }
    if (op == MPCRT_REDUCE_MEAN)
      acc /= static_cast<A>(reduced);
    out[i] = S::store(acc);
  }
}

/// inner == 1: rows of `length` elements, each cut into gridDim.y
/// segments of `segment` elements, one block (row blockIdx.x, segment
/// blockIdx.y) each. A block's sum, or maximum (a NaN winning), in a fixed
/// tree order, is stored as Out at out[row * gridDim.y + segment], divided
/// by `divisor` for a mean (0: partial results, not divided). With one
/// segment a row this is the whole reduction; several segments' partials
/// ([rows, segments] of the accumulator type) are then reduced by the same
/// kernel, one segment a row.
template <typename In, typename Out>
__global__ void reduceRowsKernel(mpcrt_reduce_op op, const In *in, Out *out,
                                 int64_t length, int64_t segment,
                                 int64_t divisor) {
  using A = typename Storage<Out>::Acc;
  const In *row = in + blockIdx.x * length;
  int64_t first = blockIdx.y * segment, last = min(first + segment, length);
  bool max = op == MPCRT_REDUCE_MAX;
  A acc = max ? A(-INFINITY) : A(0);
  for (int64_t r = first + threadIdx.x; r < last; r += blockDim.x) {
    A x = Storage<In>::load(row[r]);
    acc = max ? (isnan(x) || x > acc ? x : acc) : acc + x;
  }
  acc = max ? blockReduce<A, true>(acc) : blockReduce<A>(acc);
  if (threadIdx.x == 0)
    out[int64_t(blockIdx.x) * gridDim.y + blockIdx.y] = Storage<Out>::store(
        op == MPCRT_REDUCE_MEAN && divisor > 0 ? acc / static_cast<A>(divisor)
                                               : acc);
}

template <typename T>
__global__ void reduceMaxBackwardKernel(const T *grad, const T *in,
                                        const T *max, T *out, int64_t outer,
                                        int64_t reduced, int64_t inner) {
  using S = Storage<T>;
  using A = typename S::Acc;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
       i < outer * inner; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t o = i / inner, j = i % inner;
    A m = S::load(max[i]);
    int64_t ties = 0;
    for (int64_t r = 0; r < reduced; ++r)
      ties += S::load(in[(o * reduced + r) * inner + j]) == m;
    A share = ties ? S::load(grad[i]) / static_cast<A>(ties) : A(0);
    for (int64_t r = 0; r < reduced; ++r) {
      int64_t at = (o * reduced + r) * inner + j;
      out[at] = S::store(S::load(in[at]) == m ? share : A(0));
    }
  }
}

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
template <bool Short, typename A> struct SoftmaxMath {
  A sum, reciprocal;
  __device__ static A exp(A v) {
    if constexpr (Short)
      return exp2f(v * 1.4426950408889634f);
    else
      return ::exp(v);
  }
  __device__ explicit SoftmaxMath(A sum)
      : sum(sum), reciprocal(Short ? A(1) / sum : 0) {}
  /// y / sum.
  __device__ A over(A y) const {
    if constexpr (Short)
      return y * reciprocal;
    else
      return y / sum;
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

/// The longest row a warp takes alone (the softmax's lanes hold it in
/// registers, 32 elements each); longer rows take a block.
constexpr int64_t kWarpRowLimit = 1024;

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
/// cols) (at most kWarpRowLimit), for a warp: its lanes draw the row's
/// Philox groups in turn, one call per four elements as mpcrt_dropout_*,
/// into `nibbles` (bit e of byte g - first / 4: element 4 g + e), which
/// every lane then reads (laneBits).
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
};

/// The bytes WarpKeeps takes per warp: a row of kWarpRowLimit elements
/// not starting at a multiple of 4 spans one group more.
constexpr int kWarpKeepBytes = kWarpRowLimit / 4 + 1;

/// Calls body(base, v, sum, keeps) for each of the warp's rows of
/// softmax(s * input) (rows of at most 32 K elements): v and sum as
/// warpShifted<Short> leaves them with `exps` (the probabilities are
/// SoftmaxMath<Short>'s v / sum), keeps the row's dropout bits. The
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
    keeps.fill(base, cols);
    warpShift<Short>(cols, s, v, sum, true);
    body(base, v, sum, keeps);
  }
}

/// The blocks per multiprocessor that the warp softmax_dropout kernels ask
/// ptxas to fit (registers capped at 65536 / (kThreads * blocks)): for
/// rows of up to 512 elements of one type, f16, bf16 or f32. A row's loads,
/// its Philox rounds and its arithmetic are chains of dependent
/// instructions, which take many warps in flight to keep a multiprocessor
/// busy; uncapped, ptxas gave the f16 forward 72 registers and the
/// backward 96 (3 and 2 blocks), capped at most 64 and 80 with nothing
/// spilled. Longer rows, f64 and mixed types spill when capped, so they
/// are not.
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
  fullRowShape<K, Full>(cols, whole);
  using A = decltype(typename In::Acc() + typename Out::Acc());
  constexpr bool Short = kShortSoftmax<In, Out>;
  A kept = static_cast<A>(1 / (1 - p));
  forEachDroppedRow<Short, K>(
      input, rows, cols, whole, static_cast<A>(scale), p, seed, step,
      [&](int64_t base, A(&v)[K], A sum, const WarpKeeps &keeps) {
        // Every element's probability computed (0 past the row), then
        // selected by its bit: no branch that the lanes take apart.
        uint32_t bits = keeps.laneBits<K>(base, cols);
        SoftmaxMath<Short, A> math(sum);
#pragma unroll
        for (int k = 0; k < K; ++k) {
          A y = math.over(v[k]) * kept;
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
__global__ void __launch_bounds__(kThreads, cappedBlocks<K, G, In, X>(3))
    softmaxDropoutBackwardWarpKernel(G grad, In input, X gradInput, X dropped,
                                     int64_t rows, int64_t cols, bool whole,
                                     double scale, double p, uint64_t seed,
                                     const int64_t *step) {
  fullRowShape<K, Full>(cols, whole);
  using A =
      decltype(typename G::Acc() + typename In::Acc() + typename X::Acc());
  using AG = typename G::Acc;
  constexpr bool Short = kShortSoftmax<G, In, X>;
  A s = static_cast<A>(scale), keptProbability = static_cast<A>(1 / (1 - p));
  AG kept = static_cast<AG>(1 / (1 - p));
  forEachDroppedRow<Short, K>(
      input, rows, cols, whole, s, p, seed, step,
      [&](int64_t base, A(&v)[K], A sum, const WarpKeeps &keeps) {
        AG g[K];
        loadLanes(grad, base, cols, whole, AG(0), g);
        uint32_t bits = keeps.laneBits<K>(base, cols);
        SoftmaxMath<Short, A> math(sum);
        A d[K], dot = 0;
#pragma unroll
        for (int k = 0; k < K; ++k)
          v[k] = math.over(v[k]);
        if (dropped.data) { // the same for the whole grid
#pragma unroll
          for (int k = 0; k < K; ++k) {
            A y = v[k] * keptProbability;
            d[k] = bits >> k & 1 ? y : A(0);
          }
          storeLanes(dropped, base, cols, whole, d);
        }
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

/// Cross-entropy, pass 1: block r's row term, max + log(sum exp) minus
/// the target-weighted logits (x[y] without label smoothing; 0 for an
/// ignored label, and for one outside [0, classes), which pass 2 records).
template <typename T, typename A>
__global__ void
crossEntropyRowsKernel(const T *logits, const void *labels, int32_t bits,
                       A *terms, int64_t rows, int64_t classes,
                       formulas::IgnoredLabel ignored, double smoothing) {
  using S = Storage<T>;
  formulas::LabelSmoothing<A> target(smoothing, classes);
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

/// Pass 2, one block: the row terms summed in a fixed order (each thread's
/// rows in turn, then the block's tree), divided by the rows counted for a
/// mean, and the first row whose label is neither ignored nor in [0,
/// classes) recorded.
template <typename T, typename A>
__global__ void
crossEntropySumKernel(const A *terms, const void *labels, int32_t bits, T *loss,
                      int64_t rows, int64_t classes, bool mean,
                      formulas::IgnoredLabel ignored, unsigned long long *bad) {
  using S = Storage<T>;
  A total = 0;
  int64_t firstBad = -1;
  for (int64_t r = threadIdx.x; r < rows; r += blockDim.x) {
    total += terms[r];
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

/// The backward's divisor for a mean that ignores a label: the rows
/// counted, in *counted.
__global__ void crossEntropyCountKernel(const void *labels, int32_t bits,
                                        int64_t rows,
                                        formulas::IgnoredLabel ignored,
                                        int64_t *counted) {
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
  using S = Storage<T>;
  using A = typename S::Acc;
  formulas::LabelSmoothing<A> target(smoothing, classes);
  int64_t divisor = !mean ? 1 : counted ? *counted : rows;
  A scale = divisor > 0 ? S::load(*gradLoss) / static_cast<A>(divisor) : A(0);
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

/// Whether forGroups unrolls a team member's groups (below).
template <typename Team, typename T, bool Whole>
constexpr bool kUnrolledGroups = Team::kWarp && Whole && sizeof(T) == 2;

/// The groups a lane of an unrolled warp row (kUnrolledGroups) takes at
/// most.
constexpr int kLaneGroups = int(kWarpRowLimit / 128);

/// forGroups (below) calls f(c0, n) for a team member's groups of a row of
/// `cols` elements:
/// up to four neighbours c0 .. c0 + n - 1, every 4 * Team::size()-th from
/// 4 * Team::rank(), in increasing order (the same groups and order for
/// every pass over the row). With Whole (rows of a multiple of 4, as
/// withGroupsOf's Vector) n is 4. A warp's rows are at most kWarpRowLimit
/// long, so its lanes take at most kWarpRowLimit / 128 groups each; that
/// loop is unrolled, so that the groups' loads are in flight
/// together rather than one after another (a warp per row puts all 4096
/// rows of a BERT-base batch in one wave, whose time is one row's chain of
/// loads). That is done for whole rows of 16-bit T only, the AMP steps'
/// case: every unrolled instantiation costs the build about as much as
/// the rest of its file's kernels. forGroupsIndexed calls f(g, c0, n)
/// with the group's ordinal g among the member's groups too (a constant
/// of the unrolled loop, so that per-group registers stay registers).
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

template <typename Team, typename T, bool Whole, typename F>
__device__ void forGroups(int64_t cols, F f) {
  forGroupsIndexed<Team, T, Whole>(cols,
                                   [&](int, int64_t c0, int n) { f(c0, n); });
}

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

/// Row `r` of a layer norm by a team (RowTeam: the block, or a warp for
/// rows of up to 1024 elements): two-pass statistics of `row`, y. Each
/// thread takes four neighbouring elements at a time (Vector: as
/// withGroupsOf, a full group as one access; the same groups and order
/// either way).
template <typename Team, bool Vector, typename T, typename Stat>
__device__ void layerNormRow(const T *row, mpcrt_dtype paramDtype,
                             const void *gamma, const void *beta, T *y,
                             Stat *mean, Stat *rstd, int64_t r, int64_t cols,
                             double epsilon) {
  using S = Storage<T>;
  using A = typename S::Acc;
  A sum = 0;
  forGroups<Team, T, Vector>(cols, [&](int64_t c0, int n) {
    Vec<T, 4> v = loadVec<4>(row, c0, Vector, n);
    for (int e = 0; e < n; ++e)
      sum += S::load(v.v[e]);
  });
  A mu = Team::template reduce<A>(sum) / static_cast<A>(cols);
  A var = 0; // biased, two-pass
  forGroups<Team, T, Vector>(cols, [&](int64_t c0, int n) {
    Vec<T, 4> v = loadVec<4>(row, c0, Vector, n);
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
  forGroups<Team, T, Vector>(cols, [&](int64_t c0, int n) {
    Vec<T, 4> v = loadVec<4>(row, c0, Vector, n);
    A g[4], b[4];
    loadParams(paramDtype, gamma, c0, n, g);
    loadParams(paramDtype, beta, c0, n, b);
    Vec<T, 4> out;
    for (int e = 0; e < n; ++e)
      out.v[e] = S::store((S::load(v.v[e]) - mu) * inv * g[e] + b[e]);
    storeVec(y + r * cols, c0, Vector, out, n);
  });
}

/// The blocks per multiprocessor that the layer norms' unrolled kernels
/// (forGroups: a warp's whole rows of 16-bit T) ask ptxas to fit: 4, at
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
  using Team = RowTeam<Warp>;
  for (int64_t r = Team::first(); r < rows; r += Team::stride())
    layerNormRow<Team, Vector>(x + r * cols, paramDtype, gamma, beta, y, mean,
                               rstd, r, cols, epsilon);
}

/// mpc.dropout_add: the dropout kernel's bits and rounding, then the
/// residual (if any) added and the sum rounded.
template <typename T>
__global__ void dropoutAddKernel(const T *x, const T *residual, T *y,
                                 int64_t count, double p, uint64_t seed,
                                 const int64_t *step) {
  using S = Storage<T>;
  using A = typename S::Acc;
  A scale = static_cast<A>(1 / (1 - p));
  int64_t t = *step;
  uint64_t threshold = formulas::keepThreshold(p);
  // A thread takes the four elements of one Philox call (none at p = 0).
  int64_t groups = (count + 3) / 4;
  for (int64_t q = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; q < groups;
       q += int64_t(gridDim.x) * blockDim.x) {
    uint32_t words[4] = {~0u, ~0u, ~0u, ~0u};
    if (p != 0)
      formulas::dropoutWords(seed, t, static_cast<uint64_t>(q), words);
    for (int e = 0; e < 4; ++e) {
      int64_t i = 4 * q + e;
      if (i >= count)
        break;
      bool keep = p == 0 || words[e] >= threshold;
      T dropped = S::store(keep ? S::load(x[i]) * scale : A(0));
      y[i] = residual ? S::store(S::load(dropped) + S::load(residual[i]))
                      : dropped;
    }
  }
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
  using S = Storage<T>;
  using A = typename S::Acc;
  using Team = RowTeam<Warp>;
  A scale = static_cast<A>(1 / (1 - p));
  formulas::KeepBits keep(p, seed, *step);
  for (int64_t r = Team::first(); r < rows; r += Team::stride()) {
    T *row = sum + r * cols;
    const T *res = residual + (r % residualRows) * cols;
    forGroups<Team, T, Vector>(cols, [&](int64_t c0, int n) {
      int64_t i0 = r * cols + c0;
      Vec<T, 4> xs = loadVec<4>(x, i0, Vector, n),
                rs = loadVec<4>(res, c0, Vector, n), out;
      for (int e = 0; e < n; ++e) {
        A d = p == 0         ? S::load(xs.v[e])
              : keep(i0 + e) ? S::load(S::store(S::load(xs.v[e]) * scale))
                             : A(0);
        out.v[e] = S::store(d + S::load(rs.v[e]));
      }
      storeVec(row, c0, Vector, out, n);
    });
    Team::sync(); // layerNormRow reads the other threads' sums
    layerNormRow<Team, Vector>(static_cast<const T *>(row), paramDtype, gamma,
                               beta, y, mean, rstd, r, cols, epsilon);
  }
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
/// it), from the same loads.
template <typename Team, bool Vector, typename T, typename Stat, typename Emit,
          typename Terms = NoParamTerms>
__device__ void layerNormBackwardRow(const T *dy, const T *x, const Stat *mean,
                                     const Stat *rstd, mpcrt_dtype paramDtype,
                                     const void *gamma, int64_t r, int64_t cols,
                                     Emit emit, Terms terms = {}) {
  using S = Storage<T>;
  using A = typename S::Acc;
  A mu = static_cast<A>(mean[r]), inv = static_cast<A>(rstd[r]);
  A sumGdy = 0, sumGdyXhat = 0;
  forGroups<Team, T, Vector>(cols, [&](int64_t c0, int k) {
    int64_t i0 = r * cols + c0;
    Vec<T, 4> xs = loadVec<4>(x, i0, Vector, k),
              ds = loadVec<4>(dy, i0, Vector, k);
    A g[4];
    loadParams(paramDtype, gamma, c0, k, g);
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
    Vec<T, 4> xs = loadVec<4>(x, i0, Vector, k),
              ds = loadVec<4>(dy, i0, Vector, k);
    A g[4], v[4];
    loadParams(paramDtype, gamma, c0, k, g);
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
    for (int e = 0; e < n; ++e) {
      A g = dsum ? v[e] + S::load(ds.v[e]) : v[e];
      res.v[e] = S::store(g);
      out.v[e] = S::store(keep(i0 + e) ? (p == 0 ? g : g * scale) : A(0));
    }
    storeVec(dresidual, i0, Vector, res, n);
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
  using Team = RowTeam<Warp>;
  auto emit = emits.make();
  for (int64_t r = Team::first(); r < rows; r += Team::stride())
    layerNormBackwardRow<Team, Vector>(dy, x, mean, rstd, paramDtype, gamma, r,
                                       cols, emit);
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
  using A = typename Storage<T>::Acc;
  using Team = RowTeam<true>;
  static_assert(kUnrolledGroups<Team, T, true> && Groups <= kLaneGroups,
                "registers per group");
  constexpr int kWarps = kThreads / 32;
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
  for (int64_t r = r0 + warp; r < r1; r += kWarps)
    layerNormBackwardRow<Team, true>(
        dy, x, mean, rstd, paramDtype, gamma, r, cols, emit,
        [&](int g, int e, A d, A xhat) {
          if (g < Groups) { // always: cols <= 128 Groups
            gammaSums[g][e] += d * xhat;
            betaSums[g][e] += d;
          }
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
  __device__ void terms(int64_t, int64_t r, int64_t c, bool whole,
                        Partial<A, 2> (&t)[N]) const {
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

/// A reduction's element (o, r, j) of [outer, reduced, inner].
template <typename T> struct ReduceTerm {
  using Element = T;
  const T *in;
  int64_t reduced, inner;
  using A = typename Storage<T>::Acc;
  bool aligned() const { return alignedTo(in, 16); }
  template <int N>
  __device__ void terms(int64_t o, int64_t r, int64_t j, bool whole,
                        Partial<A, 1> (&t)[N]) const {
    Vec<T, N> v = loadVec<N>(in, (o * reduced + r) * inner + j, whole);
#pragma unroll
    for (int k = 0; k < N; ++k)
      t[k] = {{Storage<T>::load(v.v[k])}};
  }
};

/// Maximum, a NaN winning (as reduceColumnsKernel).
template <typename A> struct MaxOf {
  __device__ Partial<A, 1> operator()(Partial<A, 1> a,
                                      const Partial<A, 1> &b) const {
    if (isnan(b.v[0]) || b.v[0] > a.v[0])
      a.v[0] = b.v[0];
    return a;
  }
};

template <typename T> struct StoreReduced {
  T *out;
  int64_t inner, reduced;
  bool mean;
  using A = typename Storage<T>::Acc;
  __device__ void operator()(int64_t o, int64_t j,
                             const Partial<A, 1> &s) const {
    out[o * inner + j] =
        Storage<T>::store(mean ? s.v[0] / static_cast<A>(reduced) : s.v[0]);
  }
};

/// c = act(product + bias), product of type P: T itself (in place), or the
/// f32 product of f16/bf16 operands, so that the result is rounded once.
template <typename T, typename P>
__global__ void biasActivationKernel(const P *product, T *c, const T *bias,
                                     T *pre, int64_t count, int64_t n,
                                     int32_t activation) {
  using S = Storage<T>;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    auto v = Storage<P>::load(product[i]) + S::load(bias[i % n]);
    if (pre)
      pre[i] = S::store(v);
    if (activation != MPCRT_ACTIVATION_NONE)
      v = formulas::unary(static_cast<mpcrt_unary_op>(activation), v);
    c[i] = S::store(v);
  }
}

/// Whether a broadcasting layout of two operands moves N elements per
/// access: its innermost dimension a multiple of N (a vector never
/// crosses into the next), stepping through each operand by 1 or 0; an
/// operand stepped by 1 has its other strides multiples of N and, as the
/// result, 16-byte alignment (its vectors start aligned). A bias row
/// added to [rows, n], a mask to [B, H, S, S], a [rows, 1] column times
/// [rows, n].
bool vectorLayout(const Layout<2> &s, int n, const void *lhs, const void *rhs,
                  const void *out) {
  int last = s.rank - 1;
  if (last < 0 || s.dims[last] % n != 0 || !alignedTo(out, 16))
    return false;
  for (int k = 0; k < 2; ++k) {
    int64_t inner = s.strides[k][last];
    if (inner == 0)
      continue;
    if (inner != 1 || !alignedTo(k == 0 ? lhs : rhs, 16))
      return false;
    for (int d = 0; d < last; ++d)
      if (s.strides[k][d] % n != 0)
        return false;
  }
  return true;
}

} // namespace

void binary(mpcrt_dtype dtype, mpcrt_binary_op op, const void *lhs,
            const int64_t *lhsStrides, const void *rhs,
            const int64_t *rhsStrides, void *out, const int64_t *shape,
            int32_t rank) {
  int64_t count;
  Layout<2> s =
      layoutOf("binary op", shape, rank, {lhsStrides, rhsStrides}, count);
  if (count == 0)
    return;
  bool small = indexesFit32(s, count); // 32-bit indices
  dispatch(dtype, [&](auto *t) {
    using T = MPCRT_TYPE(t);
    auto *l = static_cast<const T *>(lhs);
    auto *r = static_cast<const T *>(rhs);
    auto *o = static_cast<T *>(out);
    bool flat = s.rank == 1 && count < kMapLimit;
    // One side flat, the other one element broadcast everywhere.
    bool scalarRight = flat && s.strides[0][0] == 1 && s.strides[1][0] == 0,
         scalarLeft = flat && s.strides[0][0] == 0 && s.strides[1][0] == 1;
    constexpr int N = 16 / sizeof(T);
    if (flat && s.strides[0][0] == 1 && s.strides[1][0] == 1)
      launchMap(BinaryOp<T>{op}, l, r, o, count);
    else if (scalarRight || scalarLeft) {
      const T *a = scalarRight ? l : r, *c = scalarRight ? r : l;
      auto n = static_cast<uint32_t>(count);
      if (alignedTo(a, 16) && alignedTo(o, 16))
        scalarMapKernel<T, N>
            <<<blocksFor((count + N - 1) / N), kThreads, 0, stream()>>>(
                op, a, c, scalarLeft, o, n);
      else
        scalarMapKernel<T, 1><<<blocksFor(count), kThreads, 0, stream()>>>(
            op, a, c, scalarLeft, o, n);
    } else if (small && vectorLayout(s, N, l, r, o))
      binaryVectorKernel<T, N><<<blocksFor(count / N), kThreads, 0, stream()>>>(
          op, l, r, o, s, static_cast<uint32_t>(count / N));
    else if (small)
      binaryKernel<T, uint32_t><<<blocksFor(count), kThreads, 0, stream()>>>(
          op, l, r, o, s, static_cast<uint32_t>(count));
    else
      binaryKernel<T, int64_t>
          <<<blocksFor(count), kThreads, 0, stream()>>>(op, l, r, o, s, count);
  });
  MPCRT_CUDA_LAUNCHED("binary");
}

namespace {

__device__ double loadAs(int32_t element, const void *base, int64_t at) {
  switch (element) {
  case MPCRT_F16:
    return Storage<__half>::load(static_cast<const __half *>(base)[at]);
  case MPCRT_BF16:
    return Storage<__nv_bfloat16>::load(
        static_cast<const __nv_bfloat16 *>(base)[at]);
  case MPCRT_F32:
    return static_cast<const float *>(base)[at];
  case MPCRT_F64:
    return static_cast<const double *>(base)[at];
  case MPCRT_ELEMENT_I32:
    return static_cast<const int32_t *>(base)[at];
  default:
    return static_cast<const uint8_t *>(base)[at] != 0;
  }
}

__global__ void compareKernel(mpcrt_predicate predicate, int32_t element,
                              const void *lhs, const void *rhs, uint8_t *out,
                              Layout<2> s, int64_t count) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t l = offsetOf(s, 0, i), r = offsetOf(s, 1, i);
    out[i] =
        element == MPCRT_ELEMENT_I64
            ? formulas::compare(predicate, static_cast<const int64_t *>(lhs)[l],
                                static_cast<const int64_t *>(rhs)[r])
            : formulas::compare(predicate, loadAs(element, lhs, l),
                                loadAs(element, rhs, r));
  }
}

__global__ void whereKernel(int32_t bytes, const uint8_t *condition,
                            const char *lhs, const char *rhs, char *out,
                            Layout<3> s, int64_t count) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    const char *from = condition[offsetOf(s, 0, i)]
                           ? lhs + offsetOf(s, 1, i) * bytes
                           : rhs + offsetOf(s, 2, i) * bytes;
    for (int32_t b = 0; b < bytes; ++b)
      out[i * bytes + b] = from[b];
  }
}

} // namespace

void compare(int32_t predicate, int32_t element, const void *lhs,
             const int64_t *lhsStrides, const void *rhs,
             const int64_t *rhsStrides, uint8_t *out, const int64_t *shape,
             int32_t rank) {
  int64_t count;
  Layout<2> s =
      layoutOf("compare", shape, rank, {lhsStrides, rhsStrides}, count);
  if (count == 0)
    return;
  compareKernel<<<blocksFor(count), kThreads, 0, stream()>>>(
      static_cast<mpcrt_predicate>(predicate), element, lhs, rhs, out, s,
      count);
  MPCRT_CUDA_LAUNCHED("compare");
}

void where(int32_t bytes, const uint8_t *condition,
           const int64_t *conditionStrides, const void *lhs,
           const int64_t *lhsStrides, const void *rhs,
           const int64_t *rhsStrides, void *out, const int64_t *shape,
           int32_t rank) {
  int64_t count;
  Layout<3> s = layoutOf("where", shape, rank,
                         {conditionStrides, lhsStrides, rhsStrides}, count);
  if (count == 0)
    return;
  whereKernel<<<blocksFor(count), kThreads, 0, stream()>>>(
      bytes, condition, static_cast<const char *>(lhs),
      static_cast<const char *>(rhs), static_cast<char *>(out), s, count);
  MPCRT_CUDA_LAUNCHED("where");
}

void dropoutAdd(mpcrt_dtype dtype, const void *x, const void *residual, void *y,
                int64_t count, double p, uint64_t seed, const int64_t *step) {
  if (count <= 0)
    return;
  dispatch(dtype, [&](auto *t) {
    using T = MPCRT_TYPE(t);
    dropoutAddKernel<T><<<blocksFor((count + 3) / 4), kThreads, 0, stream()>>>(
        static_cast<const T *>(x), static_cast<const T *>(residual),
        static_cast<T *>(y), count, p, seed, step);
  });
  MPCRT_CUDA_LAUNCHED("dropout_add");
}

void biasActivation(mpcrt_dtype dtype, void *c, const void *bias, void *pre,
                    int64_t rows, int64_t n, int32_t activation,
                    const float *product) {
  int64_t count = rows * n;
  if (count <= 0)
    return;
  dispatch(dtype, [&](auto *t) {
    using T = MPCRT_TYPE(t);
    if (product)
      biasActivationKernel<T, float>
          <<<blocksFor(count), kThreads, 0, stream()>>>(
              product, static_cast<T *>(c), static_cast<const T *>(bias),
              static_cast<T *>(pre), count, n, activation);
    else
      biasActivationKernel<T, T><<<blocksFor(count), kThreads, 0, stream()>>>(
          static_cast<const T *>(c), static_cast<T *>(c),
          static_cast<const T *>(bias), static_cast<T *>(pre), count, n,
          activation);
  });
  MPCRT_CUDA_LAUNCHED("fused_matmul epilogue");
}

void unary(mpcrt_dtype dtype, mpcrt_unary_op op, const void *input, void *out,
           int64_t count) {
  if (count <= 0)
    return;
  dispatch(dtype, [&](auto *t) {
    using T = MPCRT_TYPE(t);
    if (!launchFixedUnary(op, false, static_cast<const T *>(input),
                          static_cast<const T *>(nullptr),
                          static_cast<T *>(out), count))
      unaryKernel<T><<<blocksFor(count), kThreads, 0, stream()>>>(
          op, static_cast<const T *>(input), static_cast<T *>(out), count);
  });
  MPCRT_CUDA_LAUNCHED("unary");
}

void unaryGrad(mpcrt_dtype dtype, mpcrt_unary_op op, const void *grad,
               const void *saved, void *out, int64_t count) {
  if (count <= 0)
    return;
  dispatch(dtype, [&](auto *t) {
    using T = MPCRT_TYPE(t);
    if (!launchFixedUnary(op, true, static_cast<const T *>(grad),
                          static_cast<const T *>(saved), static_cast<T *>(out),
                          count))
      unaryGradKernel<T><<<blocksFor(count), kThreads, 0, stream()>>>(
          op, static_cast<const T *>(grad), static_cast<const T *>(saved),
          static_cast<T *>(out), count);
  });
  MPCRT_CUDA_LAUNCHED("unary_grad");
}

void unaryGradOfProduct(mpcrt_dtype dtype, mpcrt_unary_op op,
                        const float *product, const void *saved, void *out,
                        int64_t count) {
  if (count <= 0)
    return;
  dispatch(dtype, [&](auto *t) {
    using T = MPCRT_TYPE(t);
    unaryGradKernel<T, float><<<blocksFor(count), kThreads, 0, stream()>>>(
        op, product, static_cast<const T *>(saved), static_cast<T *>(out),
        count);
  });
  MPCRT_CUDA_LAUNCHED("matmul_activation_grad epilogue");
}

void reduce(mpcrt_dtype dtype, mpcrt_reduce_op op, const void *input, void *out,
            int64_t outer, int64_t reduced, int64_t inner) {
  if (outer * inner == 0)
    return;
  dispatch(dtype, [&](auto *t) {
    using T = MPCRT_TYPE(t);
    using A = typename Storage<T>::Acc;
    ColumnPlan plan = planColumns<T>(outer, reduced, inner);
    // Few long rows: segments of at least 2048 elements, enough of them
    // for about 2048 blocks (the cut depends on the shape only, so the
    // result is the same on every GPU).
    int64_t segments = inner == 1 ? std::min((2048 + outer - 1) / outer,
                                             (reduced + 2047) / 2048)
                                  : 1;
    if (segments > 1) {
      int64_t segment = (reduced + segments - 1) / segments;
      segments = (reduced + segment - 1) / segment;
      auto *partials = reinterpret_cast<A *>(
          scratchF32(outer * segments * int64_t(sizeof(A) / 4)));
      reduceRowsKernel<T, A><<<dim3(static_cast<unsigned>(outer),
                                    static_cast<unsigned>(segments)),
                               kThreads, 0, stream()>>>(
          op, static_cast<const T *>(input), partials, reduced, segment, 0);
      reduceRowsKernel<A, T>
          <<<static_cast<unsigned>(outer), kThreads, 0, stream()>>>(
              op, partials, static_cast<T *>(out), segments, segments, reduced);
    } else if (inner == 1 && reduced >= 64 && outer < (int64_t(1) << 31)) {
      reduceRowsKernel<T, T>
          <<<static_cast<unsigned>(outer), kThreads, 0, stream()>>>(
              op, static_cast<const T *>(input), static_cast<T *>(out), reduced,
              reduced, reduced);
    } else if (plan.chunks > 0 && (inner >= 32 || plan.chunks > 1)) {
      auto *partials = reinterpret_cast<Partial<A, 1> *>(
          scratchF32((partialBytes<A, 1>(plan) + 3) / 4));
      ReduceTerm<T> term{static_cast<const T *>(input), reduced, inner};
      StoreReduced<T> finish{static_cast<T *>(out), inner, reduced,
                             op == MPCRT_REDUCE_MEAN};
      if (op == MPCRT_REDUCE_MAX)
        reduceColumnsOf(plan, term, MaxOf<A>{}, Partial<A, 1>{{A(-INFINITY)}},
                        finish, partials);
      else
        reduceColumnsOf(plan, term, SumOf<A, 1>{}, Partial<A, 1>{{A(0)}},
                        finish, partials);
    } else {
      reduceColumnsKernel<T>
          <<<blocksFor(outer * inner), kThreads, 0, stream()>>>(
              op, static_cast<const T *>(input), static_cast<T *>(out), outer,
              reduced, inner);
    }
  });
  MPCRT_CUDA_LAUNCHED("reduce");
}

void sumsOfNoRows(void *sums, const void *addend, int64_t bytes) {
  if (addend)
    copy(sums, addend, bytes);
  else
    zero(sums, bytes);
}

namespace {
/// Column sums stored as G; with `addend`, each rounded to G, added to the
/// addend's element and rounded again (a separate add's values).
template <typename G, typename A> struct StoreSums {
  G *out;
  const G *addend;
  __device__ void operator()(int64_t, int64_t j, const Partial<A, 1> &s) const {
    using S = Storage<G>;
    out[j] = addend ? storeAdded(addend[j], s.v[0]) : S::store(s.v[0]);
  }
};
} // namespace

void columnSums(mpcrt_dtype in, mpcrt_dtype out, const void *input, void *sums,
                int64_t rows, int64_t cols, const void *addend) {
  if (cols == 0)
    return;
  if (rows == 0)
    return sumsOfNoRows(sums, addend, cols * bytesOf(out));
  dispatch(in, [&](auto *t) {
    using T = MPCRT_TYPE(t);
    using A = typename Storage<T>::Acc;
    ColumnPlan plan = planColumns<T>(1, rows, cols);
    auto *partials = reinterpret_cast<Partial<A, 1> *>(
        scratchF32((partialBytes<A, 1>(plan) + 3) / 4));
    ReduceTerm<T> term{static_cast<const T *>(input), rows, cols};
    auto run = [&](auto finish) {
      reduceColumnsOf(plan, term, SumOf<A, 1>{}, Partial<A, 1>{{A(0)}}, finish,
                      partials);
    };
    if (out == in)
      run(StoreSums<T, A>{static_cast<T *>(sums),
                          static_cast<const T *>(addend)});
    else if constexpr (std::is_same_v<A, float>)
      run(StoreSums<float, A>{static_cast<float *>(sums),
                              static_cast<const float *>(addend)});
  });
  MPCRT_CUDA_LAUNCHED("column_sums");
}

void reduceMaxBackward(mpcrt_dtype dtype, const void *grad, const void *input,
                       const void *max, void *gradInput, int64_t outer,
                       int64_t reduced, int64_t inner) {
  if (outer * inner == 0)
    return;
  dispatch(dtype, [&](auto *t) {
    using T = MPCRT_TYPE(t);
    reduceMaxBackwardKernel<T>
        <<<blocksFor(outer * inner), kThreads, 0, stream()>>>(
            static_cast<const T *>(grad), static_cast<const T *>(input),
            static_cast<const T *>(max), static_cast<T *>(gradInput), outer,
            reduced, inner);
  });
  MPCRT_CUDA_LAUNCHED("reduce_max_backward");
}

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
    // One block per row, then one block for the sum (the row terms in the
    // f32 scratch buffer; f64 terms take two of its elements each).
    auto *terms = reinterpret_cast<A *>(
        scratchF32((rows > 0 ? rows : 1) * int64_t(sizeof(A) / 4)));
    crossEntropyRowsKernel<T, A><<<blocksFor(rows, 1), kThreads, 0, stream()>>>(
        static_cast<const T *>(logits), labels, labelBits, terms, rows, classes,
        ignored, smoothing);
    crossEntropySumKernel<T, A><<<1, kThreads, 0, stream()>>>(
        terms, labels, labelBits, static_cast<T *>(loss), rows, classes, mean,
        ignored, &deviceErrors()->label);
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
        <<<static_cast<unsigned>(rows), kThreads, 0, stream()>>>(
            static_cast<const T *>(gradLoss), static_cast<const T *>(logits),
            labels, labelBits, static_cast<T *>(gradLogits), classes, rows,
            mean, ignored, smoothing, counted, &deviceErrors()->label);
  });
  MPCRT_CUDA_LAUNCHED("cross_entropy_backward");
}

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
/// where not null.
template <typename T, typename Stat>
void layerNormParamGrads(const T *dy, const T *x, const Stat *mean,
                         const Stat *rstd, mpcrt_dtype paramDtype,
                         void *gradGamma, void *gradBeta,
                         const void *gammaAddend, const void *betaAddend,
                         int64_t rows, int64_t cols) {
  using A = typename Storage<T>::Acc;
  ColumnPlan plan = planColumns<T>(1, rows, cols);
  auto *partials = reinterpret_cast<Partial<A, 2> *>(
      scratchF32((partialBytes<A, 2>(plan) + 3) / 4));
  reduceColumnsOf(plan, LayerNormParamTerms<T, Stat>{dy, x, mean, rstd, cols},
                  SumOf<A, 2>{}, Partial<A, 2>{{A(0), A(0)}},
                  StoreParamGrads<A>{paramDtype, gradGamma, gradBeta,
                                     gammaAddend, betaAddend},
                  partials);
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
/// layerNormBackwardSummed where it can take the parameter sums, else the
/// row kernel and the column reduction (layerNormParamGrads).
template <typename T, bool W, bool V, typename Stat, typename Emits>
void layerNormBackwardOf(const T *dy, const T *x, const Stat *mean,
                         const Stat *rstd, mpcrt_dtype paramDtype,
                         const void *gamma, Emits emits, void *gradGamma,
                         void *gradBeta, const void *gammaAddend,
                         const void *betaAddend, int64_t rows, int64_t cols,
                         unsigned grid) {
  if constexpr (kRowParamSums<T, W, V>)
    if (rowSums())
      return layerNormBackwardSummed(dy, x, mean, rstd, paramDtype, gamma,
                                     emits, gradGamma, gradBeta, gammaAddend,
                                     betaAddend, rows, cols);
  layerNormBackwardKernel<T, Stat, W, V><<<grid, kThreads, 0, stream()>>>(
      dy, x, mean, rstd, paramDtype, gamma, emits, rows, cols);
  layerNormParamGrads(dy, x, mean, rstd, paramDtype, gradGamma, gradBeta,
                      gammaAddend, betaAddend, rows, cols);
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
                          double dropoutP, uint64_t seed, const int64_t *step) {
  if (rows == 0)
    return paramGradsOfNoRows(paramDtype, gradGamma, gradBeta, gammaAddend,
                              betaAddend, cols);
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
            layerNormBackwardOf<T, W, V>(dy, x, m, s, paramDtype, gamma, emits,
                                         gradGamma, gradBeta, gammaAddend,
                                         betaAddend, rows, cols, grid);
          });
    });
  });
  MPCRT_CUDA_LAUNCHED("add_layer_norm_backward");
}

} // namespace mpcrt::cuda
