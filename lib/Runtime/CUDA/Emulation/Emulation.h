//===- Emulation.h - the CUDA backend's kernels run on the host --*- C++
//-*-===//
//
// Included first into every source of the emulated CUDA backend (the same
// .cu files, their `<<<...>>>` launches rewritten by Launches.cmake), so
// that the kernels and the code that launches them run on a machine
// without a GPU: each block's threads are fibers on one host thread,
// switched at __syncthreads and at warp shuffles; the CUDA runtime calls
// the backend makes are answered by Emulation.cpp (host memory, graphs as
// recorded lists of work, and streams as queues whose work runs only when
// the host waits for it).
//
// What it checks: the index arithmetic, the bounds, the barriers and
// shuffles (a barrier some threads never reach, a shuffle reading a lane
// that has exited or does not exist, a launch past the grid's limits are
// errors), the reductions' order and every result against the CPU
// reference; the ordering of work between streams and the host: work on a
// stream runs as late as CUDA allows (when the host synchronises with it,
// or when work it must precede runs), so a missing event wait or stream
// synchronisation reads stale data; and reads of memory nothing wrote
// (fresh device memory holds NaNs and -1s). Built for the race check
// (Racecheck.cpp), it also finds two threads of a launch that access one
// byte with nothing ordering them, one of them writing. What it cannot:
// races between kernels of streams that run concurrently, device math's
// last bits (the host's libm), speed; which cuBLASLt epilogues the library
// offers and which algorithms the libraries pick (CublasLt.cpp, Cudnn.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef MPC_LIB_RUNTIME_CUDA_EMULATION_EMULATION_H
#define MPC_LIB_RUNTIME_CUDA_EMULATION_EMULATION_H

// The execution-space keywords, before CUDA's headers give them meanings
// that only nvcc understands; __shared__ variables are static: the blocks
// of a launch run one after the other, so one copy is each block's. They
// live in a section of their own, which every block starts by filling with
// 0xff bytes (NaN, -1), as a GPU's shared memory holds whatever was there.
#define __host__
#define __device__
#define __global__
#define __launch_bounds__(...)
#define __shared__ __attribute__((section("mpcemu_shared"))) static
#define __constant__

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <math.h>
#include <tuple>
#include <type_traits>
#include <utility>

namespace mpcemu {

/// The built-in variables of the thread that runs.
struct Builtins {
  uint3 threadIdx, blockIdx;
  dim3 blockDim, gridDim;
};
extern Builtins builtins;

/// Whether the other order was asked for (MPC_EMULATION_ORDER=reverse):
/// where blocks, threads and streams start, and what the emulated
/// libraries offer (CublasLt.cpp, Cudnn.cpp).
bool otherOrderRequested();

/// Whether each block's threads run in the reverse order of their index
/// (initially: MPC_EMULATION_ORDER=reverse): a kernel whose result depends
/// on the order has a race (a missing barrier). Returns the order before.
bool runThreadsInReverse(bool reverse);

/// Whether, when the host waits for a stream, every other stream's work
/// runs first (initially: MPC_EMULATION_ORDER=reverse) instead of none of
/// it: work then runs as early as CUDA allows against the stream waited
/// for, not as late. Returns the policy before.
bool runOtherStreamsFirst(bool othersFirst);

/// Appends `work` to `stream`'s queue (it runs when the host waits for it,
/// or for work after it), or records it while `stream` is captured.
void enqueue(cudaStream_t stream, std::function<void()> work);

/// Runs `thread` for every thread of the grid now, or records it while the
/// stream is captured; a configuration CUDA would refuse sets the error
/// cudaGetLastError returns instead.
void launch(dim3 grid, dim3 block, size_t shared, cudaStream_t stream,
            const char *file, int line, std::function<void()> thread);

/// A launch's configuration and then its arguments, evaluated once: see
/// Launches.cmake for the rewriting of `kernel<<<config>>>(args)`.
template <typename... Args> struct Pending;
struct Config {
  dim3 grid, block;
  size_t shared;
  cudaStream_t stream;
  const char *file;
  int line;
  Config(dim3 grid, dim3 block, size_t shared = 0, cudaStream_t stream = 0,
         const char *file = __builtin_FILE(), int line = __builtin_LINE())
      : grid(grid), block(block), shared(shared), stream(stream), file(file),
        line(line) {}
  template <typename... Args>
  Pending<std::decay_t<Args>...> operator()(Args &&...args) const {
    return {*this,
            std::tuple<std::decay_t<Args>...>(std::forward<Args>(args)...)};
  }
};
template <typename... Args> struct Pending {
  Config config;
  std::tuple<Args...> args;
};
/// The kernel, called with the launch's arguments by each thread.
template <typename F> struct Kernel {
  explicit Kernel(F call) : call(call) {}
  F call;
};
template <typename F> Kernel(F) -> Kernel<F>;

/// Whether a kernel (or a library call) may address `p`: null, or within
/// (or one past the end of) memory from cudaMalloc or cudaHostAlloc. A
/// GPU faults on any other host address.
bool deviceAccessible(const void *p);
/// Stops, naming the call (`where`) and its argument (counted from 0),
/// when the device cannot address `p`.
void checkAccessible(const char *where, size_t index, const void *p);

/// A kernel's pointer arguments (not those inside structures passed by
/// value) must be addressable by the device.
template <typename T>
void checkArgument(const Config &c, size_t index, const T &value) {
  if constexpr (std::is_pointer_v<T> &&
                !std::is_function_v<std::remove_pointer_t<T>>) {
    const void *p =
        const_cast<const void *>(static_cast<const volatile void *>(value));
    if (!deviceAccessible(p)) {
      char where[512];
      std::snprintf(where, sizeof where, "kernel launched at %s:%d", c.file,
                    c.line);
      checkAccessible(where, index, p);
    }
  }
}

template <typename F, typename... Args>
void operator*(Kernel<F> kernel, Pending<Args...> &&pending) {
  const Config &c = pending.config;
  std::apply(
      [&](const auto &...args) {
        size_t index = 0;
        (checkArgument(c, index++, args), ...);
      },
      pending.args);
  launch(c.grid, c.block, c.shared, c.stream, c.file, c.line,
         [call = kernel.call, args = std::move(pending.args)] {
           std::apply(call, args);
         });
}

/// What the race check (Racecheck.cpp, in the kernels built for it) knows
/// of the thread that runs: its launch, block and thread, and how many
/// barriers its block and its warp have passed. Two accesses of one launch
/// are ordered only where they are one thread's, or one block's with a
/// __syncthreads between, or one warp's with a __syncwarp or a shuffle
/// between.
struct RaceClock {
  bool running = false; // a block's thread runs kernel code
  uint32_t launch = 0;  // launches run so far (0: none)
  uint32_t block = 0;   // the block's linear index in the grid
  uint32_t thread = 0;  // the thread's linear index in the block
  const unsigned *blockBarriers = nullptr, *warpBarriers = nullptr;
  const char *file = ""; // the launch's (its grid: builtins)
  int line = 0;
};
extern RaceClock raceClock;
/// Called with each device allocation cudaFree releases (the race check's
/// record of it goes).
extern void (*onDeviceFree)(const void *pointer);
/// Adds `hook` to what runs after each block of a launch (the race check's
/// deferred checks, the memory profile's requests), or after each launch.
void atBlockEnd(void (*hook)());
void atLaunchEnd(void (*hook)());
/// The cudaMalloc allocation holding `p`, as its start and size; null
/// where none does.
std::pair<const char *, size_t> deviceAllocationAt(const void *p);

// Barriers and warp exchanges of the running fiber.
void syncThreads();
int syncThreadsOr(int predicate);
int syncThreadsCount(int predicate);
/// Every lane of the warp stores `bytes` of `value`, then reads those of
/// lane `source` into `result` (its own where `source` is out of range).
void exchange(const void *value, void *result, size_t bytes, int source);
int laneId();
/// __syncwarp: every lane of the warp arrives.
void syncWarp();

} // namespace mpcemu

#define threadIdx (::mpcemu::builtins.threadIdx)
#define blockIdx (::mpcemu::builtins.blockIdx)
#define blockDim (::mpcemu::builtins.blockDim)
#define gridDim (::mpcemu::builtins.gridDim)

inline void __syncthreads() { ::mpcemu::syncThreads(); }
inline int __syncthreads_or(int predicate) {
  return ::mpcemu::syncThreadsOr(predicate);
}
inline int __syncthreads_count(int predicate) {
  return ::mpcemu::syncThreadsCount(predicate);
}

inline void __syncwarp(unsigned = 0xffffffffu) { ::mpcemu::syncWarp(); }

namespace mpcemu {
/// The running lane's `value` exchanged for that of lane `source` of its
/// `width`-lane segment (its own where `source` is outside it).
template <typename T> T shuffle(T value, int source, int width) {
  int lane = laneId();
  if (source < 0 || source / width != lane / width)
    source = lane;
  T result;
  exchange(&value, &result, sizeof(T), source);
  return result;
}
} // namespace mpcemu

template <typename T>
T __shfl_xor_sync(unsigned, T value, int laneMask, int width = 32) {
  return ::mpcemu::shuffle(value, ::mpcemu::laneId() ^ laneMask, width);
}
template <typename T>
T __shfl_down_sync(unsigned, T value, unsigned delta, int width = 32) {
  return ::mpcemu::shuffle(value, ::mpcemu::laneId() + int(delta), width);
}

// Atomics: the threads run one at a time, so a read-modify-write is one.
// Built for the race check, each tells it of the access, which it does not
// count as a race with other atomics, and their own loads and stores are
// not instrumented.
#ifdef MPC_EMULATION_RACECHECK
namespace mpcemu {
void atomicAccess(const void *address, size_t bytes);
/// A __threadfence of the running thread (Racecheck.cpp: what it orders
/// between blocks).
void fenceAccess();
} // namespace mpcemu
inline void __threadfence() { ::mpcemu::fenceAccess(); }
#define MPCEMU_ATOMIC(address)                                                 \
  ::mpcemu::atomicAccess(address, sizeof(*(address)))
#define MPCEMU_ATOMIC_FUNCTION __attribute__((no_sanitize("thread")))
#else
#define MPCEMU_ATOMIC(address) ((void)0)
#define MPCEMU_ATOMIC_FUNCTION
// The threads run one at a time: every store is seen at once.
inline void __threadfence() {}
#endif
template <typename T, typename U>
MPCEMU_ATOMIC_FUNCTION T atomicAdd(T *address, U value) {
  MPCEMU_ATOMIC(address);
  T old = *address;
  *address = static_cast<T>(old + static_cast<T>(value));
  return old;
}
template <typename T, typename U>
MPCEMU_ATOMIC_FUNCTION T atomicMax(T *address, U value) {
  MPCEMU_ATOMIC(address);
  T old = *address;
  if (static_cast<T>(value) > old)
    *address = static_cast<T>(value);
  return old;
}
template <typename T, typename U>
MPCEMU_ATOMIC_FUNCTION T atomicMin(T *address, U value) {
  MPCEMU_ATOMIC(address);
  T old = *address;
  if (static_cast<T>(value) < old)
    *address = static_cast<T>(value);
  return old;
}
/// CUDA's wrapping increment: 0 where the old value is at least `limit`.
MPCEMU_ATOMIC_FUNCTION inline unsigned atomicInc(unsigned *address,
                                                 unsigned limit) {
  MPCEMU_ATOMIC(address);
  unsigned old = *address;
  *address = old >= limit ? 0u : old + 1u;
  return old;
}
template <typename T, typename U, typename V>
MPCEMU_ATOMIC_FUNCTION T atomicCAS(T *address, U compare, V value) {
  MPCEMU_ATOMIC(address);
  T old = *address;
  if (old == static_cast<T>(compare))
    *address = static_cast<T>(value);
  return old;
}

/// A load that bypasses a GPU's L1 (not coherent between multiprocessors):
/// here, a load.
template <typename T> T __ldcg(const T *address) { return *address; }

inline int __float_as_int(float x) {
  int i;
  std::memcpy(&i, &x, sizeof i);
  return i;
}
inline float __int_as_float(int i) {
  float x;
  std::memcpy(&x, &i, sizeof x);
  return x;
}
/// Rounds toward +infinity.
inline float __double2float_ru(double x) {
  float f = static_cast<float>(x);
  if (std::isfinite(x) && static_cast<double>(f) < x)
    f = std::nextafter(f, INFINITY);
  return f;
}
// CUDA's min and max of two numbers of any (common) type.
template <typename A, typename B> auto min(A a, B b) {
  using C = std::common_type_t<A, B>;
  return C(b) < C(a) ? C(b) : C(a);
}
template <typename A, typename B> auto max(A a, B b) {
  using C = std::common_type_t<A, B>;
  return C(a) < C(b) ? C(b) : C(a);
}
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }

// Tensor Core fragments (nvcuda::wmma's m16n16k16 shapes, as the backend
// uses them). A fragment's layout across a warp's lanes is opaque to CUDA
// code, so here every lane holds the whole tile, in an order of its own:
// x[] holds the rows turned by the lane's number (row r at (r + lane) mod
// rows), so that code reading x[] as a row-major tile, which a GPU's
// fragments are not, goes wrong here too; code that learns each element's
// row by loading a tile of row numbers works. A load copies all of it
// from memory as it is when the lane runs (so a lane that loads before
// another lane has written, with no __syncwarp between, gets stale values
// in one of the two orders) and, for the race check, reads the elements
// whose linear index is the lane's modulo 32, as if each lane fetched its
// share; a store writes that share. mma_sync forms each element's sum in
// f32 in the order of k from the accumulator. Loads and stores check
// what CUDA asks: a pointer aligned to 32 bytes and a leading dimension a
// multiple of 16 bytes; an error names the launch otherwise. Real Tensor
// Cores sum a product's terms in an order and with roundings of their
// own: tests bound the difference, they do not compare bits.
namespace mpcemu {
/// Stops the running kernel with `what`, naming its launch.
[[noreturn]] void kernelFault(const char *what);
} // namespace mpcemu

namespace nvcuda::wmma {
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

template <typename Use, int M, int N, int K, typename T, typename Layout = void>
struct fragment {
  static constexpr int rows = std::is_same_v<Use, matrix_b> ? K : M;
  static constexpr int cols = std::is_same_v<Use, matrix_a> ? K : N;
  static constexpr int num_elements = rows * cols;
  T x[rows * cols];
};

namespace detail {
/// Where element (r, c) of a fragment of type F lies in x[] of `lane`.
template <typename F> int slot(int lane, int r, int c) {
  return (r + lane) % F::rows * F::cols + c;
}
template <typename T> void checkAccess(const T *p, unsigned ldm) {
  if (reinterpret_cast<uintptr_t>(p) % 32 != 0)
    ::mpcemu::kernelFault("a wmma load or store's pointer is not aligned "
                          "to 32 bytes");
  if (ldm * sizeof(T) % 16 != 0)
    ::mpcemu::kernelFault("a wmma load or store's leading dimension is not "
                          "a multiple of 16 bytes");
}
/// The element at (r, c) of a tile at p.
template <typename T>
const T &at(const T *p, unsigned ldm, bool rowMajor, int r, int c) {
  return rowMajor ? p[r * ldm + c] : p[c * ldm + r];
}
/// The lane's share of a load, as the race check sees it.
template <typename T>
void readShare(const T *p, unsigned ldm, bool rowMajor, int rows, int cols) {
  for (int e = ::mpcemu::laneId(); e < rows * cols; e += 32) {
    T value = at(p, ldm, rowMajor, e / cols, e % cols);
    asm volatile("" : : "r"(&value) : "memory");
  }
}
template <typename F, typename T>
MPCEMU_ATOMIC_FUNCTION void copyTile(F &f, const T *p, unsigned ldm,
                                     bool rowMajor) {
  int lane = ::mpcemu::laneId();
  for (int r = 0; r < F::rows; ++r)
    for (int c = 0; c < F::cols; ++c)
      f.x[slot<F>(lane, r, c)] = at(p, ldm, rowMajor, r, c);
}
template <typename F, typename T>
void load(F &f, const T *p, unsigned ldm, bool rowMajor) {
  checkAccess(p, ldm);
  readShare(p, ldm, rowMajor, F::rows, F::cols);
  copyTile(f, p, ldm, rowMajor);
}
} // namespace detail

template <typename Use, int M, int N, int K, typename T, typename Layout,
          typename V>
MPCEMU_ATOMIC_FUNCTION void fill_fragment(fragment<Use, M, N, K, T, Layout> &f,
                                          const V &value) {
  for (T &x : f.x)
    x = static_cast<T>(value);
}

template <typename Use, int M, int N, int K, typename T, typename Layout>
void load_matrix_sync(fragment<Use, M, N, K, T, Layout> &f, const T *p,
                      unsigned ldm) {
  static_assert(!std::is_same_v<Layout, void>,
                "an accumulator's load takes its layout_t");
  detail::load(f, p, ldm, std::is_same_v<Layout, row_major>);
}

template <int M, int N, int K, typename T>
void load_matrix_sync(fragment<accumulator, M, N, K, T> &f, const T *p,
                      unsigned ldm, layout_t layout) {
  detail::load(f, p, ldm, layout == mem_row_major);
}

template <int M, int N, int K, typename T>
void store_matrix_sync(T *p, const fragment<accumulator, M, N, K, T> &f,
                       unsigned ldm, layout_t layout) {
  using F = fragment<accumulator, M, N, K, T>;
  detail::checkAccess(p, ldm);
  int lane = ::mpcemu::laneId();
  for (int e = lane; e < M * N; e += 32) {
    int r = e / N, c = e % N;
    (layout == mem_row_major ? p[r * ldm + c] : p[c * ldm + r]) =
        f.x[detail::slot<F>(lane, r, c)];
  }
}

// The product touches only the lane's own fragments: the race check need
// not see it. The operands (f16 or bf16) are widened once; their products
// are exact in f32, so each step is one rounding, as a fused multiply-add.
template <int M, int N, int K, typename TA, typename LA, typename TB,
          typename LB, typename TC>
MPCEMU_ATOMIC_FUNCTION void
mma_sync(fragment<accumulator, M, N, K, TC> &d,
         const fragment<matrix_a, M, N, K, TA, LA> &a,
         const fragment<matrix_b, M, N, K, TB, LB> &b,
         const fragment<accumulator, M, N, K, TC> &c) {
  static_assert(sizeof(TA) == 2 && sizeof(TB) == 2,
                "products exact in f32: 16-bit operands");
  using FA = fragment<matrix_a, M, N, K, TA, LA>;
  using FB = fragment<matrix_b, M, N, K, TB, LB>;
  using FC = fragment<accumulator, M, N, K, TC>;
  int lane = ::mpcemu::laneId();
  float wa[M * K], wb[N * K]; // b transposed: a column a row
  for (int r = 0; r < M; ++r)
    for (int k = 0; k < K; ++k)
      wa[r * K + k] = static_cast<float>(a.x[detail::slot<FA>(lane, r, k)]);
  for (int k = 0; k < K; ++k)
    for (int n = 0; n < N; ++n)
      wb[n * K + k] = static_cast<float>(b.x[detail::slot<FB>(lane, k, n)]);
  FC out;
  for (int r = 0; r < M; ++r)
    for (int n = 0; n < N; ++n) {
      int at = detail::slot<FC>(lane, r, n);
      float sum = static_cast<float>(c.x[at]);
      for (int k = 0; k < K; ++k)
        sum += wa[r * K + k] * wb[n * K + k];
      out.x[at] = static_cast<TC>(sum);
    }
  d = out;
}
} // namespace nvcuda::wmma

#endif // MPC_LIB_RUNTIME_CUDA_EMULATION_EMULATION_H
