//===- NnTest.cpp - batch norm, pooling, upsampling, embedding, dropout ---===//
//
// f64 instances against formulas and identities written here (adjoint
// identities, finite differences); Philox against its published
// known-answer vector.
//
//===----------------------------------------------------------------------===//

#include "../AddLayerNormCheck.h"
#include "../AttentionCheck.h"
#include "../ForEachDtype.h"
#include "../GradientAddendCheck.h"
#include "Formulas.h"
#include "TestSupport.h"
#include "mpc/Runtime/mpcrt.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

namespace {

using namespace mpcrt::test;

TEST(Philox, KnownAnswer) {
  // The zero-counter, zero-key vector of the Random123 distribution.
  uint32_t counter[4] = {0, 0, 0, 0}, key[2] = {0, 0}, out[4];
  mpcrt_philox4x32(counter, key, out);
  EXPECT_EQ(out[0], 0x6627e8d5u);
  EXPECT_EQ(out[1], 0xe169c58du);
  EXPECT_EQ(out[2], 0xbc57ac4cu);
  EXPECT_EQ(out[3], 0x9b00dbd8u);
}

// The CUDA backend compiles an activation-gradient kernel only for the ops
// hasDerivative names; derivative() has a case for exactly those.
TEST(Formulas, HasDerivativeNamesTheOpsDerivativeDefines) {
  for (int op = MPCRT_NEG; op <= MPCRT_COS; ++op) {
    auto unary = static_cast<mpcrt_unary_op>(op);
    EXPECT_EQ(mpcrt::formulas::hasDerivative(unary),
              !std::isnan(mpcrt::formulas::derivative(unary, 0.3)))
        << "op " << op;
  }
}

// The CUDA backend's strided kernels divide 32-bit indices (below 2^31)
// by dimensions (up to 2^31) through FastDivider: exact for every small
// divisor, every power of two and its neighbours, random ones, against
// numerators at and around multiples of the divisor, the ends of the
// domain and random ones.
TEST(Formulas, FastDividerIsExactBelowTwoToThe31) {
  std::mt19937_64 rng(std::random_device{}());
  std::vector<uint64_t> divisors;
  for (uint64_t d = 1; d <= 4096; ++d)
    divisors.push_back(d);
  for (int b = 12; b <= 31; ++b)
    for (int64_t e = -2; e <= 2; ++e)
      if ((uint64_t(1) << b) + e <= (uint64_t(1) << 31))
        divisors.push_back((uint64_t(1) << b) + e);
  for (int k = 0; k < 4000; ++k)
    divisors.push_back(1 + rng() % (uint64_t(1) << 31));
  const uint64_t top = (uint64_t(1) << 31) - 1;
  for (uint64_t d : divisors) {
    mpcrt::formulas::FastDivider divider(static_cast<uint32_t>(d));
    auto check = [&](uint64_t n) {
      if (n > top)
        return;
      ASSERT_EQ(divider.divide(static_cast<uint32_t>(n)), n / d)
          << n << " / " << d;
    };
    for (uint64_t n = 0; n < 64; ++n)
      check(n);
    for (uint64_t q : {uint64_t(1), uint64_t(2), uint64_t(3), top / d,
                       top / d + 1, 1 + rng() % (top / d + 1)})
      for (int64_t e = -1; e <= 1; ++e)
        check(q * d + e);
    check(top);
    for (int k = 0; k < 16; ++k)
      check(rng() % (top + 1));
  }
}

// Dropout keeps a word w when w >= p * 2^32; both backends compare it
// with the integer keepThreshold(p) instead. The two agree at the words on
// either side of every threshold, for probabilities whose p * 2^32 is and
// is not an integer, the smallest and largest, and 0 (all kept).
TEST(Dropout, IntegerThresholdKeepsWhatTheFractionKeeps) {
  const double ps[] = {0.0,    0.1,         0.25,        0.3,
                       0.5,    1.0 / 3.0,   0x1p-32,     0x1.8p-32,
                       1e-300, 1 - 0x1p-32, 1 - 0x1p-33, 0.9999999999};
  for (double p : ps) {
    uint64_t t = mpcrt::formulas::keepThreshold(p);
    double exact = p * 4294967296.0;
    ASSERT_LE(t, uint64_t(1) << 32) << p;
    for (int64_t d = -2; d <= 2; ++d) {
      int64_t w = static_cast<int64_t>(t) + d;
      if (w < 0 || w > 0xffffffffLL)
        continue;
      uint32_t word = static_cast<uint32_t>(w);
      EXPECT_EQ(word >= t, word >= exact) << "p " << p << ", word " << word;
    }
    EXPECT_EQ(0xffffffffu >= t, 0xffffffffu >= exact) << p;
    EXPECT_EQ(0u >= t, 0.0 >= exact) << p;
  }
}

// The kernels' ways of drawing keep bits several at a time give each
// element the bit the per-element call gives it: a group's four from one
// Philox call, and a run of up to 32 from any first element (aligned to
// its group or not) from its groups in turn; all kept at p = 0.
TEST(Dropout, GroupAndRunBitsAreThePerElementBits) {
  for (double p : {0.0, 0.1, 0.5, 0.9}) {
    mpcrt::formulas::KeepBits one(p, 0x5eed1234abcdull, 77),
        several(p, 0x5eed1234abcdull, 77);
    for (uint64_t q :
         {uint64_t(0), uint64_t(1), uint64_t(12345), (uint64_t(1) << 33) + 5}) {
      uint32_t bits = several.group(q);
      for (int e = 0; e < 4; ++e)
        ASSERT_EQ(bits >> e & 1, one(int64_t(4 * q) + e) ? 1u : 0u)
            << "p " << p << " group " << q << " element " << e;
    }
    for (uint64_t first : {uint64_t(0), uint64_t(1), uint64_t(2), uint64_t(3),
                           uint64_t(4093), (uint64_t(1) << 33) + 2})
      for (int count : {1, 3, 4, 5, 16, 31, 32}) {
        uint64_t bits = several.run(first, count);
        EXPECT_EQ(bits >> count, 0u) << "p " << p << " count " << count;
        for (int e = 0; e < count; ++e)
          ASSERT_EQ(bits >> e & 1, one(int64_t(first) + e) ? 1u : 0u)
              << "p " << p << " first " << first << " count " << count
              << " element " << e;
      }
  }
}

TEST(Dropout, SeededMaskScalingAndBackward) {
  const int64_t n = 100000;
  std::vector<float> x(n, 1.5f), y(n), dy(n, 2.0f), dx(n);
  std::vector<uint8_t> mask(n), again(n), next(n);
  int64_t step = 7;
  mpcrt_dropout_f32(x.data(), y.data(), mask.data(), n, 0.25, 42, &step);
  mpcrt_dropout_f32(x.data(), y.data(), again.data(), n, 0.25, 42, &step);
  EXPECT_EQ(mask, again); // reproducible
  int64_t step8 = 8;
  mpcrt_dropout_f32(x.data(), y.data(), next.data(), n, 0.25, 42, &step8);
  EXPECT_NE(mask, next); // a new mask every step
  mpcrt_dropout_f32(x.data(), y.data(), mask.data(), n, 0.25, 42, &step);
  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i) {
    kept += mask[i];
    ASSERT_EQ(y[i], mask[i] ? 1.5f * (1.0f / 0.75f) : 0.0f);
  }
  // Binomial(n, 0.75): 5 standard deviations.
  EXPECT_NEAR(kept, 0.75 * n, 5 * std::sqrt(n * 0.75 * 0.25));
  mpcrt_dropout_backward_f32(dy.data(), mask.data(), dx.data(), n, 0.25);
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(dx[i], mask[i] ? 2.0f * (1.0f / 0.75f) : 0.0f);
  // p = 0 keeps everything.
  mpcrt_dropout_f32(x.data(), y.data(), mask.data(), n, 0.0, 42, &step);
  for (int64_t i = 0; i < n; ++i)
    ASSERT_TRUE(mask[i] && y[i] == 1.5f);
}

TEST(BatchNorm, ForwardRunningStatsAndBackward) {
  Rng rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed));
  const int64_t rows = 24, c = 5;
  const double momentum = 0.1, eps = 1e-5;
  auto x = rng.vec(rows * c, -2, 3), g = rng.vec(c, 0.5, 1.5), b = rng.vec(c),
       dy = rng.vec(rows * c);
  std::vector<double> rm0 = rng.vec(c), rv0 = rng.vec(c, 0.5, 2);
  std::vector<double> rm = rm0, rv = rv0, y(rows * c), dx(rows * c), dg(c),
                      db(c);
  std::vector<float> sm(c), si(c);
  auto forward = [&]() {
    std::vector<double> out(rows * c), m(c, 0), v(c, 0);
    for (int64_t ch = 0; ch < c; ++ch) {
      for (int64_t r = 0; r < rows; ++r)
        m[ch] += x[r * c + ch] / rows;
      for (int64_t r = 0; r < rows; ++r)
        v[ch] += (x[r * c + ch] - m[ch]) * (x[r * c + ch] - m[ch]) / rows;
      for (int64_t r = 0; r < rows; ++r)
        out[r * c + ch] =
            (x[r * c + ch] - m[ch]) / std::sqrt(v[ch] + eps) * g[ch] + b[ch];
    }
    return std::make_tuple(out, m, v);
  };
  mpcrt_batch_norm_f64(x.data(), MPCRT_F64, g.data(), b.data(), rm.data(),
                       rv.data(), y.data(), sm.data(), si.data(), rows, c,
                       momentum, eps, MPCRT_ACTIVATION_NONE);
  auto [ref, m, v] = forward();
  for (int64_t i = 0; i < rows * c; ++i)
    ASSERT_NEAR(y[i], ref[i], 1e-12);
  for (int64_t ch = 0; ch < c; ++ch) {
    EXPECT_NEAR(rm[ch], 0.9 * rm0[ch] + 0.1 * m[ch], 1e-12);
    EXPECT_NEAR(rv[ch], 0.9 * rv0[ch] + 0.1 * v[ch] * rows / (rows - 1),
                1e-12); // unbiased, as PyTorch
  }
  mpcrt_batch_norm_backward_f64(
      dy.data(), x.data(), MPCRT_F64, g.data(), sm.data(), si.data(), dx.data(),
      dg.data(), db.data(), rows, c, nullptr, nullptr, nullptr, nullptr);
  auto loss = [&]() { return dot(dy, std::get<0>(forward())); };
  // The saved statistics are f32: agreement to ~1e-6.
  auto ndx = numericGradient(x, loss), ndg = numericGradient(g, loss),
       ndb = numericGradient(b, loss);
  for (size_t i = 0; i < x.size(); ++i)
    ASSERT_NEAR(dx[i], ndx[i], 2e-6 * (1 + std::fabs(ndx[i]))) << i;
  for (int64_t ch = 0; ch < c; ++ch) {
    ASSERT_NEAR(dg[ch], ndg[ch], 2e-6 * (1 + std::fabs(ndg[ch])));
    ASSERT_NEAR(db[ch], ndb[ch], 1e-6 * (1 + std::fabs(ndb[ch])));
  }
}

/// A second rank of a synchronised batch norm, simulated: the rank sum
/// adds what a rank holding `x` and `dy` ([rows, c], f64) contributes to
/// each of the three sums in turn (the forward's channel sums and row
/// count, its squared deviations from the mean they give, the backward's
/// sum(dy), sum(dy * xhat) and row count), computed as the kernel would.
struct OtherRank {
  std::vector<double> x, dy;
  int64_t rows = 0, c = 0;
  const std::vector<float> *savedMean = nullptr, *savedInvstd = nullptr;
  std::vector<double> mean;
  int calls = 0;
};
OtherRank *otherRank = nullptr;

void addOtherRank(double *v, int64_t n) {
  OtherRank &o = *otherRank;
  int64_t c = o.c;
  switch (o.calls++) {
  case 0: // sum(x) per channel, then the row count
    ASSERT_EQ(n, c + 1);
    o.mean.assign(c, 0);
    for (int64_t ch = 0; ch < c; ++ch) {
      for (int64_t r = 0; r < o.rows; ++r)
        v[ch] += o.x[r * c + ch];
      o.mean[ch] = v[ch] / (v[c] + o.rows);
    }
    v[c] += o.rows;
    return;
  case 1: // squared deviations from the mean of every rank
    ASSERT_EQ(n, c);
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t r = 0; r < o.rows; ++r)
        v[ch] +=
            (o.x[r * c + ch] - o.mean[ch]) * (o.x[r * c + ch] - o.mean[ch]);
    return;
  case 2: // per channel sum(dy), sum(dy * xhat); then the row count
    ASSERT_EQ(n, 2 * c + 1);
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t r = 0; r < o.rows; ++r) {
        double xhat = (o.x[r * c + ch] - double((*o.savedMean)[ch])) *
                      double((*o.savedInvstd)[ch]);
        v[2 * ch] += o.dy[r * c + ch];
        v[2 * ch + 1] += o.dy[r * c + ch] * xhat;
      }
    v[2 * c] += o.rows;
    return;
  default:
    FAIL() << "a fourth rank sum";
  }
}

/// Sets the runtime's rank sum for a test's scope.
struct RankSumScope {
  explicit RankSumScope(void (*sum)(double *, int64_t)) {
    mpcrt_set_rank_sum(sum);
  }
  ~RankSumScope() { mpcrt_set_rank_sum(nullptr); }
};

// mpc.batch_norm {sync} on rank 0 of two (7 and 13 rows; the second rank
// simulated by the rank sum) normalises with the statistics of all 20
// rows: its results are the first 7 rows of an unsynchronised batch norm
// over both ranks' rows, its running statistics that batch norm's (the
// unbiased variance over 20 rows). Its backward's input gradient is that
// batch norm's backward's first 7 rows, while gamma's and beta's
// gradients are the rank's own sums (the data-parallel reduction adds the
// other rank's): bit for bit a batch norm backward of the 7 rows alone with
// the same saved statistics. f64, against the runtime's own unsynchronised
// kernels (whose f64 results the test above checks against formulas); sums
// in another order, so within 1e-12.
TEST(BatchNorm, SyncUsesTheStatisticsOfEveryRank) {
  Rng rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed));
  const int64_t rows0 = 7, rows1 = 13, rows = rows0 + rows1, c = 5;
  const double momentum = 0.3, eps = 1e-3;
  auto x = rng.vec(rows * c, -2, 3), dy = rng.vec(rows * c),
       g = rng.vec(c, 0.5, 1.5), b = rng.vec(c);
  std::vector<double> rm0 = rng.vec(c), rv0 = rng.vec(c, 0.5, 2);
  // Unsynchronised, over every rank's rows.
  std::vector<double> rmAll = rm0, rvAll = rv0, yAll(rows * c);
  std::vector<float> smAll(c), siAll(c);
  mpcrt_batch_norm_f64(x.data(), MPCRT_F64, g.data(), b.data(), rmAll.data(),
                       rvAll.data(), yAll.data(), smAll.data(), siAll.data(),
                       rows, c, momentum, eps, MPCRT_ACTIVATION_NONE);
  // Synchronised, on rank 0's rows.
  OtherRank other;
  other.x.assign(x.begin() + rows0 * c, x.end());
  other.dy.assign(dy.begin() + rows0 * c, dy.end());
  other.rows = rows1;
  other.c = c;
  otherRank = &other;
  RankSumScope scope(addOtherRank);
  std::vector<double> rm = rm0, rv = rv0, y(rows0 * c), dx(rows0 * c), dg(c),
                      db(c);
  std::vector<float> sm(c), si(c);
  mpcrt_sync_batch_norm_f64(x.data(), MPCRT_F64, g.data(), b.data(), rm.data(),
                            rv.data(), y.data(), sm.data(), si.data(), rows0, c,
                            momentum, eps, MPCRT_ACTIVATION_NONE);
  ASSERT_EQ(other.calls, 2);
  for (int64_t i = 0; i < rows0 * c; ++i)
    ASSERT_NEAR(y[i], yAll[i], 1e-12) << i;
  for (int64_t ch = 0; ch < c; ++ch) {
    EXPECT_NEAR(rm[ch], rmAll[ch], 1e-12) << ch;
    EXPECT_NEAR(rv[ch], rvAll[ch], 1e-12) << ch;
    EXPECT_NEAR(sm[ch], smAll[ch], 1e-6 * (1 + std::fabs(smAll[ch]))) << ch;
    EXPECT_NEAR(si[ch], siAll[ch], 1e-6 * si[ch]) << ch;
  }
  // The check has teeth: rank 0's rows alone give other statistics.
  {
    std::vector<double> rmOwn = rm0, rvOwn = rv0, yOwn(rows0 * c);
    std::vector<float> smOwn(c), siOwn(c);
    mpcrt_batch_norm_f64(x.data(), MPCRT_F64, g.data(), b.data(), rmOwn.data(),
                         rvOwn.data(), yOwn.data(), smOwn.data(), siOwn.data(),
                         rows0, c, momentum, eps, MPCRT_ACTIVATION_NONE);
    double apart = 0;
    for (int64_t ch = 0; ch < c; ++ch)
      apart = std::max(apart, std::fabs(rvOwn[ch] - rvAll[ch]));
    EXPECT_GT(apart, 1e-3);
  }

  other.savedMean = &sm;
  other.savedInvstd = &si;
  mpcrt_sync_batch_norm_backward_f64(
      dy.data(), x.data(), MPCRT_F64, g.data(), sm.data(), si.data(), dx.data(),
      dg.data(), db.data(), rows0, c, nullptr, nullptr, nullptr, nullptr);
  ASSERT_EQ(other.calls, 3);
  // Every rank's rows through the unsynchronised backward, with the same
  // saved statistics.
  std::vector<double> dxAll(rows * c), dgAll(c), dbAll(c);
  mpcrt_batch_norm_backward_f64(dy.data(), x.data(), MPCRT_F64, g.data(),
                                sm.data(), si.data(), dxAll.data(),
                                dgAll.data(), dbAll.data(), rows, c, nullptr,
                                nullptr, nullptr, nullptr);
  for (int64_t i = 0; i < rows0 * c; ++i)
    ASSERT_NEAR(dx[i], dxAll[i], 1e-12 * (1 + std::fabs(dxAll[i]))) << i;
  // Gamma's and beta's gradients: rank 0's rows alone, bit for bit.
  std::vector<double> dxOwn(rows0 * c), dgOwn(c), dbOwn(c);
  mpcrt_batch_norm_backward_f64(dy.data(), x.data(), MPCRT_F64, g.data(),
                                sm.data(), si.data(), dxOwn.data(),
                                dgOwn.data(), dbOwn.data(), rows0, c, nullptr,
                                nullptr, nullptr, nullptr);
  EXPECT_EQ(dg, dgOwn);
  EXPECT_EQ(db, dbOwn);
  EXPECT_NE(dx, dxOwn) << "the input's gradient takes every rank's means";
  otherRank = nullptr;
}

// Without a rank sum (a job of one), or with one that leaves the sums as
// they are, a synchronised batch norm and its backward compute what the
// unsynchronised ones compute, bit for bit, in every type and with a fused
// ReLU: the sums go through double and back without a rounding.
TEST(BatchNorm, SyncOnOneRankEqualsTheUnsyncedBitForBit) {
  Rng rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed));
  const int64_t rows = 33, c = 7, n = rows * c;
  auto xs = rng.vec(n, -2, 3), dys = rng.vec(n);
  std::vector<float> g(c), b(c);
  for (int64_t ch = 0; ch < c; ++ch)
    g[ch] = float(rng.uniform(0.5, 1.5)), b[ch] = float(rng.uniform());
  for (bool hook : {false, true}) {
    RankSumScope scope(hook ? +[](double *, int64_t) {} : nullptr);
    for (mpcrt_dtype d : {MPCRT_F16, MPCRT_BF16, MPCRT_F32, MPCRT_F64})
      for (int32_t act :
           {int32_t(MPCRT_ACTIVATION_NONE), int32_t(MPCRT_RELU)}) {
        SCOPED_TRACE("dtype " + std::to_string(d) + ", activation " +
                     std::to_string(act) + (hook ? ", rank sum" : ""));
        int64_t bytes = d == MPCRT_F64 ? 8 : d == MPCRT_F32 ? 4 : 2;
        std::vector<uint8_t> x(n * bytes), dy(n * bytes);
        mpcrt_cast(MPCRT_F64, xs.data(), d, x.data(), n);
        mpcrt_cast(MPCRT_F64, dys.data(), d, dy.data(), n);
        std::vector<uint8_t> y[2], dx[2];
        std::vector<float> rm[2], rv[2], sm[2], si[2], dg[2], db[2];
        for (int sync = 0; sync < 2; ++sync) {
          y[sync].resize(n * bytes);
          dx[sync].resize(n * bytes);
          rm[sync].assign(c, 0.25f);
          rv[sync].assign(c, 2.0f);
          sm[sync].resize(c);
          si[sync].resize(c);
          dg[sync].resize(c);
          db[sync].resize(c);
          const void *out = act == MPCRT_RELU ? y[sync].data() : nullptr;
#define RUN(SUFFIX, T)                                                         \
  do {                                                                         \
    auto fwd =                                                                 \
        sync ? mpcrt_sync_batch_norm_##SUFFIX : mpcrt_batch_norm_##SUFFIX;     \
    auto bwd = sync ? mpcrt_sync_batch_norm_backward_##SUFFIX                  \
                    : mpcrt_batch_norm_backward_##SUFFIX;                      \
    fwd(reinterpret_cast<const T *>(x.data()), MPCRT_F32, g.data(), b.data(),  \
        rm[sync].data(), rv[sync].data(),                                      \
        reinterpret_cast<T *>(y[sync].data()), sm[sync].data(),                \
        si[sync].data(), rows, c, 0.1, 1e-5, act);                             \
    bwd(reinterpret_cast<const T *>(dy.data()),                                \
        reinterpret_cast<const T *>(x.data()), MPCRT_F32, g.data(),            \
        sm[sync].data(), si[sync].data(),                                      \
        reinterpret_cast<T *>(dx[sync].data()), dg[sync].data(),               \
        db[sync].data(), rows, c, reinterpret_cast<const T *>(out), nullptr,   \
        nullptr, nullptr);                                                     \
  } while (0)
          if (d == MPCRT_F16)
            RUN(f16, uint16_t);
          else if (d == MPCRT_BF16)
            RUN(bf16, uint16_t);
          else if (d == MPCRT_F32)
            RUN(f32, float);
          else
            RUN(f64, double);
#undef RUN
        }
        EXPECT_EQ(y[0], y[1]);
        EXPECT_EQ(rm[0], rm[1]);
        EXPECT_EQ(rv[0], rv[1]);
        EXPECT_EQ(sm[0], sm[1]);
        EXPECT_EQ(si[0], si[1]);
        EXPECT_EQ(dx[0], dx[1]);
        EXPECT_EQ(dg[0], dg[1]);
        EXPECT_EQ(db[0], db[1]);
      }
  }
}

// A batch norm with a fused ReLU computes what mpc.relu of its result and
// mpc.relu_grad before its backward compute, bit for bit, for f16 and f32:
// the ReLU applies to the rounded result and the gradient through it is
// rounded before the batch norm's backward reads it. A NaN input and
// zeros in the gradient are included. The backward that forms the ReLU's
// output again from the input and beta (reading no output) gives the same
// bits: the last channel's results are so small (gamma 1e-8, beta 0) that
// f16 rounds many of them to zero, where the mask must follow the rounded
// value, not the f32 one.
TEST(BatchNorm, FusedReluEqualsTheReluAroundItBitForBit) {
  Rng rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed));
  const int64_t rows = 40, c = 6, n = rows * c;
  for (mpcrt_dtype d : {MPCRT_F16, MPCRT_F32}) {
    auto xs = rng.vec(n, -2, 3), dys = rng.vec(n);
    xs[7] = NAN;
    dys[3] = 0;
    std::vector<float> g = {0.5f, 1, 1.5f, 2, -1, 1e-8f}, b(c, 0.1f);
    b[c - 1] = 0;
    int64_t bytes = d == MPCRT_F16 ? 2 : 4;
    std::vector<uint8_t> x(n * bytes), dy(n * bytes);
    mpcrt_cast(MPCRT_F64, xs.data(), d, x.data(), n);
    mpcrt_cast(MPCRT_F64, dys.data(), d, dy.data(), n);
    // [0]: unfused, [1]: fused, [2]: fused, the output formed again.
    std::vector<uint8_t> y[3], z(n * bytes), dz(n * bytes), dx[3];
    std::vector<float> dg[3], db[3];
    for (int fused = 0; fused < 3; ++fused) {
      std::vector<float> rm(c, 0), rv(c, 1), sm(c), si(c);
      y[fused].resize(n * bytes);
      dx[fused].resize(n * bytes);
      dg[fused].resize(c);
      db[fused].resize(c);
#define RUN(SUFFIX, T)                                                         \
  do {                                                                         \
    auto *X = reinterpret_cast<const T *>(x.data());                           \
    auto *Y = reinterpret_cast<T *>(y[fused].data());                          \
    mpcrt_batch_norm_##SUFFIX(X, MPCRT_F32, g.data(), b.data(), rm.data(),     \
                              rv.data(), Y, sm.data(), si.data(), rows, c,     \
                              0.1, 1e-5,                                       \
                              fused ? MPCRT_RELU : MPCRT_ACTIVATION_NONE);     \
    const T *grad = reinterpret_cast<const T *>(dy.data());                    \
    if (!fused) {                                                              \
      mpcrt_unary_##SUFFIX(MPCRT_RELU, Y, reinterpret_cast<T *>(z.data()), n); \
      mpcrt_unary_grad_##SUFFIX(MPCRT_RELU, grad, Y,                           \
                                reinterpret_cast<T *>(dz.data()), n);          \
      grad = reinterpret_cast<const T *>(dz.data());                           \
    }                                                                          \
    mpcrt_batch_norm_backward_##SUFFIX(                                        \
        grad, X, MPCRT_F32, g.data(), sm.data(), si.data(),                    \
        reinterpret_cast<T *>(dx[fused].data()), dg[fused].data(),             \
        db[fused].data(), rows, c, fused == 1 ? Y : nullptr,                   \
        fused == 2 ? b.data() : nullptr, nullptr, nullptr);                    \
  } while (0)
      if (d == MPCRT_F16)
        RUN(f16, uint16_t);
      else
        RUN(f32, float);
#undef RUN
    }
    // The last channel's tiny results: f16 rounds some to zero and keeps
    // others, so the masks differ from f32's.
    int64_t zeros = 0;
    for (int64_t r = 0; r < rows; ++r)
      zeros += std::all_of(&z[(r * c + c - 1) * bytes], &z[(r * c + c) * bytes],
                           [](uint8_t v) { return v == 0; });
    if (d == MPCRT_F16)
      EXPECT_GT(zeros, rows / 2 + 2) << "f16 rounds small results to zero";
    for (int fused = 1; fused < 3; ++fused) {
      SCOPED_TRACE("fused " + std::to_string(fused) + ", dtype " +
                   std::to_string(d));
      EXPECT_EQ(y[fused], z) << "forward";
      EXPECT_EQ(dx[fused], dx[0]) << "input gradient";
      EXPECT_EQ(0, std::memcmp(dg[fused].data(), dg[0].data(), c * 4));
      EXPECT_EQ(0, std::memcmp(db[fused].data(), db[0].data(), c * 4));
    }
  }
}

TEST(BatchNorm, InferenceMatchesFloat64WithTheRunningStatistics) {
  // (x - mean) * rsqrt(var + eps) * gamma + beta from the running
  // statistics, in the accumulation type (f32; f64 for f64), rounded once:
  // within half an ulp of the result type plus the f32 arithmetic's error
  // (5 operations, each within 2^-24 of the magnitudes involved).
  Rng rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed));
  const int64_t rows = 37, c = 5, n = rows * c;
  const double eps = 1e-3;
  for (mpcrt_dtype d : {MPCRT_F16, MPCRT_BF16, MPCRT_F32, MPCRT_F64}) {
    mpcrt_dtype pd = d == MPCRT_F64 ? MPCRT_F64 : MPCRT_F32;
    int64_t bytes = d == MPCRT_F64   ? 8
                    : d == MPCRT_F32 ? 4
                                     : 2,
            pbytes = pd == MPCRT_F64 ? 8 : 4;
    auto xs = rng.vec(n, -3, 3);
    auto gs = rng.vec(c, -1.5, 1.5), bs = rng.vec(c, -1, 1),
         ms = rng.vec(c, -0.5, 0.5), vs = rng.vec(c, 0.2, 3);
    std::vector<uint8_t> x(n * bytes), y(n * bytes), z(n * bytes),
        g(c * pbytes), b(c * pbytes), m(c * pbytes), v(c * pbytes);
    mpcrt_cast(MPCRT_F64, xs.data(), d, x.data(), n);
    for (auto [from, to] : {std::pair{&gs, &g}, std::pair{&bs, &b},
                            std::pair{&ms, &m}, std::pair{&vs, &v}})
      mpcrt_cast(MPCRT_F64, from->data(), pd, to->data(), c);
    std::vector<uint8_t> mBefore = m, vBefore = v;
#define RUN(SUFFIX, T)                                                         \
  do {                                                                         \
    auto *X = reinterpret_cast<const T *>(x.data());                           \
    mpcrt_batch_norm_inference_##SUFFIX(                                       \
        X, pd, g.data(), b.data(), m.data(), v.data(),                         \
        reinterpret_cast<T *>(y.data()), rows, c, eps, MPCRT_ACTIVATION_NONE); \
    mpcrt_batch_norm_inference_##SUFFIX(                                       \
        X, pd, g.data(), b.data(), m.data(), v.data(),                         \
        reinterpret_cast<T *>(z.data()), rows, c, eps, MPCRT_RELU);            \
  } while (0)
    switch (d) {
    case MPCRT_F16:
      RUN(f16, uint16_t);
      break;
    case MPCRT_BF16:
      RUN(bf16, uint16_t);
      break;
    case MPCRT_F32:
      RUN(f32, float);
      break;
    default:
      RUN(f64, double);
    }
#undef RUN
    EXPECT_EQ(m, mBefore) << "the running mean is only read";
    EXPECT_EQ(v, vBefore) << "the running variance is only read";
    std::vector<double> xr(n), yr(n), zr(n), gr(c), br(c), mr(c), vr(c);
    mpcrt_cast(d, x.data(), MPCRT_F64, xr.data(), n);
    mpcrt_cast(d, y.data(), MPCRT_F64, yr.data(), n);
    mpcrt_cast(d, z.data(), MPCRT_F64, zr.data(), n);
    for (auto [from, to] : {std::pair{&g, &gr}, std::pair{&b, &br},
                            std::pair{&m, &mr}, std::pair{&v, &vr}})
      mpcrt_cast(pd, from->data(), MPCRT_F64, to->data(), c);
    double ulp = d == MPCRT_F16    ? std::ldexp(1.0, -11)
                 : d == MPCRT_BF16 ? std::ldexp(1.0, -8)
                 : d == MPCRT_F32  ? std::ldexp(1.0, -24)
                                   : std::ldexp(1.0, -53);
    double arith = d == MPCRT_F64 ? std::ldexp(1.0, -53) : std::ldexp(1.0, -24);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t ch = 0; ch < c; ++ch) {
        int64_t i = r * c + ch;
        double invstd = 1 / std::sqrt(vr[ch] + eps);
        double scaled = (xr[i] - mr[ch]) * invstd * gr[ch];
        double want = scaled + br[ch];
        double bound = ulp * std::abs(want) +
                       5 * arith * (std::abs(scaled) + std::abs(br[ch]));
        ASSERT_NEAR(yr[i], want, bound) << "dtype " << d << ", element " << i;
        // The fused ReLU: of the rounded value, bit for bit.
        ASSERT_EQ(zr[i], yr[i] > 0 ? yr[i] : 0.0)
            << "dtype " << d << ", element " << i;
      }
  }
}

mpcrt_pool2d_shape poolShape(int64_t k, int64_t stride, int64_t pad,
                             int include) {
  mpcrt_pool2d_shape s{};
  s.n = 2, s.h = 7, s.w = 6, s.c = 3, s.kh = s.kw = k;
  s.stride_h = s.stride_w = stride, s.pad_h = s.pad_w = pad;
  s.ho = (s.h + 2 * pad - k) / stride + 1;
  s.wo = (s.w + 2 * pad - k) / stride + 1;
  s.count_include_pad = include;
  return s;
}

TEST(Pooling, MaxAndAverageWithTheirGradients) {
  Rng rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed));
  for (auto [kSize, strideSize, padSize, includePad] :
       {std::make_tuple(2, 2, 0, 1), std::make_tuple(3, 1, 1, 1),
        std::make_tuple(3, 2, 1, 0)}) {
    // Plain copies: lambdas cannot capture structured bindings in C++17.
    int k = kSize, stride = strideSize, pad = padSize, include = includePad;
    mpcrt_pool2d_shape s = poolShape(k, stride, pad, include);
    // Distinct inputs at least 2 / count apart (an even grid in a random
    // order): the finite differences below (step 1e-6) never cross a tie
    // between two values of a window, where the maximum's gradient jumps.
    std::vector<double> x(s.n * s.h * s.w * s.c);
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = -1 + 2 * (double(i) + 0.5) / double(x.size());
    std::shuffle(x.begin(), x.end(), rng.engine);
    auto dy = rng.vec(s.n * s.ho * s.wo * s.c);
    std::vector<double> y(dy.size()), dx(x.size());
    auto window = [&](int64_t n, int64_t oy, int64_t ox, int64_t ch,
                      auto visit) {
      for (int64_t i = 0; i < k; ++i)
        for (int64_t j = 0; j < k; ++j) {
          int64_t iy = oy * stride - pad + i, ix = ox * stride - pad + j;
          visit(iy >= 0 && iy < s.h && ix >= 0 && ix < s.w
                    ? ((n * s.h + iy) * s.w + ix) * s.c + ch
                    : -1);
        }
    };
    // Max: forward against the definition, backward against FD.
    mpcrt_max_pool2d_f64(x.data(), y.data(), &s);
    auto maxForward = [&]() {
      std::vector<double> out(dy.size());
      for (int64_t n = 0; n < s.n; ++n)
        for (int64_t oy = 0; oy < s.ho; ++oy)
          for (int64_t ox = 0; ox < s.wo; ++ox)
            for (int64_t ch = 0; ch < s.c; ++ch) {
              double best = -INFINITY;
              window(n, oy, ox, ch, [&](int64_t i) {
                if (i >= 0)
                  best = std::fmax(best, x[i]);
              });
              out[((n * s.ho + oy) * s.wo + ox) * s.c + ch] = best;
            }
      return out;
    };
    EXPECT_EQ(y, maxForward());
    mpcrt_max_pool2d_backward_f64(dy.data(), x.data(), dx.data(), &s);
    auto ndx = numericGradient(x, [&] { return dot(dy, maxForward()); });
    for (size_t i = 0; i < x.size(); ++i)
      ASSERT_NEAR(dx[i], ndx[i], 1e-6) << "max pool k" << k;
    // Average: forward against PyTorch's divisor rule, backward against FD.
    mpcrt_avg_pool2d_f64(x.data(), y.data(), &s);
    auto avgForward = [&]() {
      std::vector<double> out(dy.size());
      for (int64_t n = 0; n < s.n; ++n)
        for (int64_t oy = 0; oy < s.ho; ++oy)
          for (int64_t ox = 0; ox < s.wo; ++ox)
            for (int64_t ch = 0; ch < s.c; ++ch) {
              double sum = 0;
              int64_t valid = 0;
              window(n, oy, ox, ch, [&](int64_t i) {
                if (i >= 0) {
                  sum += x[i];
                  ++valid;
                }
              });
              // With padding counted: the window clipped to the padded input.
              int64_t y0 = oy * stride - pad, x0 = ox * stride - pad;
              int64_t padded = (std::min(y0 + k, s.h + pad) - y0) *
                               (std::min(x0 + k, s.w + pad) - x0);
              out[((n * s.ho + oy) * s.wo + ox) * s.c + ch] =
                  sum / (include ? padded : valid);
            }
      return out;
    };
    auto ref = avgForward();
    for (size_t i = 0; i < y.size(); ++i)
      ASSERT_NEAR(y[i], ref[i], 1e-12);
    mpcrt_avg_pool2d_backward_f64(dy.data(), dx.data(), &s);
    ndx = numericGradient(x, [&] { return dot(dy, avgForward()); });
    for (size_t i = 0; i < x.size(); ++i)
      ASSERT_NEAR(dx[i], ndx[i], 1e-6) << "avg pool k" << k;
  }
}

TEST(Upsample, ForwardAndAdjoint) {
  Rng rng;
  const int64_t n = 2, h = 3, w = 4, c = 2, sh = 2, sw = 3;
  auto x = rng.vec(n * h * w * c), dy = rng.vec(n * h * sh * w * sw * c);
  std::vector<double> y(dy.size()), dx(x.size());
  mpcrt_upsample_nearest2d_f64(x.data(), y.data(), n, h, w, c, sh, sw);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t i = 0; i < h * sh; ++i)
      for (int64_t j = 0; j < w * sw; ++j)
        for (int64_t ch = 0; ch < c; ++ch)
          ASSERT_EQ(y[((b * h * sh + i) * w * sw + j) * c + ch],
                    x[((b * h + i / sh) * w + j / sw) * c + ch]);
  mpcrt_upsample_nearest2d_backward_f64(dy.data(), dx.data(), n, h, w, c, sh,
                                        sw);
  EXPECT_NEAR(dot(y, dy), dot(x, dx), 1e-12);
}

TEST(Embedding, GatherScatterAddAndBadIndices) {
  Rng rng;
  const int64_t v = 10, d = 4, count = 12;
  auto table = rng.vec(v * d), dy = rng.vec(count * d);
  std::vector<int32_t> idx = {3, 1, 3, 9, 0, 3, 2, 9, 5, 5, 7, 1};
  std::vector<double> out(count * d), dtable(v * d);
  EXPECT_EQ(mpcrt_embedding_f64(table.data(), v, d, idx.data(), 32, count,
                                out.data()),
            0);
  for (int64_t i = 0; i < count; ++i)
    for (int64_t j = 0; j < d; ++j)
      ASSERT_EQ(out[i * d + j], table[idx[i] * d + j]);
  EXPECT_EQ(mpcrt_embedding_backward_f64(dy.data(), idx.data(), 32, count, v, d,
                                         -1, nullptr, dtable.data()),
            0);
  // Rows hit several times (3 three times) get the sum: the adjoint.
  EXPECT_NEAR(dot(out, dy), dot(table, dtable), 1e-12);
  std::vector<int64_t> bad = {1, 2, 10, -1};
  std::vector<double> out4(4 * d);
  EXPECT_EQ(
      mpcrt_embedding_f64(table.data(), v, d, bad.data(), 64, 4, out4.data()),
      3); // position 2, plus one
}

TEST(Embedding, FrequentRowsAreSummedInSegments) {
  // A row's gradients are summed in segments of kEmbeddingSegment (32)
  // positions, each from zero, then the segments' sums in order (the
  // CUDA backend's blocks take a segment each). Row 0 at 64 positions:
  // 32 of 2^20 (2^25 together), then 32 of 1, whose sum of 32 survives
  // the add to 2^25 where a sum in one walk (2^25 + 1 rounding back to
  // 2^25 each time) would lose all of it. Row 1 at exactly 32 positions
  // is one segment: 2^24, then 31 ones lost in the one walk.
  const int64_t d = 2, count = 96;
  std::vector<int32_t> idx(count);
  std::vector<float> dy(count * d);
  for (int64_t i = 0; i < count; ++i) {
    bool zero = i < 64;
    idx[i] = zero ? 0 : 1;
    float g = zero ? (i < 32 ? 1048576.0f : 1.0f) : (i == 64 ? 16777216.0f : 1);
    dy[i * d] = g;
    dy[i * d + 1] = -g;
  }
  std::vector<float> table(2 * d);
  ASSERT_EQ(mpcrt_embedding_backward_f32(dy.data(), idx.data(), 32, count, 2, d,
                                         -1, nullptr, table.data()),
            0);
  EXPECT_EQ(table[0], 33554432.0f + 32.0f);
  EXPECT_EQ(table[1], -(33554432.0f + 32.0f));
  EXPECT_EQ(table[2], 16777216.0f);
  EXPECT_EQ(table[3], -16777216.0f);
}

TEST(StridedCopy, TransposeSliceBroadcast) {
  std::vector<float> x(2 * 3 * 4);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<float>(i);
  // Transpose [2,3,4] -> [4,2,3].
  int64_t tshape[] = {4, 2, 3}, tstrides[] = {1, 12, 4};
  std::vector<float> t(24);
  mpcrt_strided_copy(x.data(), 0, tstrides, t.data(), tshape, 3, 4);
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 2; ++b)
      for (int c = 0; c < 3; ++c)
        ASSERT_EQ(t[(a * 2 + b) * 3 + c], x[(b * 3 + c) * 4 + a]);
  // Slice x[1, 0:3:2, 1:3].
  int64_t sshape[] = {2, 2}, sstrides[] = {8, 1};
  std::vector<float> sl(4);
  mpcrt_strided_copy(x.data(), 12 + 1, sstrides, sl.data(), sshape, 2, 4);
  EXPECT_EQ(sl, (std::vector<float>{13, 14, 21, 22}));
  // Broadcast a row [4] to [3, 4].
  int64_t bshape[] = {3, 4}, bstrides[] = {0, 1};
  std::vector<float> br(12);
  mpcrt_strided_copy(x.data(), 0, bstrides, br.data(), bshape, 2, 4);
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 4; ++c)
      ASSERT_EQ(br[r * 4 + c], c);
}

TEST(StridedScatter, InvertsTheSliceCopy) {
  // slice_backward: zero-fill, then scatter the slice's gradient back.
  std::vector<float> full(24), slice = {1, 2, 3, 4};
  int64_t shape[] = {2, 2}, strides[] = {8, 1};
  mpcrt_strided_scatter(slice.data(), full.data(), 12 + 1, strides, shape, 2,
                        4);
  for (int i = 0; i < 24; ++i) {
    float expected = i == 13 ? 1 : i == 14 ? 2 : i == 21 ? 3 : i == 22 ? 4 : 0;
    ASSERT_EQ(full[i], expected) << i;
  }
  std::vector<float> back(4);
  mpcrt_strided_copy(full.data(), 12 + 1, strides, back.data(), shape, 2, 4);
  EXPECT_EQ(back, slice);
}

TEST(PointwiseLoss, ValuesAndGradients) {
  Rng rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed));
  const int64_t n = 40;
  for (int kind = 0; kind < 3; ++kind) {
    // BCE takes probabilities; the others any real input.
    auto x = kind == 2 ? rng.vec(n, 0.05, 0.95) : rng.vec(n, -4, 4);
    auto t = rng.vec(n, 0, 1);
    auto ref = [&](bool mean) {
      double s = 0;
      for (int64_t i = 0; i < n; ++i) {
        double v =
            kind == 0 ? (x[i] - t[i]) * (x[i] - t[i])
            : kind == 1
                ? std::log1p(std::exp(-std::fabs(x[i]))) +
                      std::fmax(x[i], 0.0) - t[i] * x[i]
                : -(t[i] * std::log(x[i]) + (1 - t[i]) * std::log(1 - x[i]));
        s += v;
      }
      return mean ? s / n : s;
    };
    for (int mean = 0; mean < 2; ++mean) {
      double loss, dl = 0.75;
      std::vector<double> dx(n);
      mpcrt_pointwise_loss_f64(kind, x.data(), t.data(), &loss, n, mean);
      ASSERT_NEAR(loss, ref(mean), 1e-12 * (1 + std::fabs(loss)))
          << "kind " << kind;
      mpcrt_pointwise_loss_backward_f64(kind, &dl, x.data(), t.data(),
                                        dx.data(), n, mean);
      auto ndx = numericGradient(x, [&] { return dl * ref(mean); });
      for (int64_t i = 0; i < n; ++i)
        ASSERT_NEAR(dx[i], ndx[i], 1e-6 * (1 + std::fabs(ndx[i])))
            << "kind " << kind << " mean " << mean;
    }
  }
}

} // namespace

namespace {

/// Zero rows: the reference writes no NaN. Batch norm leaves its running
/// statistics alone; the mean of a pointwise loss over nothing is 0.
TEST(EmptyInputs, BatchNormAndPointwiseLossesStayFinite) {
  const int64_t c = 3;
  float x = 1.0f, y = 0.0f;
  std::vector<float> runningMean = {0.5f, 1.5f, -2.0f}, runningVar = {1, 2, 3};
  std::vector<float> gamma(c, 1.0f), beta(c, 0.0f), saved(c, 9.0f),
      savedInv(c, 9.0f);
  mpcrt_batch_norm_f32(&x, MPCRT_F32, gamma.data(), beta.data(),
                       runningMean.data(), runningVar.data(), &y, saved.data(),
                       savedInv.data(), 0, c, 0.1, 1e-5, MPCRT_ACTIVATION_NONE);
  EXPECT_EQ(runningMean, (std::vector<float>{0.5f, 1.5f, -2.0f}));
  EXPECT_EQ(runningVar, (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(saved, std::vector<float>(c, 0.0f));
  EXPECT_EQ(savedInv, std::vector<float>(c, 0.0f));
  float loss = 123.0f;
  mpcrt_pointwise_loss_f32(0, &x, &x, &loss, 0, 1);
  EXPECT_EQ(loss, 0.0f);
}

TEST(Nn, AttentionMatchesFloat64) {
  std::mt19937 rng(std::random_device{}());
  unsigned seed = rng();
  rng.seed(seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  mpcrt::test::checkAllAttention(rng, [](mpcrt_dtype dt,
                                         const mpcrt::test::AttentionCase &c) {
    return [=](mpcrt::test::AttentionBuffers &b) {
      const uint8_t *mask = b.mask.empty() ? nullptr : b.mask.data();
      const int64_t *layout = b.layout.empty() ? nullptr : b.layout.data();
      int32_t rank = static_cast<int32_t>(b.layout.size() / 2);
      const float *bias = b.bias.empty() ? nullptr : b.bias.data();
      const int64_t *biasLayout =
          b.biasLayout.empty() ? nullptr : b.biasLayout.data();
      int32_t biasRank = static_cast<int32_t>(b.biasLayout.size() / 2);
      mpcrt_attention(dt, b.q.data(), b.k.data(), b.v.data(), b.result.data(),
                      b.lse.data(), c.heads, c.sq, c.sk, c.d, c.dv, c.rowHeads,
                      c.scale, c.p, c.seed, &c.step, mask, layout, rank, c.fill,
                      bias, biasLayout, biasRank);
      mpcrt_attention_backward(
          dt, b.grad.data(), b.q.data(), b.k.data(), b.v.data(),
          b.result.data(), b.lse.data(), b.dq.data(), b.dk.data(), b.dv.data(),
          c.heads, c.sq, c.sk, c.d, c.dv, c.rowHeads, c.scale, c.p, c.seed,
          &c.step, mask, layout, rank, c.fill, bias, biasLayout, biasRank);
    };
  });
}

TEST(Nn, AddLayerNormMatchesFloat64) {
  std::mt19937 rng(std::random_device{}());
  unsigned seed = rng();
  rng.seed(seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  mpcrt::test::checkAllAddLayerNorms(
      rng, [](mpcrt_dtype dt, const mpcrt::test::AddLayerNormCase &c) {
        return [=](mpcrt::test::AddLayerNormBuffers &b) {
          mpcrt_dtype param = dt == MPCRT_F64 ? MPCRT_F64 : MPCRT_F32;
          mpcrt_add_layer_norm(dt, b.x.data(), b.residual.data(), param,
                               b.gamma.data(), b.beta.data(), b.sum.data(),
                               b.y.data(), b.mean.data(), b.rstd.data(), c.rows,
                               c.cols, c.residualRows(), 1e-5, c.p, c.seed,
                               &c.step);
          mpcrt_add_layer_norm_backward(
              dt, b.grad.data(), b.sumGrad.empty() ? nullptr : b.sumGrad.data(),
              b.sum.data(), b.mean.data(), b.rstd.data(), param, b.gamma.data(),
              b.dx.data(), b.dresidual.data(), b.dgamma.data(), b.dbeta.data(),
              nullptr, nullptr, c.rows, c.cols, c.p, c.seed, &c.step,
              b.dxSums.data());
          // The sums as mpcrt_matmul_bias_grad's bias gradient of the same
          // gradient (the product a 1-column x^T dx), bit for bit.
          mpcrt_dtype sums = param;
          std::vector<uint8_t> ones(c.rows * mpcrt::test::elementBytes(dt)),
              product(c.cols * 8), biasGrad(b.dxSums.size());
          std::vector<double> one(c.rows, 1.0);
          mpcrt_cast(MPCRT_F64, one.data(), dt, ones.data(), c.rows);
          mpcrt_matmul_bias_grad(dt, dt, sums, ones.data(), b.dx.data(),
                                 nullptr, product.data(), nullptr,
                                 biasGrad.data(), 1, c.cols, c.rows, 1, 0);
          EXPECT_EQ(biasGrad, b.dxSums) << "the bias gradient's sums";
        };
      });
}

/// The addend of a buffer: null without one, else the addend's bytes or,
/// in place, the result's own.
const void *addendOf(const std::vector<uint8_t> *addend, bool inPlace,
                     std::vector<uint8_t> &result) {
  return !addend ? nullptr : inPlace ? result.data() : addend->data();
}

TEST(Nn, GradientAddendsEqualASeparateAdd) {
  std::mt19937 rng(std::random_device{}());
  unsigned seed = rng();
  rng.seed(seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  mpcrt::test::checkLayerNormAddends(
      rng,
      [](const mpcrt::test::LayerNormAddendCase &c,
         const std::vector<uint8_t> *ga, const std::vector<uint8_t> *ba,
         bool inPlace, std::vector<uint8_t> &dg, std::vector<uint8_t> &db) {
        size_t bytes = c.x.size(), stats = c.rows * (c.dt == MPCRT_F64 ? 8 : 4);
        std::vector<uint8_t> y(bytes), sum(bytes), dx(bytes), dres(bytes),
            mean(stats), rstd(stats);
        const void *gp = addendOf(ga, inPlace, dg),
                   *bp = addendOf(ba, inPlace, db);
        if (c.kind == mpcrt::test::NormKind::Batch) {
          // Channels last: cols channels; saved statistics f32.
          std::vector<uint8_t> rm = c.beta, rv = c.gamma;
          std::vector<float> sm(c.cols), si(c.cols);
#define CALL(SUFFIX, T, STAT)                                                  \
  mpcrt_batch_norm_##SUFFIX(                                                   \
      reinterpret_cast<const T *>(c.x.data()), c.param, c.gamma.data(),        \
      c.beta.data(), rm.data(), rv.data(), reinterpret_cast<T *>(y.data()),    \
      sm.data(), si.data(), c.rows, c.cols, 0.1, 1e-5, MPCRT_ACTIVATION_NONE); \
  mpcrt_batch_norm_backward_##SUFFIX(                                          \
      reinterpret_cast<const T *>(c.dy.data()),                                \
      reinterpret_cast<const T *>(c.x.data()), c.param, c.gamma.data(),        \
      sm.data(), si.data(), reinterpret_cast<T *>(dx.data()), dg.data(),       \
      db.data(), c.rows, c.cols, nullptr, nullptr, gp, bp)
          MPCRT_FOR_DTYPE(c.dt, CALL);
#undef CALL
          return;
        }
        if (c.kind == mpcrt::test::NormKind::AddLayer) {
          const int64_t step = 0;
          mpcrt_add_layer_norm(c.dt, c.x.data(), c.residual.data(), c.param,
                               c.gamma.data(), c.beta.data(), sum.data(),
                               y.data(), mean.data(), rstd.data(), c.rows,
                               c.cols, c.rows, 1e-5, 0, 1, &step);
          mpcrt_add_layer_norm_backward(
              c.dt, c.dy.data(), nullptr, sum.data(), mean.data(), rstd.data(),
              c.param, c.gamma.data(), dx.data(), dres.data(), dg.data(),
              db.data(), gp, bp, c.rows, c.cols, 0, 1, &step, nullptr);
          return;
        }
#define CALL(SUFFIX, T, STAT)                                                  \
  mpcrt_layer_norm_##SUFFIX(                                                   \
      reinterpret_cast<const T *>(c.x.data()), c.param, c.gamma.data(),        \
      c.beta.data(), reinterpret_cast<T *>(y.data()),                          \
      reinterpret_cast<STAT *>(mean.data()),                                   \
      reinterpret_cast<STAT *>(rstd.data()), c.rows, c.cols, 1e-5);            \
  mpcrt_layer_norm_backward_##SUFFIX(                                          \
      reinterpret_cast<const T *>(c.dy.data()),                                \
      reinterpret_cast<const T *>(c.x.data()),                                 \
      reinterpret_cast<const STAT *>(mean.data()),                             \
      reinterpret_cast<const STAT *>(rstd.data()), c.param, c.gamma.data(),    \
      reinterpret_cast<T *>(dx.data()), dg.data(), db.data(), gp, bp, c.rows,  \
      c.cols)
        MPCRT_FOR_DTYPE(c.dt, CALL);
#undef CALL
      });
  mpcrt::test::checkEmbeddingAddend(
      rng, [](const mpcrt::test::EmbeddingAddendCase &c,
              const std::vector<uint8_t> *addend, bool inPlace,
              std::vector<uint8_t> &table) {
        const void *a = addendOf(addend, inPlace, table);
        int64_t bad = -1;
#define CALL(SUFFIX, T, STAT)                                                  \
  bad = mpcrt_embedding_backward_##SUFFIX(                                     \
      reinterpret_cast<const T *>(c.dy.data()), c.indices.data(), 32, c.count, \
      c.v, c.d, c.padding, static_cast<const T *>(a),                          \
      reinterpret_cast<T *>(table.data()))
        MPCRT_FOR_DTYPE(c.dt, CALL);
#undef CALL
        EXPECT_EQ(bad, 0);
      });
}

/// What the unfused graph computes at O2 for `dropout -> add -> cast f32 ->
/// layer_norm -> cast`, and for its backward (the layer norm's gradient in
/// f32, cast for the residual, through the f32 dropout gradient for the
/// input): the fused op's results, bit for bit.
template <typename T, typename Dropout, typename Binary>
void checkAgainstUnfusedOps(mpcrt_dtype dt, Dropout dropout, Binary binary) {
  std::mt19937 rng(std::random_device{}());
  const int64_t rows = 24, cols = 96, n = rows * cols;
  const double p = 0.2;
  const uint64_t seed = 5;
  const int64_t step = 9;
  std::vector<double> unused;
  auto x = mpcrt::test::randomOf(dt, n, rng, unused),
       r = mpcrt::test::randomOf(dt, n, rng, unused),
       dy = mpcrt::test::randomOf(dt, n, rng, unused);
  auto gamma = mpcrt::test::uniformOf(MPCRT_F32, cols, 0.5, 1.5, rng),
       beta = mpcrt::test::uniformOf(MPCRT_F32, cols, -1, 1, rng);
  size_t bytes = n * sizeof(T);
  std::vector<uint8_t> sum(bytes), y(bytes), dx(bytes), dres(bytes);
  std::vector<float> mean(rows), rstd(rows), dg(cols), db(cols);
  mpcrt_add_layer_norm(dt, x.data(), r.data(), MPCRT_F32, gamma.data(),
                       beta.data(), sum.data(), y.data(), mean.data(),
                       rstd.data(), rows, cols, rows, 1e-5, p, seed, &step);
  mpcrt_add_layer_norm_backward(dt, dy.data(), nullptr, sum.data(), mean.data(),
                                rstd.data(), MPCRT_F32, gamma.data(), dx.data(),
                                dres.data(), dg.data(), db.data(), nullptr,
                                nullptr, rows, cols, p, seed, &step, nullptr);

  std::vector<uint8_t> dropped(bytes), mask(n), sum2(bytes), y2(bytes),
      dx2(bytes), dres2(bytes);
  dropout(reinterpret_cast<const T *>(x.data()),
          reinterpret_cast<T *>(dropped.data()), mask.data(), n, p, seed,
          &step);
  int64_t shape[] = {n}, strides[] = {1};
  binary(MPCRT_ADD, reinterpret_cast<const T *>(dropped.data()), strides,
         reinterpret_cast<const T *>(r.data()), strides,
         reinterpret_cast<T *>(sum2.data()), shape, 1);
  std::vector<float> s32(n), y32(n), dy32(n), dx32(n), dd32(n), mean2(rows),
      rstd2(rows), dg2(cols), db2(cols);
  mpcrt_cast(dt, sum2.data(), MPCRT_F32, s32.data(), n);
  mpcrt_layer_norm_f32(s32.data(), MPCRT_F32, gamma.data(), beta.data(),
                       y32.data(), mean2.data(), rstd2.data(), rows, cols,
                       1e-5);
  mpcrt_cast(MPCRT_F32, y32.data(), dt, y2.data(), n);
  mpcrt_cast(dt, dy.data(), MPCRT_F32, dy32.data(), n);
  mpcrt_layer_norm_backward_f32(dy32.data(), s32.data(), mean2.data(),
                                rstd2.data(), MPCRT_F32, gamma.data(),
                                dx32.data(), dg2.data(), db2.data(), nullptr,
                                nullptr, rows, cols);
  mpcrt_cast(MPCRT_F32, dx32.data(), dt, dres2.data(), n);
  mpcrt_dropout_backward_f32(dx32.data(), mask.data(), dd32.data(), n, p);
  mpcrt_cast(MPCRT_F32, dd32.data(), dt, dx2.data(), n);

  EXPECT_EQ(sum, sum2);
  EXPECT_EQ(y, y2);
  EXPECT_EQ(mean, mean2);
  EXPECT_EQ(rstd, rstd2);
  EXPECT_EQ(dres, dres2);
  EXPECT_EQ(dx, dx2);
  EXPECT_EQ(dg, dg2);
  EXPECT_EQ(db, db2);

  // Each gradient alone (the other null, not written; what the memory plan
  // gives a gradient nobody reads): the same bits.
  std::vector<uint8_t> dx3(bytes), dres3(bytes);
  std::vector<float> dg3(cols), db3(cols);
  mpcrt_add_layer_norm_backward(
      dt, dy.data(), nullptr, sum.data(), mean.data(), rstd.data(), MPCRT_F32,
      gamma.data(), dx3.data(), nullptr, dg3.data(), db3.data(), nullptr,
      nullptr, rows, cols, p, seed, &step, nullptr);
  mpcrt_add_layer_norm_backward(dt, dy.data(), nullptr, sum.data(), mean.data(),
                                rstd.data(), MPCRT_F32, gamma.data(), nullptr,
                                dres3.data(), dg3.data(), db3.data(), nullptr,
                                nullptr, rows, cols, p, seed, &step, nullptr);
  EXPECT_EQ(dx3, dx);
  EXPECT_EQ(dres3, dres);
  EXPECT_EQ(dg3, dg);
}

/// mpcrt_dropout_add against mpcrt_dropout_* then mpcrt_binary_* ADD (the
/// unfused ops), bit for bit: apart, in place over the residual, and
/// without a residual (the dropped input, the gradient's form).
template <typename T, typename Dropout, typename Binary>
void checkDropoutAdd(mpcrt_dtype dt, Dropout dropout, Binary binary) {
  std::mt19937 rng(std::random_device{}());
  const int64_t n = 4099; // not a multiple of the four words of a draw
  const double p = 0.3;
  const uint64_t seed = rng();
  const int64_t step = 11;
  std::vector<double> unused;
  auto x = mpcrt::test::randomOf(dt, n, rng, unused),
       r = mpcrt::test::randomOf(dt, n, rng, unused);
  size_t bytes = n * sizeof(T);
  std::vector<uint8_t> dropped(bytes), mask(n), want(bytes);
  dropout(reinterpret_cast<const T *>(x.data()),
          reinterpret_cast<T *>(dropped.data()), mask.data(), n, p, seed,
          &step);
  int64_t shape[] = {n}, strides[] = {1};
  binary(MPCRT_ADD, reinterpret_cast<const T *>(dropped.data()), strides,
         reinterpret_cast<const T *>(r.data()), strides,
         reinterpret_cast<T *>(want.data()), shape, 1);

  std::vector<uint8_t> got(bytes), alone(bytes), inPlace = r;
  mpcrt_dropout_add(dt, x.data(), r.data(), got.data(), n, p, seed, &step);
  mpcrt_dropout_add(dt, x.data(), nullptr, alone.data(), n, p, seed, &step);
  mpcrt_dropout_add(dt, x.data(), inPlace.data(), inPlace.data(), n, p, seed,
                    &step);
  EXPECT_EQ(got, want) << "dtype " << dt;
  EXPECT_EQ(alone, dropped) << "dtype " << dt;
  EXPECT_EQ(inPlace, want) << "dtype " << dt;
  // A nonzero drop rate drops something and keeps something.
  int64_t kept = std::count(mask.begin(), mask.end(), 1);
  EXPECT_GT(kept, 0);
  EXPECT_LT(kept, n);
}

TEST(Nn, DropoutAddIsTheUnfusedOpsBitForBit) {
  checkDropoutAdd<uint16_t>(MPCRT_F16, mpcrt_dropout_f16, mpcrt_binary_f16);
  checkDropoutAdd<uint16_t>(MPCRT_BF16, mpcrt_dropout_bf16, mpcrt_binary_bf16);
  checkDropoutAdd<float>(MPCRT_F32, mpcrt_dropout_f32, mpcrt_binary_f32);
  checkDropoutAdd<double>(MPCRT_F64, mpcrt_dropout_f64, mpcrt_binary_f64);
}

TEST(Nn, AddLayerNormIsTheUnfusedOpsBitForBit) {
  checkAgainstUnfusedOps<uint16_t>(MPCRT_F16, mpcrt_dropout_f16,
                                   mpcrt_binary_f16);
  checkAgainstUnfusedOps<uint16_t>(MPCRT_BF16, mpcrt_dropout_bf16,
                                   mpcrt_binary_bf16);
  checkAgainstUnfusedOps<float>(MPCRT_F32, mpcrt_dropout_f32, mpcrt_binary_f32);
}

} // namespace
