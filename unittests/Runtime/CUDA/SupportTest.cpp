//===- SupportTest.cpp - CUDA casts, fills and matmul vs references -------===//

#include "../FusedMatmulCheck.h"
#include "../StridedMatmulCheck.h"
#include "CudaTest.h"

#include <algorithm>
#include <cmath>
#include <tuple>

using namespace mpcrt::cuda;
using namespace mpcrt::cuda::test;

namespace {

using Support = CudaTest;

int64_t bytesOf(mpcrt_dtype d) {
  return d == MPCRT_F64 ? 8 : d == MPCRT_F32 ? 4 : 2;
}

const mpcrt_dtype kTypes[] = {MPCRT_F16, MPCRT_BF16, MPCRT_F32, MPCRT_F64};

TEST_F(Support, InputUploadsArriveAtTheNextStepOnly) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  // Five batches through mpcrt_upload_input's pipeline: the host buffer is
  // overwritten as soon as the call returns; work enqueued before
  // inputsReady still reads the previous batch, work after it the new one.
  const int64_t n = 300001; // bytes not a multiple of anything
  std::uniform_real_distribution<float> u(-1, 1);
  float *buffer = deviceBuffer<float>(n);
  std::vector<std::vector<float>> batches(5, std::vector<float>(n));
  std::vector<float *> before, after;
  for (auto &b : batches)
    for (float &v : b)
      v = u(rng);
  std::vector<float> host(n);
  for (size_t r = 0; r < batches.size(); ++r) {
    host = batches[r];
    uploadInput(buffer, host.data(), n * 4);
    std::fill(host.begin(), host.end(), -7.0f); // reused at once
    before.push_back(deviceBuffer<float>(n));
    copy(before.back(), buffer, n * 4); // the step still running
    inputsReady();
    after.push_back(deviceBuffer<float>(n));
    copy(after.back(), buffer, n * 4); // the next step
  }
  for (size_t r = 0; r < batches.size(); ++r) {
    SCOPED_TRACE("batch " + std::to_string(r));
    ASSERT_EQ(download(after[r], n), batches[r]);
    if (r > 0)
      ASSERT_EQ(download(before[r], n), batches[r - 1]);
  }
}

TEST_F(Support, GatheredRowsAreBitIdenticalToTheReference) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  // 130 rows (three launches of up to 64) of 37 elements, repeated and
  // out of order, from a 50-row table: f16 to f32, bf16 to f64, f32 to
  // f32, and 4-byte integers raw.
  const int64_t tableRows = 50, width = 37, count = 130;
  std::uniform_int_distribution<int64_t> pick(0, tableRows - 1);
  std::vector<int64_t> rows(count);
  for (int64_t &r : rows)
    r = pick(rng);
  const std::tuple<mpcrt_dtype, mpcrt_dtype, int32_t> cases[] = {
      {MPCRT_F16, MPCRT_F32, 0},
      {MPCRT_BF16, MPCRT_F64, 0},
      {MPCRT_F32, MPCRT_F32, 0},
      {MPCRT_F32, MPCRT_F32, 4}};
  auto bytes = [](mpcrt_dtype d) {
    return d == MPCRT_F64 ? 8 : d == MPCRT_F32 ? 4 : 2;
  };
  for (auto [from, to, raw] : cases) {
    SCOPED_TRACE(std::to_string(from) + " to " + std::to_string(to) +
                 (raw ? " raw" : ""));
    std::vector<double> values;
    auto table = mpcrt::test::randomOf(from, tableRows * width, rng, values);
    std::vector<uint8_t> want(count * width * (raw ? raw : bytes(to)));
    mpcrt_gather_rows(table.data(), from, want.data(), to, width, rows.data(),
                      count, raw);
    uint8_t *out = deviceBuffer<uint8_t>(want.size());
    gatherRows(upload(table), from, out, to, width, rows.data(), count, raw);
    ASSERT_EQ(download(out, want.size()), want);
  }
}

TEST_F(Support, IntegerCastsAreBitIdenticalToTheReference) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::uniform_int_distribution<int32_t> any(INT32_MIN, INT32_MAX),
      small(-70000, 70000);
  std::vector<int32_t> ints(20000);
  for (size_t i = 0; i < ints.size(); ++i)
    ints[i] = i % 2 ? any(rng) : small(rng);
  int64_t n = static_cast<int64_t>(ints.size());
  int32_t *dIn = upload(ints);
  for (mpcrt_dtype to : kTypes) {
    std::vector<uint8_t> want(n * bytesOf(to));
    mpcrt_cast_i32(ints.data(), to, want.data(), n);
    uint8_t *dOut = deviceBuffer<uint8_t>(want.size());
    castI32(dIn, to, dOut, n);
    EXPECT_EQ(download(dOut, want.size()), want) << "cast i32 -> " << to;
  }
}

TEST_F(Support, CastsAreBitIdenticalToTheReference) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  const int64_t n = 20000;
  std::uniform_real_distribution<double> exponent(-30, 20), unit(0, 1);
  std::vector<double> source(n);
  for (double &v : source)
    v = (unit(rng) < 0.5 ? -1 : 1) * std::exp2(exponent(rng));
  source[0] = 0;
  source[1] = INFINITY;
  source[2] = 65520.0;                // rounds to f16 infinity
  source[3] = 0x1p-25;                // ties to f16 zero
  source[4] = 1.0 + 0x1p-11;          // tie to even in f16
  source[5] = 1.0 + 0x1p-8 + 0x1p-30; // just above a bf16 tie
  for (mpcrt_dtype from : kTypes) {
    std::vector<uint8_t> in(n * bytesOf(from));
    mpcrt_cast(MPCRT_F64, source.data(), from, in.data(), n);
    uint8_t *dIn = upload(in);
    for (mpcrt_dtype to : kTypes) {
      std::vector<uint8_t> want(n * bytesOf(to));
      mpcrt_cast(from, in.data(), to, want.data(), n);
      uint8_t *dOut = deviceBuffer<uint8_t>(want.size());
      cast(from, dIn, to, dOut, n);
      EXPECT_EQ(download(dOut, want.size()), want)
          << "cast " << from << " -> " << to;
      // One element off the vector alignment, an odd count: the
      // element-at-a-time path and the tail.
      int64_t fromSize = bytesOf(from), toSize = bytesOf(to), m = n - 3;
      cast(from, dIn + fromSize, to, dOut + toSize, m);
      std::vector<uint8_t> shifted = download(dOut, want.size());
      EXPECT_TRUE(std::equal(want.begin() + toSize,
                             want.begin() + (m + 1) * toSize,
                             shifted.begin() + toSize))
          << "cast " << from << " -> " << to << " at an offset";
    }
  }
}

TEST_F(Support, RandomFillsMatchTheReference) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  const int64_t n = 10001; // odd: the last pair is half used
  for (mpcrt_dtype d : kTypes)
    for (int normal : {0, 1}) {
      std::vector<uint8_t> want(n * bytesOf(d));
      uint64_t s = rng();
      mpcrt_fill_random(d, want.data(), n, normal, -0.5, 2.0, s);
      uint8_t *dOut = deviceBuffer<uint8_t>(want.size());
      fillRandom(d, dOut, n, normal, -0.5, 2.0, s);
      std::vector<uint8_t> got = download(dOut, want.size());
      std::vector<double> w(n), o(n);
      mpcrt_cast(d, want.data(), MPCRT_F64, w.data(), n);
      mpcrt_cast(d, got.data(), MPCRT_F64, o.data(), n);
      // The same Philox words and the same arithmetic; only the library
      // functions differ. Uniform: a + (b - a) u, exact operations: the
      // same bits. Normal: a + b r cos(2 pi u1) with r = sqrt(-2 log(1 -
      // u0)); the CUDA Math API documents log 1 ulp and sin/cos 2 ulps
      // (double), glibc under 1 ulp each: with the rounding of the
      // products, |dv| <= 8 ulp(double) * |b r cos| = 8 * 2^-52 |w - a|
      // (not relative to w: a + b r cos cancels near zero), plus the last
      // rounding, of the sum a + b r cos (in double) and then to the
      // element type, which can land on either side of a boundary: one ulp
      // of the type at |w| (for f64 the sum's own rounding: half an ulp
      // on each side), or its smallest subnormal step.
      double typeUlp = d == MPCRT_F64   ? 0x1p-52
                       : d == MPCRT_F32 ? 0x1p-23
                       : d == MPCRT_F16 ? 0x1p-10
                                        : 0x1p-7;
      double subnormal = d == MPCRT_F64   ? 0x1p-1074
                         : d == MPCRT_F32 ? 0x1p-149
                         : d == MPCRT_F16 ? 0x1p-24
                                          : 0x1p-133;
      for (int64_t i = 0; i < n; ++i) {
        if (!normal) {
          ASSERT_EQ(w[i], o[i]) << "uniform element " << i << " dtype " << d;
          continue;
        }
        double library = 8 * 0x1p-52 * std::fabs(w[i] - (-0.5));
        double rounding = typeUlp * std::fabs(w[i]) + subnormal;
        ASSERT_LE(std::fabs(w[i] - o[i]), library + rounding)
            << "normal element " << i << " dtype " << d;
      }
    }
}

TEST_F(Support, CountersAndScheduleMatchTheReference) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  int32_t *in = upload(std::vector<int32_t>{41});
  int32_t *out = deviceBuffer<int32_t>(1);
  uint8_t *skip = upload(std::vector<uint8_t>{1});
  incrementI32(in, out, nullptr);
  EXPECT_EQ(download(out, 1)[0], 42);
  incrementI32(in, out, skip);
  EXPECT_EQ(download(out, 1)[0], 41);
  int64_t *step = upload(std::vector<int64_t>{9});
  incrementStep(step);
  EXPECT_EQ(download(step, 1)[0], 10);
  for (int32_t kind : {0, 1, 2, 3, 4, 5})
    for (int32_t t : {1, 50, 99, 100, 101, 600, 1000, 1200}) {
      bool pytorch = kind >= 3, three = kind == 3 && t % 2;
      LrSchedule s{kind, 1e-3, pytorch ? 0 : 100, 1000, 1e-5, 0.97, 7, 0.3, 25,
                   1e4,  three};
      float want;
      mpcrt_lr_schedule(&t, &want, kind, s.base, s.warmup, s.total, s.minLr,
                        s.gamma, s.stepSize, s.pctStart, s.divFactor,
                        s.finalDivFactor, s.threePhase);
      int32_t *dT = upload(std::vector<int32_t>{t});
      float *lr = deviceBuffer<float>(1);
      lrSchedule(dT, lr, s);
      EXPECT_NEAR(download(lr, 1)[0], want, 1e-6f * want)
          << "kind " << kind << " step " << t;
    }
}

/// C = op(A) op(B) against float64 on the same (rounded) inputs:
/// |C - ref| <= rel * |ref| + acc * sum_k |a||b|.
void checkMatmul(CudaTest &test, std::mt19937 &rng, mpcrt_dtype d,
                 int64_t batch, int64_t m, int64_t n, int64_t k, bool transA,
                 bool transB, bool broadcastB) {
  std::normal_distribution<double> normal(0, 1);
  int64_t aCount = batch * m * k, bCount = (broadcastB ? 1 : batch) * k * n;
  std::vector<double> a(aCount), b(bCount);
  for (double &v : a)
    v = normal(rng);
  for (double &v : b)
    v = normal(rng);
  std::vector<uint8_t> aBytes(aCount * bytesOf(d)), bBytes(bCount * bytesOf(d));
  mpcrt_cast(MPCRT_F64, a.data(), d, aBytes.data(), aCount);
  mpcrt_cast(MPCRT_F64, b.data(), d, bBytes.data(), bCount);
  mpcrt_cast(d, aBytes.data(), MPCRT_F64, a.data(), aCount); // as rounded
  mpcrt_cast(d, bBytes.data(), MPCRT_F64, b.data(), bCount);
  uint8_t *dA = test.upload(aBytes), *dB = test.upload(bBytes);
  uint8_t *dC = test.deviceBuffer<uint8_t>(batch * m * n * bytesOf(d));
  matmul(d, dA, m * k, dB, broadcastB ? 0 : k * n, dC, batch, m, n, k, transA,
         transB);
  std::vector<uint8_t> cBytes =
      test.download(dC, size_t(batch * m * n * bytesOf(d)));
  std::vector<double> c(batch * m * n);
  mpcrt_cast(d, cBytes.data(), MPCRT_F64, c.data(), c.size());
  // One rounding of the result to its type (half an ulp: u), plus the
  // accumulation: products of f16/bf16/f32 inputs summed in f32 (f64 in
  // f64) in any order and blocking, |error| <= gamma_k sum |a b| with
  // gamma_k = k u / (1 - k u) (Higham, Accuracy and Stability, 3.1).
  double rel = d == MPCRT_F16    ? 0x1p-11
               : d == MPCRT_BF16 ? 0x1p-8
               : d == MPCRT_F32  ? 0x1p-24
                                 : 0x1p-53;
  double u = d == MPCRT_F64 ? 0x1p-53 : 0x1p-24;
  double acc = k * u / (1 - k * u);
  for (int64_t p = 0; p < batch; ++p) {
    const double *ap = a.data() + p * m * k;
    const double *bp = b.data() + (broadcastB ? 0 : p * k * n);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double ref = 0, abs = 0;
        for (int64_t l = 0; l < k; ++l) {
          double x = transA ? ap[l * m + i] : ap[i * k + l];
          double y = transB ? bp[j * k + l] : bp[l * n + j];
          ref += x * y;
          abs += std::fabs(x * y);
        }
        double got = c[(p * m + i) * n + j];
        ASSERT_LE(std::fabs(got - ref), rel * std::fabs(ref) + acc * abs)
            << "dtype " << d << " batch " << p << " (" << i << ", " << j
            << "), transA " << transA << " transB " << transB;
      }
  }
}

TEST_F(Support, MatmulMatchesFloat64) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  for (mpcrt_dtype d : kTypes)
    for (bool transA : {false, true})
      for (bool transB : {false, true}) {
        checkMatmul(*this, rng, d, 1, 64, 48, 96, transA, transB, false);
        checkMatmul(*this, rng, d, 3, 17, 33, 65, transA, transB, false);
        checkMatmul(*this, rng, d, 4, 16, 24, 40, transA, transB, true);
        if (HasFatalFailure())
          return;
      }
}

// The pointer-array product where the emulated heuristic offers it
// (MPC_EMULATION_ORDER=reverse, ctest's second pass), the loop of strided
// batches otherwise; one stride apart, one strided batch.
TEST_F(Support, StridedMatmulMatchesFloat64) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  mpcrt::test::checkAllStridedMatmuls(
      rng, [this](mpcrt_dtype d, const mpcrt::test::StridedMatmulShape &s) {
        return
            [=](const std::vector<uint8_t> &a, const mpcrt::test::Strides &as,
                const std::vector<uint8_t> &b, const mpcrt::test::Strides &bs,
                std::vector<uint8_t> &c, const mpcrt::test::Strides &cs,
                int64_t offset) {
              int64_t bytes = mpcrt::test::elementBytes(d) * offset;
              uint8_t *dC = upload(c);
              stridedMatmul(d, upload(a) + bytes, as.data(), upload(b) + bytes,
                            bs.data(), dC + bytes, cs.data(), s.outer, s.inner,
                            s.m, s.n, s.k, s.transA, s.transB);
              c = download(dC, c.size());
            };
      });
}

TEST_F(Support, FusedMatmulMatchesFloat64) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  mpcrt::test::checkAllFusedMatmuls(
      rng,
      [this](mpcrt_dtype in, mpcrt_dtype out, int32_t act,
             const mpcrt::test::FusedMatmulShape &s) {
        return [=](const std::vector<uint8_t> &a, const std::vector<uint8_t> &b,
                   const std::vector<uint8_t> &bias, std::vector<uint8_t> &c,
                   std::vector<uint8_t> *pre, int64_t aStride,
                   int64_t bStride) {
          uint8_t *dC = deviceBuffer<uint8_t>(c.size());
          uint8_t *dPre = pre ? deviceBuffer<uint8_t>(pre->size()) : nullptr;
          fusedMatmul(in, out, upload(a), aStride, upload(b), bStride,
                      upload(bias), dC, dPre, s.batch, s.m, s.n, s.k, s.transA,
                      s.transB, act);
          c = download(dC, c.size());
          if (pre)
            *pre = download(dPre, pre->size());
        };
      },
      mpcrt::test::Roundings::TwoInEpilogues);
}

TEST_F(Support, MatmulAddMatchesFloat64) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  mpcrt::test::checkAllMatmulAdds(
      rng,
      [this](mpcrt_dtype in, mpcrt_dtype out,
             const mpcrt::test::FusedMatmulShape &s) {
        return [=](const std::vector<uint8_t> &a, const std::vector<uint8_t> &b,
                   const std::vector<uint8_t> &addend, std::vector<uint8_t> &c,
                   int64_t aStride, int64_t bStride, bool inPlace) {
          uint8_t *dC = upload(c);
          matmulAdd(in, out, upload(a), aStride, upload(b), bStride,
                    inPlace ? dC : upload(addend), dC, s.batch, s.m, s.n, s.k,
                    s.transA, s.transB);
          c = download(dC, c.size());
        };
      },
      mpcrt::test::Roundings::TwoInEpilogues);
}

TEST_F(Support, MatmulActivationGradMatchesFloat64) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  mpcrt::test::checkAllMatmulActivationGrads(
      rng,
      [this](mpcrt_dtype in, mpcrt_dtype out, int32_t act,
             const mpcrt::test::FusedMatmulShape &s) {
        return [=](const std::vector<uint8_t> &a, const std::vector<uint8_t> &b,
                   const std::vector<uint8_t> &saved, std::vector<uint8_t> &c,
                   int64_t aStride, int64_t bStride) {
          uint8_t *dC = deviceBuffer<uint8_t>(c.size());
          matmulActivationGrad(in, out, upload(a), aStride, upload(b), bStride,
                               upload(saved), dC, s.batch, s.m, s.n, s.k,
                               s.transA, s.transB, act);
          c = download(dC, c.size());
        };
      },
      mpcrt::test::Roundings::TwoInEpilogues);
}

TEST_F(Support, BiasGradientPlansDependOnTheGradientType) {
  // The same f16 product with its bias gradient in f32, then in f16: the
  // plain product's plan and the column sums, then BGRADA's plan (cuBLASLt
  // writes a bias gradient only in the product's type; one plan for both
  // would write the sums of the wrong type).
  SCOPED_TRACE("seed " + std::to_string(seed));
  const int64_t m = 64, n = 48, k = 96;
  std::vector<double> as, bs, want(n, 0.0);
  auto a = mpcrt::test::randomOf(MPCRT_F16, m * k, rng, as),
       b = mpcrt::test::randomOf(MPCRT_F16, k * n, rng, bs);
  for (int64_t l = 0; l < k; ++l)
    for (int64_t j = 0; j < n; ++j)
      want[j] += bs[l * n + j];
  uint8_t *dA = upload(a), *dB = upload(b);
  uint8_t *dC = deviceBuffer<uint8_t>(m * n * 2);
  for (mpcrt_dtype grad : {MPCRT_F32, MPCRT_F16}) {
    int64_t bytes = grad == MPCRT_F32 ? 4 : 2;
    uint8_t *dG = deviceBuffer<uint8_t>(n * bytes);
    matmulBiasGrad(MPCRT_F16, MPCRT_F16, grad, dA, dB, nullptr, dC, nullptr, dG,
                   m, n, k, false);
    std::vector<uint8_t> raw = download(dG, n * bytes);
    std::vector<double> got(n);
    mpcrt_cast(grad, raw.data(), MPCRT_F64, got.data(), n);
    for (int64_t j = 0; j < n; ++j)
      ASSERT_NEAR(got[j], want[j], 1e-2 * (1 + std::fabs(want[j])))
          << "bias gradient in " << grad << ", column " << j;
  }
}

TEST_F(Support, MatmulBiasGradBiasAddendEqualsASeparateAdd) {
  // In place: the sums written over the addend. The sums added are the
  // column reduction's: without an addend, f16 sums of f16 operands come
  // from cuBLASLt's BGRADA epilogue instead, which sums in an order of its
  // own (the emulation's, run in reverse, rounded one of them an ulp
  // apart).
  SCOPED_TRACE("seed " + std::to_string(seed));
  mpcrt::test::checkBiasAddendEqualsASeparateAdd(
      rng, [this](mpcrt_dtype grad, int64_t m, int64_t n, int64_t k,
                  const std::vector<uint8_t> &a, const std::vector<uint8_t> &b,
                  const std::vector<uint8_t> &addend,
                  std::vector<uint8_t> &sums, std::vector<uint8_t> &fused) {
        uint8_t *dA = upload(a), *dB = upload(b);
        uint8_t *dC = deviceBuffer<uint8_t>(m * n * 2);
        uint8_t *dSums = deviceBuffer<uint8_t>(sums.size()),
                *dAddend = upload(addend);
        columnSums(MPCRT_F16, grad, dB, dSums, k, n);
        sums = download(dSums, sums.size());
        matmulBiasGrad(MPCRT_F16, MPCRT_F16, grad, dA, dB, nullptr, dC, dAddend,
                       dAddend, m, n, k, true);
        fused = download(dAddend, fused.size());
      });
}

TEST_F(Support, MatmulBiasGradMatchesFloat64) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  mpcrt::test::checkAllMatmulBiasGrads(
      rng,
      [this](mpcrt_dtype in, mpcrt_dtype grad,
             const mpcrt::test::BiasGradShape &s, mpcrt::test::Addend with) {
        return [=](const std::vector<uint8_t> &a, const std::vector<uint8_t> &b,
                   const std::vector<uint8_t> &addend,
                   const std::vector<uint8_t> &biasAddend,
                   std::vector<uint8_t> &c, std::vector<uint8_t> &g) {
          using mpcrt::test::Addend;
          bool inPlace = with == Addend::InPlace;
          uint8_t *dC = inPlace ? upload(c) : deviceBuffer<uint8_t>(c.size());
          uint8_t *dG = inPlace ? upload(g) : deviceBuffer<uint8_t>(g.size());
          const void *dAddend = addend.empty() ? nullptr
                                : inPlace      ? dC
                                               : upload(addend);
          const void *dBiasAddend = biasAddend.empty() ? nullptr
                                    : inPlace          ? dG
                                                       : upload(biasAddend);
          matmulBiasGrad(in, dAddend ? grad : in, grad, upload(a), upload(b),
                         dAddend, dC, dBiasAddend, dG, s.m, s.n, s.k, s.transA,
                         s.sumsOfA);
          c = download(dC, c.size());
          g = download(dG, g.size());
        };
      },
      mpcrt::test::Roundings::TwoInEpilogues);
}

} // namespace
