//===- FusedMatmulCheck.h - fused GEMMs against float64 ---------*- C++ -*-===//
//
// One check for every backend (mpcrt_fused_matmul, mpcrt_matmul_bias_grad,
// mpcrt_matmul_activation_grad, mpcrt_matmul_add):
// fresh random operands, exact in their storage type, multiplied by the
// backend and by a float64 reference, each
// element held to the error bound below. The backend runs through a
// callback on host buffers (the CUDA test uploads and downloads).
//
//===----------------------------------------------------------------------===//

#ifndef MPC_UNITTESTS_RUNTIME_FUSEDMATMULCHECK_H
#define MPC_UNITTESTS_RUNTIME_FUSEDMATMULCHECK_H

#include "mpc/Runtime/mpcrt.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <vector>

namespace mpcrt::test {

struct FusedMatmulShape {
  int64_t batch, m, n, k;
  bool transA, transB, broadcastB;
};

/// Runs the backend: (a, b, bias, c, pre) host buffers of the check's
/// types; `pre` is null when the pre-activation is not asked for.
using FusedMatmulRun = std::function<void(
    const std::vector<uint8_t> &a, const std::vector<uint8_t> &b,
    const std::vector<uint8_t> &bias, std::vector<uint8_t> &c,
    std::vector<uint8_t> *pre, int64_t aStride, int64_t bStride)>;

inline int64_t elementBytes(mpcrt_dtype d) {
  return d == MPCRT_F64 ? 8 : d == MPCRT_F32 ? 4 : 2;
}

/// Half an ulp of the type (unit roundoff).
inline double unitRoundoff(mpcrt_dtype d) {
  return d == MPCRT_F16    ? 0x1p-11
         : d == MPCRT_BF16 ? 0x1p-8
         : d == MPCRT_F32  ? 0x1p-24
                           : 0x1p-53;
}

/// `count` normal values rounded to `d`: the bytes and the exact values.
inline std::vector<uint8_t> randomOf(mpcrt_dtype d, int64_t count,
                                     std::mt19937 &rng,
                                     std::vector<double> &values) {
  std::normal_distribution<double> normal(0, 1);
  values.resize(count);
  for (double &v : values)
    v = normal(rng);
  std::vector<uint8_t> bytes(count * elementBytes(d));
  mpcrt_cast(MPCRT_F64, values.data(), d, bytes.data(), count);
  mpcrt_cast(d, bytes.data(), MPCRT_F64, values.data(), count);
  return bytes;
}

/// Random operands of op(A) op(B) of shape `s`, exact in `in`, and the
/// float64 reference: each element's exact product and its sum of |a b|,
/// which scales the accumulation error gamma_k sum |a b| (u the
/// accumulation type's roundoff, gamma_k = k u / (1 - k u); Higham 3.1).
struct ProductReference {
  std::vector<double> a, b;
  std::vector<uint8_t> aBytes, bBytes;
  const FusedMatmulShape &s;
  double u, gamma;

  ProductReference(mpcrt_dtype in, const FusedMatmulShape &shape,
                   std::mt19937 &rng)
      : s(shape), u(in == MPCRT_F64 ? 0x1p-53 : 0x1p-24),
        gamma(shape.k * u / (1 - shape.k * u)) {
    aBytes = randomOf(in, s.batch * s.m * s.k, rng, a);
    bBytes = randomOf(in, (s.broadcastB ? 1 : s.batch) * s.k * s.n, rng, b);
  }
  int64_t aStride() const { return s.m * s.k; }
  int64_t bStride() const { return s.broadcastB ? 0 : s.k * s.n; }
  int64_t count() const { return s.batch * s.m * s.n; }

  /// Element (i, j) of product p: the exact value and sum |a b|.
  std::pair<double, double> at(int64_t p, int64_t i, int64_t j) const {
    const double *ap = a.data() + p * s.m * s.k;
    const double *bp = b.data() + (s.broadcastB ? 0 : p * s.k * s.n);
    double h = 0, abs = 0;
    for (int64_t l = 0; l < s.k; ++l) {
      double x = s.transA ? ap[l * s.m + i] : ap[i * s.k + l];
      double y = s.transB ? bp[j * s.k + l] : bp[l * s.n + j];
      h += x * y;
      abs += std::fabs(x * y);
    }
    return {h, abs};
  }
};

/// What a backend's epilogues may do beyond one rounding: nothing (the CPU
/// reference, the CUDA backend's own kernels), or, for cuBLASLt's GELU and
/// DGELU epilogues and its in-place beta = 1 product, round the product to
/// the result's type before the epilogue (GELU: before the bias and again
/// before the activation), as an unfused product and elementwise kernel
/// would, and evaluate tanh as the GPU's tanh.approx.f32 does (relative
/// error at most 2^-10.987, PTX ISA). cuBLASLt does not document its
/// epilogues' accuracy; on the H100 and the H200 these three overran the
/// one-rounding bound by 1.0x to 1.33x.
enum class Roundings { One, TwoInEpilogues };

/// tanh.approx.f32's relative error bound (PTX ISA).
inline double tanhApproxError() { return std::exp2(-10.987); }

/// GELU's tanh argument: t = tanh(sqrt(2/pi) (x + 0.044715 x^3)).
inline double geluTanh(double x) {
  return std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x));
}

/// The type pairs of the epilogue GEMMs: the operands' type, or f32
/// results of f16/bf16 operands.
inline constexpr std::pair<mpcrt_dtype, mpcrt_dtype> kEpilogueTypes[] = {
    {MPCRT_F16, MPCRT_F16}, {MPCRT_BF16, MPCRT_BF16}, {MPCRT_F32, MPCRT_F32},
    {MPCRT_F64, MPCRT_F64}, {MPCRT_F16, MPCRT_F32},   {MPCRT_BF16, MPCRT_F32}};

/// `bytes` of type `d` as float64 values.
inline std::vector<double> valuesOf(mpcrt_dtype d,
                                    const std::vector<uint8_t> &bytes) {
  std::vector<double> values(bytes.size() / elementBytes(d));
  mpcrt_cast(d, bytes.data(), MPCRT_F64, values.data(), values.size());
  return values;
}

/// act(op(A) op(B) + bias) against float64. The sum h has the product's
/// accumulation error, gamma_k sum_k |a b| (u the accumulation type's
/// roundoff, gamma_k = k u / (1 - k u); Higham 3.1), plus the f32 addition
/// of the bias (u |h|); the activation's slope is at most 1.13 (tanh GELU)
/// and its f32 evaluation adds a few ulps of |h| (8 u |h| allowed); the
/// result is rounded once to `out` (its roundoff times |result|, and half
/// f16's smallest subnormal). With `withPre`, the pre-activation h, rounded
/// once, is held to the same bound without the activation's terms.
inline void checkFusedMatmul(mpcrt_dtype in, mpcrt_dtype out,
                             int32_t activation, const FusedMatmulShape &s,
                             bool withPre, std::mt19937 &rng,
                             const FusedMatmulRun &run,
                             Roundings roundings = Roundings::One) {
  ProductReference ref(in, s, rng);
  std::vector<double> bias;
  std::vector<uint8_t> biasBytes = randomOf(out, s.n, rng, bias);
  std::vector<uint8_t> cBytes(ref.count() * elementBytes(out)),
      preBytes(withPre ? cBytes.size() : 0);
  run(ref.aBytes, ref.bBytes, biasBytes, cBytes, withPre ? &preBytes : nullptr,
      ref.aStride(), ref.bStride());
  std::vector<double> c = valuesOf(out, cBytes), pre = valuesOf(out, preBytes);

  double u = ref.u, gamma = ref.gamma;
  double rel = unitRoundoff(out), tiny = out == MPCRT_F16 ? 0x1p-25 : 0;
  double slope = activation == MPCRT_GELU_TANH ? 1.13 : 1;
  bool loose =
      roundings == Roundings::TwoInEpilogues && activation == MPCRT_GELU_TANH;
  for (int64_t p = 0; p < s.batch; ++p)
    for (int64_t i = 0; i < s.m; ++i)
      for (int64_t j = 0; j < s.n; ++j) {
        auto [product, abs] = ref.at(p, i, j);
        double h = product + bias[j];
        double want = h;
        if (activation == MPCRT_RELU)
          want = h > 0 ? h : 0;
        else if (activation == MPCRT_GELU_TANH)
          want = 0.5 * h * (1 + geluTanh(h));
        // The product rounded to `out` before the bias is added, h
        // rounded to `out` before the GELU, and t's relative error
        // (0.5 |h| |dt|). The product's rounding dominates where the bias
        // cancels it (an H200 run: product 1.83, bias -1.78).
        double second = loose
                            ? rel * slope * std::fabs(product) +
                                  (rel * slope + 0.5 * std::fabs(geluTanh(h)) *
                                                     tanhApproxError()) *
                                      std::fabs(h)
                            : 0;
        double bound =
            rel * std::fabs(want) + tiny +
            slope * (gamma * abs + u * std::fabs(h)) +
            (activation == MPCRT_ACTIVATION_NONE ? 0 : 8 * u) * std::fabs(h) +
            second;
        double got = c[(p * s.m + i) * s.n + j];
        ASSERT_LE(std::fabs(got - want), bound)
            << "in " << in << " out " << out << " activation " << activation
            << " batch " << p << " (" << i << ", " << j << "), transA "
            << s.transA << " transB " << s.transB << ", product " << product
            << " bias " << bias[j] << " sum |a b| " << abs;
        if (withPre) {
          double preBound =
              rel * std::fabs(h) + tiny + gamma * abs + u * std::fabs(h);
          ASSERT_LE(std::fabs(pre[(p * s.m + i) * s.n + j] - h), preBound)
              << "pre-activation, in " << in << " out " << out << " activation "
              << activation << " batch " << p << " (" << i << ", " << j << ")";
        }
      }
}

/// Every type pair, activation and layout the op takes, with and without
/// the pre-activation.
inline void checkAllFusedMatmuls(
    std::mt19937 &rng,
    const std::function<FusedMatmulRun(mpcrt_dtype, mpcrt_dtype, int32_t,
                                       const FusedMatmulShape &)> &backend,
    Roundings roundings = Roundings::One) {
  const FusedMatmulShape shapes[] = {{1, 64, 48, 96, false, false, true},
                                     {3, 17, 33, 65, false, false, true},
                                     {2, 16, 24, 40, false, true, true},
                                     {2, 16, 24, 40, true, false, false},
                                     {1, 8, 8, 0, false, false, true}};
  for (auto [in, out] : kEpilogueTypes)
    for (int32_t act :
         {MPCRT_ACTIVATION_NONE, int32_t(MPCRT_RELU), int32_t(MPCRT_GELU_TANH)})
      for (const FusedMatmulShape &s : shapes)
        for (bool withPre : {false, true}) {
          if (withPre && act == MPCRT_ACTIVATION_NONE)
            continue;
          checkFusedMatmul(in, out, act, s, withPre, rng,
                           backend(in, out, act, s), roundings);
          if (::testing::Test::HasFatalFailure())
            return;
        }
}

/// Runs the backend: (a, b, saved, c) host buffers of the check's types.
using ActivationGradRun = std::function<void(
    const std::vector<uint8_t> &a, const std::vector<uint8_t> &b,
    const std::vector<uint8_t> &saved, std::vector<uint8_t> &c, int64_t aStride,
    int64_t bStride)>;

/// mpcrt_matmul_activation_grad against float64: the product p as above
/// (error gamma_k sum |a b|), times the derivative at the saved value
/// (at most 1.13 in magnitude; its f32 evaluation within 8 u), one
/// rounding to `out`. The saved values are random normals of `out`, half
/// of them negative (ReLU's zeros).
inline void checkMatmulActivationGrad(mpcrt_dtype in, mpcrt_dtype out,
                                      int32_t activation,
                                      const FusedMatmulShape &s,
                                      std::mt19937 &rng,
                                      const ActivationGradRun &run,
                                      Roundings roundings = Roundings::One) {
  ProductReference ref(in, s, rng);
  std::vector<double> saved;
  std::vector<uint8_t> savedBytes = randomOf(out, ref.count(), rng, saved);
  std::vector<uint8_t> cBytes(ref.count() * elementBytes(out));
  run(ref.aBytes, ref.bBytes, savedBytes, cBytes, ref.aStride(), ref.bStride());
  std::vector<double> c = valuesOf(out, cBytes);

  double rel = unitRoundoff(out), tiny = out == MPCRT_F16 ? 0x1p-25 : 0;
  bool loose =
      roundings == Roundings::TwoInEpilogues && activation == MPCRT_GELU_TANH;
  for (int64_t p = 0; p < s.batch; ++p)
    for (int64_t i = 0; i < s.m; ++i)
      for (int64_t j = 0; j < s.n; ++j) {
        auto [h, abs] = ref.at(p, i, j);
        double x = saved[(p * s.m + i) * s.n + j], d, dt = 0;
        if (activation == MPCRT_RELU) {
          d = x > 0 ? 1 : 0;
        } else {
          double t = geluTanh(x), root = std::sqrt(2 / M_PI);
          d = 0.5 * (1 + t) +
              0.5 * x * (1 - t * t) * root * (1 + 3 * 0.044715 * x * x);
          // d's sensitivity to t, times t's relative error.
          dt = std::fabs(0.5 - x * t * root * (1 + 3 * 0.044715 * x * x)) *
               std::fabs(t) * tanhApproxError();
        }
        double want = h * d;
        double bound =
            rel * std::fabs(want) + tiny + 1.13 * ref.gamma * abs +
            (activation == MPCRT_RELU ? 0 : 9 * ref.u) * std::fabs(h) +
            (loose ? (rel * std::fabs(d) + dt) * std::fabs(h) : 0);
        double got = c[(p * s.m + i) * s.n + j];
        ASSERT_LE(std::fabs(got - want), bound)
            << "in " << in << " out " << out << " activation " << activation
            << " batch " << p << " (" << i << ", " << j << "), transA "
            << s.transA << " transB " << s.transB << ", saved " << x;
      }
}

/// Every type pair, activation and layout the op takes.
inline void checkAllMatmulActivationGrads(
    std::mt19937 &rng,
    const std::function<ActivationGradRun(mpcrt_dtype, mpcrt_dtype, int32_t,
                                          const FusedMatmulShape &)> &backend,
    Roundings roundings = Roundings::One) {
  const FusedMatmulShape shapes[] = {{1, 64, 48, 96, false, true, true},
                                     {3, 17, 33, 65, false, false, true},
                                     {2, 16, 24, 40, true, false, false},
                                     {1, 8, 8, 0, false, true, true}};
  for (auto [in, out] : kEpilogueTypes)
    for (int32_t act : {int32_t(MPCRT_RELU), int32_t(MPCRT_GELU_TANH)})
      for (const FusedMatmulShape &s : shapes) {
        checkMatmulActivationGrad(in, out, act, s, rng,
                                  backend(in, out, act, s), roundings);
        if (::testing::Test::HasFatalFailure())
          return;
      }
}

/// Runs the backend: (a, b, addend, c) host buffers of the check's types;
/// with `inPlace` the backend gives C as the addend (C holds it on entry).
using MatmulAddRun = std::function<void(
    const std::vector<uint8_t> &a, const std::vector<uint8_t> &b,
    const std::vector<uint8_t> &addend, std::vector<uint8_t> &c,
    int64_t aStride, int64_t bStride, bool inPlace)>;

/// mpcrt_matmul_add against float64: the product's error gamma_k sum |a b|,
/// the f32 addition of the addend (u |sum|), one rounding to `out`.
inline void checkMatmulAdd(mpcrt_dtype in, mpcrt_dtype out,
                           const FusedMatmulShape &s, bool inPlace,
                           std::mt19937 &rng, const MatmulAddRun &run,
                           Roundings roundings = Roundings::One) {
  ProductReference ref(in, s, rng);
  std::vector<double> addend;
  std::vector<uint8_t> addendBytes = randomOf(out, ref.count(), rng, addend);
  std::vector<uint8_t> cBytes(ref.count() * elementBytes(out));
  if (inPlace)
    cBytes = addendBytes;
  run(ref.aBytes, ref.bBytes, addendBytes, cBytes, ref.aStride(), ref.bStride(),
      inPlace);
  std::vector<double> c = valuesOf(out, cBytes);

  double rel = unitRoundoff(out), tiny = out == MPCRT_F16 ? 0x1p-25 : 0;
  double second = roundings == Roundings::TwoInEpilogues && inPlace ? rel : 0;
  for (int64_t p = 0; p < s.batch; ++p)
    for (int64_t i = 0; i < s.m; ++i)
      for (int64_t j = 0; j < s.n; ++j) {
        int64_t at = (p * s.m + i) * s.n + j;
        auto [product, abs] = ref.at(p, i, j);
        double h = product + addend[at];
        double bound = rel * std::fabs(h) + tiny + ref.gamma * abs +
                       ref.u * std::fabs(h) +
                       second * (std::fabs(product) + tiny);
        ASSERT_LE(std::fabs(c[at] - h), bound)
            << "in " << in << " out " << out << " batch " << p << " (" << i
            << ", " << j << "), transA " << s.transA << " transB " << s.transB
            << ", in place " << inPlace;
      }
}

/// Every type pair and layout the op takes, apart and in place.
inline void checkAllMatmulAdds(
    std::mt19937 &rng,
    const std::function<MatmulAddRun(mpcrt_dtype, mpcrt_dtype,
                                     const FusedMatmulShape &)> &backend,
    Roundings roundings = Roundings::One) {
  const FusedMatmulShape shapes[] = {{1, 64, 48, 96, false, true, true},
                                     {3, 17, 33, 65, false, false, true},
                                     {2, 16, 24, 40, true, false, false},
                                     {1, 8, 8, 0, false, true, true}};
  // In place first: a backend that times a product's candidate
  // algorithms on its plan's first call (MPC_CUBLASLT_ALGORITHMS=measure)
  // must not add to the sum once per timed run.
  for (auto [in, out] : kEpilogueTypes)
    for (const FusedMatmulShape &s : shapes)
      for (bool inPlace : {true, false}) {
        checkMatmulAdd(in, out, s, inPlace, rng, backend(in, out, s),
                       roundings);
        if (::testing::Test::HasFatalFailure())
          return;
      }
}

struct BiasGradShape {
  int64_t m, n, k;
  bool transA;
  /// The bias gradient sums A ([k, m], transposed) instead of B: m sums.
  bool sumsOfA = false;
};

/// Whether mpcrt_matmul_bias_grad gets addends, and where: none; both (the
/// product's and the bias gradient's) in buffers of their own, or both as
/// the results' buffers (which hold them on entry); the bias gradient's
/// alone, apart.
enum class Addend { None, Apart, InPlace, BiasOnly };

/// Runs the backend: (a, b, addend, biasAddend, c, biasGrad) host buffers
/// of the check's types; an addend not given is empty, and with
/// Addend::InPlace the backend gives C and biasGrad as the addends.
using BiasGradRun = std::function<void(
    const std::vector<uint8_t> &a, const std::vector<uint8_t> &b,
    const std::vector<uint8_t> &addend, const std::vector<uint8_t> &biasAddend,
    std::vector<uint8_t> &c, std::vector<uint8_t> &biasGrad)>;

/// mpcrt_matmul_bias_grad against float64: the product as above (no bias,
/// no activation), rounded to `in`, or with an addend of type `grad` added
/// to the f32 (f64) product as checkMatmulAdd checks it; the column sums
/// of B over its k rows (of A, with `sumsOfA`) accumulate in f32 (f64)
/// with error gamma_k sum |b| and are rounded once to `grad`, then added
/// to the bias addend, if any, and rounded again.
inline void checkMatmulBiasGrad(mpcrt_dtype in, mpcrt_dtype grad,
                                const BiasGradShape &s, Addend with,
                                std::mt19937 &rng, const BiasGradRun &run,
                                Roundings roundings = Roundings::One) {
  std::vector<double> a, b, addend, biasAddend;
  std::vector<uint8_t> aBytes = randomOf(in, s.m * s.k, rng, a),
                       bBytes = randomOf(in, s.k * s.n, rng, b);
  bool product = with == Addend::Apart || with == Addend::InPlace;
  mpcrt_dtype out = product ? grad : in;
  std::vector<uint8_t> addendBytes, biasAddendBytes;
  if (product)
    addendBytes = randomOf(out, s.m * s.n, rng, addend);
  // The sums: of B's n columns, or of A's m (A is [k, m]).
  int64_t sums = s.sumsOfA ? s.m : s.n;
  if (with != Addend::None)
    biasAddendBytes = randomOf(grad, sums, rng, biasAddend);
  std::vector<uint8_t> cBytes(s.m * s.n * elementBytes(out)),
      gBytes(sums * elementBytes(grad));
  if (with == Addend::InPlace) {
    cBytes = addendBytes;
    gBytes = biasAddendBytes;
  }
  run(aBytes, bBytes, addendBytes, biasAddendBytes, cBytes, gBytes);
  std::vector<double> c(s.m * s.n), g(sums);
  mpcrt_cast(out, cBytes.data(), MPCRT_F64, c.data(), c.size());
  mpcrt_cast(grad, gBytes.data(), MPCRT_F64, g.data(), g.size());

  double u = in == MPCRT_F64 ? 0x1p-53 : 0x1p-24;
  double gamma = s.k * u / (1 - s.k * u);
  double tiny = out == MPCRT_F16 ? 0x1p-25 : 0;
  double second =
      roundings == Roundings::TwoInEpilogues && with == Addend::InPlace
          ? unitRoundoff(out)
          : 0;
  for (int64_t i = 0; i < s.m; ++i)
    for (int64_t j = 0; j < s.n; ++j) {
      double sum = 0, abs = 0;
      for (int64_t l = 0; l < s.k; ++l) {
        double x = s.transA ? a[l * s.m + i] : a[i * s.k + l];
        sum += x * b[l * s.n + j];
        abs += std::fabs(x * b[l * s.n + j]);
      }
      double want = addend.empty() ? sum : sum + addend[i * s.n + j];
      double bound = unitRoundoff(out) * std::fabs(want) + tiny + gamma * abs +
                     (addend.empty() ? 0 : u * std::fabs(want)) +
                     second * (std::fabs(sum) + tiny);
      ASSERT_LE(std::fabs(c[i * s.n + j] - want), bound)
          << "product in " << in << " out " << out << " (" << i << ", " << j
          << "), transA " << s.transA << ", addend " << int(with);
    }
  double tinyGrad = grad == MPCRT_F16 ? 0x1p-25 : 0;
  for (int64_t j = 0; j < sums; ++j) {
    double sum = 0, abs = 0;
    for (int64_t l = 0; l < s.k; ++l) {
      double x = s.sumsOfA ? a[l * s.m + j] : b[l * s.n + j];
      sum += x;
      abs += std::fabs(x);
    }
    // The sum's own rounding, then (with a bias addend) the add's.
    double want = biasAddend.empty() ? sum : sum + biasAddend[j];
    double bound =
        unitRoundoff(grad) * std::fabs(sum) + gamma * abs + tinyGrad +
        (biasAddend.empty() ? 0
                            : unitRoundoff(grad) * std::fabs(want) + tinyGrad);
    ASSERT_LE(std::fabs(g[j] - want), bound)
        << "bias gradient in " << in << " grad " << grad << " column " << j
        << " of " << sums << (s.sumsOfA ? " (of A)" : "") << ", k " << s.k
        << ", addend " << int(with);
  }
}

/// Every type pair and layout the op takes, and columns beyond one block;
/// without addends, and with them (of the bias gradient's type: f32
/// accumulators for f16/bf16 operands) apart and in place, and with the
/// bias gradient's alone.
inline void checkAllMatmulBiasGrads(
    std::mt19937 &rng,
    const std::function<BiasGradRun(mpcrt_dtype, mpcrt_dtype,
                                    const BiasGradShape &, Addend)> &backend,
    Roundings roundings = Roundings::One) {
  const std::pair<mpcrt_dtype, mpcrt_dtype> types[] = {{MPCRT_F16, MPCRT_F32},
                                                       {MPCRT_BF16, MPCRT_F32},
                                                       {MPCRT_F32, MPCRT_F32},
                                                       {MPCRT_F64, MPCRT_F64},
                                                       {MPCRT_F16, MPCRT_F16}};
  const BiasGradShape shapes[] = {
      {64, 48, 96, true},       {17, 33, 65, false},
      {24, 300, 1000, true},    {8, 8, 0, true},
      {48, 64, 96, true, true}, {300, 24, 1000, true, true},
      {33, 17, 65, true, true}, {8, 8, 0, true, true}};
  for (auto [in, grad] : types)
    for (const BiasGradShape &s : shapes)
      for (Addend with :
           {Addend::None, Addend::InPlace, Addend::Apart, Addend::BiasOnly}) {
        checkMatmulBiasGrad(in, grad, s, with, rng, backend(in, grad, s, with),
                            roundings);
        if (::testing::Test::HasFatalFailure())
          return;
      }
}

/// Runs the backend on f16 operands [k, m] and [k, n] (transA): `sums`
/// gets the column sums of b it adds to a bias addend, `fused` the bias
/// gradient with `addend` (host buffers of `grad`'s type).
using BiasAddendRun = std::function<void(
    mpcrt_dtype grad, int64_t m, int64_t n, int64_t k,
    const std::vector<uint8_t> &a, const std::vector<uint8_t> &b,
    const std::vector<uint8_t> &addend, std::vector<uint8_t> &sums,
    std::vector<uint8_t> &fused)>;

/// A bias addend's sums are the separate add's values bit for bit: the
/// sums rounded to their type, then added in f32 and rounded again (f32
/// sums of f16 operands, and f16 sums at O3).
inline void checkBiasAddendEqualsASeparateAdd(std::mt19937 &rng,
                                              const BiasAddendRun &run) {
  const int64_t m = 24, n = 300, k = 1000;
  for (mpcrt_dtype grad : {MPCRT_F32, MPCRT_F16}) {
    std::vector<double> as, bs, adds;
    auto a = randomOf(MPCRT_F16, k * m, rng, as),
         b = randomOf(MPCRT_F16, k * n, rng, bs),
         addend = randomOf(grad, n, rng, adds);
    std::vector<uint8_t> sums(n * elementBytes(grad)), fused(sums.size());
    run(grad, m, n, k, a, b, addend, sums, fused);
    std::vector<float> s(n), add(n), sum(n);
    mpcrt_cast(grad, sums.data(), MPCRT_F32, s.data(), n);
    mpcrt_cast(grad, addend.data(), MPCRT_F32, add.data(), n);
    for (int64_t j = 0; j < n; ++j)
      sum[j] = add[j] + s[j];
    std::vector<uint8_t> want(sums.size());
    mpcrt_cast(MPCRT_F32, sum.data(), grad, want.data(), n);
    EXPECT_EQ(fused, want) << "bias gradient in " << grad;
  }
}

} // namespace mpcrt::test

#endif // MPC_UNITTESTS_RUNTIME_FUSEDMATMULCHECK_H
