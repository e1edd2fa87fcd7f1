//===- Columns.cuh - deterministic reductions over rows ---------*- CUDA
//-*-===//
//
// Sums (or maxima) down the columns of [outer, rows, cols] arrays: bias
// gradients, layer-norm parameter gradients, batch-norm statistics. One
// thread per column walking every row reads strided memory and leaves most
// of the GPU idle when there are few columns; here a block of 32 x 8
// threads reads 32 neighbouring columns of 8 rows at once (coalesced), the
// rows are cut into chunks so that there are enough blocks, and a second
// pass combines each column's chunks in order. The chunking depends on the
// shape only, never on the device, so results are the same on every GPU and
// every run.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_LIB_RUNTIME_CUDA_COLUMNS_CUH
#define MPC_LIB_RUNTIME_CUDA_COLUMNS_CUH

#include "Device.cuh"

namespace mpcrt::cuda {

/// K running values of one column (K = 2: two sums in one pass).
template <typename A, int K> struct Partial { A v[K]; };

/// How a [outer, rows, cols] reduction is cut: blocks of 32 columns x
/// `chunks` row ranges of `chunkRows` x `outer`.
struct ColumnPlan {
  int64_t outer, rows, cols, chunks, chunkRows, tiles;
};

/// The plan for a shape, or one with chunks == 0 when the grid cannot hold
/// it (outer beyond a grid's z dimension): the caller keeps its own kernel.
inline ColumnPlan planColumns(int64_t outer, int64_t rows, int64_t cols) {
  ColumnPlan p{outer, rows, cols, 0, 0, (cols + 31) / 32};
  if (outer < 1 || outer > 65535 || p.tiles < 1 ||
      p.tiles > (int64_t(1) << 31) - 1 || rows < 1)
    return p;
  // Enough blocks to fill a large GPU (a constant: the same cut on every
  // device), with at least 64 rows per chunk.
  constexpr int64_t kTargetBlocks = 2048, kMinChunkRows = 64;
  int64_t blocks = p.tiles * outer;
  int64_t chunks = (kTargetBlocks + blocks - 1) / blocks;
  int64_t byRows = (rows + kMinChunkRows - 1) / kMinChunkRows;
  chunks = chunks < byRows ? chunks : byRows;
  chunks = chunks < 65535 ? chunks : 65535;
  chunks = chunks > 1 ? chunks : 1;
  p.chunkRows = (rows + chunks - 1) / chunks;
  p.chunks = (rows + p.chunkRows - 1) / p.chunkRows;
  return p;
}

/// Bytes of the partials a plan writes.
template <typename A, int K> int64_t partialBytes(const ColumnPlan &p) {
  return p.chunks * p.outer * p.cols * int64_t(sizeof(Partial<A, K>));
}

/// Sum of K values (the default combination).
template <typename A, int K> struct SumOf {
  __device__ Partial<A, K> operator()(Partial<A, K> a,
                                      const Partial<A, K> &b) const {
    for (int k = 0; k < K; ++k)
      a.v[k] += b.v[k];
    return a;
  }
};

/// Pass 1: block (tile, chunk, o) reduces its 32 columns over its rows,
/// 8 rows at a time, then its 8 row lanes in order.
template <typename A, int K, typename Load, typename Combine>
__global__ void columnPartialsKernel(Load load, Combine combine,
                                     Partial<A, K> init, ColumnPlan p,
                                     Partial<A, K> *partials) {
  __shared__ Partial<A, K> lanes[8][32];
  int64_t col = blockIdx.x * int64_t(32) + threadIdx.x;
  int64_t o = blockIdx.z, chunk = blockIdx.y;
  int64_t r0 = chunk * p.chunkRows;
  int64_t r1 = r0 + p.chunkRows < p.rows ? r0 + p.chunkRows : p.rows;
  Partial<A, K> acc = init;
  if (col < p.cols)
    for (int64_t r = r0 + threadIdx.y; r < r1; r += 8)
      acc = combine(acc, load(o, r, col));
  lanes[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && col < p.cols) {
    for (int y = 1; y < 8; ++y)
      acc = combine(acc, lanes[y][threadIdx.x]);
    partials[(chunk * p.outer + o) * p.cols + col] = acc;
  }
}

/// Pass 2: each column's chunks in order, handed to finish(o, col, total).
template <typename A, int K, typename Combine, typename Finish>
__global__ void columnFinishKernel(Combine combine, ColumnPlan p,
                                   const Partial<A, K> *partials,
                                   Finish finish) {
  int64_t outputs = p.outer * p.cols;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < outputs;
       i += int64_t(gridDim.x) * blockDim.x) {
    Partial<A, K> acc = partials[i];
    for (int64_t chunk = 1; chunk < p.chunks; ++chunk)
      acc = combine(acc, partials[chunk * outputs + i]);
    finish(i / p.cols, i % p.cols, acc);
  }
}

/// Pass 2 when there are many chunks: one block per column, its threads
/// striding over the chunks, then a fixed tree over the threads.
template <typename A, int K, typename Combine, typename Finish>
__global__ void columnFinishWideKernel(Combine combine, ColumnPlan p,
                                       const Partial<A, K> *partials,
                                       Partial<A, K> init, Finish finish) {
  __shared__ Partial<A, K> lanes[kThreads];
  int64_t outputs = p.outer * p.cols;
  for (int64_t i = blockIdx.x; i < outputs; i += gridDim.x) {
    Partial<A, K> acc = init;
    for (int64_t chunk = threadIdx.x; chunk < p.chunks; chunk += blockDim.x)
      acc = combine(acc, partials[chunk * outputs + i]);
    lanes[threadIdx.x] = acc;
    __syncthreads();
    for (int half = kThreads / 2; half > 0; half /= 2) {
      if (int(threadIdx.x) < half)
        lanes[threadIdx.x] =
            combine(lanes[threadIdx.x], lanes[threadIdx.x + half]);
      __syncthreads();
    }
    if (threadIdx.x == 0)
      finish(i / p.cols, i % p.cols, lanes[0]);
    __syncthreads(); // lanes[0] read before the next column overwrites it
  }
}

/// Both passes on the stream; `partials` holds partialBytes<A, K>(p).
/// `init` is the combination's identity.
template <typename A, int K, typename Load, typename Combine, typename Finish>
void reduceColumnsOf(const ColumnPlan &p, Load load, Combine combine,
                     Partial<A, K> init, Finish finish,
                     Partial<A, K> *partials) {
  dim3 grid(static_cast<unsigned>(p.tiles), static_cast<unsigned>(p.chunks),
            static_cast<unsigned>(p.outer));
  columnPartialsKernel<A, K>
      <<<grid, dim3(32, 8), 0, stream()>>>(load, combine, init, p, partials);
  int64_t outputs = p.outer * p.cols;
  if (p.chunks >= 64)
    columnFinishWideKernel<A, K>
        <<<blocksFor(outputs, 1), kThreads, 0, stream()>>>(combine, p, partials,
                                                           init, finish);
  else
    columnFinishKernel<A, K><<<blocksFor(outputs), kThreads, 0, stream()>>>(
        combine, p, partials, finish);
}

} // namespace mpcrt::cuda

#endif // MPC_LIB_RUNTIME_CUDA_COLUMNS_CUH
