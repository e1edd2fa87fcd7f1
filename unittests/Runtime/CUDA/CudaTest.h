//===- CudaTest.h - helpers of the CUDA backend's unit tests ----*- C++ -*-===//
//
// Every test compares a CUDA entry point with the CPU reference (or a
// float64 computation) on fresh random inputs, and skips, saying why, on a
// machine without a CUDA device. The same tests also run with the kernels
// emulated on the host (MPCRuntimeCUDAEmulatedTests), in CI.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_UNITTESTS_RUNTIME_CUDA_CUDATEST_H
#define MPC_UNITTESTS_RUNTIME_CUDA_CUDATEST_H

#include "../ForEachDtype.h"
#include "Kernels.h"

#include "gtest/gtest.h"

#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace mpcrt::cuda::test {

class CudaTest : public ::testing::Test {
public:
  void SetUp() override {
    std::string why;
    if (!deviceAvailable(&why))
      GTEST_SKIP() << why << "; the CUDA backend is not exercised";
    // MPC_TEST_SEED replays a failure's seed (its trace prints it).
    const char *fixed = std::getenv("MPC_TEST_SEED");
    seed = fixed ? unsigned(std::strtoul(fixed, nullptr, 10))
                 : std::random_device{}();
    rng.seed(seed);
    RecordProperty("seed", std::to_string(seed));
  }
  void TearDown() override { releaseOwned(); }
  /// Releases the device buffers made so far (a test of many large cases:
  /// the race check keeps records of each byte until its buffer goes).
  void releaseOwned() {
    if (owned.empty()) // nothing made (a skipped test: no device to ask)
      return;
    synchronize();
    for (void *p : owned)
      release(p);
    owned.clear();
  }

  /// A device copy of a host vector.
  template <typename T> T *upload(const std::vector<T> &host) {
    T *device = static_cast<T *>(allocate(host.size() * sizeof(T)));
    owned.push_back(device);
    copyToDevice(device, host.data(), host.size() * sizeof(T));
    return device;
  }
  template <typename T> std::vector<T> download(const T *device, size_t n) {
    synchronize();
    std::vector<T> host(n);
    copyToHost(host.data(), device, n * sizeof(T));
    return host;
  }
  template <typename T> T *deviceBuffer(size_t n) {
    T *device = static_cast<T *>(allocate(n * sizeof(T)));
    owned.push_back(device);
    return device;
  }
  /// Bytes on the device `offset` bytes past the start of an allocation
  /// (which is 256-byte aligned): with an offset that is not a multiple
  /// of 16, the kernels' paths for pointers off their vectors' alignment.
  uint8_t *deviceBufferAt(size_t bytes, size_t offset) {
    return deviceBuffer<uint8_t>(offset + bytes) + offset;
  }
  /// A device copy of `host` at `offset` bytes (deviceBufferAt).
  uint8_t *uploadAt(const std::vector<uint8_t> &host, size_t offset) {
    uint8_t *device = deviceBufferAt(host.size(), offset);
    copyToDevice(device, host.data(), host.size());
    return device;
  }

  unsigned seed = 0;
  std::mt19937 rng;
  std::vector<void *> owned;
};

inline bool sameBits(float a, float b) {
  uint32_t x, y;
  std::memcpy(&x, &a, 4);
  std::memcpy(&y, &b, 4);
  return x == y;
}

} // namespace mpcrt::cuda::test

#endif // MPC_UNITTESTS_RUNTIME_CUDA_CUDATEST_H
