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
// or 32 or 128 lanes' in a fixed tree, a warp reading 8 neighbouring
// columns' partials of 4 chunks at a time). The cut and the order
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

/// The chunks of a one-launch cut's group: the last block of a group
/// combines their partials (up to 8 loads a thread, from L2), and where a
/// tile has several groups, the last of the groups' last blocks combines
/// the groups' results (at most kOneLaunchChunks of them).
constexpr int64_t kOneLaunchChunks = 32;

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
  /// The last block of each tile combines the tile's chunks in the same
  /// launch (planColumns' one-launch cut), in groups of kOneLaunchChunks
  /// where there are more.
  bool oneLaunch = false;
  __host__ __device__ int64_t groups() const {
    return (chunks + kOneLaunchChunks - 1) / kOneLaunchChunks;
  }
  __host__ __device__ int rowLanes() const { return kThreads / lanes; }
  __host__ __device__ int64_t tileCols() const {
    return int64_t(lanes) * width;
  }
};

/// The partials (chunks x columns x outer, about) planColumns aims for:
/// 4096 x 32 unless setColumnPartialsTarget (Kernels.h) changed it.
int64_t columnPartialsTarget();

/// Whether planColumns may cut a reduction for one launch
/// (setReductionsInOneLaunch, Kernels.h).
bool reductionsInOneLaunch();

/// The lanes, tiles and grid bounds of a cut with at most `lanes` lanes
/// across; false where the grid cannot hold it.
inline bool cutColumns(ColumnPlan &p, int lanes) {
  p.lanes = lanes;
  int64_t groups = (p.cols + p.width - 1) / p.width;
  while (p.lanes > 1 && p.lanes / 2 >= groups)
    p.lanes /= 2;
  p.tiles = (p.cols + p.tileCols() - 1) / p.tileCols();
  return p.outer >= 1 && p.outer <= 65535 && p.tiles >= 1 &&
         p.tiles <= (int64_t(1) << 31) - 1 && p.rows >= 1;
}

/// The plan for a shape of T, or one with chunks == 0 when the grid cannot
/// hold it (outer beyond a grid's z dimension): the caller keeps its own
/// kernel. `whole` is filled in by reduceColumnsOf.
///
/// One launch wherever the grid holds it (chunks of at least 4 rows a row
/// lane, at most kOneLaunchChunks^2 of them, longer where the rows need):
/// 8 lanes across (128 bytes of a row where the columns are read 16 bytes
/// at a time, 32 element by element), so that a group's last block
/// combines few columns' chunks (BERT's 4096 x 768 bias gradient: 12
/// tiles of 64 columns, one group of 32 chunks of 128 rows, 384 blocks;
/// the UNet's first batch norm, 262144 rows of 128 channels: 2 tiles, 32
/// groups of 32 chunks of 256 rows, 2048 blocks).
/// Otherwise (or with setReductionsInOneLaunch(false)) two launches: 32
/// lanes across and chunks for about the partials target, combined by
/// finishColumnsOf.
template <typename T>
ColumnPlan planColumns(int64_t outer, int64_t rows, int64_t cols) {
  constexpr int kWide = 16 / sizeof(T);
  int width = cols % kWide == 0 ? kWide : 1;
  ColumnPlan p{outer, rows, cols, 0, 0, 0, width, 32, false};
  if (reductionsInOneLaunch() && cutColumns(p, width > 1 ? 8 : 32)) {
    int64_t minChunkRows = std::max<int64_t>(32, 4 * p.rowLanes());
    int64_t byRows = (rows + minChunkRows - 1) / minChunkRows;
    int64_t chunks = std::min(byRows, kOneLaunchChunks * kOneLaunchChunks);
    p.chunkRows = (rows + chunks - 1) / chunks;
    p.chunks = (rows + p.chunkRows - 1) / p.chunkRows;
    p.oneLaunch = true;
    return p;
  }
  if (!cutColumns(p, 32))
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

/// Bytes of the partials a plan writes (a one-launch plan's groups'
/// results after its chunks').
template <typename A, int K> int64_t partialBytes(const ColumnPlan &p) {
  int64_t groups = p.oneLaunch && p.groups() > 1 ? p.groups() : 0;
  return (p.chunks + groups) * p.outer * p.cols *
         int64_t(sizeof(Partial<A, K>));
}

/// The counters a one-launch plan's blocks count themselves in at: one
/// per tile and group, then one per tile for the groups.
inline int64_t arrivalsOf(const ColumnPlan &p) {
  return p.tiles * p.outer * (p.groups() + 1);
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

/// What a load whose terms need nothing per column reads once per thread.
struct NoColumnValues {};

/// How many rows' loads a thread of columnPartials (below) has in flight
/// at a time (its U): Load::kRowsInFlight where a load declares it (for
/// several columns a thread; one keeps 4), else 4 where a row's terms
/// take at most 8 values of a thread, 2 beyond.
template <typename Load, int N, int K, typename = void>
constexpr int kRowsInFlight = N * K <= 8 ? 4 : 2;
template <typename Load, int N, int K>
constexpr int
    kRowsInFlight<Load, N, K, std::void_t<decltype(Load::kRowsInFlight)>> =
        N > 1 ? Load::kRowsInFlight : 4;

/// Whether a load caps pass 1's registers: Load::kMinBlocks blocks of
/// kThreads a multiprocessor (at most 65536 / (kThreads * kMinBlocks)
/// registers) in the kernel's bounded instance. Other loads take the
/// instance without bounds, which ptxas sizes as it sees fit: bounds on
/// every load (as 1024 threads, what an unbounded kernel may be launched
/// with) made the batch norm backward's sums spill.
template <typename Load, typename = void>
constexpr bool kBoundedPartials = false;
template <typename Load>
constexpr bool kBoundedPartials<Load, std::void_t<decltype(Load::kMinBlocks)>> =
    true;

/// Pass 1's folds: block (tile, chunk, o) reduces its columns over its
/// rows, each thread N columns of every rowLanes-th row, into `lanes`
/// ([row lane][column of the tile], kThreads * N of them, in shared
/// memory), then waits for the block. load.column<N>(o, col, whole) reads
/// what the columns col .. col + N - 1 need for every row (a batch norm's
/// per-channel values; nothing for a plain sum), once per thread;
/// load.terms<N>(o, r, col, whole, column, t) gives those columns' terms
/// of row r.
template <typename A, int K, int N, typename Load, typename Fold>
__device__ void foldTile(Load load, Fold folder, Partial<A, K> init,
                         ColumnPlan p, Partial<A, K> *lanes) {
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
  constexpr int U = kRowsInFlight<Load, N, K>;
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
    // V rows' loads at a time, then their terms folded in row order.
    auto rows = [&](auto batch) {
      constexpr int V = decltype(batch)::value;
      for (; r + (V - 1) * step < r1; r += V * step) {
        Partial<A, K> t[V][N];
#pragma unroll
        for (int u = 0; u < V; ++u)
          load.template terms<N>(o, r + u * step, col, whole.value, column,
                                 t[u]);
#pragma unroll
        for (int u = 0; u < V; ++u)
#pragma unroll
          for (int k = 0; k < N; ++k)
            folder.add(state[k], t[u][k]);
      }
    };
    rows(std::integral_constant<int, U>());
    // Past U = 4, the last rows (fewer than U) 4 and 2 at a time before
    // one at a time: a thread of 4 to 7 rows took a load's latency for
    // each.
    if constexpr (U > 4) {
      rows(std::integral_constant<int, 4>());
      rows(std::integral_constant<int, 2>());
    }
    rows(std::integral_constant<int, 1>());
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
}

/// Pass 1: foldTile, then each column's row lanes in order (combine),
/// written to the chunk's partials.
template <typename A, int K, int N, typename Load, typename Combine,
          typename Fold>
__device__ void columnPartials(Load load, Combine combine, Fold folder,
                               Partial<A, K> init, ColumnPlan p,
                               Partial<A, K> *partials) {
  __shared__ Partial<A, K> lanes[kThreads * N]; // [row lane][lane][k]
  foldTile<A, K, N>(load, folder, init, p, lanes);
  int64_t first = blockIdx.x * p.tileCols(), mine = first + threadIdx.x;
  int64_t o = blockIdx.z, chunk = blockIdx.y;
  if (threadIdx.x < p.tileCols() && mine < p.cols) {
    Partial<A, K> sum = lanes[threadIdx.x]; // row lane 0's
    for (int y = 1; y < p.rowLanes(); ++y)
      sum = combine(sum, lanes[y * p.tileCols() + threadIdx.x]);
    partials[(chunk * p.outer + o) * p.cols + mine] = sum;
  }
}

/// A partial another block stored, read past L1 (which is not kept
/// coherent with other multiprocessors' stores).
template <typename A, int K>
__device__ Partial<A, K> loadStored(const Partial<A, K> *at) {
  Partial<A, K> v;
#pragma unroll
  for (int k = 0; k < K; ++k)
    v.v[k] = __ldcg(&at->v[k]);
  return v;
}

/// `count` values of each of a block's `columns` columns (a power of two
/// that divides kThreads), value(c, j) for j < count, combined in a fixed
/// order: thread t takes column t % columns and the (t / columns)-th of
/// kThreads / columns segments of consecutive values, combined in order
/// from `init` (up to 8 loads in flight before they are combined: a
/// one-launch plan's segments hold at most 8, one round trip; 4 of wider
/// partials), then
/// thread c (< columns) the segments' results in order. The result is
/// column c's in thread c.
template <typename A, int K, typename Combine, typename Value>
__device__ Partial<A, K> combineInSegments(Combine combine, Partial<A, K> init,
                                           int columns, int64_t count,
                                           Value value) {
  __shared__ Partial<A, K> segments[kThreads];
  const int c = threadIdx.x % columns, l = threadIdx.x / columns;
  const int64_t per = (count + kThreads / columns - 1) / (kThreads / columns);
  const int64_t begin = l * per;
  const int64_t end = begin + per < count ? begin + per : count;
  // 8 in flight, 4 of partials past 12 bytes (f64 moments: 8 spilled in
  // the batch norm statistics' kernel, capped at 85 registers).
  constexpr int kBatch = sizeof(Partial<A, K>) <= 12 ? 8 : 4;
  Partial<A, K> acc = init;
  for (int64_t j = begin; j < end; j += kBatch) {
    Partial<A, K> t[kBatch];
#pragma unroll
    for (int u = 0; u < kBatch; ++u)
      if (j + u < end)
        t[u] = value(c, j + u);
#pragma unroll
    for (int u = 0; u < kBatch; ++u)
      if (j + u < end)
        acc = combine(acc, t[u]);
  }
  __syncthreads(); // an earlier call's segments read
  segments[threadIdx.x] = acc;
  __syncthreads();
  if (l == 0)
    for (int s = 1; s < kThreads / columns && s * per < count; ++s)
      acc = combine(acc, segments[s * columns + c]);
  return acc;
}

/// A whole reduction in one launch (a one-launch plan): foldTile, each
/// column's row lanes combined (combineInSegments), and with one chunk
/// handed to finish(o, col, total) at once. With more, each block stores
/// its chunk's partials, fences and counts itself in at its group's
/// counter in `arrivals` (arrivalsOf(p) of them, each 0 before the
/// launch); the block that arrives last sets the counter back to 0 and
/// combines the group's chunks in chunk order (combineInSegments again),
/// whichever block it is: the order depends on the shape only. Where the
/// tile has several groups, that block stores the group's result after
/// the chunks' partials and counts itself in at the tile's counter the
/// same way, and the last to arrive there combines the groups' results in
/// group order.
template <typename A, int K, int N, typename Load, typename Combine,
          typename Fold, typename Finish>
__device__ void columnsInOneLaunch(Load load, Combine combine, Fold folder,
                                   Partial<A, K> init, ColumnPlan p,
                                   Partial<A, K> *partials, unsigned *arrivals,
                                   Finish finish) {
  __shared__ Partial<A, K> lanes[kThreads * N]; // [row lane][lane][k]
  foldTile<A, K, N>(load, folder, init, p, lanes);
  const int columns = static_cast<int>(p.tileCols());
  const int64_t first = blockIdx.x * int64_t(columns);
  const int64_t o = blockIdx.z, chunk = blockIdx.y;
  const int64_t col = first + threadIdx.x;
  const bool mine = int(threadIdx.x) < columns && col < p.cols;
  Partial<A, K> sum = combineInSegments<A, K>(
      combine, init, columns, p.rowLanes(),
      [&](int c, int64_t y) { return lanes[y * columns + c]; });
  // Stores `value` at `slot` of `at` ([slot][outer][cols]) and counts the
  // block in at `counter`, which `blocks` blocks count at: whether it came
  // last.
  auto arrive = [&](Partial<A, K> *at, int64_t slot, Partial<A, K> value,
                    unsigned *counter, int64_t blocks) {
    if (mine) {
      at[(slot * p.outer + o) * p.cols + col] = value;
      __threadfence();
    }
    return arrivesLast(counter, static_cast<unsigned>(blocks));
  };
  // Slots `from` .. `from + count - 1` of `at`, combined in order.
  auto combineStored = [&](const Partial<A, K> *at, int64_t from,
                           int64_t count) {
    return combineInSegments<A, K>(
        combine, init, columns, count, [&](int c, int64_t k) {
          return first + c < p.cols
                     ? loadStored(
                           &at[((from + k) * p.outer + o) * p.cols + first + c])
                     : init;
        });
  };
  if (p.chunks > 1) {
    const int64_t groups = p.groups(), tile = o * p.tiles + blockIdx.x;
    const int64_t group = chunk / kOneLaunchChunks;
    const int64_t from = group * kOneLaunchChunks;
    const int64_t members =
        p.chunks - from < kOneLaunchChunks ? p.chunks - from : kOneLaunchChunks;
    if (!arrive(partials, chunk, sum, &arrivals[tile * groups + group],
                members))
      return;
    sum = combineStored(partials, from, members);
    if (groups > 1) {
      Partial<A, K> *results = partials + p.chunks * p.outer * p.cols;
      if (!arrive(results, group, sum,
                  &arrivals[p.tiles * p.outer * groups + tile], groups))
        return;
      sum = combineStored(results, 0, groups);
    }
  }
  if (mine)
    finish(o, col, sum);
}

/// columnsInOneLaunch as a kernel, without or with the load's bounds.
template <typename A, int K, int N, typename Load, typename Combine,
          typename Fold, typename Finish>
__global__ void columnsInOneLaunchKernel(Load load, Combine combine,
                                         Fold folder, Partial<A, K> init,
                                         ColumnPlan p, Partial<A, K> *partials,
                                         unsigned *arrivals, Finish finish) {
  MPCRT_KERNEL_PROLOGUE();
  columnsInOneLaunch<A, K, N>(load, combine, folder, init, p, partials,
                              arrivals, finish);
}
template <typename A, int K, int N, typename Load, typename Combine,
          typename Fold, typename Finish>
__global__ void __launch_bounds__(kThreads, Load::kMinBlocks)
    boundedColumnsInOneLaunchKernel(Load load, Combine combine, Fold folder,
                                    Partial<A, K> init, ColumnPlan p,
                                    Partial<A, K> *partials, unsigned *arrivals,
                                    Finish finish) {
  MPCRT_KERNEL_PROLOGUE();
  columnsInOneLaunch<A, K, N>(load, combine, folder, init, p, partials,
                              arrivals, finish);
}

/// Pass 1 as a kernel: without launch bounds, or (kBoundedPartials) with
/// the load's.
template <typename A, int K, int N, typename Load, typename Combine,
          typename Fold>
__global__ void columnPartialsKernel(Load load, Combine combine, Fold folder,
                                     Partial<A, K> init, ColumnPlan p,
                                     Partial<A, K> *partials) {
  MPCRT_KERNEL_PROLOGUE();
  columnPartials<A, K, N>(load, combine, folder, init, p, partials);
}
template <typename A, int K, int N, typename Load, typename Combine,
          typename Fold>
__global__ void __launch_bounds__(kThreads, Load::kMinBlocks)
    boundedColumnPartialsKernel(Load load, Combine combine, Fold folder,
                                Partial<A, K> init, ColumnPlan p,
                                Partial<A, K> *partials) {
  MPCRT_KERNEL_PROLOGUE();
  columnPartials<A, K, N>(load, combine, folder, init, p, partials);
}

/// Pass 2 with few chunks: a thread per column, its chunks in order,
/// handed to finish(o, col, total).
template <typename A, int K, typename Combine, typename Finish>
__global__ void columnFinishKernel(Combine combine, ColumnPlan p,
                                   const Partial<A, K> *partials,
                                   Finish finish) {
  MPCRT_KERNEL_PROLOGUE();
  int64_t outputs = p.outer * p.cols;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < outputs;
       i += int64_t(gridDim.x) * blockDim.x) {
    Partial<A, K> acc = partials[i];
    for (int64_t chunk = 1; chunk < p.chunks; ++chunk)
      acc = combine(acc, partials[chunk * outputs + i]);
    finish(i / p.cols, i % p.cols, acc);
  }
}

/// Outputs a block of the second pass with more chunks takes: 8
/// neighbouring ones, so that a warp's lanes read 8 outputs' partials of
/// each of 4 chunks, whole 32-byte sectors (a warp per output read a
/// sector for each of its lanes' 4 to 16 bytes: 15% of the bytes moved
/// were used in a BERT-width layer's emulated profile).
constexpr int kFinishOutputs = 8;

/// Pass 2 with more chunks: a block of kFinishOutputs x Lanes threads per
/// kFinishOutputs neighbouring outputs, thread t taking output t %
/// kFinishOutputs of the block's and chunk lane l = t / kFinishOutputs,
/// which combines chunks l, l + Lanes, ... in order (4 loads in flight
/// before they are combined); then each output's lanes in a fixed tree:
/// the 4 of a warp (l + 2 into l, then l + 1 into l), the warps' results
/// through shared memory (warp w + 4 j by lane w of the first warp, in
/// order of j), and those 4 the same way as the warps' lanes.
template <int Lanes, typename A, int K, typename Combine, typename Finish>
__global__ void __launch_bounds__(kFinishOutputs *Lanes)
    columnFinishLanesKernel(Combine combine, ColumnPlan p,
                            const Partial<A, K> *partials, Partial<A, K> init,
                            Finish finish) {
  MPCRT_KERNEL_PROLOGUE();
  constexpr int kPerWarp = 32 / kFinishOutputs; // chunk lanes in a warp
  constexpr int kWarps = Lanes / kPerWarp;
  static_assert(kWarps % kPerWarp == 0 && kWarps / kPerWarp <= 32,
                "the warps' results folded by the first warp");
  __shared__ Partial<A, K> warps[kWarps][kFinishOutputs];
  const int64_t outputs = p.outer * p.cols;
  const int out = threadIdx.x % kFinishOutputs;
  const int lane = threadIdx.x / kFinishOutputs, warp = threadIdx.x / 32;
  const int64_t i = int64_t(blockIdx.x) * kFinishOutputs + out;
  // Lanes of one output are kFinishOutputs threads apart in a warp: the
  // offsets 16 and 8 combine its 4 lanes (l + 2, then l + 1 into l).
  auto warpFold = [&](Partial<A, K> v) {
    for (int offset = 16; offset >= kFinishOutputs; offset /= 2) {
      Partial<A, K> other;
#pragma unroll
      for (int k = 0; k < K; ++k)
        other.v[k] = __shfl_down_sync(0xffffffffu, v.v[k], offset);
      if (int(threadIdx.x % 32) < offset)
        v = combine(v, other);
    }
    return v;
  };
  Partial<A, K> acc = init;
  if (i < outputs) {
    int64_t chunk = lane;
    for (; chunk + 3 * Lanes < p.chunks; chunk += 4 * Lanes) {
      Partial<A, K> t[4];
#pragma unroll
      for (int u = 0; u < 4; ++u)
        t[u] = partials[(chunk + u * Lanes) * outputs + i];
#pragma unroll
      for (int u = 0; u < 4; ++u)
        acc = combine(acc, t[u]);
    }
    for (; chunk < p.chunks; chunk += Lanes)
      acc = combine(acc, partials[chunk * outputs + i]);
  }
  acc = warpFold(acc);
  if (threadIdx.x % 32 < kFinishOutputs)
    warps[warp][out] = acc;
  __syncthreads();
  if (warp == 0) {
    int first = lane; // 0 .. kPerWarp - 1 in the first warp
    acc = warps[first][out];
    for (int w = first + kPerWarp; w < kWarps; w += kPerWarp)
      acc = combine(acc, warps[w][out]);
    acc = warpFold(acc);
    if (lane == 0 && i < outputs)
      finish(i / p.cols, i % p.cols, acc);
  }
}

/// Pass 2 on the stream: each column's p.chunks partials (partials[(chunk
/// * p.outer + o) * p.cols + col]) combined in chunk order, by a thread
/// per column, or by 32 or 128 lanes per column as there are more of
/// them.
template <typename A, int K, typename Combine, typename Finish>
void finishColumnsOf(const ColumnPlan &p, Combine combine, Partial<A, K> init,
                     Finish finish, const Partial<A, K> *partials) {
  // A block per 8 outputs, well within a grid's x dimension: with more
  // than 4 chunks the outputs are fewer than a quarter of the partials
  // target (planColumns) or a layer norm's row length (chunkPlan).
  int64_t outputs = p.outer * p.cols;
  auto blocks =
      static_cast<unsigned>((outputs + kFinishOutputs - 1) / kFinishOutputs);
  if (p.chunks > 32 * 8)
    columnFinishLanesKernel<128, A, K>
        <<<blocks, kFinishOutputs * 128, 0, stream()>>>(combine, p, partials,
                                                        init, finish);
  else if (p.chunks > 4)
    columnFinishLanesKernel<32, A, K>
        <<<blocks, kFinishOutputs * 32, 0, stream()>>>(combine, p, partials,
                                                       init, finish);
  else
    columnFinishKernel<A, K><<<blocksFor(outputs), kThreads, 0, stream()>>>(
        combine, p, partials, finish);
}

/// Both passes on the stream (one launch for a one-launch plan);
/// `partials` holds partialBytes<A, K>(p).
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
  auto launch = [&](auto width) {
    constexpr int N = decltype(width)::value;
    if (p.oneLaunch) {
      unsigned *arrivals = arrivalCounters(arrivalsOf(p));
      if constexpr (kBoundedPartials<Load>)
        boundedColumnsInOneLaunchKernel<A, K, N>
            <<<grid, kThreads, 0, stream()>>>(load, combine, fold, init, plan,
                                              partials, arrivals, finish);
      else
        columnsInOneLaunchKernel<A, K, N><<<grid, kThreads, 0, stream()>>>(
            load, combine, fold, init, plan, partials, arrivals, finish);
    } else if constexpr (kBoundedPartials<Load>)
      boundedColumnPartialsKernel<A, K, N><<<grid, kThreads, 0, stream()>>>(
          load, combine, fold, init, plan, partials);
    else
      columnPartialsKernel<A, K, N><<<grid, kThreads, 0, stream()>>>(
          load, combine, fold, init, plan, partials);
  };
  if (p.width == kWide && kWide > 1)
    launch(std::integral_constant<int, kWide>());
  else
    launch(std::integral_constant<int, 1>());
  if (!p.oneLaunch)
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
