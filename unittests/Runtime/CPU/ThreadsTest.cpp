//===- ThreadsTest.cpp - results do not depend on --threads ---------------===//
//
// Each threaded kernel, at sizes large enough to be split into several
// blocks, run with 1, 2 and 3 threads on fresh random inputs: the results
// must be bit-identical (the blocks depend on the sizes only). The blocked
// products are also checked against a float64 reference, since the blocks
// are where a wrong offset would show.
//
//===----------------------------------------------------------------------===//

#include "TestSupport.h"
#include "mpc/Runtime/mpcrt.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <tuple>
#include <vector>

namespace {

using namespace mpcrt::test;

/// Runs fn once per thread count and expects the bytes it returns to be
/// the same each time.
template <typename Fn> void expectSameWithAnyThreadCount(Fn fn) {
  mpcrt_set_threads(1);
  auto first = fn();
  for (int threads : {2, 3}) {
    mpcrt_set_threads(threads);
    auto again = fn();
    ASSERT_EQ(first.size(), again.size());
    EXPECT_EQ(std::memcmp(first.data(), again.data(),
                          first.size() * sizeof(first[0])),
              0)
        << threads << " threads";
  }
  mpcrt_set_threads(0);
}

std::vector<float> randomFloats(Rng &rng, size_t n) {
  std::vector<float> v(n);
  for (float &x : v)
    x = rng.normal();
  return v;
}

TEST(Threads, BlockedMatmulMatchesFloat64WithAnyThreadCount) {
  Rng rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed));
  // Split by rows (m > n) and by columns (n > m), with transposes.
  for (auto sizes :
       {std::tuple<int64_t, int64_t, int64_t>{700, 90, 40}, {60, 900, 33}}) {
    int64_t m = std::get<0>(sizes), n = std::get<1>(sizes),
            k = std::get<2>(sizes);
    for (int t = 0; t < 4; ++t) {
      bool ta = t & 1, tb = t & 2;
      auto a = randomFloats(rng, m * k), b = randomFloats(rng, k * n);
      std::vector<float> c;
      expectSameWithAnyThreadCount([&] {
        c.assign(m * n, NAN);
        mpcrt_matmul_f32(a.data(), 0, b.data(), 0, c.data(), 1, m, n, k, ta,
                         tb);
        return c;
      });
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double ref = 0, mag = 0;
          for (int64_t l = 0; l < k; ++l) {
            double x = a[ta ? l * m + i : i * k + l];
            double y = b[tb ? j * k + l : l * n + j];
            ref += x * y;
            mag += std::fabs(x * y);
          }
          ASSERT_NEAR(c[i * n + j], ref, k * std::ldexp(1.0, -24) * mag + 1e-30)
              << m << "x" << n << "x" << k << " trans " << ta << tb << " at "
              << i << "," << j;
        }
    }
  }
}

TEST(Threads, ConvolutionsAreTheSameWithAnyThreadCount) {
  Rng rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed));
  mpcrt_conv2d_shape s{};
  // Enough output positions for several im2col blocks and a product split
  // by rows.
  s.n = 4, s.h = 32, s.w = 30, s.c = 16, s.o = 32, s.kh = 3, s.kw = 3;
  s.stride_h = s.stride_w = 1, s.pad_h = s.pad_w = 1;
  s.dilation_h = s.dilation_w = 1, s.groups = 2;
  s.ho = s.h, s.wo = s.w;
  auto x = randomFloats(rng, s.n * s.h * s.w * s.c);
  auto w = randomFloats(rng, s.o * s.kh * s.kw * (s.c / s.groups));
  auto dy = randomFloats(rng, s.n * s.ho * s.wo * s.o);
  expectSameWithAnyThreadCount([&] {
    std::vector<float> y(dy.size()), dx(x.size()), dw(w.size()), all;
    mpcrt_conv2d_f32(x.data(), w.data(), y.data(), &s);
    mpcrt_conv2d_backward_data_f32(dy.data(), w.data(), dx.data(), &s);
    mpcrt_conv2d_backward_filter_f32(dy.data(), x.data(), dw.data(), &s);
    for (auto *v : {&y, &dx, &dw})
      all.insert(all.end(), v->begin(), v->end());
    return all;
  });
}

TEST(Threads, NormalisationReductionsAndLossesAreTheSameWithAnyThreadCount) {
  Rng rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed));
  const int64_t rows = 5000, c = 24, classes = 37, ceRows = 4000;
  auto x = randomFloats(rng, rows * c), dy = randomFloats(rng, rows * c);
  auto gamma = randomFloats(rng, c), beta = randomFloats(rng, c);
  auto logits = randomFloats(rng, ceRows * classes);
  std::vector<int32_t> labels(ceRows);
  for (int32_t &l : labels)
    l = static_cast<int32_t>(rng.uniform(0, classes));
  expectSameWithAnyThreadCount([&] {
    std::vector<float> runMean(c, 0.f), runVar(c, 1.f), y(rows * c), mean(c),
        invstd(c), dx(rows * c), dg(c), db(c), sums(c), loss(1),
        dlogits(ceRows * classes), one{1.f}, all;
    mpcrt_batch_norm_f32(x.data(), MPCRT_F32, gamma.data(), beta.data(),
                         runMean.data(), runVar.data(), y.data(), mean.data(),
                         invstd.data(), rows, c, 0.1, 1e-5, MPCRT_RELU);
    mpcrt_batch_norm_backward_f32(dy.data(), x.data(), MPCRT_F32, gamma.data(),
                                  mean.data(), invstd.data(), dx.data(),
                                  dg.data(), db.data(), rows, c, y.data(),
                                  nullptr, nullptr, nullptr);
    mpcrt_reduce_f32(MPCRT_REDUCE_SUM, x.data(), sums.data(), 1, rows, c);
    EXPECT_EQ(mpcrt_cross_entropy_f32(logits.data(), labels.data(), 32,
                                      loss.data(), ceRows, classes, 1, 0, 0,
                                      0.1),
              0);
    mpcrt_cross_entropy_backward_f32(one.data(), logits.data(), labels.data(),
                                     32, dlogits.data(), ceRows, classes, 1, 0,
                                     0, 0.1);
    for (auto *v : {&runMean, &runVar, &y, &mean, &invstd, &dx, &dg, &db, &sums,
                    &loss, &dlogits})
      all.insert(all.end(), v->begin(), v->end());
    return all;
  });
}

TEST(Threads, RowKernelsDropoutLossesAndCastsAreTheSameWithAnyThreadCount) {
  Rng rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed));
  const int64_t rows = 3000, cols = 48, count = rows * cols;
  auto x = randomFloats(rng, count), dy = randomFloats(rng, count),
       t = randomFloats(rng, count);
  auto gamma = randomFloats(rng, cols), beta = randomFloats(rng, cols);
  const int64_t step = 7;
  expectSameWithAnyThreadCount([&] {
    std::vector<float> y(count), mean(rows), rstd(rows), dx(count), dg(cols),
        db(cols), soft(count), dsoft(count), drop(count), ddrop(count), loss(1),
        dloss(count), one{1.f}, all;
    std::vector<uint8_t> mask(count);
    std::vector<uint16_t> half(count);
    mpcrt_layer_norm_f32(x.data(), MPCRT_F32, gamma.data(), beta.data(),
                         y.data(), mean.data(), rstd.data(), rows, cols, 1e-5);
    mpcrt_layer_norm_backward_f32(dy.data(), x.data(), mean.data(), rstd.data(),
                                  MPCRT_F32, gamma.data(), dx.data(), dg.data(),
                                  db.data(), nullptr, nullptr, rows, cols);
    mpcrt_softmax_f32(x.data(), soft.data(), rows, cols, 0);
    mpcrt_softmax_backward_f32(dy.data(), soft.data(), dsoft.data(), rows, cols,
                               0);
    mpcrt_dropout_f32(x.data(), drop.data(), mask.data(), count, 0.3, 11,
                      &step);
    mpcrt_dropout_backward_f32(dy.data(), mask.data(), ddrop.data(), count,
                               0.3);
    mpcrt_pointwise_loss_f32(0, x.data(), t.data(), loss.data(), count, 1);
    mpcrt_pointwise_loss_backward_f32(0, one.data(), x.data(), t.data(),
                                      dloss.data(), count, 1);
    mpcrt_cast(MPCRT_F32, x.data(), MPCRT_F16, half.data(), count);
    for (auto *v : {&y, &mean, &rstd, &dx, &dg, &db, &soft, &dsoft, &drop,
                    &ddrop, &loss, &dloss})
      all.insert(all.end(), v->begin(), v->end());
    for (size_t i = 0; i < mask.size(); ++i)
      all.push_back(mask[i] + half[i]);
    return all;
  });
}

TEST(Threads, EmbeddingAndUpsamplingAreTheSameWithAnyThreadCount) {
  Rng rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed));
  const int64_t v = 50, d = 200, count = 3000;
  auto table = randomFloats(rng, v * d), dy = randomFloats(rng, count * d);
  std::vector<int32_t> ids(count);
  for (int32_t &i : ids)
    i = static_cast<int32_t>(rng.uniform(0, v)); // repeated rows
  const int64_t n = 4, h = 16, w = 12, c = 8;
  auto x = randomFloats(rng, n * h * w * c),
       g = randomFloats(rng, n * h * w * c * 4);
  expectSameWithAnyThreadCount([&] {
    std::vector<float> out(count * d), dtable(v * d), up(n * h * w * c * 4),
        dx(n * h * w * c), all;
    EXPECT_EQ(mpcrt_embedding_f32(table.data(), v, d, ids.data(), 32, count,
                                  out.data()),
              0);
    EXPECT_EQ(mpcrt_embedding_backward_f32(dy.data(), ids.data(), 32, count, v,
                                           d, -1, nullptr, dtable.data()),
              0);
    mpcrt_upsample_nearest2d_f32(x.data(), up.data(), n, h, w, c, 2, 2);
    mpcrt_upsample_nearest2d_backward_f32(g.data(), dx.data(), n, h, w, c, 2,
                                          2);
    for (auto *t : {&out, &dtable, &up, &dx})
      all.insert(all.end(), t->begin(), t->end());
    return all;
  });
}

TEST(Threads, MultiTensorPassesAreTheSameWithAnyThreadCount) {
  Rng rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed));
  // Two gradient tensors, f32 and f16, one holding an infinity.
  const int64_t n0 = 70000, n1 = 30000;
  auto g0 = randomFloats(rng, n0);
  std::vector<uint16_t> g1(n1);
  for (uint16_t &h : g1)
    h = mpcrt_f32_to_f16(rng.normal() * 1e-3f);
  g0[12345] = INFINITY;
  const mpcrt_dtype dtypes[] = {MPCRT_F32, MPCRT_F16};
  const void *grads[] = {g0.data(), g1.data()};
  const int64_t sizes[] = {n0, n1};
  const float scale = 1024.f;
  expectSameWithAnyThreadCount([&] {
    std::vector<float> u0(n0), u1(n1), all;
    float *unscaled[] = {u0.data(), u1.data()};
    uint8_t found = 0, clipFound = 0;
    float inv = 0, norm = 0;
    int64_t stats[4] = {};
    mpcrt_unscale_and_check(&scale, 2, dtypes, grads, sizes, unscaled, &found);
    EXPECT_EQ(found, 1);
    // The norm of the finite tensor alone, then of both (infinite).
    mpcrt_clip_grad_norm(&scale, 1, dtypes + 1, grads + 1, sizes + 1, 1.0, &inv,
                         &norm, &clipFound);
    all.push_back(inv), all.push_back(norm), all.push_back(clipFound);
    mpcrt_grad_stats(&scale, 2, dtypes, grads, sizes, stats);
    EXPECT_EQ(stats[0], n0 + n1);
    EXPECT_EQ(stats[3], 1);
    for (int64_t s : stats)
      all.push_back(static_cast<float>(s));
    all.insert(all.end(), u0.begin(), u0.end());
    all.insert(all.end(), u1.begin(), u1.end());
    return all;
  });
}

TEST(Threads, CountFollowsTheSetting) {
  mpcrt_set_threads(3);
  EXPECT_EQ(mpcrt_threads(), 3);
  mpcrt_set_threads(0); // the default: at least one
  EXPECT_GE(mpcrt_threads(), 1);
}

} // namespace
