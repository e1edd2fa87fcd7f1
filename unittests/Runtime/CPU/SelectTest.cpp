//===- SelectTest.cpp - mpcrt_compare and mpcrt_where ---------------------===//
//
// Comparisons and selection against references written here, on fresh
// random inputs, with broadcasting: every predicate on f32, f16 (compared
// after exact widening), i32, i64 beyond 2^53 (compared as integers, not
// through a double) and masks; NaN unequal to everything; where copying
// the chosen value's bits.
//
//===----------------------------------------------------------------------===//

#include "mpc/Runtime/mpcrt.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace {

const mpcrt_predicate kPredicates[] = {MPCRT_EQ, MPCRT_NE, MPCRT_LT,
                                       MPCRT_LE, MPCRT_GT, MPCRT_GE};

template <typename T> bool reference(mpcrt_predicate p, T a, T b) {
  switch (p) {
  case MPCRT_EQ:
    return a == b;
  case MPCRT_NE:
    return !(a == b);
  case MPCRT_LT:
    return a < b;
  case MPCRT_LE:
    return a <= b;
  case MPCRT_GT:
    return a > b;
  case MPCRT_GE:
    return a >= b;
  }
  return false;
}

// [3, 4] against [4] broadcast over the rows.
const int64_t kShape[] = {3, 4};
const int64_t kDense[] = {4, 1};
const int64_t kRow[] = {0, 1};

TEST(Select, CompareFloatsWithBroadcasting) {
  std::mt19937 rng(std::random_device{}());
  std::uniform_int_distribution<int> small(-3, 3);
  std::vector<float> a(12), b(4);
  // Few distinct values, so that equal pairs occur; one NaN.
  for (float &x : a)
    x = small(rng) * 0.5f;
  for (float &x : b)
    x = small(rng) * 0.5f;
  a[5] = NAN;
  for (mpcrt_predicate p : kPredicates) {
    std::vector<uint8_t> out(12, 7);
    mpcrt_compare(p, MPCRT_F32, a.data(), kDense, b.data(), kRow, out.data(),
                  kShape, 2);
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 4; ++j)
        EXPECT_EQ(out[i * 4 + j], reference(p, a[i * 4 + j], b[j]) ? 1 : 0)
            << "predicate " << p << " at " << i << "," << j;
    EXPECT_EQ(out[5], p == MPCRT_NE ? 1 : 0) << "NaN, predicate " << p;
  }
}

TEST(Select, CompareHalvesAsTheirValues) {
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<float> u(-2, 2);
  std::vector<uint16_t> a(12), b(4);
  std::vector<float> wa(12), wb(4);
  for (int i = 0; i < 12; ++i)
    wa[i] = mpcrt_f16_to_f32(a[i] = mpcrt_f32_to_f16(u(rng)));
  for (int j = 0; j < 4; ++j)
    wb[j] = mpcrt_f16_to_f32(b[j] = a[j + 4]); // some equal pairs
  for (mpcrt_predicate p : kPredicates) {
    std::vector<uint8_t> out(12);
    mpcrt_compare(p, MPCRT_F16, a.data(), kDense, b.data(), kRow, out.data(),
                  kShape, 2);
    for (int i = 0; i < 12; ++i)
      EXPECT_EQ(out[i], reference(p, wa[i], wb[i % 4]) ? 1 : 0);
  }
}

TEST(Select, CompareIntegersExactly) {
  // 2^53 + 1 and 2^53 are one double apart only as integers.
  std::vector<int64_t> a = {(int64_t(1) << 53) + 1, -5, 7, 0};
  std::vector<int64_t> b = {int64_t(1) << 53, -5, 8, 0};
  const int64_t shape[] = {4}, dense[] = {1};
  std::vector<uint8_t> out(4);
  mpcrt_compare(MPCRT_EQ, MPCRT_ELEMENT_I64, a.data(), dense, b.data(), dense,
                out.data(), shape, 1);
  EXPECT_EQ(out, (std::vector<uint8_t>{0, 1, 0, 1}));
  std::vector<int32_t> c = {3, -1, 0, 9}, zero = {0};
  const int64_t scalar[] = {0};
  mpcrt_compare(MPCRT_GT, MPCRT_ELEMENT_I32, c.data(), dense, zero.data(),
                scalar, out.data(), shape, 1);
  EXPECT_EQ(out, (std::vector<uint8_t>{1, 0, 0, 1}));
  std::vector<uint8_t> m = {1, 0, 1, 0}, f = {0};
  mpcrt_compare(MPCRT_EQ, MPCRT_ELEMENT_BOOL, m.data(), dense, f.data(), scalar,
                out.data(), shape, 1);
  EXPECT_EQ(out, (std::vector<uint8_t>{0, 1, 0, 1})); // not
}

TEST(Select, WhereCopiesTheChosenBits) {
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<float> u(-1, 1);
  std::bernoulli_distribution coin(0.5);
  // condition [3, 1], lhs [3, 4], rhs a scalar (-inf: masking).
  std::vector<uint8_t> cond(3);
  std::vector<uint16_t> lhs(12), rhs = {mpcrt_f32_to_f16(-INFINITY)};
  for (uint8_t &c : cond)
    c = coin(rng);
  for (uint16_t &x : lhs)
    x = mpcrt_f32_to_f16(u(rng));
  const int64_t cs[] = {1, 0}, scalar[] = {0, 0};
  std::vector<uint16_t> out(12);
  mpcrt_where(2, cond.data(), cs, lhs.data(), kDense, rhs.data(), scalar,
              out.data(), kShape, 2);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j)
      EXPECT_EQ(out[i * 4 + j], cond[i] ? lhs[i * 4 + j] : rhs[0]);
  // f64 values, every element its own condition.
  std::vector<double> a(12), b(12), o(12);
  std::vector<uint8_t> c(12);
  for (int i = 0; i < 12; ++i) {
    a[i] = u(rng);
    b[i] = u(rng);
    c[i] = coin(rng);
  }
  mpcrt_where(8, c.data(), kDense, a.data(), kDense, b.data(), kDense, o.data(),
              kShape, 2);
  for (int i = 0; i < 12; ++i)
    EXPECT_EQ(o[i], c[i] ? a[i] : b[i]);
}

} // namespace
