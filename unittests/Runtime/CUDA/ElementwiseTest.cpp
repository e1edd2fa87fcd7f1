//===- ElementwiseTest.cpp - CUDA elementwise/reductions/norms vs the CPU -===//
//
// The device's exp/log/tanh/erf/pow differ from the host library's by an
// ulp or two of the accumulation type, and row sums are added in a
// different order; results must agree with the reference to that: a few
// ulps of the stored type, plus n ulps of the accumulator times the sum of
// magnitudes for reductions.
//
//===----------------------------------------------------------------------===//

#include "../CrossEntropyCheck.h"
#include "CudaTest.h"

#include <algorithm>
#include <cmath>
#include <functional>

using namespace mpcrt::cuda;
using namespace mpcrt::cuda::test;

namespace {

using Elementwise = CudaTest;

const mpcrt_dtype kTypes[] = {MPCRT_F16, MPCRT_BF16, MPCRT_F32, MPCRT_F64};

int64_t bytesOf(mpcrt_dtype d) {
  return d == MPCRT_F64 ? 8 : d == MPCRT_F32 ? 4 : 2;
}
double ulpOf(mpcrt_dtype d) {
  return d == MPCRT_F64   ? 0x1p-52
         : d == MPCRT_F32 ? 0x1p-23
         : d == MPCRT_F16 ? 0x1p-10
                          : 0x1p-7;
}
double accUlp(mpcrt_dtype d) { return d == MPCRT_F64 ? 0x1p-52 : 0x1p-23; }

/// A host buffer of `dtype` and its values as double.
struct Buffer {
  mpcrt_dtype dtype;
  std::vector<uint8_t> bytes;
  std::vector<double> values() const {
    size_t n = bytes.size() / bytesOf(dtype);
    std::vector<double> v(n);
    mpcrt_cast(dtype, bytes.data(), MPCRT_F64, v.data(), n);
    return v;
  }
};

Buffer randomBuffer(std::mt19937 &rng, mpcrt_dtype d, int64_t n, double lo,
                    double hi) {
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(n);
  for (double &x : v)
    x = u(rng);
  Buffer b{d, std::vector<uint8_t>(n * bytesOf(d))};
  mpcrt_cast(MPCRT_F64, v.data(), d, b.bytes.data(), n);
  return b;
}

/// |got - want| <= ulps * ulp(type) * |want| + absolute[i] for every
/// element (NaN matches NaN).
void expectClose(const Buffer &want, const std::vector<uint8_t> &got,
                 double ulps, const std::function<double(size_t)> &absolute,
                 const std::string &what) {
  Buffer g{want.dtype, got};
  std::vector<double> w = want.values(), o = g.values();
  for (size_t i = 0; i < w.size(); ++i) {
    if (std::isnan(w[i]) && std::isnan(o[i]))
      continue;
    if (w[i] == o[i])
      continue;
    double bound = ulps * ulpOf(want.dtype) * std::fabs(w[i]) + absolute(i);
    ASSERT_LE(std::fabs(w[i] - o[i]), bound)
        << what << ": element " << i << " is " << o[i] << ", reference "
        << w[i];
  }
}

TEST_F(Elementwise, BinaryOpsWithBroadcastingMatchTheReference) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  // out[4, 5, 6] = lhs[4, 5, 6] op rhs[5, 1] broadcast.
  const int64_t shape[] = {4, 5, 6}, ls[] = {30, 6, 1}, rs[] = {0, 1, 0};
  for (mpcrt_dtype d : kTypes)
    for (mpcrt_binary_op op :
         {MPCRT_ADD, MPCRT_SUB, MPCRT_MUL, MPCRT_DIV, MPCRT_POW}) {
      Buffer lhs = randomBuffer(rng, d, 120, 0.1, 3);
      Buffer rhs = randomBuffer(rng, d, 5, -2, 2);
      Buffer want{d, std::vector<uint8_t>(120 * bytesOf(d))};
#define CALL(SUFFIX, T, STAT)                                                  \
  mpcrt_binary_##SUFFIX(op, reinterpret_cast<const T *>(lhs.bytes.data()), ls, \
                        reinterpret_cast<const T *>(rhs.bytes.data()), rs,     \
                        reinterpret_cast<T *>(want.bytes.data()), shape, 3)
      MPCRT_FOR_DTYPE(d, CALL);
#undef CALL
      uint8_t *out = deviceBuffer<uint8_t>(want.bytes.size());
      binary(d, op, upload(lhs.bytes), ls, upload(rhs.bytes), rs, out, shape,
             3);
      // +-*/ round once on both: bit-identical. pow: the CUDA Math API
      // documents powf within 4 ulps and pow within 2, glibc within 1:
      // 5 (f32) or 3 (f64) ulps apart; f16/bf16 compute in f32, whose
      // difference can move the result across one rounding boundary of
      // the element type: 1 ulp of it.
      double powUlps = d == MPCRT_F32 ? 5 : d == MPCRT_F64 ? 3 : 1;
      expectClose(
          want, download(out, want.bytes.size()), op == MPCRT_POW ? powUlps : 0,
          [](size_t) { return 0.0; }, "binary op " + std::to_string(op));
      if (HasFatalFailure())
        return;
    }
}

// mpc.compare and mpc.where: the same bits as the reference (no
// arithmetic), every predicate and type, with broadcasting; a NaN. The
// second layout has a dimension of size 1 and neighbours that merge.
TEST_F(Elementwise, CompareAndWhereMatchTheReference) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  struct Layout {
    std::vector<int64_t> shape, ls, rs, dense;
    int64_t rhsCount;
  };
  const Layout layouts[] = {
      {{4, 5, 6}, {30, 6, 1}, {0, 1, 0}, {30, 6, 1}, 5},
      {{4, 1, 5, 6}, {30, 99, 6, 1}, {0, 99, 6, 1}, {30, 30, 6, 1}, 30},
  };
  std::uniform_int_distribution<int> small(-2, 2);
  for (const Layout &l : layouts)
    for (mpcrt_dtype d : kTypes) {
      const int32_t rank = static_cast<int32_t>(l.shape.size());
      const int64_t *shape = l.shape.data(), *ls = l.ls.data(),
                    *rs = l.rs.data();
      // Few distinct values: equal pairs occur.
      std::vector<double> a(120), b(l.rhsCount);
      for (double &x : a)
        x = small(rng) * 0.5;
      for (double &x : b)
        x = small(rng) * 0.5;
      a[7] = NAN;
      Buffer lhs{d, std::vector<uint8_t>(120 * bytesOf(d))};
      Buffer rhs{d, std::vector<uint8_t>(b.size() * bytesOf(d))};
      mpcrt_cast(MPCRT_F64, a.data(), d, lhs.bytes.data(), 120);
      mpcrt_cast(MPCRT_F64, b.data(), d, rhs.bytes.data(), b.size());
      for (int p = MPCRT_EQ; p <= MPCRT_GE; ++p) {
        std::vector<uint8_t> want(120);
        mpcrt_compare(static_cast<mpcrt_predicate>(p), d, lhs.bytes.data(), ls,
                      rhs.bytes.data(), rs, want.data(), shape, rank);
        uint8_t *out = deviceBuffer<uint8_t>(120);
        compare(p, d, upload(lhs.bytes), ls, upload(rhs.bytes), rs, out, shape,
                rank);
        ASSERT_EQ(download(out, 120), want) << "predicate " << p;
        // where(mask, lhs, rhs broadcast) with that mask.
        Buffer chosen{d, std::vector<uint8_t>(120 * bytesOf(d))};
        mpcrt_where(bytesOf(d), want.data(), l.dense.data(), lhs.bytes.data(),
                    ls, rhs.bytes.data(), rs, chosen.bytes.data(), shape, rank);
        uint8_t *selected = deviceBuffer<uint8_t>(chosen.bytes.size());
        where(bytesOf(d), upload(want), l.dense.data(), upload(lhs.bytes), ls,
              upload(rhs.bytes), rs, selected, shape, rank);
        ASSERT_EQ(download(selected, chosen.bytes.size()), chosen.bytes);
      }
    }
}

// Every strided operation takes at most 8 dimensions; more is an error
// naming the operation, before anything is launched.
TEST_F(Elementwise, StridedOperationsPastEightDimensionsAreErrors) {
  // The child runs the test again from the start (the CUDA runtime's and
  // the emulation's threads are not copied by a fork).
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  std::vector<int64_t> shape(9, 1), strides(9, 1);
  const int64_t *sh = shape.data(), *st = strides.data();
  EXPECT_EXIT(
      binary(MPCRT_F32, MPCRT_ADD, nullptr, st, nullptr, st, nullptr, sh, 9),
      testing::ExitedWithCode(1),
      "error: CUDA backend: binary op of rank 9 \\(at most 8\\)");
  EXPECT_EXIT(
      compare(MPCRT_EQ, MPCRT_F32, nullptr, st, nullptr, st, nullptr, sh, 9),
      testing::ExitedWithCode(1), "compare of rank 9 \\(at most 8\\)");
  EXPECT_EXIT(where(4, nullptr, st, nullptr, st, nullptr, st, nullptr, sh, 9),
              testing::ExitedWithCode(1), "where of rank 9 \\(at most 8\\)");
  EXPECT_EXIT(stridedCopy(nullptr, 0, st, nullptr, sh, 9, 4),
              testing::ExitedWithCode(1),
              "strided copy of rank 9 \\(at most 8\\)");
  EXPECT_EXIT(stridedScatter(nullptr, nullptr, 0, st, sh, 9, 4),
              testing::ExitedWithCode(1),
              "strided scatter of rank 9 \\(at most 8\\)");
}

// Same-shape operands take 16-byte accesses when every pointer is aligned
// and one element at a time when not; the last count % (16 / size)
// elements always go one at a time. Sizes that are not multiples of the
// vector width, and pointers one element off alignment, on each path:
// +, -, * and relu (and its gradient) round once, so bit-identical; the
// binary ops also with one side a single broadcast element.
TEST_F(Elementwise, FlatOpsAtOddSizesAndOffsetsMatchTheReference) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  for (mpcrt_dtype d : kTypes)
    for (int64_t n : {1, 7, 9, 1003})
      for (int64_t offset : {0, 1}) {
        int64_t size = bytesOf(d);
        Buffer lhs = randomBuffer(rng, d, n + offset, -3, 3);
        Buffer rhs = randomBuffer(rng, d, n + offset, -3, 3);
        uint8_t *dl = upload(lhs.bytes) + offset * size;
        uint8_t *dr = upload(rhs.bytes) + offset * size;
        uint8_t *out =
            deviceBuffer<uint8_t>((n + offset) * size) + offset * size;
        const int64_t shape[] = {n}, unit[] = {1};
        auto slice = [&](const Buffer &b) {
          return std::vector<uint8_t>(b.bytes.begin() + offset * size,
                                      b.bytes.end());
        };
        std::vector<uint8_t> l = slice(lhs), r = slice(rhs);
        for (mpcrt_binary_op op : {MPCRT_ADD, MPCRT_SUB, MPCRT_MUL}) {
          Buffer want{d, std::vector<uint8_t>(n * size)};
#define CALL(SUFFIX, T, STAT)                                                  \
  mpcrt_binary_##SUFFIX(op, reinterpret_cast<const T *>(l.data()), unit,       \
                        reinterpret_cast<const T *>(r.data()), unit,           \
                        reinterpret_cast<T *>(want.bytes.data()), shape, 1)
          MPCRT_FOR_DTYPE(d, CALL);
#undef CALL
          binary(d, op, dl, unit, dr, unit, out, shape, 1);
          EXPECT_EQ(download(out, n * size), want.bytes)
              << "binary " << op << " n " << n << " offset " << offset;
          // One side a single element broadcast (the scalar path), on
          // either side: rhs[0] (the first element after the offset).
          const int64_t none[] = {0};
          for (bool left : {false, true}) {
            const int64_t *ls = left ? none : unit, *rs = left ? unit : none;
#define CALL(SUFFIX, T, STAT)                                                  \
  mpcrt_binary_##SUFFIX(op, reinterpret_cast<const T *>(l.data()), ls,         \
                        reinterpret_cast<const T *>(r.data()), rs,             \
                        reinterpret_cast<T *>(want.bytes.data()), shape, 1)
            MPCRT_FOR_DTYPE(d, CALL);
#undef CALL
            binary(d, op, dl, ls, dr, rs, out, shape, 1);
            EXPECT_EQ(download(out, n * size), want.bytes)
                << "binary " << op << " with a scalar "
                << (left ? "left" : "right") << " n " << n << " offset "
                << offset;
          }
        }
        Buffer want{d, std::vector<uint8_t>(n * size)}, wantGrad = want;
#define CALL(SUFFIX, T, STAT)                                                  \
  do {                                                                         \
    mpcrt_unary_##SUFFIX(MPCRT_RELU, reinterpret_cast<const T *>(l.data()),    \
                         reinterpret_cast<T *>(want.bytes.data()), n);         \
    mpcrt_unary_grad_##SUFFIX(                                                 \
        MPCRT_RELU, reinterpret_cast<const T *>(r.data()),                     \
        reinterpret_cast<const T *>(l.data()),                                 \
        reinterpret_cast<T *>(wantGrad.bytes.data()), n);                      \
  } while (0)
        MPCRT_FOR_DTYPE(d, CALL);
#undef CALL
        unary(d, MPCRT_RELU, dl, out, n);
        EXPECT_EQ(download(out, n * size), want.bytes)
            << "relu n " << n << " offset " << offset;
        unaryGrad(d, MPCRT_RELU, dr, dl, out, n);
        EXPECT_EQ(download(out, n * size), wantGrad.bytes)
            << "relu gradient n " << n << " offset " << offset;
      }
}

// Broadcasting layouts whose innermost dimension is a multiple of the
// vector width (16 bytes) and steps through each operand by 1 or 0 take
// N elements per access: a bias row on either side, a [rows, 1] column, an
// attention mask [B, 1, 1, S] added to [B, H, S, S]; beside them the
// layouts that must not (a row not a multiple of 8 f16 elements, a
// row stride that breaks the vectors' alignment, the operands or the
// result one element off 16 bytes). Every one bit-identical to the
// reference: +, -, *, / round once.
TEST_F(Elementwise, BroadcastOpsInVectorsMatchTheReference) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  struct Case {
    const char *what;
    std::vector<int64_t> shape, ls, rs;
    int64_t lhsCount, rhsCount;
  };
  const Case cases[] = {
      {"bias row", {5, 24}, {24, 1}, {0, 1}, 120, 24},
      {"bias row on the left", {5, 24}, {0, 1}, {24, 1}, 24, 120},
      {"column", {6, 16}, {16, 1}, {1, 0}, 96, 6},
      {"mask", {2, 3, 4, 16}, {192, 64, 16, 1}, {16, 0, 0, 1}, 384, 32},
      {"row of 12", {5, 12}, {12, 1}, {0, 1}, 60, 12},
      {"row stride 25", {5, 24}, {24, 1}, {25, 1}, 120, 125},
  };
  for (const Case &c : cases)
    for (mpcrt_dtype d : kTypes)
      for (auto [offset, outOffset] :
           {std::pair<int64_t, int64_t>{0, 0}, {1, 0}, {0, 1}}) {
        int64_t size = bytesOf(d), count = 1;
        for (int64_t n : c.shape)
          count *= n;
        const int32_t rank = static_cast<int32_t>(c.shape.size());
        Buffer lhs = randomBuffer(rng, d, c.lhsCount + offset, 0.5, 3);
        Buffer rhs = randomBuffer(rng, d, c.rhsCount + offset, 0.5, 3);
        uint8_t *dl = upload(lhs.bytes) + offset * size;
        uint8_t *dr = upload(rhs.bytes) + offset * size;
        uint8_t *out = deviceBufferAt(count * size, outOffset * size);
        for (mpcrt_binary_op op :
             {MPCRT_ADD, MPCRT_SUB, MPCRT_MUL, MPCRT_DIV}) {
          Buffer want{d, std::vector<uint8_t>(count * size)};
#define CALL(SUFFIX, T, STAT)                                                  \
  mpcrt_binary_##SUFFIX(                                                       \
      op, reinterpret_cast<const T *>(lhs.bytes.data()) + offset, c.ls.data(), \
      reinterpret_cast<const T *>(rhs.bytes.data()) + offset, c.rs.data(),     \
      reinterpret_cast<T *>(want.bytes.data()), c.shape.data(), rank)
          MPCRT_FOR_DTYPE(d, CALL);
#undef CALL
          binary(d, op, dl, c.ls.data(), dr, c.rs.data(), out, c.shape.data(),
                 rank);
          ASSERT_EQ(download(out, count * size), want.bytes)
              << c.what << ", binary " << op << ", offset " << offset
              << ", the result's " << outOffset;
        }
      }
}

// Each op at 3000 elements from aligned starts (f16, bf16 and f32: the
// kernel with the op compiled in, 16 bytes per access) and at 3001 one
// element past them (the generic kernel, one element at a time): both
// paths must compute the same formula.
TEST_F(Elementwise, UnaryOpsAndGradientsMatchTheReference) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  for (auto [n, offset] : {std::pair<int64_t, int64_t>{3000, 0}, {3001, 1}})
    for (mpcrt_dtype d : kTypes)
      for (int o = MPCRT_NEG; o <= MPCRT_COS; ++o) {
        auto op = static_cast<mpcrt_unary_op>(o);
        bool positive =
            op == MPCRT_LOG || op == MPCRT_SQRT || op == MPCRT_RSQRT;
        Buffer in = randomBuffer(rng, d, n, positive ? 0.01 : -6, 6);
        Buffer grad = randomBuffer(rng, d, n, -2, 2);
        Buffer want{d, std::vector<uint8_t>(n * bytesOf(d))};
        Buffer wantGrad = want;
        // sin and cos have no gradient kernel (autodiff writes theirs with
        // cos and sin).
        bool hasGrad = op >= MPCRT_TANH && op <= MPCRT_GELU_TANH;
#define CALL(SUFFIX, T, STAT)                                                  \
  do {                                                                         \
    mpcrt_unary_##SUFFIX(op, reinterpret_cast<const T *>(in.bytes.data()),     \
                         reinterpret_cast<T *>(want.bytes.data()), n);         \
    if (hasGrad)                                                               \
      mpcrt_unary_grad_##SUFFIX(                                               \
          op, reinterpret_cast<const T *>(grad.bytes.data()),                  \
          reinterpret_cast<const T *>(in.bytes.data()),                        \
          reinterpret_cast<T *>(wantGrad.bytes.data()), n);                    \
  } while (0)
        MPCRT_FOR_DTYPE(d, CALL);
#undef CALL
        int64_t at = offset * bytesOf(d);
        uint8_t *dIn = uploadAt(in.bytes, at),
                *dGrad = uploadAt(grad.bytes, at);
        uint8_t *out = deviceBufferAt(want.bytes.size(), at);
        unary(d, op, dIn, out, n);
        // The CUDA Math API documents exp, tanh, erf, rsqrt, sin and cos
        // within 2 ulps
        // (f32; 1-2 for f64), log within 1, sqrt exact; glibc is within 1:
        // 3 ulps of the accumulator apart, 5 with the roundings of the few
        // operations a formula adds (sigmoid's 1 + e^-x and division). For
        // f16/bf16 that difference moves the result across at most one
        // rounding boundary: 1 ulp of the type. GELU is x times a function
        // of x whose error is absolute where 1 + erf cancels: 5 ulps of the
        // accumulator times max(1, |x|). Gradients add the upstream factor
        // (|grad| <= 2): twice that.
        double ulps = d == MPCRT_F32 || d == MPCRT_F64 ? 5 : 1;
        std::vector<double> x = in.values();
        auto absolute = [&](double factor) {
          return [&, factor](size_t i) {
            return factor * 5 * accUlp(d) * std::max(1.0, std::fabs(x[i]));
          };
        };
        std::string where = " of dtype " + std::to_string(d) + ", offset " +
                            std::to_string(offset);
        expectClose(want, download(out, want.bytes.size()), ulps, absolute(1),
                    "unary op " + std::to_string(o) + where);
        if (hasGrad) {
          unaryGrad(d, op, dGrad, dIn, out, n);
          expectClose(wantGrad, download(out, want.bytes.size()), 2 * ulps,
                      absolute(2), "unary grad " + std::to_string(o) + where);
        }
        if (HasFatalFailure())
          return;
      }
}

// A segmentation's mean over the 65,536 pixels of a [4, 128, 128] label
// map, each row's logits alike (an untrained head: every term log 5, its
// rounding the same in every row). Within 14 units of roundoff of the
// float64 mean: a term's own rounding (4 u), a thread's compensated sum of
// its 256 rows (2 u) and the block's tree of 256 partial sums (8 u). The
// rows, of 5 classes, take a thread each.
// Summed plainly, each thread's rows were 18 u off here (and 220 u for
// 262,144 pixels); the CPU reference sums pairwise.
TEST_F(Elementwise, TheCrossEntropyMeanOfManyRowsKeepsItsAccuracy) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  const int64_t rows = int64_t(4) * 128 * 128, cols = 5;
  std::uniform_real_distribution<float> logit(-0.1f, 0.1f);
  std::vector<float> x(rows * cols);
  std::vector<int32_t> labels(rows);
  for (int64_t r = 0; r < rows; ++r) {
    std::fill_n(&x[r * cols], cols, logit(rng));
    labels[r] = static_cast<int32_t>(rng() % cols);
  }
  double want =
      mpcrt::test::meanCrossEntropy(x.data(), labels.data(), rows, cols);
  float *loss = deviceBuffer<float>(1);
  crossEntropy(MPCRT_F32, upload(x), upload(labels), 32, loss, rows, cols,
               true);
  EXPECT_EQ(takeDeviceErrors().label, 0);
  EXPECT_NEAR(download(loss, 1)[0], want, (4 + 2 + 8) * 0x1p-24 * want);
}

TEST_F(Elementwise, BadLabelsAreSkippedAndRecordedAsTheReferenceDoes) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  const int64_t rows = 37, cols = 11;
  Buffer in = randomBuffer(rng, MPCRT_F32, rows * cols, -4, 4);
  std::vector<int64_t> labels(rows);
  std::uniform_int_distribution<int64_t> label(0, cols - 1);
  for (int64_t &l : labels)
    l = label(rng);
  labels[5] = cols; // one past the end
  labels[20] = -1;
  float wantLoss, one = 1;
  std::vector<float> wantGrad(rows * cols);
  const float *x = reinterpret_cast<const float *>(in.bytes.data());
  // The reference reports the first bad row and skips every bad one.
  ASSERT_EQ(mpcrt_cross_entropy_f32(x, labels.data(), 64, &wantLoss, rows, cols,
                                    1, 0, 0, 0.0),
            6);
  ASSERT_EQ(mpcrt_cross_entropy_backward_f32(&one, x, labels.data(), 64,
                                             wantGrad.data(), rows, cols, 1, 0,
                                             0, 0.0),
            6);
  for (int64_t c = 0; c < cols; ++c)
    ASSERT_EQ(wantGrad[20 * cols + c], 0.0f);
  int64_t *dLabels = upload(labels);
  float *loss = deviceBuffer<float>(1),
        *grad = deviceBuffer<float>(rows * cols);
  uint8_t *dIn = upload(in.bytes);
  crossEntropy(MPCRT_F32, dIn, dLabels, 64, loss, rows, cols, true);
  IndexErrors bad = takeDeviceErrors(); // no synchronisation before it
  EXPECT_EQ(bad.label, 6);
  EXPECT_EQ(bad.index, 0);
  crossEntropyBackward(MPCRT_F32, upload(std::vector<float>{1}), dIn, dLabels,
                       64, grad, rows, cols, true);
  EXPECT_NE(takeDeviceErrors().label, 0);
  EXPECT_EQ(takeDeviceErrors().label, 0); // cleared by the read
  // Sums in another order: rows * cols ulps of f32 per unit of magnitude.
  EXPECT_NEAR(download(loss, 1)[0], wantLoss,
              rows * cols * 0x1p-23 * 16 * std::fabs(wantLoss));
  std::vector<float> got = download(grad, rows * cols);
  for (int64_t i = 0; i < rows * cols; ++i)
    ASSERT_NEAR(got[i], wantGrad[i],
                8 * 0x1p-23 + 8 * 0x1p-23 * std::fabs(wantGrad[i]))
        << "gradient element " << i;
  for (int64_t c = 0; c < cols; ++c)
    ASSERT_EQ(got[5 * cols + c], 0.0f);
  // Ignoring -1: row 20 is neither recorded nor counted by the mean; row 5
  // still is recorded.
  ASSERT_EQ(mpcrt_cross_entropy_f32(x, labels.data(), 64, &wantLoss, rows, cols,
                                    1, 1, -1, 0.0),
            6);
  ASSERT_EQ(mpcrt_cross_entropy_backward_f32(&one, x, labels.data(), 64,
                                             wantGrad.data(), rows, cols, 1, 1,
                                             -1, 0.0),
            6);
  crossEntropy(MPCRT_F32, dIn, dLabels, 64, loss, rows, cols, true, {true, -1});
  EXPECT_EQ(takeDeviceErrors().label, 6);
  crossEntropyBackward(MPCRT_F32, upload(std::vector<float>{1}), dIn, dLabels,
                       64, grad, rows, cols, true, {true, -1});
  EXPECT_EQ(takeDeviceErrors().label, 6);
  EXPECT_NEAR(download(loss, 1)[0], wantLoss,
              rows * cols * 0x1p-23 * 16 * std::fabs(wantLoss));
  got = download(grad, rows * cols);
  for (int64_t i = 0; i < rows * cols; ++i)
    ASSERT_NEAR(got[i], wantGrad[i],
                8 * 0x1p-23 + 8 * 0x1p-23 * std::fabs(wantGrad[i]))
        << "gradient element " << i << ", ignoring -1";
  for (int64_t c = 0; c < cols; ++c)
    ASSERT_EQ(got[20 * cols + c], 0.0f);
}

TEST_F(Elementwise, AccuracyMatchesTheReference) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  // Rows of many classes (lanes of a warp compete), small integers (ties:
  // the first index wins), a NaN (the maximum), labels out of range.
  for (int64_t classes : {3, 37, 1000}) {
    const int64_t rows = 301;
    std::vector<float> f(rows * classes);
    for (float &v : f)
      v = float(int(rng() % 4));
    f[7 * classes + classes - 1] = NAN;
    std::vector<int32_t> labels(rows);
    for (auto &y : labels)
      y = int32_t(rng() % classes);
    labels[8] = int32_t(classes);
    for (mpcrt_dtype d : {MPCRT_F32, MPCRT_F16}) {
      SCOPED_TRACE("classes " + std::to_string(classes) + " dtype " +
                   std::to_string(int(d)));
      std::vector<uint8_t> bytes(f.size() * bytesOf(d));
      mpcrt_cast(MPCRT_F32, f.data(), d, bytes.data(), f.size());
      // Without ignore_index, and ignoring class 1.
      for (mpcrt::formulas::IgnoredLabel ignored :
           {mpcrt::formulas::IgnoredLabel{},
            mpcrt::formulas::IgnoredLabel{true, 1}}) {
        float want = -1;
        if (d == MPCRT_F32)
          mpcrt_accuracy_f32(f.data(), labels.data(), 32, &want, rows, classes,
                             ignored.ignores, ignored.index);
        else
          mpcrt_accuracy_f16(reinterpret_cast<const uint16_t *>(bytes.data()),
                             labels.data(), 32, &want, rows, classes,
                             ignored.ignores, ignored.index);
        float *out = deviceBuffer<float>(1);
        accuracy(d, upload(bytes), upload(labels), 32, out, rows, classes,
                 ignored);
        // A count: exact.
        EXPECT_EQ(download(out, 1)[0], want) << "ignoring " << ignored.ignores;
      }
    }
  }
}

TEST_F(Elementwise, ReductionsMatchTheReference) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  // The last two: few long rows, cut into segments, with positive
  // inputs, so that the bound below (relative to sum |x|) is relative to
  // the sum itself and a lost or repeated segment shows.
  struct Case {
    int64_t outer, reduced, inner;
    double lo = -1;
  };
  // Columns of 40 and 32 (read 16 bytes at a time from an aligned
  // start) also 1 element past it, element by element.
  for (int64_t offset : {int64_t(0), int64_t(1)})
    for (Case c : {Case{3, 700, 1}, Case{2, 50, 33}, Case{1, 4096, 1},
                   Case{5, 3, 1}, Case{2, 1000, 40}, Case{1, 8192, 32},
                   Case{3, 70001, 1, 0}, Case{1, 4099, 1, 0}})
      for (mpcrt_dtype d : kTypes)
        for (mpcrt_reduce_op op :
             {MPCRT_REDUCE_SUM, MPCRT_REDUCE_MEAN, MPCRT_REDUCE_MAX}) {
          if (offset != 0 && c.inner < 32)
            continue;
          SCOPED_TRACE("offset " + std::to_string(offset));
          int64_t n = c.outer * c.reduced * c.inner, m = c.outer * c.inner;
          Buffer in = randomBuffer(rng, d, n, c.lo, 1);
          Buffer want{d, std::vector<uint8_t>(m * bytesOf(d))};
          Buffer grad = randomBuffer(rng, d, m, -1, 1);
          Buffer wantBack{d, std::vector<uint8_t>(n * bytesOf(d))};
#define CALL(SUFFIX, T, STAT)                                                  \
  do {                                                                         \
    mpcrt_reduce_##SUFFIX(op, reinterpret_cast<const T *>(in.bytes.data()),    \
                          reinterpret_cast<T *>(want.bytes.data()), c.outer,   \
                          c.reduced, c.inner);                                 \
    if (op == MPCRT_REDUCE_MAX)                                                \
      mpcrt_reduce_max_backward_##SUFFIX(                                      \
          reinterpret_cast<const T *>(grad.bytes.data()),                      \
          reinterpret_cast<const T *>(in.bytes.data()),                        \
          reinterpret_cast<const T *>(want.bytes.data()),                      \
          reinterpret_cast<T *>(wantBack.bytes.data()), c.outer, c.reduced,    \
          c.inner);                                                            \
  } while (0)
          MPCRT_FOR_DTYPE(d, CALL);
#undef CALL
          int64_t at = offset * bytesOf(d);
          uint8_t *dIn = uploadAt(in.bytes, at);
          uint8_t *out = deviceBufferAt(want.bytes.size(), at);
          reduce(d, op, dIn, out, c.outer, c.reduced, c.inner);
          std::vector<uint8_t> got = download(out, want.bytes.size());
          // Sums in another order: reduced * ulp(acc) * sum|x| (|x| <= 1),
          // then one rounding to the stored type; max is exact.
          double order = op == MPCRT_REDUCE_MAX
                             ? 0
                             : c.reduced * accUlp(d) * c.reduced /
                                   (op == MPCRT_REDUCE_MEAN ? c.reduced : 1);
          expectClose(
              want, got, op == MPCRT_REDUCE_MAX ? 0 : 1,
              [&](size_t) { return order; }, "reduce " + std::to_string(op));
          if (op == MPCRT_REDUCE_MAX) {
            ASSERT_EQ(got, want.bytes);
            uint8_t *back = deviceBufferAt(wantBack.bytes.size(), at);
            reduceMaxBackward(d, uploadAt(grad.bytes, at), dIn, out, back,
                              c.outer, c.reduced, c.inner);
            ASSERT_EQ(download(back, wantBack.bytes.size()), wantBack.bytes);
          }
          if (HasFatalFailure())
            return;
        }
}

// Few long rows are cut into segments; the row's last block to arrive
// adds the segments' partials in the order the second launch did, so one
// launch gives the second launch's bits (setReductionsInOneLaunch), for
// every op and dtype, every row of several, and again after the counters
// went back to 0.
TEST_F(Elementwise, RowSegmentsInOneLaunchEqualTwoLaunchesBitForBit) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  struct Case {
    int64_t outer, reduced;
  };
  for (Case c : {Case{3, 70001}, Case{1, 4099}, Case{2, 262144}})
    for (mpcrt_dtype d : kTypes)
      for (mpcrt_reduce_op op :
           {MPCRT_REDUCE_SUM, MPCRT_REDUCE_MEAN, MPCRT_REDUCE_MAX}) {
        Buffer in = randomBuffer(rng, d, c.outer * c.reduced, -1, 1);
        uint8_t *dIn = upload(in.bytes);
        size_t bytes = c.outer * bytesOf(d);
        std::vector<uint8_t> got[2];
        for (bool oneLaunch : {false, true}) {
          uint8_t *out = deviceBuffer<uint8_t>(bytes);
          bool before = setReductionsInOneLaunch(oneLaunch);
          reduce(d, op, dIn, out, c.outer, c.reduced, 1);
          EXPECT_EQ(setReductionsInOneLaunch(before), oneLaunch);
          got[oneLaunch] = download(out, bytes);
        }
        ASSERT_EQ(got[1], got[0]) << c.outer << "x" << c.reduced << " of dtype "
                                  << d << ", op " << op;
        releaseOwned();
      }
}

// Column sums of small integers are exact in any order, so every cut of
// the rows into chunks and every way the chunks are combined must give
// the exact sums: a chunk lost or counted twice shows. Each shape runs in
// both ways (setReductionsInOneLaunch):
// - one launch, the last block of a group of up to 32 chunks combining
//   them: one chunk (40 rows), one group of 32 chunks of 128 rows
//   (4096 x 768, BERT's bias gradients: 12 tiles of 64 columns), 2 groups
//   (4224 x 512: 33 chunks), 4 (16384 x 128), and 3 of 32 lanes across,
//   element by element (3000 x 127: 94 chunks, the last group of 30), the
//   last of the groups' last blocks combining their results;
// - two launches, the second pass in each of its forms: 4 chunks or fewer
//   (a thread per column), 32 lanes per column (128 chunks of 4096 x 768)
//   and 128 (16384 x 128 in f32: 512 chunks), with 16-byte groups of
//   columns and without (127 columns: the second pass's last block of 8
//   columns part empty).
// Every dtype in turn runs a shape again: the counters of the arrivals are
// back at 0 after each launch.
TEST_F(Elementwise, ColumnSumsOfEveryCutAreExact) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  struct Case {
    int64_t rows, cols;
  };
  std::uniform_int_distribution<int> small(-4, 4);
  // Rows of 768 also with the input 1 element past an aligned start,
  // where the columns would be read 16 bytes at a time: element by
  // element.
  for (bool oneLaunch : {true, false})
    for (int64_t offset : {int64_t(0), int64_t(1)})
      for (Case c : {Case{40, 24}, Case{4096, 768}, Case{4224, 512},
                     Case{16384, 128}, Case{3000, 127}})
        for (mpcrt_dtype d : kTypes) {
          if (offset != 0 && c.cols != 768)
            continue;
          bool before = setReductionsInOneLaunch(oneLaunch);
          if (d == MPCRT_F16)
            ASSERT_EQ(columnReductionLaunches(d, 1, c.rows, c.cols),
                      oneLaunch ? 1 : 2)
                << c.rows << "x" << c.cols;
          int64_t n = c.rows * c.cols;
          std::vector<double> x(n), want(c.cols, 0.0);
          for (int64_t i = 0; i < n; ++i) {
            x[i] = small(rng);
            want[i % c.cols] += x[i];
          }
          Buffer in{d, std::vector<uint8_t>(n * bytesOf(d))};
          mpcrt_cast(MPCRT_F64, x.data(), d, in.bytes.data(), n);
          mpcrt_dtype acc = d == MPCRT_F64 ? MPCRT_F64 : MPCRT_F32;
          uint8_t *sums = deviceBuffer<uint8_t>(c.cols * bytesOf(acc));
          columnSums(d, acc, uploadAt(in.bytes, offset * bytesOf(d)), sums,
                     c.rows, c.cols);
          EXPECT_EQ(setReductionsInOneLaunch(before), oneLaunch);
          Buffer got{acc, download(sums, c.cols * bytesOf(acc))};
          std::vector<double> g = got.values();
          for (int64_t j = 0; j < c.cols; ++j)
            ASSERT_EQ(g[j], want[j])
                << c.rows << "x" << c.cols << " of dtype " << d << ", offset "
                << offset << ", column " << j << ", one launch " << oneLaunch;
          releaseOwned();
        }
}

// Column sums of a list of arrays (sibling layers' bias gradients) in one
// launch give each array the bits columnSums gives it alone, in both cuts
// (setReductionsInOneLaunch): BERT's three 4096 x 768 gradients (one
// group of 32 chunks each), one chunk (40 x 24), several groups (4224 x
// 512: 33 chunks), element by element (3000 x 127), an array of the list
// 1 element past an aligned start (all then element by element), and a
// list longer than a launch takes (9: 8 and 1); with addends
// (accumulators) apart and in place, those columnSums adds.
TEST_F(Elementwise, ColumnSumsOfAListEqualEachArraysOwnBitForBit) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  struct Case {
    int64_t count, rows, cols;
    bool misaligned;
    int addends; // 0: none, 1: apart, 2: in place
  };
  for (bool oneLaunch : {true, false})
    for (Case c : {Case{3, 4096, 768, false, 0}, Case{2, 40, 24, false, 0},
                   Case{2, 4224, 512, false, 1}, Case{5, 3000, 127, false, 2},
                   Case{3, 520, 64, true, 1}, Case{9, 96, 40, false, 2},
                   Case{3, 96, 40, false, 0}})
      for (mpcrt_dtype d : kTypes) {
        if (c.rows * c.cols > 8192 && d != MPCRT_F16 && d != MPCRT_F32)
          continue; // the large shapes in one 2-byte and one 4-byte type
        SCOPED_TRACE(std::to_string(c.count) + " of " + std::to_string(c.rows) +
                     "x" + std::to_string(c.cols) + ", dtype " +
                     std::to_string(d) + ", one launch " +
                     std::to_string(oneLaunch) + ", addends " +
                     std::to_string(c.addends));
        bool before = setReductionsInOneLaunch(oneLaunch);
        mpcrt_dtype acc = d == MPCRT_F64 ? MPCRT_F64 : MPCRT_F32;
        size_t bytes = c.cols * bytesOf(acc);
        std::vector<const void *> inputs, addends;
        std::vector<void *> sums;
        std::vector<std::vector<uint8_t>> want;
        for (int64_t i = 0; i < c.count; ++i) {
          Buffer in = randomBuffer(rng, d, c.rows * c.cols, -1, 1);
          Buffer addend = randomBuffer(rng, acc, c.cols, -4, 4);
          size_t offset = c.misaligned && i == 1 ? bytesOf(d) : 0;
          uint8_t *dIn = uploadAt(in.bytes, offset);
          uint8_t *dAddend = c.addends ? upload(addend.bytes) : nullptr;
          uint8_t *alone = deviceBuffer<uint8_t>(bytes);
          columnSums(d, acc, dIn, alone, c.rows, c.cols, dAddend);
          want.push_back(download(alone, bytes));
          inputs.push_back(dIn);
          addends.push_back(dAddend);
          sums.push_back(c.addends == 2 ? dAddend
                                        : deviceBuffer<uint8_t>(bytes));
        }
        columnSumsOfList(d, acc, c.count, inputs.data(), sums.data(), c.rows,
                         c.cols, c.addends ? addends.data() : nullptr);
        EXPECT_EQ(setReductionsInOneLaunch(before), oneLaunch);
        for (int64_t i = 0; i < c.count; ++i)
          ASSERT_EQ(download(static_cast<uint8_t *>(sums[i]), bytes), want[i])
              << "array " << i;
        releaseOwned();
      }
}

TEST_F(Elementwise, SoftmaxAndCrossEntropyMatchTheReference) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  const int64_t rows = 37;
  // Rows a warp holds with 1, 2, 8 and 32 elements a lane (the last ones
  // partly; 256 and 1000 in groups of 4 moved as one access, 45 one element
  // at a time), and rows past 1024 (a block per row). The cross-entropy
  // takes rows of up to 32 classes a thread each (5, 32), longer ones a
  // block each (33 and up).
  for (int64_t cols : {1, 5, 32, 33, 45, 256, 1000, 1029})
    for (mpcrt_dtype d : kTypes) {
      SCOPED_TRACE("cols " + std::to_string(cols));
      Buffer in = randomBuffer(rng, d, rows * cols, -8, 8);
      Buffer dy = randomBuffer(rng, d, rows * cols, -1, 1);
      std::vector<int32_t> labels(rows);
      std::uniform_int_distribution<int32_t> label(0, cols - 1);
      for (int32_t &l : labels)
        l = label(rng);
      Buffer gradLoss = randomBuffer(rng, d, 1, 0.5, 2);
      for (int log : {0, 1}) {
        // The mean ignores the first row's class (every row of it) and
        // smooths the target by 0.1.
        mpcrt::formulas::IgnoredLabel ignored{log == 1, labels[0]};
        double smoothing = log == 1 ? 0.1 : 0;
        Buffer want{d, std::vector<uint8_t>(rows * cols * bytesOf(d))};
        Buffer wantBack = want;
        Buffer wantLoss{d, std::vector<uint8_t>(bytesOf(d))};
        Buffer wantGrad = want;
#define CALL(SUFFIX, T, STAT)                                                  \
  do {                                                                         \
    mpcrt_softmax_##SUFFIX(reinterpret_cast<const T *>(in.bytes.data()),       \
                           reinterpret_cast<T *>(want.bytes.data()), rows,     \
                           cols, log);                                         \
    mpcrt_softmax_backward_##SUFFIX(                                           \
        reinterpret_cast<const T *>(dy.bytes.data()),                          \
        reinterpret_cast<const T *>(want.bytes.data()),                        \
        reinterpret_cast<T *>(wantBack.bytes.data()), rows, cols, log);        \
    mpcrt_cross_entropy_##SUFFIX(                                              \
        reinterpret_cast<const T *>(in.bytes.data()), labels.data(), 32,       \
        reinterpret_cast<T *>(wantLoss.bytes.data()), rows, cols, log,         \
        ignored.ignores, ignored.index, smoothing);                            \
    mpcrt_cross_entropy_backward_##SUFFIX(                                     \
        reinterpret_cast<const T *>(gradLoss.bytes.data()),                    \
        reinterpret_cast<const T *>(in.bytes.data()), labels.data(), 32,       \
        reinterpret_cast<T *>(wantGrad.bytes.data()), rows, cols, log,         \
        ignored.ignores, ignored.index, smoothing);                            \
  } while (0)
        MPCRT_FOR_DTYPE(d, CALL);
#undef CALL
        uint8_t *dIn = upload(in.bytes), *dDy = upload(dy.bytes);
        uint8_t *out = deviceBuffer<uint8_t>(want.bytes.size());
        uint8_t *back = deviceBuffer<uint8_t>(want.bytes.size());
        softmax(d, dIn, d, out, rows, cols, log);
        double rowSum = cols * accUlp(d) * 16; // exp terms up to e^16 apart
        double ulps = d == MPCRT_F32 || d == MPCRT_F64 ? 8 : 1;
        expectClose(
            want, download(out, want.bytes.size()), ulps,
            [&](size_t) { return rowSum; }, "softmax");
        // The backward reads the reference's forward output.
        uint8_t *y = upload(want.bytes);
        softmaxBackward(d, dDy, d, y, d, back, rows, cols, log);
        expectClose(
            wantBack, download(back, want.bytes.size()), ulps,
            [&](size_t) { return rowSum * 8; }, "softmax backward");
        // Rows of 256 also 1 element past an aligned start (no group
        // aligned: one element at a time) and 4 (16-bit groups aligned to
        // their 8 bytes only), every row tensor.
        for (int64_t offset : {int64_t(1), int64_t(4)}) {
          if (cols != 256)
            break;
          size_t at = offset * bytesOf(d);
          uint8_t *shiftedOut = deviceBufferAt(want.bytes.size(), at);
          softmax(d, uploadAt(in.bytes, at), d, shiftedOut, rows, cols, log);
          expectClose(
              want, download(shiftedOut, want.bytes.size()), ulps,
              [&](size_t) { return rowSum; }, "softmax at an offset");
          uint8_t *shiftedBack = deviceBufferAt(want.bytes.size(), at);
          softmaxBackward(d, uploadAt(dy.bytes, at), d,
                          uploadAt(want.bytes, at), d, shiftedBack, rows, cols,
                          log);
          expectClose(
              wantBack, download(shiftedBack, want.bytes.size()), ulps,
              [&](size_t) { return rowSum * 8; },
              "softmax backward at an offset");
        }
        // (log selects mean reduction here, to cover both.)
        int32_t *dLabels = upload(labels);
        uint8_t *loss = deviceBuffer<uint8_t>(bytesOf(d));
        crossEntropy(d, dIn, dLabels, 32, loss, rows, cols, log, ignored,
                     smoothing);
        expectClose(
            wantLoss, download(loss, bytesOf(d)), ulps,
            [&](size_t) { return rows * rowSum * 16; }, "cross entropy");
        uint8_t *grad = deviceBuffer<uint8_t>(want.bytes.size());
        crossEntropyBackward(d, upload(gradLoss.bytes), dIn, dLabels, 32, grad,
                             rows, cols, log, ignored, smoothing);
        expectClose(
            wantGrad, download(grad, want.bytes.size()), ulps,
            [&](size_t) { return rowSum * 2; }, "cross entropy backward");
        if (HasFatalFailure())
          return;
      }
    }
}

/// The mixed-type softmax and its gradient (f16, bf16, f32 at each operand)
/// against the reference's mixed kernels, rows for a warp (one element at a
/// time, and groups of 4 as one access) and for a block. Rows of 200 also
/// with every operand one element past an aligned start, where the groups
/// of 4 must not be read as one access (each operand's element size).
TEST_F(Elementwise, MixedTypeSoftmaxMatchesTheReference) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  const int64_t rows = 37;
  const mpcrt_dtype mixable[] = {MPCRT_F16, MPCRT_BF16, MPCRT_F32};
  for (auto [cols, offset] :
       {std::pair<int64_t, int64_t>{45, 0}, {200, 0}, {1029, 0}, {200, 1}})
    for (mpcrt_dtype in : mixable)
      for (mpcrt_dtype out : mixable) {
        if (in == out)
          continue;
        SCOPED_TRACE("cols " + std::to_string(cols) + " types " +
                     std::to_string(in) + " " + std::to_string(out) +
                     " offset " + std::to_string(offset));
        auto at = [shift = offset](mpcrt_dtype d) {
          return shift * bytesOf(d);
        };
        Buffer x = randomBuffer(rng, in, rows * cols, -8, 8);
        Buffer dy = randomBuffer(rng, in, rows * cols, -1, 1);
        uint8_t *dX = uploadAt(x.bytes, at(in)),
                *dDy = uploadAt(dy.bytes, at(in));
        double rowSum = cols * accUlp(MPCRT_F32) * 16;
        // With a scale (the attention's 1/sqrt(d), folded) and without.
        double scale = in == MPCRT_F32 ? 0.3 : 1;
        for (int log : {0, 1}) {
          Buffer want{out, std::vector<uint8_t>(rows * cols * bytesOf(out))};
          mpcrt_softmax_mixed(in, x.bytes.data(), out, want.bytes.data(), rows,
                              cols, log, scale);
          uint8_t *y = deviceBufferAt(want.bytes.size(), at(out));
          softmax(in, dX, out, y, rows, cols, log, scale);
          expectClose(
              want, download(y, want.bytes.size()), out == MPCRT_F32 ? 8 : 1,
              [&](size_t) { return rowSum; }, "mixed softmax");
          // The backward from the reference's output, dx of either type.
          uint8_t *dY = uploadAt(want.bytes, at(out));
          for (mpcrt_dtype result : {in, out}) {
            Buffer wantBack{
                result, std::vector<uint8_t>(rows * cols * bytesOf(result))};
            mpcrt_softmax_backward_mixed(
                in, dy.bytes.data(), out, want.bytes.data(), result,
                wantBack.bytes.data(), rows, cols, log, scale);
            uint8_t *back = deviceBufferAt(wantBack.bytes.size(), at(result));
            softmaxBackward(in, dDy, out, dY, result, back, rows, cols, log,
                            scale);
            expectClose(
                wantBack, download(back, wantBack.bytes.size()),
                result == MPCRT_F32 ? 8 : 1, [&](size_t) { return rowSum * 8; },
                "mixed softmax backward");
          }
          if (HasFatalFailure())
            return;
        }
      }
}

// mpc.softmax_dropout: the kept elements are exactly the reference's
// (the same Philox bits, drawn per warp into shared memory or per
// element in the block kernel), the values as the softmax's. Rows of 45
// start off a multiple of 4 (a group spans two rows) and move one element
// at a time, rows of 64 and 200 do not and move two and four elements an
// access, rows of 64 and 512 of one type fill a warp's lanes exactly (the
// kernels' Full form, with the row's length a constant), rows of 1029
// take a block each.
TEST_F(Elementwise, SoftmaxDropoutMatchesTheReference) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  const int64_t rows = 37;
  const int64_t step = 5;
  const uint64_t dropSeed = rng();
  int64_t *dStep = upload(std::vector<int64_t>{step});
  const std::pair<mpcrt_dtype, mpcrt_dtype> pairs[] = {
      {MPCRT_F16, MPCRT_F16},  {MPCRT_F16, MPCRT_F32}, {MPCRT_BF16, MPCRT_F16},
      {MPCRT_F32, MPCRT_BF16}, {MPCRT_F32, MPCRT_F32}, {MPCRT_F64, MPCRT_F64}};
  // p = 0: every element kept, no bits drawn. Rows of 512 (a warp's
  // lanes filled exactly), at p = 0.3, also with every row tensor 1 element
  // past an aligned start (no group of the row aligned) and 4 (16-bit groups
  // aligned to their 8 bytes only). The warp kernels' rows of 200, 512,
  // 1020 and 1024 have whole Philox groups, which each lane draws for its
  // own elements (200 and 1020 leave some lanes' last groups past the
  // row), also where the row lies 1 element off; rows of 45 and 64 (a
  // lane's groups of 1 and 2) and of 202 (rows starting 2 elements past a
  // Philox group) draw the row's groups into shared memory first; rows of
  // 1029 take a block.
  for (int64_t offset : {int64_t(0), int64_t(1), int64_t(4)})
    for (double p : {0.3, 0.0})
      for (int64_t cols : {45, 64, 200, 202, 512, 1020, 1024, 1029})
        for (auto [in, out] : pairs) {
          if (offset != 0 && (cols != 512 || p == 0))
            continue;
          SCOPED_TRACE("cols " + std::to_string(cols) + " types " +
                       std::to_string(in) + " " + std::to_string(out) + " p " +
                       std::to_string(p) + " offset " + std::to_string(offset));
          size_t atIn = offset * bytesOf(in), atOut = offset * bytesOf(out);
          int64_t n = rows * cols;
          Buffer x = randomBuffer(rng, in, n, -8, 8);
          Buffer dy = randomBuffer(rng, out, n, -1, 1);
          double scale = 0.3;
          Buffer want{out, std::vector<uint8_t>(n * bytesOf(out))};
          mpcrt_softmax_dropout(in, x.bytes.data(), out, want.bytes.data(),
                                rows, cols, scale, p, dropSeed, &step);
          uint8_t *y = deviceBufferAt(want.bytes.size(), atOut);
          softmaxDropout(in, uploadAt(x.bytes, atIn), out, y, rows, cols, scale,
                         p, dropSeed, dStep);
          std::vector<uint8_t> got = download(y, want.bytes.size());
          std::vector<double> w = want.values(), g = Buffer{out, got}.values();
          int64_t dropped = 0;
          for (int64_t i = 0; i < n; ++i) {
            ASSERT_EQ(w[i] == 0, g[i] == 0) << "element " << i << " kept";
            dropped += w[i] == 0;
          }
          // About p of them dropped: the bits are the dropout's, not all kept.
          EXPECT_NEAR(double(dropped) / n, p, 0.05);
          double rowSum = cols * accUlp(in) * 16 / (1 - p);
          expectClose(
              want, got, out == MPCRT_F32 || out == MPCRT_F64 ? 8 : 1,
              [&](size_t) { return rowSum; }, "softmax_dropout");
          // The backward, dx of the input's type and of the gradient's.
          for (mpcrt_dtype result : {in, out}) {
            if (in == MPCRT_F64 && result != MPCRT_F64)
              continue;
            Buffer wantBack{result, std::vector<uint8_t>(n * bytesOf(result))};
            mpcrt_softmax_dropout_backward(out, dy.bytes.data(), in,
                                           x.bytes.data(), result,
                                           wantBack.bytes.data(), nullptr, rows,
                                           cols, scale, p, dropSeed, &step);
            size_t atResult = offset * bytesOf(result);
            uint8_t *back = deviceBufferAt(wantBack.bytes.size(), atResult);
            softmaxDropoutBackward(
                out, uploadAt(dy.bytes, atOut), in, uploadAt(x.bytes, atIn),
                result, back, nullptr, rows, cols, scale, p, dropSeed, dStep);
            std::vector<uint8_t> gotBack =
                download(back, wantBack.bytes.size());
            expectClose(
                wantBack, gotBack,
                result == MPCRT_F32 || result == MPCRT_F64 ? 8 : 1,
                [&](size_t) { return rowSum * 8; }, "softmax_dropout backward");
            // Writing the forward's result too (over poison): this backend's
            // forward bits exactly, the gradient unchanged.
            uint8_t *dropped =
                uploadAt(std::vector<uint8_t>(want.bytes.size(), 0xFF), atOut);
            uint8_t *again = deviceBufferAt(wantBack.bytes.size(), atResult);
            softmaxDropoutBackward(
                out, uploadAt(dy.bytes, atOut), in, uploadAt(x.bytes, atIn),
                result, again, dropped, rows, cols, scale, p, dropSeed, dStep);
            ASSERT_EQ(download(again, wantBack.bytes.size()), gotBack)
                << "backward writing the dropped values";
            ASSERT_EQ(download(dropped, want.bytes.size()), got)
                << "dropped values";
            // In place (the memory plan's, where the types match).
            if (result == out) {
              uint8_t *inPlace = uploadAt(dy.bytes, atOut);
              softmaxDropoutBackward(out, inPlace, in, uploadAt(x.bytes, atIn),
                                     result, inPlace, nullptr, rows, cols,
                                     scale, p, dropSeed, dStep);
              ASSERT_EQ(download(inPlace, wantBack.bytes.size()), gotBack)
                  << "in place";
            }
          }
          if (HasFatalFailure())
            return;
        }
}

TEST_F(Elementwise, LayerNormMatchesTheReference) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  // rows: several chunks; cols: a warp per row (up to 1024: groups of 4,
  // a partial last group, all eight groups of a lane), a block. Rows of
  // 768 also with the rows' tensors (x, dy, y, dx) 1 or 4 elements past
  // an aligned start: 1 breaks the groups' alignment (the element-wise
  // path), 4 keeps it for 16-bit types while breaking 16 bytes' (their
  // groups' loads are 8 bytes). The parameters and their gradients as
  // many elements past theirs (gamma's and beta's groups then read one
  // element at a time where the offset is 1). The parameters f32 (f64
  // for f64 rows), and at offset 0 also of another type (the rows' own
  // for 16-bit rows, bf16 for f32 and f32 for f64): the warp kernels
  // convert them once into shared memory, the block kernels at each
  // access.
  const int64_t rows = 200;
  for (int64_t offset : {int64_t(0), int64_t(1), int64_t(4)})
    for (int64_t cols : {int64_t(5), int64_t(768), int64_t(1022), int64_t(1024),
                         int64_t(1031)})
      for (mpcrt_dtype d : kTypes)
        for (bool otherParams : {false, true}) {
          if (offset != 0 && (cols != 768 || otherParams))
            continue;
          mpcrt_dtype pd = d == MPCRT_F64 ? MPCRT_F64 : MPCRT_F32;
          if (otherParams)
            pd = d == MPCRT_F64 ? MPCRT_F32 : d == MPCRT_F32 ? MPCRT_BF16 : d;
          SCOPED_TRACE("cols " + std::to_string(cols) + " offset " +
                       std::to_string(offset) + " parameters " +
                       std::to_string(pd));
          size_t at = offset * bytesOf(d);
          size_t pAt = offset * bytesOf(pd);
          int64_t statBytes = d == MPCRT_F64 ? 8 : 4;
          Buffer x = randomBuffer(rng, d, rows * cols, -3, 5);
          Buffer dy = randomBuffer(rng, d, rows * cols, -1, 1);
          Buffer gamma = randomBuffer(rng, pd, cols, 0.5, 1.5);
          Buffer beta = randomBuffer(rng, pd, cols, -0.5, 0.5);
          Buffer want{d, std::vector<uint8_t>(rows * cols * bytesOf(d))};
          Buffer wantDx = want;
          std::vector<uint8_t> mean(rows * statBytes), rstd(rows * statBytes);
          Buffer wantDg{pd, std::vector<uint8_t>(cols * bytesOf(pd))};
          Buffer wantDb = wantDg;
#define CALL(SUFFIX, T, STAT)                                                  \
  do {                                                                         \
    mpcrt_layer_norm_##SUFFIX(                                                 \
        reinterpret_cast<const T *>(x.bytes.data()), pd, gamma.bytes.data(),   \
        beta.bytes.data(), reinterpret_cast<T *>(want.bytes.data()),           \
        reinterpret_cast<STAT *>(mean.data()),                                 \
        reinterpret_cast<STAT *>(rstd.data()), rows, cols, 1e-5);              \
    mpcrt_layer_norm_backward_##SUFFIX(                                        \
        reinterpret_cast<const T *>(dy.bytes.data()),                          \
        reinterpret_cast<const T *>(x.bytes.data()),                           \
        reinterpret_cast<const STAT *>(mean.data()),                           \
        reinterpret_cast<const STAT *>(rstd.data()), pd, gamma.bytes.data(),   \
        reinterpret_cast<T *>(wantDx.bytes.data()), wantDg.bytes.data(),       \
        wantDb.bytes.data(), nullptr, nullptr, rows, cols);                    \
  } while (0)
          MPCRT_FOR_DTYPE(d, CALL);
#undef CALL
          uint8_t *dX = uploadAt(x.bytes, at), *dG = uploadAt(gamma.bytes, pAt);
          uint8_t *out = deviceBufferAt(want.bytes.size(), at);
          uint8_t *dMean = deviceBuffer<uint8_t>(mean.size());
          uint8_t *dRstd = deviceBuffer<uint8_t>(rstd.size());
          layerNorm(d, dX, pd, dG, uploadAt(beta.bytes, pAt), out, dMean, dRstd,
                    rows, cols, 1e-5);
          double sums = cols * accUlp(d) * 8;
          double ulps = d == MPCRT_F32 || d == MPCRT_F64 ? 8 : 1;
          expectClose(
              want, download(out, want.bytes.size()), ulps,
              [&](size_t) { return sums * 4; }, "layer_norm");
          // The backward from the reference's statistics.
          uint8_t *dx = deviceBufferAt(want.bytes.size(), at);
          uint8_t *dg = deviceBufferAt(wantDg.bytes.size(), pAt);
          uint8_t *db = deviceBufferAt(wantDb.bytes.size(), pAt);
          layerNormBackward(d, uploadAt(dy.bytes, at), dX, upload(mean),
                            upload(rstd), pd, dG, dx, dg, db, nullptr, nullptr,
                            rows, cols);
          expectClose(
              wantDx, download(dx, want.bytes.size()), ulps,
              [&](size_t) { return sums * 16; }, "layer_norm dx");
          // Sums in another order: 16-bit parameters' gradients may round
          // to a neighbour.
          double paramUlps = bytesOf(pd) == 2 ? 1 : 0;
          expectClose(
              wantDg, download(dg, wantDg.bytes.size()), paramUlps,
              [&](size_t) { return rows * accUlp(d) * rows * 4; },
              "layer_norm dgamma");
          expectClose(
              wantDb, download(db, wantDb.bytes.size()), paramUlps,
              [&](size_t) { return rows * accUlp(d) * rows; },
              "layer_norm dbeta");
          if (HasFatalFailure())
            return;
        }
}

} // namespace
