//===- AttentionCheck.h - mpcrt_attention against float64 -------*- C++ -*-===//
//
// One check for every backend: fresh random query, key, value and output
// gradient, exact in their storage type; the backend's forward (result,
// log-sum-exp) and backward (three gradients) against a float64 reference
// written here from the definition (scores, softmax, the dropout bits of
// mpcrt_philox4x32, the chain rule through each), with the same bits
// dropped. Bound, per tensor, in the max norm: the result's rounding (u of
// its type) plus the f32 (f64) computation, whose error grows with the
// lengths of the sums (d and sk terms, each product and exp relative u):
// |got - ref| <= (u_out + 4 (d + sk + 8) u_acc) max |ref|, plus what the
// scores' own accumulation error (gamma_d of scale sum |q k|) moves the
// probabilities by, through each product (checkAttention).
// A backend that rounds the probabilities (with their dropout factors) and
// the score gradients to an f16/bf16 operand type before its Tensor Core
// products (the CUDA backend, as flash attention does) adds u_out times
// the largest sum of |terms| of each product: u_out sum_j |P Z v| for the
// result, sum_i |P Z dO| for dv, sum_j |dS k| for dq, sum_i |dS q| for dk.
// A backend that takes D_i = sum_j P dP as dO_i . O_i from its own rounded
// result (the CUDA flash kernels, as flash attention does) moves each D by
// |dO_i . (O_got - O)| (the result's own error, known once it ran) plus its
// f32 dot's gamma_(dv+2) sum |dO O_got|: through dS = scale P (dP - D), P
// times that in each score gradient.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_UNITTESTS_RUNTIME_ATTENTIONCHECK_H
#define MPC_UNITTESTS_RUNTIME_ATTENTIONCHECK_H

#include "FusedMatmulCheck.h"

#include <algorithm>
#include <cstring>

namespace mpcrt::test {

struct AttentionCase {
  int64_t heads, sq, sk, d, dv;
  double scale, p;
  uint64_t seed;
  int64_t step;
  // A mask over the scores [lead..., sq, sk] (lead's product is heads):
  // its shape (each dimension 1 or the scores'), empty for none, and fill.
  std::vector<int64_t> lead = {}, maskShape = {};
  double fill = 0;
  // An additive f32 bias of the scores (each dimension 1 or the scores'),
  // empty for none.
  std::vector<int64_t> biasShape = {};
  // The heads sharing each row of the operands (mpcrt_attention's
  // row_heads; mpc.attention's layout "bshd" where more than 1).
  int64_t rowHeads = 1;
};

/// Host buffers the backend reads and writes: q, k, v, dO and the mask
/// (bytes, and mpcrt_attention's layout: the scores' shape, then the
/// mask's strides) in; result, logsumexp, dq, dk, dv out (sized by the
/// check).
struct AttentionBuffers {
  std::vector<uint8_t> q, k, v, grad, result, lse, dq, dk, dv, mask;
  std::vector<int64_t> layout;
  std::vector<float> bias; // and its layout, as the mask's
  std::vector<int64_t> biasLayout;
};

using AttentionRun = std::function<void(AttentionBuffers &)>;

/// Where a backend's f16/bf16 arithmetic departs from the definition's
/// beyond its f32 sums, each adding its error to the bound (above).
struct AttentionNumerics {
  /// P (with its dropout factors) and dS rounded to the operands' type
  /// before their products.
  bool roundsProducts = false;
  /// D_i taken as dO_i . O_i from the forward's rounded result.
  bool rowDotsFromResult = false;
};

inline bool referenceKeeps(const AttentionCase &c, int64_t index) {
  uint64_t q = static_cast<uint64_t>(index) / 4;
  uint32_t counter[4] = {static_cast<uint32_t>(q),
                         static_cast<uint32_t>(c.step),
                         static_cast<uint32_t>(uint64_t(c.step) >> 32),
                         static_cast<uint32_t>(q >> 32)};
  uint32_t key[2] = {static_cast<uint32_t>(c.seed),
                     static_cast<uint32_t>(c.seed >> 32)};
  uint32_t words[4];
  mpcrt_philox4x32(counter, key, words);
  return words[index % 4] >= c.p * 4294967296.0;
}

/// [heads, rows, width] elements of `bytes` each as the operand of
/// `inner` heads sharing each row ([heads / inner, rows, inner, width]),
/// or (back) such an operand as [heads, rows, width].
inline std::vector<uint8_t> interleaveHeads(const std::vector<uint8_t> &from,
                                            size_t bytes, int64_t heads,
                                            int64_t rows, int64_t width,
                                            int64_t inner, bool back) {
  std::vector<uint8_t> to(from.size());
  size_t row = width * bytes;
  for (int64_t n = 0; n < heads; ++n)
    for (int64_t i = 0; i < rows; ++i) {
      size_t plain = (n * rows + i) * row,
             shared = ((n / inner * rows + i) * inner + n % inner) * row;
      std::memcpy(to.data() + (back ? plain : shared),
                  from.data() + (back ? shared : plain), row);
    }
  return to;
}

inline void expectClose(const char *what, mpcrt_dtype d,
                        const std::vector<uint8_t> &bytes,
                        const std::vector<double> &want, double uOut,
                        double slack, double extra = 0) {
  std::vector<double> got(want.size());
  mpcrt_cast(d, bytes.data(), MPCRT_F64, got.data(), got.size());
  double scale = 0;
  for (double w : want)
    scale = std::max(scale, std::fabs(w));
  double bound = (uOut + slack) * scale + extra;
  for (size_t n = 0; n < want.size(); ++n)
    ASSERT_LE(std::fabs(got[n] - want[n]), bound)
        << what << " element " << n << " (dtype " << d << ")";
}

inline void checkAttention(mpcrt_dtype dt, const AttentionCase &c,
                           std::mt19937 &rng, const AttentionRun &run,
                           AttentionNumerics numerics) {
  std::vector<double> q, k, v, go;
  AttentionBuffers b;
  b.q = randomOf(dt, c.heads * c.sq * c.d, rng, q);
  b.k = randomOf(dt, c.heads * c.sk * c.d, rng, k);
  b.v = randomOf(dt, c.heads * c.sk * c.dv, rng, v);
  b.grad = randomOf(dt, c.heads * c.sq * c.dv, rng, go);
  std::vector<int64_t> scores(c.lead);
  scores.insert(scores.end(), {c.sq, c.sk});
  // A tensor of `shape` over the scores: its values from `draw`, and its
  // strides (0 where it broadcasts) appended to `layout` after the scores'
  // shape, as mpcrt_attention takes them.
  auto overScores = [&](const std::vector<int64_t> &shape, auto draw,
                        auto &values, std::vector<int64_t> &layout) {
    std::vector<int64_t> strides(scores.size(), 0);
    if (shape.empty())
      return strides;
    int64_t count = 1;
    for (int64_t n : shape)
      count *= n;
    for (int64_t n = 0; n < count; ++n)
      values.push_back(draw());
    int64_t stride = 1;
    for (size_t dim = scores.size(); dim-- > 0;) {
      strides[dim] = shape[dim] == 1 ? 0 : stride;
      stride *= shape[dim];
    }
    layout = scores;
    layout.insert(layout.end(), strides.begin(), strides.end());
    return strides;
  };
  std::uniform_int_distribution<int> third(0, 2);
  std::normal_distribution<float> normal(0, 2);
  // About a third of the scores filled, where there is a mask; a bias of
  // normal values and, for a third of them, Hugging Face's padding bias.
  std::vector<int64_t> maskStrides = overScores(
      c.maskShape, [&] { return uint8_t(third(rng) == 0); }, b.mask, b.layout);
  std::vector<int64_t> biasStrides = overScores(
      c.biasShape, [&] { return third(rng) == 0 ? -1e4f : normal(rng); },
      b.bias, b.biasLayout);
  auto offset = [&](const std::vector<int64_t> &strides, int64_t h, int64_t i,
                    int64_t j) {
    int64_t at =
        i * strides[scores.size() - 2] + j * strides[scores.size() - 1];
    for (size_t dim = scores.size() - 2; dim-- > 0;) {
      at += (h % scores[dim]) * strides[dim];
      h /= scores[dim];
    }
    return at;
  };
  auto filled = [&](int64_t h, int64_t i, int64_t j) {
    return !b.mask.empty() && b.mask[offset(maskStrides, h, i, j)] != 0;
  };
  auto biasOf = [&](int64_t h, int64_t i, int64_t j) {
    return b.bias.empty() ? 0.0 : double(b.bias[offset(biasStrides, h, i, j)]);
  };
  mpcrt_dtype stats = dt == MPCRT_F64 ? MPCRT_F64 : MPCRT_F32;
  b.result.resize(go.size() * elementBytes(dt));
  b.lse.resize(c.heads * c.sq * elementBytes(stats));
  b.dq.resize(q.size() * elementBytes(dt));
  b.dk.resize(k.size() * elementBytes(dt));
  b.dv.resize(v.size() * elementBytes(dt));
  // The backend's operands with heads sharing rows; its results back as
  // [heads, s, width] for the checks below.
  auto relayout = [&](std::vector<uint8_t> &x, int64_t rows, int64_t width,
                      bool back) {
    if (c.rowHeads > 1)
      x = interleaveHeads(x, elementBytes(dt), c.heads, rows, width, c.rowHeads,
                          back);
  };
  relayout(b.q, c.sq, c.d, false);
  relayout(b.k, c.sk, c.d, false);
  relayout(b.v, c.sk, c.dv, false);
  relayout(b.grad, c.sq, c.dv, false);
  run(b);
  relayout(b.result, c.sq, c.dv, true);
  relayout(b.dq, c.sq, c.d, true);
  relayout(b.dk, c.sk, c.d, true);
  relayout(b.dv, c.sk, c.dv, true);
  bool lowp = dt == MPCRT_F16 || dt == MPCRT_BF16;
  bool rounds = numerics.roundsProducts && lowp,
       fromResult = numerics.rowDotsFromResult && lowp;
  std::vector<double> gotResult(go.size());
  mpcrt_cast(dt, b.result.data(), MPCRT_F64, gotResult.data(),
             gotResult.size());

  double uAcc = dt == MPCRT_F64 ? 0x1p-53 : 0x1p-24;
  std::vector<double> o(go.size()), lse(c.heads * c.sq), dq(q.size(), 0),
      dk(k.size(), 0), dv(v.size(), 0), p(c.sk), z(c.sk), dp(c.sk);
  // What the scores' own errors can move each tensor by (below), and the
  // log-sum-exp's largest.
  std::vector<double> oMoves(o.size(), 0), dqMoves(q.size(), 0),
      dkMoves(k.size(), 0), dvMoves(v.size(), 0), err(c.sk), rel(c.sk);
  double lseMoves = 0;
  // Each product's sum of |terms| (the rounded factor's share).
  std::vector<double> oAbs(o.size(), 0), dqAbs(q.size(), 0), dkAbs(k.size(), 0),
      dvAbs(v.size(), 0);
  for (int64_t h = 0; h < c.heads; ++h)
    for (int64_t i = 0; i < c.sq; ++i) {
      int64_t r = h * c.sq + i;
      double max = -INFINITY;
      for (int64_t j = 0; j < c.sk; ++j) {
        double s = 0, sAbs = 0;
        for (int64_t e = 0; e < c.d; ++e) {
          s += q[r * c.d + e] * k[(h * c.sk + j) * c.d + e];
          sAbs += std::fabs(q[r * c.d + e] * k[(h * c.sk + j) * c.d + e]);
        }
        p[j] = filled(h, i, j) ? c.fill : c.scale * s + biasOf(h, i, j);
        // The backend's score is off by at most gamma_d of scale sum |q k|
        // (the product's accumulation) and two roundings of the score (the
        // scaling, the bias's addition); a fill is exact.
        err[j] = filled(h, i, j) ? 0
                                 : (c.d + 2) * uAcc * c.scale * sAbs +
                                       2 * uAcc * std::fabs(p[j]);
        max = std::max(max, p[j]);
      }
      double sum = 0;
      for (int64_t j = 0; j < c.sk; ++j)
        sum += std::exp(p[j] - max);
      lse[r] = max + std::log(sum);
      double rowDot = 0;
      for (int64_t j = 0; j < c.sk; ++j) {
        p[j] = std::exp(p[j] - lse[r]);
        z[j] = c.p == 0 || referenceKeeps(c, r * c.sk + j) ? 1 / (1 - c.p) : 0;
        double dpd = 0;
        for (int64_t e = 0; e < c.dv; ++e) {
          double ve = v[(h * c.sk + j) * c.dv + e];
          o[r * c.dv + e] += p[j] * z[j] * ve;
          oAbs[r * c.dv + e] += std::fabs(p[j] * z[j] * ve);
          dpd += go[r * c.dv + e] * ve;
          dv[(h * c.sk + j) * c.dv + e] += p[j] * z[j] * go[r * c.dv + e];
          dvAbs[(h * c.sk + j) * c.dv + e] +=
              std::fabs(p[j] * z[j] * go[r * c.dv + e]);
        }
        dp[j] = dpd * z[j];
        rowDot += p[j] * dp[j];
      }
      // The log-sum-exp moves by at most m = sum_l P_l err_l, probability
      // j by a factor within exp(+-(err_j + m)): rel_j (1% for the second
      // order); through the products, D and dS.
      double m = 0, dMoves = 0;
      for (int64_t j = 0; j < c.sk; ++j)
        m += p[j] * err[j];
      lseMoves = std::max(lseMoves, 1.01 * m);
      if (fromResult) {
        double shift = 0, dotAbs = 0;
        for (int64_t e = 0; e < c.dv; ++e) {
          int64_t at = r * c.dv + e;
          shift += go[at] * (gotResult[at] - o[at]);
          dotAbs += std::fabs(go[at] * gotResult[at]);
        }
        dMoves += std::fabs(shift) + (c.dv + 2) * uAcc * dotAbs;
      }
      for (int64_t j = 0; j < c.sk; ++j) {
        rel[j] = 1.01 * (err[j] + m);
        dMoves += p[j] * rel[j] * std::fabs(dp[j]);
        for (int64_t e = 0; e < c.dv; ++e) {
          oMoves[r * c.dv + e] +=
              p[j] * z[j] * rel[j] * std::fabs(v[(h * c.sk + j) * c.dv + e]);
          dvMoves[(h * c.sk + j) * c.dv + e] +=
              p[j] * z[j] * rel[j] * std::fabs(go[r * c.dv + e]);
        }
      }
      for (int64_t j = 0; j < c.sk; ++j) {
        double ds = filled(h, i, j) ? 0 : c.scale * p[j] * (dp[j] - rowDot);
        double dsMoves =
            filled(h, i, j) ? 0
                            : c.scale * p[j] *
                                  (rel[j] * std::fabs(dp[j] - rowDot) + dMoves);
        for (int64_t e = 0; e < c.d; ++e) {
          dqMoves[r * c.d + e] +=
              dsMoves * std::fabs(k[(h * c.sk + j) * c.d + e]);
          dkMoves[(h * c.sk + j) * c.d + e] +=
              dsMoves * std::fabs(q[r * c.d + e]);
          dq[r * c.d + e] += ds * k[(h * c.sk + j) * c.d + e];
          dk[(h * c.sk + j) * c.d + e] += ds * q[r * c.d + e];
          dqAbs[r * c.d + e] += std::fabs(ds * k[(h * c.sk + j) * c.d + e]);
          dkAbs[(h * c.sk + j) * c.d + e] += std::fabs(ds * q[r * c.d + e]);
        }
      }
    }
  double slack = 4 * (c.d + c.sk + 8) * uAcc, uOut = unitRoundoff(dt);
  // What the scores' errors move each tensor by, plus a rounding's u_out
  // of each product's sum of |terms| where the backend rounds P and dS.
  auto largest = [](const std::vector<double> &v) {
    return *std::max_element(v.begin(), v.end());
  };
  auto extra = [&](const std::vector<double> &abs,
                   const std::vector<double> &moved) {
    return (rounds ? uOut * largest(abs) : 0.0) + largest(moved);
  };
  expectClose("result", dt, b.result, o, uOut, slack, extra(oAbs, oMoves));
  expectClose("logsumexp", stats, b.lse, lse, 0, slack, lseMoves);
  expectClose("grad_query", dt, b.dq, dq, uOut, slack, extra(dqAbs, dqMoves));
  expectClose("grad_key", dt, b.dk, dk, uOut, slack, extra(dkAbs, dkMoves));
  expectClose("grad_value", dt, b.dv, dv, uOut, slack, extra(dvAbs, dvMoves));
}

/// Every type, with and without dropout, several shapes (sq != sk, d != dv,
/// head sizes beyond one warp's 32); `numerics` as checkAttention.
inline void checkAllAttention(
    std::mt19937 &rng,
    const std::function<AttentionRun(mpcrt_dtype, const AttentionCase &)>
        &backend,
    AttentionNumerics numerics = {}) {
  const AttentionCase cases[] = {
      {3, 16, 16, 8, 8, 0.35, 0, 0, 0, {3}},
      {2, 7, 19, 40, 24, 0.15, 0.3, 0x1234567890ull, 5, {2}},
      {1, 33, 9, 72, 72, 0.12, 0.1, 42, 1ll << 33, {1}},
      // Head sizes beyond 256, keys not a multiple of Philox's four.
      {2, 6, 10, 288, 264, 0.06, 0.1, 99, 2, {2}},
      // Several query and key tiles of a flash kernel, partial ones at the
      // far ends: head size 64, and 96 with 80 (wider tiles) with a
      // padding mask, both with dropout; head sizes that are not multiples
      // of 8 (loaded an element at a time).
      {1, 70, 70, 64, 64, 0.125, 0.1, 5, 6, {1}},
      {1, 40, 45, 96, 80, 0.1, 0.2, 11, 7, {1}, {1, 1, 45}, -1e4},
      {2, 21, 37, 12, 20, 0.3, 0.1, 13, 8, {2}},
      // Masks: padding ([2, 1, 1, sk] over [2, 3] heads, filled with -1e4,
      // with dropout), a full [heads, sq, sk] one, one broadcast over the
      // first leading dimension and the keys.
      {6, 5, 11, 16, 8, 0.25, 0.2, 7, 3, {2, 3}, {2, 1, 1, 11}, -1e4},
      {4, 9, 9, 8, 8, 0.3, 0, 0, 0, {4}, {4, 9, 9}, -30},
      {6, 5, 7, 8, 8, 0.3, 0, 0, 0, {2, 3}, {1, 3, 5, 1}, -2},
      // Additive biases: Hugging Face's padding bias [2, 1, 1, sk] (with
      // dropout), a full one, one shared by the batch [1, heads, sq, sk]
      // (relative positions, ALiBi), and a bias beside a mask.
      {6, 5, 11, 16, 8, 0.25, 0.2, 9, 4, {2, 3}, {}, 0, {2, 1, 1, 11}},
      {4, 9, 9, 8, 8, 0.3, 0, 0, 0, {4}, {}, 0, {4, 9, 9}},
      {6, 5, 7, 8, 8, 0.3, 0, 0, 0, {2, 3}, {}, 0, {1, 3, 5, 7}},
      {6,
       5,
       11,
       16,
       8,
       0.25,
       0,
       0,
       0,
       {2, 3},
       {2, 1, 1, 11},
       -1e4,
       {1, 3, 5, 11}},
      // Heads sharing rows (layout "bshd"): three a row, a flash kernel's
      // several query and key tiles with a padding mask and dropout; a
      // bias over two a row; head sizes that are not multiples of 8; one
      // batch whose heads all share the rows.
      {6,
       40,
       45,
       64,
       64,
       0.125,
       0.1,
       21,
       3,
       {2, 3},
       {2, 1, 1, 45},
       -1e4,
       {},
       3},
      {4, 9, 13, 8, 8, 0.3, 0, 0, 0, {2, 2}, {}, 0, {1, 2, 9, 13}, 2},
      {6, 7, 19, 12, 20, 0.3, 0.2, 3, 4, {2, 3}, {}, 0, {}, 3},
      {4, 33, 33, 32, 32, 0.17, 0.1, 8, 2, {1, 4}, {}, 0, {}, 4}};
  for (mpcrt_dtype dt : {MPCRT_F16, MPCRT_BF16, MPCRT_F32, MPCRT_F64})
    for (const AttentionCase &c : cases) {
      SCOPED_TRACE("case " + std::to_string(&c - cases) + " of " +
                   std::to_string(std::size(cases)));
      checkAttention(dt, c, rng, backend(dt, c), numerics);
      if (::testing::Test::HasFatalFailure())
        return;
    }
}

} // namespace mpcrt::test

#endif // MPC_UNITTESTS_RUNTIME_ATTENTIONCHECK_H
