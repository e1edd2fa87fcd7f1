//===- SupportTest.cpp - initialisers, copies and the step counter --------===//

#include "TestSupport.h"

#include "mpc/Runtime/mpcrt.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <vector>

namespace {

TEST(Support, CopyAndZero) {
  mpcrt::test::Rng rng;
  std::vector<float> a(37), b(37, 1.f);
  for (float &x : a)
    x = static_cast<float>(rng());
  mpcrt_copy(b.data(), a.data(), 37 * 4);
  EXPECT_EQ(a, b);
  // Overlapping copy (memmove semantics).
  mpcrt_copy(b.data() + 1, b.data(), 36 * 4);
  for (int i = 1; i < 37; ++i)
    EXPECT_EQ(b[i], a[i - 1]);
  mpcrt_zero(b.data(), 37 * 4);
  for (float x : b)
    EXPECT_EQ(x, 0.f);
}

TEST(Support, FillRoundsToTheStorageType) {
  std::vector<uint16_t> h(5), bf(5);
  mpcrt_fill(MPCRT_F16, h.data(), 5, 0.1);
  mpcrt_fill(MPCRT_BF16, bf.data(), 5, 0.1);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(h[i], mpcrt_f32_to_f16(0.1f));
    EXPECT_EQ(bf[i], mpcrt_f32_to_bf16(0.1f));
  }
}

// Uniform draws lie in [a, b) with the moments of U(a, b); the same seed
// gives the same values on every call, another seed others.
TEST(Support, FillRandomUniform) {
  const int64_t n = 200001; // odd: the last pair is half used
  std::vector<double> x(n), y(n), z(n);
  mpcrt_fill_random(MPCRT_F64, x.data(), n, 0, -2.0, 3.0, 7);
  mpcrt_fill_random(MPCRT_F64, y.data(), n, 0, -2.0, 3.0, 7);
  mpcrt_fill_random(MPCRT_F64, z.data(), n, 0, -2.0, 3.0, 8);
  EXPECT_EQ(x, y);
  EXPECT_NE(x, z);
  double sum = 0, sq = 0;
  for (double v : x) {
    ASSERT_GE(v, -2.0);
    ASSERT_LT(v, 3.0);
    sum += v;
    sq += v * v;
  }
  double mean = sum / n, var = sq / n - mean * mean;
  // Standard errors: sd/sqrt(n) = 0.0032 for the mean; 5 of them.
  EXPECT_NEAR(mean, 0.5, 0.016);
  EXPECT_NEAR(var, 25.0 / 12.0, 0.03);
}

TEST(Support, FillRandomNormal) {
  const int64_t n = 200000;
  std::vector<float> x(n);
  mpcrt_fill_random(MPCRT_F32, x.data(), n, 1, 1.0, 0.02, 3);
  double sum = 0, sq = 0, fourth = 0;
  for (float v : x) {
    ASSERT_TRUE(std::isfinite(v));
    sum += v;
  }
  double mean = sum / n;
  for (float v : x) {
    double d = (v - mean) / 0.02;
    sq += d * d;
    fourth += d * d * d * d;
  }
  EXPECT_NEAR(mean, 1.0, 5 * 0.02 / std::sqrt(double(n)));
  EXPECT_NEAR(sq / n, 1.0, 0.02);
  // Kurtosis 3: Gaussian, not uniform (1.8).
  EXPECT_NEAR(fourth / n, 3.0, 0.1);
}

// A prefix of a fill equals the fill of the prefix: element i depends only
// on the seed and i, so any backend can fill in parallel.
TEST(Support, FillRandomIsPositional) {
  std::vector<float> whole(1001), part(300);
  mpcrt_fill_random(MPCRT_F32, whole.data(), 1001, 1, 0.0, 1.0, 11);
  mpcrt_fill_random(MPCRT_F32, part.data(), 300, 1, 0.0, 1.0, 11);
  EXPECT_EQ(0, std::memcmp(whole.data(), part.data(), 300 * sizeof(float)));
}

TEST(Support, StepCounter) {
  int64_t step = 41;
  mpcrt_increment_step(&step);
  EXPECT_EQ(step, 42);
  mpcrt_check_index(0, "nothing to report"); // returns
}

TEST(SupportDeathTest, BadIndexStopsWithTheOpLocation) {
  EXPECT_EXIT(mpcrt_check_index(4, "model.mlir:12:5: 'mpc.embedding'"),
              testing::ExitedWithCode(1),
              "error: model.mlir:12:5: 'mpc.embedding': index out of range at "
              "position 3 of the indices");
}

TEST(SupportDeathTest, BadLabelStopsWithTheOpLocationAndTheRange) {
  mpcrt_check_label(0, 10, "nothing to report"); // returns
  EXPECT_EXIT(mpcrt_check_label(7, 10, "model.mlir:30:9: 'mpc.cross_entropy'"),
              testing::ExitedWithCode(1),
              "error: model.mlir:30:9: 'mpc.cross_entropy': label out of range "
              "\\[0, 10\\) at position 6 of the labels");
}

} // namespace

namespace {

// The schedules against their formulas, evaluated independently in double.
TEST(Support, LearningRateSchedules) {
  auto at = [](int32_t step, int32_t kind, double base, int64_t warmup,
               int64_t total, double minLr) {
    float lr = -1.f;
    mpcrt_lr_schedule(&step, &lr, kind, base, warmup, total, minLr, 0.1, 0, 0.3,
                      25.0, 1e4, 0);
    return lr;
  };
  EXPECT_EQ(at(7, 0, 0.3, 0, 0, 0), 0.3f);
  // Linear warm-up over 4 steps, then constant.
  EXPECT_EQ(at(1, 1, 0.2, 4, 0, 0), static_cast<float>(0.2 * 1 / 4));
  EXPECT_EQ(at(3, 1, 0.2, 4, 0, 0), static_cast<float>(0.2 * 3 / 4));
  EXPECT_EQ(at(4, 1, 0.2, 4, 0, 0), 0.2f);
  EXPECT_EQ(at(100, 1, 0.2, 4, 0, 0), 0.2f);
  // Cosine: warm-up 10, down to 0.01 at step 110.
  const double pi = std::acos(-1.0);
  EXPECT_EQ(at(5, 2, 1.0, 10, 110, 0.01), 0.5f);
  EXPECT_EQ(at(10, 2, 1.0, 10, 110, 0.01), 1.0f);
  for (int32_t t : {11, 35, 60, 99, 110}) {
    double progress = (t - 10) / 100.0;
    double want = 0.01 + 0.99 * 0.5 * (1 + std::cos(pi * progress));
    EXPECT_EQ(at(t, 2, 1.0, 10, 110, 0.01), static_cast<float>(want)) << t;
  }
  EXPECT_EQ(at(60, 2, 1.0, 10, 110, 0.01), static_cast<float>(0.505));
  EXPECT_EQ(at(500, 2, 1.0, 10, 110, 0.01), 0.01f);
}

// PyTorch's schedulers: update t has the rate after t - 1 scheduler steps.
TEST(Support, PyTorchSchedules) {
  auto at = [](int32_t step, int32_t kind, double base, int64_t total,
               double gamma, int64_t stepSize, double pct, double div,
               double finalDiv, bool three) {
    float lr = -1.f;
    mpcrt_lr_schedule(&step, &lr, kind, base, 0, total, 0.0, gamma, stepSize,
                      pct, div, finalDiv, three);
    return lr;
  };
  // StepLR(step_size=3, gamma=0.5): 1 1 1 .5 .5 .5 .25
  for (int32_t t = 1; t <= 7; ++t)
    EXPECT_EQ(at(t, 4, 0.8, 0, 0.5, 3, 0, 0, 0, false),
              static_cast<float>(0.8 * std::pow(0.5, (t - 1) / 3)))
        << t;
  // ExponentialLR(gamma=0.9).
  for (int32_t t : {1, 2, 10})
    EXPECT_EQ(at(t, 5, 0.8, 0, 0.9, 0, 0, 0, 0, false),
              static_cast<float>(0.8 * std::pow(0.9, t - 1)))
        << t;
  // OneCycleLR(max_lr=1, total_steps=100, pct_start=0.25, div_factor=10,
  // final_div_factor=100): 0.1 at the first update, 1 at scheduler step
  // 24 (= 0.25 * 100 - 1), 0.001 at the last (step 99), cosine between.
  const double pi = std::acos(-1.0);
  auto cycle = [&](int32_t t, bool three) {
    return at(t, 3, 1.0, 100, 0, 0, 0.25, 10, 100, three);
  };
  EXPECT_EQ(cycle(1, false), 0.1f);
  EXPECT_EQ(cycle(25, false), 1.0f);
  EXPECT_EQ(cycle(100, false), 0.001f);
  EXPECT_EQ(cycle(200, false), 0.001f); // held after the last step
  double s = 10; // scheduler step of update 11, in the rising phase
  EXPECT_EQ(
      cycle(11, false),
      static_cast<float>(1.0 + (0.1 - 1.0) / 2 * (std::cos(pi * s / 24) + 1)));
  s = 60; // falling: from 1 at step 24 to 0.001 at step 99
  EXPECT_EQ(cycle(61, false),
            static_cast<float>(0.001 + (1.0 - 0.001) / 2 *
                                           (std::cos(pi * (s - 24) / 75) + 1)));
  // Three phases: up until 24, back to 0.1 at 48, down to 0.001 at 99.
  EXPECT_EQ(cycle(25, true), 1.0f);
  EXPECT_EQ(cycle(49, true), 0.1f);
  s = 70;
  EXPECT_EQ(cycle(71, true),
            static_cast<float>(0.001 + (0.1 - 0.001) / 2 *
                                           (std::cos(pi * (s - 48) / 51) + 1)));
}

} // namespace

namespace {

// The max's gradient goes to the maxima, shared evenly among ties.
TEST(ReduceMaxBackward, SharesTiesEvenly) {
  // [outer 2, reduced 3, inner 1]: row 0 has one maximum, row 1 two.
  const float in[6] = {1.f, 5.f, 2.f, 4.f, -1.f, 4.f};
  const float max[2] = {5.f, 4.f}, grad[2] = {3.f, 1.f};
  float out[6];
  mpcrt_reduce_max_backward_f32(grad, in, max, out, 2, 3, 1);
  const float want[6] = {0.f, 3.f, 0.f, 0.5f, 0.f, 0.5f};
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(out[i], want[i]) << i;
}

} // namespace
