//===- Data.cu - strided copies, embedding, dropout on the device ---------===//

#include "mpc/Runtime/Report.h"

#include "Device.cuh"
#include "Formulas.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <type_traits>
#include <utility>

namespace mpcrt::cuda {
namespace {

/// I: uint32_t where indexesFit32, else int64_t: the divisions by the
/// dimensions are the kernel's main cost. kStridedAhead elements of a
/// thread at a time (gridStrideAhead): their offsets' divisions and their
/// loads overlap, where one element a thread waited for its divisions,
/// then its load, before its store (a UNet's channel concatenation moved
/// its 67 MB at 0.55 of copy speed on an H200).
constexpr int kStridedAhead = 4;

template <typename E, typename I>
__global__ void stridedCopyKernel(const E *in, I offset, E *out, Layout<1> s,
                                  I count, bool scatter) {
  MPCRT_KERNEL_PROLOGUE();
  E v[kStridedAhead];
  if (scatter)
    gridStrideAhead<kStridedAhead>(
        count, [&](I i, int a) { v[a] = in[i]; },
        [&](I i, int a) { out[offset + offsetOf(s, 0, i)] = v[a]; });
  else
    gridStrideAhead<kStridedAhead>(
        count, [&](I i, int a) { v[a] = in[offset + offsetOf(s, 0, i)]; },
        [&](I i, int a) { out[i] = v[a]; });
}

/// A copy whose strided side is contiguous along one dimension (`rows`)
/// and the dense side along another (`cols`, innermost): a batch of 2-D
/// transposes. Each block moves square tiles through shared memory, so
/// that both its reads and its writes are coalesced.
struct Tiled {
  int64_t rows, cols;
  int64_t colStride;   // strided side, per column (rows step by 1)
  int64_t rowStride;   // dense side, per row (columns step by 1)
  int64_t tilesPerRow; // ceil(cols / tile)
  int64_t batches;     // product of the other dimensions
  Layout<2> batch;     // the other dimensions: strided side, dense side
};

/// A tile's edge for elements of `bytes`: 64 for 1 and 2 bytes (with 32,
/// a block of 256 threads held 4 elements a thread, 8 bytes, in flight:
/// the f16 transpose of a 4096x768 matrix moved at 0.17 of copy speed on
/// an H200), 32 otherwise. Each block is 32 x kTileRows threads.
__host__ __device__ constexpr int tileFor(int64_t bytes) {
  return bytes <= 2 ? 64 : 32;
}
constexpr int kTileRows = 8;
/// The narrowest transposed dimension worth a tile.
constexpr int64_t kTiledAtLeast = 16;

/// Calls f(i, j) for a thread's elements (tx + 32 a, ty + kTileRows b) of
/// a T x T tile, in loops of constant length (unrolled: the tile's loads
/// of a thread in flight together).
template <int T, typename F> __device__ void forTile(int tx, int ty, F f) {
#pragma unroll
  for (int b = 0; b < T / kTileRows; ++b)
#pragma unroll
    for (int a = 0; a < T / 32; ++a)
      f(tx + 32 * a, ty + kTileRows * b);
}

/// A block's batch of tiles: one a block, blockIdx.y + gridDim.y *
/// blockIdx.z (tileGrid), so that the tile's offsets are not kept across
/// a loop over batches (the compiler hoisted them out of it: the element
/// kernels took 80 registers a thread, 3 blocks of 256 a multiprocessor,
/// and the pairs' 108; without the loop 40 and 32, ptxas for sm_90).
/// False for the blocks past the last batch; else the batch's offsets on
/// the strided side (from `offset`) and on the dense side.
__device__ inline bool tileBatch(const Tiled &t, int64_t offset,
                                 int64_t &strided, int64_t &dense) {
  int64_t b = blockIdx.y + int64_t(gridDim.y) * blockIdx.z;
  if (b >= t.batches)
    return false;
  strided = offset;
  dense = 0;
  forPositions(t.batch, b, [&](int d, int64_t at) {
    strided += at * t.batch.strides[0][d];
    dense += at * t.batch.strides[1][d];
  });
  return true;
}

/// The most blocks a grid's y and z dimensions hold.
constexpr int64_t kGridYZ = 65535;
/// The batches along a tiled grid's y dimension, at most (the rest along
/// z): kGridYZ but in tests (setTiledBatchesAlongY).
int64_t tiledBatchesAlongY = kGridYZ;

/// The grid of a tiled plan of elements of `bytes`: a block per tile (x)
/// and batch (y and z: tileBatch).
dim3 tileGrid(const Tiled &t, int64_t bytes) {
  const int64_t tile = tileFor(bytes);
  int64_t tiles = (t.rows + tile - 1) / tile * t.tilesPerRow;
  int64_t y = std::min(t.batches, tiledBatchesAlongY),
          z = (t.batches + y - 1) / y;
  return dim3(static_cast<unsigned>(tiles), static_cast<unsigned>(y),
              static_cast<unsigned>(z));
}

template <typename E>
__global__ void tiledCopyKernel(const E *in, int64_t offset, E *out, Tiled t,
                                bool scatter) {
  MPCRT_KERNEL_PROLOGUE();
  constexpr int T = tileFor(sizeof(E));
  // Rows an odd number of 4-byte words apart (E of 1 and 2 bytes: 17 and
  // 33 words; wider: T + 1 elements), so that a warp reading a column
  // meets 32 different banks.
  constexpr int Pad = sizeof(E) <= 2 ? 4 / int(sizeof(E)) : 1;
  __shared__ E tile[T][T + Pad];
  int64_t r0 = int64_t(blockIdx.x / t.tilesPerRow) * T,
          c0 = int64_t(blockIdx.x % t.tilesPerRow) * T;
  int tx = threadIdx.x, ty = threadIdx.y;
  int64_t strided, dense;
  if (!tileBatch(t, offset, strided, dense))
    return;
  // tile[a][b]: on the strided side's turn, row r0 + b and column c0 + a;
  // on the dense side's, row r0 + a and column c0 + b.
  if (!scatter) {
    forTile<T>(tx, ty, [&](int i, int j) {
      if (r0 + i < t.rows && c0 + j < t.cols)
        tile[j][i] = in[strided + r0 + i + (c0 + j) * t.colStride];
    });
    __syncthreads();
    forTile<T>(tx, ty, [&](int i, int j) {
      if (r0 + j < t.rows && c0 + i < t.cols)
        out[dense + (r0 + j) * t.rowStride + c0 + i] = tile[i][j];
    });
  } else {
    forTile<T>(tx, ty, [&](int i, int j) {
      if (r0 + j < t.rows && c0 + i < t.cols)
        tile[j][i] = in[dense + (r0 + j) * t.rowStride + c0 + i];
    });
    __syncthreads();
    forTile<T>(tx, ty, [&](int i, int j) {
      if (r0 + i < t.rows && c0 + j < t.cols)
        out[strided + r0 + i + (c0 + j) * t.colStride] = tile[i][j];
    });
  }
}

/// tiledCopyKernel for 2-byte elements moved two at a time: each access a
/// pair of neighbours along the side's contiguous dimension (4 bytes), so
/// that a warp's load or store covers 128 contiguous bytes in one
/// instruction, where the element kernel took two of 64 bytes (and as many
/// shared-memory accesses). Element (u, v) of the tile is read at
/// in[source + u + v * sourceStride] and written to out[dest + v + u *
/// destStride]: a thread loads the pairs along u at v and v + 1, and
/// exchanges their halves into the pairs along v at u and u + 1, which go
/// through shared memory to the threads that store them. The tile's rows
/// (u) hold 32 pairs each, the pair at v / 2 stored in word (v / 2) ^ (u /
/// 2): a warp's 32 stores (rows 2 t or 2 t + 1 of lanes t, one pair
/// column) and its 32 loads (one row) each meet 32 different banks. Taken
/// where every pair lies whole in its tensor and on 4 bytes (pairsFit).
struct Sides {
  int64_t us, vs;                   // the extents along u and v
  int64_t sourceStride, destStride; // per v on the source, per u on the dest
};

__global__ void tiledPairsKernel(const uint16_t *in, int64_t offset,
                                 uint16_t *out, Tiled t, bool scatter) {
  MPCRT_KERNEL_PROLOGUE();
  constexpr int T = tileFor(2);
  static_assert(T == 64 && kTileRows == 8, "a warp per 64-element row");
  __shared__ uint32_t tile[T][T / 2];
  const Sides sides = scatter ? Sides{t.cols, t.rows, t.rowStride, t.colStride}
                              : Sides{t.rows, t.cols, t.colStride, t.rowStride};
  int64_t r0 = int64_t(blockIdx.x / t.tilesPerRow) * T,
          c0 = int64_t(blockIdx.x % t.tilesPerRow) * T;
  const int64_t u0 = scatter ? c0 : r0, v0 = scatter ? r0 : c0;
  const int tx = threadIdx.x, ty = threadIdx.y;
  int64_t strided, dense;
  if (!tileBatch(t, offset, strided, dense))
    return;
  const int64_t source = scatter ? dense : strided,
                dest = scatter ? strided : dense;
  // The pairs at u0 + 2 tx of the columns v0 + 2 p and v0 + 2 p + 1.
  const bool uInside = u0 + 2 * tx < sides.us;
  const uint16_t *from = in + source + u0 + v0 * sides.sourceStride;
  const int64_t across = sides.sourceStride;
#pragma unroll
  for (int q = 0; q < T / 2 / kTileRows; ++q) {
    const int p = ty + kTileRows * q;
    if (!uInside || v0 + 2 * p >= sides.vs)
      continue;
    const int64_t at = 2 * tx + 2 * p * across;
    uint32_t x0 = *reinterpret_cast<const uint32_t *>(from + at),
             x1 = *reinterpret_cast<const uint32_t *>(from + at + across);
    // (u, v) (u, v + 1), then (u + 1, v) (u + 1, v + 1): low halves
    // first.
    tile[2 * tx][p ^ tx] = (x0 & 0xffffu) | (x1 << 16);
    tile[2 * tx + 1][p ^ tx] = (x0 >> 16) | (x1 & 0xffff0000u);
  }
  __syncthreads();
  const bool vInside = v0 + 2 * tx < sides.vs;
  uint16_t *to = out + dest + v0 + u0 * sides.destStride;
  const int64_t down = sides.destStride;
#pragma unroll
  for (int q = 0; q < T / kTileRows; ++q) {
    const int u = ty + kTileRows * q;
    if (vInside && u0 + u < sides.us)
      *reinterpret_cast<uint32_t *>(to + 2 * tx + u * down) =
          tile[u][tx ^ (u / 2)];
  }
}

/// Whether tiledPairsKernel takes the tiled plan `t` of 2-byte elements
/// from `in` at `offset` to `out` (or back): every extent and stride even,
/// the offset too, and both pointers on 4 bytes, so that each pair is
/// whole and aligned on both sides.
bool pairsFit(const Tiled &t, const void *in, int64_t offset, const void *out) {
  bool even = t.rows % 2 == 0 && t.cols % 2 == 0 && t.colStride % 2 == 0 &&
              t.rowStride % 2 == 0 && offset % 2 == 0;
  for (int d = 0; d < t.batch.rank && even; ++d)
    even = t.batch.strides[0][d] % 2 == 0 && t.batch.strides[1][d] % 2 == 0;
  return even && alignedTo(in, 4) && alignedTo(out, 4);
}

/// The tiled plan of a merged copy, or false when it is not a transpose
/// worth tiling: the strided side's innermost stride is not 0 or 1, another
/// dimension has stride 1 and both dimensions hold kTiledAtLeast or more.
bool planTiled(const Layout<1> &s, int32_t bytes, Tiled &t) {
  int last = s.rank - 1;
  if ((bytes != 1 && bytes != 2 && bytes != 4 && bytes != 8) || s.rank < 2 ||
      s.strides[0][last] == 0 || s.strides[0][last] == 1 ||
      s.dims[last] < kTiledAtLeast)
    return false;
  int k = -1;
  for (int d = last - 1; d >= 0 && k < 0; --d)
    if (s.strides[0][d] == 1)
      k = d;
  if (k < 0 || s.dims[k] < kTiledAtLeast)
    return false;
  int64_t dense[kMaxRank], step = 1; // the dense side's strides
  for (int d = last; d >= 0; --d) {
    dense[d] = step;
    step *= s.dims[d];
  }
  t = Tiled{};
  t.rows = s.dims[k];
  t.cols = s.dims[last];
  t.colStride = s.strides[0][last];
  t.rowStride = dense[k];
  const int64_t tile = tileFor(bytes);
  t.tilesPerRow = (t.cols + tile - 1) / tile;
  if ((t.rows + tile - 1) / tile > INT32_MAX / t.tilesPerRow)
    return false; // more tiles than a grid's x dimension
  t.batches = 1;
  for (int d = 0; d < last; ++d) {
    if (d == k)
      continue;
    t.batch.setDim(t.batch.rank, s.dims[d]);
    t.batch.strides[0][t.batch.rank] = s.strides[0][d];
    t.batch.strides[1][t.batch.rank] = dense[d];
    ++t.batch.rank;
    t.batches *= s.dims[d];
  }
  // Else more batches than a grid's y and z dimensions hold.
  return t.batches <= tiledBatchesAlongY * kGridYZ;
}

/// A block per index (embeddingGrid): its row across the threads, N
/// elements per access (16 bytes where d and the pointers allow, else
/// one); a bad index's row written as zeros.
template <typename T, int N>
__global__ void
embeddingKernel(const T *table, int64_t v, int64_t d, const void *indices,
                int32_t bits, int64_t count, T *out, unsigned long long *bad) {
  MPCRT_KERNEL_PROLOGUE();
  using V = Vec<T, N>;
  const int64_t vectors = d / N;
  for (int64_t i = blockIdx.x; i < count; i += gridDim.x) {
    int64_t row = formulas::indexAt(indices, bits, i);
    bool inside = row >= 0 && row < v;
    if (!inside && threadIdx.x == 0)
      recordError(bad, i);
    const V *from = reinterpret_cast<const V *>(table + (inside ? row : 0) * d);
    V *to = reinterpret_cast<V *>(out + i * d);
    for (int64_t j = threadIdx.x; j < vectors; j += blockDim.x) {
      V value;
      if (inside) {
        value = from[j];
      } else {
#pragma unroll
        for (int k = 0; k < N; ++k)
          value.v[k] = Storage<T>::store(0.0f);
      }
      to[j] = value;
    }
  }
}

/// A block per index for the embedding's kernels: d's elements across up
/// to kThreads threads (a whole number of warps), up to 2^31 - 1 blocks.
/// An element's number is never divided into index and column (in 64
/// bits, about 70 instructions).
std::pair<unsigned, unsigned> embeddingGrid(int64_t count, int64_t d) {
  int64_t threads = std::min<int64_t>(kThreads, (d + 31) / 32 * 32);
  int64_t blocks = std::min<int64_t>(count, INT32_MAX);
  return {static_cast<unsigned>(blocks), static_cast<unsigned>(threads)};
}

/// Embedding backward without atomics, bit for bit the CPU reference's
/// sums (each touched row's gradients added in the order of their
/// positions, in segments of formulas::kEmbeddingSegment, each from 0,
/// the segments' sums in order, in the accumulation type): each
/// position's key (row << 32 | position; a bad index, recorded, the
/// padding row's index and the keys that pad the count to a power of two
/// sort last as ~0), the keys sorted (bitonic: unique, so the order is
/// the same whatever runs first), then a block per segment of a row's
/// run sums its rows of dy in order (embeddingSegmentKernel) and a block
/// per run of more than one segment adds the segments' sums
/// (embeddingRunSumKernel); each writes the row (or adds it to the row
/// there).
constexpr uint64_t kNoKey = ~0ull;

/// Where the sort's first pass gets its keys: position i's key made from
/// its index (a bad index recorded), kNoKey past the count.
struct EmbeddingKeys {
  const void *indices;
  int32_t bits;
  int64_t count, v, padding;
  unsigned long long *bad;
  __device__ uint64_t operator()(int64_t i) const {
    if (i >= count)
      return kNoKey;
    int64_t row = formulas::indexAt(indices, bits, i);
    if (row < 0 || row >= v) {
      recordError(bad, i);
      return kNoKey;
    }
    return row == padding
               ? kNoKey
               : static_cast<uint64_t>(row) << 32 | static_cast<uint64_t>(i);
  }
};

/// The keys a block sorts: 2048, two a thread in registers.
constexpr int64_t kSortChunk = 2048;

/// An element's key after a bitonic stage that pairs it with `other`: the
/// smaller of the two where the element is its pair's first and the pair
/// ascends, or is its second and the pair descends; the larger otherwise.
__device__ inline uint64_t bitonicKeep(uint64_t mine, uint64_t other,
                                       bool first, bool ascending) {
  return (first == ascending) == (mine < other) ? mine : other;
}

/// The stages (k, j) with k from kFrom to kTo and j < min(k, n), on each
/// block's chunk of n keys (n = min(kSortChunk, the padded count)), from
/// `source` (EmbeddingKeys: the first pass) or from `keys`. Thread t holds
/// elements 2t and 2t + 1 in registers (32 threads at least: those past
/// n hold kNoKey, in groups of their own that no stage pairs with the
/// chunk's); the stage j = 1 pairs a thread's own two, j = 2 .. 32 a lane
/// with lane t ^ (j / 2) of its warp through shuffles, and only j >= 64
/// goes through shared memory (two buffers, one barrier a stage): 15
/// barriers for 2048 keys. Before, every stage went through shared
/// memory with a barrier (66 for 2048 keys), four pairs a thread of 256,
/// the indices in 64 bits (some 40 instructions a pair).
template <typename Source>
__global__ void __launch_bounds__(kSortChunk / 2)
    bitonicChunkKernel(uint64_t *keys, Source source, int64_t n, int64_t kFrom,
                       int64_t kTo) {
  MPCRT_KERNEL_PROLOGUE();
  __shared__ uint64_t buffers[2][kSortChunk];
  const int t = threadIdx.x, e0 = 2 * t;
  const int64_t base = blockIdx.x * n;
  uint64_t v[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    if (e0 + h >= n)
      v[h] = kNoKey;
    else if constexpr (std::is_same_v<Source, uint64_t *>)
      v[h] = keys[base + e0 + h];
    else
      v[h] = source(base + e0 + h);
  }
  int buffer = 0;
  for (int64_t k = kFrom; k <= kTo; k <<= 1) {
    // The pairs of a stage (k, j < k) ascend where bit k of their
    // positions is clear; a thread's two elements share it (k >= 2).
    const bool ascending = ((base + e0) & k) == 0;
    for (int j = int(k < n ? k : n) / 2; j > 0; j /= 2) {
      uint64_t other[2];
      if (j >= 64) {
#pragma unroll
        for (int h = 0; h < 2; ++h)
          buffers[buffer][e0 + h] = v[h];
        __syncthreads();
#pragma unroll
        for (int h = 0; h < 2; ++h)
          other[h] = buffers[buffer][(e0 + h) ^ j];
        buffer ^= 1;
      } else if (j >= 2) {
#pragma unroll
        for (int h = 0; h < 2; ++h)
          other[h] = __shfl_xor_sync(0xffffffffu, v[h], j / 2);
      } else {
        other[0] = v[1];
        other[1] = v[0];
      }
#pragma unroll
      for (int h = 0; h < 2; ++h)
        v[h] = bitonicKeep(v[h], other[h], ((e0 + h) & j) == 0, ascending);
    }
  }
#pragma unroll
  for (int h = 0; h < 2; ++h)
    if (e0 + h < n)
      keys[base + e0 + h] = v[h];
}

/// Orders keys[i] and keys[i + j] for the bitonic stage (k, j): ascending
/// where bit k of the position is clear (the last stage, k = the padded
/// count, all ascending).
__device__ inline void orderPair(uint64_t *keys, int64_t i, int64_t j,
                                 int64_t position, int64_t k) {
  uint64_t a = keys[i], b = keys[i + j];
  if (((position & k) == 0) == (a > b)) {
    keys[i] = b;
    keys[i + j] = a;
  }
}

/// The pair q's first element at stage j: q with a 0 bit inserted at j.
__device__ inline int64_t pairStart(int64_t q, int64_t j) {
  return ((q & ~(j - 1)) << 1) | (q & (j - 1));
}

/// The stage (k, j) of pairs further apart than a chunk, in memory.
__global__ void bitonicStageKernel(uint64_t *keys, int64_t padded, int64_t k,
                                   int64_t j) {
  MPCRT_KERNEL_PROLOGUE();
  for (int64_t q = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
       q < padded / 2; q += int64_t(gridDim.x) * blockDim.x) {
    int64_t i = pairStart(q, j);
    orderPair(keys, i, j, i, k);
  }
}

/// The keys of `padded` (a power of two) positions, sorted ascending:
/// made by the first pass's blocks (EmbeddingKeys), which sort their
/// chunks, then merged by stages in memory and in chunks.
void sortKeys(const EmbeddingKeys &source, uint64_t *keys, int64_t padded) {
  int64_t n = std::min(kSortChunk, padded);
  unsigned chunks = static_cast<unsigned>(padded / n);
  unsigned threads = static_cast<unsigned>(std::max<int64_t>(32, n / 2));
  bitonicChunkKernel<<<chunks, threads, 0, stream()>>>(keys, source, n, 2, n);
  for (int64_t k = 2 * n; k <= padded; k *= 2) {
    for (int64_t j = k / 2; j >= n; j /= 2)
      bitonicStageKernel<<<blocksFor(padded / 2), kThreads, 0, stream()>>>(
          keys, padded, k, j);
    bitonicChunkKernel<<<chunks, threads, 0, stream()>>>(keys, keys, n, k, k);
  }
}

/// The first of keys[0, end) whose row is `row` (keys[end] has it, so
/// there is one): a binary search of the sorted keys.
__device__ inline int64_t runStart(const uint64_t *keys, int64_t end,
                                   uint64_t row) {
  int64_t lo = 0, hi = end;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (keys[mid] >> 32 < row)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/// The slot of a segment's sum in the partial sums of the rows summed in
/// more than one segment (kEmbeddingSegment = L): 2 (s / L) for the
/// first segment of its row, 2 (s / L) + 1 for another, where s is the
/// segment's first key. A window of L keys holds at most one first
/// segment of such a row (the row's run is longer than L) and at most one
/// other (its row's run began at least L keys before it, past any other
/// run's start in the window), so 2 ceil(count / L) slots hold them all.
__device__ inline int64_t segmentSlot(int64_t s, bool first) {
  return 2 * (s / formulas::kEmbeddingSegment) + (first ? 0 : 1);
}

/// N accumulators of a row's segment sum in `partials` (N neighbouring
/// columns from `at`), moved 16 bytes at a time where N of them fill 16
/// bytes or more (the caller keeps `at` aligned to that), else one at a
/// time.
template <int N, typename A> struct SumPieces {
  static constexpr int kPiece = N * sizeof(A) >= 16 ? int(16 / sizeof(A)) : 1;
  __device__ static void store(A *at, const A (&sum)[N]) {
#pragma unroll
    for (int h = 0; h < N; h += kPiece) {
      Vec<A, kPiece> piece;
#pragma unroll
      for (int e = 0; e < kPiece; ++e)
        piece.v[e] = sum[h + e];
      storeVec(at, h, true, piece);
    }
  }
  __device__ static void load(const A *at, A (&sum)[N]) {
#pragma unroll
    for (int h = 0; h < N; h += kPiece) {
      Vec<A, kPiece> piece = loadVec<kPiece>(at, h, true);
#pragma unroll
      for (int e = 0; e < kPiece; ++e)
        sum[h + e] = piece.v[e];
    }
  }
};

/// The N columns' sums from `j0` written to the row of the gradient
/// (with Add: each rounded to T, added to the element there and rounded
/// again, a separate add's value), as one access of N.
template <typename T, bool Add, int N>
__device__ void storeRowSums(T *row, int64_t j0,
                             const typename Storage<T>::Acc (&sum)[N]) {
  Vec<T, N> out;
  if constexpr (Add)
    out = loadVec<N>(row, j0, true);
#pragma unroll
  for (int e = 0; e < N; ++e)
    out.v[e] = Add ? storeAdded(out.v[e], sum[e]) : Storage<T>::store(sum[e]);
  storeVec(row, j0, true, out);
}

/// A block per sorted key (embeddingGrid); the first key of each segment
/// of a row's run (formulas::kEmbeddingSegment of its keys, from the
/// run's first) sums the segment's rows of dy, in position order from
/// zero. A run of one segment writes its sum into the row of the
/// gradient (with Add: rounded to T, added to the row's value there and
/// rounded again, a separate add's value); a longer run's segments store
/// theirs in `partials` (segmentSlot) for embeddingRunSumKernel. The CPU
/// reference's order, so the same bits. The segment's positions go to
/// shared memory first, and each thread issues kLoads of their rows'
/// loads before adding them in turn, N neighbouring columns a load (16
/// bytes where d and the pointers allow, as the forward's gather: a
/// thread per column read 2 bytes of an f16 row a load). A token at half
/// of BERT's 4096 positions was one block's walk of 2048 rows (0.81 ms on
/// an H200); now 64 blocks walk 32 each.
template <typename T, bool Add, int N>
__global__ void embeddingSegmentKernel(const T *dy, const uint64_t *keys,
                                       int64_t count, int64_t d, T *gradTable,
                                       typename Storage<T>::Acc *partials) {
  MPCRT_KERNEL_PROLOGUE();
  using S = Storage<T>;
  using A = typename S::Acc;
  using V = Vec<T, N>;
  // Up to 64 bytes of rows in flight a thread (8 loads of one column
  // each, or 4 of N): 8 of 8 took 100 registers in bf16.
  constexpr int kLoads = N > 1 ? 4 : 8;
  constexpr int64_t L = formulas::kEmbeddingSegment;
  static_assert(L <= 32, "a segment's positions gathered by the first warp");
  __shared__ uint32_t positions[L];
  const int64_t vectors = d / N;
  for (int64_t s = blockIdx.x; s < count; s += gridDim.x) {
    uint64_t key = keys[s];
    if (key == kNoKey)
      continue;
    uint64_t row = key >> 32;
    // Whether s begins its run, else whether it begins a segment: only a
    // key at least L into its run looks for the run's start.
    bool first = s == 0 || keys[s - 1] >> 32 != row;
    if (!first &&
        (s < L || keys[s - L] >> 32 != row || (s - runStart(keys, s, row)) % L))
      continue;
    bool alone = first && !(s + L < count && keys[s + L] >> 32 == row);
    __syncthreads(); // the positions before are read
    int64_t t = s + threadIdx.x;
    bool in = threadIdx.x < L && t < count && keys[t] >> 32 == row;
    if (in)
      positions[threadIdx.x] = static_cast<uint32_t>(keys[t]);
    int n = __syncthreads_count(in);
    for (int64_t j = threadIdx.x; j < vectors; j += blockDim.x) {
      A sum[N];
#pragma unroll
      for (int e = 0; e < N; ++e)
        sum[e] = 0;
      for (int u = 0; u < n; u += kLoads) {
        V v[kLoads];
#pragma unroll
        for (int k = 0; k < kLoads; ++k)
          if (u + k < n)
            v[k] = reinterpret_cast<const V *>(dy + int64_t(positions[u + k]) *
                                                        d)[j];
#pragma unroll
        for (int k = 0; k < kLoads; ++k)
          if (u + k < n)
#pragma unroll
            for (int e = 0; e < N; ++e)
              sum[e] += S::load(v[k].v[e]);
      }
      if (alone)
        storeRowSums<T, Add>(gradTable + int64_t(row) * d, j * N, sum);
      else
        SumPieces<N, A>::store(partials + segmentSlot(s, first) * d + j * N,
                               sum);
    }
  }
}

/// A block per sorted key (embeddingGrid); the first key of each run of
/// more than formulas::kEmbeddingSegment keys adds its segments' sums
/// (embeddingSegmentKernel's partials) in order, from zero, and writes
/// the row of the gradient as that kernel writes a run of one segment,
/// N neighbouring columns a thread as that kernel.
template <typename T, bool Add, int N>
__global__ void
embeddingRunSumKernel(const uint64_t *keys, int64_t count, int64_t d,
                      T *gradTable, const typename Storage<T>::Acc *partials) {
  MPCRT_KERNEL_PROLOGUE();
  using A = typename Storage<T>::Acc;
  constexpr int kLoads = 4;
  constexpr int64_t L = formulas::kEmbeddingSegment;
  const int64_t vectors = d / N;
  for (int64_t s = blockIdx.x; s < count; s += gridDim.x) {
    uint64_t key = keys[s];
    if (key == kNoKey)
      continue;
    uint64_t row = key >> 32;
    if ((s > 0 && keys[s - 1] >> 32 == row) ||
        !(s + L < count && keys[s + L] >> 32 == row))
      continue;
    // The run's end: the first key past s + L of another row.
    int64_t lo = s + L + 1, hi = count;
    while (lo < hi) {
      int64_t mid = lo + (hi - lo) / 2;
      if (keys[mid] >> 32 <= row)
        lo = mid + 1;
      else
        hi = mid;
    }
    int64_t segments = (lo - s + L - 1) / L;
    for (int64_t j = threadIdx.x; j < vectors; j += blockDim.x) {
      A sum[N];
#pragma unroll
      for (int e = 0; e < N; ++e)
        sum[e] = 0;
      for (int64_t u = 0; u < segments; u += kLoads) {
        A v[kLoads][N];
#pragma unroll
        for (int k = 0; k < kLoads; ++k)
          if (u + k < segments)
            SumPieces<N, A>::load(
                partials + segmentSlot(s + (u + k) * L, u + k == 0) * d + j * N,
                v[k]);
#pragma unroll
        for (int k = 0; k < kLoads; ++k)
          if (u + k < segments)
#pragma unroll
            for (int e = 0; e < N; ++e)
              sum[e] += v[k][e];
      }
      storeRowSums<T, Add>(gradTable + int64_t(row) * d, j * N, sum);
    }
  }
}

/// The host's mask, bit for bit (formulas::dropoutKeeps): element i is
/// kept when word i % 4 of philox({lo(i/4), lo(step), hi(step), hi(i/4)},
/// seed) >= p * 2^32. A thread takes the four elements of one Philox call.
/// One thread per group of four elements, whose four mask bits one Philox
/// call gives. With `Vector`, a full group's elements move as one access
/// of 4 elements and its mask as one 4-byte word (the pointers aligned to
/// those); the last, partial group one element at a time.
///
/// The result may be narrower (or wider) than the input (TO;
/// mpcrt_dropout_mixed): the kept value scaled in the wider Acc type and
/// rounded once.
template <typename T, typename TO, bool Vector>
__global__ void dropoutKernel(const T *x, TO *y, uint8_t *mask, int64_t count,
                              double p, uint64_t seed, const int64_t *step) {
  MPCRT_KERNEL_PROLOGUE();
  using S = Storage<T>;
  using SO = Storage<TO>;
  using A = decltype(typename S::Acc() + typename SO::Acc());
  A scale = static_cast<A>(1 / (1 - p));
  int64_t t = *step;
  uint64_t threshold = formulas::keepThreshold(p);
  int64_t groups = (count + 3) / 4;
  for (int64_t q = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; q < groups;
       q += int64_t(gridDim.x) * blockDim.x) {
    // A whole group's load first: the Philox rounds run while it is in
    // flight.
    bool whole = Vector && 4 * q + 4 <= count;
    Vec<T, 4> in;
    if (whole)
      in = reinterpret_cast<const Vec<T, 4> *>(x)[q];
    uint32_t words[4];
    formulas::dropoutWords(seed, t, static_cast<uint64_t>(q), words);
    if (whole) {
      Vec<TO, 4> out;
      Vec<uint8_t, 4> keeps;
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        bool keep = words[e] >= threshold;
        keeps.v[e] = keep;
        out.v[e] = SO::store(keep ? A(S::load(in.v[e])) * scale : A(0));
      }
      reinterpret_cast<Vec<uint8_t, 4> *>(mask)[q] = keeps;
      reinterpret_cast<Vec<TO, 4> *>(y)[q] = out;
      continue;
    }
    for (int e = 0; e < 4; ++e) {
      int64_t i = 4 * q + e;
      if (i >= count)
        break;
      bool keep = words[e] >= threshold;
      mask[i] = keep;
      y[i] = SO::store(keep ? A(S::load(x[i])) * scale : A(0));
    }
  }
}

/// Four elements per thread, as one access each of the gradients and of
/// the mask where `Vector` (the pointers aligned to it); the last count %
/// 4 one at a time.
template <typename T, bool Vector>
__global__ void dropoutBackwardKernel(const T *dy, const uint8_t *mask, T *dx,
                                      int64_t count, double p) {
  MPCRT_KERNEL_PROLOGUE();
  using S = Storage<T>;
  using A = typename S::Acc;
  A scale = static_cast<A>(1 / (1 - p));
  int64_t first = blockIdx.x * int64_t(blockDim.x) + threadIdx.x,
          stride = int64_t(gridDim.x) * blockDim.x;
  int64_t groups = Vector ? count / 4 : 0;
  for (int64_t q = first; q < groups; q += stride) {
    Vec<T, 4> in = reinterpret_cast<const Vec<T, 4> *>(dy)[q], out;
    Vec<uint8_t, 4> keeps = reinterpret_cast<const Vec<uint8_t, 4> *>(mask)[q];
#pragma unroll
    for (int e = 0; e < 4; ++e)
      out.v[e] = S::store(keeps.v[e] ? S::load(in.v[e]) * scale : A(0));
    reinterpret_cast<Vec<T, 4> *>(dx)[q] = out;
  }
  for (int64_t i = 4 * groups + first; i < count; i += stride)
    dx[i] = S::store(mask[i] ? S::load(dy[i]) * scale : A(0));
}

/// Calls f with a null pointer to the unsigned type of `bytes` (1, 2, 4, 8
/// or 16) bytes.
template <typename F> void withElementOf(int32_t bytes, F f) {
  switch (bytes) {
  case 1:
    return f(static_cast<uint8_t *>(nullptr));
  case 2:
    return f(static_cast<uint16_t *>(nullptr));
  case 4:
    return f(static_cast<uint32_t *>(nullptr));
  case 8:
    return f(static_cast<uint64_t *>(nullptr));
  default:
    return f(static_cast<Vec<uint32_t, 4> *>(nullptr));
  }
}

void strided(const void *in, int64_t offset, const int64_t *strides, void *out,
             const int64_t *shape, int32_t rank, int32_t bytes, bool scatter) {
  int64_t count;
  Layout<1> s = layoutOf(scatter ? "strided scatter" : "strided copy", shape,
                         rank, {strides}, count);
  if (count == 0)
    return;
  // The same copy described with fewer dimensions and wider elements: a
  // transpose of the innermost dimension through shared-memory tiles, or
  // a contiguous innermost run moved 16, 8 or 4 bytes at a time where its
  // length, the other strides, the offset and both pointers allow (a
  // [B, S, H, D] to [B, H, S, D] permute of f16 moves D * 2 bytes in
  // 16-byte pieces).
  Tiled t;
  if (planTiled(s, bytes, t)) {
    if (bytes == 2 && pairsFit(t, in, offset, out)) {
      tiledPairsKernel<<<tileGrid(t, 2), dim3(32, kTileRows), 0, stream()>>>(
          static_cast<const uint16_t *>(in), offset,
          static_cast<uint16_t *>(out), t, scatter);
      MPCRT_CUDA_LAUNCHED(scatter ? "strided_scatter" : "strided_copy");
      return;
    }
    withElementOf(bytes, [&](auto *e) {
      using E = MPCRT_TYPE(e);
      tiledCopyKernel<E>
          <<<tileGrid(t, sizeof(E)), dim3(32, kTileRows), 0, stream()>>>(
              static_cast<const E *>(in), offset, static_cast<E *>(out), t,
              scatter);
    });
    MPCRT_CUDA_LAUNCHED(scatter ? "strided_scatter" : "strided_copy");
    return;
  }
  int32_t width = bytes;
  if (s.rank > 0 && s.strides[0][s.rank - 1] == 1) {
    for (int32_t w : {16, 8, 4}) {
      if (w <= bytes)
        break;
      bool fits = (s.dims[s.rank - 1] * bytes) % w == 0 &&
                  (offset * bytes) % w == 0 && alignedTo(in, w) &&
                  alignedTo(out, w);
      for (int d = 0; d + 1 < s.rank && fits; ++d)
        fits = (s.strides[0][d] * bytes) % w == 0;
      if (!fits)
        continue;
      for (int d = 0; d + 1 < s.rank; ++d)
        s.strides[0][d] = s.strides[0][d] * bytes / w;
      s.setDim(s.rank - 1, s.dims[s.rank - 1] * bytes / w);
      offset = offset * bytes / w;
      count = count * bytes / w;
      width = w;
      break;
    }
  }
  bool small = indexesFit32(s, count, offset);
  withElementOf(width, [&](auto *e) {
    using E = MPCRT_TYPE(e);
    auto *from = static_cast<const E *>(in);
    auto *to = static_cast<E *>(out);
    unsigned blocks = blocksFor((count + kStridedAhead - 1) / kStridedAhead);
    if (small)
      stridedCopyKernel<E, uint32_t><<<blocks, kThreads, 0, stream()>>>(
          from, static_cast<uint32_t>(offset), to, s,
          static_cast<uint32_t>(count), scatter);
    else
      stridedCopyKernel<E, int64_t><<<blocks, kThreads, 0, stream()>>>(
          from, offset, to, s, count, scatter);
  });
  MPCRT_CUDA_LAUNCHED(scatter ? "strided_scatter" : "strided_copy");
}

/// Calls f(std::bool_constant<Vector>{}): Vector where `a` and `b` are
/// aligned to 4 of their elements and the mask to 4 bytes (a group of four
/// as one access each).
template <typename T, typename U, typename F>
void withGroupsOfFour(const T *a, const U *b, const uint8_t *mask, F f) {
  if (alignedTo(a, 4 * sizeof(T)) && alignedTo(b, 4 * sizeof(U)) &&
      alignedTo(mask, 4))
    f(std::true_type{});
  else
    f(std::false_type{});
}

} // namespace

void stridedCopy(const void *input, int64_t offset, const int64_t *inStrides,
                 void *output, const int64_t *shape, int32_t rank,
                 int32_t bytes) {
  strided(input, offset, inStrides, output, shape, rank, bytes, false);
}

int64_t setTiledBatchesAlongY(int64_t most) {
  int64_t before = tiledBatchesAlongY;
  tiledBatchesAlongY = std::clamp<int64_t>(most, 1, kGridYZ);
  return before;
}

int32_t stridedCopyTiles(const void *input, int64_t offset,
                         const int64_t *strides, const void *output,
                         const int64_t *shape, int32_t rank, int32_t bytes) {
  Tiled t;
  int64_t count;
  if (!planTiled(layoutOf("strided copy", shape, rank, {strides}, count), bytes,
                 t))
    return 0;
  return bytes == 2 && pairsFit(t, input, offset, output) ? 2 : 1;
}

void stridedScatter(const void *input, void *output, int64_t offset,
                    const int64_t *outStrides, const int64_t *shape,
                    int32_t rank, int32_t bytes) {
  strided(input, offset, outStrides, output, shape, rank, bytes, true);
}

void embedding(mpcrt_dtype dtype, const void *table, int64_t v, int64_t d,
               const void *indices, int32_t indexBits, int64_t count,
               void *output) {
  if (count * d == 0)
    return;
  dispatch(dtype, [&](auto *t) {
    using T = MPCRT_TYPE(t);
    withVectorsOf<T>(d, {table, output}, [&](auto width) {
      constexpr int N = decltype(width)::value;
      auto [blocks, threads] = embeddingGrid(count, d / N);
      embeddingKernel<T, N><<<blocks, threads, 0, stream()>>>(
          static_cast<const T *>(table), v, d, indices, indexBits, count,
          static_cast<T *>(output), &deviceErrors()->index);
    });
  });
  MPCRT_CUDA_LAUNCHED("embedding");
}

void embeddingBackward(mpcrt_dtype dtype, const void *gradOutput,
                       const void *indices, int32_t indexBits, int64_t count,
                       int64_t v, int64_t d, int64_t padding,
                       const void *addend, void *gradTable) {
  dispatch(dtype, [&](auto *t) {
    using T = MPCRT_TYPE(t);
    // The table starts as zeros, or as the addend (in place: as it is).
    if (addend)
      copy(gradTable, addend, v * d * int64_t(sizeof(T)));
    else
      zero(gradTable, v * d * int64_t(sizeof(T)));
    if (count * d == 0 || v == 0)
      return;
    if (count > INT32_MAX || v > UINT32_MAX) {
      mpcrt::errors::reportError("CUDA backend: embedding backward of more "
                                 "than 2^31 indices or 2^32 rows\n");
      std::exit(1);
    }
    int64_t padded = 1;
    while (padded < count)
      padded *= 2;
    // The partial sums after the keys in the scratch buffer, 32-byte
    // aligned (the keys 2 floats each, at least 8 of them). Their slots
    // are fewer than the indices (count / 16 + 2), so the floats fewer
    // than dy's bytes.
    using A = typename Storage<T>::Acc;
    int64_t slots = 2 * ((count + formulas::kEmbeddingSegment - 1) /
                         formulas::kEmbeddingSegment);
    int64_t partialFloats = slots * d * int64_t(sizeof(A) / sizeof(float));
    int64_t keyFloats = std::max<int64_t>(2 * padded, 8);
    float *scratch = scratchF32(keyFloats + partialFloats);
    auto *keys = reinterpret_cast<uint64_t *>(scratch);
    auto *partials = reinterpret_cast<A *>(scratch + keyFloats);
    sortKeys(EmbeddingKeys{indices, indexBits, count, v, padding,
                           &deviceErrors()->index},
             keys, padded);
    // N columns a thread: 16 bytes of dy's and the gradient's rows where
    // d and both pointers allow (the partials' slots, of d accumulators
    // each, then start 32-byte aligned), else one.
    withVectorsOf<T>(d, {gradOutput, gradTable}, [&](auto width) {
      constexpr int N = decltype(width)::value;
      std::pair<unsigned, unsigned> grid = embeddingGrid(count, d / N);
      auto sumRows = [&](auto add) {
        constexpr bool kAdd = decltype(add)::value;
        auto [blocks, threads] = grid;
        auto *out = static_cast<T *>(gradTable);
        embeddingSegmentKernel<T, kAdd, N><<<blocks, threads, 0, stream()>>>(
            static_cast<const T *>(gradOutput), keys, count, d, out, partials);
        embeddingRunSumKernel<T, kAdd, N>
            <<<blocks, threads, 0, stream()>>>(keys, count, d, out, partials);
      };
      if (addend)
        sumRows(std::true_type{});
      else
        sumRows(std::false_type{});
    });
  });
  MPCRT_CUDA_LAUNCHED("embedding_backward");
}

void dropout(mpcrt_dtype in, const void *input, mpcrt_dtype out, void *output,
             uint8_t *mask, int64_t count, double p, uint64_t seed,
             const int64_t *step) {
  if (count <= 0)
    return;
  auto launch = [&](auto *xt, auto *yt) {
    using T = MPCRT_TYPE(xt);
    using TO = MPCRT_TYPE(yt);
    auto *x = static_cast<const T *>(input);
    auto *y = static_cast<TO *>(output);
    withGroupsOfFour(x, y, mask, [&](auto vector) {
      dropoutKernel<T, TO, decltype(vector)::value>
          <<<blocksFor((count + 3) / 4), kThreads, 0, stream()>>>(
              x, y, mask, count, p, seed, step);
    });
  };
  if (in == out)
    dispatch(in, [&](auto *t) { launch(t, t); });
  else
    dispatchMixable(in, [&](auto *xt) {
      dispatchMixable(out, [&](auto *yt) { launch(xt, yt); });
    });
  MPCRT_CUDA_LAUNCHED("dropout");
}

void dropoutBackward(mpcrt_dtype dtype, const void *gradOutput,
                     const uint8_t *mask, void *gradInput, int64_t count,
                     double p) {
  if (count <= 0)
    return;
  dispatch(dtype, [&](auto *t) {
    using T = MPCRT_TYPE(t);
    auto *dy = static_cast<const T *>(gradOutput);
    auto *dx = static_cast<T *>(gradInput);
    withGroupsOfFour(dy, dx, mask, [&](auto vector) {
      constexpr bool kVector = decltype(vector)::value;
      dropoutBackwardKernel<T, kVector>
          <<<blocksFor(kVector ? (count + 3) / 4 : count), kThreads, 0,
             stream()>>>(dy, mask, dx, count, p);
    });
  });
  MPCRT_CUDA_LAUNCHED("dropout_backward");
}

float halfToFloat(uint16_t bits) {
  __half_raw raw;
  raw.x = bits;
  return __half2float(__half(raw));
}
float bfloat16ToFloat(uint16_t bits) {
  __nv_bfloat16_raw raw;
  raw.x = bits;
  return __bfloat162float(__nv_bfloat16(raw));
}
uint16_t floatToHalf(float value) {
  return static_cast<__half_raw>(__float2half_rn(value)).x;
}
uint16_t floatToBfloat16(float value) {
  return static_cast<__nv_bfloat16_raw>(__float2bfloat16_rn(value)).x;
}

} // namespace mpcrt::cuda
