//===- ConvTest.cpp - convolutions and layer normalisation ----------------===//
//
// Forward kernels against formulas written here in float64; backward
// kernels through identities that do not reuse their code (the adjoint
// identity for convolutions, finite differences for layer norm); f16, bf16
// and f32 instances against the f64 instance.
//
//===----------------------------------------------------------------------===//

#include "TestSupport.h"
#include "mpc/Runtime/mpcrt.h"

#include "gtest/gtest.h"

#include <cmath>
#include <random>
#include <vector>

namespace {

using namespace mpcrt::test;

mpcrt_conv2d_shape makeShape(int64_t stride, int64_t pad, int64_t dilation,
                             int64_t groups) {
  mpcrt_conv2d_shape s{};
  s.n = 2, s.h = 9, s.w = 7, s.c = 4, s.o = 6, s.kh = 3, s.kw = 2;
  s.stride_h = s.stride_w = stride;
  s.pad_h = s.pad_w = pad;
  s.dilation_h = s.dilation_w = dilation;
  s.groups = groups;
  s.ho = (s.h + 2 * pad - dilation * (s.kh - 1) - 1) / stride + 1;
  s.wo = (s.w + 2 * pad - dilation * (s.kw - 1) - 1) / stride + 1;
  return s;
}

class ConvTest
    : public ::testing::TestWithParam<std::tuple<int, int, int, int>> {};

TEST_P(ConvTest, ForwardMatchesDefinitionAndBackwardIsItsAdjoint) {
  auto [stride, pad, dilation, groups] = GetParam();
  mpcrt_conv2d_shape s = makeShape(stride, pad, dilation, groups);
  Rng rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed));
  int64_t cg = s.c / s.groups, og = s.o / s.groups;
  auto x = rng.vec(s.n * s.h * s.w * s.c), w = rng.vec(s.o * s.kh * s.kw * cg),
       dy = rng.vec(s.n * s.ho * s.wo * s.o);
  std::vector<double> y(dy.size()), dx(x.size()), dw(w.size());
  mpcrt_conv2d_f64(x.data(), w.data(), y.data(), &s);
  mpcrt_conv2d_backward_data_f64(dy.data(), w.data(), dx.data(), &s);
  mpcrt_conv2d_backward_filter_f64(dy.data(), x.data(), dw.data(), &s);

  // The definition, written with explicit 6-d indexing.
  auto X = [&](int64_t n, int64_t h, int64_t ww, int64_t c) {
    if (h < 0 || h >= s.h || ww < 0 || ww >= s.w)
      return 0.0;
    return x[((n * s.h + h) * s.w + ww) * s.c + c];
  };
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t oy = 0; oy < s.ho; ++oy)
      for (int64_t ox = 0; ox < s.wo; ++ox)
        for (int64_t o = 0; o < s.o; ++o) {
          double ref = 0;
          for (int64_t i = 0; i < s.kh; ++i)
            for (int64_t j = 0; j < s.kw; ++j)
              for (int64_t c = 0; c < cg; ++c)
                ref += X(n, oy * stride - pad + i * dilation,
                         ox * stride - pad + j * dilation, (o / og) * cg + c) *
                       w[((o * s.kh + i) * s.kw + j) * cg + c];
          ASSERT_NEAR(y[((n * s.ho + oy) * s.wo + ox) * s.o + o], ref, 1e-12);
        }

  // <conv(x, w), dy> = <x, dx> = <w, dw>.
  double lhs = dot(y, dy);
  EXPECT_NEAR(dot(x, dx), lhs, 1e-10 * (1 + std::fabs(lhs)));
  EXPECT_NEAR(dot(w, dw), lhs, 1e-10 * (1 + std::fabs(lhs)));
}

INSTANTIATE_TEST_SUITE_P(Shapes, ConvTest,
                         ::testing::Values(std::make_tuple(1, 0, 1, 1),
                                           std::make_tuple(2, 1, 1, 1),
                                           std::make_tuple(1, 2, 2, 1),
                                           std::make_tuple(2, 1, 2, 2),
                                           std::make_tuple(3, 0, 1, 2),
                                           std::make_tuple(1, 1, 1, 2)));

/// f16/bf16/f32 kernels on inputs exact in that type agree with the f64
/// kernel within one rounding plus f32 accumulation; stride 2 takes the
/// im2col kernels, stride 1 the shifted-GEMM ones.
class ConvPrecision : public ::testing::TestWithParam<int> {};

TEST_P(ConvPrecision, LowPrecisionMatchesF64) {
  mpcrt_conv2d_shape s = makeShape(GetParam(), 1, 1, 2);
  Rng rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed));
  int64_t cg = s.c / s.groups;
  size_t nx = s.n * s.h * s.w * s.c, nw = s.o * s.kh * s.kw * cg,
         ny = s.n * s.ho * s.wo * s.o;
  for (int kind = 0; kind < 3; ++kind) {
    auto round = [&](double v) -> double {
      return kind == 0   ? mpcrt_f16_to_f32(mpcrt_f32_to_f16((float)v))
             : kind == 1 ? mpcrt_bf16_to_f32(mpcrt_f32_to_bf16((float)v))
                         : (double)(float)v;
    };
    double u = kind == 0   ? std::ldexp(1.0, -11)
               : kind == 1 ? std::ldexp(1.0, -8)
                           : std::ldexp(1.0, -24);
    auto x = rng.vec(nx), w = rng.vec(nw), dy = rng.vec(ny);
    for (auto *v : {&x, &w, &dy})
      for (double &e : *v)
        e = round(e);
    std::vector<double> ry(ny), rdx(nx), rdw(nw);
    mpcrt_conv2d_f64(x.data(), w.data(), ry.data(), &s);
    mpcrt_conv2d_backward_data_f64(dy.data(), w.data(), rdx.data(), &s);
    mpcrt_conv2d_backward_filter_f64(dy.data(), x.data(), rdw.data(), &s);
    auto check = [&](auto convert, auto back) {
      auto X = convert(x), W = convert(w), DY = convert(dy);
      auto Y = convert(ry), DX = convert(rdx), DW = convert(rdw);
      if constexpr (std::is_same_v<typename decltype(X)::value_type, float>) {
        mpcrt_conv2d_f32(X.data(), W.data(), Y.data(), &s);
        mpcrt_conv2d_backward_data_f32(DY.data(), W.data(), DX.data(), &s);
        mpcrt_conv2d_backward_filter_f32(DY.data(), X.data(), DW.data(), &s);
      } else if (kind == 0) {
        mpcrt_conv2d_f16(X.data(), W.data(), Y.data(), &s);
        mpcrt_conv2d_backward_data_f16(DY.data(), W.data(), DX.data(), &s);
        mpcrt_conv2d_backward_filter_f16(DY.data(), X.data(), DW.data(), &s);
      } else {
        mpcrt_conv2d_bf16(X.data(), W.data(), Y.data(), &s);
        mpcrt_conv2d_backward_data_bf16(DY.data(), W.data(), DX.data(), &s);
        mpcrt_conv2d_backward_filter_bf16(DY.data(), X.data(), DW.data(), &s);
      }
      // Up to 2*ho*wo*n terms of magnitude <= 1 per filter-gradient element.
      double terms = 2.0 * s.n * s.ho * s.wo;
      for (size_t i = 0; i < ny; ++i)
        ASSERT_NEAR(back(Y[i]), ry[i], u * std::fabs(ry[i]) + 1e-5);
      for (size_t i = 0; i < nx; ++i)
        ASSERT_NEAR(back(DX[i]), rdx[i], u * std::fabs(rdx[i]) + 1e-5);
      for (size_t i = 0; i < nw; ++i)
        ASSERT_NEAR(back(DW[i]), rdw[i],
                    u * std::fabs(rdw[i]) + terms * std::ldexp(1.0, -23));
    };
    if (kind == 2)
      check(
          [](const std::vector<double> &v) {
            return std::vector<float>(v.begin(), v.end());
          },
          [](float f) { return (double)f; });
    else
      check(
          [&](const std::vector<double> &v) {
            std::vector<uint16_t> h(v.size());
            for (size_t i = 0; i < v.size(); ++i)
              h[i] = kind == 0 ? mpcrt_f32_to_f16((float)v[i])
                               : mpcrt_f32_to_bf16((float)v[i]);
            return h;
          },
          [&](uint16_t h) {
            return kind == 0 ? (double)mpcrt_f16_to_f32(h)
                             : (double)mpcrt_bf16_to_f32(h);
          });
  }
}

INSTANTIATE_TEST_SUITE_P(Strides, ConvPrecision, ::testing::Values(2, 1));

/// mpcrt_conv2d_add: the addend joins the f32 sums before their one
/// rounding to f16. The addend is minus the f16 rounding of the exact
/// convolution, so the result is the rounding's residual (a tiny value, one
/// rounding of its own): a kernel that rounded the convolution first, then
/// added, would give 0 wherever f32 accumulation rounds as f64 does. In
/// place (the output holding the addend) the same bits; f64 against the
/// convolution plus the addend. Stride 2 takes the im2col kernels, stride 1
/// the shifted-GEMM ones.
class ConvAddend : public ::testing::TestWithParam<int> {};

TEST_P(ConvAddend, AddsBeforeTheOneRounding) {
  mpcrt_conv2d_shape s = makeShape(GetParam(), 1, 1, 1);
  Rng rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed));
  size_t nx = s.n * s.h * s.w * s.c, nw = s.o * s.kh * s.kw * s.c,
         ny = s.n * s.ho * s.wo * s.o;
  auto f16 = [](double v) { return mpcrt_f32_to_f16(static_cast<float>(v)); };
  auto x = rng.vec(nx), w = rng.vec(nw), a = rng.vec(ny, -4, 4);
  std::vector<double> ref(ny), sum(ny);
  mpcrt_conv2d_f64(x.data(), w.data(), ref.data(), &s);
  mpcrt_conv2d_add_f64(x.data(), w.data(), a.data(), sum.data(), &s);
  for (size_t i = 0; i < ny; ++i)
    ASSERT_NEAR(sum[i], ref[i] + a[i], 1e-12 * (1 + std::fabs(a[i])));

  std::vector<uint16_t> X(nx), W(nw), A(ny), Y(ny);
  for (size_t i = 0; i < nx; ++i)
    X[i] = f16(x[i]);
  for (size_t i = 0; i < nw; ++i)
    W[i] = f16(w[i]);
  std::vector<double> xr(nx), wr(nw), exact(ny);
  for (size_t i = 0; i < nx; ++i)
    xr[i] = mpcrt_f16_to_f32(X[i]);
  for (size_t i = 0; i < nw; ++i)
    wr[i] = mpcrt_f16_to_f32(W[i]);
  mpcrt_conv2d_f64(xr.data(), wr.data(), exact.data(), &s);
  for (size_t i = 0; i < ny; ++i)
    A[i] = mpcrt_f32_to_f16(-mpcrt_f16_to_f32(f16(exact[i])));
  mpcrt_conv2d_add_f16(X.data(), W.data(), A.data(), Y.data(), &s);
  std::vector<uint16_t> inPlace = A;
  mpcrt_conv2d_add_f16(X.data(), W.data(), inPlace.data(), inPlace.data(), &s);
  // Up to kh*kw*c = 24 products of magnitude <= 1, summed in f32.
  const double accumulation = 24 * 2 * std::ldexp(1.0, -24);
  int64_t residuals = 0;
  for (size_t i = 0; i < ny; ++i) {
    double want = exact[i] + mpcrt_f16_to_f32(A[i]);
    double got = mpcrt_f16_to_f32(Y[i]);
    ASSERT_NEAR(got, want,
                std::ldexp(1.0, -11) * std::fabs(want) + accumulation)
        << "at " << i;
    ASSERT_EQ(Y[i], inPlace[i]) << "in place, at " << i;
    residuals += std::fabs(want) > 4 * accumulation && got != 0;
  }
  // Most residuals are far above f32's accumulation error: they survive.
  EXPECT_GT(residuals, static_cast<int64_t>(ny) / 2);
}

INSTANTIATE_TEST_SUITE_P(Strides, ConvAddend, ::testing::Values(2, 1));

TEST(LayerNorm, ForwardAndBackwardInF64) {
  Rng rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed));
  const int64_t rows = 3, cols = 17;
  const double eps = 1e-5;
  auto x = rng.vec(rows * cols), g = rng.vec(cols), b = rng.vec(cols),
       dy = rng.vec(rows * cols);
  std::vector<double> y(rows * cols), mean(rows), rstd(rows), dx(rows * cols),
      dg(cols), db(cols);
  mpcrt_layer_norm_f64(x.data(), MPCRT_F64, g.data(), b.data(), y.data(),
                       mean.data(), rstd.data(), rows, cols, eps);
  auto forward = [&](const std::vector<double> &xx,
                     const std::vector<double> &gg,
                     const std::vector<double> &bb) {
    std::vector<double> out(rows * cols);
    for (int64_t r = 0; r < rows; ++r) {
      double mu = 0, var = 0;
      for (int64_t c = 0; c < cols; ++c)
        mu += xx[r * cols + c] / cols;
      for (int64_t c = 0; c < cols; ++c)
        var += (xx[r * cols + c] - mu) * (xx[r * cols + c] - mu) / cols;
      for (int64_t c = 0; c < cols; ++c)
        out[r * cols + c] =
            (xx[r * cols + c] - mu) / std::sqrt(var + eps) * gg[c] + bb[c];
    }
    return out;
  };
  auto ref = forward(x, g, b);
  for (int64_t i = 0; i < rows * cols; ++i)
    ASSERT_NEAR(y[i], ref[i], 1e-12);

  mpcrt_layer_norm_backward_f64(dy.data(), x.data(), mean.data(), rstd.data(),
                                MPCRT_F64, g.data(), dx.data(), dg.data(),
                                db.data(), nullptr, nullptr, rows, cols);
  // d/dv sum(dy * forward) by central differences, for every x, gamma, beta.
  auto loss = [&] { return dot(dy, forward(x, g, b)); };
  auto ndx = numericGradient(x, loss), ndg = numericGradient(g, loss),
       ndb = numericGradient(b, loss);
  for (size_t i = 0; i < x.size(); ++i)
    ASSERT_NEAR(dx[i], ndx[i], 1e-6) << "x " << i;
  for (size_t i = 0; i < g.size(); ++i) {
    ASSERT_NEAR(dg[i], ndg[i], 1e-6) << "gamma " << i;
    ASSERT_NEAR(db[i], ndb[i], 1e-6) << "beta " << i;
  }
}

TEST(LayerNorm, F16InputWithF32ParametersMatchesF64) {
  Rng rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed));
  const int64_t rows = 4, cols = 256;
  std::vector<uint16_t> x(rows * cols), y(rows * cols), dy(rows * cols),
      dx(rows * cols);
  std::vector<double> xd(rows * cols), dyd(rows * cols);
  for (int64_t i = 0; i < rows * cols; ++i) {
    x[i] = mpcrt_f32_to_f16(static_cast<float>(rng() * 4 + 1));
    dy[i] = mpcrt_f32_to_f16(static_cast<float>(rng()));
    xd[i] = mpcrt_f16_to_f32(x[i]);
    dyd[i] = mpcrt_f16_to_f32(dy[i]);
  }
  std::vector<float> g(cols), b(cols), mean(rows), rstd(rows), dg(cols),
      db(cols);
  std::vector<double> gd(cols), bd(cols);
  for (int64_t c = 0; c < cols; ++c) {
    g[c] = static_cast<float>(rng() + 1.5);
    b[c] = static_cast<float>(rng());
    gd[c] = g[c];
    bd[c] = b[c];
  }
  mpcrt_layer_norm_f16(x.data(), MPCRT_F32, g.data(), b.data(), y.data(),
                       mean.data(), rstd.data(), rows, cols, 1e-5);
  mpcrt_layer_norm_backward_f16(dy.data(), x.data(), mean.data(), rstd.data(),
                                MPCRT_F32, g.data(), dx.data(), dg.data(),
                                db.data(), nullptr, nullptr, rows, cols);
  std::vector<double> ry(rows * cols), rmean(rows), rrstd(rows),
      rdx(rows * cols), rdg(cols), rdb(cols);
  mpcrt_layer_norm_f64(xd.data(), MPCRT_F64, gd.data(), bd.data(), ry.data(),
                       rmean.data(), rrstd.data(), rows, cols, 1e-5);
  mpcrt_layer_norm_backward_f64(
      dyd.data(), xd.data(), rmean.data(), rrstd.data(), MPCRT_F64, gd.data(),
      rdx.data(), rdg.data(), rdb.data(), nullptr, nullptr, rows, cols);
  double u = std::ldexp(1.0, -11);
  for (int64_t i = 0; i < rows * cols; ++i) {
    ASSERT_NEAR(mpcrt_f16_to_f32(y[i]), ry[i], u * std::fabs(ry[i]) + 1e-5);
    ASSERT_NEAR(mpcrt_f16_to_f32(dx[i]), rdx[i], u * std::fabs(rdx[i]) + 1e-4);
  }
  for (int64_t r = 0; r < rows; ++r) {
    EXPECT_NEAR(mean[r], rmean[r], 1e-6 * std::fabs(rmean[r]));
    EXPECT_NEAR(rstd[r], rrstd[r], 1e-5 * std::fabs(rrstd[r]));
  }
  for (int64_t c = 0; c < cols; ++c) {
    EXPECT_NEAR(dg[c], rdg[c], 1e-5 * (1 + std::fabs(rdg[c])));
    EXPECT_NEAR(db[c], rdb[c], 1e-5 * (1 + std::fabs(rdb[c])));
  }
}

} // namespace
