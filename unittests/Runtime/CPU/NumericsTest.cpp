//===- NumericsTest.cpp - the numerics checks' records --------------------===//

#include "mpc/Runtime/mpcrt.h"
#include "gtest/gtest.h"

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

/// mpcrt_check_numerics of one value.
void checkOne(mpcrt_dtype dtype, const void *input, int64_t n, int64_t index,
              int32_t *first, float *amax, int64_t *counts) {
  mpcrt_check_numerics(1, &dtype, &input, &n, &index, first, amax, counts);
}

TEST(Numerics, RecordsRangesCountsAndTheFirstNonFiniteOp) {
  unsigned seed = std::random_device()();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-3, 3);
  const int64_t ops = 4, n = 1000;
  int32_t first = -7;
  std::vector<float> amax(2 * ops, -1.0f), eventAmax(ops, -1.0f);
  std::vector<int64_t> counts(4 * ops, 0), events(34, 0);
  int64_t step = 41;
  std::vector<float> a(n), b(n);
  for (float &v : a)
    v = u(rng);
  for (float &v : b)
    v = u(rng) * 1e-5f; // many below f16's normals, some below subnormals
  a[17] = 1234.5f;      // the known largest
  b[3] = 0x1p-26f;
  b[4] = 0x1p-20f;
  b[5] = 0.0f; // zero is neither
  // Step 1: op 3 overflows, then op 1: op 1 is the first in program order.
  mpcrt_numerics_begin(&first, amax.data(), ops);
  EXPECT_EQ(first, ops);
  for (int64_t i = 0; i < ops; ++i)
    EXPECT_EQ(amax[2 * i], 0.0f) << "the step's column is reset";
  checkOne(MPCRT_F32, a.data(), n, 0, &first, amax.data(), counts.data());
  std::vector<float> bad = a;
  bad[9] = INFINITY;
  bad[10] = NAN;
  checkOne(MPCRT_F32, bad.data(), n, 3, &first, amax.data(), counts.data());
  checkOne(MPCRT_F32, bad.data(), n, 1, &first, amax.data(), counts.data());
  checkOne(MPCRT_F32, b.data(), n, 2, &first, amax.data(), counts.data());
  EXPECT_EQ(first, 1);
  EXPECT_EQ(amax[0], 1234.5f); // exact: the largest finite |x|
  EXPECT_EQ(amax[1], 1234.5f);
  EXPECT_EQ(amax[6], 1234.5f) << "non-finite values are left out of the range";
  EXPECT_EQ(counts[4 * 3 + 0], 2);
  EXPECT_EQ(counts[4 * 0 + 0], 0);
  int64_t belowNormal = 0, belowSubnormal = 0;
  for (float v : b) {
    belowNormal += v != 0 && std::fabs(v) < 0x1p-14f;
    belowSubnormal += v != 0 && std::fabs(v) < 0x1p-24f;
  }
  EXPECT_GE(belowSubnormal, 1);
  EXPECT_EQ(counts[4 * 2 + 1], belowNormal);
  EXPECT_EQ(counts[4 * 2 + 2], belowSubnormal);
  EXPECT_EQ(counts[4 * 2 + 3], n);
  mpcrt_numerics_end(&first, ops, &step, events.data(), amax.data(),
                     eventAmax.data());
  EXPECT_EQ(events[0], 1);
  EXPECT_EQ(events[2], 41);
  EXPECT_EQ(events[3], 1);
  EXPECT_EQ(eventAmax[0], 1234.5f);
  // Step 2: all finite, smaller values: no event, the step's range is its
  // own, the run's keeps the maximum, counts add up.
  mpcrt_numerics_begin(&first, amax.data(), ops);
  for (float &v : a)
    v *= 0.5f;
  checkOne(MPCRT_F32, a.data(), n, 0, &first, amax.data(), counts.data());
  mpcrt_numerics_end(&first, ops, &step, events.data(), amax.data(),
                     eventAmax.data());
  EXPECT_EQ(first, ops);
  EXPECT_EQ(events[0], 1);
  EXPECT_EQ(amax[0], 617.25f);
  EXPECT_EQ(amax[1], 1234.5f);
  EXPECT_EQ(counts[4 * 0 + 3], 2 * n);
  // f16 and f64 inputs: an f16 inf, and an f64 range rounded up to f32.
  std::vector<uint16_t> h = {mpcrt_f32_to_f16(2.0f), 0x7c00};
  mpcrt_numerics_begin(&first, amax.data(), ops);
  checkOne(MPCRT_F16, h.data(), 2, 2, &first, amax.data(), counts.data());
  EXPECT_EQ(first, 2);
  EXPECT_EQ(amax[4], 2.0f);
  std::vector<double> d = {1.0 + 0x1p-40};
  checkOne(MPCRT_F64, d.data(), 1, 3, &first, amax.data(), counts.data());
  EXPECT_EQ(amax[6], std::nextafter(1.0f, 2.0f)) << "never understated";
}

TEST(Numerics, TheEventRingKeepsTheLastSixteen) {
  const int64_t ops = 2;
  int32_t first;
  std::vector<float> amax(2 * ops), eventAmax(ops);
  std::vector<int64_t> counts(4 * ops), events(34, 0);
  float inf = std::numeric_limits<float>::infinity();
  for (int64_t step = 0; step < 20; ++step) {
    mpcrt_numerics_begin(&first, amax.data(), ops);
    checkOne(MPCRT_F32, &inf, 1, step % 2, &first, amax.data(), counts.data());
    mpcrt_numerics_end(&first, ops, &step, events.data(), amax.data(),
                       eventAmax.data());
  }
  EXPECT_EQ(events[0], 20);
  for (int64_t e = 4; e < 20; ++e) {
    EXPECT_EQ(events[2 + 2 * (e % 16)], e);
    EXPECT_EQ(events[3 + 2 * (e % 16)], e % 2);
  }
}

TEST(Numerics, OneCallRecordsEachValueAsItsOwnOp) {
  // Three values of three types in one call, their op numbers out of
  // order: the records of three calls, the first non-finite op the
  // smallest number whatever its place in the list.
  const int64_t ops = 5;
  std::vector<float> f = {1.5f, -0x1p-20f, NAN};
  std::vector<uint16_t> h = {mpcrt_f32_to_f16(-3.0f), 0x7c00};
  std::vector<double> d = {0x1p-30, 2.0};
  const mpcrt_dtype dtypes[] = {MPCRT_F32, MPCRT_F16, MPCRT_F64};
  const void *inputs[] = {f.data(), h.data(), d.data()};
  const int64_t sizes[] = {3, 2, 2}, indices[] = {4, 1, 2};
  int32_t first, oneFirst;
  std::vector<float> amax(2 * ops), oneAmax(2 * ops);
  std::vector<int64_t> counts(4 * ops), oneCounts(4 * ops);
  mpcrt_numerics_begin(&first, amax.data(), ops);
  mpcrt_numerics_begin(&oneFirst, oneAmax.data(), ops);
  mpcrt_check_numerics(3, dtypes, inputs, sizes, indices, &first, amax.data(),
                       counts.data());
  for (int t = 0; t < 3; ++t)
    checkOne(dtypes[t], inputs[t], sizes[t], indices[t], &oneFirst,
             oneAmax.data(), oneCounts.data());
  EXPECT_EQ(first, 1); // the f16 inf, listed second
  EXPECT_EQ(first, oneFirst);
  EXPECT_EQ(amax, oneAmax);
  EXPECT_EQ(counts, oneCounts);
  EXPECT_EQ(amax[2 * 4], 1.5f);
  EXPECT_EQ(amax[2 * 1], 3.0f);
  EXPECT_EQ(amax[2 * 2], 2.0f);
  EXPECT_EQ(counts[4 * 4 + 0], 1); // the NaN
  EXPECT_EQ(counts[4 * 4 + 1], 1); // 2^-20, below f16's normals
  EXPECT_EQ(counts[4 * 2 + 2], 1); // 2^-30, below its subnormals
  EXPECT_EQ(counts[4 * 0 + 3], 0); // op 0 was not checked
}

} // namespace
