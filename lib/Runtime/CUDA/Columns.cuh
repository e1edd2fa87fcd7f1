//===- Columns.cuh - deterministic reductions over rows --------*- CUDA -*-===//
//
// Sums (or maxima) down the columns of [outer, rows, cols] arrays: bias
// gradients, layer-norm parameter gradients, batch-norm statistics. One
// thread per column walking every row reads strided memory and leaves most
// of the GPU idle when there are few columns; here the 256 threads of a
// block read up to 32 x 16 bytes of neighbouring columns of several rows at
// once (coalesced; fewer lanes across and more rows for narrow arrays), the
// rows are cut into chunks so that there are enough blocks, and a second
// pass combines each column's chunks in a fixed order (a thread's in turn,
// or a warp's or a block's lanes in a fixed tree). The cut and the order
// depend on the shape only, never on the device or the pointers, so
// results are the same on every GPU and every run.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_LIB_RUNTIME_CUDA_COLUMNS_CUH
#define MPC_LIB_RUNTIME_CUDA_COLUMNS_CUH

#include "Device.cuh"

namespace mpcrt::cuda {

/// K running values of one column (K = 2: two sums in one pass).
template <typename A, int K> struct Partial {
  A v[K];
};

/// How a [outer, rows, cols] reduction is cut: blocks of `lanes` threads
/// across the columns, each taking `width` neighbouring columns, times
/// kThreads / lanes row lanes, over `chunks` row ranges of `chunkRows` x
/// `outer`. `width` is 16 bytes of the input's type where the column count
/// allows (else 1), read as one access where the pointers allow too
/// (`whole`), one element at a time otherwise: the order of the sums
/// depends on the shape only.
struct ColumnPlan {
  int64_t outer, rows, cols, chunks, chunkRows, tiles;
  int width, lanes;
  bool whole;
  __host__ __device__ int rowLanes() const { return kThreads / lanes; }
  __host__ __device__ int64_t tileCols() const {
    return int64_t(lanes) * width;
  }
};

/// The partials (chunks x columns x outer, about) planColumns aims for:
/// 4096 x 32 unless setColumnPartialsTarget (Kernels.h) changed it.
int64_t columnPartialsTarget();

/// The plan for a shape of T, or one with chunks == 0 when the grid cannot
/// hold it (outer beyond a grid's z dimension): the caller keeps its own
/// kernel. `whole` is filled in by reduceColumnsOf.
template <typename T>
ColumnPlan planColumns(int64_t outer, int64_t rows, int64_t cols) {
  constexpr int kWide = 16 / sizeof(T);
  int width = cols % kWide == 0 ? kWide : 1;
  ColumnPlan p{outer, rows, cols, 0, 0, 0, width, 32, false};
  int64_t groups = (cols + p.width - 1) / p.width;
  while (p.lanes > 1 && p.lanes / 2 >= groups)
    p.lanes /= 2;
  p.tiles = (cols + p.tileCols() - 1) / p.tileCols();
  if (outer < 1 || outer > 65535 || p.tiles < 1 ||
      p.tiles > (int64_t(1) << 31) - 1 || rows < 1)
    return p;
  // About 4096 x 32 columns' worth of chunks (the same cut on every
  // device; only mpc-bench-kernels --sweep changes it), so that the
  // partials the second pass reads stay about 128 K values however wide a
  // block is, with at least 4 rows per row lane (one batch of a thread's
  // loads in flight, see columnPartialsKernel) and 32 per chunk. Grids of
  // half a wave (a 4096 x 768 bias gradient cut into 64 chunks of 64
  // rows: 192 blocks) left most of the GPU idle and their time was two
  // loads' latency.
  const int64_t target = columnPartialsTarget();
  int64_t minChunkRows = std::max<int64_t>(32, 4 * p.rowLanes());
  int64_t widths = (cols + 31) / 32 * 32 * outer;
  int64_t chunks = (target + widths - 1) / widths;
  int64_t byRows = (rows + minChunkRows - 1) / minChunkRows;
  chunks = chunks < byRows ? chunks : byRows;
  chunks = chunks < 65535 ? chunks : 65535;
  chunks = chunks > 1 ? chunks : 1;
  p.chunkRows = (rows + chunks - 1) / chunks;
  p.chunks = (rows + p.chunkRows - 1) / p.chunkRows;
  return p;
}

/// The plan of partials that a kernel of the caller's own writes (a row
/// kernel that sums its rows' columns as well): `chunks` of `chunkRows`
/// rows each. finishColumnsOf and partialBytes read its outer, cols and
/// chunks only; it has no tiles of its own (columnPartialsKernel's).
inline ColumnPlan chunkPlan(int64_t outer, int64_t rows, int64_t cols,
                            int64_t chunks, int64_t chunkRows) {
  return ColumnPlan{outer, rows, cols, chunks, chunkRows, 0, 1, 32, false};
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

/// How a thread of pass 1 folds its rows' terms of one column into its
/// partial: State start(first term of its rows), add(state, term),
/// partial(state). This one combines each term in turn (the combination
/// of the row lanes and of the chunks); a fold may keep other running
/// values where combining term by term costs more (FoldMoments).
template <typename A, int K, typename Combine> struct FoldByCombining {
  Combine combine;
  Partial<A, K> init;
  using State = Partial<A, K>;
  __device__ State start(const Partial<A, K> &) const { return init; }
  __device__ void add(State &s, const Partial<A, K> &t) const {
    s = combine(s, t);
  }
  __device__ Partial<A, K> partial(const State &s) const { return s; }
};

/// Lane 0's value: the combination of the warp's 32 values, lane l taking
/// lane l + offset's at each level (a fixed order).
template <typename A, int K, typename Combine>
__device__ Partial<A, K> warpCombine(Combine combine, Partial<A, K> v) {
  int lane = threadIdx.x % 32;
  for (int offset = 16; offset > 0; offset /= 2) {
    Partial<A, K> other;
#pragma unroll
    for (int k = 0; k < K; ++k)
      other.v[k] = __shfl_down_sync(0xffffffffu, v.v[k], offset);
    if (lane < offset)
      v = combine(v, other);
  }
  return v;
}

/// What a load whose terms need nothing per column reads once per thread.
struct NoColumnValues {};

/// Pass 1: block (tile, chunk, o) reduces its columns over its rows: each
/// thread N columns of every rowLanes-th row (fold), then each column's
/// row lanes in order (combine). load.column<N>(o, col, whole) reads what
/// the columns col .. col + N - 1 need for every row (a batch norm's
/// per-channel values; nothing for a plain sum), once per thread;
/// load.terms<N>(o, r, col, whole, column, t) gives those columns' terms
/// of row r.
template <typename A, int K, int N, typename Load, typename Combine,
          typename Fold>
__global__ void columnPartialsKernel(Load load, Combine combine, Fold folder,
                                     Partial<A, K> init, ColumnPlan p,
                                     Partial<A, K> *partials) {
  __shared__ Partial<A, K> lanes[kThreads * N]; // [row lane][lane][k]
  int lane = threadIdx.x % p.lanes, rowLane = threadIdx.x / p.lanes;
  int64_t first = blockIdx.x * p.tileCols(), col = first + lane * N;
  int64_t o = blockIdx.z, chunk = blockIdx.y;
  int64_t r0 = chunk * p.chunkRows;
  int64_t r1 = r0 + p.chunkRows < p.rows ? r0 + p.chunkRows : p.rows;
  Partial<A, K> acc[N];
#pragma unroll
  for (int k = 0; k < N; ++k)
    acc[k] = init;
  // N > 1 only where N divides the columns: a group is in or out whole.
  // U rows' loads are issued before their terms are folded (in row order,
  // as one row at a time would): a loop that loaded a row and folded it
  // before loading the next kept one load per thread in flight.
  constexpr int U = N * K <= 8 ? 4 : 2;
  // The rows' loops once for each value of p.whole, so that no branch on
  // it is left in them: behind one, the compiler kept a load's per-column
  // values (a batch norm's mean and invstd) in the loop instead of
  // loading them once.
  auto fold = [&](auto whole) {
    const int64_t step = p.rowLanes();
    int64_t r = r0 + rowLane;
    // Read before the rows' loops, not in them: the GPU's compiler hoists
    // such loads itself, the host compiler of the race check's build (its
    // accesses instrumented) does not, and the memory profile would count
    // them every row.
    const auto column = load.template column<N>(o, col, whole.value);
    typename Fold::State state[N];
    {
      Partial<A, K> t[N];
      load.template terms<N>(o, r, col, whole.value, column, t);
#pragma unroll
      for (int k = 0; k < N; ++k)
        state[k] = folder.start(t[k]);
    }
    for (; r + (U - 1) * step < r1; r += U * step) {
      Partial<A, K> t[U][N];
#pragma unroll
      for (int u = 0; u < U; ++u)
        load.template terms<N>(o, r + u * step, col, whole.value, column, t[u]);
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int k = 0; k < N; ++k)
          folder.add(state[k], t[u][k]);
    }
    for (; r < r1; r += step) {
      Partial<A, K> t[N];
      load.template terms<N>(o, r, col, whole.value, column, t);
#pragma unroll
      for (int k = 0; k < N; ++k)
        folder.add(state[k], t[k]);
    }
#pragma unroll
    for (int k = 0; k < N; ++k)
      acc[k] = folder.partial(state[k]);
  };
  if (col < p.cols && r0 + rowLane < r1) {
    if (p.whole)
      fold(std::true_type{});
    else
      fold(std::false_type{});
  }
#pragma unroll
  for (int k = 0; k < N; ++k)
    lanes[threadIdx.x * N + k] = acc[k];
  __syncthreads();
  int64_t mine = first + threadIdx.x;
  if (threadIdx.x < p.tileCols() && mine < p.cols) {
    Partial<A, K> sum = lanes[threadIdx.x]; // row lane 0's
    for (int y = 1; y < p.rowLanes(); ++y)
      sum = combine(sum, lanes[y * p.tileCols() + threadIdx.x]);
    partials[(chunk * p.outer + o) * p.cols + mine] = sum;
  }
}

/// Pass 2 with few chunks: a thread per column, its chunks in order,
/// handed to finish(o, col, total).
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

/// Pass 2 with more chunks: a warp per column (Team = 32) or a block
/// (Team = kThreads), lane l combining chunks l, l + Team, ... in order,
/// then the lanes in a fixed tree (warpCombine, then the warps' results
/// in order). A block of 256 threads per column and a tree of 8 barriers
/// took 4.5 us for 768 columns of 64 chunks, most of its lanes idle.
template <int Team, typename A, int K, typename Combine, typename Finish>
__global__ void columnFinishTeamKernel(Combine combine, ColumnPlan p,
                                       const Partial<A, K> *partials,
                                       Partial<A, K> init, Finish finish) {
  constexpr int kWarps = Team / 32;
  __shared__ Partial<A, K> warps[kWarps > 1 ? kWarps : 1];
  int64_t outputs = p.outer * p.cols;
  int rank = threadIdx.x % Team, warp = rank / 32;
  int64_t teams = int64_t(gridDim.x) * (blockDim.x / Team);
  for (int64_t i = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / Team;
       i < outputs; i += teams) {
    Partial<A, K> acc = init;
    for (int64_t chunk = rank; chunk < p.chunks; chunk += Team)
      acc = combine(acc, partials[chunk * outputs + i]);
    acc = warpCombine<A, K>(combine, acc);
    if constexpr (kWarps > 1) {
      if (rank % 32 == 0)
        warps[warp] = acc;
      __syncthreads();
      if (rank == 0)
        for (int w = 1; w < kWarps; ++w)
          acc = combine(acc, warps[w]);
      __syncthreads(); // warps[] read before the next column's
    }
    if (rank == 0)
      finish(i / p.cols, i % p.cols, acc);
  }
}

/// Pass 2 on the stream: each column's p.chunks partials (partials[(chunk
/// * p.outer + o) * p.cols + col]) combined in chunk order, by a thread, a
/// warp or a block per column as there are more of them.
template <typename A, int K, typename Combine, typename Finish>
void finishColumnsOf(const ColumnPlan &p, Combine combine, Partial<A, K> init,
                     Finish finish, const Partial<A, K> *partials) {
  int64_t outputs = p.outer * p.cols;
  if (p.chunks > 32 * 8)
    columnFinishTeamKernel<kThreads, A, K>
        <<<blocksFor(outputs, 1), kThreads, 0, stream()>>>(combine, p, partials,
                                                           init, finish);
  else if (p.chunks > 4)
    columnFinishTeamKernel<32, A, K>
        <<<blocksFor(outputs * 32), kThreads, 0, stream()>>>(
            combine, p, partials, init, finish);
  else
    columnFinishKernel<A, K><<<blocksFor(outputs), kThreads, 0, stream()>>>(
        combine, p, partials, finish);
}

/// Both passes on the stream; `partials` holds partialBytes<A, K>(p).
/// `init` is the combination's identity; `fold` how a thread folds its
/// rows (FoldByCombining where the caller gives none).
template <typename A, int K, typename Load, typename Combine, typename Fold,
          typename Finish>
void reduceColumnsOf(const ColumnPlan &p, Load load, Combine combine, Fold fold,
                     Partial<A, K> init, Finish finish,
                     Partial<A, K> *partials) {
  dim3 grid(static_cast<unsigned>(p.tiles), static_cast<unsigned>(p.chunks),
            static_cast<unsigned>(p.outer));
  ColumnPlan plan = p;
  plan.whole = load.aligned();
  constexpr int kWide = 16 / sizeof(typename Load::Element);
  if (p.width == kWide && kWide > 1)
    columnPartialsKernel<A, K, kWide><<<grid, kThreads, 0, stream()>>>(
        load, combine, fold, init, plan, partials);
  else
    columnPartialsKernel<A, K, 1><<<grid, kThreads, 0, stream()>>>(
        load, combine, fold, init, plan, partials);
  finishColumnsOf(p, combine, init, finish, partials);
}

template <typename A, int K, typename Load, typename Combine, typename Finish>
void reduceColumnsOf(const ColumnPlan &p, Load load, Combine combine,
                     Partial<A, K> init, Finish finish,
                     Partial<A, K> *partials) {
  reduceColumnsOf(p, load, combine,
                  FoldByCombining<A, K, Combine>{combine, init}, init, finish,
                  partials);
}

} // namespace mpcrt::cuda

#endif // MPC_LIB_RUNTIME_CUDA_COLUMNS_CUH
