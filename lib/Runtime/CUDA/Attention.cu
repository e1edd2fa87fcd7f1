//===- Attention.cu - mpc.attention on Tensor Cores ----------------------===//
//
// f16 and bf16 with head sizes up to 128: flash kernels (below, after the
// chunked path's), no score in memory. Everything else:
// the CPU reference's algorithm (lib/Runtime/CPU/Nn.cpp), its products in
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
// index into the [heads, sq, sk] probabilities, one Philox call per four);
// the mask, the bias and the scale are applied as on the CPU
// (formulas::HeadScores, the offsets taken once per head).
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

#if defined(__NVCC__)
#include <mma.h>
#endif

namespace mpcrt::cuda {
namespace {

/// The scratch a call may take for a chunk's score-sized buffers (at
/// least one head's, whatever it needs).
int64_t scratchLimit = int64_t(256) << 20;

struct Dims {
  int64_t heads, sq, sk, d, dv;
  formulas::HeadRows layout;
  double scale, p;
  uint64_t seed;
  formulas::AttentionMask mask;
  /// Head h as (h / inner, h % inner) where heads share rows (Shared:
  /// the flash kernels' instances for layout.inner > 1), h itself
  /// otherwise; taken once per block. The shared form's addresses cost
  /// registers (ptxas, f16, head size 64: forward 247, query side 164,
  /// key side 186, against 219, 128 and 190), so the instances for heads
  /// that do not share rows keep the plain form.
  struct Head {
    int64_t group, lane;
  };
  template <bool Shared> __device__ Head head(int64_t h) const {
    if constexpr (!Shared)
      return {h, 0};
    auto n = static_cast<uint32_t>(h),
         inner = static_cast<uint32_t>(layout.inner);
    return {n / inner, n % inner};
  }
  /// Row `row` of head h in an operand of `rows` rows of `width` a head:
  /// layout.first(h, rows, width) + row * ld<Shared>(width).
  template <bool Shared>
  __device__ int64_t at(Head h, int64_t rows, int64_t width,
                        int64_t row) const {
    if constexpr (!Shared)
      return (h.group * rows + row) * width;
    return ((h.group * rows + row) * layout.inner + h.lane) * width;
  }
  /// The distance between two rows of a head.
  template <bool Shared> __device__ int64_t ld(int64_t width) const {
    return Shared ? layout.inner * width : width;
  }
};

/// Rows of up to this many scores go one warp each (tests lower it).
int64_t warpColumns = 1024;

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
  MPCRT_KERNEL_PROLOGUE();
  using S = Storage<T>;
  using A = typename S::Acc;
  using Tm = RowTeam<Warp>;
  int64_t t = *step;
  for (int64_t local = Tm::first(); local < rows; local += Tm::stride()) {
    int64_t h = h0 + local / m.sq, i = local % m.sq, row = h * m.sq + i;
    const A *s = scores + local * m.sk;
    formulas::HeadScores<A> score(m.mask, m.scale, h);
    A max = -INFINITY;
    for (int64_t j = Tm::rank(); j < m.sk; j += Tm::size())
      max = fmax(max, score(i, j, s[j]));
    max = Tm::template reduce<A, true>(max);
    A sum = 0;
    for (int64_t j = Tm::rank(); j < m.sk; j += Tm::size())
      sum += exp(score(i, j, s[j]) - max);
    A shift = max + log(Tm::template reduce<A>(sum));
    if (Tm::rank() == 0)
      lse[row] = shift;
    T *p = probs + local * m.sk;
    forEachColumn<Tm, A>(m, t, row, [&](int64_t j, A z) {
      p[j] = S::store(exp(score(i, j, s[j]) - shift) * z);
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
  MPCRT_KERNEL_PROLOGUE();
  using S = Storage<T>;
  using A = typename S::Acc;
  int64_t t = *step;
  using Tm = RowTeam<Warp>;
  for (int64_t local = Tm::first(); local < rows; local += Tm::stride()) {
    int64_t h = h0 + local / m.sq, i = local % m.sq, row = h * m.sq + i;
    const A *s = scores + local * m.sk;
    A *g = dpd + local * m.sk;
    T *pdRow = pd + local * m.sk, *dsRow = ds + local * m.sk;
    formulas::HeadScores<A> score(m.mask, m.scale, h);
    A shift = lse[row], dot = 0;
    forEachColumn<Tm, A>(m, t, row, [&](int64_t j, A z) {
      A p = exp(score(i, j, s[j]) - shift);
      A dp = g[j] * z;
      g[j] = dp;
      pdRow[j] = S::store(p * z);
      dot += p * dp;
    });
    dot = Tm::template reduce<A>(dot);
    Tm::sync(); // dP, written by another thread, read below
    for (int64_t j = Tm::rank(); j < m.sk; j += Tm::size()) {
      A p = exp(score(i, j, s[j]) - shift);
      dsRow[j] = score.filled(i, j) ? S::store(A(0))
                                    : S::store(score.scale * p * (g[j] - dot));
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

// ---------------------------------------------------------------------------
// Flash attention (f16 and bf16 operands, head sizes up to 128): the scores
// never leave the chip. One block takes a tile of a head's queries and
// walks its keys in tiles; each warp owns 16 query rows. The scores of a
// tile (q k^T on Tensor Cores, nvcuda::wmma m16n16k16, f32 sums) go to
// shared memory, the warp's lanes turn them into probabilities against the
// row's running maximum (two lanes a row), rescale the row's output and
// sum, and add P v (P and its dropout factor rounded to T, as the chunked
// path rounds them). The output stays in accumulator fragments for the
// whole walk, each element scaled by its row's factor (FragmentRows), and
// a warp's query fragments stay in registers. The backward recomputes the
// scores from the saved log-sum-exp in two kernels without atomics, so its
// results do not depend on the order blocks run in: one per query tile takes
// D_i = sum_j P dP as dO_i . O_i from the forward's result, as flash attention
// does (the chunked path sums P dP), and walks the keys once for dq = dS k; one
// per key tile forms dv = Pd^T dO and dk = dS^T q over the query tiles, reading
// D. The mask, bias, fill and dropout bits are the chunked path's.
// ---------------------------------------------------------------------------

namespace wmma = nvcuda::wmma;

/// The tiles of the flash kernels for head sizes up to 16 MC (MC 4 or 8):
/// q, k, v and dO tiles of D columns (rows LDT elements apart, 16 bytes
/// past D so that a column's reads spread over the banks), score tiles of
/// f32 with rows of the other side's tile plus 4.
template <int MC> struct Flash {
  static constexpr int D = 16 * MC, LDT = D + 8;
  /// The forward: 4 warps of 16 queries, keys in tiles of KeyTile.
  static constexpr int kForwardWarps = 4, KeyTile = MC <= 4 ? 64 : 32;
  /// The backward: Warps warps of 16 rows (queries for dq, keys for dk and
  /// dv), the other side in tiles of 32.
  static constexpr int Warps = MC <= 4 ? 4 : 2, OtherTile = 32;
};

template <typename T>
using FragA = wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major>;
template <typename T, typename L>
using FragB = wmma::fragment<wmma::matrix_b, 16, 16, 16, T, L>;
using FragC = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;

/// Rows [0, tileRows) of a tile in shared memory from `src` (rows of
/// `cols` elements `ld` apart, `rows` of them), zeros past either; 16 bytes
/// at a time where `vectors` (cols and ld multiples of 8, src aligned to
/// 16 bytes).
template <int MC, typename T>
__device__ void loadTile(T *tile, const T *src, int64_t rows, int64_t cols,
                         int64_t ld, int tileRows, bool vectors) {
  constexpr int D = Flash<MC>::D, LDT = Flash<MC>::LDT;
  if (vectors) {
    constexpr int G = D / 8;
    for (int g = threadIdx.x; g < tileRows * G; g += blockDim.x) {
      int r = g / G, c = g % G * 8;
      uint4 value = make_uint4(0, 0, 0, 0);
      if (r < rows && c < cols)
        value = *reinterpret_cast<const uint4 *>(src + r * ld + c);
      *reinterpret_cast<uint4 *>(tile + r * LDT + c) = value;
    }
    return;
  }
  for (int e = threadIdx.x; e < tileRows * D; e += blockDim.x) {
    int r = e / D, c = e % D;
    tile[r * LDT + c] =
        r < rows && c < cols ? src[r * ld + c] : Storage<T>::store(0.0f);
  }
}

/// A warp's 16 rows of a tile (ldm LDT) as the left operand of its
/// products, a fragment per 16 columns: held in registers for the whole
/// walk where Held (read from shared memory once, not once per block of
/// the other side), loaded at each use otherwise (where registers are
/// short). The tile must be in shared memory when a Held one is made.
template <typename T, int MC, bool Held> struct RowFragments;
template <typename T, int MC> struct RowFragments<T, MC, true> {
  FragA<T> f[MC];
  __device__ RowFragments(const T *a, int chunks) {
#pragma unroll
    for (int c = 0; c < MC; ++c)
      if (c < chunks)
        wmma::load_matrix_sync(f[c], a + 16 * c, Flash<MC>::LDT);
  }
  __device__ const FragA<T> &operator()(int c, FragA<T> &) const {
    return f[c];
  }
};
template <typename T, int MC> struct RowFragments<T, MC, false> {
  const T *a;
  __device__ RowFragments(const T *a, int) : a(a) {}
  __device__ const FragA<T> &operator()(int c, FragA<T> &spare) const {
    wmma::load_matrix_sync(spare, a + 16 * c, Flash<MC>::LDT);
    return spare;
  }
};

/// a b^T into a 16x16 f32 block at `out` (ldm `ldOut`): a's 16 rows and b's
/// 16 rows of `chunks` 16-column chunks, b in a tile of ldm LDT.
template <typename T, int MC, bool Held>
__device__ void productTransposed(const RowFragments<T, MC, Held> &a,
                                  const T *b, int chunks, float *out,
                                  int ldOut) {
  constexpr int LDT = Flash<MC>::LDT;
  FragC acc;
  wmma::fill_fragment(acc, 0.0f);
#pragma unroll
  for (int c = 0; c < MC; ++c)
    if (c < chunks) {
      FragA<T> spare;
      FragB<T, wmma::col_major> fb;
      wmma::load_matrix_sync(fb, b + 16 * c, LDT);
      wmma::mma_sync(acc, a(c, spare), fb, acc);
    }
  wmma::store_matrix_sync(out, acc, ldOut, wmma::mem_row_major);
}

/// The row (of 16) of each of a lane's accumulator elements. How a
/// fragment's elements lie over the lanes is unspecified, but fixed for its
/// type: a tile of row numbers loaded through the warp's scratch `w` (16
/// rows of ldm LDS f32) shows it, so that a lane can scale its elements by
/// their rows' factors.
struct FragmentRows {
  int row[FragC::num_elements];
  template <int LDS> __device__ static FragmentRows of(float *w) {
    int lane = threadIdx.x % 32;
    __syncwarp(); // the scratch's last readers are done
    for (int e = lane; e < 256; e += 32)
      w[e / 16 * LDS + e % 16] = static_cast<float>(e / 16);
    __syncwarp();
    FragC probe;
    wmma::load_matrix_sync(probe, w, LDS, wmma::mem_row_major);
    FragmentRows rows;
#pragma unroll
    for (int e = 0; e < FragC::num_elements; ++e)
      rows.row[e] = static_cast<int>(probe.x[e]);
    __syncwarp(); // the scratch is free again
    return rows;
  }
};

/// f(element, its row) for each of the lane's elements of acc[c] (c <
/// chunks).
template <int MC, typename F>
__device__ void forFragmentRows(FragC (&acc)[MC], int chunks,
                                const FragmentRows &rows, F f) {
#pragma unroll
  for (int c = 0; c < MC; ++c)
    if (c < chunks)
#pragma unroll
      for (int e = 0; e < FragC::num_elements; ++e)
        f(acc[c].x[e], rows.row[e]);
}

/// acc[c] += a b[:, 16c:16c+16] for c < chunks: a a warp's 16 x K block of
/// T (ldm ldA), b a K x D tile (ldm LDT).
template <typename T, int MC, int K>
__device__ void accumulateProduct(FragC (&acc)[MC], const T *a, int ldA,
                                  const T *b, int chunks) {
  constexpr int LDT = Flash<MC>::LDT;
#pragma unroll
  for (int kk = 0; kk < K / 16; ++kk) {
    FragA<T> fa;
    wmma::load_matrix_sync(fa, a + 16 * kk, ldA);
#pragma unroll
    for (int c = 0; c < MC; ++c)
      if (c < chunks) {
        FragB<T, wmma::row_major> fb;
        wmma::load_matrix_sync(fb, b + 16 * kk * LDT + 16 * c, LDT);
        wmma::mma_sync(acc[c], fa, fb, acc[c]);
      }
  }
}

/// Writes acc[c] (c < chunks) as 16 rows of `dst` (rows of `cols`
/// elements `ld` apart, the first `rows` of them) through the warp's
/// scratch `w` (16 rows of ldm LDS f32), as many fragments at a time as it
/// holds: lane takes row lane / 2, columns 16 c + 8 (lane % 2) + e.
template <typename T, int MC, int LDS>
__device__ void storeRows(FragC (&acc)[MC], int chunks, float *w, T *dst,
                          int64_t rows, int64_t cols, int64_t ld) {
  constexpr int G = LDS / 16 < MC ? LDS / 16 : MC;
  int lane = threadIdx.x % 32, r = lane / 2, half = lane % 2;
#pragma unroll
  for (int c0 = 0; c0 < MC; c0 += G) {
    if (c0 >= chunks)
      break;
    __syncwarp(); // the scratch's last readers are done
#pragma unroll
    for (int c = c0; c < c0 + G; ++c)
      if (c < chunks)
        wmma::store_matrix_sync(w + 16 * (c - c0), acc[c], LDS,
                                wmma::mem_row_major);
    __syncwarp();
#pragma unroll
    for (int c = c0; c < c0 + G; ++c)
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        int64_t col = 16 * c + 8 * half + e;
        if (c < chunks && r < rows && col < cols)
          dst[r * ld + col] =
              Storage<T>::store(w[r * LDS + 16 * (c - c0) + 8 * half + e]);
      }
  }
}

template <typename T, int MC, bool Shared>
__global__ void __launch_bounds__(Flash<MC>::kForwardWarps * 32)
    flashForwardKernel(const T *q, const T *k, const T *v, T *o, float *lse,
                       Dims m, int64_t queryTiles, bool vectors,
                       const int64_t *step) {
  MPCRT_KERNEL_PROLOGUE();
  using F = Flash<MC>;
  constexpr int Rows = 16 * F::kForwardWarps, Bc = F::KeyTile, LDT = F::LDT,
                LDS = Bc + 4, Half = Bc / 2;
  __shared__ __align__(
      128) unsigned char smem[(Rows + 2 * Bc) * LDT * sizeof(T) +
                              Rows * (LDS + 1) * sizeof(float)];
  T *qs = reinterpret_cast<T *>(smem), *ks = qs + Rows * LDT,
    *vs = ks + Bc * LDT;
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32, r = lane / 2,
      half = lane % 2;
  // The warp's scores, and its probabilities over them (in T, rows 2 LDS
  // elements apart); its rows' factors for the output (exp(old max - new
  // max) at each key tile, the sum at the end).
  float *sw = reinterpret_cast<float *>(vs + Bc * LDT) + 16 * warp * LDS;
  float *factor =
      reinterpret_cast<float *>(vs + Bc * LDT) + Rows * LDS + 16 * warp;
  T *pw = reinterpret_cast<T *>(sw);
  int64_t h = blockIdx.x / queryTiles, q0 = blockIdx.x % queryTiles * Rows,
          i = q0 + 16 * warp + r;
  Dims::Head head = m.head<Shared>(h);
  bool rowLive = i < m.sq;
  formulas::HeadScores<> score(m.mask, m.scale, h);
  formulas::KeepBits keeps(m.p, m.seed, *step);
  float keep = m.p == 0 ? 1.0f : static_cast<float>(1 / (1 - m.p));
  int dc = static_cast<int>((m.d + 15) / 16),
      vc = static_cast<int>((m.dv + 15) / 16);
  loadTile<MC>(qs, q + m.at<Shared>(head, m.sq, m.d, q0), m.sq - q0, m.d,
               m.ld<Shared>(m.d), Rows, vectors);
  __syncthreads();
  RowFragments<T, MC, true> rowsOfQ(qs + 16 * warp * LDT, dc);
  FragmentRows rows = FragmentRows::of<LDS>(sw);
  // The rows' outputs: sum_j exp(s_j - run) Z_j v_j, divided by the sum at
  // the end.
  FragC out[MC];
#pragma unroll
  for (int c = 0; c < MC; ++c)
    wmma::fill_fragment(out[c], 0.0f);
  float run = -INFINITY, total = 0;
  for (int64_t k0 = 0; k0 < m.sk; k0 += Bc) {
    __syncthreads(); // the last tile's keys and values are read
    loadTile<MC>(ks, k + m.at<Shared>(head, m.sk, m.d, k0), m.sk - k0, m.d,
                 m.ld<Shared>(m.d), Bc, vectors);
    loadTile<MC>(vs, v + m.at<Shared>(head, m.sk, m.dv, k0), m.sk - k0, m.dv,
                 m.ld<Shared>(m.dv), Bc, vectors);
    __syncthreads();
#pragma unroll
    for (int n = 0; n < Bc / 16; ++n)
      productTransposed(rowsOfQ, ks + 16 * n * LDT, dc, sw + 16 * n, LDS);
    __syncwarp();
    float s[Half], most = -INFINITY;
#pragma unroll
    for (int e = 0; e < Half; ++e) {
      int64_t j = k0 + half * Half + e;
      s[e] = rowLive && j < m.sk ? score(i, j, sw[r * LDS + half * Half + e])
                                 : -INFINITY;
      most = fmaxf(most, s[e]);
    }
    most = fmaxf(most, __shfl_xor_sync(0xffffffffu, most, 1));
    float next = fmaxf(run, most);
    float alpha = run == -INFINITY ? 0.0f : expf(run - next), sum = 0;
    __syncwarp(); // every lane has read its scores: P goes over them
    // The lane's Half keys' bits, their Philox groups in a loop.
    uint64_t bits =
        rowLive ? keeps.run((h * m.sq + i) * m.sk + k0 + half * Half, Half)
                : ~uint64_t(0);
#pragma unroll
    for (int e = 0; e < Half; ++e) {
      int64_t j = k0 + half * Half + e;
      float p = s[e] == -INFINITY ? 0.0f : expf(s[e] - next);
      sum += p;
      bool kept = !rowLive || j >= m.sk || (bits >> e & 1);
      pw[r * 2 * LDS + half * Half + e] =
          Storage<T>::store(kept ? p * keep : 0.0f);
    }
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    total = total * alpha + sum;
    run = next;
    if (half == 0)
      factor[r] = alpha;
    __syncwarp();
    forFragmentRows(out, vc, rows,
                    [&](float &x, int row) { x *= factor[row]; });
    accumulateProduct<T, MC, Bc>(out, pw, 2 * LDS, vs, vc);
  }
  __syncwarp(); // every lane has its rows' last factors
  if (half == 0)
    factor[r] = total;
  __syncwarp();
  forFragmentRows(out, vc, rows, [&](float &x, int row) { x /= factor[row]; });
  storeRows<T, MC, LDS>(out, vc, sw,
                        o + m.at<Shared>(head, m.sq, m.dv, q0 + 16 * warp),
                        m.sq - q0 - 16 * warp, m.dv, m.ld<Shared>(m.dv));
  if (rowLive && half == 0)
    lse[h * m.sq + i] = run + logf(total);
}

/// The query side of the backward: per query tile, D_i = dO_i . O_i from
/// the forward's result (written to `rowDots` for the key side), then one
/// walk over the keys for dq = dS k.
template <typename T, int MC, bool Shared>
__global__ void __launch_bounds__(Flash<MC>::Warps * 32)
    flashQueryGradKernel(const T *go, const T *q, const T *k, const T *v,
                         const T *o, const float *lse, float *rowDots, T *dq,
                         Dims m, int64_t queryTiles, bool vectors,
                         const int64_t *step) {
  MPCRT_KERNEL_PROLOGUE();
  using F = Flash<MC>;
  constexpr int Rows = 16 * F::Warps, Bc = F::OtherTile, LDT = F::LDT,
                LDS = Bc + 4, Half = Bc / 2;
  __shared__ __align__(
      128) unsigned char smem[(2 * Rows + 2 * Bc) * LDT * sizeof(T) +
                              2 * Rows * LDS * sizeof(float)];
  T *qs = reinterpret_cast<T *>(smem), *gs = qs + Rows * LDT,
    *ks = gs + Rows * LDT, *vs = ks + Bc * LDT;
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32, r = lane / 2,
      half = lane % 2;
  // The warp's scores (dS over them, in T) and dPd = dO v^T.
  float *sw = reinterpret_cast<float *>(vs + Bc * LDT) + 16 * warp * LDS;
  float *gw = sw + Rows * LDS;
  T *dsw = reinterpret_cast<T *>(sw);
  int64_t h = blockIdx.x / queryTiles, q0 = blockIdx.x % queryTiles * Rows,
          i = q0 + 16 * warp + r;
  Dims::Head head = m.head<Shared>(h);
  bool rowLive = i < m.sq;
  formulas::HeadScores<> score(m.mask, m.scale, h);
  float keep = m.p == 0 ? 1.0f : static_cast<float>(1 / (1 - m.p));
  int dc = static_cast<int>((m.d + 15) / 16),
      vc = static_cast<int>((m.dv + 15) / 16);
  loadTile<MC>(qs, q + m.at<Shared>(head, m.sq, m.d, q0), m.sq - q0, m.d,
               m.ld<Shared>(m.d), Rows, vectors);
  loadTile<MC>(gs, go + m.at<Shared>(head, m.sq, m.dv, q0), m.sq - q0, m.dv,
               m.ld<Shared>(m.dv), Rows, vectors);
  // D_i = sum_j P dP = dO_i . O_i (O = sum_j P Z v, so with dropout too):
  // the result's tile over the key and value tiles' space, before the walk.
  static_assert(Rows <= 2 * Bc, "the result's tile fits the keys' and values'");
  T *os = ks;
  loadTile<MC>(os, o + m.at<Shared>(head, m.sq, m.dv, q0), m.sq - q0, m.dv,
               m.ld<Shared>(m.dv), Rows, vectors);
  __syncthreads();
  // Held where the registers allow (head sizes past 64 would spill).
  RowFragments<T, MC, MC <= 4> rowsOfQ(qs + 16 * warp * LDT, dc),
      rowsOfGrad(gs + 16 * warp * LDT, vc);
  float dot = 0;
#pragma unroll
  for (int e = 0; e < F::D / 2; ++e) {
    int at = (16 * warp + r) * LDT + half * (F::D / 2) + e;
    dot += Storage<T>::load(gs[at]) * Storage<T>::load(os[at]);
  }
  dot += __shfl_xor_sync(0xffffffffu, dot, 1);
  if (rowLive && half == 0)
    rowDots[h * m.sq + i] = dot;
  float rowLse = rowLive ? lse[h * m.sq + i] : 0.0f;
  FragC acc[MC];
#pragma unroll
  for (int c = 0; c < MC; ++c)
    wmma::fill_fragment(acc[c], 0.0f);
  formulas::KeepBits keeps(m.p, m.seed, *step);
  for (int64_t k0 = 0; k0 < m.sk; k0 += Bc) {
    __syncthreads(); // the last tile (or the result's) is read
    loadTile<MC>(ks, k + m.at<Shared>(head, m.sk, m.d, k0), m.sk - k0, m.d,
                 m.ld<Shared>(m.d), Bc, vectors);
    loadTile<MC>(vs, v + m.at<Shared>(head, m.sk, m.dv, k0), m.sk - k0, m.dv,
                 m.ld<Shared>(m.dv), Bc, vectors);
    __syncthreads();
#pragma unroll
    for (int n = 0; n < Bc / 16; ++n) {
      productTransposed(rowsOfQ, ks + 16 * n * LDT, dc, sw + 16 * n, LDS);
      productTransposed(rowsOfGrad, vs + 16 * n * LDT, vc, gw + 16 * n, LDS);
    }
    __syncwarp();
    float ds[Half];
    // The lane's Half keys' bits, their Philox groups in a loop.
    uint64_t bits =
        rowLive ? keeps.run((h * m.sq + i) * m.sk + k0 + half * Half, Half) : 0;
#pragma unroll
    for (int e = 0; e < Half; ++e) {
      int64_t j = k0 + half * Half + e;
      ds[e] = 0;
      if (rowLive && j < m.sk) {
        float p = expf(score(i, j, sw[r * LDS + half * Half + e]) - rowLse);
        float z = bits >> e & 1 ? keep : 0.0f;
        if (!score.filled(i, j))
          ds[e] = score.scale * p * (gw[r * LDS + half * Half + e] * z - dot);
      }
    }
    __syncwarp(); // the scores are read: dS goes over them
#pragma unroll
    for (int e = 0; e < Half; ++e)
      dsw[r * 2 * LDS + half * Half + e] = Storage<T>::store(ds[e]);
    __syncwarp();
    accumulateProduct<T, MC, Bc>(acc, dsw, 2 * LDS, ks, dc);
  }
  storeRows<T, MC, LDS>(acc, dc, gw,
                        dq + m.at<Shared>(head, m.sq, m.d, q0 + 16 * warp),
                        m.sq - q0 - 16 * warp, m.d, m.ld<Shared>(m.d));
}

/// The key side of the backward: per key tile, over the query tiles, dv =
/// Pd^T dO and dk = dS^T q, with D from flashQueryGradKernel.
template <typename T, int MC, bool Shared>
__global__ void __launch_bounds__(Flash<MC>::Warps * 32)
    flashKeyValueGradKernel(const T *go, const T *q, const T *k, const T *v,
                            const float *lse, const float *rowDots, T *dk,
                            T *dv, Dims m, int64_t keyTiles, bool vectors,
                            const int64_t *step) {
  MPCRT_KERNEL_PROLOGUE();
  using F = Flash<MC>;
  constexpr int Rows = 16 * F::Warps, Bq = F::OtherTile, LDT = F::LDT,
                LDS = Bq + 4, Seen = Bq / 8;
  static_assert(Bq % 8 == 0, "a lane's queries are 8 apart");
  __shared__ __align__(128) unsigned char
      smem[(2 * Rows + 2 * Bq) * LDT * sizeof(T) +
           2 * Rows * LDS * sizeof(float) + 2 * Bq * sizeof(float)];
  T *ks = reinterpret_cast<T *>(smem), *vs = ks + Rows * LDT,
    *qs = vs + Rows * LDT, *gs = qs + Bq * LDT;
  // Each lane's scores of a query tile: four neighbouring keys of the
  // warp's 16 (4 kg + kk), which share a Philox call, for the queries qt +
  // 8 n (n < Seen).
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32, kg = lane % 4,
      qt = lane / 4;
  // The warp's transposed scores (Pd over them, in T) and dPd^T = v dO^T
  // (dS over it); the query tile's log-sum-exps and D.
  float *sw = reinterpret_cast<float *>(gs + Bq * LDT) + 16 * warp * LDS;
  float *gw = sw + Rows * LDS;
  float *stats = reinterpret_cast<float *>(gs + Bq * LDT) + 2 * Rows * LDS;
  T *pdw = reinterpret_cast<T *>(sw), *dsw = reinterpret_cast<T *>(gw);
  int64_t h = blockIdx.x / keyTiles, k0 = blockIdx.x % keyTiles * Rows;
  Dims::Head head = m.head<Shared>(h);
  formulas::HeadScores<> score(m.mask, m.scale, h);
  formulas::KeepBits keeps(m.p, m.seed, *step);
  float keep = m.p == 0 ? 1.0f : static_cast<float>(1 / (1 - m.p));
  int dc = static_cast<int>((m.d + 15) / 16),
      vc = static_cast<int>((m.dv + 15) / 16);
  loadTile<MC>(ks, k + m.at<Shared>(head, m.sk, m.d, k0), m.sk - k0, m.d,
               m.ld<Shared>(m.d), Rows, vectors);
  loadTile<MC>(vs, v + m.at<Shared>(head, m.sk, m.dv, k0), m.sk - k0, m.dv,
               m.ld<Shared>(m.dv), Rows, vectors);
  // Loaded at each use: held, they took the kernel from 168 registers to
  // 243 (ptxas, f16, head size 64), two blocks an SM instead of three.
  RowFragments<T, MC, false> rowsOfK(ks + 16 * warp * LDT, dc),
      rowsOfV(vs + 16 * warp * LDT, vc);
  FragC gradK[MC], gradV[MC];
#pragma unroll
  for (int c = 0; c < MC; ++c) {
    wmma::fill_fragment(gradK[c], 0.0f);
    wmma::fill_fragment(gradV[c], 0.0f);
  }
  for (int64_t q0 = 0; q0 < m.sq; q0 += Bq) {
    __syncthreads(); // the last tile is read
    loadTile<MC>(qs, q + m.at<Shared>(head, m.sq, m.d, q0), m.sq - q0, m.d,
                 m.ld<Shared>(m.d), Bq, vectors);
    loadTile<MC>(gs, go + m.at<Shared>(head, m.sq, m.dv, q0), m.sq - q0, m.dv,
                 m.ld<Shared>(m.dv), Bq, vectors);
    for (int t = threadIdx.x; t < Bq; t += blockDim.x) {
      bool live = q0 + t < m.sq;
      stats[t] = live ? lse[h * m.sq + q0 + t] : 0.0f;
      stats[Bq + t] = live ? rowDots[h * m.sq + q0 + t] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int n = 0; n < Bq / 16; ++n) {
      productTransposed(rowsOfK, qs + 16 * n * LDT, dc, sw + 16 * n, LDS);
      productTransposed(rowsOfV, gs + 16 * n * LDT, vc, gw + 16 * n, LDS);
    }
    __syncwarp();
    float pd[Seen][4], ds[Seen][4];
    // The bits of the lane's four keys of each of its Seen queries (bits
    // 4 n .. 4 n + 3), their Philox groups in a loop.
    uint64_t bits = 0;
#pragma unroll 1
    for (int n = 0; n < Seen; ++n)
      bits |=
          keeps.run(
              (h * m.sq + q0 + qt + 8 * n) * m.sk + k0 + 16 * warp + 4 * kg, 4)
          << (4 * n);
#pragma unroll
    for (int n = 0; n < Seen; ++n)
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) {
        int t = qt + 8 * n, kr = 4 * kg + kk;
        int64_t i = q0 + t, j = k0 + 16 * warp + kr;
        pd[n][kk] = ds[n][kk] = 0;
        if (j < m.sk && i < m.sq) {
          float p = expf(score(i, j, sw[kr * LDS + t]) - stats[t]);
          float z = bits >> (4 * n + kk) & 1 ? keep : 0.0f;
          pd[n][kk] = p * z;
          if (!score.filled(i, j))
            ds[n][kk] =
                score.scale * p * (gw[kr * LDS + t] * z - stats[Bq + t]);
        }
      }
    __syncwarp(); // the scores are read: Pd and dS go over them
#pragma unroll
    for (int n = 0; n < Seen; ++n)
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) {
        int at = (4 * kg + kk) * 2 * LDS + qt + 8 * n;
        pdw[at] = Storage<T>::store(pd[n][kk]);
        dsw[at] = Storage<T>::store(ds[n][kk]);
      }
    __syncwarp();
    accumulateProduct<T, MC, Bq>(gradV, pdw, 2 * LDS, gs, vc);
    accumulateProduct<T, MC, Bq>(gradK, dsw, 2 * LDS, qs, dc);
  }
  int64_t rows = m.sk - k0 - 16 * warp;
  storeRows<T, MC, LDS>(gradV, vc, sw,
                        dv + m.at<Shared>(head, m.sk, m.dv, k0 + 16 * warp),
                        rows, m.dv, m.ld<Shared>(m.dv));
  storeRows<T, MC, LDS>(gradK, dc, sw,
                        dk + m.at<Shared>(head, m.sk, m.d, k0 + 16 * warp),
                        rows, m.d, m.ld<Shared>(m.d));
}

/// Whether the flash kernels take calls they can (tests turn them off).
bool flashEnabled = true;

/// Whether the flash kernels take a call: f16 or bf16 operands, head sizes
/// of 1 to 128, at least one key (none: the chunked path's zero result and
/// -inf log-sum-exp, where the online softmax would divide 0 by 0), and a
/// grid they fit.
bool flashTakes(mpcrt_dtype dtype, const Dims &m) {
  return flashEnabled && (dtype == MPCRT_F16 || dtype == MPCRT_BF16) &&
         m.sk >= 1 && m.d >= 1 && m.d <= 128 && m.dv >= 1 && m.dv <= 128 &&
         m.heads * ((std::max(m.sq, m.sk) + 15) / 16) <= 0x7fffffff;
}

/// Whether the flash kernels may load 16 bytes at a time: rows a multiple
/// of 8 elements, every operand aligned to 16 bytes.
bool flashVectors(const Dims &m, std::initializer_list<const void *> data) {
  bool aligned = m.d % 8 == 0 && m.dv % 8 == 0;
  for (const void *p : data)
    aligned = aligned && reinterpret_cast<uintptr_t>(p) % 16 == 0;
  return aligned;
}

/// f(tag) with the flash kernels' T, MC and Shared (heads sharing rows)
/// for the call as `tag`'s members.
template <typename T, int MC, bool Shared> struct FlashTag {
  using Type = T;
  static constexpr int kChunks = MC;
  static constexpr bool kShared = Shared;
};
template <typename F>
void dispatchFlash(mpcrt_dtype dtype, const Dims &m, F f) {
  bool wide = std::max(m.d, m.dv) > 64;
  auto withRows = [&](auto shared) {
    constexpr bool S = decltype(shared)::value;
    if (dtype == MPCRT_F16)
      wide ? f(FlashTag<__half, 8, S>()) : f(FlashTag<__half, 4, S>());
    else
      wide ? f(FlashTag<__nv_bfloat16, 8, S>())
           : f(FlashTag<__nv_bfloat16, 4, S>());
  };
  if (m.layout.inner > 1)
    withRows(std::true_type{});
  else
    withRows(std::false_type{});
}

int64_t tilesOf(int64_t n, int64_t tile) { return (n + tile - 1) / tile; }

/// The chunked path's operands where heads share rows (m.layout.inner >
/// 1): each copied to [heads, s, width] in scratch, each result computed
/// there and scattered back; with inner 1 the operands themselves.
struct Packing {
  const Dims &m;
  int32_t bytesPer;
  Packing(const Dims &m, size_t bytesPer)
      : m(m), bytesPer(static_cast<int32_t>(bytesPer)) {}
  bool packs() const { return m.layout.inner > 1; }
  /// The scratch bytes of an operand of `rows` rows of `width` a head.
  int64_t bytes(int64_t rows, int64_t width) const {
    return packs() ? m.heads * rows * width * bytesPer : 0;
  }
  /// [heads / inner, rows, inner, width] as strides over [heads / inner,
  /// inner, rows, width], the shape of the copy.
  void layout(int64_t rows, int64_t width, int64_t (&shape)[4],
              int64_t (&strides)[4]) const {
    int64_t inner = m.layout.inner;
    int64_t s[4] = {m.heads / inner, inner, rows, width},
            t[4] = {rows * inner * width, width, inner * width, 1};
    std::copy(s, s + 4, shape);
    std::copy(t, t + 4, strides);
  }
  const void *in(const void *operand, char *scratch, int64_t rows,
                 int64_t width) const {
    if (!packs())
      return operand;
    int64_t shape[4], strides[4];
    layout(rows, width, shape, strides);
    stridedCopy(operand, 0, strides, scratch, shape, 4, bytesPer);
    return scratch;
  }
  void *out(void *result, char *scratch) const {
    return packs() ? scratch : result;
  }
  void back(const void *packed, void *result, int64_t rows,
            int64_t width) const {
    if (!packs())
      return;
    int64_t shape[4], strides[4];
    layout(rows, width, shape, strides);
    stridedScatter(packed, result, 0, strides, shape, 4, bytesPer);
  }
};

void flashForward(mpcrt_dtype dtype, const Dims &m, const void *query,
                  const void *key, const void *value, void *result,
                  void *logsumexp, const int64_t *step) {
  dispatchFlash(dtype, m, [&](auto tag) {
    using T = typename decltype(tag)::Type;
    constexpr int MC = decltype(tag)::kChunks;
    int64_t tiles = tilesOf(m.sq, 16 * Flash<MC>::kForwardWarps);
    flashForwardKernel<T, MC, decltype(tag)::kShared>
        <<<static_cast<unsigned>(m.heads * tiles),
           Flash<MC>::kForwardWarps * 32, 0, stream()>>>(
            static_cast<const T *>(query), static_cast<const T *>(key),
            static_cast<const T *>(value), static_cast<T *>(result),
            static_cast<float *>(logsumexp), m, tiles,
            flashVectors(m, {query, key, value}), step);
    MPCRT_CUDA_LAUNCHED("attention (flash)");
  });
}

void flashBackward(mpcrt_dtype dtype, const Dims &m, const void *grad,
                   const void *query, const void *key, const void *value,
                   const void *result, const void *logsumexp, void *gradQuery,
                   void *gradKey, void *gradValue, const int64_t *step) {
  float *rowDots = scratchF32(m.heads * m.sq);
  dispatchFlash(dtype, m, [&](auto tag) {
    using T = typename decltype(tag)::Type;
    constexpr int MC = decltype(tag)::kChunks;
    constexpr int threads = Flash<MC>::Warps * 32;
    bool vectors = flashVectors(m, {grad, query, key, value, result});
    auto *go = static_cast<const T *>(grad), *q = static_cast<const T *>(query),
         *k = static_cast<const T *>(key), *v = static_cast<const T *>(value);
    auto *lse = static_cast<const float *>(logsumexp);
    if (m.sq > 0) {
      int64_t tiles = tilesOf(m.sq, 16 * Flash<MC>::Warps);
      flashQueryGradKernel<T, MC, decltype(tag)::kShared>
          <<<static_cast<unsigned>(m.heads * tiles), threads, 0, stream()>>>(
              go, q, k, v, static_cast<const T *>(result), lse, rowDots,
              static_cast<T *>(gradQuery), m, tiles, vectors, step);
      MPCRT_CUDA_LAUNCHED("attention_backward (flash, queries)");
    }
    if (m.sk > 0) {
      int64_t tiles = tilesOf(m.sk, 16 * Flash<MC>::Warps);
      flashKeyValueGradKernel<T, MC, decltype(tag)::kShared>
          <<<static_cast<unsigned>(m.heads * tiles), threads, 0, stream()>>>(
              go, q, k, v, lse, rowDots, static_cast<T *>(gradKey),
              static_cast<T *>(gradValue), m, tiles, vectors, step);
      MPCRT_CUDA_LAUNCHED("attention_backward (flash, keys and values)");
    }
  });
}

} // namespace

int64_t setAttentionWarpColumns(int64_t columns) {
  int64_t previous = warpColumns;
  warpColumns = columns;
  return previous;
}

bool setAttentionFlash(bool on) {
  bool previous = flashEnabled;
  flashEnabled = on;
  return previous;
}

int64_t setAttentionScratchBytes(int64_t bytes) {
  int64_t previous = scratchLimit;
  scratchLimit = bytes;
  return previous;
}

void attention(mpcrt_dtype dtype, const void *query, const void *key,
               const void *value, void *result, void *logsumexp, int64_t heads,
               int64_t sq, int64_t sk, int64_t d, int64_t dv, int64_t rowHeads,
               double scale, double dropoutP, uint64_t seed,
               const int64_t *step, const formulas::AttentionMask &mask) {
  if (heads * sq == 0)
    return;
  Dims m{heads, sq,       sk,
         d,     dv,       formulas::HeadRows{rowHeads > 1 ? rowHeads : 1},
         scale, dropoutP, seed,
         mask};
  if (flashTakes(dtype, m))
    return flashForward(dtype, m, query, key, value, result, logsumexp, step);
  mpcrt_dtype acc = dtype == MPCRT_F64 ? MPCRT_F64 : MPCRT_F32;
  dispatch(dtype, [&](auto *t) {
    using T = MPCRT_TYPE(t);
    using A = typename Storage<T>::Acc;
    int64_t area = sq * sk;
    int64_t chunk = headsPerChunk(heads, area * int64_t(sizeof(A) + sizeof(T)));
    // With heads sharing rows, the operands and the result as [heads, s,
    // width] copies (the cuBLASLt products stride over whole heads).
    Packing pack(m, sizeof(T));
    char *regions[6];
    carve({pack.bytes(sq, d), pack.bytes(sk, d), pack.bytes(sk, dv),
           pack.bytes(sq, dv), chunk * area * int64_t(sizeof(A)),
           chunk * area * int64_t(sizeof(T))},
          regions);
    auto *scores = reinterpret_cast<A *>(regions[4]);
    auto *probs = reinterpret_cast<T *>(regions[5]);
    auto *q = static_cast<const T *>(pack.in(query, regions[0], sq, d)),
         *k = static_cast<const T *>(pack.in(key, regions[1], sk, d)),
         *v = static_cast<const T *>(pack.in(value, regions[2], sk, dv));
    auto *o = static_cast<T *>(pack.out(result, regions[3]));
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
    pack.back(o, result, sq, dv);
  });
}

void attentionBackward(mpcrt_dtype dtype, const void *grad, const void *query,
                       const void *key, const void *value, const void *result,
                       const void *logsumexp, void *gradQuery, void *gradKey,
                       void *gradValue, int64_t heads, int64_t sq, int64_t sk,
                       int64_t d, int64_t dv, int64_t rowHeads, double scale,
                       double dropoutP, uint64_t seed, const int64_t *step,
                       const formulas::AttentionMask &mask) {
  if (heads * (sq + sk) == 0)
    return;
  Dims m{heads, sq,       sk,
         d,     dv,       formulas::HeadRows{rowHeads > 1 ? rowHeads : 1},
         scale, dropoutP, seed,
         mask};
  if (flashTakes(dtype, m))
    return flashBackward(dtype, m, grad, query, key, value, result, logsumexp,
                         gradQuery, gradKey, gradValue, step);
  mpcrt_dtype acc = dtype == MPCRT_F64 ? MPCRT_F64 : MPCRT_F32;
  dispatch(dtype, [&](auto *t) {
    using T = MPCRT_TYPE(t);
    using A = typename Storage<T>::Acc;
    int64_t area = sq * sk;
    int64_t chunk =
        headsPerChunk(heads, area * int64_t(2 * sizeof(A) + 2 * sizeof(T)));
    int64_t accBytes = chunk * area * int64_t(sizeof(A)),
            typeBytes = chunk * area * int64_t(sizeof(T));
    Packing pack(m, sizeof(T));
    char *regions[11];
    carve({accBytes, accBytes, typeBytes, typeBytes, pack.bytes(sq, dv),
           pack.bytes(sq, d), pack.bytes(sk, d), pack.bytes(sk, dv),
           pack.bytes(sq, d), pack.bytes(sk, d), pack.bytes(sk, dv)},
          regions);
    auto *scores = reinterpret_cast<A *>(regions[0]);
    auto *dpd = reinterpret_cast<A *>(regions[1]);
    auto *pd = reinterpret_cast<T *>(regions[2]);
    auto *ds = reinterpret_cast<T *>(regions[3]);
    auto *go = static_cast<const T *>(pack.in(grad, regions[4], sq, dv)),
         *q = static_cast<const T *>(pack.in(query, regions[5], sq, d)),
         *k = static_cast<const T *>(pack.in(key, regions[6], sk, d)),
         *v = static_cast<const T *>(pack.in(value, regions[7], sk, dv));
    auto *dq = static_cast<T *>(pack.out(gradQuery, regions[8])),
         *dk = static_cast<T *>(pack.out(gradKey, regions[9])),
         *dV = static_cast<T *>(pack.out(gradValue, regions[10]));
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
    pack.back(dq, gradQuery, sq, d);
    pack.back(dk, gradKey, sk, d);
    pack.back(dV, gradValue, sk, dv);
  });
}

} // namespace mpcrt::cuda
