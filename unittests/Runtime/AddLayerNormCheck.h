//===- AddLayerNormCheck.h - mpcrt_add_layer_norm against float64 -*- C++ -*-=//
//
// One check for every backend: fresh random input, residual, parameters and
// gradients, exact in their storage types; the backend's forward (sum,
// result, statistics) and backward (four gradients) against float64
// references written here from the definition, with the dropout bits of
// mpcrt_philox4x32. Bounds:
// - the sum: two roundings to the type (the dropped value, the sum) and the
//   f32 (f64) product by the scale: (2 u + 2 u_acc) (|d| + |r|);
// - the result, statistics and input gradients are compared with the
//   references computed from the backend's own (rounded) sum, in the max
//   norm: (u_out + 8 (cols + 8) u_acc) max |ref| (each term of the row sums
//   relative u_acc, as AttentionCheck.h);
// - gamma's and beta's gradients, column sums over the rows: (u_param +
//   4 (rows + cols + 8) u_acc) sum_r |term| per column (Higham 3.1), and
//   for gamma's the error of the backend's mean, which no relative bound
//   on a term covers where x - mean cancels: sum_r |dy| rstd e_r with
//   e_r = u_stat |mean| + (cols + 8) u_acc mean |x| of the row.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_UNITTESTS_RUNTIME_ADDLAYERNORMCHECK_H
#define MPC_UNITTESTS_RUNTIME_ADDLAYERNORMCHECK_H

#include "AttentionCheck.h"

namespace mpcrt::test {

struct AddLayerNormCase {
  int64_t rows, cols;
  double p;
  bool sumGrad;
  uint64_t seed = 11;
  int64_t step = 3;
  /// The residual's rows, repeated over the input's (0: as many).
  int64_t broadcastRows = 0;
  int64_t residualRows() const { return broadcastRows ? broadcastRows : rows; }
};

/// Host buffers: x, residual, gamma, beta (param type), grad, sumGrad
/// (empty for none) in; sum, y, mean, rstd (f32, f64 for f64), dx,
/// dresidual, dgamma, dbeta out (sized by the check).
struct AddLayerNormBuffers {
  std::vector<uint8_t> x, residual, gamma, beta, grad, sumGrad;
  std::vector<uint8_t> sum, y, mean, rstd, dx, dresidual, dgamma, dbeta;
  /// grad_input's column sums (mpcrt.h's grad_x_sums: f32, f64 for f64),
  /// where the run takes them; a run that leaves them empty is not asked.
  std::vector<uint8_t> dxSums;
};

using AddLayerNormRun = std::function<void(AddLayerNormBuffers &)>;

inline std::vector<uint8_t> uniformOf(mpcrt_dtype d, int64_t count, double lo,
                                      double hi, std::mt19937 &rng) {
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(count);
  for (double &x : v)
    x = u(rng);
  std::vector<uint8_t> bytes(count * elementBytes(d));
  mpcrt_cast(MPCRT_F64, v.data(), d, bytes.data(), count);
  return bytes;
}

inline void checkAddLayerNorm(mpcrt_dtype dt, const AddLayerNormCase &c,
                              std::mt19937 &rng, const AddLayerNormRun &run) {
  mpcrt_dtype param = dt == MPCRT_F64 ? MPCRT_F64 : MPCRT_F32;
  mpcrt_dtype stat = param;
  int64_t n = c.rows * c.cols;
  std::vector<double> x, r, dy, dsum;
  AddLayerNormBuffers b;
  b.x = randomOf(dt, n, rng, x);
  b.residual = randomOf(dt, c.residualRows() * c.cols, rng, r);
  b.gamma = uniformOf(param, c.cols, 0.5, 1.5, rng);
  b.beta = uniformOf(param, c.cols, -1, 1, rng);
  b.grad = randomOf(dt, n, rng, dy);
  if (c.sumGrad)
    b.sumGrad = randomOf(dt, n, rng, dsum);
  for (auto *out : {&b.sum, &b.y, &b.dx, &b.dresidual})
    out->assign(n * elementBytes(dt), 0);
  for (auto *out : {&b.mean, &b.rstd})
    out->assign(c.rows * elementBytes(stat), 0);
  for (auto *out : {&b.dgamma, &b.dbeta})
    out->assign(c.cols * elementBytes(param), 0);
  b.dxSums.assign(c.cols * elementBytes(param), 0);
  run(b);

  std::vector<double> g = valuesOf(param, b.gamma),
                      be = valuesOf(param, b.beta);
  double u = unitRoundoff(dt), uAcc = dt == MPCRT_F64 ? 0x1p-53 : 0x1p-24;
  double tiny = dt == MPCRT_F16 ? 0x1p-24 : 0;
  double scale = 1 / (1 - c.p);
  AttentionCase bits{};
  bits.p = c.p;
  bits.seed = c.seed;
  bits.step = c.step;
  std::vector<bool> keep(n);
  std::vector<double> sum = valuesOf(dt, b.sum);
  for (int64_t i = 0; i < n; ++i) {
    keep[i] = c.p == 0 || referenceKeeps(bits, i);
    double d = keep[i] ? x[i] * scale : 0;
    double res = r[i / c.cols % c.residualRows() * c.cols + i % c.cols];
    double bound =
        (2 * u + 2 * uAcc) * (std::fabs(d) + std::fabs(res)) + 2 * tiny;
    ASSERT_LE(std::fabs(sum[i] - (d + res)), bound)
        << "sum " << i << " dtype " << dt << " p " << c.p;
  }

  // The layer norm of the backend's sum, and its backward, in float64.
  std::vector<double> y(n), mean(c.rows), rstd(c.rows), ds(n), dx(n),
      dgamma(c.cols, 0), dbeta(c.cols, 0), dgAbs(c.cols, 0), dbAbs(c.cols, 0),
      dgMean(c.cols, 0);
  for (int64_t row = 0; row < c.rows; ++row) {
    const double *s = sum.data() + row * c.cols;
    double mu = 0, var = 0, absSum = 0;
    for (int64_t j = 0; j < c.cols; ++j) {
      mu += s[j];
      absSum += std::fabs(s[j]);
    }
    mu /= c.cols;
    for (int64_t j = 0; j < c.cols; ++j)
      var += (s[j] - mu) * (s[j] - mu);
    var /= c.cols;
    double inv = 1 / std::sqrt(var + 1e-5);
    mean[row] = mu;
    rstd[row] = inv;
    double meanError = unitRoundoff(stat) * std::fabs(mu) +
                       (c.cols + 8) * uAcc * absSum / c.cols;
    double sumGdy = 0, sumGdyXhat = 0;
    for (int64_t j = 0; j < c.cols; ++j) {
      int64_t i = row * c.cols + j;
      double xhat = (s[j] - mu) * inv;
      y[i] = xhat * g[j] + be[j];
      sumGdy += g[j] * dy[i];
      sumGdyXhat += g[j] * dy[i] * xhat;
      dgamma[j] += dy[i] * xhat;
      dbeta[j] += dy[i];
      dgAbs[j] += std::fabs(dy[i] * xhat);
      dbAbs[j] += std::fabs(dy[i]);
      dgMean[j] += std::fabs(dy[i]) * inv * meanError;
    }
    for (int64_t j = 0; j < c.cols; ++j) {
      int64_t i = row * c.cols + j;
      double xhat = (s[j] - mu) * inv;
      ds[i] =
          inv * (g[j] * dy[i] - sumGdy / c.cols - xhat * sumGdyXhat / c.cols) +
          (c.sumGrad ? dsum[i] : 0);
      dx[i] = keep[i] ? ds[i] * scale : 0;
    }
  }
  double slack = 8 * (c.cols + 8) * uAcc;
  auto uOf = [](mpcrt_dtype d) { return unitRoundoff(d); };
  expectClose("result", dt, b.y, y, uOf(dt), slack);
  expectClose("mean", stat, b.mean, mean, uOf(stat), slack);
  expectClose("rstd", stat, b.rstd, rstd, uOf(stat), slack);
  expectClose("grad_residual", dt, b.dresidual, ds, uOf(dt), slack);
  expectClose("grad_input", dt, b.dx, dx, uOf(dt), slack);
  std::vector<double> gotDg = valuesOf(param, b.dgamma),
                      gotDb = valuesOf(param, b.dbeta);
  double sumSlack = uOf(param) + 4 * (c.rows + c.cols + 8) * uAcc;
  for (int64_t j = 0; j < c.cols; ++j) {
    ASSERT_LE(std::fabs(gotDg[j] - dgamma[j]), sumSlack * dgAbs[j] + dgMean[j])
        << "grad_gamma " << j << " dtype " << dt;
    ASSERT_LE(std::fabs(gotDb[j] - dbeta[j]), sumSlack * dbAbs[j])
        << "grad_beta " << j << " dtype " << dt;
  }
  // The input gradient's column sums: of the backend's own grad_input
  // values (exact in float64), each a sum of `rows` terms in the
  // accumulation type, in any order: within gamma_(rows-1) of the sum of
  // their magnitudes (Higham 4.2), the accumulation type their type.
  if (b.dxSums.empty())
    return;
  std::vector<double> gotDx = valuesOf(dt, b.dx),
                      gotSums = valuesOf(param, b.dxSums);
  double terms = static_cast<double>(c.rows > 1 ? c.rows - 1 : 0);
  double gammaN = terms * uAcc / (1 - terms * uAcc);
  for (int64_t j = 0; j < c.cols; ++j) {
    double exact = 0, magnitude = 0;
    for (int64_t row = 0; row < c.rows; ++row) {
      exact += gotDx[row * c.cols + j];
      magnitude += std::fabs(gotDx[row * c.cols + j]);
    }
    ASSERT_LE(std::fabs(gotSums[j] - exact), gammaN * magnitude)
        << "grad_input's sum " << j << " dtype " << dt;
  }
}

/// Every type, with and without dropout and the sum's own gradient, rows
/// narrower and wider than a block, of a multiple of 4 elements (CUDA:
/// four elements per access) and not, residuals of every row and
/// broadcast ones (a position embedding's rows, one row).
inline void checkAllAddLayerNorms(
    std::mt19937 &rng,
    const std::function<AddLayerNormRun(mpcrt_dtype, const AddLayerNormCase &)>
        &backend) {
  const AddLayerNormCase cases[] = {{7, 33, 0, false},
                                    {7, 33, 0.25, true},
                                    {64, 256, 0.1, false},
                                    {5, 1031, 0.5, true},
                                    {3, 1032, 0.1, true},
                                    {12, 33, 0, false, 11, 3, 4},
                                    {64, 256, 0.1, true, 11, 3, 16},
                                    {6, 1032, 0, false, 11, 3, 3},
                                    {9, 40, 0.25, false, 11, 3, 1}};
  for (mpcrt_dtype dt : {MPCRT_F16, MPCRT_BF16, MPCRT_F32, MPCRT_F64})
    for (const AddLayerNormCase &c : cases) {
      SCOPED_TRACE("dtype " + std::to_string(dt) + " rows " +
                   std::to_string(c.rows) + " cols " + std::to_string(c.cols) +
                   " p " + std::to_string(c.p) + " residual rows " +
                   std::to_string(c.residualRows()));
      checkAddLayerNorm(dt, c, rng, backend(dt, c));
      if (::testing::Test::HasFatalFailure())
        return;
    }
}

} // namespace mpcrt::test

#endif // MPC_UNITTESTS_RUNTIME_ADDLAYERNORMCHECK_H
