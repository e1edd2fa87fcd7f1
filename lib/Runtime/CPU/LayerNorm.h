//===- LayerNorm.h - layer normalisation rows -------------------*- C++ -*-===//
//
// The reference arithmetic of mpc.layer_norm, shared by mpc.add_layer_norm:
// one row's two-pass statistics and normalised values, and the backward
// over all rows with the input gradient of each row handed to the caller
// unrounded (mpc.layer_norm stores it; the fused op adds the sum's
// gradient and applies the dropout first).
//
//===----------------------------------------------------------------------===//

#ifndef MPC_LIB_RUNTIME_CPU_LAYERNORM_H
#define MPC_LIB_RUNTIME_CPU_LAYERNORM_H

#include "Parallel.h"
#include "Storage.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace mpcrt {

/// y = (row - mean) * rstd * gamma + beta over `cols`, the biased variance
/// taken in two passes in the accumulation type.
template <typename T, typename Stat>
void layerNormRow(const T *row, mpcrt_dtype paramDtype, const void *gamma,
                  const void *beta, T *y, Stat &mean, Stat &rstd, int64_t cols,
                  double epsilon) {
  using S = Storage<T>;
  using A = typename S::Acc;
  A mu = 0;
  for (int64_t c = 0; c < cols; ++c)
    mu += S::load(row[c]);
  mu /= static_cast<A>(cols);
  A var = 0;
  for (int64_t c = 0; c < cols; ++c) {
    A d = S::load(row[c]) - mu;
    var += d * d;
  }
  var /= static_cast<A>(cols);
  A inv = A(1) / std::sqrt(var + static_cast<A>(epsilon));
  mean = static_cast<Stat>(mu);
  rstd = static_cast<Stat>(inv);
  for (int64_t c = 0; c < cols; ++c) {
    A g = static_cast<A>(loadAny(paramDtype, gamma, c));
    A b = static_cast<A>(loadAny(paramDtype, beta, c));
    y[c] = S::store((S::load(row[c]) - mu) * inv * g + b);
  }
}

/// The backward of layerNormRow over `rows`: dgamma and dbeta (partial sums
/// over blocks of rows, sizes fixed by cols, added in block order) stored as
/// `paramDtype`, added to gammaAddend and betaAddend where not null
/// (storeSumAny), and each row's input gradient, unrounded, handed to
/// emitRow(r, values) (rows in parallel).
template <typename T, typename Stat, typename EmitRow>
void layerNormBackwardRows(const T *dy, const T *x, const Stat *mean,
                           const Stat *rstd, mpcrt_dtype paramDtype,
                           const void *gamma, void *dgamma, void *dbeta,
                           const void *gammaAddend, const void *betaAddend,
                           int64_t rows, int64_t cols, EmitRow emitRow) {
  using S = Storage<T>;
  using A = typename S::Acc;
  int64_t block =
      std::max<int64_t>(1, (int64_t(1) << 14) / std::max<int64_t>(cols, 1));
  int64_t blocks = (rows + block - 1) / block;
  std::vector<A> partial(static_cast<size_t>(2 * blocks * cols), A(0));
  parallelFor(blocks, 1, [&](int64_t b0, int64_t b1) {
    std::vector<A> dx(static_cast<size_t>(cols));
    for (int64_t b = b0; b < b1; ++b) {
      A *dg = partial.data() + 2 * b * cols, *db = dg + cols;
      for (int64_t r = b * block; r < std::min(rows, (b + 1) * block); ++r) {
        A mu = static_cast<A>(mean[r]), inv = static_cast<A>(rstd[r]);
        // dx = inv * (g*dy - mean(g*dy) - xhat * mean(g*dy*xhat))
        A sumGdy = 0, sumGdyXhat = 0;
        for (int64_t c = 0; c < cols; ++c) {
          A xhat = (S::load(x[r * cols + c]) - mu) * inv;
          A d = S::load(dy[r * cols + c]);
          A gdy = static_cast<A>(loadAny(paramDtype, gamma, c)) * d;
          sumGdy += gdy;
          sumGdyXhat += gdy * xhat;
          dg[c] += d * xhat;
          db[c] += d;
        }
        // The two means once a row (the CUDA backend's order too: a
        // division per element cost it about ten instructions each).
        A n = static_cast<A>(cols);
        A meanGdy = sumGdy / n, meanGdyXhat = sumGdyXhat / n;
        for (int64_t c = 0; c < cols; ++c) {
          A xhat = (S::load(x[r * cols + c]) - mu) * inv;
          A gdy = static_cast<A>(loadAny(paramDtype, gamma, c)) *
                  S::load(dy[r * cols + c]);
          dx[c] = inv * (gdy - meanGdy - xhat * meanGdyXhat);
        }
        emitRow(r, static_cast<const A *>(dx.data()));
      }
    }
  });
  for (int64_t c = 0; c < cols; ++c) {
    A dg = 0, db = 0;
    for (int64_t b = 0; b < blocks; ++b) {
      dg += partial[2 * b * cols + c];
      db += partial[(2 * b + 1) * cols + c];
    }
    storeSumAny(paramDtype, dgamma, gammaAddend, c, dg);
    storeSumAny(paramDtype, dbeta, betaAddend, c, db);
  }
}

} // namespace mpcrt

#endif // MPC_LIB_RUNTIME_CPU_LAYERNORM_H
