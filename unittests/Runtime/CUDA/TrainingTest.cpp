//===- TrainingTest.cpp - CUDA loss scaling and updates vs the CPU --------===//

#include "CudaTest.h"

#include <cmath>
#include <numeric>

using namespace mpcrt::cuda;
using namespace mpcrt::cuda::test;

namespace {

using Training = CudaTest;

/// 60 gradients (two multi-tensor launches) of random types and sizes,
/// some crossing chunk boundaries, values spanning 2^-40 to 2^12.
struct Gradients {
  std::vector<mpcrt_dtype> dtypes;
  std::vector<int64_t> sizes;
  std::vector<std::vector<uint8_t>> host; // raw bytes
  std::vector<const void *> hostPointers, devicePointers;
};

int64_t bytesOf(mpcrt_dtype d) {
  return d == MPCRT_F64 ? 8 : d == MPCRT_F32 ? 4 : 2;
}

Gradients makeGradients(std::mt19937 &rng, CudaTest &test, bool poison,
                        std::vector<void *> &owned) {
  Gradients g;
  std::uniform_int_distribution<int> type(0, 2);
  std::uniform_int_distribution<int64_t> size(1, 9000);
  std::uniform_real_distribution<double> exponent(-40, 12), unit(0, 1);
  for (int t = 0; t < 60; ++t) {
    mpcrt_dtype d = static_cast<mpcrt_dtype>(type(rng));
    int64_t n = size(rng);
    std::vector<double> values(n);
    for (double &v : values) {
      v = (unit(rng) < 0.5 ? -1 : 1) * std::exp2(exponent(rng));
      if (unit(rng) < 0.03)
        v = 0;
    }
    if (poison && t == 41)
      values[n / 2] = t % 2 ? INFINITY : NAN;
    std::vector<uint8_t> bytes(n * bytesOf(d));
    mpcrt_cast(MPCRT_F64, values.data(), d, bytes.data(), n);
    g.dtypes.push_back(d);
    g.sizes.push_back(n);
    g.host.push_back(std::move(bytes));
  }
  // Every fifth tensor one element past an aligned address (one element
  // per access; the others 16 bytes).
  for (size_t t = 0; t < g.host.size(); ++t) {
    std::vector<uint8_t> &bytes = g.host[t];
    g.hostPointers.push_back(bytes.data());
    size_t offset = t % 5 == 4 ? bytesOf(g.dtypes[t]) : 0;
    void *base = allocate(bytes.size() + offset);
    owned.push_back(base);
    void *device = static_cast<uint8_t *>(base) + offset;
    copyToDevice(device, bytes.data(), bytes.size());
    g.devicePointers.push_back(device);
  }
  (void)test;
  return g;
}

TEST_F(Training, UnscaleAndCheckMatchesTheReference) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  for (bool poison : {false, true}) {
    Gradients g = makeGradients(rng, *this, poison, owned);
    size_t n = g.sizes.size();
    std::vector<std::vector<float>> want(n);
    std::vector<float *> wantPointers, gotPointers;
    for (size_t t = 0; t < n; ++t) {
      want[t].resize(g.sizes[t]);
      wantPointers.push_back(want[t].data());
      // Every third tensor is check-only (null output), as at O2; every
      // seventh's output one element off alignment.
      gotPointers.push_back(t % 3 == 0 ? nullptr
                            : t % 7 == 6
                                ? deviceBuffer<float>(g.sizes[t] + 1) + 1
                                : deviceBuffer<float>(g.sizes[t]));
      if (t % 3 == 0)
        wantPointers.back() = nullptr;
    }
    float scaleHost = 1024.0f;
    uint8_t wantInf = 7;
    mpcrt_unscale_and_check(&scaleHost, n, g.dtypes.data(),
                            g.hostPointers.data(), g.sizes.data(),
                            wantPointers.data(), &wantInf);
    float *scale = upload(std::vector<float>{scaleHost});
    uint8_t *foundInf = upload(std::vector<uint8_t>{7});
    unscaleAndCheck(scale, n, g.dtypes.data(), g.devicePointers.data(),
                    g.sizes.data(), gotPointers.data(), foundInf);
    EXPECT_EQ(download(foundInf, 1)[0], wantInf);
    EXPECT_EQ(wantInf, poison ? 1 : 0);
    for (size_t t = 0; t < n; ++t) {
      if (!gotPointers[t])
        continue;
      std::vector<float> got = download(gotPointers[t], g.sizes[t]);
      for (int64_t i = 0; i < g.sizes[t]; ++i)
        ASSERT_TRUE(sameBits(got[i], want[t][i]) ||
                    (std::isnan(got[i]) && std::isnan(want[t][i])))
            << "tensor " << t << " element " << i << ": " << got[i] << " vs "
            << want[t][i];
    }
  }
}

// 60 tensors: two multi-tensor launches, each block's partial at its place.
// The sums differ in order only (f64, about 3e5 terms): relative 1e-12 is
// far above n * 2^-53 and far below f32's rounding of the results, which
// therefore agree within one f32 rounding.
TEST_F(Training, ClipGradNormMatchesTheReference) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  for (bool poison : {false, true})
    for (double maxNorm : {1e-3, 1e9}) {
      Gradients g = makeGradients(rng, *this, poison, owned);
      size_t n = g.sizes.size();
      float scaleHost = 1024.0f, wantInv, wantNorm;
      uint8_t wantInf = 7;
      mpcrt_clip_grad_norm(&scaleHost, n, g.dtypes.data(),
                           g.hostPointers.data(), g.sizes.data(), maxNorm,
                           &wantInv, &wantNorm, &wantInf);
      float *scale = upload(std::vector<float>{scaleHost});
      float *inv = deviceBuffer<float>(1), *norm = deviceBuffer<float>(1);
      uint8_t *foundInf = upload(std::vector<uint8_t>{7});
      clipGradNorm(scale, n, g.dtypes.data(), g.devicePointers.data(),
                   g.sizes.data(), maxNorm, inv, norm, foundInf);
      EXPECT_EQ(download(foundInf, 1)[0], wantInf);
      EXPECT_EQ(wantInf, poison ? 1 : 0);
      float gotNorm = download(norm, 1)[0], gotInv = download(inv, 1)[0];
      if (poison) {
        EXPECT_FALSE(std::isfinite(gotNorm));
        EXPECT_EQ(gotInv, 1.0f / 1024.0f);
        continue;
      }
      EXPECT_NEAR(gotNorm, wantNorm, 0x1p-23 * wantNorm);
      EXPECT_NEAR(gotInv, wantInv, 0x1p-22 * wantInv);
    }
}

TEST_F(Training, GradStatsMatchesTheReference) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  Gradients g = makeGradients(rng, *this, true, owned);
  for (float scaleHost : {1.0f, 1000.0f, 65536.0f}) {
    int64_t want[4], got[4];
    mpcrt_grad_stats(&scaleHost, g.sizes.size(), g.dtypes.data(),
                     g.hostPointers.data(), g.sizes.data(), want);
    float *scale = upload(std::vector<float>{scaleHost});
    int64_t *stats = deviceBuffer<int64_t>(4);
    gradStats(scale, g.sizes.size(), g.dtypes.data(), g.devicePointers.data(),
              g.sizes.data(), stats);
    std::vector<int64_t> result = download(stats, 4);
    std::copy(result.begin(), result.end(), got);
    for (int c = 0; c < 4; ++c)
      EXPECT_EQ(got[c], want[c]) << "counter " << c << ", scale " << scaleHost;
    EXPECT_GT(want[2], 0);
  }
}

TEST_F(Training, LossScaleTraceMatchesTheReference) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::bernoulli_distribution overflow(0.3);
  float hostScale = 65536.0f;
  int32_t hostGrowth = 0, hostHyst = 2;
  float *scale = upload(std::vector<float>{hostScale});
  int32_t *growth = upload(std::vector<int32_t>{hostGrowth});
  int32_t *hyst = upload(std::vector<int32_t>{hostHyst});
  uint8_t *inf = deviceBuffer<uint8_t>(1);
  for (int step = 0; step < 200; ++step) {
    uint8_t flag = overflow(rng);
    copyToDevice(inf, &flag, 1);
    mpcrt_update_loss_scale(&hostScale, &hostGrowth, &hostHyst, &flag, 2.0, 0.5,
                            3, 2, 1.0, 16777216.0);
    updateLossScale(scale, growth, hyst, inf, 2.0, 0.5, 3, 2, 1.0, 16777216.0);
    ASSERT_TRUE(sameBits(download(scale, 1)[0], hostScale)) << "step " << step;
    ASSERT_EQ(download(growth, 1)[0], hostGrowth) << "step " << step;
    ASSERT_EQ(download(hyst, 1)[0], hostHyst) << "step " << step;
  }
}

enum class Kind { Sgd, Momentum, Nesterov, Adam, AdamW, Lamb };

/// One update of 5000 elements on both backends, for every parameter and
/// gradient type pair of the ABI, with and without found_inf.
void compareUpdate(CudaTest &test, std::mt19937 &rng, Kind kind, mpcrt_dtype p,
                   mpcrt_dtype g, bool skip) {
  const int64_t n = 5000;
  std::normal_distribution<double> normal(0, 1);
  auto randomOf = [&](mpcrt_dtype d, double sigma) {
    std::vector<double> v(n);
    for (double &x : v)
      x = normal(rng) * sigma;
    std::vector<uint8_t> bytes(n * bytesOf(d));
    mpcrt_cast(MPCRT_F64, v.data(), d, bytes.data(), n);
    return bytes;
  };
  std::vector<uint8_t> param = randomOf(p, 1), grad = randomOf(g, 512),
                       buf = randomOf(p, 0.1), sq = randomOf(p, 0.1);
  for (size_t i = 0; i < sq.size() / bytesOf(p); ++i) { // v >= 0
    double v;
    mpcrt_cast(p, sq.data() + i * bytesOf(p), MPCRT_F64, &v, 1);
    v = std::fabs(v);
    mpcrt_cast(MPCRT_F64, &v, p, sq.data() + i * bytesOf(p), 1);
  }
  float lr = 0.01f, inv = 1.0f / 512;
  int32_t step = 3;
  uint8_t found = skip;
  std::vector<uint16_t> copyHost(n);

  auto dev = [&](const std::vector<uint8_t> &host) {
    return test.upload(host);
  };
  uint8_t *dParam = dev(param), *dGrad = dev(grad), *dBuf = dev(buf),
          *dSq = dev(sq);
  float *dLr = test.upload(std::vector<float>{lr});
  float *dInv = test.upload(std::vector<float>{inv});
  int32_t *dStep = test.upload(std::vector<int32_t>{step});
  uint8_t *dFound = test.upload(std::vector<uint8_t>{found});
  uint16_t *dCopy = test.deviceBuffer<uint16_t>(n);

  void *hp = param.data(), *hb = buf.data(), *hs = sq.data();
  const void *hg = grad.data();
  bool lamb = kind == Kind::Lamb;
  bool adam = kind == Kind::Adam || kind == Kind::AdamW || lamb;
  bool decoupled = kind == Kind::AdamW || lamb;
  double momentum = kind == Kind::Sgd ? 0 : 0.9;
  auto cpu = [&]() {
#define CASE(SUFFIX, PT, GT, PD, GD)                                           \
  if (p == PD && g == GD) {                                                    \
    if (adam)                                                                  \
      mpcrt_adam_update_##SUFFIX(                                              \
          static_cast<PT *>(hp), static_cast<const GT *>(hg),                  \
          static_cast<PT *>(hb), static_cast<PT *>(hs), &lr, &step, &found,    \
          &inv, MPCRT_F16, copyHost.data(), n, 0.9, 0.999, 1e-8, 0.01,         \
          decoupled, 1, lamb);                                                 \
    else                                                                       \
      mpcrt_sgd_update_##SUFFIX(                                               \
          static_cast<PT *>(hp), static_cast<const GT *>(hg), &lr,             \
          kind == Kind::Sgd ? nullptr : static_cast<PT *>(hb), &found, &inv,   \
          MPCRT_F16, copyHost.data(), n, momentum, 0.0,                        \
          kind == Kind::Nesterov, 1e-4);                                       \
    return;                                                                    \
  }
    CASE(f32_f16, float, uint16_t, MPCRT_F32, MPCRT_F16)
    CASE(f32_bf16, float, uint16_t, MPCRT_F32, MPCRT_BF16)
    CASE(f32_f32, float, float, MPCRT_F32, MPCRT_F32)
    CASE(f16_f16, uint16_t, uint16_t, MPCRT_F16, MPCRT_F16)
    CASE(bf16_bf16, uint16_t, uint16_t, MPCRT_BF16, MPCRT_BF16)
    CASE(f16_f32, uint16_t, float, MPCRT_F16, MPCRT_F32)
    CASE(bf16_f32, uint16_t, float, MPCRT_BF16, MPCRT_F32)
#undef CASE
  };
  cpu();
  if (adam)
    adamUpdate(p, g, dParam, dGrad, dBuf, dSq, dLr, dStep, dFound, dInv,
               MPCRT_F16, dCopy, n, 0.9, 0.999, 1e-8, 0.01, decoupled, true,
               lamb);
  else
    sgdUpdate(p, g, dParam, dGrad, dLr, kind == Kind::Sgd ? nullptr : dBuf,
              dFound, dInv, MPCRT_F16, dCopy, n, momentum, 0.0,
              kind == Kind::Nesterov, 1e-4);

  // Same arithmetic in the same order; only pow() in Adam's bias
  // correction may differ by an ulp between the device and the host
  // library, so values agree to 2 ulps of their type.
  auto compare = [&](const std::vector<uint8_t> &want, const uint8_t *device,
                     const char *what) {
    std::vector<uint8_t> got = test.download(device, want.size());
    std::vector<double> w(n), o(n);
    mpcrt_cast(p, want.data(), MPCRT_F64, w.data(), n);
    mpcrt_cast(p, got.data(), MPCRT_F64, o.data(), n);
    double ulp = p == MPCRT_F32 ? 0x1p-23 : p == MPCRT_F16 ? 0x1p-10 : 0x1p-7;
    for (int64_t i = 0; i < n; ++i)
      ASSERT_LE(std::fabs(w[i] - o[i]), 2 * ulp * std::fabs(w[i]) + 1e-30)
          << what << " element " << i;
    if (skip) // bit-identical: untouched
      ASSERT_EQ(got, want) << what;
  };
  compare(param, dParam, "param");
  if (kind != Kind::Sgd)
    compare(buf, dBuf, adam ? "exp_avg" : "momentum");
  if (adam)
    compare(sq, dSq, "exp_avg_sq");
  std::vector<uint16_t> gotCopy = test.download(dCopy, n);
  for (int64_t i = 0; i < n; ++i)
    ASSERT_LE(std::abs(int(gotCopy[i]) - int(copyHost[i])), 1)
        << "copy element " << i;
}

TEST_F(Training, OptimizerUpdatesMatchTheReference) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  const std::pair<mpcrt_dtype, mpcrt_dtype> pairs[] = {
      {MPCRT_F32, MPCRT_F16}, {MPCRT_F32, MPCRT_BF16},  {MPCRT_F32, MPCRT_F32},
      {MPCRT_F16, MPCRT_F16}, {MPCRT_BF16, MPCRT_BF16}, {MPCRT_F16, MPCRT_F32},
      {MPCRT_BF16, MPCRT_F32}};
  for (Kind kind : {Kind::Sgd, Kind::Momentum, Kind::Nesterov, Kind::Adam,
                    Kind::AdamW, Kind::Lamb})
    for (auto [p, g] : pairs)
      for (bool skip : {false, true}) {
        SCOPED_TRACE("kind " + std::to_string(int(kind)) + " types " +
                     std::to_string(p) + "/" + std::to_string(g) +
                     (skip ? " skipped" : ""));
        compareUpdate(*this, rng, kind, p, g, skip);
        if (HasFatalFailure())
          return;
      }
}

TEST_F(Training, NumericsChecksMatchTheReference) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  // Five ops over two steps, f32 and f16 values with infs, NaNs and tiny
  // values (many blocks of the kernel compete for one record): the device
  // records equal the CPU's bit for bit (maxima and counts are exact).
  // Ops 0-2 start 16-byte aligned (16 bytes per access, a tail of 3
  // elements one at a time); ops 3 and 4 start one element later (one at a
  // time throughout).
  const int64_t ops = 5, n = 100003;
  std::uniform_real_distribution<float> u(-5, 5);
  std::vector<float> a(n), b(n);
  for (float &v : a)
    v = u(rng);
  for (float &v : b)
    v = u(rng) * 1e-6f;
  a[12345] = NAN;
  a[99999] = -INFINITY;
  b[n - 1] = 1e-40f; // an f32 subnormal in the tail
  std::vector<uint16_t> h(n);
  mpcrt_cast(MPCRT_F32, b.data(), MPCRT_F16, h.data(), n);
  h[n - 2] = 0x7c00; // +inf in the f16 tail
  int32_t hostFirst;
  std::vector<float> hostAmax(2 * ops), hostEventAmax(ops);
  std::vector<int64_t> hostCounts(4 * ops), hostEvents(34);
  int64_t hostStep = 6;
  // The records start zeroed, as the executable's globals do (cudaMalloc
  // leaves memory as it found it; the run-long maxima, the counts and the
  // event ring accumulate from their first values).
  int32_t *first = upload(std::vector<int32_t>{0});
  float *amax = upload(hostAmax), *eventAmax = upload(hostEventAmax);
  int64_t *counts = upload(hostCounts), *events = upload(hostEvents);
  int64_t *step = upload(std::vector<int64_t>{hostStep});
  float *dA = upload(a), *dB = upload(b);
  uint16_t *dH = upload(h);
  // A check of several ops' values at once, each `count` values of `host`
  // from `offset` as op `op`, by the reference and by the kernel (on
  // `device`, the same values).
  struct Value {
    mpcrt_dtype dtype;
    const void *host, *device;
    int64_t count, op;
  };
  auto value = [](const auto &host, const auto *device, int64_t offset,
                  int64_t count, int64_t op) {
    mpcrt_dtype dtype = sizeof(*host.data()) == 2 ? MPCRT_F16 : MPCRT_F32;
    return Value{dtype, host.data() + offset, device + offset, count, op};
  };
  auto check = [&](std::vector<Value> values) {
    std::vector<mpcrt_dtype> dtypes;
    std::vector<const void *> hosts, devices;
    std::vector<int64_t> sizes, indices;
    for (const Value &v : values) {
      dtypes.push_back(v.dtype);
      hosts.push_back(v.host);
      devices.push_back(v.device);
      sizes.push_back(v.count);
      indices.push_back(v.op);
    }
    mpcrt_check_numerics(values.size(), dtypes.data(), hosts.data(),
                         sizes.data(), indices.data(), &hostFirst,
                         hostAmax.data(), hostCounts.data());
    checkNumerics(values.size(), dtypes.data(), devices.data(), sizes.data(),
                  indices.data(), first, amax, counts);
  };
  for (int s = 0; s < 2; ++s) {
    mpcrt_numerics_begin(&hostFirst, hostAmax.data(), ops);
    numericsBegin(first, amax, ops);
    check({value(b, dB, 0, n, 1)});
    check({value(b, dB, 1, n - 4, 4)});
    if (s == 1) // the second step has non-finite ops, checked in one call
      check({value(h, dH, 0, n, 0), value(h, dH, 1, n - 1, 3),
             value(a, dA, 0, n, 2)});
    mpcrt_numerics_end(&hostFirst, ops, &hostStep, hostEvents.data(),
                       hostAmax.data(), hostEventAmax.data());
    numericsEnd(first, ops, step, events, amax, eventAmax);
  }
  EXPECT_EQ(download(first, 1)[0], hostFirst);
  EXPECT_EQ(hostFirst, 0); // the f16 op with the inf, the first in order
  EXPECT_EQ(download(amax, 2 * ops), hostAmax);
  EXPECT_EQ(download(counts, 4 * ops), hostCounts);
  EXPECT_EQ(download(events, 34), hostEvents);
  EXPECT_EQ(download(eventAmax, ops), hostEventAmax);
  EXPECT_EQ(hostEvents[0], 1);
  // The tails' subnormal and inf were counted.
  EXPECT_GE(hostCounts[4 * 1 + 1], 1);
  EXPECT_EQ(hostCounts[4 * 0 + 0], 1);
  EXPECT_EQ(hostCounts[4 * 3 + 0], 1);
}

TEST_F(Training, NumericsChecksOfManyValuesInOneCallMatchTheReference) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  // 150 values in one call (three launches of at most 64), of every
  // float type, empty to several chunks long (a chunk is 32 KiB: 16384
  // f16 values, 4096 f64 ones), 16-byte aligned or one element off, some
  // with an inf, a NaN or subnormals, their op numbers out of order: the
  // records equal the CPU reference's and those of a call per value, bit
  // for bit.
  const mpcrt_dtype types[] = {MPCRT_F16, MPCRT_BF16, MPCRT_F32, MPCRT_F64};
  const int64_t lengths[] = {0, 1, 7, 8, 4095, 4097, 16384, 16391, 40000};
  const int count = 150;
  std::normal_distribution<double> normal(0, 1);
  std::vector<mpcrt_dtype> dtypes;
  std::vector<int64_t> sizes, indices;
  std::vector<std::vector<uint8_t>> hosts;
  std::vector<uint8_t *> buffers;
  std::vector<const void *> onHost, onDevice;
  for (int t = 0; t < count; ++t) {
    mpcrt_dtype d = types[t % 4];
    int64_t n = lengths[(t * 7) % 9], off = t % 3 == 2 ? 1 : 0;
    std::vector<double> x(n + off);
    double scale = t % 5 == 0 ? 1e-6 : t % 5 == 1 ? 1e-9 : 100;
    for (double &e : x)
      e = normal(rng) * scale;
    if (n > 3 && t % 6 == 0)
      x[off + n / 2] = t % 12 ? INFINITY : NAN;
    int64_t bytes = d == MPCRT_F64 ? 8 : d == MPCRT_F32 ? 4 : 2;
    std::vector<uint8_t> data((n + off) * bytes);
    mpcrt_cast(MPCRT_F64, x.data(), d, data.data(), n + off);
    hosts.push_back(data);
    buffers.push_back(upload(data));
    dtypes.push_back(d);
    sizes.push_back(n);
    indices.push_back((t * 37) % count);
  }
  for (int t = 0; t < count; ++t) {
    int64_t bytes = dtypes[t] == MPCRT_F64 ? 8 : dtypes[t] == MPCRT_F32 ? 4 : 2;
    int64_t off = t % 3 == 2 ? bytes : 0;
    onHost.push_back(hosts[t].data() + off);
    onDevice.push_back(buffers[t] + off);
  }
  int32_t hostFirst;
  std::vector<float> hostAmax(2 * count);
  std::vector<int64_t> hostCounts(4 * count);
  int32_t *first = upload(std::vector<int32_t>{0}),
          *single = upload(std::vector<int32_t>{0});
  float *amax = upload(hostAmax), *singleAmax = upload(hostAmax);
  int64_t *counts = upload(hostCounts), *singleCounts = upload(hostCounts);
  mpcrt_numerics_begin(&hostFirst, hostAmax.data(), count);
  numericsBegin(first, amax, count);
  numericsBegin(single, singleAmax, count);
  mpcrt_check_numerics(count, dtypes.data(), onHost.data(), sizes.data(),
                       indices.data(), &hostFirst, hostAmax.data(),
                       hostCounts.data());
  checkNumerics(count, dtypes.data(), onDevice.data(), sizes.data(),
                indices.data(), first, amax, counts);
  for (int t = 0; t < count; ++t)
    checkNumerics(1, &dtypes[t], &onDevice[t], &sizes[t], &indices[t], single,
                  singleAmax, singleCounts);
  EXPECT_EQ(download(first, 1)[0], hostFirst);
  EXPECT_EQ(download(single, 1)[0], hostFirst);
  EXPECT_LT(hostFirst, count); // some value held an inf or a NaN
  EXPECT_EQ(download(amax, 2 * count), hostAmax);
  EXPECT_EQ(download(singleAmax, 2 * count), hostAmax);
  EXPECT_EQ(download(counts, 4 * count), hostCounts);
  EXPECT_EQ(download(singleCounts, 4 * count), hostCounts);
  int64_t values = 0, subnormal = 0;
  for (int t = 0; t < count; ++t) {
    values += hostCounts[4 * t + 3];
    subnormal += hostCounts[4 * t + 2];
  }
  EXPECT_EQ(values, std::accumulate(sizes.begin(), sizes.end(), int64_t(0)));
  EXPECT_GT(subnormal, 0);
}

TEST_F(Training, MultiTensorUpdatesEqualOneLaunchPerTensor) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  // Adam and SGD (momentum, Nesterov) over 40 tensors (more than one
  // launch's 36) of three type pairs, mixed in the list, sizes across
  // several 4096-element chunks and multiples of nothing, with and without
  // copies, 4 elements per access or (parameters misaligned) one; clean
  // and skipped steps: every byte equals what adamUpdate or sgdUpdate
  // gives each tensor.
  std::normal_distribution<double> normal(0, 1);
  const std::pair<mpcrt_dtype, mpcrt_dtype> pairs[] = {
      {MPCRT_F32, MPCRT_F16}, {MPCRT_F32, MPCRT_F32}, {MPCRT_BF16, MPCRT_F32}};
  auto bytes = [](mpcrt_dtype d) { return d == MPCRT_F32 ? 4 : 2; };
  auto values = [&](mpcrt_dtype d, int64_t n, bool positive) {
    std::vector<double> x(n);
    for (double &e : x)
      e = positive ? std::fabs(normal(rng)) : normal(rng);
    std::vector<uint8_t> out(n * bytes(d));
    mpcrt_cast(MPCRT_F64, x.data(), d, out.data(), n);
    return out;
  };
  const int count = 40;
  std::vector<mpcrt_dtype> pd, gd, cd;
  std::vector<int64_t> sizes;
  std::vector<std::vector<uint8_t>> param, grad, m, v;
  for (int t = 0; t < count; ++t) {
    auto [p, g] = pairs[t % 3];
    int64_t n = 1 + 997 * int64_t(t % 11);
    pd.push_back(p);
    gd.push_back(g);
    cd.push_back(t % 2 ? MPCRT_F16 : p);
    sizes.push_back(n);
    param.push_back(values(p, n, false));
    grad.push_back(values(g, n, false));
    m.push_back(values(p, n, false));
    v.push_back(values(p, n, true));
  }
  const float *lr = upload(std::vector<float>{0.01f});
  const float *inv = upload(std::vector<float>{1.0f / 256});
  const int32_t *step = upload(std::vector<int32_t>{3});
  // 0: SGD, 1: Adam, 2: LAMB (whose trust ratio sums its norms per
  // 4096-element chunk in the list, so a parameter or copy may differ by
  // an ulp; the moments do not depend on it).
  for (int adam = 0; adam < 3; ++adam)
    for (uint8_t skip : {0, 1}) {
      SCOPED_TRACE(std::string(adam == 2 ? "lamb"
                               : adam    ? "adam"
                                         : "sgd") +
                   (skip ? " skipped" : " clean"));
      const uint8_t *found = upload(std::vector<uint8_t>{skip});
      // Device copies for each side: [0] one launch per tensor, [1] multi.
      std::vector<void *> dp[2], dm[2], dv[2], dc[2];
      std::vector<const void *> dg;
      // Every fourth tensor's parameters one element past an aligned
      // address in the list (one element per access; the others 4).
      auto offsetUpload = [&](const std::vector<uint8_t> &bytesOfIt,
                              size_t offset) {
        std::vector<uint8_t> padded(offset, 0);
        padded.insert(padded.end(), bytesOfIt.begin(), bytesOfIt.end());
        return static_cast<void *>(upload(padded) + offset);
      };
      for (int t = 0; t < count; ++t) {
        dg.push_back(upload(grad[t]));
        for (int side = 0; side < 2; ++side) {
          dp[side].push_back(side == 1 && t % 4 == 3
                                 ? offsetUpload(param[t], bytes(pd[t]))
                                 : upload(param[t]));
          dm[side].push_back(upload(m[t]));
          dv[side].push_back(upload(v[t]));
          dc[side].push_back(t % 2
                                 ? static_cast<void *>(upload(
                                       std::vector<uint16_t>(sizes[t], 0xffff)))
                                 : nullptr);
        }
        if (adam)
          adamUpdate(pd[t], gd[t], dp[0][t], dg[t], dm[0][t], dv[0][t], lr,
                     step, found, inv, cd[t], dc[0][t], sizes[t], 0.9, 0.999,
                     1e-8, 0.01, true, true, adam == 2);
        else
          sgdUpdate(pd[t], gd[t], dp[0][t], dg[t], lr, dm[0][t], found, inv,
                    cd[t], dc[0][t], sizes[t], 0.9, 0, true, 0.01);
      }
      if (adam)
        adamUpdateMulti(count, pd.data(), gd.data(), dp[1].data(), dg.data(),
                        dm[1].data(), dv[1].data(), cd.data(), dc[1].data(),
                        sizes.data(), lr, step, found, inv, 0.9, 0.999, 1e-8,
                        0.01, true, true, adam == 2);
      else
        sgdUpdateMulti(count, pd.data(), gd.data(), dp[1].data(), dg.data(),
                       dm[1].data(), cd.data(), dc[1].data(), sizes.data(), lr,
                       found, inv, 0.9, 0, true, 0.01);
      for (int t = 0; t < count; ++t) {
        SCOPED_TRACE("tensor " + std::to_string(t));
        size_t n = sizes[t] * bytes(pd[t]);
        auto at = [&](std::vector<void *> *side, int s) {
          return download(static_cast<const uint8_t *>(side[s][t]), n);
        };
        // Within `ulps` units of the last place of type d.
        auto near = [&](mpcrt_dtype d, const std::vector<uint8_t> &a,
                        const std::vector<uint8_t> &b, int ulps) {
          int64_t m = int64_t(a.size()) / bytes(d);
          std::vector<double> x(m), y(m);
          mpcrt_cast(d, a.data(), MPCRT_F64, x.data(), m);
          mpcrt_cast(d, b.data(), MPCRT_F64, y.data(), m);
          double ulp = d == MPCRT_F32   ? 0x1p-23
                       : d == MPCRT_F16 ? 0x1p-10
                                        : 0x1p-7;
          for (int64_t e = 0; e < m; ++e)
            ASSERT_LE(std::fabs(x[e] - y[e]),
                      ulps * ulp * std::max(std::fabs(x[e]), 0x1p-14))
                << "element " << e;
        };
        if (adam == 2)
          near(pd[t], at(dp, 1), at(dp, 0), 1);
        else
          EXPECT_EQ(at(dp, 1), at(dp, 0));
        EXPECT_EQ(at(dm, 1), at(dm, 0));
        EXPECT_EQ(at(dv, 1), at(dv, 0));
        if (dc[0][t]) {
          std::vector<uint16_t>
              c1 = download(static_cast<const uint16_t *>(dc[1][t]), sizes[t]),
              c0 = download(static_cast<const uint16_t *>(dc[0][t]), sizes[t]);
          if (adam == 2) {
            std::vector<uint8_t> b1(c1.size() * 2), b0(c0.size() * 2);
            std::memcpy(b1.data(), c1.data(), b1.size());
            std::memcpy(b0.data(), c0.data(), b0.size());
            near(MPCRT_F16, b1, b0, 1);
          } else {
            EXPECT_EQ(c1, c0);
          }
        }
        // A one-element step may round back to the bf16 value it had.
        if (!skip && sizes[t] > 1)
          EXPECT_NE(at(dp, 1), param[t]);
      }
    }
}

} // namespace
