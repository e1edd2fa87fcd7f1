//===- Device.cuh - device-side helpers of the CUDA backend -----*- CUDA
//-*-===//

#ifndef MPC_LIB_RUNTIME_CUDA_DEVICE_CUH
#define MPC_LIB_RUNTIME_CUDA_DEVICE_CUH

#include "mpc/Runtime/Report.h"

#include "Kernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <type_traits>

namespace mpcrt::cuda {

/// Exits with a message naming the call when a CUDA call fails.
void check(cudaError_t status, const char *what);
#define MPCRT_CUDA_CHECK(call) ::mpcrt::cuda::check((call), #call)
/// Checks the launch just made and marks it (markOp).
#define MPCRT_CUDA_LAUNCHED(name)                                              \
  (::mpcrt::cuda::check(cudaGetLastError(), name), ::mpcrt::cuda::markOp(name))

/// Threads per block of every kernel (a multiple of the warp size).
constexpr int kThreads = 256;

/// The first statement of every kernel of the backend (a lit test,
/// test/Tools/cuda-kernel-prologues.test, holds every __global__ body to
/// it). On sm_90 and later it waits for the grids this one depends on
/// programmatically (a step graph's programmatic edges, MPC_CUDA_PDL=on:
/// this grid's blocks may be resident before those grids finish) to
/// complete and their memory to be visible, so that nothing of the kernel
/// reads or writes before; then it lets the grids that depend on this one
/// launch, to wait in turn. Launched the ordinary way, the wait returns at
/// once. No-op in the emulation.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define MPCRT_KERNEL_PROLOGUE()                                                \
  do {                                                                         \
    asm volatile("griddepcontrol.wait;" ::: "memory");                         \
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");            \
  } while (0)
#else
#define MPCRT_KERNEL_PROLOGUE()                                                \
  do {                                                                         \
  } while (0)
#endif

/// Bad embedding indices and class labels met by kernels: 1 + the position
/// of the first of each, 0 if none. Kept on the device, so a step never
/// waits; read (in stream order) and cleared by takeDeviceErrors().
struct DeviceErrors {
  unsigned long long index, label;
};
/// The process's record (allocated and zeroed on first use).
DeviceErrors *deviceErrors();
/// Records 1 + `position` in `slot` unless an earlier error is there.
__device__ inline void recordError(unsigned long long *slot, int64_t position) {
  atomicCAS(slot, 0ull, static_cast<unsigned long long>(position + 1));
}

/// Blocks for a grid-stride loop over `count` elements.
inline unsigned blocksFor(int64_t count, int threads = kThreads) {
  int64_t blocks = (count + threads - 1) / threads;
  if (blocks < 1)
    blocks = 1;
  return static_cast<unsigned>(blocks < 65535 * 8 ? blocks : 65535 * 8);
}

/// The entry of a multi-tensor list (a chunk list passed by value: the
/// optimizer updates, the numerics checks) whose blocks include `block`:
/// entry t has blocks firstBlock[t] .. firstBlock[t + 1] - 1.
template <typename List>
__device__ int tensorOfBlock(const List &list, int64_t block) {
  int t = 0;
  while (t + 1 < list.count && list.firstBlock[t + 1] <= block)
    ++t;
  return t;
}

/// Element access by runtime dtype, in double (f64), else float.
__device__ inline double loadAny(mpcrt_dtype dtype, const void *data,
                                 int64_t i) {
  switch (dtype) {
  case MPCRT_F16:
    return __half2float(static_cast<const __half *>(data)[i]);
  case MPCRT_BF16:
    return __bfloat162float(static_cast<const __nv_bfloat16 *>(data)[i]);
  case MPCRT_F32:
    return static_cast<const float *>(data)[i];
  default:
    return static_cast<const double *>(data)[i];
  }
}

/// Stores `value` as element `i`, rounding once to nearest even (as the
/// CPU reference does).
__device__ inline void storeAny(mpcrt_dtype dtype, void *data, int64_t i,
                                double value) {
  switch (dtype) {
  case MPCRT_F16:
    static_cast<__half *>(data)[i] = __double2half(value);
    return;
  case MPCRT_BF16:
    static_cast<__nv_bfloat16 *>(data)[i] = __double2bfloat16(value);
    return;
  case MPCRT_F32:
    static_cast<float *>(data)[i] = static_cast<float>(value);
    return;
  default:
    static_cast<double *>(data)[i] = value;
  }
}

/// Stores `value` as element `i`; with an `addend` (of `dtype`, which may be
/// `data` itself), the value rounded to `dtype`, element `i` of the addend
/// added and the sum rounded again (the CPU reference's storeSumAny: a
/// separate add's value).
__device__ inline void storeSumAny(mpcrt_dtype dtype, void *data,
                                   const void *addend, int64_t i,
                                   double value) {
  if (addend) {
    double rounded;
    storeAny(dtype, &rounded, 0, value);
    value = loadAny(dtype, addend, i) + loadAny(dtype, &rounded, 0);
  }
  storeAny(dtype, data, i, value);
}

#ifdef MPC_CUDA_EMULATION
} // namespace mpcrt::cuda
namespace mpcemu {
[[noreturn]] void kernelFault(const char *what);
} // namespace mpcemu
namespace mpcrt::cuda {
#endif

/// N elements moved as one access (16 bytes at most).
template <typename T, int N> struct alignas(sizeof(T) * N) Vec {
  T v[N];
#if defined(MPC_CUDA_EMULATION) && !defined(MPC_EMULATION_RACECHECK)
  // A GPU stops a kernel whose vector access is not aligned to its size
  // ('misaligned address'); the host's loads do not care, and the
  // undefined-behaviour sanitizer does not check a whole struct's copy:
  // the emulation checks both ends of every copy, so that a path taken
  // for pointers it does not suit fails here as it would on the GPU. Not
  // in the race check's build, whose reports and memory profile name the
  // line of each access: there the copy stays the kernel's own.
  Vec() = default;
  Vec(const Vec &other) { copyFrom(other); }
  Vec &operator=(const Vec &other) {
    check(this);
    copyFrom(other);
    return *this;
  }

private:
  static void check(const void *p) {
    // Opaque to the optimiser, which may assume a Vec's address aligned
    // and fold the test away.
    uintptr_t address = reinterpret_cast<uintptr_t>(p);
    asm volatile("" : "+r"(address));
    if (address % alignof(Vec) != 0)
      ::mpcemu::kernelFault("a vector access's address is not aligned to "
                            "its size (on a GPU: misaligned address)");
  }
  void copyFrom(const Vec &other) {
    check(&other);
    for (int k = 0; k < N; ++k)
      v[k] = other.v[k];
  }
#endif
};

/// Whether `p` is aligned to `bytes`.
__host__ __device__ inline bool alignedTo(const void *p, size_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

/// Elements i .. i + n - 1 (n <= N) of p: one access where `whole` and
/// n == N (the caller checked that p + i is aligned to N elements), else
/// one element at a time, the same elements either way; those past n are
/// left unset. The kernels whose groups may be partial or misaligned
/// (rows, columns, parameters) move them through these two.
template <int N, typename T>
__device__ Vec<std::remove_const_t<T>, N> loadVec(T *p, int64_t i, bool whole,
                                                  int n = N) {
  using E = std::remove_const_t<T>;
  if (whole && n == N)
    return *reinterpret_cast<const Vec<E, N> *>(p + i);
  Vec<E, N> v;
#pragma unroll
  for (int k = 0; k < N; ++k)
    if (k < n)
      v.v[k] = p[i + k];
  return v;
}

template <int N, typename T>
__device__ void storeVec(T *p, int64_t i, bool whole, const Vec<T, N> &v,
                         int n = N) {
  if (whole && n == N) {
    *reinterpret_cast<Vec<T, N> *>(p + i) = v;
    return;
  }
#pragma unroll
  for (int k = 0; k < N; ++k)
    if (k < n)
      p[i + k] = v.v[k];
}

/// Storage types: the accumulator of a tensor type and its conversions.
template <typename T> struct Storage {
  using Acc = float;
  __device__ static float load(T v) { return static_cast<float>(v); }
  __device__ static T store(float v) { return static_cast<T>(v); }
};
template <> struct Storage<double> {
  using Acc = double;
  __device__ static double load(double v) { return v; }
  __device__ static double store(double v) { return v; }
};
template <> struct Storage<__half> {
  using Acc = float;
  __device__ static float load(__half v) { return __half2float(v); }
  __device__ static __half store(float v) { return __float2half_rn(v); }
};
template <> struct Storage<__nv_bfloat16> {
  using Acc = float;
  __device__ static float load(__nv_bfloat16 v) { return __bfloat162float(v); }
  __device__ static __nv_bfloat16 store(float v) {
    return __float2bfloat16_rn(v);
  }
};

/// `sum` rounded to T, then added to `addend` and rounded again: what a
/// separate add of the rounded sum to the addend computes (the CPU
/// reference's storeAdded).
template <typename T>
__device__ T storeAdded(T addend, typename Storage<T>::Acc sum) {
  using S = Storage<T>;
  return S::store(S::load(addend) + S::load(S::store(sum)));
}

/// Elements of type T (const for an input) through Storage<T>: the
/// accessor of the single-type kernels.
template <typename T> struct Typed {
  using E = std::remove_const_t<T>;
  using Acc = typename Storage<E>::Acc;
  T *data;
  __device__ Acc load(int64_t i) const { return Storage<E>::load(data[i]); }
  __device__ void store(int64_t i, Acc v) const {
    data[i] = Storage<E>::store(v);
  }
  /// v rounded to the element type, as a store and a load round it.
  __device__ Acc round(Acc v) const {
    return Storage<E>::load(Storage<E>::store(v));
  }
  /// Whether loadGroup and storeGroup may take g elements at multiples of
  /// g: the data aligned to their bytes.
  bool groupsAt(int g) const { return alignedTo(data, g * sizeof(E)); }
  /// Elements i .. i + G - 1 as one access (i a multiple of G).
  template <int G> __device__ void loadGroup(int64_t i, Acc (&v)[G]) const {
    Vec<E, G> g = loadVec<G>(data, i, true);
#pragma unroll
    for (int k = 0; k < G; ++k)
      v[k] = Storage<E>::load(g.v[k]);
  }
  template <int G>
  __device__ void storeGroup(int64_t i, const Acc (&v)[G]) const {
    Vec<E, G> g;
#pragma unroll
    for (int k = 0; k < G; ++k)
      g.v[k] = Storage<E>::store(v[k]);
    storeVec(data, i, true, g);
  }
};

/// Elements of f16, bf16 or f32, chosen at run time: the accessor of the
/// mixed-type kernels (mpcrt_*_mixed). Loads widen exactly to f32, stores
/// round once to nearest even.
struct AnyFloat {
  using Acc = float;
  mpcrt_dtype type;
  const void *data;
  /// Typed's accesses, the type chosen once per call.
  __device__ float load(int64_t i) const {
    float v;
    with([&](auto typed) { v = typed.load(i); });
    return v;
  }
  __device__ void store(int64_t i, float v) const {
    with([&](auto typed) { typed.store(i, v); });
  }
  __device__ float round(float v) const {
    float r;
    with([&](auto typed) { r = typed.round(v); });
    return r;
  }
  bool groupsAt(int g) const {
    return alignedTo(data, g * (type == MPCRT_F32 ? 4 : 2));
  }
  template <int G> __device__ void loadGroup(int64_t i, float (&v)[G]) const {
    with([&](auto typed) { typed.template loadGroup<G>(i, v); });
  }
  template <int G>
  __device__ void storeGroup(int64_t i, const float (&v)[G]) const {
    with([&](auto typed) { typed.template storeGroup<G>(i, v); });
  }

private:
  template <typename F> __device__ void with(F f) const;
};

/// Sum (or max, a NaN winning) of one value per thread over a block of
/// kThreads, in a fixed order, returned to every thread.
template <typename A, bool Max = false> __device__ A blockReduce(A v) {
  __shared__ A partial[kThreads / 32];
  for (int offset = 16; offset > 0; offset >>= 1) {
    A other = __shfl_xor_sync(0xffffffffu, v, offset);
    v = Max ? (isnan(other) || other > v ? other : v) : v + other;
  }
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  __syncthreads(); // partial may still be read by a previous call
  if (lane == 0)
    partial[warp] = v;
  __syncthreads();
  A total = partial[0];
  for (int w = 1; w < int(blockDim.x / 32); ++w)
    total = Max ? (isnan(partial[w]) || partial[w] > total ? partial[w] : total)
                : total + partial[w];
  return total;
}

/// Whether the calling block is the last of `blocks` to count itself in
/// at *counter (0 before the first arrives; the last sets it back to 0),
/// returned to every thread of the block. A thread that stored what the
/// last block reads fences (__threadfence) before the call; thread 0's
/// atomic follows a barrier, and its fence after it orders the last
/// block's reads of the others' stores (read them past L1: __ldcg).
__device__ inline bool arrivesLast(unsigned *counter, unsigned blocks) {
  __shared__ bool last;
  __syncthreads(); // every store fenced; `last` of an earlier call read
  if (threadIdx.x == 0) {
    last = atomicInc(counter, blocks - 1) == blocks - 1;
    __threadfence();
  }
  __syncthreads();
  return last;
}

/// Sum (or max, a NaN winning) over a warp's 32 lanes in a fixed butterfly
/// order, returned to every lane.
template <typename A, bool Max = false> __device__ A warpReduce(A v) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    A other = __shfl_xor_sync(0xffffffffu, v, offset);
    v = Max ? (isnan(other) || other > v ? other : v) : v + other;
  }
  return v;
}

/// The longest row a warp takes alone (the softmax's lanes hold it in
/// registers, 32 elements each; a layer norm's lanes unroll their groups
/// of it); longer rows take a block.
constexpr int64_t kWarpRowLimit = 1024;

/// The threads that share a row of a kernel that loops over rows: a block,
/// or a warp (for short rows: fewer threads idle, shuffles instead of a
/// block's barriers). first() and stride() give the team's rows.
template <bool Warp> struct RowTeam {
  static constexpr bool kWarp = Warp;
  __device__ static int64_t first() {
    return Warp ? (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32
                : int64_t(blockIdx.x);
  }
  __device__ static int64_t stride() {
    return Warp ? int64_t(gridDim.x) * (blockDim.x / 32) : int64_t(gridDim.x);
  }
  __device__ static int64_t rank() {
    return Warp ? threadIdx.x % 32 : threadIdx.x;
  }
  __device__ static int64_t size() { return Warp ? 32 : blockDim.x; }
  template <typename A, bool Max = false> __device__ static A reduce(A v) {
    if constexpr (Warp)
      return warpReduce<A, Max>(v);
    else
      return blockReduce<A, Max>(v);
  }
  /// Makes the team's writes to global memory visible to the team.
  __device__ static void sync() {
    if constexpr (Warp)
      __syncwarp();
    else
      __syncthreads();
  }
};

/// A grid-stride loop over `vectors` that takes `Ahead` of the thread's
/// indices at a time: load(v, a) for each of them first, so that their
/// loads are in flight together, then body(v, a) for each in order (one
/// index per iteration kept a single load of each thread in flight).
template <int Ahead, typename I, typename Load, typename Body>
__device__ void gridStrideAhead(I vectors, Load load, Body body) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t v0 = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
       v0 < vectors; v0 += Ahead * stride) {
#pragma unroll
    for (int a = 0; a < Ahead; ++a)
      if (v0 + a * stride < vectors)
        load(static_cast<I>(v0 + a * stride), a);
#pragma unroll
    for (int a = 0; a < Ahead; ++a)
      if (v0 + a * stride < vectors)
        body(static_cast<I>(v0 + a * stride), a);
  }
}

/// n / divisor for a non-negative index n of type I and a positive
/// divisor fixed at launch: a multiply-high, an add and a shift by `fast`
/// (formulas::FastDivider of the divisor) for 32-bit indices (below 2^31),
/// `/` for 64-bit ones. A GPU has no integer divider: a 32-bit division is
/// a sequence of about 20 instructions.
template <typename I>
__device__ I quotientBy(I n, int64_t divisor,
                        const formulas::FastDivider &fast) {
  if constexpr (sizeof(I) == 4)
    return static_cast<I>(fast.divide(static_cast<uint32_t>(n)));
  else
    return n / static_cast<I>(divisor);
}

/// A divisor fixed at launch for indices of type I (quotientBy).
template <typename I> struct IndexDivisor {
  I value = 1;
  formulas::FastDivider fast;
  IndexDivisor() = default;
  explicit IndexDivisor(int64_t divisor)
      : value(static_cast<I>(divisor > 0 ? divisor : 1)),
        fast(sizeof(I) == 4 ? static_cast<uint32_t>(value) : 1u) {}
  __device__ I quotient(I n) const { return quotientBy(n, value, fast); }
  /// n modulo the divisor; n becomes the quotient.
  __device__ I split(I &n) const {
    I q = quotient(n), r = n - q * value;
    n = q;
    return r;
  }
};

/// Dimensions of the strided operations (copies, broadcasting ops).
constexpr int kMaxRank = 8;

/// N operands' element strides over one shape, described with as few
/// dimensions as possible: those of size 1 dropped, neighbours that every
/// operand steps through as through one merged (each merge saves a kernel
/// a division per element: a same-shape operation becomes one flat
/// dimension, a bias add two).
template <int N> struct Layout {
  int64_t dims[kMaxRank], strides[N][kMaxRank];
  int rank;
  /// Division by each dimension for 32-bit indices (setDim keeps them).
  formulas::FastDivider dividers[kMaxRank];
  /// Sets dimension d to `size`, and its divider.
  void setDim(int d, int64_t size) {
    dims[d] = size;
    dividers[d] = formulas::FastDivider(
        static_cast<uint32_t>(size < (int64_t(1) << 31) ? size : 1));
  }
};

/// The merged layout of `shape` (`rank` dimensions, `count` elements)
/// under the operands' strides (a null array: broadcast in every
/// dimension). Exits with an error naming `what` past kMaxRank.
template <int N>
Layout<N> layoutOf(const char *what, const int64_t *shape, int32_t rank,
                   const int64_t *const (&strides)[N], int64_t &count) {
  if (rank > kMaxRank) {
    mpcrt::errors::reportError("CUDA backend: %s of rank %d (at most %d)\n",
                               what, rank, kMaxRank);
    std::exit(1);
  }
  Layout<N> s{};
  count = 1;
  for (int d = 0; d < rank; ++d) {
    count *= shape[d];
    if (shape[d] == 1)
      continue;
    bool merges = s.rank > 0;
    for (int k = 0; k < N && merges; ++k) {
      int64_t stride = strides[k] ? strides[k][d] : 0;
      merges = s.strides[k][s.rank - 1] == stride * shape[d];
    }
    int at = merges ? s.rank - 1 : s.rank++;
    s.setDim(at, merges ? s.dims[at] * shape[d] : shape[d]);
    for (int k = 0; k < N; ++k)
      s.strides[k][at] = strides[k] ? strides[k][d] : 0;
  }
  return s;
}

/// The quotient of the index i by dimension d of `s` (quotientBy: its
/// divider for 32-bit indices, below 2^31 by indexesFit32).
template <int N, typename I>
__device__ I quotientOf(const Layout<N> &s, int d, I i) {
  return quotientBy(i, s.dims[d], s.dividers[d]);
}

/// Calls f(d, at) for each dimension d of `s`, innermost first, with the
/// position `at` of the dense index i (below the layout's count) along it;
/// the outermost takes what is left of i, undivided.
template <int N, typename I, typename F>
__device__ void forPositions(const Layout<N> &s, I i, F f) {
  for (int d = s.rank - 1; d > 0; --d) {
    I q = quotientOf(s, d, i);
    f(d, i - q * static_cast<I>(s.dims[d]));
    i = q;
  }
  if (s.rank > 0)
    f(0, i);
}

/// Operand k's element offset of the dense index i.
template <int N, typename I>
__device__ I offsetOf(const Layout<N> &s, int k, I i) {
  I at = 0;
  forPositions(s, i,
               [&](int d, I p) { at += p * static_cast<I>(s.strides[k][d]); });
  return at;
}

/// Whether a launch over `count` elements of the layout `s` indexes in
/// uint32_t: count below 2^31 (a grid-stride step past it cannot wrap), no
/// negative offset or stride, and every operand's last offset (from
/// `offset`) below 2^32.
template <int N>
bool indexesFit32(const Layout<N> &s, int64_t count, int64_t offset = 0) {
  const int64_t kLimit = int64_t(1) << 32;
  bool fits = offset >= 0 && count < kLimit / 2;
  for (int k = 0; k < N; ++k) {
    int64_t last = offset;
    for (int d = 0; d < s.rank; ++d) {
      fits = fits && s.strides[k][d] >= 0;
      last += (s.dims[d] - 1) * s.strides[k][d];
    }
    fits = fits && last < kLimit;
  }
  return fits;
}

/// Calls f(I *) (a null pointer) with I = int32_t when every index and
/// offset of a launch is below `bound` < 2^31, else int64_t: 64-bit integer
/// division is the main cost of an indexing kernel otherwise. Signed, so
/// that padded window arithmetic may go below 0.
template <typename F> void withIndexFor(int64_t bound, F f) {
  if (bound < (int64_t(1) << 31))
    f(static_cast<int32_t *>(nullptr));
  else
    f(static_cast<int64_t *>(nullptr));
}

/// Calls f(std::integral_constant<int, N>{}) with N = 16 / sizeof(T)
/// elements per access where `inner` (the length of the innermost
/// dimension, channels) is a multiple of it and every pointer is 16-byte
/// aligned, else N = 1.
template <typename T, typename F>
void withVectorsOf(int64_t inner, std::initializer_list<const void *> pointers,
                   F f) {
  constexpr int N = 16 / sizeof(T);
  bool fits = inner % N == 0;
  for (const void *p : pointers)
    fits = fits && alignedTo(p, 16);
  if (fits)
    f(std::integral_constant<int, N>{});
  else
    f(std::integral_constant<int, 1>{});
}

/// Before a __host__ __device__ template that calls what it is given:
/// nvcc checks the call for both sides, although each instantiation is
/// called from one side only (a host lambda from the host, a device lambda
/// from a kernel).
#if defined(__NVCC__)
#define MPCRT_EITHER_SIDE _Pragma("nv_exec_check_disable")
#else
#define MPCRT_EITHER_SIDE
#endif

/// Calls f(T *) (a null pointer) with the storage type of `dtype`; the
/// callee names it MPCRT_TYPE(pointer). Host or device.
MPCRT_EITHER_SIDE
template <typename F>
__host__ __device__ void dispatch(mpcrt_dtype dtype, F f) {
  switch (dtype) {
  case MPCRT_F16:
    return f(static_cast<__half *>(nullptr));
  case MPCRT_BF16:
    return f(static_cast<__nv_bfloat16 *>(nullptr));
  case MPCRT_F32:
    return f(static_cast<float *>(nullptr));
  default:
    return f(static_cast<double *>(nullptr));
  }
}
#define MPCRT_TYPE(ptr) std::remove_pointer_t<decltype(ptr)>

/// dispatch for the mixed-type kernels: f16, bf16 or f32 (the ABI checks
/// that nothing else reaches them).
MPCRT_EITHER_SIDE
template <typename F>
__host__ __device__ void dispatchMixable(mpcrt_dtype dtype, F f) {
  switch (dtype) {
  case MPCRT_F16:
    return f(static_cast<__half *>(nullptr));
  case MPCRT_BF16:
    return f(static_cast<__nv_bfloat16 *>(nullptr));
  default:
    return f(static_cast<float *>(nullptr));
  }
}

/// Calls f(Typed<T>) on the data with T the element type of `type`.
template <typename F> __device__ void AnyFloat::with(F f) const {
  dispatchMixable(type, [&](auto *t) {
    using T = MPCRT_TYPE(t);
    f(Typed<T>{static_cast<T *>(const_cast<void *>(data))});
  });
}

} // namespace mpcrt::cuda

#endif // MPC_LIB_RUNTIME_CUDA_DEVICE_CUH
