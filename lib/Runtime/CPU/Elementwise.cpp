//===- Elementwise.cpp - elementwise ops, reductions, cross-entropy -------===//
//
// Reference semantics, one template per op family. Values are loaded into
// the accumulation type (f32, or f64 for f64), computed there, and rounded
// once when stored.
//
//===----------------------------------------------------------------------===//

#include "Formulas.h"
#include "Parallel.h"
#include "Storage.h"
#include "mpc/Runtime/mpcrt.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

using namespace mpcrt;

namespace {

using formulas::binary;
using formulas::derivative;
using formulas::unary;

template <typename T>
void binaryKernel(mpcrt_binary_op op, const T *lhs, const int64_t *ls,
                  const T *rhs, const int64_t *rs, T *out, const int64_t *shape,
                  int32_t rank) {
  using S = Storage<T>;
  int64_t count = elementCount(shape, rank);
  // Both operands dense in the result's shape: no index walk.
  bool dense = true;
  int64_t stride = 1;
  for (int32_t d = rank - 1; d >= 0; stride *= shape[d], --d)
    dense &= shape[d] == 1 || (ls[d] == stride && rs[d] == stride);
  parallelFor(count, grainFor(8), [&](int64_t begin, int64_t end) {
    if (dense) {
      for (int64_t i = begin; i < end; ++i)
        out[i] = S::store(binary(op, S::load(lhs[i]), S::load(rhs[i])));
      return;
    }
    forEachStridedIn<2>(shape, rank, {ls, rs}, {0, 0}, begin, end,
                        [&](int64_t i, const int64_t *at) {
                          out[i] = S::store(binary(op, S::load(lhs[at[0]]),
                                                   S::load(rhs[at[1]])));
                        });
  });
}

/// Calls fn with the op as a compile-time constant, so that the loop fn
/// runs has no switch per element.
template <typename Fn> void withUnaryOp(mpcrt_unary_op op, Fn fn) {
  switch (op) {
#define MPCRT_UNARY_CASE(OP)                                                   \
  case OP:                                                                     \
    return fn(std::integral_constant<mpcrt_unary_op, OP>{});
    MPCRT_UNARY_CASE(MPCRT_NEG)
    MPCRT_UNARY_CASE(MPCRT_EXP)
    MPCRT_UNARY_CASE(MPCRT_LOG)
    MPCRT_UNARY_CASE(MPCRT_SQRT)
    MPCRT_UNARY_CASE(MPCRT_RSQRT)
    MPCRT_UNARY_CASE(MPCRT_TANH)
    MPCRT_UNARY_CASE(MPCRT_SIGMOID)
    MPCRT_UNARY_CASE(MPCRT_RELU)
    MPCRT_UNARY_CASE(MPCRT_GELU)
    MPCRT_UNARY_CASE(MPCRT_GELU_TANH)
    MPCRT_UNARY_CASE(MPCRT_SIN)
    MPCRT_UNARY_CASE(MPCRT_COS)
#undef MPCRT_UNARY_CASE
  }
  fn(op); // not an op: the formulas' NaN
}

template <typename T>
void unaryKernel(mpcrt_unary_op op, const T *in, T *out, int64_t count) {
  using S = Storage<T>;
  withUnaryOp(op, [&](auto o) {
    parallelFor(count, grainFor(16), [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        out[i] =
            S::store(unary(static_cast<mpcrt_unary_op>(o), S::load(in[i])));
    });
  });
}

template <typename T>
void unaryGradKernel(mpcrt_unary_op op, const T *grad, const T *saved, T *out,
                     int64_t count) {
  using S = Storage<T>;
  withUnaryOp(op, [&](auto o) {
    parallelFor(count, grainFor(16), [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        out[i] = S::store(
            S::load(grad[i]) *
            derivative(static_cast<mpcrt_unary_op>(o), S::load(saved[i])));
    });
  });
}

template <typename T>
void reduceKernel(mpcrt_reduce_op op, const T *in, T *out, int64_t outer,
                  int64_t reduced, int64_t inner) {
  using S = Storage<T>;
  using A = typename S::Acc;
  bool max = op == MPCRT_REDUCE_MAX;
  auto combine = [max](A acc, A x) {
    return max ? (std::isnan(x) || x > acc ? x : acc) : acc + x;
  };
  A start = max ? -std::numeric_limits<A>::infinity() : A(0);
  // Blocks of adjacent results (a run of j) walk the rows once, reading
  // contiguous elements. A sum adds its rows in order in chunks of
  // kChunk, and the chunks' sums pairwise (a binary counter: chunk c's
  // sum is added to the pending sums of the trailing one bits of c):
  // the rounding error is at most about (kChunk + log2(chunks)) units
  // of roundoff of the sum of magnitudes, not `reduced` units, in a
  // fixed order. A sum of at most kChunk rows is the plain sum in order.
  if (outer == 0 || inner == 0)
    return;
  constexpr int64_t kChunk = 64, kLevels = 64;
  int64_t block = std::min<int64_t>(inner, 256);
  int64_t perOuter = (inner + block - 1) / block;
  parallelFor(outer * perOuter, grainFor(reduced * block),
              [&](int64_t q0, int64_t q1) {
                A acc[256];
                std::vector<A> pending;
                for (int64_t q = q0; q < q1; ++q) {
                  int64_t o = q / perOuter, j0 = (q % perOuter) * block;
                  int64_t width = std::min(block, inner - j0);
                  auto addRows = [&](int64_t r0, int64_t r1) {
                    std::fill_n(acc, width, start);
                    for (int64_t r = r0; r < r1; ++r) {
                      const T *row = in + (o * reduced + r) * inner + j0;
                      for (int64_t j = 0; j < width; ++j)
                        acc[j] = combine(acc[j], S::load(row[j]));
                    }
                  };
                  if (max || reduced <= kChunk) {
                    addRows(0, reduced);
                  } else {
                    pending.resize(kLevels * width);
                    int64_t chunks = 0;
                    for (int64_t r = 0; r < reduced; r += kChunk, ++chunks) {
                      addRows(r, std::min(reduced, r + kChunk));
                      int64_t level = 0;
                      for (int64_t c = chunks; c & 1; c >>= 1, ++level)
                        for (int64_t j = 0; j < width; ++j)
                          acc[j] = pending[level * width + j] + acc[j];
                      std::copy_n(acc, width, &pending[level * width]);
                    }
                    // The pending sums, from the latest (lowest) level up.
                    bool first = true;
                    for (int64_t level = 0; level < kLevels; ++level) {
                      if (!((chunks >> level) & 1))
                        continue;
                      for (int64_t j = 0; j < width; ++j)
                        acc[j] = first ? pending[level * width + j]
                                       : pending[level * width + j] + acc[j];
                      first = false;
                    }
                  }
                  for (int64_t j = 0; j < width; ++j)
                    out[o * inner + j0 + j] =
                        S::store(op == MPCRT_REDUCE_MEAN
                                     ? acc[j] / static_cast<A>(reduced)
                                     : acc[j]);
                }
              });
}

/// log(sum(exp(row))) computed stably, and the row maximum.
template <typename T, typename A> A logSumExp(const T *row, int64_t classes) {
  using S = Storage<T>;
  A max = -std::numeric_limits<A>::infinity();
  for (int64_t c = 0; c < classes; ++c)
    max = std::fmax(max, S::load(row[c]));
  A sum = 0;
  for (int64_t c = 0; c < classes; ++c)
    sum += std::exp(S::load(row[c]) - max);
  return max + std::log(sum);
}

/// Whether label y of a row is a class; a row whose label is not
/// contributes nothing (no out-of-bounds read) and is reported by the
/// returned code, 1 + its position, as embedding indices are.
inline bool isClass(int64_t y, int64_t classes) {
  return y >= 0 && y < classes;
}

/// 1 + the first row whose label is neither a class nor ignored, or 0.
inline int64_t firstBadLabel(const void *labels, int32_t bits, int64_t rows,
                             int64_t classes, formulas::IgnoredLabel ignored) {
  for (int64_t r = 0; r < rows; ++r) {
    int64_t y = formulas::indexAt(labels, bits, r);
    if (!ignored(y) && !isClass(y, classes))
      return r + 1;
  }
  return 0;
}

/// The rows whose label is not ignored.
inline int64_t countedRows(const void *labels, int32_t bits, int64_t rows,
                           formulas::IgnoredLabel ignored) {
  int64_t counted = rows;
  if (ignored.ignores)
    for (int64_t r = 0; r < rows; ++r)
      counted -= ignored(formulas::indexAt(labels, bits, r));
  return counted;
}

template <typename T>
int64_t crossEntropy(const T *logits, const void *labels, int32_t bits, T *loss,
                     int64_t rows, int64_t classes, bool mean,
                     formulas::IgnoredLabel ignored, double smoothing) {
  using S = Storage<T>;
  using A = typename S::Acc;
  int64_t bad = firstBadLabel(labels, bits, rows, classes, ignored);
  formulas::LabelSmoothing<A> target(smoothing, classes);
  // Each row's term in parallel, summed pairwise in a fixed order: lse
  // minus the target-weighted logits (x[y] alone without smoothing).
  std::vector<A> terms(static_cast<size_t>(rows), A(0));
  parallelFor(rows, grainFor(4 * classes), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const T *row = logits + r * classes;
      int64_t y = formulas::indexAt(labels, bits, r);
      if (ignored(y) || !isClass(y, classes))
        continue;
      A picked = target.onLabel * S::load(row[y]);
      if (smoothing != 0) {
        A sum = 0;
        for (int64_t c = 0; c < classes; ++c)
          sum += S::load(row[c]);
        picked += target.onEach * sum;
      }
      terms[r] = logSumExp<T, A>(row, classes) - picked;
    }
  });
  A total = pairwiseSum(terms.data(), rows);
  // No row counted (an empty batch, every label ignored): loss 0, not the
  // 0/0 of a mean over no rows.
  int64_t counted = countedRows(labels, bits, rows, ignored);
  *loss =
      S::store(mean && counted > 0 ? total / static_cast<A>(counted) : total);
  return bad;
}

/// The first index of the row's maximum, NaN counting as the maximum (as
/// torch.argmax).
template <typename T> int64_t argmax(const T *row, int64_t classes) {
  using S = Storage<T>;
  int64_t best = 0;
  auto bestValue = S::load(row[0]);
  for (int64_t c = 1; c < classes && !std::isnan(bestValue); ++c) {
    auto v = S::load(row[c]);
    if (std::isnan(v) || v > bestValue) {
      best = c;
      bestValue = v;
    }
  }
  return best;
}

template <typename T>
void accuracy(const T *logits, const void *labels, int32_t bits, float *out,
              int64_t rows, int64_t classes, formulas::IgnoredLabel ignored) {
  int64_t correct = 0;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t y = formulas::indexAt(labels, bits, r);
    correct += !ignored(y) && argmax(logits + r * classes, classes) == y;
  }
  int64_t counted = countedRows(labels, bits, rows, ignored);
  *out = counted > 0 ? static_cast<float>(double(correct) / double(counted))
                     : 0.0f;
}

template <typename T>
int64_t crossEntropyBackward(const T *gradLoss, const T *logits,
                             const void *labels, int32_t bits, T *grad,
                             int64_t rows, int64_t classes, bool mean,
                             formulas::IgnoredLabel ignored, double smoothing) {
  using S = Storage<T>;
  using A = typename S::Acc;
  formulas::LabelSmoothing<A> target(smoothing, classes);
  int64_t counted = mean ? countedRows(labels, bits, rows, ignored) : 1;
  A scale = counted > 0 ? S::load(*gradLoss) / static_cast<A>(counted) : A(0);
  parallelFor(rows, grainFor(8 * classes), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const T *row = logits + r * classes;
      int64_t y = formulas::indexAt(labels, bits, r);
      if (ignored(y) || !isClass(y, classes)) {
        std::fill(grad + r * classes, grad + (r + 1) * classes, S::store(A(0)));
        continue;
      }
      A lse = logSumExp<T, A>(row, classes);
      for (int64_t c = 0; c < classes; ++c) {
        A p = std::exp(S::load(row[c]) - lse);
        grad[r * classes + c] = S::store(scale * (p - target.target(c == y)));
      }
    }
  });
  return firstBadLabel(labels, bits, rows, classes, ignored);
}

/// The adjoint of a max over the middle dimension: the gradient is shared
/// evenly by the elements equal to the maximum (as torch.amax).
template <typename T>
void reduceMaxBackward(const T *grad, const T *in, const T *max, T *out,
                       int64_t outer, int64_t reduced, int64_t inner) {
  using S = Storage<T>;
  using A = typename S::Acc;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      A m = S::load(max[o * inner + i]);
      int64_t ties = 0;
      for (int64_t r = 0; r < reduced; ++r)
        ties += S::load(in[(o * reduced + r) * inner + i]) == m;
      A share =
          ties ? S::load(grad[o * inner + i]) / static_cast<A>(ties) : A(0);
      for (int64_t r = 0; r < reduced; ++r) {
        int64_t at = (o * reduced + r) * inner + i;
        out[at] = S::store(S::load(in[at]) == m ? share : A(0));
      }
    }
}

/// The value at byte position `at` of an operand of `element` code, as a
/// double (exact for every type but i64 beyond 2^53, compared as integers
/// below).
double loadAs(int32_t element, const void *base, int64_t at) {
  switch (element) {
  case MPCRT_F16:
    return mpcrt_f16_to_f32(static_cast<const uint16_t *>(base)[at]);
  case MPCRT_BF16:
    return mpcrt_bf16_to_f32(static_cast<const uint16_t *>(base)[at]);
  case MPCRT_F32:
    return static_cast<const float *>(base)[at];
  case MPCRT_F64:
    return static_cast<const double *>(base)[at];
  case MPCRT_ELEMENT_I32:
    return static_cast<const int32_t *>(base)[at];
  default: // MPCRT_ELEMENT_BOOL
    return static_cast<const uint8_t *>(base)[at] != 0;
  }
}

} // namespace

extern "C" {

#define MPCRT_DEFINE(SUFFIX, ABI_T, T)                                         \
  void mpcrt_reduce_max_backward_##SUFFIX(                                     \
      const ABI_T *grad, const ABI_T *in, const ABI_T *max, ABI_T *out,        \
      int64_t outer, int64_t reduced, int64_t inner) {                         \
    reduceMaxBackward(reinterpret_cast<const T *>(grad),                       \
                      reinterpret_cast<const T *>(in),                         \
                      reinterpret_cast<const T *>(max),                        \
                      reinterpret_cast<T *>(out), outer, reduced, inner);      \
  }                                                                            \
  void mpcrt_binary_##SUFFIX(mpcrt_binary_op op, const ABI_T *lhs,             \
                             const int64_t *ls, const ABI_T *rhs,              \
                             const int64_t *rs, ABI_T *out,                    \
                             const int64_t *shape, int32_t rank) {             \
    binaryKernel(op, reinterpret_cast<const T *>(lhs), ls,                     \
                 reinterpret_cast<const T *>(rhs), rs,                         \
                 reinterpret_cast<T *>(out), shape, rank);                     \
  }                                                                            \
  void mpcrt_unary_##SUFFIX(mpcrt_unary_op op, const ABI_T *in, ABI_T *out,    \
                            int64_t count) {                                   \
    unaryKernel(op, reinterpret_cast<const T *>(in),                           \
                reinterpret_cast<T *>(out), count);                            \
  }                                                                            \
  void mpcrt_unary_grad_##SUFFIX(mpcrt_unary_op op, const ABI_T *grad,         \
                                 const ABI_T *saved, ABI_T *out,               \
                                 int64_t count) {                              \
    unaryGradKernel(op, reinterpret_cast<const T *>(grad),                     \
                    reinterpret_cast<const T *>(saved),                        \
                    reinterpret_cast<T *>(out), count);                        \
  }                                                                            \
  void mpcrt_reduce_##SUFFIX(mpcrt_reduce_op op, const ABI_T *in, ABI_T *out,  \
                             int64_t outer, int64_t reduced, int64_t inner) {  \
    reduceKernel(op, reinterpret_cast<const T *>(in),                          \
                 reinterpret_cast<T *>(out), outer, reduced, inner);           \
  }                                                                            \
  int64_t mpcrt_cross_entropy_##SUFFIX(                                        \
      const ABI_T *logits, const void *labels, int32_t bits, ABI_T *loss,      \
      int64_t rows, int64_t classes, int32_t mean, int32_t ignores,            \
      int64_t ignore_index, double label_smoothing) {                          \
    return crossEntropy(reinterpret_cast<const T *>(logits), labels, bits,     \
                        reinterpret_cast<T *>(loss), rows, classes, mean,      \
                        {ignores != 0, ignore_index}, label_smoothing);        \
  }                                                                            \
  int64_t mpcrt_cross_entropy_backward_##SUFFIX(                               \
      const ABI_T *grad_loss, const ABI_T *logits, const void *labels,         \
      int32_t bits, ABI_T *grad, int64_t rows, int64_t classes, int32_t mean,  \
      int32_t ignores, int64_t ignore_index, double label_smoothing) {         \
    return crossEntropyBackward(reinterpret_cast<const T *>(grad_loss),        \
                                reinterpret_cast<const T *>(logits), labels,   \
                                bits, reinterpret_cast<T *>(grad), rows,       \
                                classes, mean, {ignores != 0, ignore_index},   \
                                label_smoothing);                              \
  }                                                                            \
  void mpcrt_accuracy_##SUFFIX(                                                \
      const ABI_T *logits, const void *labels, int32_t bits, float *out,       \
      int64_t rows, int64_t classes, int32_t ignores, int64_t ignore_index) {  \
    accuracy(reinterpret_cast<const T *>(logits), labels, bits, out, rows,     \
             classes, {ignores != 0, ignore_index});                           \
  }
MPCRT_FOR_EACH_DTYPE(MPCRT_DEFINE)
#undef MPCRT_DEFINE

void mpcrt_compare(mpcrt_predicate predicate, int32_t element, const void *lhs,
                   const int64_t *ls, const void *rhs, const int64_t *rs,
                   uint8_t *out, const int64_t *shape, int32_t rank) {
  int64_t count = elementCount(shape, rank);
  parallelFor(count, grainFor(8), [&](int64_t begin, int64_t end) {
    forEachStridedIn<2>(
        shape, rank, {ls, rs}, {0, 0}, begin, end,
        [&](int64_t i, const int64_t *at) {
          if (element == MPCRT_ELEMENT_I64)
            out[i] = formulas::compare(
                predicate, static_cast<const int64_t *>(lhs)[at[0]],
                static_cast<const int64_t *>(rhs)[at[1]]);
          else
            out[i] = formulas::compare(predicate, loadAs(element, lhs, at[0]),
                                       loadAs(element, rhs, at[1]));
        });
  });
}

void mpcrt_where(int32_t bytes, const uint8_t *condition, const int64_t *cs,
                 const void *lhs, const int64_t *ls, const void *rhs,
                 const int64_t *rs, void *out, const int64_t *shape,
                 int32_t rank) {
  int64_t count = elementCount(shape, rank);
  const char *l = static_cast<const char *>(lhs);
  const char *r = static_cast<const char *>(rhs);
  char *o = static_cast<char *>(out);
  parallelFor(count, grainFor(4), [&](int64_t begin, int64_t end) {
    forEachStridedIn<3>(shape, rank, {cs, ls, rs}, {0, 0, 0}, begin, end,
                        [&](int64_t i, const int64_t *at) {
                          const char *from = condition[at[0]]
                                                 ? l + at[1] * bytes
                                                 : r + at[2] * bytes;
                          std::memcpy(o + i * bytes, from, bytes);
                        });
  });
}

} // extern "C"
