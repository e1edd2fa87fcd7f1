//===- Kernels.cpp - the CPU reference kernels ----------------------------===//
//
// These define what every backend must compute. Each kernel is one
// template over the storage type; results are accumulated in
// Storage<T>::Acc (f32 for f16/bf16/f32, f64 for f64) and rounded once when
// stored. Matrix products run in OpenBLAS on operands widened exactly to
// the accumulation type (Blas.h).
//
//===----------------------------------------------------------------------===//

#include "Blas.h"
#include "Formulas.h"
#include "Parallel.h"
#include "Softmax.h"
#include "Storage.h"
#include "mpc/Runtime/Report.h"
#include "mpc/Runtime/mpcrt.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <type_traits>

using namespace mpcrt;

extern "C" {

uint16_t mpcrt_f32_to_f16(float value) { return f32ToF16(value); }
float mpcrt_f16_to_f32(uint16_t bits) { return f16ToF32(bits); }
uint16_t mpcrt_f32_to_bf16(float value) { return f32ToBF16(value); }
float mpcrt_bf16_to_f32(uint16_t bits) { return bf16ToF32(bits); }

} // extern "C"

namespace {

/// No epilogue: the product is rounded as it is.
struct NoEpilogue {};

/// Batched C = epilogue(op(A) op(B)) in BLAS (Blas.h), the epilogue (if
/// any) applied to the unrounded f32 (f64) element `i` of batch `p`,
/// `epilogue(v, p, i)`, before the one rounding. With `addend` (C's shape
/// and type; it may be C itself), C = op(A) op(B) + addend, the addend
/// added to the unrounded sum. A batch stride of 0 broadcasts that
/// operand. O, the result's type, is T or the accumulation type.
template <typename T, typename O = T, typename Epilogue = NoEpilogue>
void matmul(const T *a, int64_t aStride, const T *b, int64_t bStride, O *c,
            int64_t batch, int64_t m, int64_t n, int64_t k, bool transA,
            bool transB, Epilogue epilogue = {}, const O *addend = nullptr) {
  using S = Storage<T>;
  using SO = Storage<O>;
  using Acc = typename S::Acc;
  static_assert(std::is_same_v<typename SO::Acc, Acc>);
  constexpr bool hasEpilogue = !std::is_same_v<Epilogue, NoEpilogue>;
  if (batch == 0 || m == 0 || n == 0)
    return;
  int64_t lda = transA ? m : k, ldb = transB ? k : n;
  // A stack of row-major A against one B: one product of batch*m rows.
  if (bStride == 0 && !transA && aStride == m * k && batch > 1) {
    m *= batch;
    batch = 1;
  }
  const Acc *bw = bStride == 0 ? widen(b, k * n, 1) : nullptr;
  for (int64_t p = 0; p < batch; ++p) {
    const Acc *ap = widen(a + p * aStride, m * k, 0);
    const Acc *bp = bw ? bw : widen(b + p * bStride, k * n, 1);
    O *cp = c + p * m * n;
    const O *addp = addend ? addend + p * m * n : nullptr;
    if constexpr (std::is_same_v<T, Acc> && std::is_same_v<O, Acc>) {
      // BLAS adds the addend itself: C holds it, beta = 1.
      if (addp && addp != cp)
        std::copy(addp, addp + m * n, cp);
      gemm(transA, transB, m, n, k, ap, lda, bp, ldb, Acc(addp ? 1 : 0), cp, n);
      if constexpr (hasEpilogue)
        parallelFor(m, grainFor(4 * n), [&](int64_t r0, int64_t r1) {
          for (int64_t i = r0 * n; i < r1 * n; ++i)
            cp[i] = epilogue(cp[i], p, i);
        });
    } else {
      Acc *out = scratch<Acc>(2, m * n);
      gemm(transA, transB, m, n, k, ap, lda, bp, ldb, Acc(0), out, n);
      parallelFor(m, grainFor(4 * n), [&](int64_t r0, int64_t r1) {
        for (int64_t i = r0 * n; i < r1 * n; ++i) {
          Acc v = addp ? out[i] + SO::load(addp[i]) : out[i];
          if constexpr (hasEpilogue)
            cp[i] = SO::store(epilogue(v, p, i));
          else
            cp[i] = SO::store(v);
        }
      });
    }
  }
}

/// mpcrt_strided_matmul: each matrix where its strides put it. The same
/// BLAS calls as matmul's on the same values: f32 and f64 matrices read
/// and written in place (BLAS's leading dimensions), f16/bf16 ones widened
/// into scratch rows and the f32 product rounded into C's rows.
template <typename T>
void stridedMatmul(const T *a, const int64_t *as, const T *b, const int64_t *bs,
                   T *c, const int64_t *cs, int64_t outer, int64_t inner,
                   int64_t m, int64_t n, int64_t k, bool transA, bool transB) {
  using S = Storage<T>;
  using Acc = typename S::Acc;
  if (m == 0 || n == 0)
    return;
  int64_t aRows = transA ? k : m, aCols = transA ? m : k;
  int64_t bRows = transB ? n : k, bCols = transB ? k : n;
  // Rows of `cols` elements `ld` apart, widened into dense scratch `slot`.
  auto dense = [](const T *x, int64_t rows, int64_t cols, int64_t ld,
                  int slot) {
    Acc *out = scratch<Acc>(slot, rows * cols);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < cols; ++j)
        out[r * cols + j] = S::load(x[r * ld + j]);
    return out;
  };
  for (int64_t p = 0; p < outer; ++p)
    for (int64_t q = 0; q < inner; ++q) {
      const T *ap = a + p * as[0] + q * as[1];
      const T *bp = b + p * bs[0] + q * bs[1];
      T *cp = c + p * cs[0] + q * cs[1];
      if constexpr (std::is_same_v<T, Acc>) {
        if (k == 0) {
          for (int64_t i = 0; i < m; ++i)
            std::fill(cp + i * cs[2], cp + i * cs[2] + n, Acc(0));
          continue;
        }
        gemm(transA, transB, m, n, k, ap, as[2], bp, bs[2], Acc(0), cp, cs[2]);
      } else {
        const Acc *aw = dense(ap, aRows, aCols, as[2], 0);
        const Acc *bw = dense(bp, bRows, bCols, bs[2], 1);
        Acc *out = scratch<Acc>(2, m * n);
        if (k == 0)
          std::fill(out, out + m * n, Acc(0));
        else
          gemm(transA, transB, m, n, k, aw, aCols, bw, bCols, Acc(0), out, n);
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j)
            cp[i * cs[2] + j] = S::store(out[i * n + j]);
      }
    }
}

/// act(op(A) op(B) + bias), the bias and activation applied to the f32
/// sum; `pre`, when given, gets the sum before the activation.
template <typename T, typename O>
void fusedMatmul(const void *a, int64_t aStride, const void *b, int64_t bStride,
                 const void *biasPtr, void *c, void *prePtr, int64_t batch,
                 int64_t m, int64_t n, int64_t k, bool transA, bool transB,
                 int32_t activation) {
  using SO = Storage<O>;
  using Acc = typename SO::Acc;
  const O *bias = static_cast<const O *>(biasPtr);
  O *pre = static_cast<O *>(prePtr);
  int64_t mn = m * n;
  auto epilogue = [&](Acc v, int64_t p, int64_t i) {
    v += SO::load(bias[i % n]);
    if (pre)
      pre[p * mn + i] = SO::store(v);
    if (activation != MPCRT_ACTIVATION_NONE)
      v = formulas::unary(static_cast<mpcrt_unary_op>(activation), v);
    return v;
  };
  matmul(static_cast<const T *>(a), aStride, static_cast<const T *>(b), bStride,
         static_cast<O *>(c), batch, m, n, k, transA, transB, epilogue);
}

/// op(A) op(B) + addend, the addend added to the f32 product.
template <typename T, typename O>
void matmulAdd(const void *a, int64_t aStride, const void *b, int64_t bStride,
               const void *addend, void *c, int64_t batch, int64_t m, int64_t n,
               int64_t k, bool transA, bool transB) {
  matmul(static_cast<const T *>(a), aStride, static_cast<const T *>(b), bStride,
         static_cast<O *>(c), batch, m, n, k, transA, transB, NoEpilogue{},
         static_cast<const O *>(addend));
}

/// op(A) op(B) * act'(saved), the derivative applied to the f32 product.
template <typename T, typename O>
void matmulActivationGrad(const void *a, int64_t aStride, const void *b,
                          int64_t bStride, const void *savedPtr, void *c,
                          int64_t batch, int64_t m, int64_t n, int64_t k,
                          bool transA, bool transB, int32_t activation) {
  using SO = Storage<O>;
  using Acc = typename SO::Acc;
  const O *saved = static_cast<const O *>(savedPtr);
  auto op = static_cast<mpcrt_unary_op>(activation);
  int64_t mn = m * n;
  auto epilogue = [&](Acc v, int64_t p, int64_t i) {
    return v * formulas::derivative(op, SO::load(saved[p * mn + i]));
  };
  matmul(static_cast<const T *>(a), aStride, static_cast<const T *>(b), bStride,
         static_cast<O *>(c), batch, m, n, k, transA, transB, epilogue);
}

/// The column sums of B [k, n] in G (T or the accumulation type), each a
/// sum over the rows in order, as mpc.reduce_sum takes it; with `addend`,
/// each sum rounded to G added to it and rounded again (a separate add's
/// values).
template <typename T, typename G>
void biasGradSums(const void *b, const void *addendPtr, void *biasGrad,
                  int64_t n, int64_t k) {
  using S = Storage<T>;
  using SG = Storage<G>;
  using Acc = typename S::Acc;
  static_assert(std::is_same_v<typename SG::Acc, Acc>);
  const T *bt = static_cast<const T *>(b);
  const G *addend = static_cast<const G *>(addendPtr);
  G *out = static_cast<G *>(biasGrad);
  constexpr int64_t kBlock = 256;
  parallelFor((n + kBlock - 1) / kBlock, grainFor(k * kBlock),
              [&](int64_t q0, int64_t q1) {
                Acc acc[kBlock];
                for (int64_t q = q0; q < q1; ++q) {
                  int64_t j0 = q * kBlock, width = std::min(kBlock, n - j0);
                  std::fill_n(acc, width, Acc(0));
                  for (int64_t r = 0; r < k; ++r)
                    for (int64_t j = 0; j < width; ++j)
                      acc[j] += S::load(bt[r * n + j0 + j]);
                  for (int64_t j = 0; j < width; ++j)
                    out[j0 + j] = addend ? storeAdded(addend[j0 + j], acc[j])
                                         : SG::store(acc[j]);
                }
              });
}

/// Softmax (or log-softmax) of rows of scale * input; input and output may
/// differ in type (mpc.softmax between f16/bf16 and f32): computed in their
/// CommonAcc, the result rounded once. Scale 1 is exact.
template <typename TI, typename TO = TI>
void softmax(const TI *input, TO *output, int64_t rows, int64_t cols, bool log,
             double scale = 1) {
  using SO = Storage<TO>;
  using Acc = CommonAcc<TI, TO>;
  Acc s = static_cast<Acc>(scale);
  parallelFor(rows, grainFor(8 * cols), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      SoftmaxRow<Acc, TI> row(input + r * cols, cols, s);
      TO *out = output + r * cols;
      Acc logSum = std::log(row.sum);
      for (int64_t c = 0; c < cols; ++c)
        out[c] = SO::store(log ? row.shifted(c) - logSum : row.probability(c));
    }
  });
}

/// The gradient of softmax (or log-softmax) of scale * x from its output,
/// times scale; the output gradient, the output and the input gradient may
/// differ in type.
template <typename TG, typename TY = TG, typename TX = TG>
void softmaxBackward(const TG *grad, const TY *output, TX *gradInput,
                     int64_t rows, int64_t cols, bool log, double scale = 1) {
  using SG = Storage<TG>;
  using SY = Storage<TY>;
  using SX = Storage<TX>;
  using Acc = CommonAcc<TG, TY, TX>;
  Acc s = static_cast<Acc>(scale);
  parallelFor(rows, grainFor(6 * cols), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const TG *dy = grad + r * cols;
      const TY *y = output + r * cols;
      // softmax: dx = y * (dy - sum(dy * y)); log-softmax: dx = dy -
      // exp(y) * sum(dy).
      Acc sum = 0;
      for (int64_t c = 0; c < cols; ++c)
        sum += log ? Acc(SG::load(dy[c]))
                   : Acc(SG::load(dy[c])) * Acc(SY::load(y[c]));
      for (int64_t c = 0; c < cols; ++c) {
        Acc d = SG::load(dy[c]), v = SY::load(y[c]);
        gradInput[r * cols + c] =
            SX::store(s * (log ? d - std::exp(v) * sum : v * (d - sum)));
      }
    }
  });
}

} // namespace

extern "C" {

void mpcrt_cast(mpcrt_dtype from, const void *input, mpcrt_dtype to,
                void *output, int64_t count) {
  parallelFor(count, grainFor(8), [&](int64_t begin, int64_t end) {
    // The casts around f32 ops at O1/O2 without the per-element switch;
    // the same roundings as storeAny (an f32 value is its own odd rounding).
    if (from == MPCRT_F32 && (to == MPCRT_F16 || to == MPCRT_BF16)) {
      const float *in = static_cast<const float *>(input);
      uint16_t *out = static_cast<uint16_t *>(output);
      for (int64_t i = begin; i < end; ++i)
        out[i] = to == MPCRT_F16 ? f32ToF16(in[i]) : f32ToBF16(in[i]);
      return;
    }
    if (to == MPCRT_F32 && (from == MPCRT_F16 || from == MPCRT_BF16)) {
      const uint16_t *in = static_cast<const uint16_t *>(input);
      float *out = static_cast<float *>(output);
      for (int64_t i = begin; i < end; ++i)
        out[i] = from == MPCRT_F16 ? f16ToF32(in[i]) : bf16ToF32(in[i]);
      return;
    }
    for (int64_t i = begin; i < end; ++i)
      storeAny(to, output, i, loadAny(from, input, i));
  });
}

/// kernel<T, O> for the type pairs of the epilogue GEMMs: the operands'
/// type, or f32 results of f16/bf16 operands.
#define MPCRT_EPILOGUE_DISPATCH(NAME, KERNEL, ...)                             \
  do {                                                                         \
    if (in == out)                                                             \
      return dispatch(in, [&](auto *t) {                                       \
        using T = std::remove_pointer_t<decltype(t)>;                          \
        KERNEL<T, T>(__VA_ARGS__);                                             \
      });                                                                      \
    if (out == MPCRT_F32 && in == MPCRT_F16)                                   \
      return KERNEL<F16, float>(__VA_ARGS__);                                  \
    if (out == MPCRT_F32 && in == MPCRT_BF16)                                  \
      return KERNEL<BF16, float>(__VA_ARGS__);                                 \
    mpcrt::errors::reportError("" NAME ": unsupported types\n");               \
    std::exit(1);                                                              \
  } while (false)

void mpcrt_cast_i32(const int32_t *input, mpcrt_dtype to, void *output,
                    int64_t count) {
  parallelFor(count, grainFor(8), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      if (to == MPCRT_F64)
        static_cast<double *>(output)[i] = input[i];
      else
        storeAny(to, output, i, static_cast<float>(input[i]));
    }
  });
}

void mpcrt_fused_matmul(mpcrt_dtype in, mpcrt_dtype out, const void *a,
                        int64_t a_batch_stride, const void *b,
                        int64_t b_batch_stride, const void *bias, void *c,
                        void *pre, int64_t batch, int64_t m, int64_t n,
                        int64_t k, int32_t trans_a, int32_t trans_b,
                        int32_t activation) {
  MPCRT_EPILOGUE_DISPATCH("mpcrt_fused_matmul", fusedMatmul, a, a_batch_stride,
                          b, b_batch_stride, bias, c, pre, batch, m, n, k,
                          trans_a != 0, trans_b != 0, activation);
}

void mpcrt_strided_matmul(mpcrt_dtype dtype, const void *a,
                          const int64_t *a_strides, const void *b,
                          const int64_t *b_strides, void *c,
                          const int64_t *c_strides, int64_t outer,
                          int64_t inner, int64_t m, int64_t n, int64_t k,
                          int32_t trans_a, int32_t trans_b) {
  dispatch(dtype, [&](auto *t) {
    using T = std::remove_pointer_t<decltype(t)>;
    stridedMatmul(static_cast<const T *>(a), a_strides,
                  static_cast<const T *>(b), b_strides, static_cast<T *>(c),
                  c_strides, outer, inner, m, n, k, trans_a != 0, trans_b != 0);
  });
}

void mpcrt_matmul_add(mpcrt_dtype in, mpcrt_dtype out, const void *a,
                      int64_t a_batch_stride, const void *b,
                      int64_t b_batch_stride, const void *addend, void *c,
                      int64_t batch, int64_t m, int64_t n, int64_t k,
                      int32_t trans_a, int32_t trans_b) {
  MPCRT_EPILOGUE_DISPATCH("mpcrt_matmul_add", matmulAdd, a, a_batch_stride, b,
                          b_batch_stride, addend, c, batch, m, n, k,
                          trans_a != 0, trans_b != 0);
}

void mpcrt_matmul_activation_grad(mpcrt_dtype in, mpcrt_dtype out,
                                  const void *a, int64_t a_batch_stride,
                                  const void *b, int64_t b_batch_stride,
                                  const void *saved, void *c, int64_t batch,
                                  int64_t m, int64_t n, int64_t k,
                                  int32_t trans_a, int32_t trans_b,
                                  int32_t activation) {
  MPCRT_EPILOGUE_DISPATCH("mpcrt_matmul_activation_grad", matmulActivationGrad,
                          a, a_batch_stride, b, b_batch_stride, saved, c, batch,
                          m, n, k, trans_a != 0, trans_b != 0, activation);
}

} // extern "C"

// The type pairs are the epilogues'.
void mpcrt::columnSums(mpcrt_dtype in, mpcrt_dtype out, const void *b,
                       const void *addend, void *sums, int64_t n, int64_t k) {
  MPCRT_EPILOGUE_DISPATCH("column sums", biasGradSums, b, addend, sums, n, k);
}

extern "C" {

void mpcrt_column_sums(mpcrt_dtype in, mpcrt_dtype out, int64_t count,
                       const void *const *inputs, const void *const *addends,
                       void *const *sums, int64_t rows, int64_t cols) {
  for (int64_t i = 0; i < count; ++i)
    columnSums(in, out, inputs[i], addends ? addends[i] : nullptr, sums[i],
               cols, rows);
}

void mpcrt_matmul_bias_grad(mpcrt_dtype in, mpcrt_dtype out, mpcrt_dtype grad,
                            const void *a, const void *b, const void *addend,
                            void *c, const void *bias_addend, void *bias_grad,
                            int64_t m, int64_t n, int64_t k, int32_t trans_a,
                            int32_t sums_of_a) {
  if (sums_of_a && !trans_a) {
    mpcrt::errors::reportError("mpcrt_matmul_bias_grad: the sums of A need "
                               "A transposed ([k, m])\n");
    std::exit(1);
  }
  if (addend)
    mpcrt_matmul_add(in, out, a, 0, b, 0, addend, c, 1, m, n, k, trans_a, 0);
  else
    dispatch(in, [&](auto *t) {
      using T = std::remove_pointer_t<decltype(t)>;
      matmul(static_cast<const T *>(a), 0, static_cast<const T *>(b), 0,
             static_cast<T *>(c), 1, m, n, k, trans_a != 0, false);
    });
  // The sums of B's n columns, or of A's m ([k, m]).
  columnSums(in, grad, sums_of_a ? a : b, bias_addend, bias_grad,
             sums_of_a ? m : n, k);
}

void mpcrt_softmax_mixed(mpcrt_dtype in, const void *input, mpcrt_dtype out,
                         void *output, int64_t rows, int64_t cols, int32_t log,
                         double scale) {
  // One type (f64 too: a scale of its own), or several of f16, bf16, f32.
  if (in == out)
    return dispatch(in, [&](auto *t) {
      using T = std::remove_pointer_t<decltype(t)>;
      softmax(static_cast<const T *>(input), static_cast<T *>(output), rows,
              cols, log, scale);
    });
  dispatchMixable(in, [&](auto *i) {
    dispatchMixable(out, [&](auto *o) {
      using TI = std::remove_pointer_t<decltype(i)>;
      using TO = std::remove_pointer_t<decltype(o)>;
      softmax(static_cast<const TI *>(input), static_cast<TO *>(output), rows,
              cols, log, scale);
    });
  });
}

void mpcrt_softmax_backward_mixed(mpcrt_dtype grad, const void *grad_output,
                                  mpcrt_dtype out, const void *output,
                                  mpcrt_dtype result, void *grad_input,
                                  int64_t rows, int64_t cols, int32_t log,
                                  double scale) {
  if (grad == out && grad == result)
    return dispatch(grad, [&](auto *t) {
      using T = std::remove_pointer_t<decltype(t)>;
      softmaxBackward(static_cast<const T *>(grad_output),
                      static_cast<const T *>(output),
                      static_cast<T *>(grad_input), rows, cols, log, scale);
    });
  dispatchMixable(grad, [&](auto *g) {
    dispatchMixable(out, [&](auto *y) {
      dispatchMixable(result, [&](auto *x) {
        using TG = std::remove_pointer_t<decltype(g)>;
        using TY = std::remove_pointer_t<decltype(y)>;
        using TX = std::remove_pointer_t<decltype(x)>;
        softmaxBackward(static_cast<const TG *>(grad_output),
                        static_cast<const TY *>(output),
                        static_cast<TX *>(grad_input), rows, cols, log, scale);
      });
    });
  });
}

// One template, one instance per dtype: the ABI's raw uint16_t buffers are
// the F16/BF16 storage types bit for bit.
#define MPCRT_DEFINE(SUFFIX, ABI_T, T)                                         \
  void mpcrt_matmul_##SUFFIX(const ABI_T *a, int64_t a_batch_stride,           \
                             const ABI_T *b, int64_t b_batch_stride, ABI_T *c, \
                             int64_t batch, int64_t m, int64_t n, int64_t k,   \
                             int32_t trans_a, int32_t trans_b) {               \
    matmul(reinterpret_cast<const T *>(a), a_batch_stride,                     \
           reinterpret_cast<const T *>(b), b_batch_stride,                     \
           reinterpret_cast<T *>(c), batch, m, n, k, trans_a, trans_b);        \
  }                                                                            \
  void mpcrt_softmax_##SUFFIX(const ABI_T *input, ABI_T *output, int64_t rows, \
                              int64_t cols, int32_t log) {                     \
    softmax(reinterpret_cast<const T *>(input), reinterpret_cast<T *>(output), \
            rows, cols, log);                                                  \
  }                                                                            \
  void mpcrt_softmax_backward_##SUFFIX(                                        \
      const ABI_T *grad_output, const ABI_T *output, ABI_T *grad_input,        \
      int64_t rows, int64_t cols, int32_t log) {                               \
    softmaxBackward(reinterpret_cast<const T *>(grad_output),                  \
                    reinterpret_cast<const T *>(output),                       \
                    reinterpret_cast<T *>(grad_input), rows, cols, log);       \
  }
MPCRT_FOR_EACH_DTYPE(MPCRT_DEFINE)
#undef MPCRT_DEFINE

} // extern "C"
