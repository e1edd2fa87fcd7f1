//===- RacecheckTest.cu - the emulation's race check ----------------------===//
//
// Built for the race check (lib/Runtime/CUDA/Emulation/Racecheck.cpp): the
// races a GPU may or may not show (a missing __syncthreads, warp code that
// counts on lanes running in step, blocks adding to one value without
// atomics, a last block reading what no fence ordered) stop the run with a
// message naming the hazard and the threads, and the code that orders its
// accesses (barriers, __syncwarp, shuffles, atomics, fences and atomics
// between blocks, separate blocks' shared memory, separate launches) runs
// through.
//
//===----------------------------------------------------------------------===//

#include "gtest/gtest.h"

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include <unistd.h>

namespace {

/// A device buffer of `n` Ts holding 1, 2, ..., n (as Ts).
template <typename T> T *deviceIota(size_t n) {
  std::vector<T> host(n);
  for (size_t i = 0; i < n; ++i)
    host[i] = T(float(i + 1));
  T *device = nullptr;
  cudaMalloc(&device, n * sizeof(T));
  cudaMemcpy(device, host.data(), n * sizeof(T), cudaMemcpyHostToDevice);
  return device;
}

/// Block sums through shared memory: a barrier after each level unless
/// `skipBarrier`, which leaves the level's reads racing the next level's
/// writes.
__global__ void sharedSumKernel(const float *in, float *out, bool skipBarrier) {
  __shared__ float partial[128];
  int t = threadIdx.x;
  partial[t] = in[blockIdx.x * 128 + t];
  __syncthreads();
  for (int half = 64; half > 0; half /= 2) {
    if (t < half)
      partial[t] += partial[t + half];
    if (!skipBarrier)
      __syncthreads();
  }
  if (t == 0)
    out[blockIdx.x] = partial[0];
}

/// The last 32 partial sums of one warp in shared memory: with __syncwarp
/// between the levels, or counting on the lanes running in step.
__global__ void warpSumKernel(const float *in, float *out, bool syncWarp) {
  __shared__ float partial[32];
  int lane = threadIdx.x;
  partial[lane] = in[lane];
  if (syncWarp)
    __syncwarp();
  for (int half = 16; half > 0; half /= 2) {
    float other = lane < half ? partial[lane + half] : 0.0f;
    if (syncWarp)
      __syncwarp();
    if (lane < half)
      partial[lane] += other;
    if (syncWarp)
      __syncwarp();
  }
  if (lane == 0)
    *out = partial[0];
}

/// The same sum by shuffles: each exchange orders the lanes.
__global__ void shuffleSumKernel(const float *in, float *out) {
  float v = in[threadIdx.x];
  for (int offset = 16; offset > 0; offset /= 2)
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  if (threadIdx.x == 0)
    *out = v;
}

/// Every thread of every block adds its value to `total`, atomically or
/// not.
__global__ void totalKernel(const float *in, float *total, bool atomic) {
  float v = in[blockIdx.x * blockDim.x + threadIdx.x];
  if (atomic)
    atomicAdd(total, v);
  else if (threadIdx.x == 0)
    *total += v;
}

/// Block 0 updates `count` atomically while the other blocks read it.
__global__ void readWhileUpdatedKernel(unsigned *count, unsigned *seen) {
  if (blockIdx.x == 0)
    atomicAdd(count, 1u);
  else
    seen[blockIdx.x] = *count;
}

/// How lastBlockKernel's blocks order their stores before the last block
/// reads them.
enum class Fence { None, EachThread, AfterBarrier };

/// Each block's 32 threads store twice their values, then count the block
/// in with an atomic increment; the last block to count in adds every
/// block's stores, thread t its element t of each. The stores are ordered
/// before the reads by a __threadfence of each thread after its store, or
/// of thread 0 after a barrier, or (Fence::None) not at all.
__global__ void lastBlockKernel(const float *in, float *stored, unsigned *count,
                                float *total, Fence fence) {
  __shared__ bool last;
  int t = threadIdx.x, i = blockIdx.x * 32 + t;
  stored[i] = 2 * in[i];
  if (fence == Fence::EachThread)
    __threadfence();
  __syncthreads();
  if (t == 0) {
    if (fence == Fence::AfterBarrier)
      __threadfence();
    last = atomicInc(count, gridDim.x - 1) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last)
    return;
  float sum = 0;
  for (unsigned b = 0; b < gridDim.x; ++b)
    sum += stored[b * 32 + t];
  total[t] = sum;
}

/// Each thread writes its own element of a half or byte array, next to
/// its neighbours' in the same word.
__global__ void neighboursKernel(__half *halves, uint8_t *bytes) {
  int t = threadIdx.x;
  halves[t] = __float2half(float(t));
  bytes[t] = uint8_t(t);
}

/// Every block uses the same shared array for its own values.
__global__ void sharedPerBlockKernel(float *out) {
  __shared__ float scratch[1];
  if (threadIdx.x == 0)
    scratch[0] = float(blockIdx.x);
  __syncthreads();
  if (threadIdx.x == 1)
    out[blockIdx.x] = scratch[0];
}

/// One thread adds the four values another launch wrote.
__global__ void addFourKernel(const float *in, float *out) {
  *out = in[0] + in[1] + in[2] + in[3];
}

/// Thread 0 of every block stores 1 in `flag` (where `raise`), and thread
/// 0 of block 0 also reads it when `read`.
__global__ void flagKernel(uint8_t *flag, uint8_t *seen, bool read) {
  if (threadIdx.x == 0 && blockIdx.x > 0)
    *flag = 1;
  if (threadIdx.x == 0 && blockIdx.x == 0 && read)
    *seen = *flag;
}

/// Thread 0 writes `value`, thread 1 reads it with no barrier between.
__global__ void unorderedKernel(float *value, float *out) {
  if (threadIdx.x == 0)
    *value = 1.0f;
  if (threadIdx.x == 1)
    *out = *value;
}

/// 16 bytes per thread, neighbours next to each other: coalesced.
__global__ void copyVectorsKernel(const float4 *in, float4 *out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = in[i];
}

/// One float per thread read 32 bytes from its neighbour's: a sector per
/// lane.
__global__ void stridedReadKernel(const float *in, float *out) {
  out[threadIdx.x] = in[threadIdx.x * 8];
}
constexpr int kStridedReadLine = __LINE__ - 2;

/// Two neighbouring floats per thread, read one after the other: as one
/// 8-byte access of the lane.
__global__ void pairReadKernel(const float *in, float *out) {
  const volatile float *pair = in + 2 * threadIdx.x;
  out[threadIdx.x] = pair[0] + pair[1];
}

/// Every lane reads the same float (a broadcast): one sector, whose 4
/// bytes the warp asks for once.
__global__ void broadcastReadKernel(const float *in, float *out) {
  out[threadIdx.x] = in[0];
}

/// 32 bytes per lane, copied at once: on a GPU two 16-byte accesses, each
/// a request that uses half of each of its sectors.
struct alignas(32) Wide {
  float v[8];
};
__global__ void wideCopyKernel(const Wide *in, Wide *out) {
  out[threadIdx.x] = in[threadIdx.x];
}

/// Two 16-byte vectors per lane read in 8-byte halves, interleaved and
/// one upper half first, as the host compiler may split and schedule a
/// GPU's two 16-byte loads: two requests of 512 bytes.
__global__ void interleavedHalvesKernel(const uint64_t *in, float *out) {
  const volatile uint64_t *a = in + 2 * threadIdx.x,
                          *b = in + 64 + 2 * threadIdx.x;
  uint64_t sum = a[0] + b[1] + a[1] + b[0];
  out[threadIdx.x] = float(sum & 1);
}

TEST(Racecheck, OrderedAccessesRunThrough) {
  float *in = deviceIota<float>(4 * 128), *out;
  cudaMalloc(&out, 8 * sizeof(float));
  sharedSumKernel<<<4, 128>>>(in, out, false);
  warpSumKernel<<<1, 32>>>(in, out + 4, true);
  shuffleSumKernel<<<1, 32>>>(in, out + 5);
  cudaMemset(out + 6, 0, sizeof(float));
  totalKernel<<<4, 128>>>(in, out + 6, true);
  std::vector<float> host(8);
  cudaMemcpy(host.data(), out, 7 * sizeof(float), cudaMemcpyDeviceToHost);
  for (int b = 0; b < 4; ++b) // 128 b + 1 ... 128 b + 128
    EXPECT_EQ(host[b], 128.0f * 128 * b + 128.0f * 129 / 2);
  EXPECT_EQ(host[4], 32.0f * 33 / 2);
  EXPECT_EQ(host[5], 32.0f * 33 / 2);
  EXPECT_EQ(host[6], 512.0f * 513 / 2);
  // Neighbouring elements of two and one bytes, shared memory that each
  // block has its own of, and a buffer that one launch writes and the
  // next reads.
  __half *halves;
  uint8_t *bytes;
  cudaMalloc(&halves, 64 * sizeof(__half));
  cudaMalloc(&bytes, 64);
  neighboursKernel<<<1, 64>>>(halves, bytes);
  sharedPerBlockKernel<<<4, 2>>>(out);
  addFourKernel<<<1, 1>>>(out, out + 7);
  cudaMemcpy(host.data(), out, 8 * sizeof(float), cudaMemcpyDeviceToHost);
  EXPECT_EQ(host[3], 3.0f);
  EXPECT_EQ(host[7], 6.0f);
  // Blocks storing the 1 a flag holds after the first: a race in name
  // only (the byte is the same in any order), as the inf check does.
  cudaMemset(bytes, 0, 2);
  flagKernel<<<4, 32>>>(bytes, bytes + 1, false);
  std::vector<uint8_t> hostBytes(64);
  cudaMemcpy(hostBytes.data(), bytes, 64, cudaMemcpyDeviceToHost);
  EXPECT_EQ(hostBytes[63], 63);
  // The last block of four reads what the others stored and fenced
  // before counting in, fenced by each thread or after a barrier; the
  // count wraps to 0 for the next launch.
  float *in4 = deviceIota<float>(4 * 32), *stored, *total;
  unsigned *count;
  cudaMalloc(&stored, 4 * 32 * sizeof(float));
  cudaMalloc(&total, 32 * sizeof(float));
  cudaMalloc(&count, sizeof(unsigned));
  cudaMemset(count, 0, sizeof(unsigned));
  for (Fence fence : {Fence::EachThread, Fence::AfterBarrier}) {
    cudaMemset(total, 0, 32 * sizeof(float));
    lastBlockKernel<<<4, 32>>>(in4, stored, count, total, fence);
    std::vector<float> sums(32);
    cudaMemcpy(sums.data(), total, 32 * sizeof(float), cudaMemcpyDeviceToHost);
    for (int t = 0; t < 32; ++t) // 2 (t + 1 + t + 33 + t + 65 + t + 97)
      EXPECT_EQ(sums[t], 2.0f * (4 * t + 196));
  }
  unsigned left = 1;
  cudaMemcpy(&left, count, sizeof(unsigned), cudaMemcpyDeviceToHost);
  EXPECT_EQ(left, 0u);
  cudaFree(in4);
  cudaFree(stored);
  cudaFree(total);
  cudaFree(count);
  cudaFree(in);
  cudaFree(out);
  cudaFree(halves);
  cudaFree(bytes);
}

TEST(RacecheckDeathTest, RacesStopWithTheHazardAndTheThreads) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  float *in = deviceIota<float>(128), *out;
  unsigned *counts;
  cudaMalloc(&out, 4 * sizeof(float));
  cudaMalloc(&counts, 4 * sizeof(unsigned));
  cudaMemset(counts, 0, 4 * sizeof(unsigned));
  // Without the barriers a level's writes race the reads of the level
  // before.
  EXPECT_DEATH(
      {
        sharedSumKernel<<<1, 128>>>(in, out, true);
        cudaDeviceSynchronize();
      },
      "kernel launched at .*RacecheckTest.cu:[0-9]+: data race \\((read "
      "after write|write after read) hazard\\) on byte [0-9]+ of shared "
      "memory .*thread \\([0-9]+,0,0\\) of block \\(0,0,0\\) .* in "
      ".*sharedSumKernel.* at .*RacecheckTest.cu:[0-9]+:[0-9]+; no "
      "__syncthreads");
  EXPECT_DEATH(
      {
        warpSumKernel<<<1, 32>>>(in, out, false);
        cudaDeviceSynchronize();
      },
      "hazard\\) on byte [0-9]+ of shared memory .* no __syncthreads, "
      "__syncwarp or shuffle between");
  cudaMemset(out, 0, 4 * sizeof(float));
  EXPECT_DEATH(
      {
        totalKernel<<<2, 32>>>(in, out, false);
        cudaDeviceSynchronize();
      },
      "data race \\((read after write|write after read|write after write) "
      "hazard\\) on byte [0-3] of a device allocation of 16 bytes: thread "
      "\\(0,0,0\\) of block \\(., *0, *0\\) .* thread \\(0,0,0\\) of block "
      "\\(., *0, *0\\) .*threads of different blocks of one launch are not "
      "ordered");
  EXPECT_DEATH(
      {
        readWhileUpdatedKernel<<<2, 1>>>(counts, counts + 1);
        cudaDeviceSynchronize();
      },
      "hazard\\) on byte 0 of a device allocation of 16 bytes: thread "
      "\\(0,0,0\\) of block \\((0|1),0,0\\) (updated it atomically|read "
      "it), thread \\(0,0,0\\) of block \\((0|1),0,0\\) (reads it|updates "
      "it atomically)");
  // ... but a block reading the flag the others raise reads 0 or 1.
  uint8_t *flag;
  cudaMalloc(&flag, 2);
  cudaMemset(flag, 0, 2);
  EXPECT_DEATH(
      {
        flagKernel<<<3, 32>>>(flag, flag + 1, true);
        cudaDeviceSynchronize();
      },
      "data race \\((read after write|write after read) hazard\\) on byte 0 "
      "of a device allocation of 2 bytes");
  // The last block reading stores no fence ordered.
  float *stored, *total;
  cudaMalloc(&stored, 2 * 32 * sizeof(float));
  cudaMalloc(&total, 32 * sizeof(float));
  cudaMemset(counts, 0, sizeof(unsigned));
  EXPECT_DEATH(
      {
        lastBlockKernel<<<2, 32>>>(in, stored, counts, total, Fence::None);
        cudaDeviceSynchronize();
      },
      "data race \\(read after write hazard\\) on byte [0-9]+ of a device "
      "allocation of 256 bytes: thread \\([0-9]+,0,0\\) of block "
      "\\((0|1),0,0\\) wrote it, thread \\([0-9]+,0,0\\) of block "
      "\\((0|1),0,0\\) reads it .*threads of different blocks of one launch "
      "are not ordered \\(a __threadfence and an atomic");
  cudaFree(stored);
  cudaFree(total);
  EXPECT_DEATH(
      {
        unorderedKernel<<<1, 2>>>(out, out + 1);
        cudaDeviceSynchronize();
      },
      "hazard\\) on byte [0-3] of a device allocation of 16 bytes: thread "
      "\\((0|1),0,0\\) of block \\(0,0,0\\) (wrote|read) it, thread "
      "\\((0|1),0,0\\) of block \\(0,0,0\\) (reads|writes) it");
  cudaFree(in);
  cudaFree(out);
  cudaFree(counts);
  cudaFree(flag);
}

/// The profile's lines that hold `text` (its launch sites' counts).
int linesWith(const std::string &path, const std::string &text) {
  std::ifstream in(path);
  std::string line;
  int found = 0;
  while (std::getline(in, line))
    found += line.find(text) != std::string::npos;
  return found;
}

/// The six kernels above profiled into `path`, which is written when
/// the process exits.
[[noreturn]] void runProfiled(const std::string &path) {
  setenv("MPC_EMULATION_PROFILE", path.c_str(), 1);
  float *in = deviceIota<float>(256), *out;
  cudaMalloc(&out, 256 * sizeof(float));
  copyVectorsKernel<<<1, 64>>>(reinterpret_cast<const float4 *>(in),
                               reinterpret_cast<float4 *>(out));
  stridedReadKernel<<<1, 32>>>(in, out);
  pairReadKernel<<<1, 32>>>(in, out);
  broadcastReadKernel<<<1, 32>>>(in, out);
  wideCopyKernel<<<1, 32>>>(reinterpret_cast<const Wide *>(in),
                            reinterpret_cast<Wide *>(out));
  interleavedHalvesKernel<<<1, 32>>>(reinterpret_cast<const uint64_t *>(in),
                                     out);
  cudaDeviceSynchronize();
  std::exit(0);
}

TEST(Racecheck, TheProfileCountsEachWarpsRequestsAndTheirSectors) {
  // One file per run, named by the parent (the child, a fresh process,
  // reads the name from the environment it inherits).
  if (!std::getenv("MPC_RACECHECK_TEST_PROFILE"))
    setenv("MPC_RACECHECK_TEST_PROFILE",
           (::testing::TempDir() + "racecheck-profile-" +
            std::to_string(getpid()) + ".jsonl")
               .c_str(),
           1);
  std::string path = std::getenv("MPC_RACECHECK_TEST_PROFILE");
  std::remove(path.c_str());
  // The profile is written when the process exits: a child runs the
  // kernels, a fresh process (the profile is set up at the first access).
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(runProfiled(path), ::testing::ExitedWithCode(0), "");
  // Two warps, a read and a write each, of 512 bytes in 16 sectors.
  EXPECT_EQ(linesWith(path, "\"requests\": 4, \"write_requests\": 2, "
                            "\"sectors\": 64, \"bytes\": 2048, "
                            "\"distinct_bytes\": 2048, "
                            "\"distinct_sectors\": 64}"),
            1);
  // A read of 32 sectors for 128 bytes, a write of 4.
  EXPECT_EQ(linesWith(path, "\"requests\": 2, \"write_requests\": 1, "
                            "\"sectors\": 36, \"bytes\": 256, "
                            "\"distinct_bytes\": 256, "
                            "\"distinct_sectors\": 36}"),
            1);
  // The pairs: one read of 256 bytes in 8 sectors, a write of 4.
  EXPECT_EQ(linesWith(path, "\"requests\": 2, \"write_requests\": 1, "
                            "\"sectors\": 12, \"bytes\": 384, "
                            "\"distinct_bytes\": 384, "
                            "\"distinct_sectors\": 12}"),
            1);
  // The broadcast: the lanes ask for 128 bytes, 4 of them distinct, in one
  // sector; the write, 128 distinct bytes in 4.
  EXPECT_EQ(linesWith(path, "\"requests\": 2, \"write_requests\": 1, "
                            "\"sectors\": 5, \"bytes\": 256, "
                            "\"distinct_bytes\": 132, "
                            "\"distinct_sectors\": 5}"),
            1);
  // The wide copy: each direction two requests of 32 sectors, half of
  // each used; 32 distinct sectors of each array in all.
  EXPECT_EQ(linesWith(path, "\"requests\": 4, \"write_requests\": 2, "
                            "\"sectors\": 128, \"bytes\": 2048, "
                            "\"distinct_bytes\": 2048, "
                            "\"distinct_sectors\": 64}"),
            1);
  // The interleaved halves: a request per vector, and the write.
  EXPECT_EQ(linesWith(path, "\"requests\": 3, \"write_requests\": 1, "
                            "\"sectors\": 36, \"bytes\": 1152, "
                            "\"distinct_bytes\": 1152, "
                            "\"distinct_sectors\": 36}"),
            1);
  EXPECT_EQ(linesWith(path, "\"distinct_sectors\""), 6);
  // Per instruction, with its source line: the strided read's one request.
  EXPECT_EQ(
      linesWith(path, "RacecheckTest.cu:" + std::to_string(kStridedReadLine) +
                          ":22\", \"write\": false, \"requests\": 1, "
                          "\"sectors\": 32, \"bytes\": 128, "
                          "\"distinct_bytes\": 128}"),
      1);
  std::remove(path.c_str());
}

} // namespace
