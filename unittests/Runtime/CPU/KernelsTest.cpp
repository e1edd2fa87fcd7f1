//===- KernelsTest.cpp - reference kernels against float64 ----------------===//
//
// Fresh random inputs every run (the seed is printed on failure). Inputs are
// generated as exact values of the storage type, so the float64 reference
// sees exactly what the kernel sees; the tolerance is one rounding of the
// result plus f32 accumulation error.
//
//===----------------------------------------------------------------------===//

#include "../FusedMatmulCheck.h"
#include "../StridedMatmulCheck.h"
#include "TestSupport.h"
#include "mpc/Runtime/mpcrt.h"

#include "gtest/gtest.h"

#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace mpcrt::test;

/// A buffer of one dtype with its exact values as doubles.
struct Tensor {
  mpcrt_dtype dtype;
  std::vector<uint16_t> half;
  std::vector<float> single;
  std::vector<double> values;

  Tensor(mpcrt_dtype dtype, size_t n, Rng &rng, float scale = 1.f)
      : dtype(dtype) {
    for (size_t i = 0; i < n; ++i) {
      float x = rng.normal() * scale;
      if (dtype == MPCRT_F16) {
        half.push_back(mpcrt_f32_to_f16(x));
        values.push_back(mpcrt_f16_to_f32(half.back()));
      } else if (dtype == MPCRT_BF16) {
        half.push_back(mpcrt_f32_to_bf16(x));
        values.push_back(mpcrt_bf16_to_f32(half.back()));
      } else {
        single.push_back(x);
        values.push_back(x);
      }
    }
  }
  explicit Tensor(mpcrt_dtype dtype, size_t n) : dtype(dtype) {
    half.resize(n);
    single.resize(n);
  }
  double at(size_t i) const {
    if (dtype == MPCRT_F16)
      return mpcrt_f16_to_f32(half[i]);
    if (dtype == MPCRT_BF16)
      return mpcrt_bf16_to_f32(half[i]);
    return single[i];
  }
};

/// Unit roundoff of the storage type.
double roundoff(mpcrt_dtype dtype) {
  return dtype == MPCRT_F16    ? std::ldexp(1.0, -11)
         : dtype == MPCRT_BF16 ? std::ldexp(1.0, -8)
                               : std::ldexp(1.0, -24);
}

void matmul(const Tensor &a, int64_t as, const Tensor &b, int64_t bs, Tensor &c,
            int64_t batch, int64_t m, int64_t n, int64_t k, bool ta, bool tb) {
  switch (a.dtype) {
  case MPCRT_F16:
    return mpcrt_matmul_f16(a.half.data(), as, b.half.data(), bs, c.half.data(),
                            batch, m, n, k, ta, tb);
  case MPCRT_BF16:
    return mpcrt_matmul_bf16(a.half.data(), as, b.half.data(), bs,
                             c.half.data(), batch, m, n, k, ta, tb);
  default:
    return mpcrt_matmul_f32(a.single.data(), as, b.single.data(), bs,
                            c.single.data(), batch, m, n, k, ta, tb);
  }
}

class MatmulTest : public ::testing::TestWithParam<mpcrt_dtype> {};

TEST_P(MatmulTest, MatchesFloat64WithTransposesAndBroadcast) {
  mpcrt_dtype dtype = GetParam();
  Rng rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed));
  // K large enough that f16 accumulation would fail the bound.
  const int64_t batch = 3, m = 7, n = 9, k = 300;
  for (int t = 0; t < 4; ++t) {
    bool ta = t & 1, tb = t & 2;
    Tensor a(dtype, batch * m * k, rng), b(dtype, k * n, rng); // b broadcast
    Tensor c(dtype, batch * m * n);
    matmul(a, m * k, b, /*bs=*/0, c, batch, m, n, k, ta, tb);
    for (int64_t p = 0; p < batch; ++p)
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double ref = 0, mag = 0;
          for (int64_t l = 0; l < k; ++l) {
            double x = a.values[p * m * k + (ta ? l * m + i : i * k + l)];
            double y = b.values[tb ? j * k + l : l * n + j];
            ref += x * y;
            mag += std::fabs(x * y);
          }
          double got = c.at(p * m * n + i * n + j);
          double bound = roundoff(dtype) * std::fabs(ref) +
                         k * std::ldexp(1.0, -24) * mag + 1e-30;
          ASSERT_NEAR(got, ref, bound) << "trans_a " << ta << " trans_b " << tb
                                       << " at " << p << "," << i << "," << j;
        }
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, MatmulTest,
                         ::testing::Values(MPCRT_F16, MPCRT_BF16, MPCRT_F32));

class SoftmaxTest : public ::testing::TestWithParam<mpcrt_dtype> {};

TEST_P(SoftmaxTest, MatchesFloat64AndDoesNotOverflow) {
  mpcrt_dtype dtype = GetParam();
  Rng rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed));
  const int64_t rows = 5, cols = 128;
  // Large logits: a naive exp would overflow f32 (and f16 at 12).
  for (float scale : {1.f, 30.f, 200.f}) {
    if (dtype == MPCRT_F16 && scale > 100.f)
      scale = 60.f; // f16's range ends at 65504.
    Tensor x(dtype, rows * cols, rng, scale);
    for (int log = 0; log < 2; ++log) {
      Tensor y(dtype, rows * cols);
      if (dtype == MPCRT_F16)
        mpcrt_softmax_f16(x.half.data(), y.half.data(), rows, cols, log);
      else if (dtype == MPCRT_BF16)
        mpcrt_softmax_bf16(x.half.data(), y.half.data(), rows, cols, log);
      else
        mpcrt_softmax_f32(x.single.data(), y.single.data(), rows, cols, log);
      for (int64_t r = 0; r < rows; ++r) {
        double max = -INFINITY, sum = 0;
        for (int64_t c = 0; c < cols; ++c)
          max = std::fmax(max, x.values[r * cols + c]);
        for (int64_t c = 0; c < cols; ++c)
          sum += std::exp(x.values[r * cols + c] - max);
        for (int64_t c = 0; c < cols; ++c) {
          double shifted = x.values[r * cols + c] - max;
          double ref = log ? shifted - std::log(sum) : std::exp(shifted) / sum;
          double got = y.at(r * cols + c);
          ASSERT_TRUE(std::isfinite(got));
          // One rounding of the result, plus f32 error in exp/log/sum
          // scaled by the magnitude of the logits for log-softmax.
          double bound =
              roundoff(dtype) * std::fabs(ref) +
              64 * std::ldexp(1.0, -24) * (log ? std::fabs(shifted) + 1 : 1) +
              1e-30;
          ASSERT_NEAR(got, ref, bound)
              << "scale " << scale << " log " << log << " at " << r << "," << c;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, SoftmaxTest,
                         ::testing::Values(MPCRT_F16, MPCRT_BF16, MPCRT_F32));

TEST(SoftmaxBackward, MatchesFiniteDifferencesInF64) {
  Rng rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed));
  const int64_t rows = 3, cols = 11;
  std::vector<double> x(rows * cols), dy(rows * cols), y(rows * cols),
      dx(rows * cols);
  for (double &v : x)
    v = 3 * rng.normal();
  for (double &v : dy)
    v = rng.normal();
  for (int log = 0; log < 2; ++log) {
    mpcrt_softmax_f64(x.data(), y.data(), rows, cols, log);
    mpcrt_softmax_backward_f64(dy.data(), y.data(), dx.data(), rows, cols, log);
    auto loss = [&]() {
      std::vector<double> out(rows * cols);
      mpcrt_softmax_f64(x.data(), out.data(), rows, cols, log);
      double s = 0;
      for (size_t i = 0; i < out.size(); ++i)
        s += out[i] * dy[i];
      return s;
    };
    auto fd = numericGradient(x, loss);
    for (size_t i = 0; i < x.size(); ++i)
      ASSERT_NEAR(dx[i], fd[i], 1e-7) << "log " << log;
  }
}

/// The mixed-type kernels (what --mpc-fuse's cast folding emits) against
/// their definition: the f32 op with mpcrt_cast before (a widening, exact)
/// or after (one rounding), bit for bit, so that folding a cast changes no
/// value.
TEST(MixedTypes, SoftmaxAndDropoutAreTheF32OpsWithTheirCastsBitForBit) {
  Rng rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed));
  const int64_t rows = 7, cols = 301, n = rows * cols;
  for (mpcrt_dtype lowp : {MPCRT_F16, MPCRT_BF16}) {
    SCOPED_TRACE(lowp == MPCRT_F16 ? "f16" : "bf16");
    std::vector<float> x32(n), dy32(n);
    for (float &v : x32)
      v = 4 * rng.normal();
    for (float &v : dy32)
      v = rng.normal();
    std::vector<uint16_t> x(n), dy(n);
    mpcrt_cast(MPCRT_F32, x32.data(), lowp, x.data(), n);
    mpcrt_cast(MPCRT_F32, dy32.data(), lowp, dy.data(), n);
    std::vector<float> xWide(n), dyWide(n);
    mpcrt_cast(lowp, x.data(), MPCRT_F32, xWide.data(), n);
    mpcrt_cast(lowp, dy.data(), MPCRT_F32, dyWide.data(), n);
    for (int log = 0; log < 2; ++log) {
      SCOPED_TRACE("log " + std::to_string(log));
      // Low-precision input, f32 result: the widened input's softmax.
      std::vector<float> want(n), got(n);
      mpcrt_softmax_f32(xWide.data(), want.data(), rows, cols, log);
      mpcrt_softmax_mixed(lowp, x.data(), MPCRT_F32, got.data(), rows, cols,
                          log, 1.0);
      ASSERT_EQ(got, want) << "softmax, low-precision input";
      // f32 input, low-precision result: the f32 softmax rounded.
      std::vector<uint16_t> wantLow(n), gotLow(n);
      mpcrt_softmax_f32(x32.data(), want.data(), rows, cols, log);
      mpcrt_cast(MPCRT_F32, want.data(), lowp, wantLow.data(), n);
      mpcrt_softmax_mixed(MPCRT_F32, x32.data(), lowp, gotLow.data(), rows,
                          cols, log, 1.0);
      ASSERT_EQ(gotLow, wantLow) << "softmax, low-precision result";
      // The backward from the f32 output y: dy low or f32, dx low or f32.
      std::vector<float> y = want, dx(n);
      mpcrt_softmax_backward_f32(dyWide.data(), y.data(), dx.data(), rows, cols,
                                 log);
      std::vector<float> gotDx(n);
      mpcrt_softmax_backward_mixed(lowp, dy.data(), MPCRT_F32, y.data(),
                                   MPCRT_F32, gotDx.data(), rows, cols, log,
                                   1.0);
      ASSERT_EQ(gotDx, dx) << "backward, low-precision dy";
      std::vector<uint16_t> wantDxLow(n), gotDxLow(n);
      mpcrt_cast(MPCRT_F32, dx.data(), lowp, wantDxLow.data(), n);
      mpcrt_softmax_backward_mixed(lowp, dy.data(), MPCRT_F32, y.data(), lowp,
                                   gotDxLow.data(), rows, cols, log, 1.0);
      ASSERT_EQ(gotDxLow, wantDxLow) << "backward, low-precision dy and dx";
      mpcrt_softmax_backward_f32(dy32.data(), y.data(), dx.data(), rows, cols,
                                 log);
      mpcrt_cast(MPCRT_F32, dx.data(), lowp, wantDxLow.data(), n);
      mpcrt_softmax_backward_mixed(MPCRT_F32, dy32.data(), MPCRT_F32, y.data(),
                                   lowp, gotDxLow.data(), rows, cols, log, 1.0);
      ASSERT_EQ(gotDxLow, wantDxLow) << "backward, low-precision dx";
    }
    // Dropout from f32 to low precision: the f32 dropout rounded, the same
    // mask.
    int64_t step = 5;
    std::vector<float> dropped(n);
    std::vector<uint8_t> mask(n), gotMask(n);
    std::vector<uint16_t> wantLow(n), gotLow(n);
    mpcrt_dropout_f32(x32.data(), dropped.data(), mask.data(), n, 0.1, 99,
                      &step);
    mpcrt_cast(MPCRT_F32, dropped.data(), lowp, wantLow.data(), n);
    mpcrt_dropout_mixed(MPCRT_F32, x32.data(), lowp, gotLow.data(),
                        gotMask.data(), n, 0.1, 99, &step);
    ASSERT_EQ(gotMask, mask) << "dropout mask";
    ASSERT_EQ(gotLow, wantLow) << "dropout, low-precision result";
  }
}

/// The softmax's `scale` (what --mpc-fuse's `scales` folds): the f32 op on
/// the input multiplied by it in f32, and the gradient multiplied by it in
/// f32, bit for bit.
TEST(MixedTypes, ScaleMultipliesTheInputAndTheGradient) {
  Rng rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed));
  const int64_t rows = 5, cols = 77, n = rows * cols;
  const float scale = 0.3f;
  std::vector<float> x(n), dy(n), scaled(n);
  for (float &v : x)
    v = 4 * rng.normal();
  for (float &v : dy)
    v = rng.normal();
  for (int64_t i = 0; i < n; ++i)
    scaled[i] = scale * x[i];
  for (int log = 0; log < 2; ++log) {
    std::vector<float> want(n), got(n);
    mpcrt_softmax_f32(scaled.data(), want.data(), rows, cols, log);
    mpcrt_softmax_mixed(MPCRT_F32, x.data(), MPCRT_F32, got.data(), rows, cols,
                        log, scale);
    ASSERT_EQ(got, want) << "log " << log;
    std::vector<float> dx(n), gotDx(n);
    mpcrt_softmax_backward_f32(dy.data(), want.data(), dx.data(), rows, cols,
                               log);
    for (float &v : dx)
      v *= scale;
    mpcrt_softmax_backward_mixed(MPCRT_F32, dy.data(), MPCRT_F32, want.data(),
                                 MPCRT_F32, gotDx.data(), rows, cols, log,
                                 scale);
    ASSERT_EQ(gotDx, dx) << "log " << log;
  }
}

/// mpc.softmax_dropout (what --mpc-fuse's `softmax-dropout` builds)
/// against the ops it replaces: the softmax to f32 then the dropout to the
/// result's type, and backward the dropout's gradient in the gradient's
/// type then the softmax's from the f32 probabilities, bit for bit, at
/// each pair of types the fusion meets, with a scale and without.
TEST(MixedTypes, SoftmaxDropoutIsTheSoftmaxThenTheDropoutBitForBit) {
  Rng rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed));
  const int64_t rows = 9, cols = 203, n = rows * cols; // groups span rows
  const int64_t step = 11;
  const uint64_t seed = 77;
  auto bytes = [](mpcrt_dtype d) { return d == MPCRT_F32 ? 4 : 2; };
  auto random = [&](mpcrt_dtype d, double sigma) {
    std::vector<float> v(n);
    for (float &e : v)
      e = static_cast<float>(sigma * rng.normal());
    std::vector<uint8_t> b(n * bytes(d));
    mpcrt_cast(MPCRT_F32, v.data(), d, b.data(), n);
    return b;
  };
  const mpcrt_dtype types[] = {MPCRT_F16, MPCRT_BF16, MPCRT_F32};
  // p = 0: a softmax with no dropout whose probabilities are narrowed.
  for (double p : {0.2, 0.0})
    for (mpcrt_dtype in : types)
      for (mpcrt_dtype out : types)
        for (double scale : {1.0, 0.3}) {
          SCOPED_TRACE("types " + std::to_string(in) + " " +
                       std::to_string(out) + " scale " + std::to_string(scale) +
                       " p " + std::to_string(p));
          std::vector<uint8_t> x = random(in, 4), dy = random(out, 1);
          std::vector<float> probs(n);
          std::vector<uint8_t> mask(n), want(n * bytes(out)),
              got(n * bytes(out));
          mpcrt_softmax_mixed(in, x.data(), MPCRT_F32, probs.data(), rows, cols,
                              0, scale);
          mpcrt_dropout_mixed(MPCRT_F32, probs.data(), out, want.data(),
                              mask.data(), n, p, seed, &step);
          mpcrt_softmax_dropout(in, x.data(), out, got.data(), rows, cols,
                                scale, p, seed, &step);
          ASSERT_EQ(got, want) << "forward";
          // Backward: the gradient dropped in its own type, then the
          // softmax's gradient, dx of the input's type.
          std::vector<uint8_t> dropped(n * bytes(out)), wantDx(n * bytes(in)),
              gotDx(n * bytes(in));
          if (out == MPCRT_F32)
            mpcrt_dropout_backward_f32(
                reinterpret_cast<float *>(dy.data()), mask.data(),
                reinterpret_cast<float *>(dropped.data()), n, p);
          else if (out == MPCRT_F16)
            mpcrt_dropout_backward_f16(
                reinterpret_cast<uint16_t *>(dy.data()), mask.data(),
                reinterpret_cast<uint16_t *>(dropped.data()), n, p);
          else
            mpcrt_dropout_backward_bf16(
                reinterpret_cast<uint16_t *>(dy.data()), mask.data(),
                reinterpret_cast<uint16_t *>(dropped.data()), n, p);
          mpcrt_softmax_backward_mixed(out, dropped.data(), MPCRT_F32,
                                       probs.data(), in, wantDx.data(), rows,
                                       cols, 0, scale);
          mpcrt_softmax_dropout_backward(out, dy.data(), in, x.data(), in,
                                         gotDx.data(), nullptr, rows, cols,
                                         scale, p, seed, &step);
          ASSERT_EQ(gotDx, wantDx) << "backward";
          // Writing the forward's result too (over poison): the forward's
          // bits, the same gradient.
          std::vector<uint8_t> again(n * bytes(in), 0xFF),
              gotDropped(n * bytes(out), 0xFF);
          mpcrt_softmax_dropout_backward(out, dy.data(), in, x.data(), in,
                                         again.data(), gotDropped.data(), rows,
                                         cols, scale, p, seed, &step);
          ASSERT_EQ(again, wantDx) << "backward writing the dropped values";
          ASSERT_EQ(gotDropped, want) << "dropped values";
          // In place (the memory plan's, where the types match): the
          // gradient written over the output gradient.
          if (in == out) {
            std::vector<uint8_t> inPlace = dy;
            mpcrt_softmax_dropout_backward(out, inPlace.data(), in, x.data(),
                                           in, inPlace.data(), nullptr, rows,
                                           cols, scale, p, seed, &step);
            ASSERT_EQ(inPlace, wantDx) << "in place";
          }
        }
}

/// mpcrt_cast_i32 against its definition: the integer rounded to f32 (the
/// host's int -> float conversion, nearest even), then to the type as from
/// f32 (mpcrt_cast); f64 exact. Masks, large values past 2^24 (f32 rounds
/// them), values past f16's range (infinity) and the extremes of i32.
TEST(CastTest, IntegersRoundToF32ThenToTheType) {
  Rng rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed));
  std::vector<int32_t> ints = {0,        1,         -1,       65504,
                               65520,    100000,    16777217, -16777219,
                               33554435, INT32_MAX, INT32_MIN};
  for (int i = 0; i < 1000; ++i)
    ints.push_back(static_cast<int32_t>(rng.normal() * 1e6));
  int64_t n = static_cast<int64_t>(ints.size());
  std::vector<float> viaF32(n);
  for (int64_t i = 0; i < n; ++i)
    viaF32[i] = static_cast<float>(ints[i]);
  for (mpcrt_dtype to : {MPCRT_F16, MPCRT_BF16, MPCRT_F32}) {
    std::vector<uint8_t> got(n * 4), want(n * 4);
    mpcrt_cast_i32(ints.data(), to, got.data(), n);
    mpcrt_cast(MPCRT_F32, viaF32.data(), to, want.data(), n);
    EXPECT_EQ(got, want) << "dtype " << to;
  }
  std::vector<double> exact(n);
  mpcrt_cast_i32(ints.data(), MPCRT_F64, exact.data(), n);
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(exact[i], static_cast<double>(ints[i]));
  // The definition's landmarks: f32 rounds 2^24 + 1 to even, f16 overflows.
  float f32;
  mpcrt_cast_i32(&ints[6], MPCRT_F32, &f32, 1);
  EXPECT_EQ(f32, 16777216.0f);
  uint16_t f16;
  mpcrt_cast_i32(&ints[4], MPCRT_F16, &f16, 1);
  EXPECT_EQ(f16, 0x7c00) << "65520 rounds to f16 infinity";
}

TEST(CastTest, EveryPairOfTypesRoundsOnce) {
  Rng rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed));
  const int64_t n = 4096;
  std::vector<double> source(n);
  for (double &v : source)
    v = static_cast<double>(rng.normal()) * 1000.0;
  // f64 -> T -> f64 -> T is stable: the second conversion is exact.
  for (mpcrt_dtype to : {MPCRT_F16, MPCRT_BF16, MPCRT_F32}) {
    std::vector<uint8_t> once(n * 4), twice(n * 4);
    std::vector<double> back(n);
    mpcrt_cast(MPCRT_F64, source.data(), to, once.data(), n);
    mpcrt_cast(to, once.data(), MPCRT_F64, back.data(), n);
    mpcrt_cast(MPCRT_F64, back.data(), to, twice.data(), n);
    EXPECT_EQ(once, twice) << "dtype " << to;
    for (int64_t i = 0; i < n; ++i)
      ASSERT_LE(std::fabs(back[i] - source[i]),
                roundoff(to) * std::fabs(source[i]) * 1.0000001)
          << "dtype " << to << " value " << source[i];
  }
}

} // namespace

namespace {

TEST(Kernels, FusedMatmulMatchesFloat64) {
  std::mt19937 rng(std::random_device{}());
  unsigned seed = rng();
  rng.seed(seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  mpcrt::test::checkAllFusedMatmuls(
      rng, [](mpcrt_dtype in, mpcrt_dtype out, int32_t act,
              const mpcrt::test::FusedMatmulShape &s) {
        return [=](const std::vector<uint8_t> &a, const std::vector<uint8_t> &b,
                   const std::vector<uint8_t> &bias, std::vector<uint8_t> &c,
                   std::vector<uint8_t> *pre, int64_t aStride,
                   int64_t bStride) {
          mpcrt_fused_matmul(in, out, a.data(), aStride, b.data(), bStride,
                             bias.data(), c.data(), pre ? pre->data() : nullptr,
                             s.batch, s.m, s.n, s.k, s.transA, s.transB, act);
        };
      });
}

TEST(Kernels, StridedMatmulMatchesFloat64) {
  std::mt19937 rng(std::random_device{}());
  unsigned seed = rng();
  rng.seed(seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  mpcrt::test::checkAllStridedMatmuls(
      rng, [](mpcrt_dtype d, const mpcrt::test::StridedMatmulShape &s) {
        return [=](const std::vector<uint8_t> &a,
                   const mpcrt::test::Strides &as,
                   const std::vector<uint8_t> &b,
                   const mpcrt::test::Strides &bs, std::vector<uint8_t> &c,
                   const mpcrt::test::Strides &cs, int64_t offset) {
          int64_t bytes = mpcrt::test::elementBytes(d) * offset;
          mpcrt_strided_matmul(d, a.data() + bytes, as.data(), b.data() + bytes,
                               bs.data(), c.data() + bytes, cs.data(), s.outer,
                               s.inner, s.m, s.n, s.k, s.transA, s.transB);
        };
      });
}

TEST(Kernels, MatmulAddMatchesFloat64) {
  std::mt19937 rng(std::random_device{}());
  unsigned seed = rng();
  rng.seed(seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  mpcrt::test::checkAllMatmulAdds(
      rng, [](mpcrt_dtype in, mpcrt_dtype out,
              const mpcrt::test::FusedMatmulShape &s) {
        return [=](const std::vector<uint8_t> &a, const std::vector<uint8_t> &b,
                   const std::vector<uint8_t> &addend, std::vector<uint8_t> &c,
                   int64_t aStride, int64_t bStride, bool inPlace) {
          mpcrt_matmul_add(in, out, a.data(), aStride, b.data(), bStride,
                           inPlace ? c.data() : addend.data(), c.data(),
                           s.batch, s.m, s.n, s.k, s.transA, s.transB);
        };
      });
}

TEST(Kernels, MatmulActivationGradMatchesFloat64) {
  std::mt19937 rng(std::random_device{}());
  unsigned seed = rng();
  rng.seed(seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  mpcrt::test::checkAllMatmulActivationGrads(
      rng, [](mpcrt_dtype in, mpcrt_dtype out, int32_t act,
              const mpcrt::test::FusedMatmulShape &s) {
        return [=](const std::vector<uint8_t> &a, const std::vector<uint8_t> &b,
                   const std::vector<uint8_t> &saved, std::vector<uint8_t> &c,
                   int64_t aStride, int64_t bStride) {
          mpcrt_matmul_activation_grad(in, out, a.data(), aStride, b.data(),
                                       bStride, saved.data(), c.data(), s.batch,
                                       s.m, s.n, s.k, s.transA, s.transB, act);
        };
      });
}

TEST(Kernels, MatmulBiasGradMatchesFloat64) {
  std::mt19937 rng(std::random_device{}());
  unsigned seed = rng();
  rng.seed(seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  mpcrt::test::checkAllMatmulBiasGrads(
      rng, [](mpcrt_dtype in, mpcrt_dtype grad,
              const mpcrt::test::BiasGradShape &s, mpcrt::test::Addend with) {
        return [=](const std::vector<uint8_t> &a, const std::vector<uint8_t> &b,
                   const std::vector<uint8_t> &addend,
                   const std::vector<uint8_t> &biasAddend,
                   std::vector<uint8_t> &c, std::vector<uint8_t> &g) {
          using mpcrt::test::Addend;
          bool inPlace = with == Addend::InPlace;
          const void *add = addend.empty() ? nullptr
                            : inPlace      ? c.data()
                                           : addend.data();
          const void *biasAdd = biasAddend.empty() ? nullptr
                                : inPlace          ? g.data()
                                                   : biasAddend.data();
          mpcrt_matmul_bias_grad(in, add ? grad : in, grad, a.data(), b.data(),
                                 add, c.data(), biasAdd, g.data(), s.m, s.n,
                                 s.k, s.transA, s.sumsOfA);
        };
      });
}

// mpcrt_column_sums of several matrices (sibling layers' bias gradients)
// gives each the sums mpcrt_matmul_bias_grad takes of it alone, bit for
// bit, in every type (f32 sums of f16 and bf16), at rows and columns of
// no block's multiple; with addends (accumulators, apart and in place)
// the sums its bias addend gives.
TEST(Kernels, ColumnSumsOfAListEqualEachMatmulBiasGradsSums) {
  std::mt19937 rng(std::random_device{}());
  unsigned seed = rng();
  rng.seed(seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  const int64_t m = 3, n = 301, k = 517, count = 3;
  enum class With { None, Apart, InPlace };
  for (With with : {With::None, With::Apart, With::InPlace})
    for (mpcrt_dtype in : {MPCRT_F16, MPCRT_BF16, MPCRT_F32, MPCRT_F64}) {
      mpcrt_dtype grad = in == MPCRT_F16 || in == MPCRT_BF16 ? MPCRT_F32 : in;
      int64_t bytes = n * mpcrt::test::elementBytes(grad);
      std::vector<double> values;
      std::vector<uint8_t> x = mpcrt::test::randomOf(in, k * m, rng, values);
      std::vector<std::vector<uint8_t>> dy, addend, want, got;
      std::vector<const void *> inputs, addends;
      std::vector<void *> sums;
      for (int64_t i = 0; i < count; ++i) {
        dy.push_back(mpcrt::test::randomOf(in, k * n, rng, values));
        addend.push_back(mpcrt::test::randomOf(grad, n, rng, values));
        want.emplace_back(bytes);
        std::vector<uint8_t> c(m * n * mpcrt::test::elementBytes(in));
        mpcrt_matmul_bias_grad(in, in, grad, x.data(), dy[i].data(), nullptr,
                               c.data(),
                               with == With::None ? nullptr : addend[i].data(),
                               want[i].data(), m, n, k, 1, 0);
        got.push_back(with == With::InPlace
                          ? addend[i]
                          : std::vector<uint8_t>(bytes, 0xff));
      }
      for (int64_t i = 0; i < count; ++i) {
        inputs.push_back(dy[i].data());
        addends.push_back(with == With::InPlace ? got[i].data()
                                                : addend[i].data());
        sums.push_back(got[i].data());
      }
      mpcrt_column_sums(in, grad, count, inputs.data(),
                        with == With::None ? nullptr : addends.data(),
                        sums.data(), k, n);
      for (int64_t i = 0; i < count; ++i)
        ASSERT_EQ(got[i], want[i]) << "matrix " << i << " of dtype " << in
                                   << ", addends " << int(with);
    }
}

TEST(Kernels, MatmulBiasGradBiasAddendEqualsASeparateAdd) {
  std::mt19937 rng(std::random_device{}());
  unsigned seed = rng();
  rng.seed(seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  mpcrt::test::checkBiasAddendEqualsASeparateAdd(
      rng, [](mpcrt_dtype grad, int64_t m, int64_t n, int64_t k,
              const std::vector<uint8_t> &a, const std::vector<uint8_t> &b,
              const std::vector<uint8_t> &addend, std::vector<uint8_t> &sums,
              std::vector<uint8_t> &fused) {
        std::vector<uint8_t> c(m * n * 2);
        mpcrt_matmul_bias_grad(MPCRT_F16, MPCRT_F16, grad, a.data(), b.data(),
                               nullptr, c.data(), nullptr, sums.data(), m, n, k,
                               1, 0);
        mpcrt_matmul_bias_grad(MPCRT_F16, MPCRT_F16, grad, a.data(), b.data(),
                               nullptr, c.data(), addend.data(), fused.data(),
                               m, n, k, 1, 0);
      });
}

} // namespace
