//===- Elementwise.cu - elementwise ops, reductions -----------------------===//
//
// The CPU reference's formulas (lib/Runtime/CPU), one thread per element or
// one block per row: values are loaded into the accumulation type (f32, f64
// for f64), computed there and rounded once when stored. Row sums are
// reduced in a fixed tree order, so results are deterministic (but not in
// the reference's sequential order: they agree to rounding). Softmax and
// the losses are in Softmax.cu, the layer norms in LayerNorm.cu.
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
  MPCRT_KERNEL_PROLOGUE();
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
  MPCRT_KERNEL_PROLOGUE();
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
  MPCRT_KERNEL_PROLOGUE();
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
  MPCRT_KERNEL_PROLOGUE();
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
  MPCRT_KERNEL_PROLOGUE();
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
  MPCRT_KERNEL_PROLOGUE();
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
  MPCRT_KERNEL_PROLOGUE();
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
  MPCRT_KERNEL_PROLOGUE();
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

/// reduceRowsKernel's two launches over segments as one: block (row,
/// segment) reduces its segment into partials[row * segments + segment]
/// (segments: the grid's y), fences and counts itself in at the row's
/// counter in `arrivals`; the row's last block to arrive sets the counter
/// back to 0 and reduces the row's partials as the second launch does
/// (the same order: the same bits).
template <typename T>
__global__ void reduceRowSegmentsKernel(mpcrt_reduce_op op, const T *in,
                                        typename Storage<T>::Acc *partials,
                                        T *out, int64_t length, int64_t segment,
                                        unsigned *arrivals) {
  MPCRT_KERNEL_PROLOGUE();
  using A = typename Storage<T>::Acc;
  const T *row = in + blockIdx.x * length;
  const bool max = op == MPCRT_REDUCE_MAX;
  auto add = [&](A acc, A x) {
    return max ? (isnan(x) || x > acc ? x : acc) : acc + x;
  };
  int64_t first = blockIdx.y * segment, end = min(first + segment, length);
  A acc = max ? A(-INFINITY) : A(0);
  for (int64_t r = first + threadIdx.x; r < end; r += blockDim.x)
    acc = add(acc, Storage<T>::load(row[r]));
  acc = max ? blockReduce<A, true>(acc) : blockReduce<A>(acc);
  const unsigned segments = gridDim.y;
  A *mine = partials + int64_t(blockIdx.x) * segments;
  if (threadIdx.x == 0) {
    mine[blockIdx.y] = acc;
    __threadfence();
  }
  if (!arrivesLast(&arrivals[blockIdx.x], segments))
    return;
  acc = max ? A(-INFINITY) : A(0);
  for (int64_t r = threadIdx.x; r < segments; r += blockDim.x)
    acc = add(acc, __ldcg(&mine[r]));
  acc = max ? blockReduce<A, true>(acc) : blockReduce<A>(acc);
  if (threadIdx.x == 0)
    out[blockIdx.x] = Storage<T>::store(
        op == MPCRT_REDUCE_MEAN ? acc / static_cast<A>(length) : acc);
}

template <typename T>
__global__ void reduceMaxBackwardKernel(const T *grad, const T *in,
                                        const T *max, T *out, int64_t outer,
                                        int64_t reduced, int64_t inner) {
  MPCRT_KERNEL_PROLOGUE();
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

/// mpc.dropout_add: the dropout kernel's bits and rounding, then the
/// residual (if any) added and the sum rounded.
template <typename T>
__global__ void dropoutAddKernel(const T *x, const T *residual, T *y,
                                 int64_t count, double p, uint64_t seed,
                                 const int64_t *step) {
  MPCRT_KERNEL_PROLOGUE();
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

/// A reduction's element (o, r, j) of [outer, reduced, inner].
template <typename T> struct ReduceTerm {
  using Element = T;
  const T *in;
  int64_t reduced, inner;
  using A = typename Storage<T>::Acc;
  bool aligned() const { return alignedTo(in, 16); }
  template <int N>
  __device__ NoColumnValues column(int64_t, int64_t, bool) const {
    return {};
  }
  template <int N>
  __device__ void terms(int64_t o, int64_t r, int64_t j, bool whole,
                        NoColumnValues, Partial<A, 1> (&t)[N]) const {
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
  MPCRT_KERNEL_PROLOGUE();
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
  MPCRT_KERNEL_PROLOGUE();
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
  MPCRT_KERNEL_PROLOGUE();
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
      dim3 grid(static_cast<unsigned>(outer), static_cast<unsigned>(segments));
      if (reductionsInOneLaunch()) {
        reduceRowSegmentsKernel<T><<<grid, kThreads, 0, stream()>>>(
            op, static_cast<const T *>(input), partials, static_cast<T *>(out),
            reduced, segment, arrivalCounters(outer));
      } else {
        reduceRowsKernel<T, A><<<grid, kThreads, 0, stream()>>>(
            op, static_cast<const T *>(input), partials, reduced, segment, 0);
        reduceRowsKernel<A, T>
            <<<static_cast<unsigned>(outer), kThreads, 0, stream()>>>(
                op, partials, static_cast<T *>(out), segments, segments,
                reduced);
      }
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

namespace {
/// planColumns' target (columnPartialsTarget).
int64_t partialsTarget = 4096 * 32;
/// Whether reductions may run in one launch (reductionsInOneLaunch).
bool oneLaunch = true;
} // namespace

int64_t columnPartialsTarget() { return partialsTarget; }

bool reductionsInOneLaunch() { return oneLaunch; }

bool setReductionsInOneLaunch(bool on) { return std::exchange(oneLaunch, on); }

int columnReductionLaunches(mpcrt_dtype dtype, int64_t outer, int64_t rows,
                            int64_t cols) {
  int launches = 0;
  dispatch(dtype, [&](auto *t) {
    ColumnPlan p = planColumns<MPCRT_TYPE(t)>(outer, rows, cols);
    launches = p.chunks == 0 ? 0 : p.oneLaunch ? 1 : 2;
  });
  return launches;
}

int64_t setColumnPartialsTarget(int64_t partials) {
  return std::exchange(partialsTarget, std::max<int64_t>(partials, 1));
}

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

namespace {
/// The terms of a list of [rows, cols] arrays, array o at blockIdx.z:
/// its address chosen once per thread (column<N>), the rows' loads those
/// of ReduceTerm of that array.
template <typename T> struct ListTerms {
  using Element = T;
  using A = typename Storage<T>::Acc;
  const T *in[kColumnSumsList];
  int count;
  int64_t cols;
  bool aligned() const {
    for (int i = 0; i < count; ++i)
      if (!alignedTo(in[i], 16))
        return false;
    return true;
  }
  struct Array {
    const T *in;
  };
  template <int N> __device__ Array column(int64_t o, int64_t, bool) const {
    const T *mine = in[0];
#pragma unroll
    for (int i = 1; i < kColumnSumsList; ++i)
      if (o == i)
        mine = in[i];
    return {mine};
  }
  template <int N>
  __device__ void terms(int64_t, int64_t r, int64_t j, bool whole, Array a,
                        Partial<A, 1> (&t)[N]) const {
    Vec<T, N> v = loadVec<N>(a.in, r * cols + j, whole);
#pragma unroll
    for (int k = 0; k < N; ++k)
      t[k] = {{Storage<T>::load(v.v[k])}};
  }
};

/// Array o's column sums stored as G in sums[o]; where addends[o] is not
/// null, each rounded to G, added to the addend's element and rounded
/// again (StoreSums').
template <typename G, typename A> struct StoreListSums {
  G *sums[kColumnSumsList];
  const G *addends[kColumnSumsList];
  __device__ void operator()(int64_t o, int64_t j,
                             const Partial<A, 1> &s) const {
    G *mine = sums[0];
    const G *addend = addends[0];
#pragma unroll
    for (int i = 1; i < kColumnSumsList; ++i)
      if (o == i) {
        mine = sums[i];
        addend = addends[i];
      }
    mine[j] =
        addend ? storeAdded(addend[j], s.v[0]) : Storage<G>::store(s.v[0]);
  }
};
} // namespace

void columnSumsOfList(mpcrt_dtype in, mpcrt_dtype out, int64_t count,
                      const void *const *inputs, void *const *sums,
                      int64_t rows, int64_t cols, const void *const *addends) {
  if (cols == 0 || count <= 0)
    return;
  if (rows == 0) {
    for (int64_t i = 0; i < count; ++i)
      sumsOfNoRows(sums[i], addends ? addends[i] : nullptr,
                   cols * bytesOf(out));
    return;
  }
  dispatch(in, [&](auto *t) {
    using T = MPCRT_TYPE(t);
    using A = typename Storage<T>::Acc;
    // Each array cut as columnSums cuts it alone (planColumns of one),
    // the arrays along the grid's z.
    ColumnPlan single = planColumns<T>(1, rows, cols);
    for (int64_t first = 0; first < count; first += kColumnSumsList) {
      int n =
          static_cast<int>(std::min<int64_t>(kColumnSumsList, count - first));
      ColumnPlan plan = single;
      plan.outer = n;
      auto *partials = reinterpret_cast<Partial<A, 1> *>(
          scratchF32((partialBytes<A, 1>(plan) + 3) / 4));
      ListTerms<T> terms{{}, n, cols};
      for (int i = 0; i < n; ++i)
        terms.in[i] = static_cast<const T *>(inputs[first + i]);
      auto run = [&](auto finish) {
        using G = std::remove_pointer_t<
            std::remove_reference_t<decltype(finish.sums[0])>>;
        for (int i = 0; i < n; ++i) {
          finish.sums[i] = static_cast<G *>(sums[first + i]);
          finish.addends[i] =
              addends ? static_cast<const G *>(addends[first + i]) : nullptr;
        }
        reduceColumnsOf(plan, terms, SumOf<A, 1>{}, Partial<A, 1>{{A(0)}},
                        finish, partials);
      };
      if (out == in)
        run(StoreListSums<T, A>{});
      else if constexpr (std::is_same_v<A, float>)
        run(StoreListSums<float, A>{});
    }
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

} // namespace mpcrt::cuda
