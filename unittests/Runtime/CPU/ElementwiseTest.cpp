//===- ElementwiseTest.cpp - elementwise, reductions, cross-entropy -------===//
//
// Float64 references written here, on fresh random inputs that are exact in
// the storage type. Gradients are also checked against central finite
// differences of the float64 forward, independently of the derivative
// formulas.
//
//===----------------------------------------------------------------------===//

#include "../CrossEntropyCheck.h"
#include "TestSupport.h"
#include "mpc/Runtime/mpcrt.h"

#include "gtest/gtest.h"

#include <cmath>
#include <functional>
#include <random>
#include <vector>

namespace {

using mpcrt::test::numericGradient;

struct Buffer {
  mpcrt_dtype dtype;
  std::vector<uint16_t> half;
  std::vector<float> single;
  explicit Buffer(mpcrt_dtype dtype, size_t n) : dtype(dtype) {
    half.resize(n);
    single.resize(n);
  }
  void set(size_t i, double v) {
    if (dtype == MPCRT_F16)
      half[i] = mpcrt_f32_to_f16(static_cast<float>(v));
    else if (dtype == MPCRT_BF16)
      half[i] = mpcrt_f32_to_bf16(static_cast<float>(v));
    else
      single[i] = static_cast<float>(v);
  }
  double at(size_t i) const {
    if (dtype == MPCRT_F16)
      return mpcrt_f16_to_f32(half[i]);
    if (dtype == MPCRT_BF16)
      return mpcrt_bf16_to_f32(half[i]);
    return single[i];
  }
  void *data() {
    return dtype == MPCRT_F32 ? static_cast<void *>(single.data())
                              : static_cast<void *>(half.data());
  }
};

double roundoff(mpcrt_dtype d) {
  return d == MPCRT_F16    ? std::ldexp(1.0, -11)
         : d == MPCRT_BF16 ? std::ldexp(1.0, -8)
                           : std::ldexp(1.0, -24);
}

/// Calls the f16 or bf16 instance (f32 takes float buffers: called apart).
#define DISPATCH(NAME, DTYPE, ...)                                             \
  do {                                                                         \
    if ((DTYPE) == MPCRT_F16)                                                  \
      NAME##_f16(__VA_ARGS__);                                                 \
    else                                                                       \
      NAME##_bf16(__VA_ARGS__);                                                \
  } while (0)

template <typename T> T *as(Buffer &b) { return static_cast<T *>(b.data()); }

double phi(double x) { return 0.5 * (1 + std::erf(x / std::sqrt(2.0))); }

double reference(mpcrt_unary_op op, double x) {
  switch (op) {
  case MPCRT_NEG:
    return -x;
  case MPCRT_EXP:
    return std::exp(x);
  case MPCRT_LOG:
    return std::log(x);
  case MPCRT_SQRT:
    return std::sqrt(x);
  case MPCRT_RSQRT:
    return 1 / std::sqrt(x);
  case MPCRT_TANH:
    return std::tanh(x);
  case MPCRT_SIGMOID:
    return 1 / (1 + std::exp(-x));
  case MPCRT_RELU:
    return x <= 0 ? 0 : x;
  case MPCRT_GELU:
    return x * phi(x);
  case MPCRT_GELU_TANH:
    return 0.5 * x *
           (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
  case MPCRT_SIN:
    return std::sin(x);
  case MPCRT_COS:
    return std::cos(x);
  }
  return NAN;
}

class ElementwiseTest : public ::testing::TestWithParam<mpcrt_dtype> {
protected:
  ElementwiseTest() : seed(std::random_device()()), rng(seed) {}
  double draw(double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(rng);
  }
  unsigned seed;
  std::mt19937 rng;
};

TEST_P(ElementwiseTest, UnaryMatchesFloat64) {
  mpcrt_dtype dtype = GetParam();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const int n = 1000;
  for (int o = MPCRT_NEG; o <= MPCRT_COS; ++o) {
    auto op = static_cast<mpcrt_unary_op>(o);
    bool positive = op == MPCRT_LOG || op == MPCRT_SQRT || op == MPCRT_RSQRT;
    Buffer in(dtype, n), out(dtype, n);
    for (int i = 0; i < n; ++i)
      in.set(i, positive ? draw(0.01, 8) : draw(-6, 6));
    if (dtype == MPCRT_F32)
      mpcrt_unary_f32(op, as<float>(in), as<float>(out), n);
    else
      DISPATCH(mpcrt_unary, dtype, op, as<uint16_t>(in), as<uint16_t>(out), n);
    for (int i = 0; i < n; ++i) {
      double ref = reference(op, in.at(i));
      ASSERT_NEAR(out.at(i), ref,
                  roundoff(dtype) * std::fabs(ref) +
                      8 * std::ldexp(1.0, -24) * (1 + std::fabs(ref)))
          << "op " << o << " x " << in.at(i);
    }
  }
}

TEST_P(ElementwiseTest, GradientsMatchFiniteDifferences) {
  mpcrt_dtype dtype = GetParam();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const int n = 500;
  for (auto op :
       {MPCRT_TANH, MPCRT_SIGMOID, MPCRT_RELU, MPCRT_GELU, MPCRT_GELU_TANH}) {
    Buffer grad(dtype, n), saved(dtype, n), out(dtype, n);
    std::vector<double> xs(n);
    for (int i = 0; i < n; ++i) {
      double x = draw(-4, 4);
      if (op == MPCRT_RELU && std::fabs(x) < 1e-3)
        x = 0.5; // not at the kink
      grad.set(i, draw(-2, 2));
      // tanh and sigmoid save their output.
      Buffer one(dtype, 1);
      one.set(0, x);
      xs[i] = one.at(0);
      bool savesOutput = op == MPCRT_TANH || op == MPCRT_SIGMOID;
      saved.set(i, savesOutput ? reference(op, xs[i]) : xs[i]);
    }
    if (dtype == MPCRT_F32)
      mpcrt_unary_grad_f32(op, as<float>(grad), as<float>(saved),
                           as<float>(out), n);
    else
      DISPATCH(mpcrt_unary_grad, dtype, op, as<uint16_t>(grad),
               as<uint16_t>(saved), as<uint16_t>(out), n);
    for (int i = 0; i < n; ++i) {
      // For tanh/sigmoid the kernel sees y rounded to the storage type.
      double x = xs[i];
      if (op == MPCRT_TANH)
        x = std::atanh(saved.at(i));
      if (op == MPCRT_SIGMOID)
        x = -std::log(1 / saved.at(i) - 1);
      double h = 1e-6;
      double fd = (reference(op, x + h) - reference(op, x - h)) / (2 * h);
      double ref = grad.at(i) * fd;
      ASSERT_NEAR(out.at(i), ref,
                  roundoff(dtype) * std::fabs(ref) +
                      1e-5 * (1 + std::fabs(ref)))
          << "op " << op << " x " << x;
    }
  }
}

TEST_P(ElementwiseTest, ReluPropagatesNaN) {
  mpcrt_dtype dtype = GetParam();
  Buffer in(dtype, 1), out(dtype, 1);
  in.set(0, NAN);
  if (dtype == MPCRT_F32)
    mpcrt_unary_f32(MPCRT_RELU, as<float>(in), as<float>(out), 1);
  else
    DISPATCH(mpcrt_unary, dtype, MPCRT_RELU, as<uint16_t>(in),
             as<uint16_t>(out), 1);
  EXPECT_TRUE(std::isnan(out.at(0)));
}

TEST_P(ElementwiseTest, BinaryBroadcastsWithStrides) {
  mpcrt_dtype dtype = GetParam();
  SCOPED_TRACE("seed " + std::to_string(seed));
  // [3, 4, 5] op [4, 1] (broadcast over dims 0 and 2).
  const int64_t shape[] = {3, 4, 5};
  const int64_t ls[] = {20, 5, 1}, rs[] = {0, 1, 0};
  Buffer lhs(dtype, 60), rhs(dtype, 4), out(dtype, 60);
  for (int i = 0; i < 60; ++i)
    lhs.set(i, draw(0.5, 3));
  for (int i = 0; i < 4; ++i)
    rhs.set(i, draw(0.5, 2));
  for (int o = MPCRT_ADD; o <= MPCRT_POW; ++o) {
    auto op = static_cast<mpcrt_binary_op>(o);
    if (dtype == MPCRT_F32)
      mpcrt_binary_f32(op, as<float>(lhs), ls, as<float>(rhs), rs,
                       as<float>(out), shape, 3);
    else
      DISPATCH(mpcrt_binary, dtype, op, as<uint16_t>(lhs), ls,
               as<uint16_t>(rhs), rs, as<uint16_t>(out), shape, 3);
    for (int a = 0; a < 3; ++a)
      for (int b = 0; b < 4; ++b)
        for (int c = 0; c < 5; ++c) {
          double x = lhs.at(a * 20 + b * 5 + c), y = rhs.at(b);
          double ref = o == MPCRT_ADD   ? x + y
                       : o == MPCRT_SUB ? x - y
                       : o == MPCRT_MUL ? x * y
                       : o == MPCRT_DIV ? x / y
                                        : std::pow(x, y);
          ASSERT_NEAR(out.at(a * 20 + b * 5 + c), ref,
                      roundoff(dtype) * std::fabs(ref) +
                          4 * std::ldexp(1.0, -24) * (1 + std::fabs(ref)))
              << "op " << o;
        }
  }
}

TEST_P(ElementwiseTest, ReduceMiddleAxis) {
  mpcrt_dtype dtype = GetParam();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const int64_t outer = 3, reduced = 700, inner = 4;
  Buffer in(dtype, outer * reduced * inner), out(dtype, outer * inner);
  for (int64_t i = 0; i < outer * reduced * inner; ++i)
    in.set(i, draw(-1, 1));
  for (int o = MPCRT_REDUCE_SUM; o <= MPCRT_REDUCE_MAX; ++o) {
    auto op = static_cast<mpcrt_reduce_op>(o);
    if (dtype == MPCRT_F32)
      mpcrt_reduce_f32(op, as<float>(in), as<float>(out), outer, reduced,
                       inner);
    else
      DISPATCH(mpcrt_reduce, dtype, op, as<uint16_t>(in), as<uint16_t>(out),
               outer, reduced, inner);
    for (int64_t a = 0; a < outer; ++a)
      for (int64_t c = 0; c < inner; ++c) {
        double sum = 0, mag = 0, max = -INFINITY;
        for (int64_t r = 0; r < reduced; ++r) {
          double x = in.at((a * reduced + r) * inner + c);
          sum += x;
          mag += std::fabs(x);
          max = std::fmax(max, x);
        }
        double ref = o == MPCRT_REDUCE_SUM    ? sum
                     : o == MPCRT_REDUCE_MEAN ? sum / reduced
                                              : max;
        double accumulation = reduced * std::ldexp(1.0, -24) * mag /
                              (o == MPCRT_REDUCE_MEAN ? reduced : 1);
        ASSERT_NEAR(out.at(a * inner + c), ref,
                    roundoff(dtype) * std::fabs(ref) + accumulation + 1e-30)
            << "op " << o;
      }
  }
}

// A long f32 sum adds its rows in chunks of 64 and the chunks' sums
// pairwise, so its error grows with the chunk length and the log of the
// chunk count, not with the row count: at most (63 + ceil(log2(chunks)))
// units of roundoff of the sum of magnitudes (to first order). Values
// just above 0.1, alike enough that an in-order sum rounds the same way
// at every step: its error here is about 1% (the kernel's, before the
// chunks: 1,034 off a sum of 104,858, 2,100 times the bound), the bound
// about 5e-6 relative.
TEST(ReduceSum, LongSumsStayWithinTheChunkedBound) {
  unsigned seed = std::random_device()();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> draw(0.1, 0.1 + std::ldexp(1.0, -20));
  const int64_t outer = 2, reduced = int64_t(1) << 20, inner = 3;
  std::vector<float> in(outer * reduced * inner), out(outer * inner);
  for (float &x : in)
    x = static_cast<float>(draw(rng));
  for (mpcrt_reduce_op op : {MPCRT_REDUCE_SUM, MPCRT_REDUCE_MEAN}) {
    mpcrt_reduce_f32(op, in.data(), out.data(), outer, reduced, inner);
    double levels = std::ceil(std::log2(double(reduced) / 64));
    for (int64_t a = 0; a < outer; ++a)
      for (int64_t c = 0; c < inner; ++c) {
        double sum = 0, mag = 0;
        for (int64_t r = 0; r < reduced; ++r) {
          double x = in[(a * reduced + r) * inner + c];
          sum += x;
          mag += std::fabs(x);
        }
        double divisor = op == MPCRT_REDUCE_MEAN ? double(reduced) : 1.0;
        double bound = (63 + levels) * std::ldexp(1.0, -24) * mag / divisor +
                       std::ldexp(1.0, -24) * std::fabs(sum / divisor);
        ASSERT_NEAR(out[a * inner + c], sum / divisor, bound)
            << "op " << op << ", column " << a * inner + c;
      }
  }
}

TEST_P(ElementwiseTest, CrossEntropyAndItsGradient) {
  mpcrt_dtype dtype = GetParam();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const int64_t rows = 16, classes = 10;
  Buffer logits(dtype, rows * classes), loss(dtype, 1), dloss(dtype, 1),
      grad(dtype, rows * classes);
  std::vector<int64_t> labels(rows);
  for (int64_t i = 0; i < rows * classes; ++i)
    logits.set(i, draw(-8, 8));
  dloss.set(0, 1.5);
  std::vector<double> x(rows * classes);
  for (int64_t i = 0; i < rows * classes; ++i)
    x[i] = logits.at(i);
  // Without ignore_index; ignoring -100 (a third of the rows); ignoring a
  // class (3); with label smoothing 0.2 (ignoring -100) and 1.
  struct Case {
    int ignoring;
    double smoothing;
  };
  for (Case k :
       {Case{0, 0}, Case{1, 0}, Case{2, 0}, Case{1, 0.2}, Case{0, 1}}) {
    int ignoring = k.ignoring;
    double eps = k.smoothing;
    SCOPED_TRACE("ignoring " + std::to_string(ignoring) + ", smoothing " +
                 std::to_string(eps));
    int32_t ignores = ignoring > 0;
    int64_t ignoreIndex = ignoring == 1 ? -100 : 3;
    for (int64_t r = 0; r < rows; ++r)
      labels[r] = ignoring == 1 && rng() % 3 == 0 ? -100 : rng() % classes;
    auto counted = [&](int64_t r) {
      return !ignores || labels[r] != ignoreIndex;
    };
    auto lossOf = [&](const std::vector<double> &x, bool mean) {
      double total = 0;
      int64_t n = 0;
      for (int64_t r = 0; r < rows; ++r) {
        if (!counted(r))
          continue;
        ++n;
        double max = -INFINITY, sum = 0, all = 0;
        for (int64_t c = 0; c < classes; ++c)
          max = std::fmax(max, x[r * classes + c]);
        for (int64_t c = 0; c < classes; ++c) {
          sum += std::exp(x[r * classes + c] - max);
          all += x[r * classes + c];
        }
        // -log p against the smoothed target (PyTorch's label_smoothing).
        total += max + std::log(sum) - (1 - eps) * x[r * classes + labels[r]] -
                 eps * all / classes;
      }
      return mean && n > 0 ? total / n : total;
    };
    for (int mean = 0; mean < 2; ++mean) {
      if (dtype == MPCRT_F32) {
        ASSERT_EQ(mpcrt_cross_entropy_f32(as<float>(logits), labels.data(), 64,
                                          as<float>(loss), rows, classes, mean,
                                          ignores, ignoreIndex, eps),
                  0);
        ASSERT_EQ(mpcrt_cross_entropy_backward_f32(
                      as<float>(dloss), as<float>(logits), labels.data(), 64,
                      as<float>(grad), rows, classes, mean, ignores,
                      ignoreIndex, eps),
                  0);
      } else {
        DISPATCH(mpcrt_cross_entropy, dtype, as<uint16_t>(logits),
                 labels.data(), 64, as<uint16_t>(loss), rows, classes, mean,
                 ignores, ignoreIndex, eps);
        DISPATCH(mpcrt_cross_entropy_backward, dtype, as<uint16_t>(dloss),
                 as<uint16_t>(logits), labels.data(), 64, as<uint16_t>(grad),
                 rows, classes, mean, ignores, ignoreIndex, eps);
      }
      double ref = lossOf(x, mean);
      ASSERT_NEAR(loss.at(0), ref,
                  roundoff(dtype) * std::fabs(ref) +
                      1e-5 * (1 + std::fabs(ref)));
      auto fd = numericGradient(x, [&] { return 1.5 * lossOf(x, mean); });
      for (int64_t i = 0; i < rows * classes; ++i)
        ASSERT_NEAR(grad.at(i), fd[i],
                    roundoff(dtype) * std::fabs(fd[i]) +
                        1e-6 * (1 + std::fabs(fd[i])))
            << "mean " << mean << " element " << i;
    }
    // 32-bit labels read the same rows.
    std::vector<int32_t> labels32(labels.begin(), labels.end());
    Buffer loss32(dtype, 1);
    if (dtype == MPCRT_F32)
      mpcrt_cross_entropy_f32(as<float>(logits), labels32.data(), 32,
                              as<float>(loss32), rows, classes, 1, ignores,
                              ignoreIndex, eps);
    else
      DISPATCH(mpcrt_cross_entropy, dtype, as<uint16_t>(logits),
               labels32.data(), 32, as<uint16_t>(loss32), rows, classes, 1,
               ignores, ignoreIndex, eps);
    EXPECT_EQ(loss32.at(0), loss.at(0));
  }
}

// A segmentation's loss: the mean over every pixel of a [4, 256, 256]
// label map (262,144 rows). Summed pairwise the f32 rounding error is at
// most (64 + log2(rows / 64)) units of roundoff of the sum of the
// (positive) terms, 76 u here. Summed in row order it was 5.9e-3 off here
// (every term alike: their rounding does not average out) and 1.7e-5 off
// on a model's 1.69 (PyTorch's within 1e-7).
TEST(CrossEntropyLabels, TheMeanOfManyRowsKeepsItsAccuracy) {
  const int64_t rows = int64_t(4) * 256 * 256, classes = 5;
  std::mt19937 rng(29);
  std::uniform_real_distribution<float> logit(-0.1f, 0.1f);
  std::vector<float> logits(rows * classes);
  std::vector<int32_t> labels(rows);
  // An untrained head: each row's logits one random value, every term
  // log(5), whose rounding in a running sum does not average out.
  for (int64_t r = 0; r < rows; ++r)
    std::fill_n(&logits[r * classes], classes, logit(rng));
  for (int32_t &y : labels)
    y = static_cast<int32_t>(rng() % classes);
  double want = mpcrt::test::meanCrossEntropy(logits.data(), labels.data(),
                                              rows, classes);
  float loss = 0;
  ASSERT_EQ(mpcrt_cross_entropy_f32(logits.data(), labels.data(), 32, &loss,
                                    rows, classes, 1, 0, 0, 0.0),
            0);
  // Each term's own rounding (its log-sum-exp: a few u) and the sum's.
  double u = std::ldexp(1.0, -24);
  EXPECT_NEAR(loss, want, (8 + 64 + std::log2(rows / 64.0)) * u * want);
}

TEST(CrossEntropyLabels, OutOfRangeLabelsAreReportedAndNeverRead) {
  const int64_t rows = 6, classes = 4;
  std::vector<float> logits(rows * classes), grad(rows * classes, 7.0f);
  for (int64_t i = 0; i < rows * classes; ++i)
    logits[i] = 0.25f * static_cast<float>(i % 7) - 0.5f;
  // Row 2's label is one past the last class, row 4's negative: neither
  // may be read (the next row's logits would be), both add nothing.
  std::vector<int32_t> labels = {0, 3, 4, 1, -1, 2};
  float loss = 0, one = 1;
  EXPECT_EQ(mpcrt_cross_entropy_f32(logits.data(), labels.data(), 32, &loss,
                                    rows, classes, 0, 0, 0, 0.0),
            3);
  double want = 0;
  for (int64_t r : {0, 1, 3, 5}) {
    double sum = 0;
    for (int64_t c = 0; c < classes; ++c)
      sum += std::exp(double(logits[r * classes + c]));
    want += std::log(sum) - logits[r * classes + labels[r]];
  }
  EXPECT_NEAR(loss, want, 1e-5);
  EXPECT_EQ(mpcrt_cross_entropy_backward_f32(&one, logits.data(), labels.data(),
                                             32, grad.data(), rows, classes, 0,
                                             0, 0, 0.0),
            3);
  for (int64_t c = 0; c < classes; ++c) {
    EXPECT_EQ(grad[2 * classes + c], 0.0f);
    EXPECT_EQ(grad[4 * classes + c], 0.0f);
    EXPECT_NE(grad[0 * classes + c], 7.0f);
  }
  // Ignoring -1: row 4 is not reported, row 2 still is.
  EXPECT_EQ(mpcrt_cross_entropy_f32(logits.data(), labels.data(), 32, &loss,
                                    rows, classes, 0, 1, -1, 0.0),
            3);
  EXPECT_EQ(mpcrt_cross_entropy_backward_f32(&one, logits.data(), labels.data(),
                                             32, grad.data(), rows, classes, 0,
                                             1, -1, 0.0),
            3);
  EXPECT_EQ(grad[4 * classes], 0.0f);
  labels[2] = 1;
  EXPECT_EQ(mpcrt_cross_entropy_f32(logits.data(), labels.data(), 32, &loss,
                                    rows, classes, 1, 1, -1, 0.0),
            0);
  labels[4] = 0;
  EXPECT_EQ(mpcrt_cross_entropy_f32(logits.data(), labels.data(), 32, &loss,
                                    rows, classes, 1, 0, 0, 0.0),
            0);
  // An empty batch has loss 0, not NaN; so has a batch whose every label
  // is ignored, and its gradient is zero.
  EXPECT_EQ(mpcrt_cross_entropy_f32(logits.data(), labels.data(), 32, &loss, 0,
                                    classes, 1, 0, 0, 0.0),
            0);
  EXPECT_EQ(loss, 0.0f);
  std::vector<int32_t> ignored(rows, -100);
  EXPECT_EQ(mpcrt_cross_entropy_f32(logits.data(), ignored.data(), 32, &loss,
                                    rows, classes, 1, 1, -100, 0.0),
            0);
  EXPECT_EQ(loss, 0.0f);
  EXPECT_EQ(mpcrt_cross_entropy_backward_f32(&one, logits.data(),
                                             ignored.data(), 32, grad.data(),
                                             rows, classes, 1, 1, -100, 0.0),
            0);
  for (float g : grad)
    EXPECT_EQ(g, 0.0f);
}

TEST_P(ElementwiseTest, AccuracyIsTheFirstArgmaxAgainstTheLabels) {
  mpcrt_dtype dtype = GetParam();
  SCOPED_TRACE("seed " + std::to_string(seed));
  // Small integers make ties common; a NaN row, an all-equal row and
  // labels out of range test the rules (torch.argmax: the first maximum,
  // NaN the maximum).
  const int64_t rows = 200, classes = 7;
  Buffer logits(dtype, rows * classes);
  std::vector<int32_t> labels(rows);
  for (int64_t i = 0; i < rows * classes; ++i)
    logits.set(i, double(int64_t(rng() % 5)) - 2);
  for (auto &y : labels)
    y = int32_t(rng() % classes);
  logits.set(3 * classes + 4, NAN); // row 3: NaN at 4
  labels[3] = 4;
  for (int64_t c = 0; c < classes; ++c) // row 4: all equal, first wins
    logits.set(4 * classes + c, 1.0);
  labels[4] = 0;
  labels[5] = classes; // out of range: wrong
  labels[6] = -1;
  int64_t correct = 0;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t best = 0;
    for (int64_t c = 1; c < classes; ++c) {
      double v = logits.at(r * classes + c), b = logits.at(r * classes + best);
      if (!std::isnan(b) && (std::isnan(v) || v > b))
        best = c;
    }
    correct += best == labels[r];
  }
  ASSERT_GE(correct, 2); // rows 3 and 4 at least
  float got = -1;
  if (dtype == MPCRT_F32)
    mpcrt_accuracy_f32(as<float>(logits), labels.data(), 32, &got, rows,
                       classes, 0, 0);
  else
    DISPATCH(mpcrt_accuracy, dtype, as<uint16_t>(logits), labels.data(), 32,
             &got, rows, classes, 0, 0);
  EXPECT_EQ(got, static_cast<float>(double(correct) / rows));
  // 64-bit labels give the same.
  std::vector<int64_t> wide(labels.begin(), labels.end());
  float got64 = -1;
  if (dtype == MPCRT_F32)
    mpcrt_accuracy_f32(as<float>(logits), wide.data(), 64, &got64, rows,
                       classes, 0, 0);
  else
    DISPATCH(mpcrt_accuracy, dtype, as<uint16_t>(logits), wide.data(), 64,
             &got64, rows, classes, 0, 0);
  EXPECT_EQ(got64, got);
  // Ignoring -1 (row 6) and class 2: those rows are not counted.
  for (int64_t ignore : {int64_t(-1), int64_t(2)}) {
    int64_t right = 0, counted = 0;
    for (int64_t r = 0; r < rows; ++r) {
      if (labels[r] == ignore)
        continue;
      int64_t best = 0;
      for (int64_t c = 1; c < classes; ++c) {
        double v = logits.at(r * classes + c),
               b = logits.at(r * classes + best);
        if (!std::isnan(b) && (std::isnan(v) || v > b))
          best = c;
      }
      right += best == labels[r];
      ++counted;
    }
    ASSERT_LT(counted, rows);
    if (dtype == MPCRT_F32)
      mpcrt_accuracy_f32(as<float>(logits), labels.data(), 32, &got, rows,
                         classes, 1, ignore);
    else
      DISPATCH(mpcrt_accuracy, dtype, as<uint16_t>(logits), labels.data(), 32,
               &got, rows, classes, 1, ignore);
    EXPECT_EQ(got, static_cast<float>(double(right) / counted))
        << "ignoring " << ignore;
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, ElementwiseTest,
                         ::testing::Values(MPCRT_F16, MPCRT_BF16, MPCRT_F32));

} // namespace
