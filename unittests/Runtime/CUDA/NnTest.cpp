//===- NnTest.cpp - CUDA convolutions, norms, pooling, data vs the CPU ----===//

#include "../AddLayerNormCheck.h"
#include "../AttentionCheck.h"
#include "../GradientAddendCheck.h"
#include "CudaTest.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

using namespace mpcrt::cuda;
using namespace mpcrt::cuda::test;

namespace {

class Nn : public CudaTest {
public:
  /// `flash`: whether the flash kernels are on (their D comes from the
  /// forward's result, AttentionCheck.h).
  void checkAttentionOnce(bool flash);
  /// `offset`: the rows' tensors (inputs, sums, outputs and gradients)
  /// that many elements past an aligned start.
  mpcrt::test::AddLayerNormRun
  addLayerNormRun(mpcrt_dtype dt, const mpcrt::test::AddLayerNormCase &c,
                  bool plain, int64_t offset = 0);
  /// BatchNormOverManyChunksMatchesFloat64's check, at the reductions'
  /// setting of the moment.
  void checkBatchNormOverManyChunks();
};

// The shared helpers (AddLayerNormCheck.h), under this file's names.
using mpcrt::test::valuesOf;
int64_t bytesOf(mpcrt_dtype d) { return mpcrt::test::elementBytes(d); }
std::vector<uint8_t> randomOf(std::mt19937 &rng, mpcrt_dtype d, int64_t n,
                              double lo, double hi) {
  return mpcrt::test::uniformOf(d, n, lo, hi, rng);
}

/// f32 bytes as floats.
std::vector<float> valuesAsFloat(const std::vector<uint8_t> &bytes) {
  std::vector<float> v(bytes.size() / 4);
  std::memcpy(v.data(), bytes.data(), v.size() * 4);
  return v;
}

/// |got - want| <= rel * |want| + abs, element by element.
void expectNear(mpcrt_dtype d, const std::vector<uint8_t> &want,
                const std::vector<uint8_t> &got, double rel, double abs,
                const char *what) {
  std::vector<double> w = valuesOf(d, want), o = valuesOf(d, got);
  ASSERT_EQ(w.size(), o.size()) << what;
  for (size_t i = 0; i < w.size(); ++i)
    ASSERT_LE(std::fabs(w[i] - o[i]), rel * std::fabs(w[i]) + abs)
        << what << " element " << i << ": " << o[i] << " vs " << w[i];
}

double relOf(mpcrt_dtype d) {
  return d == MPCRT_F64   ? 1e-12
         : d == MPCRT_F32 ? 1e-5
         : d == MPCRT_F16 ? 2e-3
                          : 1.6e-2;
}

const mpcrt_dtype kTypes[] = {MPCRT_F16, MPCRT_BF16, MPCRT_F32, MPCRT_F64};

TEST_F(Nn, ConvolutionsMatchTheReference) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  mpcrt_conv2d_shape shapes[] = {
      // n h w c | o kh kw | ho wo | stride, pad, dilation, groups
      {2, 9, 9, 8, 16, 3, 3, 9, 9, 1, 1, 1, 1, 1, 1, 1},
      {1, 10, 8, 8, 8, 3, 3, 5, 4, 2, 2, 1, 1, 1, 1, 1},
      {2, 7, 7, 8, 8, 3, 3, 5, 5, 1, 1, 0, 0, 1, 1, 2},
  };
  // f64 NHWC convolutions depend on cuDNN's support (docs/CUDA.md).
  for (const mpcrt_conv2d_shape &s : shapes)
    for (mpcrt_dtype d : {MPCRT_F16, MPCRT_BF16, MPCRT_F32}) {
      int64_t in = s.n * s.h * s.w * s.c, out = s.n * s.ho * s.wo * s.o,
              filt = s.o * s.kh * s.kw * (s.c / s.groups);
      auto x = randomOf(rng, d, in, -1, 1), w = randomOf(rng, d, filt, -1, 1),
           dy = randomOf(rng, d, out, -1, 1);
      std::vector<uint8_t> y(out * bytesOf(d)), dx(in * bytesOf(d)),
          dw(filt * bytesOf(d));
#define CALL(SUFFIX, T, STAT)                                                  \
  do {                                                                         \
    mpcrt_conv2d_##SUFFIX(reinterpret_cast<const T *>(x.data()),               \
                          reinterpret_cast<const T *>(w.data()),               \
                          reinterpret_cast<T *>(y.data()), &s);                \
    mpcrt_conv2d_backward_data_##SUFFIX(                                       \
        reinterpret_cast<const T *>(dy.data()),                                \
        reinterpret_cast<const T *>(w.data()),                                 \
        reinterpret_cast<T *>(dx.data()), &s);                                 \
    mpcrt_conv2d_backward_filter_##SUFFIX(                                     \
        reinterpret_cast<const T *>(dy.data()),                                \
        reinterpret_cast<const T *>(x.data()),                                 \
        reinterpret_cast<T *>(dw.data()), &s);                                 \
  } while (0)
      MPCRT_FOR_DTYPE(d, CALL);
#undef CALL
      uint8_t *dX = upload(x), *dW = upload(w), *dDy = upload(dy);
      uint8_t *gy = deviceBuffer<uint8_t>(y.size()),
              *gdx = deviceBuffer<uint8_t>(dx.size()),
              *gdw = deviceBuffer<uint8_t>(dw.size());
      conv2d(d, dX, dW, nullptr, gy, s);
      conv2dBackwardData(d, dDy, dW, gdx, s);
      conv2dBackwardFilter(d, dDy, dX, gdw, s);
      // Sums of up to 2*9*9*8 products of magnitude <= 1 in f32 (f64).
      double acc = d == MPCRT_F64 ? 1e-12 : 1e-4;
      expectNear(d, y, download(gy, y.size()), relOf(d), acc, "conv2d");
      expectNear(d, dx, download(gdx, dx.size()), relOf(d), acc,
                 "conv2d_backward_data");
      expectNear(d, dw, download(gdw, dw.size()), relOf(d), acc * 4,
                 "conv2d_backward_filter");
      if (HasFatalFailure())
        return;
    }
}

TEST_F(Nn, ConvolutionAddendsMatchTheReference) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  // Shapes of their own: with MPC_CUDNN_ALGORITHMS=measure each is timed
  // on this test's first call, which adds to its output (the timed runs
  // must not add to it again: ctest's emulated-measured.convolutions).
  mpcrt_conv2d_shape shapes[] = {
      // n h w c | o kh kw | ho wo | stride, pad, dilation, groups
      {2, 7, 9, 8, 16, 3, 3, 7, 9, 1, 1, 1, 1, 1, 1, 1},
      {1, 9, 8, 16, 8, 3, 3, 5, 4, 2, 2, 1, 1, 1, 1, 1},
  };
  for (const mpcrt_conv2d_shape &s : shapes)
    for (mpcrt_dtype d : {MPCRT_F16, MPCRT_BF16, MPCRT_F32}) {
      SCOPED_TRACE("dtype " + std::to_string(d) + ", c " + std::to_string(s.c));
      int64_t in = s.n * s.h * s.w * s.c, out = s.n * s.ho * s.wo * s.o,
              filt = s.o * s.kh * s.kw * s.c;
      auto x = randomOf(rng, d, in, -1, 1), w = randomOf(rng, d, filt, -1, 1),
           a = randomOf(rng, d, out, -8, 8);
      std::vector<uint8_t> y(out * bytesOf(d)), sum(out * bytesOf(d));
#define CALL(SUFFIX, T, STAT)                                                  \
  do {                                                                         \
    mpcrt_conv2d_##SUFFIX(reinterpret_cast<const T *>(x.data()),               \
                          reinterpret_cast<const T *>(w.data()),               \
                          reinterpret_cast<T *>(y.data()), &s);                \
    mpcrt_conv2d_add_##SUFFIX(reinterpret_cast<const T *>(x.data()),           \
                              reinterpret_cast<const T *>(w.data()),           \
                              reinterpret_cast<const T *>(a.data()),           \
                              reinterpret_cast<T *>(sum.data()), &s);          \
  } while (0)
      MPCRT_FOR_DTYPE(d, CALL);
#undef CALL
      uint8_t *dX = upload(x), *dW = upload(w), *dA = upload(a);
      uint8_t *apart = deviceBuffer<uint8_t>(sum.size()), *inPlace = upload(a);
      conv2d(d, dX, dW, dA, apart, s);
      conv2d(d, dX, dW, inPlace, inPlace, s);
      std::vector<uint8_t> got = download(apart, sum.size());
      // The reference rounds the sum once; cuDNN documents the sum (alpha
      // times the convolution plus beta times the output) but not its
      // roundings: the convolution may be rounded to the type first, half
      // an ulp of it more. Sums of up to 9*16 products of magnitude <= 1.
      std::vector<double> want = valuesOf(d, sum), conv = valuesOf(d, y),
                          have = valuesOf(d, got);
      double u = relOf(d), acc = 1e-4;
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_LE(std::fabs(have[i] - want[i]),
                  u * (std::fabs(want[i]) + std::fabs(conv[i])) + acc)
            << "element " << i << ": " << have[i] << " vs " << want[i];
      EXPECT_EQ(download(inPlace, sum.size()), got)
          << "in place and apart differ";
      if (HasFatalFailure())
        return;
    }
}

TEST_F(Nn, BatchNormInferenceMatchesTheReference) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  // 24 channels take 16-byte vectors in f16/bf16, 13 do not; the input at
  // an offset of one element breaks the vectors' alignment; with and
  // without the ReLU. The same formula as the reference, which may differ
  // by the contraction of its last multiply-add: one ulp of the result.
  for (mpcrt_dtype d : kTypes)
    for (int64_t c : {24, 13})
      for (int64_t offset : {0, 1})
        for (int32_t act :
             {int32_t(MPCRT_ACTIVATION_NONE), int32_t(MPCRT_RELU)}) {
          SCOPED_TRACE("dtype " + std::to_string(d) + ", c " +
                       std::to_string(c) + ", offset " +
                       std::to_string(offset) + ", activation " +
                       std::to_string(act));
          mpcrt_dtype pd = d == MPCRT_F64 ? MPCRT_F64 : MPCRT_F32;
          const int64_t rows = 3 * 7 * 5, n = rows * c;
          int64_t at = offset * bytesOf(d);
          auto x = randomOf(rng, d, n + offset, -2, 3);
          auto gamma = randomOf(rng, pd, c, -1.5, 1.5),
               beta = randomOf(rng, pd, c, -0.5, 0.5);
          auto rm = randomOf(rng, pd, c, -0.5, 0.5),
               rv = randomOf(rng, pd, c, 0.2, 2);
          std::vector<uint8_t> y(n * bytesOf(d));
#define CALL(SUFFIX, T, STAT)                                                  \
  mpcrt_batch_norm_inference_##SUFFIX(                                         \
      reinterpret_cast<const T *>(x.data() + at), pd, gamma.data(),            \
      beta.data(), rm.data(), rv.data(), reinterpret_cast<T *>(y.data()),      \
      rows, c, 1e-3, act)
          MPCRT_FOR_DTYPE(d, CALL);
#undef CALL
          uint8_t *dX = upload(x), *gy = deviceBuffer<uint8_t>(y.size());
          batchNormInference(d, dX + at, pd, upload(gamma), upload(beta),
                             upload(rm), upload(rv), gy, rows, c, 1e-3,
                             act == MPCRT_RELU);
          double acc = d == MPCRT_F64 ? 1e-12 : 1e-5;
          expectNear(d, y, download(gy, y.size()), relOf(d), acc,
                     "batch_norm_inference");
        }
}

/// A second rank of a synchronised batch norm, simulated through the rank
/// gather: `record` keeps what the rank running now contributes (its
/// moments or sums) as the second rank's; otherwise the gather returns the
/// running rank's values as rank 0's and the recorded ones as rank 1's.
struct SecondRank {
  static inline bool record = true;
  static inline uint8_t *recorded = nullptr;
  static void gather(const void *mine, void *all, int64_t bytes) {
    uint8_t *out = static_cast<uint8_t *>(all);
    if (record)
      copy(recorded, mine, bytes);
    copy(out, mine, bytes);
    copy(out + bytes, record ? mine : recorded, bytes);
  }
};

// mpc.batch_norm {sync} on the device, rank 0 of two with 96 rows each (the
// second rank's moments and gradient sums recorded from a run on its own
// rows, then gathered as NCCL gathers them): its results are the first 96
// rows of the CPU reference's plain batch norm over both ranks' 192, with
// its running statistics; the backward's input gradient those rows of the
// reference's backward over 192 rows with the same saved statistics, and
// gamma's and beta's gradients the reference's over rank 0's rows alone.
// Channels of a 16-byte vector and not (16, 13). In a job of one (no
// gather) the synchronised kernels give the plain kernels' bits.
TEST_F(Nn, SyncBatchNormMatchesTheReferenceOverEveryRanksRows) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  struct Reset {
    ~Reset() { setRankGather(1, nullptr); }
  } reset;
  for (mpcrt_dtype d : kTypes)
    for (int64_t c : {16, 13}) {
      SCOPED_TRACE("dtype " + std::to_string(d) + ", " + std::to_string(c) +
                   " channels");
      mpcrt_dtype pd = d == MPCRT_F64 ? MPCRT_F64 : MPCRT_F32;
      const int64_t rows = 96, n = rows * c, eb = bytesOf(d);
      auto x = randomOf(rng, d, 2 * n, -2, 3),
           dy = randomOf(rng, d, 2 * n, -1, 1);
      auto gamma = randomOf(rng, pd, c, 0.5, 1.5),
           beta = randomOf(rng, pd, c, -0.5, 0.5);
      auto rm = randomOf(rng, pd, c, -0.1, 0.1),
           rv = randomOf(rng, pd, c, 1, 2);
      // The reference's forward over both ranks' rows.
      std::vector<uint8_t> yAll(2 * n * eb), rmWant = rm, rvWant = rv;
      std::vector<float> meanAll(c), invAll(c);
#define CALL(SUFFIX, T, STAT)                                                  \
  mpcrt_batch_norm_##SUFFIX(reinterpret_cast<const T *>(x.data()), pd,         \
                            gamma.data(), beta.data(), rmWant.data(),          \
                            rvWant.data(), reinterpret_cast<T *>(yAll.data()), \
                            meanAll.data(), invAll.data(), 2 * rows, c, 0.1,   \
                            1e-5, MPCRT_ACTIVATION_NONE)
      MPCRT_FOR_DTYPE(d, CALL);
#undef CALL
      uint8_t *dX = upload(x), *dDy = upload(dy), *dG = upload(gamma),
              *dB = upload(beta);
      uint8_t *x0 = dX, *x1 = dX + n * eb, *dy0 = dDy, *dy1 = dDy + n * eb;
      SecondRank::recorded = deviceBuffer<uint8_t>(3 * c * sizeof(double));
      setRankGather(2, SecondRank::gather);
      // Rank 1's moments, then rank 0's statistics over both.
      SecondRank::record = true;
      batchNorm(d, x1, pd, dG, dB, upload(rm), upload(rv),
                deviceBuffer<uint8_t>(n * eb), deviceBuffer<float>(c),
                deviceBuffer<float>(c), rows, c, 0.1, 1e-5, false, true);
      SecondRank::record = false;
      uint8_t *dRm = upload(rm), *dRv = upload(rv),
              *gy = deviceBuffer<uint8_t>(n * eb);
      float *gMean = deviceBuffer<float>(c), *gInv = deviceBuffer<float>(c);
      batchNorm(d, x0, pd, dG, dB, dRm, dRv, gy, gMean, gInv, rows, c, 0.1,
                1e-5, false, true);
      double acc = d == MPCRT_F64 ? 1e-12 : 1e-5;
      std::vector<uint8_t> y0(yAll.begin(), yAll.begin() + n * eb);
      expectNear(d, y0, download(gy, n * eb), relOf(d) * 2, acc * 8,
                 "sync batch_norm");
      expectNear(pd, rmWant, download(dRm, rm.size()), 1e-6, acc,
                 "running_mean");
      expectNear(pd, rvWant, download(dRv, rv.size()), 1e-6, acc,
                 "running_var");
      std::vector<float> mean = download(gMean, c), invstd = download(gInv, c);
      for (int64_t ch = 0; ch < c; ++ch) {
        EXPECT_NEAR(mean[ch], meanAll[ch], 1e-5 * (1 + std::fabs(meanAll[ch])));
        EXPECT_NEAR(invstd[ch], invAll[ch], 1e-5 * invAll[ch]);
      }
      // Rank 1's sums with those statistics, then rank 0's backward.
      SecondRank::recorded = deviceBuffer<uint8_t>(2 * c * sizeof(double));
      SecondRank::record = true;
      batchNormBackward(d, dy1, x1, pd, dG, gMean, gInv,
                        deviceBuffer<uint8_t>(n * eb),
                        deviceBuffer<uint8_t>(c * bytesOf(pd)),
                        deviceBuffer<uint8_t>(c * bytesOf(pd)), rows, c,
                        nullptr, nullptr, nullptr, nullptr, true);
      SecondRank::record = false;
      uint8_t *gdx = deviceBuffer<uint8_t>(n * eb),
              *gdg = deviceBuffer<uint8_t>(c * bytesOf(pd)),
              *gdb = deviceBuffer<uint8_t>(c * bytesOf(pd));
      batchNormBackward(d, dy0, x0, pd, dG, gMean, gInv, gdx, gdg, gdb, rows, c,
                        nullptr, nullptr, nullptr, nullptr, true);
      // The reference: every rank's rows for the input's gradient, rank
      // 0's alone for gamma's and beta's.
      std::vector<uint8_t> dxAll(2 * n * eb), dxOwn(n * eb),
          dgAll(c * bytesOf(pd)), dbAll(dgAll.size()), dgOwn(dgAll.size()),
          dbOwn(dgAll.size());
#define CALL(SUFFIX, T, STAT)                                                  \
  do {                                                                         \
    mpcrt_batch_norm_backward_##SUFFIX(                                        \
        reinterpret_cast<const T *>(dy.data()),                                \
        reinterpret_cast<const T *>(x.data()), pd, gamma.data(), mean.data(),  \
        invstd.data(), reinterpret_cast<T *>(dxAll.data()), dgAll.data(),      \
        dbAll.data(), 2 * rows, c, nullptr, nullptr, nullptr, nullptr);        \
    mpcrt_batch_norm_backward_##SUFFIX(                                        \
        reinterpret_cast<const T *>(dy.data()),                                \
        reinterpret_cast<const T *>(x.data()), pd, gamma.data(), mean.data(),  \
        invstd.data(), reinterpret_cast<T *>(dxOwn.data()), dgOwn.data(),      \
        dbOwn.data(), rows, c, nullptr, nullptr, nullptr, nullptr);            \
  } while (0)
      MPCRT_FOR_DTYPE(d, CALL);
#undef CALL
      std::vector<uint8_t> dx0(dxAll.begin(), dxAll.begin() + n * eb);
      expectNear(d, dx0, download(gdx, n * eb), relOf(d) * 2, acc * 16,
                 "sync batch_norm dx");
      expectNear(pd, dgOwn, download(gdg, dgOwn.size()), 1e-5, acc * rows,
                 "dgamma");
      expectNear(pd, dbOwn, download(gdb, dbOwn.size()), 1e-5, acc * rows,
                 "dbeta");
      // The check has teeth: rank 0's rows alone give another gradient.
      EXPECT_NE(dx0, dxOwn);

      // A job of one: the plain kernels' bits.
      setRankGather(1, nullptr);
      uint8_t *outs[2][8];
      for (int sync = 0; sync < 2; ++sync) {
        uint8_t **o = outs[sync];
        o[0] = upload(rm), o[1] = upload(rv),
        o[2] = deviceBuffer<uint8_t>(n * eb);
        o[3] = deviceBuffer<uint8_t>(c * 4),
        o[4] = deviceBuffer<uint8_t>(c * 4);
        o[5] = deviceBuffer<uint8_t>(n * eb);
        o[6] = deviceBuffer<uint8_t>(c * bytesOf(pd));
        o[7] = deviceBuffer<uint8_t>(c * bytesOf(pd));
        auto *m = reinterpret_cast<float *>(o[3]),
             *s = reinterpret_cast<float *>(o[4]);
        batchNorm(d, x0, pd, dG, dB, o[0], o[1], o[2], m, s, rows, c, 0.1, 1e-5,
                  false, sync);
        batchNormBackward(d, dy0, x0, pd, dG, m, s, o[5], o[6], o[7], rows, c,
                          nullptr, nullptr, nullptr, nullptr, sync);
      }
      size_t sizes[8] = {rm.size(),
                         rv.size(),
                         size_t(n * eb),
                         size_t(c * 4),
                         size_t(c * 4),
                         size_t(n * eb),
                         size_t(c * bytesOf(pd)),
                         size_t(c * bytesOf(pd))};
      for (int k = 0; k < 8; ++k)
        EXPECT_EQ(download(outs[0][k], sizes[k]),
                  download(outs[1][k], sizes[k]))
            << "output " << k << " of a job of one";
      setRankGather(2, SecondRank::gather);
      if (HasFatalFailure())
        return;
    }
}

TEST_F(Nn, BatchNormPoolingUpsamplingMatchTheReference) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  for (mpcrt_dtype d : kTypes) {
    mpcrt_dtype pd = d == MPCRT_F64 ? MPCRT_F64 : MPCRT_F32;
    const int64_t rows = 2 * 8 * 8, c = 16;
    auto x = randomOf(rng, d, rows * c, -2, 3),
         dy = randomOf(rng, d, rows * c, -1, 1);
    auto gamma = randomOf(rng, pd, c, 0.5, 1.5),
         beta = randomOf(rng, pd, c, -0.5, 0.5);
    auto rm = randomOf(rng, pd, c, -0.1, 0.1), rv = randomOf(rng, pd, c, 1, 2);
    std::vector<uint8_t> y(x.size()), dx(x.size()), dg(gamma.size()),
        db(gamma.size()), rmWant = rm, rvWant = rv;
    std::vector<float> mean(c), invstd(c);
    mpcrt_pool2d_shape pool{2, 8, 8, c, 4, 4, 3, 3, 2, 2, 1, 1, 0};
    int64_t pooled = 2 * 4 * 4 * c;
    std::vector<uint8_t> mp(pooled * bytesOf(d)), ap(mp.size()),
        mpBack(x.size()), apBack(x.size()), up(4 * x.size()), upBack(x.size());
    auto pdy = randomOf(rng, d, pooled, -1, 1);
    auto udy = randomOf(rng, d, 4 * rows * c, -1, 1);
#define CALL(SUFFIX, T, STAT)                                                  \
  do {                                                                         \
    const T *X = reinterpret_cast<const T *>(x.data());                        \
    mpcrt_batch_norm_##SUFFIX(X, pd, gamma.data(), beta.data(), rmWant.data(), \
                              rvWant.data(), reinterpret_cast<T *>(y.data()),  \
                              mean.data(), invstd.data(), rows, c, 0.1, 1e-5,  \
                              MPCRT_ACTIVATION_NONE);                          \
    mpcrt_batch_norm_backward_##SUFFIX(                                        \
        reinterpret_cast<const T *>(dy.data()), X, pd, gamma.data(),           \
        mean.data(), invstd.data(), reinterpret_cast<T *>(dx.data()),          \
        dg.data(), db.data(), rows, c, nullptr, nullptr, nullptr, nullptr);    \
    mpcrt_max_pool2d_##SUFFIX(X, reinterpret_cast<T *>(mp.data()), &pool);     \
    mpcrt_max_pool2d_backward_##SUFFIX(                                        \
        reinterpret_cast<const T *>(pdy.data()), X,                            \
        reinterpret_cast<T *>(mpBack.data()), &pool);                          \
    mpcrt_avg_pool2d_##SUFFIX(X, reinterpret_cast<T *>(ap.data()), &pool);     \
    mpcrt_avg_pool2d_backward_##SUFFIX(                                        \
        reinterpret_cast<const T *>(pdy.data()),                               \
        reinterpret_cast<T *>(apBack.data()), &pool);                          \
    mpcrt_upsample_nearest2d_##SUFFIX(X, reinterpret_cast<T *>(up.data()), 2,  \
                                      8, 8, c, 2, 2);                          \
    mpcrt_upsample_nearest2d_backward_##SUFFIX(                                \
        reinterpret_cast<const T *>(udy.data()),                               \
        reinterpret_cast<T *>(upBack.data()), 2, 8, 8, c, 2, 2);               \
  } while (0)
    MPCRT_FOR_DTYPE(d, CALL);
#undef CALL
    uint8_t *dX = upload(x), *dG = upload(gamma);
    uint8_t *dRm = upload(rm), *dRv = upload(rv);
    uint8_t *gy = deviceBuffer<uint8_t>(y.size());
    float *gMean = deviceBuffer<float>(c), *gInv = deviceBuffer<float>(c);
    batchNorm(d, dX, pd, dG, upload(beta), dRm, dRv, gy, gMean, gInv, rows, c,
              0.1, 1e-5);
    double acc = d == MPCRT_F64 ? 1e-12 : 1e-5;
    expectNear(d, y, download(gy, y.size()), relOf(d) * 2, acc * 8,
               "batch_norm");
    expectNear(pd, rmWant, download(dRm, rm.size()), 1e-6, acc, "running_mean");
    expectNear(pd, rvWant, download(dRv, rv.size()), 1e-6, acc, "running_var");
    uint8_t *gdx = deviceBuffer<uint8_t>(dx.size());
    uint8_t *gdg = deviceBuffer<uint8_t>(dg.size()),
            *gdb = deviceBuffer<uint8_t>(db.size());
    batchNormBackward(d, upload(dy), dX, pd, dG, upload(mean), upload(invstd),
                      gdx, gdg, gdb, rows, c);
    expectNear(d, dx, download(gdx, dx.size()), relOf(d) * 2, acc * 16,
               "batch_norm dx");
    expectNear(pd, dg, download(gdg, dg.size()), 1e-5, acc * rows, "dgamma");
    expectNear(pd, db, download(gdb, db.size()), 1e-5, acc * rows, "dbeta");

    uint8_t *g = deviceBuffer<uint8_t>(mp.size());
    maxPool2d(d, dX, g, pool);
    ASSERT_EQ(download(g, mp.size()), mp) << "max_pool2d";
    uint8_t *gb = deviceBuffer<uint8_t>(x.size()), *dPdy = upload(pdy);
    maxPool2dBackward(d, dPdy, dX, gb, pool);
    expectNear(d, mpBack, download(gb, x.size()), relOf(d), acc,
               "max_pool2d_backward");
    avgPool2d(d, dX, g, pool);
    expectNear(d, ap, download(g, ap.size()), relOf(d), acc, "avg_pool2d");
    avgPool2dBackward(d, dPdy, gb, pool);
    expectNear(d, apBack, download(gb, x.size()), relOf(d), acc,
               "avg_pool2d_backward");
    uint8_t *gu = deviceBuffer<uint8_t>(up.size());
    upsampleNearest2d(d, dX, gu, 2, 8, 8, c, 2, 2);
    ASSERT_EQ(download(gu, up.size()), up) << "upsample";
    upsampleNearest2dBackward(d, upload(udy), gb, 2, 8, 8, c, 2, 2);
    expectNear(d, upBack, download(gb, x.size()), relOf(d), acc,
               "upsample backward");
    if (HasFatalFailure())
      return;
  }
}

// The NHWC kernels at the layouts that choose their paths: channels that
// go 16 bytes at a time and channels that do not (5), pointers one element
// off alignment, pooling windows that tile the input, leave some of it out
// (a stride beyond the kernel, rows past the last window, padding) or
// overlap (each input then gathers). A NaN in every input: max pooling
// takes it. Max pooling and upsampling move or sum in the reference's
// order, so they match bit for bit; batch norm rounds differently. Max
// pooling's gradient with an addend is the reference's, and that is
// mpc.add's of the addend and the plain gradient, bit for bit.
TEST_F(Nn, SpatialKernelsOfEveryLayoutMatchTheReference) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  struct Pooling {
    int64_t h, w, ho, wo, k, stride, pad;
  };
  const Pooling poolings[] = {
      {8, 8, 4, 4, 2, 2, 0}, // tiles the input
      {7, 7, 2, 2, 3, 3, 0}, // the last row and column in no window
      {7, 7, 4, 4, 2, 2, 1}, // padded
      {8, 8, 3, 3, 2, 3, 0}, // a stride beyond the kernel
      {8, 8, 4, 4, 3, 2, 1}, // overlapping
  };
  for (mpcrt_dtype d : kTypes)
    for (int64_t c : {16, 5})
      for (int64_t misalign : {0, 1}) {
        SCOPED_TRACE(std::string("dtype ") + std::to_string(d) + ", " +
                     std::to_string(c) + " channels, misaligned by " +
                     std::to_string(misalign));
        const int64_t n = 2, e = bytesOf(d), off = misalign * e;
        // A device copy `off` bytes past 16-byte alignment, and a buffer.
        auto at = [&](const std::vector<uint8_t> &host) {
          uint8_t *p = deviceBuffer<uint8_t>(host.size() + 16) + off;
          copyToDevice(p, host.data(), host.size());
          return p;
        };
        auto space = [&](size_t bytes) {
          return deviceBuffer<uint8_t>(bytes + 16) + off;
        };
        auto nanAt = [&](std::vector<uint8_t> &v, int64_t i) {
          double nan = NAN;
          mpcrt_cast(MPCRT_F64, &nan, d, v.data() + i * e, 1);
        };
        for (const Pooling &p : poolings) {
          SCOPED_TRACE("pooling " + std::to_string(p.k) + " stride " +
                       std::to_string(p.stride) + " pad " +
                       std::to_string(p.pad) + " of " + std::to_string(p.h));
          mpcrt_pool2d_shape s{n,   p.h,      p.w,      c,     p.ho,  p.wo, p.k,
                               p.k, p.stride, p.stride, p.pad, p.pad, 0};
          int64_t inputs = n * p.h * p.w * c, outputs = n * p.ho * p.wo * c;
          auto x = randomOf(rng, d, inputs, -2, 2),
               dy = randomOf(rng, d, outputs, -1, 1);
          nanAt(x, inputs / 3);
          std::vector<uint8_t> y(outputs * e), dx(inputs * e);
#define CALL(SUFFIX, T, STAT)                                                  \
  do {                                                                         \
    mpcrt_max_pool2d_##SUFFIX(reinterpret_cast<const T *>(x.data()),           \
                              reinterpret_cast<T *>(y.data()), &s);            \
    mpcrt_max_pool2d_backward_##SUFFIX(reinterpret_cast<const T *>(dy.data()), \
                                       reinterpret_cast<const T *>(x.data()),  \
                                       reinterpret_cast<T *>(dx.data()), &s);  \
  } while (0)
          MPCRT_FOR_DTYPE(d, CALL);
#undef CALL
          uint8_t *dX = at(x), *gy = space(y.size()), *gdx = space(dx.size());
          // Whatever the buffer held before must not show through.
          std::vector<uint8_t> junk(dx.size(), 0x5a);
          copyToDevice(gdx, junk.data(), junk.size());
          maxPool2d(d, dX, gy, s);
          EXPECT_EQ(download(gy, y.size()), y) << "max_pool2d";
          maxPool2dBackward(d, at(dy), dX, gdx, s);
          EXPECT_EQ(download(gdx, dx.size()), dx) << "max_pool2d_backward";
          // With an addend (a skip connection's other gradient), its
          // positions `row` elements apart: dense, a channel slice whose
          // rows stay 16-byte aligned (2 c), and one whose rows do not.
          for (int64_t row : {c, 2 * c, c + 3}) {
            SCOPED_TRACE("addend rows " + std::to_string(row) + " apart");
            int64_t pixels = n * p.h * p.w;
            auto addend = randomOf(rng, d, (pixels - 1) * row + c, -1, 1);
            std::vector<uint8_t> sum(dx.size()), added(dx.size());
            int64_t shape[4] = {n, p.h, p.w, c},
                    strides[4] = {p.h * p.w * row, p.w * row, row, 1},
                    dense[4] = {p.h * p.w * c, p.w * c, c, 1};
#define CALL(SUFFIX, T, STAT)                                                  \
  do {                                                                         \
    mpcrt_max_pool2d_backward_add_##SUFFIX(                                    \
        reinterpret_cast<const T *>(dy.data()),                                \
        reinterpret_cast<const T *>(x.data()),                                 \
        reinterpret_cast<const T *>(addend.data()), row,                       \
        reinterpret_cast<T *>(sum.data()), &s);                                \
    mpcrt_binary_##SUFFIX(MPCRT_ADD,                                           \
                          reinterpret_cast<const T *>(addend.data()), strides, \
                          reinterpret_cast<const T *>(dx.data()), dense,       \
                          reinterpret_cast<T *>(added.data()), shape, 4);      \
  } while (0)
            MPCRT_FOR_DTYPE(d, CALL);
#undef CALL
            // The reference's sum is mpc.add of the addend and the gradient.
            ASSERT_EQ(sum, added) << "max_pool2d_backward_add (CPU)";
            copyToDevice(gdx, junk.data(), junk.size());
            maxPool2dBackward(d, at(dy), dX, gdx, s, at(addend), row);
            EXPECT_EQ(download(gdx, dx.size()), sum)
                << "max_pool2d_backward with an addend";
          }
        }
        // Upsampling by 2 x 2 and 3 x 1.
        for (auto [sh, sw] : {std::pair<int64_t, int64_t>{2, 2}, {3, 1}}) {
          int64_t inputs = n * 5 * 6 * c, outputs = inputs * sh * sw;
          auto x = randomOf(rng, d, inputs, -2, 2),
               dy = randomOf(rng, d, outputs, -1, 1);
          std::vector<uint8_t> y(outputs * e), dx(inputs * e);
#define CALL(SUFFIX, T, STAT)                                                  \
  do {                                                                         \
    mpcrt_upsample_nearest2d_##SUFFIX(reinterpret_cast<const T *>(x.data()),   \
                                      reinterpret_cast<T *>(y.data()), n, 5,   \
                                      6, c, sh, sw);                           \
    mpcrt_upsample_nearest2d_backward_##SUFFIX(                                \
        reinterpret_cast<const T *>(dy.data()),                                \
        reinterpret_cast<T *>(dx.data()), n, 5, 6, c, sh, sw);                 \
  } while (0)
          MPCRT_FOR_DTYPE(d, CALL);
#undef CALL
          uint8_t *gy = space(y.size()), *gdx = space(dx.size());
          upsampleNearest2d(d, at(x), gy, n, 5, 6, c, sh, sw);
          EXPECT_EQ(download(gy, y.size()), y) << "upsample " << sh << sw;
          upsampleNearest2dBackward(d, at(dy), gdx, n, 5, 6, c, sh, sw);
          EXPECT_EQ(download(gdx, dx.size()), dx)
              << "upsample backward " << sh << sw;
        }
        // Batch norm over 2 x 5 x 6 pixels, alone and with a fused ReLU
        // (whose backward reads the reference's output, so that both
        // sides take the same mask).
        for (bool relu : {false, true}) {
          SCOPED_TRACE(relu ? "batch norm + relu" : "batch norm");
          mpcrt_dtype pd = d == MPCRT_F64 ? MPCRT_F64 : MPCRT_F32;
          const int64_t rows = n * 5 * 6;
          const int32_t act = relu ? MPCRT_RELU : MPCRT_ACTIVATION_NONE;
          auto x = randomOf(rng, d, rows * c, -2, 3),
               dy = randomOf(rng, d, rows * c, -1, 1);
          auto gamma = randomOf(rng, pd, c, 0.5, 1.5),
               beta = randomOf(rng, pd, c, -0.5, 0.5);
          auto rm = randomOf(rng, pd, c, -0.1, 0.1),
               rv = randomOf(rng, pd, c, 1, 2);
          std::vector<uint8_t> y(x.size()), dx(x.size()), dg(gamma.size()),
              db(gamma.size());
          std::vector<float> mean(c), invstd(c);
#define CALL(SUFFIX, T, STAT)                                                  \
  do {                                                                         \
    const T *X = reinterpret_cast<const T *>(x.data());                        \
    mpcrt_batch_norm_##SUFFIX(X, pd, gamma.data(), beta.data(), rm.data(),     \
                              rv.data(), reinterpret_cast<T *>(y.data()),      \
                              mean.data(), invstd.data(), rows, c, 0.1, 1e-5,  \
                              act);                                            \
    mpcrt_batch_norm_backward_##SUFFIX(                                        \
        reinterpret_cast<const T *>(dy.data()), X, pd, gamma.data(),           \
        mean.data(), invstd.data(), reinterpret_cast<T *>(dx.data()),          \
        dg.data(), db.data(), rows, c,                                         \
        relu ? reinterpret_cast<const T *>(y.data()) : nullptr, nullptr,       \
        nullptr, nullptr);                                                     \
  } while (0)
          MPCRT_FOR_DTYPE(d, CALL);
#undef CALL
          double acc = d == MPCRT_F64 ? 1e-12 : 1e-5;
          uint8_t *dX = at(x), *dG = upload(gamma), *gy = space(y.size());
          float *gMean = deviceBuffer<float>(c), *gInv = deviceBuffer<float>(c);
          batchNorm(d, dX, pd, dG, upload(beta), upload(rm), upload(rv), gy,
                    gMean, gInv, rows, c, 0.1, 1e-5, relu);
          expectNear(d, y, download(gy, y.size()), relOf(d) * 2, acc * 8,
                     "batch_norm");
          uint8_t *gdx = space(dx.size()),
                  *gdg = deviceBuffer<uint8_t>(dg.size()),
                  *gdb = deviceBuffer<uint8_t>(db.size());
          batchNormBackward(d, at(dy), dX, pd, dG, upload(mean), upload(invstd),
                            gdx, gdg, gdb, rows, c, relu ? at(y) : nullptr);
          expectNear(d, dx, download(gdx, dx.size()), relOf(d) * 2, acc * 16,
                     "batch_norm dx");
          expectNear(pd, dg, download(gdg, dg.size()), 1e-5, acc * rows,
                     "dgamma");
          expectNear(pd, db, download(gdb, db.size()), 1e-5, acc * rows,
                     "dbeta");
        }
        if (HasFailure())
          return;
      }
}

// A batch norm + ReLU's backward that forms the ReLU's output again from
// the input, the saved statistics, gamma and beta gives the bits of the
// backward that reads the forward's output: f16, bf16 and f32, channel
// counts taking 8, 2 and 1 channels per access, and operands one element
// off 16-byte alignment. One channel's results are tiny (gamma 1e-8, beta
// 0): f16 rounds many of them to zero, and the mask must follow the
// rounded value. 1640 rows: the elementwise kernels' threads take several
// accesses of one channel group each (channelGroupBlocks), which the
// forward's result and the input gradient are checked against the CPU
// reference for (the reference's backward reading the GPU's statistics
// and output, so that both take the same mask).
TEST_F(Nn, BatchNormReluMaskFormedAgainEqualsTheOutputsBitForBit) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  for (mpcrt_dtype d : {MPCRT_F16, MPCRT_BF16, MPCRT_F32})
    for (int64_t c : {16, 6, 5})
      for (int64_t offset : {0, 1}) {
        SCOPED_TRACE("dtype " + std::to_string(d) + ", " + std::to_string(c) +
                     " channels, offset " + std::to_string(offset));
        const int64_t rows = 40 * 41, n = rows * c, e = bytesOf(d);
        auto x = randomOf(rng, d, n + offset, -2, 3),
             dy = randomOf(rng, d, n + offset, -1, 1);
        std::vector<float> gamma = valuesAsFloat(
                               randomOf(rng, MPCRT_F32, c, 0.5, 1.5)),
                           beta = valuesAsFloat(
                               randomOf(rng, MPCRT_F32, c, -0.5, 0.5));
        gamma[1] = 1e-8f;
        beta[1] = 0;
        std::vector<float> rm(c, 0), rv(c, 1);
        uint8_t *gx = upload(x) + offset * e, *gdy = upload(dy) + offset * e;
        uint8_t *gy = deviceBuffer<uint8_t>((n + offset) * e) + offset * e;
        float *gGamma = upload(gamma), *gBeta = upload(beta);
        float *gm = deviceBuffer<float>(c), *gi = deviceBuffer<float>(c);
        batchNorm(d, gx, MPCRT_F32, gGamma, gBeta, upload(rm), upload(rv), gy,
                  gm, gi, rows, c, 0.1, 1e-5, /*relu=*/true);
        std::vector<uint8_t> dx[2];
        std::vector<float> dg[2], db[2];
        for (int formed = 0; formed < 2; ++formed) {
          uint8_t *gdx = deviceBuffer<uint8_t>((n + offset) * e) + offset * e;
          float *gdg = deviceBuffer<float>(c), *gdb = deviceBuffer<float>(c);
          batchNormBackward(d, gdy, gx, MPCRT_F32, gGamma, gm, gi, gdx, gdg,
                            gdb, rows, c, formed ? nullptr : gy,
                            formed ? gBeta : nullptr);
          dx[formed] = download(gdx, n * e);
          dg[formed] = download(gdg, c);
          db[formed] = download(gdb, c);
        }
        std::vector<uint8_t> yBytes = download(gy, n * e);
        std::vector<double> y = valuesOf(d, yBytes);
        int64_t zeros = 0;
        for (int64_t r = 0; r < rows; ++r)
          zeros += y[r * c + 1] == 0;
        if (d == MPCRT_F16) // below half its smallest subnormal
          EXPECT_GT(zeros, rows / 2 + 2) << "tiny results rounded to zero";
        EXPECT_EQ(dx[1], dx[0]) << "input gradient";
        EXPECT_EQ(0, std::memcmp(dg[1].data(), dg[0].data(), c * 4));
        EXPECT_EQ(0, std::memcmp(db[1].data(), db[0].data(), c * 4));
        // The CPU reference: the forward (its own statistics), and the
        // backward with the GPU's statistics and output.
        std::vector<uint8_t> xs(x.begin() + offset * e, x.end()),
            dys(dy.begin() + offset * e, dy.end()), yRef(n * e), dxRef(n * e);
        std::vector<float> mean(c), invstd(c), dgRef(c), dbRef(c);
        std::vector<float> gpuMean = download(gm, c),
                           gpuInvstd = download(gi, c);
#define CALL(SUFFIX, T, STAT)                                                  \
  do {                                                                         \
    mpcrt_batch_norm_##SUFFIX(                                                 \
        reinterpret_cast<const T *>(xs.data()), MPCRT_F32, gamma.data(),       \
        beta.data(), rm.data(), rv.data(), reinterpret_cast<T *>(yRef.data()), \
        mean.data(), invstd.data(), rows, c, 0.1, 1e-5, MPCRT_RELU);           \
    mpcrt_batch_norm_backward_##SUFFIX(                                        \
        reinterpret_cast<const T *>(dys.data()),                               \
        reinterpret_cast<const T *>(xs.data()), MPCRT_F32, gamma.data(),       \
        gpuMean.data(), gpuInvstd.data(), reinterpret_cast<T *>(dxRef.data()), \
        dgRef.data(), dbRef.data(), rows, c,                                   \
        reinterpret_cast<const T *>(yBytes.data()), nullptr, nullptr,          \
        nullptr);                                                              \
  } while (0)
        MPCRT_FOR_DTYPE(d, CALL);
#undef CALL
        expectNear(d, yRef, yBytes, relOf(d) * 2, 1e-4, "batch_norm");
        expectNear(d, dxRef, dx[1], relOf(d) * 2, 1e-4, "batch_norm dx");
        if (HasFailure())
          return;
      }
}

// cuDNN's batch norm (the peer mpc-bench-kernels times beside ours,
// Kernels.h) computes what ours does: the forward's output, saved and
// running statistics, and the backward's gradients, with and without the
// fused ReLU (cuDNN's backward reading its forward's reserve space, ours
// forming the mask again), within the rounding of the two orders of
// summation. A case cuDNN answers NOT_SUPPORTED for is said and skipped.
TEST_F(Nn, CudnnBatchNormComputesWhatOursDoes) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  const CudnnBatchNormShape shapes[] = {{2, 5, 7, 24, false},
                                        {1, 9, 3, 5, false}};
  for (CudnnBatchNormShape s : shapes)
    for (bool relu : {false, true})
      for (mpcrt_dtype d : {MPCRT_F16, MPCRT_BF16, MPCRT_F32}) {
        s.relu = relu;
        const int64_t c = s.c, rows = s.n * s.h * s.w, n = rows * c;
        const int64_t e = bytesOf(d);
        SCOPED_TRACE("dtype " + std::to_string(d) + ", " +
                     std::to_string(rows) + " x " + std::to_string(c) +
                     (relu ? ", ReLU" : ""));
        auto x = randomOf(rng, d, n, -2, 3), dy = randomOf(rng, d, n, -1, 1);
        auto gamma = randomOf(rng, MPCRT_F32, c, 0.5, 1.5),
             beta = randomOf(rng, MPCRT_F32, c, -0.5, 0.5),
             rm = randomOf(rng, MPCRT_F32, c, -0.1, 0.1),
             rv = randomOf(rng, MPCRT_F32, c, 1, 2);
        uint8_t *gx = upload(x), *gdy = upload(dy), *gGamma = upload(gamma),
                *gBeta = upload(beta);
        // [0]: ours, [1]: cuDNN's.
        uint8_t *y[2], *dx[2], *rmOf[2] = {upload(rm), upload(rm)},
                               *rvOf[2] = {upload(rv), upload(rv)};
        float *mean[2], *invstd[2], *dg[2], *db[2];
        for (int k = 0; k < 2; ++k) {
          y[k] = deviceBuffer<uint8_t>(n * e);
          dx[k] = deviceBuffer<uint8_t>(n * e);
          mean[k] = deviceBuffer<float>(c);
          invstd[k] = deviceBuffer<float>(c);
          dg[k] = deviceBuffer<float>(c);
          db[k] = deviceBuffer<float>(c);
        }
        batchNorm(d, gx, MPCRT_F32, gGamma, gBeta, rmOf[0], rvOf[0], y[0],
                  mean[0], invstd[0], rows, c, 0.1, 1e-5, relu);
        batchNormBackward(d, gdy, gx, MPCRT_F32, gGamma, mean[0], invstd[0],
                          dx[0], dg[0], db[0], rows, c, nullptr,
                          relu ? gBeta : nullptr);
        size_t reserveBytes = cudnnBatchNormReserveBytes(d, s);
        void *reserve =
            reserveBytes ? deviceBuffer<uint8_t>(reserveBytes) : nullptr;
        if (!cudnnBatchNorm(d, s, gx, gGamma, gBeta, rmOf[1], rvOf[1], y[1],
                            mean[1], invstd[1], 0.1, 1e-5, reserve,
                            reserveBytes) ||
            !cudnnBatchNormBackward(d, s, gdy, gx, y[1], gGamma, gBeta, mean[1],
                                    invstd[1], dx[1], dg[1], db[1], 1e-5,
                                    reserve, reserveBytes)) {
          std::printf("cuDNN answers NOT_SUPPORTED for this case\n");
          continue;
        }
        // The statistics: f32 sums of `rows` terms of magnitude 3 in
        // either order, a few ulps of float apart.
        auto floats = [&](float *p) {
          return download(reinterpret_cast<uint8_t *>(p), 4 * c);
        };
        expectNear(MPCRT_F32, floats(mean[0]), floats(mean[1]), 1e-5, 1e-6,
                   "saved mean");
        expectNear(MPCRT_F32, floats(invstd[0]), floats(invstd[1]), 1e-5, 0,
                   "saved invstd");
        expectNear(MPCRT_F32, download(rmOf[0], 4 * c),
                   download(rmOf[1], 4 * c), 1e-5, 1e-7, "running mean");
        expectNear(MPCRT_F32, download(rvOf[0], 4 * c),
                   download(rvOf[1], 4 * c), 1e-5, 0, "running var");
        // Outputs of magnitude up to about 8, each rounded once to the
        // element type from values a few float ulps apart: an ulp of the
        // type apart at most.
        expectNear(d, download(y[0], n * e), download(y[1], n * e),
                   relOf(d) * 2, 1e-5 * 8, "output");
        expectNear(d, download(dx[0], n * e), download(dx[1], n * e),
                   relOf(d) * 2, 1e-5 * 16, "input gradient");
        // Sums of `rows` products of magnitude up to about 3.
        expectNear(MPCRT_F32, floats(dg[0]), floats(dg[1]), 1e-5, 1e-6 * rows,
                   "gamma gradient");
        expectNear(MPCRT_F32, floats(db[0]), floats(db[1]), 1e-5, 1e-6 * rows,
                   "beta gradient");
        if (HasFailure())
          return;
      }
}

// Batch norm's statistics in one pass over its input (count, mean and
// squared deviations combined pairwise over 10 chunks of rows of 64 row
// lanes each) against float64 two-pass statistics of the same rounded
// inputs: a channel far from zero with a tiny spread (where sum and sum of
// squares in f32 would cancel to nothing), a centred one, and a wide one.
TEST_F(Nn, BatchNormStatisticsMatchFloat64OnAnOffsetChannel) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  // The last channel: one value in 20 an outlier at +-200 spreads, which
  // is where a thread's shifted sums (FoldMoments) start wherever it
  // reads one first.
  const int64_t rows = 5000, c = 4;
  const double offset[c] = {1000, -3, 0, 1}, spread[c] = {0.05, 1, 100, 1};
  std::normal_distribution<double> normal;
  std::bernoulli_distribution outlier(0.05), sign(0.5);
  for (mpcrt_dtype d : {MPCRT_F32, MPCRT_F16}) {
    std::vector<double> xs(rows * c);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t ch = 0; ch < c; ++ch) {
        xs[r * c + ch] = offset[ch] + spread[ch] * normal(rng);
        if (ch == 3 && outlier(rng))
          xs[r * c + ch] = offset[ch] + (sign(rng) ? 200 : -200) * spread[ch];
      }
    std::vector<uint8_t> x(rows * c * bytesOf(d));
    mpcrt_cast(MPCRT_F64, xs.data(), d, x.data(), rows * c);
    std::vector<double> rounded(rows * c);
    mpcrt_cast(d, x.data(), MPCRT_F64, rounded.data(), rows * c);
    std::vector<float> rm(c, 0.5f), rv(c, 2.0f);
    uint8_t *gy = deviceBuffer<uint8_t>(x.size());
    float *gm = deviceBuffer<float>(c), *gi = deviceBuffer<float>(c);
    float *grm = upload(rm), *grv = upload(rv);
    std::vector<float> gamma(c, 1.0f), beta(c, 0.0f);
    batchNorm(d, upload(x), MPCRT_F32, upload(gamma), upload(beta), grm, grv,
              gy, gm, gi, rows, c, 0.1, 1e-5);
    std::vector<float> mean = download(gm, c), invstd = download(gi, c),
                       runVar = download(grv, c);
    for (int64_t ch = 0; ch < c; ++ch) {
      double m = 0, v = 0;
      for (int64_t r = 0; r < rows; ++r)
        m += rounded[r * c + ch];
      m /= rows;
      for (int64_t r = 0; r < rows; ++r)
        v += (rounded[r * c + ch] - m) * (rounded[r * c + ch] - m);
      // f32 sums of 5000 terms: within a few 1e-5 relative (the spread of
      // the first channel is 5e-5 of its mean), the mean's error measured
      // against the channel's standard deviation.
      EXPECT_NEAR(mean[ch], m, 1e-6 * std::fabs(m) + 1e-5 * std::sqrt(v / rows))
          << "channel " << ch << ", dtype " << d;
      double invstdWant = 1 / std::sqrt(v / rows + 1e-5);
      EXPECT_NEAR(invstd[ch], invstdWant, 1e-4 * invstdWant)
          << "channel " << ch << ", dtype " << d;
      double runWant = 0.9 * 2.0 + 0.1 * v / (rows - 1);
      EXPECT_NEAR(runVar[ch], runWant, 1e-4 * runWant)
          << "channel " << ch << ", dtype " << d;
    }
  }
}

// A batch norm over so many rows that its column reductions cut them into
// more than 256 chunks (300000 rows of 4 f32 channels: 293 chunks of
// 1024), in one launch (10 groups of up to 32 chunks, then the groups'
// results) and in two (setReductionsInOneLaunch(false): the second pass
// combines each channel's chunks by 128 lanes in a fixed tree;
// Columns.cuh): the statistics (moments) and the backward's parameter
// sums against float64 sums of the same values.
TEST_F(Nn, BatchNormOverManyChunksMatchesFloat64) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  for (bool oneLaunch : {true, false}) {
    SCOPED_TRACE(oneLaunch ? "one launch" : "two launches");
    bool before = setReductionsInOneLaunch(oneLaunch);
    checkBatchNormOverManyChunks();
    setReductionsInOneLaunch(before);
    if (HasFailure())
      return;
  }
}

void Nn::checkBatchNormOverManyChunks() {
  const int64_t rows = 300000, c = 4, n = rows * c;
  const double offset[c] = {100, -3, 0, 1};
  std::normal_distribution<double> normal;
  std::vector<float> x(n), dy(n);
  for (int64_t i = 0; i < n; ++i) {
    x[i] = static_cast<float>(offset[i % c] + normal(rng));
    dy[i] = static_cast<float>(normal(rng));
  }
  std::vector<float> gamma(c, 1.0f), beta(c, 0.0f), rm(c, 0), rv(c, 1);
  float *gx = upload(x), *gy = deviceBuffer<float>(n),
        *gdx = deviceBuffer<float>(n), *gm = deviceBuffer<float>(c),
        *gi = deviceBuffer<float>(c), *gdg = deviceBuffer<float>(c),
        *gdb = deviceBuffer<float>(c), *gGamma = upload(gamma);
  batchNorm(MPCRT_F32, gx, MPCRT_F32, gGamma, upload(beta), upload(rm),
            upload(rv), gy, gm, gi, rows, c, 0.1, 1e-5);
  batchNormBackward(MPCRT_F32, upload(dy), gx, MPCRT_F32, gGamma, gm, gi, gdx,
                    gdg, gdb, rows, c);
  std::vector<float> mean = download(gm, c), invstd = download(gi, c),
                     dgamma = download(gdg, c), dbeta = download(gdb, c);
  for (int64_t ch = 0; ch < c; ++ch) {
    double m = 0, v = 0, sumDy = 0, sumDyXhat = 0, sumAbs = 0;
    for (int64_t r = 0; r < rows; ++r)
      m += x[r * c + ch];
    m /= rows;
    for (int64_t r = 0; r < rows; ++r)
      v += (x[r * c + ch] - m) * (x[r * c + ch] - m);
    double inv = 1 / std::sqrt(v / rows + 1e-5);
    for (int64_t r = 0; r < rows; ++r) {
      double d = dy[r * c + ch], xhat = (x[r * c + ch] - m) * inv;
      sumDy += d;
      sumDyXhat += d * xhat;
      sumAbs += std::fabs(d) * (1 + std::fabs(xhat));
    }
    // f32 sums in chunks of 1024 rows and a tree of 293 chunks: errors of
    // a few 1e-6 of the terms' magnitudes.
    EXPECT_NEAR(mean[ch], m, 1e-6 * std::fabs(m) + 1e-5) << "channel " << ch;
    EXPECT_NEAR(invstd[ch], inv, 1e-5 * inv) << "channel " << ch;
    EXPECT_NEAR(dbeta[ch], sumDy, 1e-5 * sumAbs) << "channel " << ch;
    EXPECT_NEAR(dgamma[ch], sumDyXhat, 1e-5 * sumAbs) << "channel " << ch;
  }
  releaseOwned();
}

// The launch settings mpc-bench-kernels --sweep turns: the batch norms'
// accesses per thread and the order of their second passes change their
// elementwise kernels' grid and order only (the same bits), the column
// reductions' cut the order of the statistics'
// and gradients' sums only (the same results to rounding).
TEST_F(Nn, BatchNormLaunchSettingsOfTheSweepKeepItsResults) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  const mpcrt_dtype d = MPCRT_F16;
  const int64_t c = 24, rows = 37 * 41, n = rows * c, e = 2;
  auto x = randomOf(rng, d, n, -2, 3), dy = randomOf(rng, d, n, -1, 1);
  std::vector<float> gamma =
                         valuesAsFloat(randomOf(rng, MPCRT_F32, c, 0.5, 1.5)),
                     beta = valuesAsFloat(randomOf(rng, MPCRT_F32, c, -1, 1));
  std::vector<float> rm(c, 0), rv(c, 1);
  uint8_t *gx = upload(x), *gdy = upload(dy);
  float *gGamma = upload(gamma), *gBeta = upload(beta);
  struct Results {
    std::vector<uint8_t> y, dx;
    std::vector<float> mean, invstd, dgamma, dbeta;
  };
  auto run = [&] {
    uint8_t *gy = deviceBuffer<uint8_t>(n * e),
            *gdx = deviceBuffer<uint8_t>(n * e);
    float *gm = deviceBuffer<float>(c), *gi = deviceBuffer<float>(c),
          *gdg = deviceBuffer<float>(c), *gdb = deviceBuffer<float>(c);
    batchNorm(d, gx, MPCRT_F32, gGamma, gBeta, upload(rm), upload(rv), gy, gm,
              gi, rows, c, 0.1, 1e-5, /*relu=*/true);
    batchNormBackward(d, gdy, gx, MPCRT_F32, gGamma, gm, gi, gdx, gdg, gdb,
                      rows, c, nullptr, gBeta);
    return Results{download(gy, n * e), download(gdx, n * e), download(gm, c),
                   download(gi, c),     download(gdg, c),     download(gdb, c)};
  };
  Results base = run();
  // The second passes from the tensor's start instead of its end: the
  // same bits, with a thread's channels fixed (4 accesses a thread) and
  // not (1 and 16: the grid's stride a multiple of the channels' groups
  // or not, as channelGroupBlocks finds it).
  for (int64_t vectors : {1, 4, 16}) {
    SCOPED_TRACE(std::to_string(vectors) + " accesses per thread, forwards");
    EXPECT_TRUE(setBatchNormSecondPassReversed(false));
    setChannelVectorsPerThread(vectors);
    Results r = run();
    setChannelVectorsPerThread(4);
    EXPECT_FALSE(setBatchNormSecondPassReversed(true));
    EXPECT_EQ(r.y, base.y);
    EXPECT_EQ(r.dx, base.dx);
    EXPECT_EQ(0, std::memcmp(r.dgamma.data(), base.dgamma.data(), c * 4));
  }
  for (int64_t vectors : {1, 16}) {
    SCOPED_TRACE(std::to_string(vectors) + " accesses per thread");
    EXPECT_EQ(setChannelVectorsPerThread(vectors), 4);
    Results r = run();
    EXPECT_EQ(setChannelVectorsPerThread(4), vectors);
    EXPECT_EQ(r.y, base.y);
    EXPECT_EQ(r.dx, base.dx);
    EXPECT_EQ(0, std::memcmp(r.dgamma.data(), base.dgamma.data(), c * 4));
  }
  // One chunk of rows and two (6 by default).
  for (int64_t partials : {1, 64}) {
    SCOPED_TRACE(std::to_string(partials) + " partials");
    EXPECT_EQ(setColumnPartialsTarget(partials), 4096 * 32);
    Results r = run();
    EXPECT_EQ(setColumnPartialsTarget(4096 * 32), partials);
    for (int64_t k = 0; k < c; ++k) {
      EXPECT_NEAR(r.mean[k], base.mean[k],
                  1e-5 * (1 + std::fabs(base.mean[k])));
      EXPECT_NEAR(r.invstd[k], base.invstd[k], 1e-5 * base.invstd[k]);
      EXPECT_NEAR(r.dgamma[k], base.dgamma[k],
                  1e-4 * (1 + std::fabs(base.dgamma[k])));
      EXPECT_NEAR(r.dbeta[k], base.dbeta[k],
                  1e-4 * (1 + std::fabs(base.dbeta[k])));
    }
    expectNear(d, base.y, r.y, relOf(d) * 2, 1e-3, "batch_norm");
    expectNear(d, base.dx, r.dx, relOf(d) * 4, 1e-3, "batch_norm dx");
  }
}

TEST_F(Nn, BatchNormOverGroupsOfChannelsKeepsItsResults) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  // setBatchNormGroupBytes: both passes over groups of 32 and of 64 of 128
  // channels (4 and 2 groups; budgets of exactly the bytes those groups'
  // second passes read and write) give what one pass over every channel
  // gives, within the rounding of the statistics' sums taken in another
  // cut. The backward takes the saved
  // statistics of the forward over every channel, so that the ReLU's mask
  // it forms is the same. Plain, with the ReLU's output read and formed,
  // with addends to the parameter gradients. A budget under four 16-byte
  // accesses of a row, a pointer off 16 bytes, channels that are not a
  // multiple of 16 bytes and a synchronised norm: one group, the same
  // bits; a row of 12 accesses in 3 groups of 4.
  const int64_t c = 128, rows = 37 * 41, n = rows * c;
  for (mpcrt_dtype d : {MPCRT_F16, MPCRT_BF16, MPCRT_F32}) {
    SCOPED_TRACE("dtype " + std::to_string(d));
    const int64_t e = bytesOf(d);
    auto x = randomOf(rng, d, n, -2, 3), dy = randomOf(rng, d, n, -1, 1);
    std::vector<float> gamma =
                           valuesAsFloat(randomOf(rng, MPCRT_F32, c, 0.5, 1.5)),
                       beta = valuesAsFloat(randomOf(rng, MPCRT_F32, c, -1, 1)),
                       addend =
                           valuesAsFloat(randomOf(rng, MPCRT_F32, c, -1, 1));
    std::vector<float> rm(c, 0.25f), rv(c, 2);
    uint8_t *gx = upload(x), *gdy = upload(dy);
    float *gGamma = upload(gamma), *gBeta = upload(beta);
    struct Forward {
      std::vector<uint8_t> y;
      std::vector<float> mean, invstd, rm, rv;
    };
    auto forward = [&](bool relu, int64_t budget) {
      int64_t before = setBatchNormGroupBytes(budget);
      uint8_t *gy = deviceBuffer<uint8_t>(n * e);
      float *gm = deviceBuffer<float>(c), *gi = deviceBuffer<float>(c),
            *grm = upload(rm), *grv = upload(rv);
      batchNorm(d, gx, MPCRT_F32, gGamma, gBeta, grm, grv, gy, gm, gi, rows, c,
                0.1, 1e-5, relu);
      setBatchNormGroupBytes(before);
      return Forward{download(gy, n * e), download(gm, c), download(gi, c),
                     download(grm, c), download(grv, c)};
    };
    struct Backward {
      std::vector<uint8_t> dx;
      std::vector<float> dgamma, dbeta;
    };
    // way: 0 plain, 1 the ReLU's output read, 2 formed again.
    auto backward = [&](const Forward &f, int way, bool addends,
                        int64_t budget) {
      int64_t before = setBatchNormGroupBytes(budget);
      uint8_t *gdx = deviceBuffer<uint8_t>(n * e);
      float *gdg = deviceBuffer<float>(c), *gdb = deviceBuffer<float>(c);
      batchNormBackward(
          d, gdy, gx, MPCRT_F32, gGamma, upload(f.mean), upload(f.invstd), gdx,
          gdg, gdb, rows, c, way == 1 ? upload(f.y) : nullptr,
          way == 2 ? gBeta : nullptr, addends ? upload(addend) : nullptr,
          addends ? upload(addend) : nullptr);
      setBatchNormGroupBytes(before);
      return Backward{download(gdx, n * e), download(gdg, c), download(gdb, c)};
    };
    auto expectClose = [&](const std::vector<float> &want,
                           const std::vector<float> &got, double rel,
                           const char *what) {
      for (int64_t k = 0; k < c; ++k)
        EXPECT_NEAR(got[k], want[k], rel * (1 + std::fabs(want[k])))
            << what << " channel " << k;
    };
    // The statistics' sums in f32 (f16, bf16 and f32 inputs) in another
    // cut: a few units of f32's rounding in the mean and invstd, and so
    // an ulp of the output type in y and dx.
    const double stat = 1e-5, sums = 1e-4;
    for (bool relu : {false, true}) {
      SCOPED_TRACE(relu ? "with the ReLU" : "without the ReLU");
      Forward all = forward(relu, 0);
      ASSERT_EQ(lastBatchNormGroups(), 1);
      for (int64_t cg : {32, 64}) {
        SCOPED_TRACE(std::to_string(cg) + " channels a group");
        // The normalisation reads x and writes y.
        Forward f = forward(relu, rows * e * 2 * cg);
        ASSERT_EQ(lastBatchNormGroups(), c / cg);
        expectClose(all.mean, f.mean, stat, "saved mean");
        expectClose(all.invstd, f.invstd, stat, "saved invstd");
        expectClose(all.rm, f.rm, stat, "running mean");
        expectClose(all.rv, f.rv, stat, "running var");
        expectNear(d, all.y, f.y, relOf(d) * 2, 1e-3, "batch_norm");
        for (int way : {0, 1, 2}) {
          if (relu != (way != 0))
            continue;
          for (bool addends : {false, true}) {
            SCOPED_TRACE("backward way " + std::to_string(way) +
                         (addends ? ", addends" : ""));
            Backward one = backward(all, way, addends, 0);
            ASSERT_EQ(lastBatchNormGroups(), 1);
            // The input gradient's pass reads dy, x (and the output) and
            // writes dx.
            int64_t arrays = way == 1 ? 4 : 3;
            Backward b = backward(all, way, addends, rows * e * cg * arrays);
            ASSERT_EQ(lastBatchNormGroups(), c / cg);
            expectClose(one.dgamma, b.dgamma, sums, "dgamma");
            expectClose(one.dbeta, b.dbeta, sums, "dbeta");
            expectNear(d, one.dx, b.dx, relOf(d) * 4, 1e-3, "dx");
            if (HasFatalFailure())
              return;
          }
        }
      }
      // Budgets a group cannot meet (four 16-byte accesses of a row at
      // least, 64 bytes): one group, the same bits.
      Forward small = forward(relu, rows * 64);
      EXPECT_EQ(lastBatchNormGroups(), 1);
      EXPECT_EQ(small.y, all.y);
    }
    // A pointer off 16 bytes (the input one element on): one group.
    {
      uint8_t *shifted = uploadAt(x, e);
      uint8_t *gy = deviceBuffer<uint8_t>(n * e);
      float *gm = deviceBuffer<float>(c), *gi = deviceBuffer<float>(c);
      int64_t before = setBatchNormGroupBytes(rows * e * 2 * 32);
      batchNorm(d, shifted, MPCRT_F32, gGamma, gBeta, upload(rm), upload(rv),
                gy, gm, gi, rows, c, 0.1, 1e-5);
      EXPECT_EQ(lastBatchNormGroups(), 1);
      // Synchronised (a job of one): one group.
      batchNorm(d, gx, MPCRT_F32, gGamma, gBeta, upload(rm), upload(rv), gy, gm,
                gi, rows, c, 0.1, 1e-5, false, /*sync=*/true);
      EXPECT_EQ(lastBatchNormGroups(), 1);
      batchNormBackward(d, gdy, gx, MPCRT_F32, gGamma, gm, gi, gy,
                        deviceBuffer<float>(c), deviceBuffer<float>(c), rows, c,
                        nullptr, nullptr, nullptr, nullptr, /*sync=*/true);
      EXPECT_EQ(lastBatchNormGroups(), 1);
      // 48 channels: f32 rows of 12 accesses, 3 groups of 4 (16 channels,
      // 64 bytes); f16 and bf16 rows of 6, which no power of two of 4 or
      // more divides: one group.
      const int64_t c48 = 48, rows48 = n / c48 / 2;
      setBatchNormGroupBytes(rows48 * 8 * 16);
      batchNorm(d, gx, MPCRT_F32, gGamma, gBeta, upload(rm), upload(rv), gy, gm,
                gi, rows48, c48, 0.1, 1e-5);
      EXPECT_EQ(lastBatchNormGroups(), d == MPCRT_F32 ? 3 : 1);
      setBatchNormGroupBytes(before);
    }
  }
}

TEST_F(Nn, BatchNormGroupsFollowTheEnvironment) {
  // MPC_CUDA_BN_GROUPS=l2 (ctest's emulated-bn-groups.l2) groups within
  // the device's L2 (the emulation's 4 MiB); unset, no groups.
  const char *v = std::getenv("MPC_CUDA_BN_GROUPS");
  int64_t want = v && std::strcmp(v, "l2") == 0 ? 4 << 20 : 0;
  EXPECT_EQ(setBatchNormGroupBytes(12345), want);
  EXPECT_EQ(setBatchNormGroupBytes(want), 12345);
}

TEST_F(Nn, StridedCopiesOfEveryLayoutMatchTheReference) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  // Each case, gathered (and scattered back) byte for byte as the CPU
  // reference: permutes whose innermost run the backend moves 16, 8, 4 or
  // element bytes at a time, slices at offsets, dimensions of size 1,
  // broadcasts, a source that is not 16-byte aligned, a negative stride,
  // and transposes of the innermost dimension, which go through
  // shared-memory tiles (partial tiles at both edges, batches on either
  // side of the transposed pair), 2-byte elements in pairs where every
  // extent, stride and the offset are even and the pointers on 4 bytes.
  struct Case {
    std::vector<int64_t> shape, strides;
    int64_t offset, sourceElements;
    int32_t bytes;
    int64_t misalign;  // bytes added to both pointers
    int32_t tiles = 0; // stridedCopyTiles: 0 untiled, 1 elements, 2 pairs
  };
  const Case cases[] = {
      // [2, 5, 3, 64] f16 to [2, 3, 5, 64]: 128-byte runs.
      {{2, 3, 5, 64}, {960, 64, 192, 1}, 0, 1920, 2, 0},
      // The same with runs of 6 (12 bytes) and 5 (10 bytes) elements.
      {{2, 3, 5, 6}, {90, 6, 18, 1}, 0, 180, 2, 0},
      {{2, 3, 5, 5}, {75, 5, 15, 1}, 0, 150, 2, 0},
      // Columns 4..19 and 2..17 of an [8, 32] f32 matrix.
      {{8, 16}, {32, 1}, 4, 256, 4, 0},
      {{8, 16}, {32, 1}, 2, 256, 4, 0},
      // Size-1 dimensions around a contiguous block, f64.
      {{1, 4, 1, 8}, {0, 8, 5, 1}, 0, 32, 8, 0},
      // A broadcast row, and a source 2 bytes off alignment.
      {{4, 8}, {0, 1}, 0, 8, 4, 0},
      {{2, 3, 5, 64}, {960, 64, 192, 1}, 0, 1920, 2, 2},
      // [45, 37] f16 to [37, 45] (one partial 64 x 64 tile); [2, 130, 70]
      // f16 to [2, 70, 130], 2 bytes off (two by three tiles, partial at
      // both far edges, a batch of two).
      {{37, 45}, {1, 37}, 0, 1665, 2, 0, 1},
      {{2, 70, 130}, {9100, 1, 70}, 0, 18200, 2, 2, 1},
      // The same on 4 bytes, in pairs: at offset 0, at offset 2 of a larger
      // buffer, and at offset 1 (elements).
      {{2, 70, 130}, {9100, 1, 70}, 0, 18200, 2, 0, 2},
      {{2, 70, 130}, {9100, 1, 70}, 2, 18204, 2, 0, 2},
      {{2, 70, 130}, {9100, 1, 70}, 1, 18204, 2, 0, 1},
      // [66, 3, 34] f16 to [34, 3, 66] (the batch between the transposed
      // pair): in pairs; with the source's batches an odd 2245 elements
      // apart, elements.
      {{34, 3, 66}, {1, 2244, 34}, 0, 6732, 2, 0, 2},
      {{34, 3, 66}, {1, 2245, 34}, 0, 6735, 2, 0, 1},
      // [3, 40, 2, 33] f32 to [3, 33, 2, 40], from offset 5 of a larger
      // buffer, 4 bytes off 16-byte alignment.
      {{3, 33, 2, 40}, {2640, 1, 33, 66}, 5, 7925, 4, 4, 1},
      // [70, 20] bytes to [20, 70]; [16, 64] f64 to [64, 16], 8 bytes off.
      {{20, 70}, {1, 20}, 0, 1400, 1, 1, 1},
      {{64, 16}, {1, 64}, 0, 1024, 8, 8, 1},
      // Rows read backwards (a negative stride: 64-bit indices).
      {{6, 10}, {10, -1}, 9, 60, 4, 0},
      // A column of 3 and one of 15 are not worth a tile.
      {{3, 40}, {1, 3}, 0, 120, 4, 0},
      {{40, 15}, {1, 40}, 0, 600, 4, 0},
  };
  for (const Case &c : cases) {
    int64_t count = 1;
    for (int64_t e : c.shape)
      count *= e;
    int32_t rank = static_cast<int32_t>(c.shape.size());
    SCOPED_TRACE("case of " + std::to_string(count) + " elements, offset " +
                 std::to_string(c.offset));
    std::vector<uint8_t> src(c.sourceElements * c.bytes);
    for (uint8_t &b : src)
      b = static_cast<uint8_t>(rng());
    std::vector<uint8_t> want(count * c.bytes);
    mpcrt_strided_copy(src.data(), c.offset, c.strides.data(), want.data(),
                       c.shape.data(), rank, c.bytes);
    uint8_t *dSrc = deviceBuffer<uint8_t>(src.size() + 16) + c.misalign;
    copyToDevice(dSrc, src.data(), src.size());
    uint8_t *dOut = deviceBuffer<uint8_t>(want.size() + 16) + c.misalign;
    EXPECT_EQ(stridedCopyTiles(dSrc, c.offset, c.strides.data(), dOut,
                               c.shape.data(), rank, c.bytes),
              c.tiles);
    stridedCopy(dSrc, c.offset, c.strides.data(), dOut, c.shape.data(), rank,
                c.bytes);
    std::vector<uint8_t> got(want.size());
    synchronize();
    copyToHost(got.data(), dOut, got.size());
    EXPECT_EQ(got, want) << "gather";
    if (c.tiles > 0) {
      // The batches two along the grid's y dimension, the rest along z
      // (as past 65535 batches), the last row of a batch of 3 half empty.
      EXPECT_EQ(setTiledBatchesAlongY(2), 65535);
      zero(dOut, int64_t(want.size()));
      stridedCopy(dSrc, c.offset, c.strides.data(), dOut, c.shape.data(), rank,
                  c.bytes);
      synchronize();
      copyToHost(got.data(), dOut, got.size());
      EXPECT_EQ(setTiledBatchesAlongY(65535), 2);
      EXPECT_EQ(got, want) << "gather, batches along y and z";
    }
    if (c.strides[0] == 0)
      continue; // a broadcast scatters several elements to one
    // Scattered back over zeros: the source's elements the copy read.
    std::vector<uint8_t> wantBack(src.size(), 0);
    mpcrt_strided_scatter(want.data(), wantBack.data(), c.offset,
                          c.strides.data(), c.shape.data(), rank, c.bytes);
    zero(dSrc, int64_t(src.size()));
    stridedScatter(dOut, dSrc, c.offset, c.strides.data(), c.shape.data(), rank,
                   c.bytes);
    std::vector<uint8_t> back(src.size());
    synchronize();
    copyToHost(back.data(), dSrc, back.size());
    EXPECT_EQ(back, wantBack) << "scatter";
  }
}

TEST_F(Nn, DataMovementDropoutEmbeddingAndLossesMatchTheReference) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  // Transpose of a [6, 5, 4] f32 buffer to [4, 6, 5], and back.
  const int64_t shape[] = {4, 6, 5}, strides[] = {1, 20, 4};
  auto x = randomOf(rng, MPCRT_F32, 120, -1, 1);
  std::vector<uint8_t> t(x.size()), back(x.size());
  mpcrt_strided_copy(x.data(), 0, strides, t.data(), shape, 3, 4);
  uint8_t *dX = upload(x), *dT = deviceBuffer<uint8_t>(t.size());
  stridedCopy(dX, 0, strides, dT, shape, 3, 4);
  ASSERT_EQ(download(dT, t.size()), t);
  uint8_t *dB = deviceBuffer<uint8_t>(x.size());
  stridedScatter(dT, dB, 0, strides, shape, 3, 4);
  ASSERT_EQ(download(dB, x.size()), x);

  for (mpcrt_dtype d : kTypes) {
    const int64_t n = 10007;
    auto in = randomOf(rng, d, n, -1, 1);
    std::vector<uint8_t> want(in.size()), wantMask(n);
    int64_t step = 17;
    uint64_t s = rng();
#define CALL(SUFFIX, T, STAT)                                                  \
  mpcrt_dropout_##SUFFIX(reinterpret_cast<const T *>(in.data()),               \
                         reinterpret_cast<T *>(want.data()), wantMask.data(),  \
                         n, 0.3, s, &step)
    MPCRT_FOR_DTYPE(d, CALL);
#undef CALL
    uint8_t *out = deviceBuffer<uint8_t>(want.size());
    uint8_t *mask = deviceBuffer<uint8_t>(n);
    dropout(d, upload(in), d, out, mask, n, 0.3, s,
            upload(std::vector<int64_t>{step}));
    ASSERT_EQ(download(mask, n), wantMask) << "dropout mask";
    ASSERT_EQ(download(out, want.size()), want) << "dropout";
    // Its gradient, 4 elements per access, and both again with every
    // pointer one element past an aligned one (one element per access).
    auto dy = randomOf(rng, d, n, -1, 1);
    std::vector<uint8_t> wantGrad(dy.size());
#define CALL(SUFFIX, T, STAT)                                                  \
  mpcrt_dropout_backward_##SUFFIX(                                             \
      reinterpret_cast<const T *>(dy.data()), wantMask.data(),                 \
      reinterpret_cast<T *>(wantGrad.data()), n, 0.3)
    MPCRT_FOR_DTYPE(d, CALL);
#undef CALL
    uint8_t *grad = deviceBuffer<uint8_t>(wantGrad.size());
    dropoutBackward(d, upload(dy), mask, grad, n, 0.3);
    ASSERT_EQ(download(grad, wantGrad.size()), wantGrad) << "dropout grad";
    const size_t e = size_t(bytesOf(d));
    std::vector<uint8_t> inOff(e), dyOff(e);
    inOff.insert(inOff.end(), in.begin(), in.end());
    dyOff.insert(dyOff.end(), dy.begin(), dy.end());
    uint8_t *outOff = deviceBuffer<uint8_t>(want.size() + e);
    uint8_t *gradOff = deviceBuffer<uint8_t>(wantGrad.size() + e);
    uint8_t *maskOffset = deviceBuffer<uint8_t>(n + 1);
    dropout(d, upload(inOff) + e, d, outOff + e, maskOffset + 1, n, 0.3, s,
            upload(std::vector<int64_t>{step}));
    std::vector<uint8_t> gotMask = download(maskOffset, n + 1);
    ASSERT_EQ(std::vector<uint8_t>(gotMask.begin() + 1, gotMask.end()),
              wantMask)
        << "dropout mask, misaligned";
    std::vector<uint8_t> gotOut = download(outOff, want.size() + e);
    ASSERT_EQ(std::vector<uint8_t>(gotOut.begin() + e, gotOut.end()), want)
        << "dropout, misaligned";
    dropoutBackward(d, upload(dyOff) + e, maskOffset + 1, gradOff + e, n, 0.3);
    std::vector<uint8_t> gotGrad = download(gradOff, wantGrad.size() + e);
    ASSERT_EQ(std::vector<uint8_t>(gotGrad.begin() + e, gotGrad.end()),
              wantGrad)
        << "dropout grad, misaligned";

    // The result in another type (f16, bf16, f32), as the reference's
    // mixed kernel: the same mask, the same bits; aligned and not.
    for (mpcrt_dtype out : {MPCRT_F16, MPCRT_BF16, MPCRT_F32}) {
      if (d == MPCRT_F64 || out == d)
        continue;
      SCOPED_TRACE("dropout to " + std::to_string(out));
      const size_t eo = size_t(bytesOf(out));
      std::vector<uint8_t> wantMixed(n * eo), wantMixedMask(n);
      mpcrt_dropout_mixed(d, in.data(), out, wantMixed.data(),
                          wantMixedMask.data(), n, 0.3, s, &step);
      ASSERT_EQ(wantMixedMask, wantMask) << "mixed dropout mask";
      uint8_t *mixed = deviceBuffer<uint8_t>(n * eo + eo);
      uint8_t *mixedMask = deviceBuffer<uint8_t>(n + 1);
      for (size_t shift : {size_t(0), size_t(1)}) {
        dropout(d, shift ? upload(inOff) + e : upload(in), out,
                mixed + shift * eo, mixedMask + shift, n, 0.3, s,
                upload(std::vector<int64_t>{step}));
        std::vector<uint8_t> got = download(mixed, n * eo + eo);
        ASSERT_EQ(std::vector<uint8_t>(got.begin() + shift * eo,
                                       got.begin() + shift * eo + n * eo),
                  wantMixed)
            << "mixed dropout, shifted " << shift;
        std::vector<uint8_t> gotMixedMask = download(mixedMask, n + 1);
        ASSERT_EQ(std::vector<uint8_t>(gotMixedMask.begin() + shift,
                                       gotMixedMask.begin() + shift + n),
                  wantMask)
            << "mixed dropout mask, shifted " << shift;
      }
    }

    // Dropout + residual add (no mask), and the dropped input alone, as
    // the reference computes them.
    auto residual = randomOf(rng, d, n, -1, 1);
    std::vector<uint8_t> wantSum(in.size()), wantAlone(in.size());
    mpcrt_dropout_add(d, in.data(), residual.data(), wantSum.data(), n, 0.3, s,
                      &step);
    mpcrt_dropout_add(d, in.data(), nullptr, wantAlone.data(), n, 0.3, s,
                      &step);
    uint8_t *sum = deviceBuffer<uint8_t>(in.size());
    uint8_t *alone = deviceBuffer<uint8_t>(in.size());
    const int64_t *dStep = upload(std::vector<int64_t>{step});
    dropoutAdd(d, upload(in), upload(residual), sum, n, 0.3, s, dStep);
    dropoutAdd(d, upload(in), nullptr, alone, n, 0.3, s, dStep);
    ASSERT_EQ(download(sum, in.size()), wantSum) << "dropout_add";
    ASSERT_EQ(download(alone, in.size()), wantAlone) << "dropout_add alone";
    // p = 0: nothing dropped, no Philox words drawn.
    mpcrt_dropout_add(d, in.data(), residual.data(), wantSum.data(), n, 0, s,
                      &step);
    dropoutAdd(d, upload(in), upload(residual), sum, n, 0, s, dStep);
    ASSERT_EQ(download(sum, in.size()), wantSum) << "dropout_add, p = 0";
  }

  // Embedding: gather exactly; the backward sums in f32, in the CPU's
  // order (EmbeddingBackwardEqualsTheReferenceBitForBit below).
  const int64_t v = 50, dim = 12, count = 300;
  auto table = randomOf(rng, MPCRT_F16, v * dim, -1, 1);
  auto dy = randomOf(rng, MPCRT_F16, count * dim, -1, 1);
  std::vector<int32_t> idx(count);
  std::uniform_int_distribution<int32_t> row(0, v - 1);
  for (int32_t &i : idx)
    i = row(rng);
  std::vector<uint8_t> rows(count * dim * 2), grad(v * dim * 2);
  ASSERT_EQ(
      mpcrt_embedding_f16(reinterpret_cast<const uint16_t *>(table.data()), v,
                          dim, idx.data(), 32, count,
                          reinterpret_cast<uint16_t *>(rows.data())),
      0);
  mpcrt_embedding_backward_f16(reinterpret_cast<const uint16_t *>(dy.data()),
                               idx.data(), 32, count, v, dim, -1, nullptr,
                               reinterpret_cast<uint16_t *>(grad.data()));
  int32_t *dIdx = upload(idx);
  uint8_t *gRows = deviceBuffer<uint8_t>(rows.size());
  embedding(MPCRT_F16, upload(table), v, dim, dIdx, 32, count, gRows);
  ASSERT_EQ(download(gRows, rows.size()), rows);
  EXPECT_EQ(takeDeviceErrors().index, 0);
  uint8_t *gGrad = deviceBuffer<uint8_t>(grad.size());
  embeddingBackward(MPCRT_F16, upload(dy), dIdx, 32, count, v, dim, -1, nullptr,
                    gGrad);
  ASSERT_EQ(download(gGrad, grad.size()), grad) << "embedding backward";
  // A bad index is recorded on the device and reported once, read in the
  // stream's order (no synchronisation between the launch and the read).
  idx[123] = v;
  embedding(MPCRT_F16, upload(table), v, dim, upload(idx), 32, count, gRows);
  IndexErrors bad = takeDeviceErrors();
  EXPECT_EQ(bad.index, 124);
  EXPECT_EQ(bad.label, 0);
  EXPECT_EQ(takeDeviceErrors().index, 0);
  // The backward's sort makes the keys from the indices: the bad one is
  // recorded there, its gradient row left out, as the CPU reference does.
  EXPECT_EQ(mpcrt_embedding_backward_f16(
                reinterpret_cast<const uint16_t *>(dy.data()), idx.data(), 32,
                count, v, dim, -1, nullptr,
                reinterpret_cast<uint16_t *>(grad.data())),
            124);
  embeddingBackward(MPCRT_F16, upload(dy), upload(idx), 32, count, v, dim, -1,
                    nullptr, gGrad);
  ASSERT_EQ(download(gGrad, grad.size()), grad) << "with a bad index";
  EXPECT_EQ(takeDeviceErrors().index, 124);

  for (mpcrt_dtype d : kTypes)
    for (int32_t kind : {0, 1, 2}) {
      const int64_t n = 5000;
      auto input =
          randomOf(rng, d, n, kind == 2 ? 0.05 : -3, kind == 2 ? 0.95 : 3);
      auto target = randomOf(rng, d, n, 0, 1);
      auto dl = randomOf(rng, d, 1, 0.5, 2);
      std::vector<uint8_t> loss(bytesOf(d)), gi(input.size());
#define CALL(SUFFIX, T, STAT)                                                  \
  do {                                                                         \
    mpcrt_pointwise_loss_##SUFFIX(kind,                                        \
                                  reinterpret_cast<const T *>(input.data()),   \
                                  reinterpret_cast<const T *>(target.data()),  \
                                  reinterpret_cast<T *>(loss.data()), n, 1);   \
    mpcrt_pointwise_loss_backward_##SUFFIX(                                    \
        kind, reinterpret_cast<const T *>(dl.data()),                          \
        reinterpret_cast<const T *>(input.data()),                             \
        reinterpret_cast<const T *>(target.data()),                            \
        reinterpret_cast<T *>(gi.data()), n, 1);                               \
  } while (0)
      MPCRT_FOR_DTYPE(d, CALL);
#undef CALL
      uint8_t *dIn = upload(input), *dTg = upload(target);
      uint8_t *gl = deviceBuffer<uint8_t>(loss.size()),
              *gg = deviceBuffer<uint8_t>(gi.size());
      pointwiseLoss(d, kind, dIn, dTg, gl, n, true);
      pointwiseLossBackward(d, kind, upload(dl), dIn, dTg, gg, n, true);
      double acc = d == MPCRT_F64 ? 1e-12 : 1e-5;
      expectNear(d, loss, download(gl, loss.size()), relOf(d), acc,
                 "pointwise loss");
      expectNear(d, gi, download(gg, gi.size()), relOf(d), acc * 1e-2,
                 "pointwise loss backward");
      if (HasFatalFailure())
        return;
    }
}

// The embedding's gather, 16 bytes at a time where the row's length and
// both pointers allow, one element at a time otherwise: exactly the CPU
// reference's rows; a bad index's row zeros, the index reported.
TEST_F(Nn, EmbeddingGatherEqualsTheReferenceAtEveryWidthAndOffset) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  for (mpcrt_dtype d : kTypes)
    for (int64_t dim : {8, 16, 768, 12, 13, 1})
      for (int64_t offset : {0, 1}) {
        SCOPED_TRACE("dtype " + std::to_string(d) + ", width " +
                     std::to_string(dim) + ", offset " +
                     std::to_string(offset));
        const int64_t v = 37, count = 211, e = bytesOf(d);
        auto table = randomOf(rng, d, v * dim + offset, -1, 1);
        std::vector<int32_t> idx(count);
        std::uniform_int_distribution<int32_t> row(0, v - 1);
        for (int32_t &i : idx)
          i = row(rng);
        std::vector<uint8_t> rows(table.begin() + offset * e, table.end()),
            want(count * dim * e);
#define CALL(SUFFIX, T, STAT)                                                  \
  ASSERT_EQ(mpcrt_embedding_##SUFFIX(reinterpret_cast<const T *>(rows.data()), \
                                     v, dim, idx.data(), 32, count,            \
                                     reinterpret_cast<T *>(want.data())),      \
            0)
        MPCRT_FOR_DTYPE(d, CALL);
#undef CALL
        // Position 5 reads past the table: its row is +0 in every type.
        idx[5] = v + 3;
        std::fill(want.begin() + 5 * dim * e, want.begin() + 6 * dim * e, 0);
        uint8_t *gTable = upload(table) + offset * e;
        uint8_t *gOut =
            deviceBuffer<uint8_t>((count * dim + offset) * e) + offset * e;
        embedding(d, gTable, v, dim, upload(idx), 32, count, gOut);
        EXPECT_EQ(download(gOut, count * dim * e), want);
        EXPECT_EQ(takeDeviceErrors().index, 6);
        if (HasFailure())
          return;
      }
}

// The embedding's backward adds each touched row's gradients in the order
// of their positions, from zero, as the CPU reference does: the same bits
// whatever order the threads run in (no atomics). Counts on either side of
// a block's sort chunk (2048 keys) and 17000 (16 chunks: the sort's stages
// in memory up to 16384 keys apart), one row at every odd position, 32-
// and 64-bit indices; rows of 4, 5 and 300 columns and of 776 (16 bytes a
// thread in every type: 97 threads of 8 in f16).
TEST_F(Nn, EmbeddingBackwardEqualsTheReferenceBitForBit) {
  std::mt19937 rng(23);
  struct Case {
    int64_t count;
    int32_t bits;
    int64_t dim;
  };
  const Case cases[] = {{1, 64, 5},    {300, 32, 5},    {2048, 64, 5},
                        {5000, 32, 5}, {2048, 32, 300}, {3000, 32, 776},
                        {17000, 32, 4}};
  for (mpcrt_dtype d : kTypes)
    for (auto [count, bits, dim] : cases) {
      const int64_t v = count < 1000 ? 50 : 3000;
      auto dy = randomOf(rng, d, count * dim, -1, 1);
      std::uniform_int_distribution<int64_t> row(0, v - 1);
      std::vector<int64_t> idx(count);
      for (int64_t i = 0; i < count; ++i)
        idx[i] = i % 2 ? 7 : row(rng);
      std::vector<int32_t> idx32(idx.begin(), idx.end());
      const void *host = bits == 32 ? static_cast<const void *>(idx32.data())
                                    : static_cast<const void *>(idx.data());
      std::vector<uint8_t> want(v * dim * bytesOf(d));
      // The frequent row 7 as the padding row in the widest case.
      int64_t padding = dim == 300 ? 7 : -1;
#define CALL(SUFFIX, T, STAT)                                                  \
  mpcrt_embedding_backward_##SUFFIX(                                           \
      reinterpret_cast<const T *>(dy.data()), host, bits, count, v, dim,       \
      padding, nullptr, reinterpret_cast<T *>(want.data()))
      MPCRT_FOR_DTYPE(d, CALL);
#undef CALL
      uint8_t *got = deviceBuffer<uint8_t>(want.size());
      const void *indices = bits == 32
                                ? static_cast<const void *>(upload(idx32))
                                : static_cast<const void *>(upload(idx));
      embeddingBackward(d, upload(dy), indices, bits, count, v, dim, padding,
                        nullptr, got);
      ASSERT_EQ(download(got, want.size()), want)
          << "dtype " << d << ", " << count << " indices of " << bits
          << " bits, " << dim << " columns, padding " << padding;
    }
  EXPECT_EQ(takeDeviceErrors().index, 0);
}

TEST_F(Nn, EmbeddingBackwardSegmentsEqualTheReferenceBitForBit) {
  // Rows at 1, 31, 32, 33, 64, 65 and 300 of the positions, shuffled:
  // one segment of kEmbeddingSegment (32) or several, the last one full
  // or short, the partial sums' slots of neighbouring runs side by side;
  // with and without an addend. Rows of 72 columns are summed 16 bytes a
  // thread (in every type), of 70 columns, or of 72 from a gradient one
  // element past an aligned start, a column at a time. The same bits as
  // the CPU reference's segments.
  SCOPED_TRACE("seed " + std::to_string(seed));
  const int64_t runs[] = {1, 31, 32, 33, 64, 65, 300};
  const int64_t v = 9;
  std::vector<int32_t> idx;
  for (int64_t r = 0; r < int64_t(std::size(runs)); ++r)
    idx.insert(idx.end(), runs[r], int32_t(2 * r % v));
  std::shuffle(idx.begin(), idx.end(), rng);
  const int64_t count = static_cast<int64_t>(idx.size());
  struct Case {
    int64_t dim, offset;
  };
  for (Case c : {Case{70, 0}, Case{72, 0}, Case{72, 1}})
    for (mpcrt_dtype d : kTypes)
      for (bool add : {false, true}) {
        const int64_t dim = c.dim, e = bytesOf(d);
        auto dy = randomOf(rng, d, count * dim + c.offset, -1, 1);
        auto addend = randomOf(rng, d, v * dim, -1, 1);
        std::vector<uint8_t> want(v * dim * e);
#define CALL(SUFFIX, T, STAT)                                                  \
  mpcrt_embedding_backward_##SUFFIX(                                           \
      reinterpret_cast<const T *>(dy.data() + c.offset * e), idx.data(), 32,   \
      count, v, dim, -1,                                                       \
      add ? reinterpret_cast<const T *>(addend.data()) : nullptr,              \
      reinterpret_cast<T *>(want.data()))
        MPCRT_FOR_DTYPE(d, CALL);
#undef CALL
        uint8_t *got = deviceBuffer<uint8_t>(want.size());
        embeddingBackward(d, upload(dy) + c.offset * e, upload(idx), 32, count,
                          v, dim, -1, add ? upload(addend) : nullptr, got);
        ASSERT_EQ(download(got, want.size()), want)
            << "dtype " << d << ", " << dim << " columns, offset " << c.offset
            << (add ? ", with an addend" : "");
      }
  EXPECT_EQ(takeDeviceErrors().index, 0);
}

/// The device buffer of an addend: null without one, the result's own
/// buffer in place, else the addend uploaded.
template <typename Upload>
const void *addendOf(const std::vector<uint8_t> *addend, bool inPlace,
                     void *result, Upload upload) {
  return !addend ? nullptr : inPlace ? result : upload(*addend);
}

TEST_F(Nn, GradientAddendsEqualASeparateAdd) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  auto up = [this](const std::vector<uint8_t> &v) { return upload(v); };
  mpcrt::test::checkLayerNormAddends(
      rng,
      [&](const mpcrt::test::LayerNormAddendCase &c,
          const std::vector<uint8_t> *ga, const std::vector<uint8_t> *ba,
          bool inPlace, std::vector<uint8_t> &dg, std::vector<uint8_t> &db) {
        size_t bytes = c.x.size(), stats = c.rows * (c.dt == MPCRT_F64 ? 8 : 4);
        uint8_t *x = upload(c.x), *dy = upload(c.dy), *gamma = upload(c.gamma),
                *beta = upload(c.beta);
        uint8_t *y = deviceBuffer<uint8_t>(bytes),
                *sum = deviceBuffer<uint8_t>(bytes),
                *dx = deviceBuffer<uint8_t>(bytes),
                *dres = deviceBuffer<uint8_t>(bytes),
                *mean = deviceBuffer<uint8_t>(stats),
                *rstd = deviceBuffer<uint8_t>(stats);
        uint8_t *dG = upload(dg), *dB = upload(db);
        const void *gp = addendOf(ga, inPlace, dG, up),
                   *bp = addendOf(ba, inPlace, dB, up);
        if (c.kind == mpcrt::test::NormKind::Batch) {
          float *sm = deviceBuffer<float>(c.cols),
                *si = deviceBuffer<float>(c.cols);
          batchNorm(c.dt, x, c.param, gamma, beta, upload(c.beta),
                    upload(c.gamma), y, sm, si, c.rows, c.cols, 0.1, 1e-5);
          batchNormBackward(c.dt, dy, x, c.param, gamma, sm, si, dx, dG, dB,
                            c.rows, c.cols, nullptr, nullptr, gp, bp);
        } else if (c.kind == mpcrt::test::NormKind::AddLayer) {
          auto *step = upload(std::vector<int64_t>{0});
          addLayerNorm(c.dt, x, upload(c.residual), c.param, gamma, beta, sum,
                       y, mean, rstd, c.rows, c.cols, c.rows, 1e-5, 0, 1, step);
          addLayerNormBackward(c.dt, dy, nullptr, sum, mean, rstd, c.param,
                               gamma, dx, dres, dG, dB, gp, bp, c.rows, c.cols,
                               0, 1, step);
        } else {
          layerNorm(c.dt, x, c.param, gamma, beta, y, mean, rstd, c.rows,
                    c.cols, 1e-5);
          layerNormBackward(c.dt, dy, x, mean, rstd, c.param, gamma, dx, dG, dB,
                            gp, bp, c.rows, c.cols);
        }
        dg = download(dG, dg.size());
        db = download(dB, db.size());
      });
  mpcrt::test::checkEmbeddingAddend(
      rng, [&](const mpcrt::test::EmbeddingAddendCase &c,
               const std::vector<uint8_t> *addend, bool inPlace,
               std::vector<uint8_t> &table) {
        uint8_t *out = upload(table);
        embeddingBackward(c.dt, upload(c.dy), upload(c.indices), 32, c.count,
                          c.v, c.d, c.padding,
                          addendOf(addend, inPlace, out, up), out);
        table = download(out, table.size());
      });
  EXPECT_EQ(takeDeviceErrors().index, 0);
}

} // namespace

namespace {

using Edges = CudaTest;

/// Zero rows write no NaN and launch no empty grid: the loss of an empty
/// batch is 0, batch norm leaves its running statistics alone, the
/// parameter gradients of zero rows are 0; as the reference.
TEST_F(Edges, EmptyInputsGiveWhatTheReferenceGives) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  const int64_t c = 5;
  float *loss = upload(std::vector<float>{123.0f});
  int32_t *labels = upload(std::vector<int32_t>{0});
  float *logits = upload(std::vector<float>{1.0f});
  crossEntropy(MPCRT_F32, logits, labels, 32, loss, 0, 3, true);
  EXPECT_EQ(download(loss, 1)[0], 0.0f);
  pointwiseLoss(MPCRT_F32, 0, logits, logits, loss, 0, true);
  EXPECT_EQ(download(loss, 1)[0], 0.0f);

  std::vector<float> running = {0.5f, 1.5f, -2.0f, 3.0f, 0.25f};
  float *runningMean = upload(running), *runningVar = upload(running);
  float *gamma = upload(std::vector<float>(c, 1.0f));
  float *beta = upload(std::vector<float>(c, 0.0f));
  float *saved = upload(std::vector<float>(c, 9.0f));
  float *savedInv = upload(std::vector<float>(c, 9.0f));
  batchNorm(MPCRT_F32, logits, MPCRT_F32, gamma, beta, runningMean, runningVar,
            loss, saved, savedInv, 0, c, 0.1, 1e-5);
  EXPECT_EQ(download(runningMean, c), running);
  EXPECT_EQ(download(runningVar, c), running);
  EXPECT_EQ(download(saved, c), std::vector<float>(c, 0.0f));
  EXPECT_EQ(download(savedInv, c), std::vector<float>(c, 0.0f));

  float *gradGamma = upload(std::vector<float>(c, 9.0f));
  float *gradBeta = upload(std::vector<float>(c, 9.0f));
  layerNormBackward(MPCRT_F32, logits, logits, saved, savedInv, MPCRT_F32,
                    gamma, loss, gradGamma, gradBeta, nullptr, nullptr, 0, c);
  EXPECT_EQ(download(gradGamma, c), std::vector<float>(c, 0.0f));
  EXPECT_EQ(download(gradBeta, c), std::vector<float>(c, 0.0f));
  softmax(MPCRT_F32, logits, MPCRT_F32, loss, 0, 3, false);
  layerNorm(MPCRT_F32, logits, MPCRT_F32, gamma, beta, loss, saved, savedInv, 0,
            c, 1e-5);
  synchronize(); // no launch error
}

/// mpcrt_copy is memmove, as on the CPU, also when the ranges overlap.
TEST_F(Edges, OverlappingCopiesMoveAsMemmove) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  const int64_t n = 100000;
  std::vector<int32_t> host(n);
  std::uniform_int_distribution<int32_t> any;
  for (int32_t &v : host)
    v = any(rng);
  for (int64_t shift :
       {int64_t(1), int64_t(-1), int64_t(777), int64_t(-5000)}) {
    int32_t *buffer = upload(host);
    std::vector<int32_t> want = host;
    int64_t count = n - std::abs(shift);
    int32_t *src = buffer + (shift > 0 ? 0 : -shift);
    int32_t *dst = buffer + (shift > 0 ? shift : 0);
    std::memmove(want.data() + (dst - buffer), want.data() + (src - buffer),
                 count * sizeof(int32_t));
    copy(dst, src, count * sizeof(int32_t));
    ASSERT_EQ(download(buffer, n), want) << "shift " << shift;
  }
}

/// The checks with the flash kernels taking the f16 and bf16 cases they
/// can (the default), then without them: the heads in one chunk (the
/// default scratch) and in chunks of one head each (a limit of one byte).
TEST_F(Nn, AttentionMatchesFloat64) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  {
    SCOPED_TRACE("flash kernels");
    checkAttentionOnce(true);
    if (HasFatalFailure())
      return;
  }
  struct FlashOff {
    bool previous = setAttentionFlash(false);
    ~FlashOff() { setAttentionFlash(previous); }
  } flashOff;
  for (int64_t limit : {int64_t(0), int64_t(1)}) {
    SCOPED_TRACE(limit ? "one head per chunk" : "default chunks");
    int64_t previous = limit ? setAttentionScratchBytes(limit) : 0;
    checkAttentionOnce(false);
    if (limit)
      setAttentionScratchBytes(previous);
    if (HasFatalFailure())
      return;
  }
  // Every score row a block's, as rows past 1024 columns are.
  SCOPED_TRACE("a block per score row");
  int64_t previous = setAttentionWarpColumns(0);
  checkAttentionOnce(false);
  setAttentionWarpColumns(previous);
}

void Nn::checkAttentionOnce(bool flash) {
  mpcrt::test::checkAllAttention(
      rng,
      [this](mpcrt_dtype dt, const mpcrt::test::AttentionCase &c) {
        return [=](mpcrt::test::AttentionBuffers &b) {
          auto buffer = [&](std::vector<uint8_t> &host) {
            return deviceBuffer<uint8_t>(host.size());
          };
          const int64_t *step = upload(std::vector<int64_t>{c.step});
          uint8_t *q = upload(b.q), *k = upload(b.k), *v = upload(b.v),
                  *go = upload(b.grad), *o = buffer(b.result),
                  *lse = buffer(b.lse), *dq = buffer(b.dq), *dk = buffer(b.dk),
                  *dv = buffer(b.dv);
          const uint8_t *mask = b.mask.empty() ? nullptr : upload(b.mask);
          const float *bias = b.bias.empty() ? nullptr : upload(b.bias);
          mpcrt::formulas::AttentionMask m = mpcrt::formulas::attentionMask(
              mask, b.layout.data(), static_cast<int32_t>(b.layout.size() / 2),
              c.fill, bias, b.biasLayout.data(),
              static_cast<int32_t>(b.biasLayout.size() / 2));
          attention(dt, q, k, v, o, lse, c.heads, c.sq, c.sk, c.d, c.dv,
                    c.rowHeads, c.scale, c.p, c.seed, step, m);
          attentionBackward(dt, go, q, k, v, o, lse, dq, dk, dv, c.heads, c.sq,
                            c.sk, c.d, c.dv, c.rowHeads, c.scale, c.p, c.seed,
                            step, m);
          b.result = download(o, b.result.size());
          b.lse = download(lse, b.lse.size());
          b.dq = download(dq, b.dq.size());
          b.dk = download(dk, b.dk.size());
          b.dv = download(dv, b.dv.size());
        };
      },
      {/*roundsProducts=*/true, /*rowDotsFromResult=*/flash});
}

/// A run of mpc.add_layer_norm and its backward on the device, for
/// checkAddLayerNorm; with `plain`, also mpc.layer_norm_backward of the
/// same sum and gradient, whose parameter gradients must be the add's bit
/// for bit (the same terms) and whose input gradient must be the add's
/// residual gradient where the sum has no gradient of its own.
mpcrt::test::AddLayerNormRun
Nn::addLayerNormRun(mpcrt_dtype dt, const mpcrt::test::AddLayerNormCase &c,
                    bool plain, int64_t offset) {
  return [=](mpcrt::test::AddLayerNormBuffers &b) {
    size_t at = offset * bytesOf(dt);
    auto buffer = [&](std::vector<uint8_t> &host) {
      return deviceBuffer<uint8_t>(host.size());
    };
    auto rowsBuffer = [&](std::vector<uint8_t> &host) {
      return deviceBufferAt(host.size(), at);
    };
    mpcrt_dtype param = dt == MPCRT_F64 ? MPCRT_F64 : MPCRT_F32;
    const int64_t *step = upload(std::vector<int64_t>{c.step});
    uint8_t *x = uploadAt(b.x, at), *res = uploadAt(b.residual, at),
            *gamma = upload(b.gamma), *beta = upload(b.beta),
            *grad = uploadAt(b.grad, at), *sum = rowsBuffer(b.sum),
            *y = rowsBuffer(b.y), *mean = buffer(b.mean),
            *rstd = buffer(b.rstd), *dx = rowsBuffer(b.dx),
            *dres = rowsBuffer(b.dresidual), *dg = buffer(b.dgamma),
            *db = buffer(b.dbeta);
    const uint8_t *sumGrad =
        b.sumGrad.empty() ? nullptr : uploadAt(b.sumGrad, at);
    addLayerNorm(dt, x, res, param, gamma, beta, sum, y, mean, rstd, c.rows,
                 c.cols, c.residualRows(), 1e-5, c.p, c.seed, step);
    addLayerNormBackward(dt, grad, sumGrad, sum, mean, rstd, param, gamma, dx,
                         dres, dg, db, nullptr, nullptr, c.rows, c.cols, c.p,
                         c.seed, step);
    // Again with the input gradient's sums: columnSums' of it, bit for bit
    // (the bias gradient mpcrt_matmul_bias_grad would take of it), and the
    // other results those of the backward without them (gamma's and
    // beta's sums too, unless MPC_CUDA_NORM_SUMS=rows had that backward
    // take those in its row kernel, in another order).
    uint8_t *dxSums = buffer(b.dxSums), *columns = buffer(b.dxSums),
            *dx2 = rowsBuffer(b.dx), *dres2 = rowsBuffer(b.dresidual),
            *dg2 = buffer(b.dgamma), *db2 = buffer(b.dbeta);
    addLayerNormBackward(dt, grad, sumGrad, sum, mean, rstd, param, gamma, dx2,
                         dres2, dg2, db2, nullptr, nullptr, c.rows, c.cols, c.p,
                         c.seed, step, dxSums);
    columnSums(dt, param, dx, columns, c.rows, c.cols, nullptr);
    b.dxSums = download(dxSums, b.dxSums.size());
    EXPECT_EQ(download(columns, b.dxSums.size()), b.dxSums)
        << "the input gradient's sums against columnSums";
    EXPECT_EQ(download(dx2, b.dx.size()), download(dx, b.dx.size()));
    EXPECT_EQ(download(dres2, b.dresidual.size()),
              download(dres, b.dresidual.size()));
    // Each gradient alone (the other null, not written; what the memory
    // plan gives a gradient nobody reads): the same bits.
    uint8_t *dx3 = rowsBuffer(b.dx), *dres3 = rowsBuffer(b.dresidual),
            *dg3 = buffer(b.dgamma), *db3 = buffer(b.dbeta);
    addLayerNormBackward(dt, grad, sumGrad, sum, mean, rstd, param, gamma, dx3,
                         nullptr, dg3, db3, nullptr, nullptr, c.rows, c.cols,
                         c.p, c.seed, step);
    addLayerNormBackward(dt, grad, sumGrad, sum, mean, rstd, param, gamma,
                         nullptr, dres3, dg3, db3, nullptr, nullptr, c.rows,
                         c.cols, c.p, c.seed, step);
    EXPECT_EQ(download(dx3, b.dx.size()), download(dx, b.dx.size()))
        << "the input gradient without the residual's";
    EXPECT_EQ(download(dres3, b.dresidual.size()),
              download(dres, b.dresidual.size()))
        << "the residual gradient without the input's";
    bool rowSums = setLayerNormRowSums(false);
    setLayerNormRowSums(rowSums);
    if (!rowSums) {
      EXPECT_EQ(download(dg2, b.dgamma.size()), download(dg, b.dgamma.size()));
      EXPECT_EQ(download(db2, b.dbeta.size()), download(db, b.dbeta.size()));
    }
    b.sum = download(sum, b.sum.size());
    b.y = download(y, b.y.size());
    b.mean = download(mean, b.mean.size());
    b.rstd = download(rstd, b.rstd.size());
    b.dx = download(dx, b.dx.size());
    b.dresidual = download(dres, b.dresidual.size());
    b.dgamma = download(dg, b.dgamma.size());
    b.dbeta = download(db, b.dbeta.size());
    if (!plain)
      return;
    uint8_t *pdx = rowsBuffer(b.dx), *pdg = buffer(b.dgamma),
            *pdb = buffer(b.dbeta);
    layerNormBackward(dt, grad, sum, mean, rstd, param, gamma, pdx, pdg, pdb,
                      nullptr, nullptr, c.rows, c.cols);
    EXPECT_EQ(download(pdg, b.dgamma.size()), b.dgamma) << "plain dgamma";
    EXPECT_EQ(download(pdb, b.dbeta.size()), b.dbeta) << "plain dbeta";
    if (!sumGrad)
      EXPECT_EQ(download(pdx, b.dx.size()), b.dresidual) << "plain dx";
  };
}

TEST_F(Nn, AddLayerNormMatchesFloat64) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  mpcrt::test::checkAllAddLayerNorms(
      rng, [this](mpcrt_dtype dt, const mpcrt::test::AddLayerNormCase &c) {
        return addLayerNormRun(dt, c, false);
      });
}

TEST_F(Nn, AddLayerNormAtUnalignedOffsetsMatchesFloat64) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  // The rows' tensors 1 element past an aligned start (the element-wise
  // path: no group of 4 is aligned) and 4 (16-bit groups aligned to their
  // 8-byte loads, not to 16 bytes: the row sums' kernel for whole rows),
  // against float64, with the plain backward's bits as in
  // AddLayerNormMatchesFloat64: rows whose groups would be aligned at
  // offset 0, and a residual broadcast over the rows.
  const mpcrt::test::AddLayerNormCase cases[] = {
      {150, 768, 0.1, true},
      {9, 128, 0.1, false},
      {64, 256, 0.1, true, 11, 3, 16}};
  for (int64_t offset : {int64_t(1), int64_t(4)})
    for (mpcrt_dtype dt : {MPCRT_F16, MPCRT_BF16, MPCRT_F32})
      for (const mpcrt::test::AddLayerNormCase &c : cases) {
        SCOPED_TRACE("dtype " + std::to_string(dt) + " rows " +
                     std::to_string(c.rows) + " cols " +
                     std::to_string(c.cols) + " offset " +
                     std::to_string(offset));
        mpcrt::test::checkAddLayerNorm(dt, c, rng,
                                       addLayerNormRun(dt, c, true, offset));
        if (HasFatalFailure())
          return;
      }
}

TEST_F(Nn, LayerNormSumsFollowTheEnvironment) {
  // MPC_CUDA_NORM_SUMS=rows turns the row kernel's sums on (ctest's
  // emulated-norm-sums.rows); unset, they are off.
  const char *v = std::getenv("MPC_CUDA_NORM_SUMS");
  bool rows = v && std::strcmp(v, "rows") == 0;
  bool previous = setLayerNormRowSums(!rows);
  EXPECT_EQ(previous, rows);
  EXPECT_EQ(setLayerNormRowSums(previous), !rows);
}

TEST_F(Nn, LayerNormBackwardRowSumsMatchFloat64) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  // Whole f16 and bf16 rows of up to 1024 elements, a warp each, whose
  // kernel takes gamma's and beta's sums in registers: 4, 6 and 8 groups
  // a lane; the default cut (a row per warp at these sizes) and rows cut
  // into 3 blocks (several rows a warp, the last block short); one row.
  // Each against float64 with the sums taken there and
  // (setLayerNormRowSums(false)) by the column reduction, plain and with
  // the residual's gradient.
  const mpcrt::test::AddLayerNormCase cases[] = {{1, 768, 0, true},
                                                 {9, 128, 0.1, true},
                                                 {150, 512, 0.25, false},
                                                 {150, 768, 0.1, true},
                                                 {100, 1024, 0, false}};
  for (bool rowSums : {true, false})
    for (int64_t blocks : {int64_t(256), int64_t(3)})
      for (mpcrt_dtype dt : {MPCRT_F16, MPCRT_BF16})
        for (const mpcrt::test::AddLayerNormCase &c : cases) {
          SCOPED_TRACE("dtype " + std::to_string(dt) + " rows " +
                       std::to_string(c.rows) + " cols " +
                       std::to_string(c.cols) + " row sums " +
                       std::to_string(rowSums) + " blocks " +
                       std::to_string(blocks));
          bool previous = setLayerNormRowSums(rowSums);
          int64_t previousBlocks = setLayerNormSumBlocks(blocks);
          mpcrt::test::checkAddLayerNorm(dt, c, rng,
                                         addLayerNormRun(dt, c, true));
          setLayerNormRowSums(previous);
          setLayerNormSumBlocks(previousBlocks);
          if (HasFatalFailure())
            return;
        }
}

} // namespace
