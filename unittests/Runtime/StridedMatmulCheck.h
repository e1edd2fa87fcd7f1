//===- StridedMatmulCheck.h - heads' products against float64 ---*- C++ -*-===//
//
// One check for every backend's mpcrt_strided_matmul (mpc.heads_matmul):
// fresh random rank-4 operands, exact in their storage type, each of a, b
// and the result stored [B, H, R, C] or heads-second ([B, R, H, C]), the
// backend's product held element by element to the one-rounding bound of
// a float64 reference. Every buffer starts one element past an allocation
// (no 16-byte alignment) and ends with a guard the product must not
// touch. The backend runs through a callback on host buffers (the CUDA
// test uploads and downloads).
//
//===----------------------------------------------------------------------===//

#ifndef MPC_UNITTESTS_RUNTIME_STRIDEDMATMULCHECK_H
#define MPC_UNITTESTS_RUNTIME_STRIDEDMATMULCHECK_H

#include "FusedMatmulCheck.h"

#include "mpc/Runtime/mpcrt.h"

#include "gtest/gtest.h"

#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <vector>

namespace mpcrt::test {

struct StridedMatmulShape {
  int64_t outer, inner, m, n, k;
  bool transA, transB, aBshd, bBshd, cBshd;
  // Each heads-second operand the first third of a packed [outer, rows, 3,
  // inner, cols] tensor (a packed projection's view, a packed gradient's
  // window): its rows 3 inner cols apart, the rest of the tensor not its.
  bool packed = false;
};

using Strides = std::array<int64_t, 3>;

/// Runs the backend on buffers whose operands start at element `offset`:
/// mpcrt_strided_matmul(dtype, a + offset, aStrides, b + offset, bStrides,
/// c + offset, cStrides, ...).
using StridedMatmulRun = std::function<void(
    const std::vector<uint8_t> &a, const Strides &aStrides,
    const std::vector<uint8_t> &b, const Strides &bStrides,
    std::vector<uint8_t> &c, const Strides &cStrides, int64_t offset)>;

/// The strides of [outer, inner] matrices of rows x cols, stored in order
/// or heads-second ([outer, rows, inner, cols]), as the lowering gives
/// them; heads-second inside rows `wide` times as long (a third of a
/// packed tensor: `wide` 3).
inline Strides stridesOf(int64_t inner, int64_t rows, int64_t cols, bool bshd,
                         int64_t wide = 1) {
  int64_t matrices = inner * rows * cols;
  return bshd ? Strides{wide * matrices, cols, wide * inner * cols}
              : Strides{matrices, rows * cols, cols};
}

/// op(A) op(B) of every matrix against float64: the accumulation error
/// gamma_k sum |a b| (u = 2^-24 in f32, 2^-53 in f64; Higham 3.1) and one
/// rounding to the type (its roundoff times |exact|, and half f16's
/// smallest subnormal).
inline void checkStridedMatmul(mpcrt_dtype d, const StridedMatmulShape &s,
                               std::mt19937 &rng, const StridedMatmulRun &run) {
  constexpr int64_t kOffset = 1, kGuard = 8;
  int64_t aRows = s.transA ? s.k : s.m, aCols = s.transA ? s.m : s.k;
  int64_t bRows = s.transB ? s.n : s.k, bCols = s.transB ? s.k : s.n;
  int64_t wide = s.packed ? 3 : 1;
  Strides as = stridesOf(s.inner, aRows, aCols, s.aBshd, wide),
          bs = stridesOf(s.inner, bRows, bCols, s.bBshd, wide),
          cs = stridesOf(s.inner, s.m, s.n, s.cBshd, wide);
  int64_t aCount = s.outer * s.inner * aRows * aCols * (s.aBshd ? wide : 1),
          bCount = s.outer * s.inner * bRows * bCols * (s.bBshd ? wide : 1),
          cCount = s.outer * s.inner * s.m * s.n * (s.cBshd ? wide : 1);
  std::vector<double> a, b, guard;
  std::vector<uint8_t> aBytes = randomOf(d, kOffset + aCount + kGuard, rng, a),
                       bBytes = randomOf(d, kOffset + bCount + kGuard, rng, b),
                       cBytes =
                           randomOf(d, kOffset + cCount + kGuard, rng, guard);
  run(aBytes, as, bBytes, bs, cBytes, cs, kOffset);
  std::vector<double> c = valuesOf(d, cBytes);
  for (int64_t i = 0; i < kOffset; ++i)
    ASSERT_EQ(c[i], guard[i]) << "element " << i << " before the result";
  for (int64_t i = 0; i < kGuard; ++i)
    ASSERT_EQ(c[kOffset + cCount + i], guard[kOffset + cCount + i])
        << "element " << i << " after the result";
  double u = d == MPCRT_F64 ? 0x1p-53 : 0x1p-24;
  double gamma = s.k * u / (1 - s.k * u);
  double rel = unitRoundoff(d), tiny = d == MPCRT_F16 ? 0x1p-25 : 0;
  auto at = [&](const Strides &st, int64_t p, int64_t q, int64_t r, int64_t j) {
    return kOffset + p * st[0] + q * st[1] + r * st[2] + j;
  };
  // What lies between C's rows (the rest of a packed tensor) untouched.
  std::vector<bool> result(c.size(), false);
  for (int64_t p = 0; p < s.outer; ++p)
    for (int64_t q = 0; q < s.inner; ++q)
      for (int64_t i = 0; i < s.m; ++i)
        for (int64_t j = 0; j < s.n; ++j)
          result[at(cs, p, q, i, j)] = true;
  for (size_t i = 0; i < c.size(); ++i)
    if (!result[i])
      ASSERT_EQ(c[i], guard[i]) << "element " << i << ", not C's";
  for (int64_t p = 0; p < s.outer; ++p)
    for (int64_t q = 0; q < s.inner; ++q)
      for (int64_t i = 0; i < s.m; ++i)
        for (int64_t j = 0; j < s.n; ++j) {
          double want = 0, abs = 0;
          for (int64_t l = 0; l < s.k; ++l) {
            double x = s.transA ? a[at(as, p, q, l, i)] : a[at(as, p, q, i, l)];
            double y = s.transB ? b[at(bs, p, q, j, l)] : b[at(bs, p, q, l, j)];
            want += x * y;
            abs += std::fabs(x * y);
          }
          double bound = rel * std::fabs(want) + tiny + gamma * abs;
          double got = c[at(cs, p, q, i, j)];
          ASSERT_LE(std::fabs(got - want), bound)
              << "dtype " << d << " matrix [" << p << ", " << q << "] (" << i
              << ", " << j << "), outer " << s.outer << " inner " << s.inner
              << " m " << s.m << " n " << s.n << " k " << s.k << ", transA "
              << s.transA << " transB " << s.transB << ", heads-second a "
              << s.aBshd << " b " << s.bBshd << " c " << s.cBshd;
        }
}

/// The shapes every backend is checked at, for f16, bf16, f32 and f64:
/// the four products of an attention and its backward (scores, context,
/// and their gradients, transposed as the backward reads them), odd sizes
/// (rows of 5 and 3 elements, no vector width), one outer or one inner
/// index (which a backend may take as one strided batch), matrices stored
/// in order (also one stride apart), an empty contraction, and heads-second
/// operands and results inside packed tensors (rows three times their
/// length apart: a packed projection's thirds read, its gradient's
/// windows written), an empty contraction among them.
inline void
checkAllStridedMatmuls(std::mt19937 &rng,
                       const std::function<StridedMatmulRun(
                           mpcrt_dtype, const StridedMatmulShape &)> &backend) {
  const StridedMatmulShape shapes[] = {
      {2, 3, 16, 16, 8, false, true, true, true, false},  // q k^T
      {2, 3, 16, 8, 16, false, false, false, true, true}, // p v
      {2, 3, 16, 8, 16, true, false, false, true, true},  // p^T dy
      {3, 2, 5, 7, 3, true, true, true, true, true},
      {1, 4, 6, 5, 9, false, false, true, false, true},
      {3, 1, 6, 5, 9, false, true, false, true, false},
      {2, 3, 4, 6, 5, false, false, false, false, false},
      {2, 2, 4, 3, 0, false, false, true, true, true},
      {2, 3, 16, 16, 8, false, true, true, true, false, true},  // q k^T
      {2, 3, 16, 8, 16, false, false, false, true, true, true}, // p v
      {2, 3, 16, 8, 16, true, false, false, true, true, true},  // p^T dy
      {3, 2, 5, 7, 3, true, true, true, true, true, true},
      {1, 4, 6, 5, 9, false, false, true, false, true, true},
      {2, 2, 4, 3, 0, false, false, true, true, true, true}};
  for (mpcrt_dtype d : {MPCRT_F16, MPCRT_BF16, MPCRT_F32, MPCRT_F64})
    for (const StridedMatmulShape &s : shapes) {
      checkStridedMatmul(d, s, rng, backend(d, s));
      if (::testing::Test::HasFatalFailure())
        return;
    }
}

} // namespace mpcrt::test

#endif // MPC_UNITTESTS_RUNTIME_STRIDEDMATMULCHECK_H
