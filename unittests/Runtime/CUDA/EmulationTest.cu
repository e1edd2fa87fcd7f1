//===- EmulationTest.cu - the host emulation of CUDA kernels --------------===//
//
// What the emulated backend's tests rely on: blocks and threads indexed as
// on a GPU, __syncthreads and warp shuffles exchanging what they do there,
// atomics, launches CUDA would refuse refused, graphs replaying what was
// captured, and the mistakes a GPU would hang or misbehave on (a barrier
// some threads never reach, a shuffle with lanes that have exited) stopped
// with a message naming the launch.
//
//===----------------------------------------------------------------------===//

#include "Device.cuh"

#include "gtest/gtest.h"

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

namespace {

__global__ void indexKernel(unsigned *out) {
  unsigned block =
      blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  unsigned thread =
      threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  unsigned threads = blockDim.x * blockDim.y * blockDim.z;
  out[block * threads + thread] = block * threads + thread;
}

TEST(Emulation, EveryThreadOfAGridRunsOnceWithItsIndices) {
  const unsigned n = 2 * 3 * 2 * 4 * 5 * 3;
  std::vector<unsigned> host(n, ~0u);
  unsigned *out;
  ASSERT_EQ(cudaMalloc(&out, n * sizeof(unsigned)), cudaSuccess);
  cudaMemset(out, 0xff, n * sizeof(unsigned));
  indexKernel<<<dim3(2, 3, 2), dim3(4, 5, 3)>>>(out);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  cudaMemcpy(host.data(), out, n * sizeof(unsigned), cudaMemcpyDeviceToHost);
  for (unsigned i = 0; i < n; ++i)
    EXPECT_EQ(host[i], i);
  cudaFree(out);
}

/// Each block sums its 256 values through shared memory and a barrier per
/// level, then warp 0 checks the shuffles against the same sum.
__global__ void blockSumKernel(const int *in, int *sums, int *shuffled) {
  __shared__ int lanes[256];
  int t = threadIdx.x;
  lanes[t] = in[blockIdx.x * 256 + t];
  __syncthreads();
  for (int half = 128; half > 0; half /= 2) {
    if (t < half)
      lanes[t] += lanes[t + half];
    __syncthreads();
  }
  if (t == 0)
    sums[blockIdx.x] = lanes[0];
  // Warp sums by xor (every lane gets the total) and by down (lane 0 does).
  int v = in[blockIdx.x * 256 + t], w = v;
  for (int offset = 16; offset > 0; offset /= 2) {
    v += __shfl_xor_sync(0xffffffffu, v, offset);
    w += __shfl_down_sync(0xffffffffu, w, offset);
  }
  if (t % 32 == 0)
    shuffled[(blockIdx.x * 8 + t / 32) * 2] = w;
  if (t % 32 == 31)
    shuffled[(blockIdx.x * 8 + t / 32) * 2 + 1] = v;
}

TEST(Emulation, BarriersAndShufflesExchangeWhatTheyDoOnAGpu) {
  const int blocks = 3;
  std::vector<int> in(blocks * 256);
  std::iota(in.begin(), in.end(), -100);
  int *dIn, *dSums, *dShuffled;
  cudaMalloc(&dIn, in.size() * sizeof(int));
  cudaMalloc(&dSums, blocks * sizeof(int));
  cudaMalloc(&dShuffled, blocks * 16 * sizeof(int));
  cudaMemcpy(dIn, in.data(), in.size() * sizeof(int), cudaMemcpyHostToDevice);
  blockSumKernel<<<blocks, 256>>>(dIn, dSums, dShuffled);
  std::vector<int> sums(blocks), shuffled(blocks * 16);
  cudaMemcpy(sums.data(), dSums, blocks * sizeof(int), cudaMemcpyDeviceToHost);
  cudaMemcpy(shuffled.data(), dShuffled, shuffled.size() * sizeof(int),
             cudaMemcpyDeviceToHost);
  for (int b = 0; b < blocks; ++b) {
    EXPECT_EQ(sums[b], std::accumulate(&in[b * 256], &in[b * 256 + 256], 0));
    for (int w = 0; w < 8; ++w) {
      int want =
          std::accumulate(&in[b * 256 + w * 32], &in[b * 256 + w * 32 + 32], 0);
      EXPECT_EQ(shuffled[(b * 8 + w) * 2], want) << "down, warp " << w;
      EXPECT_EQ(shuffled[(b * 8 + w) * 2 + 1], want) << "xor, warp " << w;
    }
  }
  cudaFree(dIn);
  cudaFree(dSums);
  cudaFree(dShuffled);
}

__global__ void orKernel(const int *flags, int *out) {
  out[threadIdx.x] = __syncthreads_or(flags[threadIdx.x]);
  out[blockDim.x + threadIdx.x] = __syncthreads_or(0);
  out[2 * blockDim.x + threadIdx.x] =
      __syncthreads_count(flags[threadIdx.x] || threadIdx.x < 5);
  out[3 * blockDim.x + threadIdx.x] = __syncthreads_count(0);
}

__global__ void atomicKernel(unsigned long long *first, int *count,
                             float *sum) {
  atomicCAS(first, 0ull, 1ull + threadIdx.x);
  atomicAdd(count, 1);
  atomicAdd(sum, 0.5f);
}

TEST(Emulation, SyncThreadsOrCountAndAtomics) {
  int *flags, *out, *count;
  unsigned long long *first;
  float *sum;
  cudaMalloc(&flags, 64 * sizeof(int));
  cudaMalloc(&out, 256 * sizeof(int));
  cudaMalloc(&first, sizeof(unsigned long long));
  cudaMalloc(&count, sizeof(int));
  cudaMalloc(&sum, sizeof(float));
  std::vector<int> f(64, 0);
  f[37] = 1;
  cudaMemcpy(flags, f.data(), 64 * sizeof(int), cudaMemcpyHostToDevice);
  cudaMemset(first, 0, sizeof(unsigned long long));
  cudaMemset(count, 0, sizeof(int));
  cudaMemset(sum, 0, sizeof(float));
  orKernel<<<1, 64>>>(flags, out);
  atomicKernel<<<2, 96>>>(first, count, sum);
  std::vector<int> o(256);
  cudaMemcpy(o.data(), out, 256 * sizeof(int), cudaMemcpyDeviceToHost);
  for (int i = 0; i < 64; ++i) {
    EXPECT_NE(o[i], 0) << "thread " << i << " missed thread 37's flag";
    EXPECT_EQ(o[64 + i], 0) << "thread " << i;
    EXPECT_EQ(o[128 + i], 6) << "thread " << i << ": threads 0-4 and 37";
    EXPECT_EQ(o[192 + i], 0) << "thread " << i;
  }
  unsigned long long firstHost;
  int countHost;
  float sumHost;
  cudaMemcpy(&firstHost, first, sizeof firstHost, cudaMemcpyDeviceToHost);
  cudaMemcpy(&countHost, count, sizeof countHost, cudaMemcpyDeviceToHost);
  cudaMemcpy(&sumHost, sum, sizeof sumHost, cudaMemcpyDeviceToHost);
  EXPECT_NE(firstHost, 0u);
  EXPECT_LE(firstHost, 96u);
  EXPECT_EQ(countHost, 192);
  EXPECT_EQ(sumHost, 96.0f);
  for (void *p :
       {(void *)flags, (void *)out, (void *)first, (void *)count, (void *)sum})
    cudaFree(p);
}

/// Each thread writes its slot and reads its neighbour's, with or without
/// a barrier between.
__global__ void neighbourKernel(const int *in, int *out, bool barrier) {
  __shared__ int slots[64];
  slots[threadIdx.x] = in[threadIdx.x];
  if (barrier)
    __syncthreads();
  out[threadIdx.x] = slots[(threadIdx.x + 1) % 64];
}

TEST(Emulation, TheReverseOrderExposesAMissingBarrier) {
  int *dIn, *dOut;
  cudaMalloc(&dIn, 64 * sizeof(int));
  cudaMalloc(&dOut, 64 * sizeof(int));
  // Fresh inputs each run (a stale slot then holds another run's value),
  // and whether the result is each thread's neighbour's input.
  int runs = 0;
  auto right = [&](bool barrier, bool reverse) {
    std::vector<int> in(64), out(64);
    std::iota(in.begin(), in.end(), 1000 * ++runs);
    cudaMemcpy(dIn, in.data(), 64 * sizeof(int), cudaMemcpyHostToDevice);
    bool before = mpcemu::runThreadsInReverse(reverse);
    neighbourKernel<<<1, 64>>>(dIn, dOut, barrier);
    mpcemu::runThreadsInReverse(before);
    cudaMemcpy(out.data(), dOut, 64 * sizeof(int), cudaMemcpyDeviceToHost);
    for (int t = 0; t < 64; ++t)
      if (out[t] != in[(t + 1) % 64])
        return false;
    return true;
  };
  EXPECT_TRUE(right(true, false));
  EXPECT_TRUE(right(true, true));
  // Without the barrier, one of the orders reads a slot before it is
  // written.
  EXPECT_FALSE(right(false, false) && right(false, true));
  cudaFree(dIn);
  cudaFree(dOut);
}

/// Block b's thread reads what block b - 1 wrote: a dependency between
/// blocks of one launch, which no barrier can order.
__global__ void previousBlockKernel(int *x) {
  x[blockIdx.x + 1] = blockIdx.x == 0 ? 1 : x[blockIdx.x] + 1;
}

TEST(Emulation, TheReverseOrderRunsBlocksBackwardsToo) {
  int *x;
  cudaMalloc(&x, 9 * sizeof(int));
  auto run = [&](bool reverse) {
    cudaMemset(x, 0, 9 * sizeof(int));
    bool before = mpcemu::runThreadsInReverse(reverse);
    previousBlockKernel<<<8, 1>>>(x);
    mpcemu::runThreadsInReverse(before);
    std::vector<int> h(9);
    cudaMemcpy(h.data(), x, sizeof(int) * 9, cudaMemcpyDeviceToHost);
    return h;
  };
  // In order each block sees its predecessor's value; backwards, none
  // does (each reads the zero the memset left).
  EXPECT_EQ(run(false), std::vector<int>({0, 1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(run(true), std::vector<int>({0, 1, 1, 1, 1, 1, 1, 1, 1}));
  cudaFree(x);
}

/// Thread t writes slot t of shared memory and reads slot t + 1, which
/// only the last thread of the block reads before anything wrote it.
__global__ void sharedSlotsKernel(int *out) {
  __shared__ int slots[33];
  slots[threadIdx.x] = int(blockIdx.x);
  __syncthreads();
  out[blockIdx.x * 32 + threadIdx.x] = slots[threadIdx.x + 1];
}

TEST(Emulation, EachBlockStartsWithSharedMemoryNothingWrote) {
  int *out;
  cudaMalloc(&out, 64 * sizeof(int));
  sharedSlotsKernel<<<2, 32>>>(out);
  std::vector<int> h(64);
  cudaMemcpy(h.data(), out, sizeof(int) * 64, cudaMemcpyDeviceToHost);
  // Not the previous block's (or launch's) 32nd slot: -1.
  EXPECT_EQ(h[31], -1);
  EXPECT_EQ(h[63], -1);
  EXPECT_EQ(h[62], 1);
  cudaFree(out);
}

__global__ void nothingKernel() {}

TEST(Emulation, LaunchesCudaWouldRefuseSetTheLastError) {
  nothingKernel<<<1, 1025>>>();
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "the error is not sticky";
  nothingKernel<<<dim3(1, 65536), 32>>>();
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  nothingKernel<<<0, 32>>>();
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  nothingKernel<<<dim3(1u << 31), 32>>>();
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  nothingKernel<<<1, 32, 64 * 1024>>>();
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
}

__global__ void addKernel(int *x, int by) { x[threadIdx.x] += by; }

TEST(Emulation, AGraphReplaysWhatWasCapturedAndNothingRunsWhileCapturing) {
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  int *x;
  cudaMalloc(&x, 4 * sizeof(int));
  cudaMemsetAsync(x, 0, 4 * sizeof(int), s);
  cudaStreamSynchronize(s);
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal),
            cudaSuccess);
  addKernel<<<1, 4, 0, s>>>(x, 3);
  cudaMemsetAsync(x + 3, 0, sizeof(int), s);
  cudaGraph_t graph;
  ASSERT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
  std::vector<int> h(4);
  cudaMemcpy(h.data(), x, sizeof(int) * 4, cudaMemcpyDeviceToHost);
  EXPECT_EQ(h, std::vector<int>({0, 0, 0, 0}));
  cudaGraphExec_t exec;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  cudaGraphLaunch(exec, s);
  cudaGraphLaunch(exec, s);
  cudaStreamSynchronize(s); // the legacy stream's copy would not wait
  cudaMemcpy(h.data(), x, sizeof(int) * 4, cudaMemcpyDeviceToHost);
  EXPECT_EQ(h, std::vector<int>({6, 6, 6, 0}));
  // A synchronous call while capturing fails, and so does the capture.
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal),
            cudaSuccess);
  EXPECT_NE(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_NE(cudaMalloc(&x, 4), cudaSuccess);
  EXPECT_EQ(cudaStreamEndCapture(s, &graph), cudaErrorStreamCaptureInvalidated);
  cudaGraphExecDestroy(exec);
  cudaStreamDestroy(s);
}

__global__ void fillKernel(int *x, int value) { x[threadIdx.x] = value; }

__global__ void copyKernel(const int *in, int *out) {
  out[threadIdx.x] = in[threadIdx.x];
}

/// x[0..3] as the host sees it after the legacy default stream's copy.
std::vector<int> legacyRead(const int *x) {
  std::vector<int> h(4);
  cudaMemcpy(h.data(), x, sizeof(int) * 4, cudaMemcpyDeviceToHost);
  return h;
}

TEST(Emulation, FreshDeviceMemoryHoldsNaNsAndMinusOnes) {
  float *x;
  cudaMalloc(&x, 4 * sizeof(float));
  std::vector<float> h(4, 0.0f);
  cudaMemcpy(h.data(), x, sizeof(float) * 4, cudaMemcpyDeviceToHost);
  for (float v : h)
    EXPECT_TRUE(std::isnan(v));
  EXPECT_EQ(legacyRead(reinterpret_cast<int *>(x)), std::vector<int>(4, -1));
  cudaFree(x);
}

/// Sets the order in which streams run for the scope of a test.
struct StreamPolicy {
  explicit StreamPolicy(bool othersFirst)
      : before(mpcemu::runOtherStreamsFirst(othersFirst)) {}
  ~StreamPolicy() { mpcemu::runOtherStreamsFirst(before); }
  bool before;
};

TEST(Emulation, StreamWorkRunsOnlyWhenTheHostWaitsForIt) {
  StreamPolicy late(false);
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  int *x;
  cudaMalloc(&x, 4 * sizeof(int));
  fillKernel<<<1, 4, 0, s>>>(x, 7);
  // The legacy default stream does not wait for a non-blocking stream.
  EXPECT_EQ(legacyRead(x), std::vector<int>(4, -1));
  cudaStreamSynchronize(s);
  EXPECT_EQ(legacyRead(x), std::vector<int>(4, 7));
  // Nor does a non-blocking stream wait for cudaMemset (which returns at
  // once): the fill reads what is there when its stream runs.
  cudaMemset(x, 0, 4 * sizeof(int));
  int *y;
  cudaMalloc(&y, 4 * sizeof(int));
  copyKernel<<<1, 4, 0, s>>>(x, y);
  cudaStreamSynchronize(s);
  EXPECT_EQ(legacyRead(y), std::vector<int>(4, 7));
  EXPECT_EQ(legacyRead(x), std::vector<int>(4, 0));
  cudaFree(x);
  cudaFree(y);
  cudaStreamDestroy(s);
}

TEST(Emulation, AnEventWaitOrdersStreamsAndItsAbsenceReadsStaleData) {
  StreamPolicy late(false);
  cudaStream_t a, b;
  cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking);
  cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking);
  cudaEvent_t filled;
  cudaEventCreateWithFlags(&filled, cudaEventDisableTiming);
  int *x, *y;
  cudaMalloc(&x, 4 * sizeof(int));
  cudaMalloc(&y, 4 * sizeof(int));
  auto run = [&](bool wait, int value) {
    fillKernel<<<1, 4, 0, a>>>(x, value);
    cudaEventRecord(filled, a);
    fillKernel<<<1, 4, 0, a>>>(x, -value); // after the record
    if (wait)
      cudaStreamWaitEvent(b, filled, 0);
    copyKernel<<<1, 4, 0, b>>>(x, y);
    cudaStreamSynchronize(b);
    std::vector<int> got = legacyRead(y);
    cudaStreamSynchronize(a);
    return got;
  };
  // With the wait, b sees a's work up to the record, not after it.
  EXPECT_EQ(run(true, 3), std::vector<int>(4, 3));
  // Without it, b reads what a's last run left.
  EXPECT_EQ(run(false, 5), std::vector<int>(4, -3));
  // cudaEventSynchronize runs the recording stream to the record only.
  fillKernel<<<1, 4, 0, a>>>(x, 9);
  cudaEventRecord(filled, a);
  fillKernel<<<1, 4, 0, a>>>(x, 10);
  cudaEventSynchronize(filled);
  EXPECT_EQ(legacyRead(x), std::vector<int>(4, 9));
  cudaStreamSynchronize(a);
  EXPECT_EQ(legacyRead(x), std::vector<int>(4, 10));
  cudaFree(x);
  cudaFree(y);
  cudaEventDestroy(filled);
  cudaStreamDestroy(a);
  cudaStreamDestroy(b);
}

TEST(Emulation, WithOtherStreamsFirstAMissingWaitOverwritesWhatIsRead) {
  // Stream a produces into x twice; stream b copies the first value out.
  // b must wait for a's record, and a's second fill for b's copy (as an
  // upload's staging buffer must wait until the step has taken it).
  StreamPolicy early(true);
  cudaStream_t a, b;
  cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking);
  cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking);
  cudaEvent_t filled, taken;
  cudaEventCreateWithFlags(&filled, cudaEventDisableTiming);
  cudaEventCreateWithFlags(&taken, cudaEventDisableTiming);
  int *x, *y;
  cudaMalloc(&x, 4 * sizeof(int));
  cudaMalloc(&y, 4 * sizeof(int));
  auto run = [&](bool waitTaken) {
    fillKernel<<<1, 4, 0, a>>>(x, 1);
    cudaEventRecord(filled, a);
    cudaStreamWaitEvent(b, filled, 0);
    copyKernel<<<1, 4, 0, b>>>(x, y);
    cudaEventRecord(taken, b);
    if (waitTaken)
      cudaStreamWaitEvent(a, taken, 0);
    fillKernel<<<1, 4, 0, a>>>(x, 2);
    cudaStreamSynchronize(b); // a's work runs first, as far as it may
    std::vector<int> got = legacyRead(y);
    cudaDeviceSynchronize();
    return got;
  };
  EXPECT_EQ(run(true), std::vector<int>(4, 1));
  EXPECT_EQ(run(false), std::vector<int>(4, 2));
  cudaFree(x);
  cudaFree(y);
  cudaEventDestroy(filled);
  cudaEventDestroy(taken);
  cudaStreamDestroy(a);
  cudaStreamDestroy(b);
}

TEST(Emulation, PageableSourcesAreStagedWhenCopiedPinnedOnesWhenRun) {
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  int *x;
  cudaMalloc(&x, 4 * sizeof(int));
  std::vector<int> pageable(4, 1);
  cudaMemcpyAsync(x, pageable.data(), sizeof(int) * 4, cudaMemcpyHostToDevice,
                  s);
  pageable.assign(4, 2); // the copy took the 1s
  cudaStreamSynchronize(s);
  EXPECT_EQ(legacyRead(x), std::vector<int>(4, 1));
  int *pinned;
  ASSERT_EQ(cudaHostAlloc(reinterpret_cast<void **>(&pinned), sizeof(int) * 4,
                          cudaHostAllocDefault),
            cudaSuccess);
  std::fill(pinned, pinned + 4, 3);
  cudaMemcpyAsync(x, pinned, sizeof(int) * 4, cudaMemcpyHostToDevice, s);
  std::fill(pinned, pinned + 4, 4); // before the copy ran: a race on a GPU
  cudaStreamSynchronize(s);
  EXPECT_EQ(legacyRead(x), std::vector<int>(4, 4));
  // To pageable memory the copy is done when the call returns.
  fillKernel<<<1, 4, 0, s>>>(x, 6);
  cudaMemcpyAsync(pageable.data(), x, sizeof(int) * 4, cudaMemcpyDeviceToHost,
                  s);
  EXPECT_EQ(pageable, std::vector<int>(4, 6));
  cudaFreeHost(pinned);
  cudaFree(x);
  cudaStreamDestroy(s);
}

/// Half a warp shuffles with lanes that wait at the block's barrier.
__global__ void unreachedBarrierKernel(int *x) {
  if (threadIdx.x < 16)
    x[threadIdx.x] = __shfl_xor_sync(0xffffffffu, int(threadIdx.x), 1);
  else
    __syncthreads();
}

__global__ void exitedLaneKernel(int *x) {
  if (threadIdx.x % 32 == 5)
    return;
  x[threadIdx.x] = __shfl_down_sync(0xffffffffu, int(threadIdx.x), 1);
}

TEST(EmulationDeathTest, HostMemoryTheDeviceCannotAddressIsRefused) {
  std::vector<int> host(4);
  int *device, *pinned;
  cudaMalloc(&device, 4 * sizeof(int));
  cudaHostAlloc(reinterpret_cast<void **>(&pinned), 4 * sizeof(int),
                cudaHostAllocDefault);
  // Device and pinned memory, null, and one past the end are addressable.
  EXPECT_TRUE(mpcemu::deviceAccessible(device + 4));
  EXPECT_TRUE(mpcemu::deviceAccessible(pinned));
  EXPECT_TRUE(mpcemu::deviceAccessible(nullptr));
  EXPECT_FALSE(mpcemu::deviceAccessible(host.data()));
  EXPECT_FALSE(mpcemu::deviceAccessible(device + 5));
  EXPECT_DEATH(copyKernel<<<1, 4>>>(device, host.data()),
               "kernel launched at .*EmulationTest.cu:[0-9]+: argument 1 "
               "\\(.*\\) is host memory that the device cannot address");
  EXPECT_DEATH(cudaMemsetAsync(host.data(), 0, 16, nullptr),
               "cudaMemsetAsync: argument 0 .* is host memory");
  EXPECT_DEATH(cudaMemcpy(host.data(), pinned, 16, cudaMemcpyDeviceToHost),
               "cudaMemcpyAsync from .* of direction 2: its source is not "
               "device memory");
  EXPECT_DEATH(cudaMemcpy(device, host.data(), 16, cudaMemcpyDeviceToHost),
               "its source is not device memory");
  EXPECT_DEATH(cudaMemcpy(host.data(), device, 16, cudaMemcpyHostToDevice),
               "its destination is not device memory");
  // As the direction says, or any with cudaMemcpyDefault.
  cudaMemcpy(device, host.data(), 16, cudaMemcpyHostToDevice);
  cudaMemcpy(pinned, device, 16, cudaMemcpyDefault);
  cudaFreeHost(pinned);
  cudaFree(device);
}

TEST(EmulationDeathTest, MistakesAGpuWouldHangOnStopWithTheLaunchSite) {
  int *x;
  cudaMalloc(&x, 64 * sizeof(int));
  // Each stops where the kernel runs: when the host waits for it.
  EXPECT_DEATH(
      {
        unreachedBarrierKernel<<<1, 32>>>(x);
        cudaDeviceSynchronize();
      },
      "kernel launched at .*EmulationTest.cu:[0-9]+: threads wait at "
      "a barrier");
  EXPECT_DEATH(
      {
        exitedLaneKernel<<<1, 64>>>(x);
        cudaDeviceSynchronize();
      },
      "EmulationTest.cu:[0-9]+: a warp shuffle over all lanes in a "
      "warp whose lanes have exited");
  cudaFree(x);
}

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EMULATION_TEST_SANITIZED 1
#endif
#endif

#ifdef EMULATION_TEST_SANITIZED
__device__ __attribute__((noinline)) void put(int *p, int at) { p[at] = 1; }

/// Writes element `at` of a thread-local array of 8 in the second block,
/// after a barrier has switched every thread out and back in.
__global__ void localArrayKernel(int *out, int at) {
  int local[8];
  for (int i = 0; i < 8; ++i)
    local[i] = i;
  __syncthreads();
  put(local, blockIdx.x == 1 ? at : 0);
  out[blockIdx.x * blockDim.x + threadIdx.x] = local[threadIdx.x % 8];
}
#endif

// The threads run on stacks of the emulation's own, which the sanitizer is
// told about at every switch: a thread's stack is checked as a stack.
TEST(EmulationDeathTest, AThreadWritingPastItsLocalArrayIsCaughtBySanitizer) {
#ifndef EMULATION_TEST_SANITIZED
  GTEST_SKIP() << "built without AddressSanitizer";
#else
  int *x;
  cudaMalloc(&x, 128 * sizeof(int));
  localArrayKernel<<<2, 64>>>(x, 7);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_DEATH(
      {
        localArrayKernel<<<2, 64>>>(x, 8);
        cudaDeviceSynchronize();
      },
      "stack-buffer-overflow");
  cudaFree(x);
#endif
}

namespace wmma = nvcuda::wmma;

/// out = a b + c on one warp's fragments: a row-major, b from its
/// transpose as column-major (`bt`) and again from b row-major (the two
/// must agree), the result stored column-major at `out` and row-major at
/// `outRows`.
__global__ void wmmaKernel(const __half *a, const __half *b, const __half *bt,
                           const float *c, float *out, float *outRows) {
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fbt;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc, other;
  wmma::load_matrix_sync(fa, a, 16);
  wmma::load_matrix_sync(fbt, bt, 16);
  wmma::load_matrix_sync(fb, b, 16);
  wmma::load_matrix_sync(acc, c, 16, wmma::mem_row_major);
  wmma::fill_fragment(other, 0.0f);
  wmma::mma_sync(other, fa, fb, acc);
  wmma::mma_sync(acc, fa, fbt, acc);
  wmma::store_matrix_sync(out, acc, 16, wmma::mem_col_major);
  wmma::store_matrix_sync(outRows, other, 16, wmma::mem_row_major);
}

TEST(Emulation, WmmaFragmentsMultiplyAsTheirLayoutsSay) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> small(-64, 64);
  std::vector<__half> a(256), b(256), bt(256);
  std::vector<float> c(256);
  for (int r = 0; r < 16; ++r)
    for (int k = 0; k < 16; ++k) {
      a[r * 16 + k] = __float2half(small(rng) / 16.0f);
      b[r * 16 + k] = __float2half(small(rng) / 16.0f);
      c[r * 16 + k] = small(rng) / 4.0f;
    }
  for (int k = 0; k < 16; ++k)
    for (int n = 0; n < 16; ++n)
      bt[n * 16 + k] = b[k * 16 + n];
  __half *da, *db, *dbt;
  float *dc, *out, *outRows;
  cudaMalloc(&da, 512);
  cudaMalloc(&db, 512);
  cudaMalloc(&dbt, 512);
  cudaMalloc(&dc, 1024);
  cudaMalloc(&out, 1024);
  cudaMalloc(&outRows, 1024);
  cudaMemcpy(da, a.data(), 512, cudaMemcpyHostToDevice);
  cudaMemcpy(db, b.data(), 512, cudaMemcpyHostToDevice);
  cudaMemcpy(dbt, bt.data(), 512, cudaMemcpyHostToDevice);
  cudaMemcpy(dc, c.data(), 1024, cudaMemcpyHostToDevice);
  wmmaKernel<<<1, 32>>>(da, db, dbt, dc, out, outRows);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  std::vector<float> cols(256), rows(256);
  cudaMemcpy(cols.data(), out, 1024, cudaMemcpyDeviceToHost);
  cudaMemcpy(rows.data(), outRows, 1024, cudaMemcpyDeviceToHost);
  // Multiples of 1/256 below 2^10: every sum is exact in f32.
  for (int r = 0; r < 16; ++r)
    for (int n = 0; n < 16; ++n) {
      double want = c[r * 16 + n];
      for (int k = 0; k < 16; ++k)
        want +=
            double(__half2float(a[r * 16 + k])) * __half2float(b[k * 16 + n]);
      EXPECT_EQ(cols[n * 16 + r], want) << r << ", " << n;
      EXPECT_EQ(rows[r * 16 + n], want) << r << ", " << n;
    }
  for (void *p : {(void *)da, (void *)db, (void *)dbt, (void *)dc, (void *)out,
                  (void *)outRows})
    cudaFree(p);
}

/// Each row of the accumulator tile `c` times factor[row], stored row-major
/// at `out`: the rows of the lane's elements learnt from a tile of row
/// numbers (`rowNumbers`), as the flash attention kernels learn them; at
/// `naive` the same with x[] taken as a row-major tile. firstRow[lane]: the
/// row of the lane's x[0].
__global__ void wmmaRowScaleKernel(const float *c, const float *rowNumbers,
                                   const float *factor, float *out,
                                   float *naive, int *firstRow) {
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc, byNumbers, rows;
  wmma::load_matrix_sync(acc, c, 16, wmma::mem_row_major);
  wmma::load_matrix_sync(rows, rowNumbers, 16, wmma::mem_row_major);
  byNumbers = acc;
  for (int e = 0; e < acc.num_elements; ++e) {
    byNumbers.x[e] *= factor[static_cast<int>(rows.x[e])];
    acc.x[e] *= factor[e * 16 / acc.num_elements];
  }
  wmma::store_matrix_sync(out, byNumbers, 16, wmma::mem_row_major);
  wmma::store_matrix_sync(naive, acc, 16, wmma::mem_row_major);
  firstRow[threadIdx.x] = static_cast<int>(rows.x[0]);
}

TEST(Emulation, WmmaFragmentElementsLieInAnOrderOfTheirOwn) {
  std::vector<float> c(256), numbers(256), factor(16);
  for (int e = 0; e < 256; ++e) {
    c[e] = float(e % 7 + 1);
    numbers[e] = float(e / 16);
  }
  for (int r = 0; r < 16; ++r)
    factor[r] = float(r + 2);
  float *dc, *dn, *df, *out, *naive;
  int *first;
  cudaMalloc(&dc, 1024);
  cudaMalloc(&dn, 1024);
  cudaMalloc(&df, 64);
  cudaMalloc(&out, 1024);
  cudaMalloc(&naive, 1024);
  cudaMalloc(&first, 32 * sizeof(int));
  cudaMemcpy(dc, c.data(), 1024, cudaMemcpyHostToDevice);
  cudaMemcpy(dn, numbers.data(), 1024, cudaMemcpyHostToDevice);
  cudaMemcpy(df, factor.data(), 64, cudaMemcpyHostToDevice);
  wmmaRowScaleKernel<<<1, 32>>>(dc, dn, df, out, naive, first);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  std::vector<float> got(256), gotNaive(256);
  std::vector<int> firstRows(32);
  cudaMemcpy(got.data(), out, 1024, cudaMemcpyDeviceToHost);
  cudaMemcpy(gotNaive.data(), naive, 1024, cudaMemcpyDeviceToHost);
  cudaMemcpy(firstRows.data(), first, 32 * sizeof(int), cudaMemcpyDeviceToHost);
  int naiveRight = 0;
  for (int e = 0; e < 256; ++e) {
    EXPECT_EQ(got[e], c[e] * factor[e / 16]) << e;
    naiveRight += gotNaive[e] == c[e] * factor[e / 16];
  }
  // x[] is not a row-major tile: the lanes' first elements lie in
  // different rows, and scaling x[] as if it were one goes wrong.
  EXPECT_NE(*std::min_element(firstRows.begin(), firstRows.end()),
            *std::max_element(firstRows.begin(), firstRows.end()));
  EXPECT_LT(naiveRight, 256);
  for (void *p : {(void *)dc, (void *)dn, (void *)df, (void *)out,
                  (void *)naive, (void *)first})
    cudaFree(p);
}

__global__ void wmmaLoadKernel(const __half *p, unsigned ldm) {
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
  wmma::load_matrix_sync(fa, p, ldm);
}

TEST(EmulationDeathTest, WmmaAccessesCudaWouldRefuseStopWithTheLaunchSite) {
  __half *p;
  cudaMalloc(&p, 64 * 16 * sizeof(__half));
  EXPECT_DEATH(
      {
        wmmaLoadKernel<<<1, 32>>>(p + 8, 16);
        cudaDeviceSynchronize();
      },
      "EmulationTest.cu:[0-9]+: a wmma load or store's pointer is not "
      "aligned to 32 bytes");
  EXPECT_DEATH(
      {
        wmmaLoadKernel<<<1, 32>>>(p, 20);
        cudaDeviceSynchronize();
      },
      "EmulationTest.cu:[0-9]+: a wmma load or store's leading dimension "
      "is not a multiple of 16 bytes");
  cudaFree(p);
}

// A vector of the backend's (Vec) copied from or to an address not
// aligned to its size stops the kernel, as a GPU's misaligned address
// does; the host would read and write it regardless. Under
// UndefinedBehaviorSanitizer the sanitizer's alignment check sees the
// misaligned reference first and stops the kernel at the same line in its
// own words.
__global__ void vectorCopyKernel(const float *in, float *out) {
  using V = mpcrt::cuda::Vec<float, 4>;
  *reinterpret_cast<V *>(out) = *reinterpret_cast<const V *>(in);
}

TEST(EmulationDeathTest, MisalignedVectorAccessesStopWithTheLaunchSite) {
  float *in, *out;
  cudaMalloc(&in, 64);
  cudaMalloc(&out, 64);
  cudaMemset(in, 0, 64);
  vectorCopyKernel<<<1, 1>>>(in, out);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  for (int side : {0, 1})
    EXPECT_DEATH(
        {
          vectorCopyKernel<<<1, 1>>>(in + (side == 0), out + (side == 1));
          cudaDeviceSynchronize();
        },
#ifdef MPC_SANITIZE_ALIGNMENT
        "EmulationTest.cu:[0-9]+:[0-9]+: runtime error: [a-z ]+ misaligned "
        "address .* which requires 16 byte alignment"
#else
        "EmulationTest.cu:[0-9]+: a vector access's address is not aligned "
        "to its size \\(on a GPU: misaligned address\\)"
#endif
        )
        << (side == 0 ? "source" : "destination");
  cudaFree(in);
  cudaFree(out);
}

} // namespace
