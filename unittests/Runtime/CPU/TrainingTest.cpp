//===- TrainingTest.cpp - loss scaling and optimizer updates --------------===//

#include "mpc/Runtime/mpcrt.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

//===----------------------------------------------------------------------===//
// Loss scale update
//===----------------------------------------------------------------------===//

/// torch.amp.GradScaler.update as PyTorch documents it, plus Apex's
/// hysteresis and our clamps, written independently of the runtime.
struct ScalerModel {
  double scale = 65536.0;
  int growth = 0, hyst;
  double growthFactor = 2, backoffFactor = 0.5;
  int interval, hysteresis;
  double minScale = 0, maxScale = INFINITY;

  ScalerModel(int interval, int hysteresis)
      : hyst(hysteresis), interval(interval), hysteresis(hysteresis) {}

  void step(bool inf) {
    if (inf) {
      growth = 0;
      hyst -= 1;
      if (hyst > 0)
        return;
      hyst = 0;
      scale = std::fmax(static_cast<float>(scale * backoffFactor),
                        minScale > 0 ? minScale : 0.0);
      return;
    }
    hyst = hysteresis;
    if (++growth == interval) {
      growth = 0;
      float grown = static_cast<float>(scale * growthFactor);
      if (std::isfinite(grown))
        scale = std::fmin(grown, maxScale);
    }
  }
};

void expectTrace(int interval, int hysteresis, double minScale, double maxScale,
                 unsigned seed) {
  SCOPED_TRACE("seed " + std::to_string(seed) + " interval " +
               std::to_string(interval) + " hysteresis " +
               std::to_string(hysteresis));
  std::mt19937 rng(seed);
  ScalerModel model(interval, hysteresis);
  model.minScale = minScale;
  model.maxScale = maxScale;
  float scale = 65536.0f;
  int32_t growth = 0, hyst = hysteresis;
  for (int s = 0; s < 400; ++s) {
    // Bursts of overflow and long clean stretches.
    bool inf = (s / 17) % 3 == 0 ? rng() % 2 : rng() % 13 == 0;
    uint8_t flag = inf;
    mpcrt_update_loss_scale(&scale, &growth, &hyst, &flag, 2.0, 0.5, interval,
                            hysteresis, minScale, maxScale);
    model.step(inf);
    ASSERT_EQ(scale, static_cast<float>(model.scale)) << "step " << s;
    ASSERT_EQ(growth, model.growth) << "step " << s;
    ASSERT_EQ(hyst, model.hyst) << "step " << s;
  }
}

TEST(LossScale, MatchesGradScaler) {
  unsigned seed = std::random_device()();
  expectTrace(/*interval=*/3, /*hysteresis=*/1, 0, INFINITY, seed);
  expectTrace(/*interval=*/2000, /*hysteresis=*/1, 0, INFINITY, seed);
}

TEST(LossScale, HysteresisAndClamps) {
  unsigned seed = std::random_device()();
  expectTrace(/*interval=*/4, /*hysteresis=*/3, 0, INFINITY, seed);
  expectTrace(/*interval=*/2, /*hysteresis=*/2, 1024.0, 131072.0, seed);
}

TEST(LossScale, KnownSequence) {
  // growth_interval 2: clean, clean -> x2; inf -> x0.5 and reset.
  float scale = 8.0f;
  int32_t growth = 0, hyst = 1;
  uint8_t clean = 0, inf = 1;
  mpcrt_update_loss_scale(&scale, &growth, &hyst, &clean, 2, 0.5, 2, 1, 0,
                          INFINITY);
  EXPECT_EQ(scale, 8.0f);
  EXPECT_EQ(growth, 1);
  mpcrt_update_loss_scale(&scale, &growth, &hyst, &clean, 2, 0.5, 2, 1, 0,
                          INFINITY);
  EXPECT_EQ(scale, 16.0f);
  EXPECT_EQ(growth, 0);
  mpcrt_update_loss_scale(&scale, &growth, &hyst, &clean, 2, 0.5, 2, 1, 0,
                          INFINITY);
  mpcrt_update_loss_scale(&scale, &growth, &hyst, &inf, 2, 0.5, 2, 1, 0,
                          INFINITY);
  EXPECT_EQ(scale, 8.0f);
  EXPECT_EQ(growth, 0);
  // Growth never overflows the scale to infinity.
  scale = 3e38f;
  growth = 1;
  mpcrt_update_loss_scale(&scale, &growth, &hyst, &clean, 2, 0.5, 2, 1, 0,
                          INFINITY);
  EXPECT_EQ(scale, 3e38f);
  EXPECT_EQ(growth, 0);
}

//===----------------------------------------------------------------------===//
// Unscale and check
//===----------------------------------------------------------------------===//

TEST(Unscale, UnscalesEveryTensorAndFindsInfAndNaN) {
  std::mt19937 rng(std::random_device{}());
  std::normal_distribution<float> normal(0, 1000);
  std::vector<uint16_t> h(300), b(200);
  std::vector<float> f(100);
  for (auto &x : h)
    x = mpcrt_f32_to_f16(normal(rng));
  for (auto &x : b)
    x = mpcrt_f32_to_bf16(normal(rng));
  for (auto &x : f)
    x = normal(rng);
  mpcrt_dtype dtypes[] = {MPCRT_F16, MPCRT_BF16, MPCRT_F32};
  const void *grads[] = {h.data(), b.data(), f.data()};
  int64_t sizes[] = {300, 200, 100};
  std::vector<float> oh(300), ob(200), of(100);
  float *outs[] = {oh.data(), ob.data(), of.data()};
  float scale = 1024.0f;
  uint8_t found = 7;
  mpcrt_unscale_and_check(&scale, 3, dtypes, grads, sizes, outs, &found);
  EXPECT_EQ(found, 0);
  for (int i = 0; i < 300; ++i)
    ASSERT_EQ(oh[i], mpcrt_f16_to_f32(h[i]) * (1.0f / 1024.0f));
  for (int i = 0; i < 200; ++i)
    ASSERT_EQ(ob[i], mpcrt_bf16_to_f32(b[i]) * (1.0f / 1024.0f));
  for (int i = 0; i < 100; ++i)
    ASSERT_EQ(of[i], f[i] * (1.0f / 1024.0f));
  // An infinity in the last tensor, then a NaN in the first.
  f[99] = INFINITY;
  mpcrt_unscale_and_check(&scale, 3, dtypes, grads, sizes, outs, &found);
  EXPECT_EQ(found, 1);
  f[99] = 1;
  h[5] = 0x7e00; // f16 NaN
  mpcrt_unscale_and_check(&scale, 3, dtypes, grads, sizes, outs, &found);
  EXPECT_EQ(found, 1);
  // f16 max overflows f16 storage nowhere: finite.
  h[5] = 0x7bff;
  mpcrt_unscale_and_check(&scale, 3, dtypes, grads, sizes, outs, &found);
  EXPECT_EQ(found, 0);
}

// Clipping: the norm of the unscaled gradients, PyTorch's coefficient in
// the factor, and a non-finite element or norm as an overflow.
TEST(Clip, NormFactorAndOverflow) {
  std::vector<float> a{3.0f * 8, -4.0f * 8}; // (3, -4) * scale 8
  std::vector<uint16_t> b{mpcrt_f32_to_f16(12.0f * 8)};
  mpcrt_dtype dtypes[] = {MPCRT_F32, MPCRT_F16};
  const void *grads[] = {a.data(), b.data()};
  int64_t sizes[] = {2, 1};
  float scale = 8.0f, inv = -1, norm = -1;
  uint8_t found = 7;
  // norm sqrt(9 + 16 + 144) = 13: clipped to 2.6 by 0.2 / (1 + 1e-6 / 13).
  mpcrt_clip_grad_norm(&scale, 2, dtypes, grads, sizes, 2.6, &inv, &norm,
                       &found);
  EXPECT_EQ(found, 0);
  EXPECT_EQ(norm, 13.0f);
  EXPECT_EQ(inv, static_cast<float>(0.125 * (2.6 / (13.0 + 1e-6))));
  // Below the limit: the plain 1/scale.
  mpcrt_clip_grad_norm(&scale, 2, dtypes, grads, sizes, 100.0, &inv, &norm,
                       &found);
  EXPECT_EQ(inv, 0.125f);
  EXPECT_EQ(found, 0);
  // A NaN, or an infinity: found, and the factor stays finite.
  b[0] = 0x7e00;
  mpcrt_clip_grad_norm(&scale, 2, dtypes, grads, sizes, 1.0, &inv, &norm,
                       &found);
  EXPECT_EQ(found, 1);
  EXPECT_TRUE(std::isnan(norm));
  EXPECT_EQ(inv, 0.125f);
  b[0] = 0x7c00;
  mpcrt_clip_grad_norm(&scale, 2, dtypes, grads, sizes, 1.0, &inv, &norm,
                       &found);
  EXPECT_EQ(found, 1);
  EXPECT_TRUE(std::isinf(norm));
}

//===----------------------------------------------------------------------===//
// Gradient statistics
//===----------------------------------------------------------------------===//

TEST(GradStats, CountsZeroUnderflowAndNonFinite) {
  unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  // Magnitudes from 2^-45 to 2^12, random signs, some zeros and some
  // non-finite values, in every gradient type.
  std::uniform_real_distribution<double> exponent(-45, 12), unit(0, 1);
  auto draw = [&]() -> float {
    double u = unit(rng);
    if (u < 0.05)
      return 0.0f;
    if (u < 0.07)
      return u < 0.06 ? INFINITY : NAN;
    float v = static_cast<float>(std::exp2(exponent(rng)));
    return unit(rng) < 0.5 ? -v : v;
  };
  std::vector<uint16_t> h(500), b(400);
  std::vector<float> f(300);
  for (auto &x : h)
    x = mpcrt_f32_to_f16(draw());
  for (auto &x : b)
    x = mpcrt_f32_to_bf16(draw());
  for (auto &x : f)
    x = draw();
  mpcrt_dtype dtypes[] = {MPCRT_F16, MPCRT_BF16, MPCRT_F32};
  const void *grads[] = {h.data(), b.data(), f.data()};
  int64_t sizes[] = {500, 400, 300};
  for (float scale : {1.0f, 1000.0f, 65536.0f}) {
    // Reference: the true value grad/scale converted to f16 is zero.
    int64_t want[4] = {1200, 0, 0, 0};
    auto count = [&](float v) {
      if (v == 0.0f)
        ++want[1];
      else if (!std::isfinite(v))
        ++want[3];
      else if ((mpcrt_f32_to_f16(static_cast<float>(double(v) / scale)) &
                0x7fff) == 0)
        ++want[2];
    };
    for (uint16_t x : h)
      count(mpcrt_f16_to_f32(x));
    for (uint16_t x : b)
      count(mpcrt_bf16_to_f32(x));
    for (float x : f)
      count(x);
    int64_t got[4] = {-1, -1, -1, -1};
    mpcrt_grad_stats(&scale, 3, dtypes, grads, sizes, got);
    for (int i = 0; i < 4; ++i)
      EXPECT_EQ(got[i], want[i]) << "counter " << i << ", scale " << scale;
    // The draw covers every class.
    EXPECT_GT(want[1], 0);
    EXPECT_GT(want[2], 0);
    EXPECT_GT(want[3], 0);
  }
}

//===----------------------------------------------------------------------===//
// Optimizer updates against float64 closed form on a quadratic
//===----------------------------------------------------------------------===//

/// f(w) = 0.5 * |w - target|^2: gradient w - target, delivered in f16 and
/// scaled by the loss scale, as a mixed-precision step would.
struct Problem {
  std::vector<float> target, init;
  explicit Problem(int n, unsigned seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0, 1);
    for (int i = 0; i < n; ++i) {
      target.push_back(normal(rng));
      init.push_back(normal(rng));
    }
  }
  uint16_t scaledGrad(float w, int i, float scale) const {
    return mpcrt_f32_to_f16((w - target[i]) * scale);
  }
};

enum class Kind { Sgd, Momentum, Nesterov, Adam, AdamW, AdamNoBias };

struct Hyper {
  double lr = 0.1, momentum = 0.9, dampening = 0, wd = 0.01;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
};

void runAndCompare(Kind kind) {
  unsigned seed = std::random_device()();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const int n = 257, steps = 6;
  const float scale = 512.0f, inv = 1.0f / scale, lr = 0.1f;
  Problem problem(n, seed);
  Hyper hp;
  std::vector<float> w = problem.init, buf(n, 0), m(n, 0), v(n, 0);
  std::vector<double> rw(w.begin(), w.end()), rbuf(n, 0), rm(n, 0), rv(n, 0);
  std::vector<uint16_t> grad(n), copy(n);
  uint8_t clean = 0;
  for (int32_t t = 1; t <= steps; ++t) {
    for (int i = 0; i < n; ++i)
      grad[i] = problem.scaledGrad(w[i], i, scale);
    switch (kind) {
    case Kind::Sgd:
    case Kind::Momentum:
    case Kind::Nesterov:
      mpcrt_sgd_update_f32_f16(w.data(), grad.data(), &lr,
                               kind == Kind::Sgd ? nullptr : buf.data(), &clean,
                               &inv, MPCRT_F16, copy.data(), n,
                               kind == Kind::Sgd ? 0 : hp.momentum,
                               hp.dampening, kind == Kind::Nesterov, hp.wd);
      break;
    default:
      mpcrt_adam_update_f32_f16(
          w.data(), grad.data(), m.data(), v.data(), &lr, &t, &clean, &inv,
          MPCRT_F16, copy.data(), n, hp.beta1, hp.beta2, hp.eps, hp.wd,
          kind == Kind::AdamW, kind != Kind::AdamNoBias, 0);
    }
    // The float64 reference, from PyTorch's formulas, on the same gradients.
    for (int i = 0; i < n; ++i) {
      double g = static_cast<double>(mpcrt_f16_to_f32(grad[i])) / scale;
      if (kind == Kind::Sgd || kind == Kind::Momentum ||
          kind == Kind::Nesterov) {
        g += hp.wd * rw[i];
        if (kind != Kind::Sgd) {
          rbuf[i] = hp.momentum * rbuf[i] + (1 - hp.dampening) * g;
          g = kind == Kind::Nesterov ? g + hp.momentum * rbuf[i] : rbuf[i];
        }
        rw[i] -= hp.lr * g;
        continue;
      }
      if (kind == Kind::AdamW)
        rw[i] *= 1 - hp.lr * hp.wd;
      else
        g += hp.wd * rw[i];
      rm[i] = hp.beta1 * rm[i] + (1 - hp.beta1) * g;
      rv[i] = hp.beta2 * rv[i] + (1 - hp.beta2) * g * g;
      double mh = rm[i], vh = rv[i];
      if (kind != Kind::AdamNoBias) {
        mh /= 1 - std::pow(hp.beta1, t);
        vh /= 1 - std::pow(hp.beta2, t);
      }
      rw[i] -= hp.lr * mh / (std::sqrt(vh) + hp.eps);
    }
    for (int i = 0; i < n; ++i) {
      ASSERT_NEAR(w[i], rw[i], 2e-6 * (1 + std::fabs(rw[i])))
          << "step " << t << " element " << i;
      // The copy is the new master rounded to f16.
      ASSERT_EQ(copy[i], mpcrt_f32_to_f16(w[i]));
    }
  }
}

TEST(Optimizer, SgdMatchesClosedForm) { runAndCompare(Kind::Sgd); }
TEST(Optimizer, MomentumMatchesClosedForm) { runAndCompare(Kind::Momentum); }
TEST(Optimizer, NesterovMatchesClosedForm) { runAndCompare(Kind::Nesterov); }
TEST(Optimizer, AdamMatchesClosedForm) { runAndCompare(Kind::Adam); }
TEST(Optimizer, AdamWMatchesClosedForm) { runAndCompare(Kind::AdamW); }
TEST(Optimizer, AdamWithoutBiasCorrection) { runAndCompare(Kind::AdamNoBias); }

TEST(Optimizer, SkippedStepLeavesEverythingBitIdentical) {
  const int n = 64;
  std::mt19937 rng(std::random_device{}());
  std::normal_distribution<float> normal(0, 1);
  std::vector<float> w(n), m(n), v(n), buf(n);
  std::vector<uint16_t> grad(n), copy(n, 0xffff);
  for (int i = 0; i < n; ++i) {
    w[i] = normal(rng);
    m[i] = normal(rng);
    v[i] = std::fabs(normal(rng));
    buf[i] = normal(rng);
    grad[i] = mpcrt_f32_to_f16(normal(rng));
  }
  grad[3] = 0x7c00; // +inf: the step that found it is skipped
  auto w0 = w, m0 = m, v0 = v, b0 = buf;
  float lr = 0.1f, inv = 0.5f;
  int32_t step = 3;
  uint8_t found = 1;
  mpcrt_adam_update_f32_f16(w.data(), grad.data(), m.data(), v.data(), &lr,
                            &step, &found, &inv, MPCRT_BF16, copy.data(), n,
                            0.9, 0.999, 1e-8, 0.01, 1, 1, 0);
  mpcrt_adam_update_f32_f16(w.data(), grad.data(), m.data(), v.data(), &lr,
                            &step, &found, &inv, MPCRT_BF16, copy.data(), n,
                            0.9, 0.999, 1e-8, 0.01, 1, 1, 1); // LAMB
  mpcrt_sgd_update_f32_f16(w.data(), grad.data(), &lr, buf.data(), &found, &inv,
                           MPCRT_F16, nullptr, n, 0.9, 0, 0, 0);
  EXPECT_EQ(0, std::memcmp(w.data(), w0.data(), n * 4));
  EXPECT_EQ(0, std::memcmp(m.data(), m0.data(), n * 4));
  EXPECT_EQ(0, std::memcmp(v.data(), v0.data(), n * 4));
  EXPECT_EQ(0, std::memcmp(buf.data(), b0.data(), n * 4));
  for (int i = 0; i < n; ++i) {
    ASSERT_TRUE(std::isfinite(w[i]));
    // The copy is still defined on a skipped step.
    ASSERT_EQ(copy[i], mpcrt_f32_to_bf16(w[i]));
  }
}

TEST(Optimizer, LowPrecisionParametersTakeF32Gradients) {
  // O3 with gradient accumulation: f16/bf16 parameters, f32 (accumulated)
  // gradients. SGD with weight decay, against float64 rounded once to the
  // parameter type: the kernel computes in f32, so its result is within
  // one unit in the last place of the parameter type (a rounding boundary
  // may fall between the f32 and the f64 value).
  const int n = 300;
  unsigned seed = std::random_device()();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0, 1);
  const float lr = 0.05f, inv = 1.0f / 1024;
  const double wd = 0.01;
  uint8_t clean = 0;
  for (mpcrt_dtype p : {MPCRT_F16, MPCRT_BF16}) {
    auto toP = [&](double v) {
      float f = static_cast<float>(v);
      return p == MPCRT_F16 ? mpcrt_f32_to_f16(f) : mpcrt_f32_to_bf16(f);
    };
    auto fromP = [&](uint16_t b) {
      return p == MPCRT_F16 ? mpcrt_f16_to_f32(b) : mpcrt_bf16_to_f32(b);
    };
    std::vector<uint16_t> w(n), w0(n);
    std::vector<float> grad(n);
    for (int i = 0; i < n; ++i) {
      w[i] = w0[i] = toP(normal(rng));
      grad[i] = normal(rng) * 1024 * 7; // an accumulated, scaled sum
    }
    if (p == MPCRT_F16)
      mpcrt_sgd_update_f16_f32(w.data(), grad.data(), &lr, nullptr, &clean,
                               &inv, MPCRT_F32, nullptr, n, 0, 0, 0, wd);
    else
      mpcrt_sgd_update_bf16_f32(w.data(), grad.data(), &lr, nullptr, &clean,
                                &inv, MPCRT_F32, nullptr, n, 0, 0, 0, wd);
    for (int i = 0; i < n; ++i) {
      double w64 = fromP(w0[i]);
      double want = w64 - double(lr) * (double(grad[i]) * inv + wd * w64);
      uint16_t got = w[i], ref = toP(want);
      // Sign-magnitude bits to a line of consecutive integers.
      auto ordered = [](uint16_t b) {
        return (b & 0x8000) ? -int(b & 0x7fff) : int(b);
      };
      int ulps = std::abs(ordered(got) - ordered(ref));
      ASSERT_LE(ulps, 1) << "element " << i << ": " << fromP(got) << " against "
                         << want;
    }
  }
}

} // namespace

namespace {

/// The optimizers' type pairs: dtype codes, suffix, ABI types.
#define MPC_PAIRS(M)                                                           \
  M(MPCRT_F32, MPCRT_F16, f32_f16, float, uint16_t)                            \
  M(MPCRT_F32, MPCRT_BF16, f32_bf16, float, uint16_t)                          \
  M(MPCRT_F32, MPCRT_F32, f32_f32, float, float)                               \
  M(MPCRT_F16, MPCRT_F16, f16_f16, uint16_t, uint16_t)                         \
  M(MPCRT_BF16, MPCRT_BF16, bf16_bf16, uint16_t, uint16_t)                     \
  M(MPCRT_F64, MPCRT_F64, f64_f64, double, double)                             \
  M(MPCRT_F16, MPCRT_F32, f16_f32, uint16_t, float)                            \
  M(MPCRT_BF16, MPCRT_F32, bf16_f32, uint16_t, float)

/// mpcrt_adam_update_<p>_<g> (Adam or LAMB) by runtime types.
void adamSingle(mpcrt_dtype p, mpcrt_dtype g, void *param, const void *grad,
                void *m, void *v, const float *lr, const int32_t *step,
                const uint8_t *found, const float *inv, mpcrt_dtype copyDtype,
                void *copy, int64_t n, double wd, int32_t lamb) {
#define MPC_SINGLE(PD, GD, SUFFIX, P, G)                                       \
  if (p == PD && g == GD)                                                      \
    return mpcrt_adam_update_##SUFFIX(                                         \
        static_cast<P *>(param), static_cast<const G *>(grad),                 \
        static_cast<P *>(m), static_cast<P *>(v), lr, step, found, inv,        \
        copyDtype, copy, n, 0.9, 0.999, 1e-8, wd, 1, 1, lamb);
  MPC_PAIRS(MPC_SINGLE)
#undef MPC_SINGLE
  FAIL() << "no single-tensor update for " << p << "/" << g;
}

/// mpcrt_sgd_update_<p>_<g> by runtime types (momentum 0.9, Nesterov).
void sgdSingle(mpcrt_dtype p, mpcrt_dtype g, void *param, const void *grad,
               void *buffer, const float *lr, const uint8_t *found,
               const float *inv, mpcrt_dtype copyDtype, void *copy, int64_t n,
               double wd) {
#define MPC_SINGLE(PD, GD, SUFFIX, P, G)                                       \
  if (p == PD && g == GD)                                                      \
    return mpcrt_sgd_update_##SUFFIX(static_cast<P *>(param),                  \
                                     static_cast<const G *>(grad), lr,         \
                                     static_cast<P *>(buffer), found, inv,     \
                                     copyDtype, copy, n, 0.9, 0, 1, wd);
  MPC_PAIRS(MPC_SINGLE)
#undef MPC_SINGLE
  FAIL() << "no single-tensor update for " << p << "/" << g;
}
#undef MPC_PAIRS

size_t bytesOf(mpcrt_dtype d) {
  return d == MPCRT_F64 ? 8 : d == MPCRT_F32 ? 4 : 2;
}

/// `n` values of type `d` from `draw`, as bytes.
template <typename Draw>
std::vector<uint8_t> valuesOf(mpcrt_dtype d, int64_t n, Draw draw) {
  std::vector<double> values(n);
  for (double &x : values)
    x = draw();
  std::vector<uint8_t> bytes(n * bytesOf(d));
  mpcrt_cast(MPCRT_F64, values.data(), d, bytes.data(), n);
  return bytes;
}

} // namespace

TEST(Optimizer, MultiTensorUpdatesEqualOneCallPerTensor) {
  // Adam, LAMB and SGD (momentum, Nesterov): every type pair in one call (twice
  // each: with and without a copy), sizes that are multiples of nothing;
  // clean and skipped steps: every byte equals what one call per tensor
  // gives.
  unsigned seed = std::random_device()();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0, 1);
  auto draw = [&] { return normal(rng); };
  auto positive = [&] { return std::fabs(normal(rng)); };
  const std::pair<mpcrt_dtype, mpcrt_dtype> pairs[] = {
      {MPCRT_F32, MPCRT_F16}, {MPCRT_F32, MPCRT_BF16},  {MPCRT_F32, MPCRT_F32},
      {MPCRT_F16, MPCRT_F16}, {MPCRT_BF16, MPCRT_BF16}, {MPCRT_F64, MPCRT_F64},
      {MPCRT_F16, MPCRT_F32}, {MPCRT_BF16, MPCRT_F32}};
  struct Tensor {
    mpcrt_dtype p, g, copyDtype;
    int64_t n;
    std::vector<uint8_t> param, grad, m, v, copy;
  };
  std::vector<Tensor> tensors;
  for (int round = 0; round < 2; ++round)
    for (auto [p, g] : pairs) {
      int64_t n = 1 + 37 * int64_t(tensors.size());
      mpcrt_dtype copyDtype = round ? MPCRT_BF16 : p;
      tensors.push_back({p, g, copyDtype, n, valuesOf(p, n, draw),
                         valuesOf(g, n, draw), valuesOf(p, n, draw),
                         valuesOf(p, n, positive),
                         std::vector<uint8_t>(round ? n * 2 : 0, 0xff)});
    }
  float lr = 0.01f, inv = 1.0f / 512;
  int32_t step = 4;
  // 0: SGD, 1: Adam, 2: LAMB.
  for (int adam = 0; adam < 3; ++adam)
    for (uint8_t found : {0, 1}) {
      SCOPED_TRACE(std::string(adam == 2 ? "lamb"
                               : adam    ? "adam"
                                         : "sgd") +
                   (found ? " skipped" : " clean"));
      std::vector<Tensor> want = tensors, got = tensors;
      for (Tensor &t : want)
        if (adam)
          adamSingle(t.p, t.g, t.param.data(), t.grad.data(), t.m.data(),
                     t.v.data(), &lr, &step, &found, &inv, t.copyDtype,
                     t.copy.empty() ? nullptr : t.copy.data(), t.n, 0.01,
                     adam == 2);
        else
          sgdSingle(t.p, t.g, t.param.data(), t.grad.data(), t.m.data(), &lr,
                    &found, &inv, t.copyDtype,
                    t.copy.empty() ? nullptr : t.copy.data(), t.n, 0.01);
      std::vector<mpcrt_dtype> pd, gd, cd;
      std::vector<void *> params, ms, vs, copies;
      std::vector<const void *> grads;
      std::vector<int64_t> sizes;
      for (Tensor &t : got) {
        pd.push_back(t.p);
        gd.push_back(t.g);
        cd.push_back(t.copyDtype);
        params.push_back(t.param.data());
        grads.push_back(t.grad.data());
        ms.push_back(t.m.data());
        vs.push_back(t.v.data());
        copies.push_back(t.copy.empty() ? nullptr : t.copy.data());
        sizes.push_back(t.n);
      }
      if (adam)
        mpcrt_adam_update_multi(int64_t(got.size()), pd.data(), gd.data(),
                                params.data(), grads.data(), ms.data(),
                                vs.data(), cd.data(), copies.data(),
                                sizes.data(), &lr, &step, &found, &inv, 0.9,
                                0.999, 1e-8, 0.01, 1, 1, adam == 2);
      else
        mpcrt_sgd_update_multi(int64_t(got.size()), pd.data(), gd.data(),
                               params.data(), grads.data(), ms.data(),
                               cd.data(), copies.data(), sizes.data(), &lr,
                               &found, &inv, 0.9, 0, 1, 0.01);
      for (size_t t = 0; t < got.size(); ++t) {
        SCOPED_TRACE("tensor " + std::to_string(t));
        EXPECT_EQ(got[t].param, want[t].param);
        EXPECT_EQ(got[t].m, want[t].m);
        EXPECT_EQ(got[t].v, want[t].v);
        EXPECT_EQ(got[t].copy, want[t].copy);
        if (!found)
          EXPECT_NE(got[t].param, tensors[t].param);
      }
    }
}
