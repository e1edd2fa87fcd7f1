//===- Blas.h - matrix products through OpenBLAS ----------------*- C++ -*-===//
//
// The CPU backend's matrix products (matmul, the convolutions' GEMMs) run in
// OpenBLAS: f32 in sgemm, f64 in dgemm. f16/bf16 operands are widened
// exactly to f32 first, so every backend computes the same function (f32
// accumulation of exactly-rounded inputs); only the order of the summation
// is OpenBLAS's. OpenBLAS runs single-threaded: the backend's pool
// (Parallel.h) splits a product into blocks of rows or columns of the
// result, fixed by the sizes, so the same BLAS calls compute every element
// whatever the thread count (tested).
//
//===----------------------------------------------------------------------===//

#ifndef MPC_RUNTIME_CPU_BLAS_H
#define MPC_RUNTIME_CPU_BLAS_H

#include "Storage.h"

#include <cstdint>
#include <type_traits>
#include <vector>

namespace mpcrt {

/// C = op(A) op(B) + beta * C, row-major: op(A) is m x k (A is stored k x m
/// when transA), op(B) is k x n, C is m x n with row stride ldc. beta is 0
/// or 1; with beta 0, C is only written. Sizes beyond BLAS's 32-bit
/// integers take plain loops with the same accumulation type.
void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
          const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
          float *c, int64_t ldc);
void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
          const double *a, int64_t lda, const double *b, int64_t ldb,
          double beta, double *c, int64_t ldc);

/// The sums of the `n` columns of `b` (`k` rows of `in`) into `sums` of
/// `out` (`in` itself, or f32 for f16/bf16), each over the rows in order
/// in the accumulation type; with `addend` (of `out`), each sum rounded,
/// added to it and rounded again. mpcrt_matmul_bias_grad's bias sums.
void columnSums(mpcrt_dtype in, mpcrt_dtype out, const void *b,
                const void *addend, void *sums, int64_t n, int64_t k);

/// The number of threads of the CPU kernels.
int threadCount();
/// Sets it (at least 1).
void setThreadCount(int threads);

/// A per-thread scratch vector of at least `count` elements (grown, never
/// shrunk): the widened operands and f32 results of f16/bf16 kernels. Slot
/// tells apart the buffers one kernel needs at the same time.
template <typename T> T *scratch(int slot, int64_t count) {
  thread_local std::vector<T> buffers[4];
  std::vector<T> &buffer = buffers[slot];
  if (static_cast<int64_t>(buffer.size()) < count)
    buffer.resize(static_cast<size_t>(count));
  return buffer.data();
}

/// Widens `count` elements to the accumulation type (exact) into scratch
/// `slot`, or returns them as they are when they are stored in it.
template <typename T>
const typename Storage<T>::Acc *widen(const T *x, int64_t count, int slot) {
  using Acc = typename Storage<T>::Acc;
  if constexpr (std::is_same_v<T, Acc>) {
    return x;
  } else {
    Acc *out = scratch<Acc>(slot, count);
    for (int64_t i = 0; i < count; ++i)
      out[i] = Storage<T>::load(x[i]);
    return out;
  }
}

} // namespace mpcrt

#endif // MPC_RUNTIME_CPU_BLAS_H
