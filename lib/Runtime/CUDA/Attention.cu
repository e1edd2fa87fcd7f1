//===- Attention.cu - mpc.attention on Tensor Cores, in chunks of heads --===//
//
// The CPU reference's algorithm (lib/Runtime/CPU/Nn.cpp), its products in
// cuBLASLt: a chunk of heads at a time, the scores S = q k^T of the chunk
// (f32 from f16/bf16 operands on Tensor Cores, f64 for f64) are written
// to a scratch buffer, one warp per row (a block past 1024 columns)
// turns them into the
// probabilities (scale, bias and mask's fill, the row's log-sum-exp, the
// dropout factors), rounded to the operands' type, and P v is the second
// GEMM. The backward recomputes S and P from the saved log-sum-exp and
// dPd = dO v^T; one warp (or block) per row forms dP = dPd Z, D_i = sum_j P dP
// and dS = scale P (dP - D) (none through a filled score); dv = Pd^T dO, dq =
// dS k and dk = dS^T q are three more GEMMs. Only a chunk's scores exist at any
// time (256 MiB, split evenly over the heads): the plan holds no [heads, sq,
// sk] tensor, as with the fused op on the CPU.
//
// The dropout bits are the dropout kernel's (formulas::dropoutWords on the
// index into the [heads, sq, sk] probabilities, one Philox call per four),
// the mask's fill formulas::masked's.
//
// Rounding: P (with its dropout factor) and dS are rounded to the
// operands' type before their products, as flash attention does for its
// Tensor Core products; with f32 and f64 operands nothing is rounded that
// the CPU reference keeps. Every head size is taken.
//
//===----------------------------------------------------------------------===//

#include "Device.cuh"
#include "Formulas.h"
#include "Kernels.h"

#include <algorithm>

namespace mpcrt::cuda {
namespace {

/// The scratch a call may take for a chunk's score-sized buffers (at
/// least one head's, whatever it needs).
int64_t scratchLimit = int64_t(256) << 20;

struct Dims {
  int64_t heads, sq, sk, d, dv;
  double scale, p;
  uint64_t seed;
  formulas::AttentionMask mask;
};

/// Rows of up to this many scores go one warp each (tests lower it).
int64_t warpColumns = 1024;

/// Score (h, i, j) from its dot product: scaled plus the bias, or the
/// mask's fill.
template <typename A>
__device__ A score(const Dims &m, int64_t h, int64_t i, int64_t j, A dot) {
  return formulas::masked(m.mask, h, i, j)
             ? static_cast<A>(m.mask.value)
             : static_cast<A>(m.scale) * dot +
                   static_cast<A>(formulas::scoreBias(m.mask, h, i, j));
}

/// f(j, z) for every column j of score row `row` (of [heads, sq, sk]),
/// z its dropout factor (0 or 1/(1-p); 1 without dropout), spread over
/// the team's threads: with dropout a thread takes the four elements of
/// one Philox call.
template <typename Tm, typename A, typename F>
__device__ void forEachColumn(const Dims &m, int64_t step, int64_t row, F f) {
  if (m.p == 0) {
    for (int64_t j = Tm::rank(); j < m.sk; j += Tm::size())
      f(j, A(1));
    return;
  }
  A keep = static_cast<A>(1 / (1 - m.p));
  uint64_t threshold = formulas::keepThreshold(m.p);
  uint64_t first = static_cast<uint64_t>(row * m.sk),
           end = first + static_cast<uint64_t>(m.sk);
  for (uint64_t q = first / 4 + Tm::rank(); 4 * q < end; q += Tm::size()) {
    uint32_t words[4];
    formulas::dropoutWords(m.seed, step, q, words);
    for (int e = 0; e < 4; ++e) {
      uint64_t index = 4 * q + e;
      if (index >= first && index < end)
        f(static_cast<int64_t>(index - first),
          words[e] >= threshold ? keep : A(0));
    }
  }
}

/// One team per row of the chunk (heads h0...): the log-sum-exp of the
/// row's scores (scaled, biased, filled) and its probabilities times
/// their dropout factors, rounded to T.
template <typename T, bool Warp>
__global__ void probabilitiesKernel(const typename Storage<T>::Acc *scores,
                                    T *probs, typename Storage<T>::Acc *lse,
                                    Dims m, int64_t h0, int64_t rows,
                                    const int64_t *step) {
  using S = Storage<T>;
  using A = typename S::Acc;
  using Tm = RowTeam<Warp>;
  int64_t t = *step;
  for (int64_t local = Tm::first(); local < rows; local += Tm::stride()) {
    int64_t h = h0 + local / m.sq, i = local % m.sq, row = h * m.sq + i;
    const A *s = scores + local * m.sk;
    A max = -INFINITY;
    for (int64_t j = Tm::rank(); j < m.sk; j += Tm::size())
      max = fmax(max, score(m, h, i, j, s[j]));
    max = Tm::template reduce<A, true>(max);
    A sum = 0;
    for (int64_t j = Tm::rank(); j < m.sk; j += Tm::size())
      sum += exp(score(m, h, i, j, s[j]) - max);
    A shift = max + log(Tm::template reduce<A>(sum));
    if (Tm::rank() == 0)
      lse[row] = shift;
    T *p = probs + local * m.sk;
    forEachColumn<Tm, A>(m, t, row, [&](int64_t j, A z) {
      p[j] = S::store(exp(score(m, h, i, j, s[j]) - shift) * z);
    });
  }
}

/// One team per row of the chunk: P from the saved log-sum-exp, dP =
/// dPd Z (written over dPd), Pd = P Z rounded to T, D = sum_j P dP, then
/// dS = scale P (dP - D) rounded to T (0 where the score is filled).
template <typename T, bool Warp>
__global__ void scoreGradKernel(const typename Storage<T>::Acc *scores,
                                typename Storage<T>::Acc *dpd,
                                const typename Storage<T>::Acc *lse, T *pd,
                                T *ds, Dims m, int64_t h0, int64_t rows,
                                const int64_t *step) {
  using S = Storage<T>;
  using A = typename S::Acc;
  int64_t t = *step;
  using Tm = RowTeam<Warp>;
  A scale = static_cast<A>(m.scale);
  for (int64_t local = Tm::first(); local < rows; local += Tm::stride()) {
    int64_t h = h0 + local / m.sq, i = local % m.sq, row = h * m.sq + i;
    const A *s = scores + local * m.sk;
    A *g = dpd + local * m.sk;
    T *pdRow = pd + local * m.sk, *dsRow = ds + local * m.sk;
    A shift = lse[row], dot = 0;
    forEachColumn<Tm, A>(m, t, row, [&](int64_t j, A z) {
      A p = exp(score(m, h, i, j, s[j]) - shift);
      A dp = g[j] * z;
      g[j] = dp;
      pdRow[j] = S::store(p * z);
      dot += p * dp;
    });
    dot = Tm::template reduce<A>(dot);
    Tm::sync(); // dP, written by another thread, read below
    for (int64_t j = Tm::rank(); j < m.sk; j += Tm::size()) {
      A p = exp(score(m, h, i, j, s[j]) - shift);
      dsRow[j] = formulas::masked(m.mask, h, i, j)
                     ? S::store(A(0))
                     : S::store(scale * p * (g[j] - dot));
    }
  }
}

/// Blocks for `rows` rows (a block loops over several beyond the cap).
unsigned blocksForRows(int64_t rows) {
  return static_cast<unsigned>(std::min<int64_t>(rows, int64_t(1) << 20));
}

/// Bytes rounded up to 256 (cuBLASLt's preferred alignment).
int64_t aligned(int64_t bytes) { return (bytes + 255) / 256 * 256; }

/// Heads per chunk for `perHead` bytes of scratch per head: as many as
/// the scratch limit holds (at least one), the chunks made even.
int64_t headsPerChunk(int64_t heads, int64_t perHead) {
  int64_t most =
      std::max<int64_t>(1, scratchLimit / std::max<int64_t>(1, perHead));
  int64_t chunks = (heads + most - 1) / most;
  return (heads + chunks - 1) / chunks;
}

/// Scratch for `regions` buffers of the given bytes, each 256-aligned.
template <size_t N> void carve(const int64_t (&bytes)[N], char *(&out)[N]) {
  int64_t total = 0;
  for (int64_t b : bytes)
    total += aligned(b);
  char *base = reinterpret_cast<char *>(scratchF32((total + 3) / 4));
  for (size_t r = 0; r < N; ++r) {
    out[r] = base;
    base += aligned(bytes[r]);
  }
}

} // namespace

int64_t setAttentionWarpColumns(int64_t columns) {
  int64_t previous = warpColumns;
  warpColumns = columns;
  return previous;
}

int64_t setAttentionScratchBytes(int64_t bytes) {
  int64_t previous = scratchLimit;
  scratchLimit = bytes;
  return previous;
}

void attention(mpcrt_dtype dtype, const void *query, const void *key,
               const void *value, void *result, void *logsumexp, int64_t heads,
               int64_t sq, int64_t sk, int64_t d, int64_t dv, double scale,
               double dropoutP, uint64_t seed, const int64_t *step,
               const formulas::AttentionMask &mask) {
  if (heads * sq == 0)
    return;
  Dims m{heads, sq, sk, d, dv, scale, dropoutP, seed, mask};
  mpcrt_dtype acc = dtype == MPCRT_F64 ? MPCRT_F64 : MPCRT_F32;
  dispatch(dtype, [&](auto *t) {
    using T = MPCRT_TYPE(t);
    using A = typename Storage<T>::Acc;
    int64_t area = sq * sk;
    int64_t chunk = headsPerChunk(heads, area * int64_t(sizeof(A) + sizeof(T)));
    char *regions[2];
    carve(
        {chunk * area * int64_t(sizeof(A)), chunk * area * int64_t(sizeof(T))},
        regions);
    auto *scores = reinterpret_cast<A *>(regions[0]);
    auto *probs = reinterpret_cast<T *>(regions[1]);
    auto *q = static_cast<const T *>(query), *k = static_cast<const T *>(key),
         *v = static_cast<const T *>(value);
    auto *o = static_cast<T *>(result);
    for (int64_t h0 = 0; h0 < heads; h0 += chunk) {
      int64_t n = std::min(chunk, heads - h0), rows = n * sq;
      matmulTo(dtype, acc, q + h0 * sq * d, sq * d, k + h0 * sk * d, sk * d,
               scores, n, sq, sk, d, false, true);
      if (sk <= warpColumns)
        probabilitiesKernel<T, true>
            <<<blocksFor(rows * 32), kThreads, 0, stream()>>>(
                scores, probs, static_cast<A *>(logsumexp), m, h0, rows, step);
      else
        probabilitiesKernel<T, false>
            <<<blocksForRows(rows), kThreads, 0, stream()>>>(
                scores, probs, static_cast<A *>(logsumexp), m, h0, rows, step);
      MPCRT_CUDA_LAUNCHED("attention (probabilities)");
      matmulTo(dtype, dtype, probs, area, v + h0 * sk * dv, sk * dv,
               o + h0 * sq * dv, n, sq, dv, sk, false, false);
    }
  });
}

void attentionBackward(mpcrt_dtype dtype, const void *grad, const void *query,
                       const void *key, const void *value,
                       const void *logsumexp, void *gradQuery, void *gradKey,
                       void *gradValue, int64_t heads, int64_t sq, int64_t sk,
                       int64_t d, int64_t dv, double scale, double dropoutP,
                       uint64_t seed, const int64_t *step,
                       const formulas::AttentionMask &mask) {
  if (heads * (sq + sk) == 0)
    return;
  Dims m{heads, sq, sk, d, dv, scale, dropoutP, seed, mask};
  mpcrt_dtype acc = dtype == MPCRT_F64 ? MPCRT_F64 : MPCRT_F32;
  dispatch(dtype, [&](auto *t) {
    using T = MPCRT_TYPE(t);
    using A = typename Storage<T>::Acc;
    int64_t area = sq * sk;
    int64_t chunk =
        headsPerChunk(heads, area * int64_t(2 * sizeof(A) + 2 * sizeof(T)));
    int64_t accBytes = chunk * area * int64_t(sizeof(A)),
            typeBytes = chunk * area * int64_t(sizeof(T));
    char *regions[4];
    carve({accBytes, accBytes, typeBytes, typeBytes}, regions);
    auto *scores = reinterpret_cast<A *>(regions[0]);
    auto *dpd = reinterpret_cast<A *>(regions[1]);
    auto *pd = reinterpret_cast<T *>(regions[2]);
    auto *ds = reinterpret_cast<T *>(regions[3]);
    auto *go = static_cast<const T *>(grad), *q = static_cast<const T *>(query),
         *k = static_cast<const T *>(key), *v = static_cast<const T *>(value);
    auto *dq = static_cast<T *>(gradQuery), *dk = static_cast<T *>(gradKey),
         *dV = static_cast<T *>(gradValue);
    for (int64_t h0 = 0; h0 < heads; h0 += chunk) {
      int64_t n = std::min(chunk, heads - h0), rows = n * sq;
      const T *qc = q + h0 * sq * d, *kc = k + h0 * sk * d,
              *vc = v + h0 * sk * dv, *goc = go + h0 * sq * dv;
      matmulTo(dtype, acc, qc, sq * d, kc, sk * d, scores, n, sq, sk, d, false,
               true);
      matmulTo(dtype, acc, goc, sq * dv, vc, sk * dv, dpd, n, sq, sk, dv, false,
               true);
      if (rows > 0) {
        if (sk <= warpColumns)
          scoreGradKernel<T, true>
              <<<blocksFor(rows * 32), kThreads, 0, stream()>>>(
                  scores, dpd, static_cast<const A *>(logsumexp), pd, ds, m, h0,
                  rows, step);
        else
          scoreGradKernel<T, false>
              <<<blocksForRows(rows), kThreads, 0, stream()>>>(
                  scores, dpd, static_cast<const A *>(logsumexp), pd, ds, m, h0,
                  rows, step);
        MPCRT_CUDA_LAUNCHED("attention_backward (score gradients)");
      }
      matmulTo(dtype, dtype, pd, area, goc, sq * dv, dV + h0 * sk * dv, n, sk,
               dv, sq, true, false);
      matmulTo(dtype, dtype, ds, area, kc, sk * d, dq + h0 * sq * d, n, sq, d,
               sk, false, false);
      matmulTo(dtype, dtype, ds, area, qc, sq * d, dk + h0 * sk * d, n, sk, d,
               sq, true, false);
    }
  });
}

} // namespace mpcrt::cuda
