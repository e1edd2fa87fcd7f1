//===- Float16Test.cpp - f16/bf16 conversions against APFloat -------------===//
//
// LLVM's APFloat is the oracle: an independent, software IEEE
// implementation. Conversions must match it bit for bit (NaNs: a NaN of the
// same sign).
//
//===----------------------------------------------------------------------===//

#include "mpc/Runtime/mpcrt.h"

#include "llvm/ADT/APFloat.h"
#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <random>

namespace {

uint32_t bitsOf(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}
float floatOf(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

uint16_t oracleNarrow(const llvm::fltSemantics &from, llvm::APInt bits,
                      const llvm::fltSemantics &to) {
  llvm::APFloat value(from, bits);
  bool lost;
  value.convert(to, llvm::APFloat::rmNearestTiesToEven, &lost);
  return static_cast<uint16_t>(value.bitcastToAPInt().getZExtValue());
}

bool isNaN16(uint16_t h, bool bf16) {
  return bf16 ? (h & 0x7f80) == 0x7f80 && (h & 0x7f)
              : (h & 0x7c00) == 0x7c00 && (h & 0x3ff);
}

/// Checks f32 -> 16-bit conversion of `x` against the oracle.
void expectNarrow(float x, bool bf16) {
  const llvm::fltSemantics &to =
      bf16 ? llvm::APFloat::BFloat() : llvm::APFloat::IEEEhalf();
  uint16_t expected =
      oracleNarrow(llvm::APFloat::IEEEsingle(), llvm::APInt(32, bitsOf(x)), to);
  uint16_t got = bf16 ? mpcrt_f32_to_bf16(x) : mpcrt_f32_to_f16(x);
  if (std::isnan(x)) {
    EXPECT_TRUE(isNaN16(got, bf16)) << std::hex << bitsOf(x);
    EXPECT_EQ(got & 0x8000, expected & 0x8000) << std::hex << bitsOf(x);
    return;
  }
  EXPECT_EQ(got, expected) << "f32 bits 0x" << std::hex << bitsOf(x) << " ("
                           << x << ")";
}

TEST(Float16, EveryF16WidensExactly) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    float got = mpcrt_f16_to_f32(static_cast<uint16_t>(h));
    llvm::APFloat oracle(llvm::APFloat::IEEEhalf(), llvm::APInt(16, h));
    if (oracle.isNaN()) {
      ASSERT_TRUE(std::isnan(got)) << h;
      continue;
    }
    ASSERT_EQ(bitsOf(got), bitsOf(oracle.convertToFloat())) << h;
    // And narrows back to itself.
    ASSERT_EQ(mpcrt_f32_to_f16(got), h) << h;
  }
}

TEST(Float16, EveryBF16WidensExactly) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    float got = mpcrt_bf16_to_f32(static_cast<uint16_t>(b));
    llvm::APFloat oracle(llvm::APFloat::BFloat(), llvm::APInt(16, b));
    if (oracle.isNaN()) {
      ASSERT_TRUE(std::isnan(got)) << b;
      continue;
    }
    ASSERT_EQ(bitsOf(got), bitsOf(oracle.convertToFloat())) << b;
    ASSERT_EQ(mpcrt_f32_to_bf16(got), b) << b;
  }
}

TEST(Float16, EdgeCases) {
  for (bool bf16 : {false, true}) {
    SCOPED_TRACE(bf16 ? "bf16" : "f16");
    const float cases[] = {
        0.0f, -0.0f, 1.0f, -1.0f,
        // Ties between 1 and the next f16 (1 + 2^-10) / bf16 (1 + 2^-7).
        1.0f + std::ldexp(1.0f, -11), 1.0f + 3 * std::ldexp(1.0f, -11),
        1.0f + std::ldexp(1.0f, -8), 1.0f + 3 * std::ldexp(1.0f, -8),
        // f16 largest finite, the overflow threshold and beyond.
        65504.0f, 65519.0f, 65519.99f, 65520.0f, 70000.0f, 3.4e38f,
        // f16 smallest normal, subnormals and the round-to-zero edge.
        std::ldexp(1.0f, -14), std::ldexp(1.0f, -15), std::ldexp(1.0f, -24),
        std::ldexp(1.0f, -25), std::ldexp(1.5f, -25), std::ldexp(1.0f, -26),
        std::ldexp(3.0f, -25), std::ldexp(1023.5f, -24),
        // f32 subnormals (bf16 keeps them).
        std::ldexp(1.0f, -130), std::ldexp(1.0f, -149), INFINITY, -INFINITY,
        NAN, -NAN, floatOf(0x7f800001u), floatOf(0xffc12345u)};
    for (float x : cases)
      expectNarrow(x, bf16);
  }
}

TEST(Float16, RandomF32BitPatterns) {
  std::random_device device;
  unsigned seed = device();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  for (int i = 0; i < 2000000; ++i) {
    float x = floatOf(rng());
    expectNarrow(x, /*bf16=*/false);
    expectNarrow(x, /*bf16=*/true);
    if (HasFailure())
      return;
  }
}

// f64 -> f16 must round once: via plain f32 it would round twice.
TEST(Float16, CastFromF64RoundsOnce) {
  // 1 + 2^-11 + 2^-40 lies just above the tie between 1 and 1 + 2^-10: the
  // right answer rounds up; f64 -> f32 -> f16 would see an exact tie and
  // round to even (1.0).
  double trap = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  std::random_device device;
  unsigned seed = device();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  std::vector<double> values = {trap, -trap, 1e300, -1e-300, 65519.999999999};
  for (int i = 0; i < 200000; ++i) {
    uint64_t bits = rng();
    double d;
    std::memcpy(&d, &bits, 8);
    values.push_back(d);
    // Values near f16 ties, where double rounding bites.
    values.push_back(
        std::ldexp(1.0 + (2 * static_cast<double>(rng() % 1024) + 1) / 2048.0 +
                       std::ldexp(1.0, -45),
                   static_cast<int>(rng() % 30) - 15));
  }
  for (bool bf16 : {false, true}) {
    mpcrt_dtype to = bf16 ? MPCRT_BF16 : MPCRT_F16;
    const llvm::fltSemantics &sem =
        bf16 ? llvm::APFloat::BFloat() : llvm::APFloat::IEEEhalf();
    std::vector<uint16_t> out(values.size());
    mpcrt_cast(MPCRT_F64, values.data(), to, out.data(),
               static_cast<int64_t>(values.size()));
    for (size_t i = 0; i < values.size(); ++i) {
      uint64_t bits;
      std::memcpy(&bits, &values[i], 8);
      uint16_t expected =
          oracleNarrow(llvm::APFloat::IEEEdouble(), llvm::APInt(64, bits), sem);
      if (std::isnan(values[i]))
        ASSERT_TRUE(isNaN16(out[i], bf16));
      else
        ASSERT_EQ(out[i], expected) << (bf16 ? "bf16 " : "f16 ") << values[i]
                                    << " bits 0x" << std::hex << bits;
    }
  }
}

} // namespace
