//===- Nccl.cpp - NCCL's calls of the backend, between host processes -----===//
//
// The ranks of an emulated data-parallel job are processes on one machine
// (mpirun -np N): they meet in a POSIX shared-memory segment whose name
// travels in NCCL's unique id (through the id file, as NCCL's does).
// Collectives move through it a chunk at a time between sense-reversing
// barriers; an all-reduce sums in rank order, rounding to the data type
// after each addition (as a ring in f16 or bf16 does), so every rank ends
// with the same bits. They are enqueued on the stream like the kernels, so
// a recorded step replays them. A rank that never arrives at a barrier
// makes the others stop with an error after MPC_NCCL_TIMEOUT seconds
// (default 120), never hang.
//
//===----------------------------------------------------------------------===//

#include "mpc/Runtime/Report.h"

#include "Nccl.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <sys/mman.h>
#include <thread>
#include <unistd.h>

struct ncclComm {
  struct Header {
    std::atomic<uint32_t> count, sense;
  };
  Header *header = nullptr;
  char *slots = nullptr; // one chunk per rank
  size_t mapped = 0;
  int size = 1, rank = 0;
  uint32_t sense = 0;
  std::string name;
};

namespace mpcemu {
namespace {

constexpr size_t kChunk = 1 << 20;

[[noreturn]] void fail(const ncclComm &c, const std::string &what) {
  mpcrt::errors::reportError("rank %d: emulated NCCL: %s\n", c.rank,
                             what.c_str());
  std::exit(1);
}

void barrier(ncclComm &c) {
  c.sense ^= 1;
  if (c.header->count.fetch_add(1) + 1 == uint32_t(c.size)) {
    c.header->count.store(0);
    c.header->sense.store(c.sense);
    return;
  }
  double timeout = 120;
  if (const char *t = std::getenv("MPC_NCCL_TIMEOUT"))
    timeout = std::atof(t);
  auto start = std::chrono::steady_clock::now();
  for (unsigned spins = 0; c.header->sense.load() != c.sense; ++spins) {
    if (spins > 1000)
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    if (spins % 1024 == 0 &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
                .count() > timeout)
      fail(c, "another rank did not arrive within " +
                  std::to_string(int(timeout)) + " s (MPC_NCCL_TIMEOUT)");
  }
}

size_t bytesOf(ncclDataType_t type) {
  switch (type) {
  case ncclFloat16:
  case ncclBfloat16:
    return 2;
  case ncclFloat32:
    return 4;
  case ncclFloat64:
    return 8;
  default:
    return 1;
  }
}

/// a + b in `type`, rounded to it.
void add(ncclDataType_t type, void *a, const void *b) {
  switch (type) {
  case ncclFloat16: {
    auto *x = static_cast<__half *>(a);
    *x = __float2half_rn(__half2float(*x) +
                         __half2float(*static_cast<const __half *>(b)));
    return;
  }
  case ncclBfloat16: {
    auto *x = static_cast<__nv_bfloat16 *>(a);
    *x = __float2bfloat16_rn(
        __bfloat162float(*x) +
        __bfloat162float(*static_cast<const __nv_bfloat16 *>(b)));
    return;
  }
  case ncclFloat32:
    *static_cast<float *>(a) += *static_cast<const float *>(b);
    return;
  default:
    *static_cast<double *>(a) += *static_cast<const double *>(b);
  }
}

/// A segment name no earlier job used: the process, a serial and the
/// clock. A name made of the process id alone came back with a reused id
/// and met a segment a killed job had left, whose stale barrier count let
/// rank 0 through the first barrier alone (it then removed the id file
/// before the other ranks had read it).
ncclResult_t getUniqueId(ncclUniqueId *id) {
  static unsigned serial = 0;
  std::memset(id, 0, sizeof *id);
  auto now = std::chrono::steady_clock::now().time_since_epoch();
  std::snprintf(
      id->internal, sizeof id->internal, "/mpc-emulated-nccl-%d-%u-%llx",
      int(getpid()), serial++,
      static_cast<unsigned long long>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(now).count()));
  return ncclSuccess;
}

ncclResult_t commInitRank(ncclComm_t *out, int size, ncclUniqueId id,
                          int rank) {
  auto *c = new ncclComm;
  c->size = size;
  c->rank = rank;
  c->name.assign(id.internal, strnlen(id.internal, sizeof id.internal));
  c->mapped = sizeof(ncclComm::Header) + kChunk * size_t(size);
  int fd = shm_open(c->name.c_str(), O_CREAT | O_RDWR, 0600);
  if (fd < 0 || ftruncate(fd, off_t(c->mapped)) != 0)
    fail(*c, "cannot open the shared memory " + c->name);
  void *p = mmap(nullptr, c->mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED)
    fail(*c, "cannot map the shared memory " + c->name);
  c->header = static_cast<ncclComm::Header *>(p);
  c->slots = static_cast<char *>(p) + sizeof(ncclComm::Header);
  barrier(*c); // every rank has the segment
  // Mapped by every rank now: its name can go, so that a job that dies
  // later leaves nothing in /dev/shm.
  if (rank == 0)
    shm_unlink(c->name.c_str());
  *out = c;
  return ncclSuccess;
}

ncclResult_t allReduce(const void *send, void *recv, size_t count,
                       ncclDataType_t type, ncclRedOp_t op, ncclComm_t c,
                       cudaStream_t stream) {
  if (op != ncclSum)
    return ncclInvalidArgument;
  checkAccessible("ncclAllReduce", 0, send);
  checkAccessible("ncclAllReduce", 1, recv);
  size_t element = bytesOf(type);
  enqueue(stream, [=] {
    size_t bytes = count * element;
    for (size_t at = 0; at < bytes; at += kChunk) {
      size_t n = bytes - at < kChunk ? bytes - at : kChunk;
      std::memcpy(c->slots + kChunk * c->rank,
                  static_cast<const char *>(send) + at, n);
      barrier(*c);
      char *out = static_cast<char *>(recv) + at;
      std::memcpy(out, c->slots, n); // rank 0's
      for (int r = 1; r < c->size; ++r)
        for (size_t e = 0; e < n; e += element)
          add(type, out + e, c->slots + kChunk * r + e);
      barrier(*c); // every rank has read the slots
    }
  });
  return ncclSuccess;
}

ncclResult_t allGather(const void *send, void *recv, size_t count,
                       ncclDataType_t type, ncclComm_t c, cudaStream_t stream) {
  size_t bytes = count * bytesOf(type);
  checkAccessible("ncclAllGather", 0, send);
  checkAccessible("ncclAllGather", 1, recv);
  enqueue(stream, [=] {
    // A slot at a time; in place (send = recv + rank * bytes) too: a
    // rank's own part is read before any rank writes it back.
    for (size_t at = 0; at < bytes; at += kChunk) {
      size_t n = bytes - at < kChunk ? bytes - at : kChunk;
      std::memcpy(c->slots + kChunk * c->rank,
                  static_cast<const char *>(send) + at, n);
      barrier(*c);
      for (int r = 0; r < c->size; ++r)
        std::memcpy(static_cast<char *>(recv) + bytes * r + at,
                    c->slots + kChunk * r, n);
      barrier(*c);
    }
  });
  return ncclSuccess;
}

ncclResult_t commDestroy(ncclComm_t c) {
  barrier(*c);
  munmap(c->header, c->mapped);
  if (c->rank == 0)
    shm_unlink(c->name.c_str());
  delete c;
  return ncclSuccess;
}

ncclResult_t commAbort(ncclComm_t c) {
  shm_unlink(c->name.c_str());
  return ncclSuccess;
}

const char *errorString(ncclResult_t result) {
  return result == ncclSuccess ? "no error" : "invalid argument (emulated)";
}

} // namespace

void fillNccl(EmulatedNccl &t) {
  t.getUniqueId = getUniqueId;
  t.commInitRank = commInitRank;
  t.allReduce = allReduce;
  t.allGather = allGather;
  t.commDestroy = commDestroy;
  t.commAbort = commAbort;
  t.getErrorString = errorString;
}

} // namespace mpcemu
