//===- Comm.cpp - the ranks of a data-parallel job over NCCL --------------===//
//
// The comm ABI of the CUDA backend: one GPU per rank (the rank's local rank
// among the job's processes on its machine), sums by ncclAllReduce on the
// backend's stream, in place, so they are ordered with the step's kernels
// and recorded into the step's CUDA Graph with them. NCCL is opened at run
// time (libnccl.so.2, or the file MPC_NCCL_LIBRARY names), as cuBLASLt
// and cuDNN are.
//
// Ranks and sizes come from the launcher's environment (Comm/Job.h); no MPI
// is needed. NCCL's unique id goes from rank 0 to the others through a
// file: MPC_NCCL_ID_FILE, or $TMPDIR/mpc-nccl-<job>.id named after the
// launcher's job (on one machine; several machines need MPC_NCCL_ID_FILE
// on a shared filesystem). Host values are exchanged through small device
// buffers with ncclAllGather and summed on the host in rank order.
//
// NOT RUN YET: no part of this file has run on a GPU (docs/DataParallel.md);
// it runs with the CUDA backend emulated on the host (mpc-compile
// --emulate-cuda), over shared memory instead of NCCL (Emulation/Nccl.cpp).
//
//===----------------------------------------------------------------------===//

#include "Comm/Job.h"
#include "Kernels.h"

#include "mpc/Runtime/Report.h"
#include "mpc/Runtime/mpcrt.h"

#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nccl.h>
#ifdef MPC_CUDA_EMULATION
#include "Emulation/Nccl.h"
#endif

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

/// NCCL's entry points, opened at run time.
struct Nccl {
  decltype(&::ncclGetUniqueId) getUniqueId = nullptr;
  decltype(&::ncclCommInitRank) commInitRank = nullptr;
  decltype(&::ncclAllReduce) allReduce = nullptr;
  decltype(&::ncclAllGather) allGather = nullptr;
  decltype(&::ncclCommDestroy) commDestroy = nullptr;
  decltype(&::ncclCommAbort) commAbort = nullptr;
  decltype(&::ncclGetErrorString) getErrorString = nullptr;
};

Nccl nccl;
ncclComm_t comm = nullptr;
int rank = 0, size = 1, localRank = 0;
bool joined = false;

[[noreturn]] void die(const std::string &what) {
  mpcrt::errors::reportError("rank %d: %s\n", rank, what.c_str());
  std::fflush(stderr);
  if (comm && nccl.commAbort)
    nccl.commAbort(comm);
  std::exit(1);
}

void check(ncclResult_t status, const char *what) {
  if (status != ncclSuccess)
    die(std::string(what) + ": " +
        (nccl.getErrorString ? nccl.getErrorString(status) : "NCCL error"));
}

void checkCuda(cudaError_t status, const char *what) {
  if (status != cudaSuccess)
    die(std::string(what) + ": " + cudaGetErrorString(status));
}

void load() {
#ifdef MPC_CUDA_EMULATION
  // mpc-compile --emulate-cuda: collectives between host processes.
  mpcemu::EmulatedNccl t;
  mpcemu::fillNccl(t);
  nccl = {t.getUniqueId, t.commInitRank, t.allReduce,     t.allGather,
          t.commDestroy, t.commAbort,    t.getErrorString};
  return;
#endif
  const char *named = std::getenv("MPC_NCCL_LIBRARY");
  std::string file = named && *named ? named : "libnccl.so.2";
  void *handle = dlopen(file.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!handle) {
    const char *why = dlerror();
    die("CUDA backend: cannot load NCCL (" + file + "): " +
        (why ? why : "not found") + "\n" + mpcrt::errors::prefix("note").text +
        "put the folder that holds libnccl.so.2 on "
        "LD_LIBRARY_PATH, or set MPC_NCCL_LIBRARY to the file; "
        "mpc-cuda-env finds it (also inside PyTorch's nvidia/* packages)");
  }
  auto resolve = [&](const char *name, auto &slot) {
    void *symbol = dlsym(handle, name);
    if (!symbol)
      die(std::string("CUDA backend: NCCL (") + file + ") has no " + name);
    slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(symbol);
  };
  resolve("ncclGetUniqueId", nccl.getUniqueId);
  resolve("ncclCommInitRank", nccl.commInitRank);
  resolve("ncclAllReduce", nccl.allReduce);
  resolve("ncclAllGather", nccl.allGather);
  resolve("ncclCommDestroy", nccl.commDestroy);
  resolve("ncclCommAbort", nccl.commAbort);
  resolve("ncclGetErrorString", nccl.getErrorString);
}

/// Where rank 0 leaves the unique id for the others.
std::string idFile() {
  if (const char *named = std::getenv("MPC_NCCL_ID_FILE"); named && *named)
    return named;
  std::string job;
  for (const char *name : {"OMPI_MCA_orte_ess_jobid", "PMIX_NAMESPACE",
                           "SLURM_JOB_ID", "PMI_JOBID"})
    if (const char *v = std::getenv(name); v && *v) {
      job = v;
      break;
    }
  if (const char *step = std::getenv("SLURM_STEP_ID"))
    job += std::string(".") + step;
  if (job.empty())
    die("cannot tell the job's ranks apart from another job's: set "
        "MPC_NCCL_ID_FILE to a file path every rank can read (on a shared "
        "filesystem across machines)");
  for (char &c : job)
    if (c == '/' || c == ' ')
      c = '_';
  const char *tmp = std::getenv("TMPDIR");
  return std::string(tmp && *tmp ? tmp : "/tmp") + "/mpc-nccl-" + job + ".id";
}

ncclUniqueId exchangeId() {
  ncclUniqueId id;
  if (size == 1) {
    check(nccl.getUniqueId(&id), "ncclGetUniqueId");
    return id;
  }
  std::string path = idFile();
  if (rank == 0) {
    check(nccl.getUniqueId(&id), "ncclGetUniqueId");
    std::string tmp = path + ".tmp." + std::to_string(getpid());
    FILE *f = std::fopen(tmp.c_str(), "wb");
    if (!f || std::fwrite(&id, sizeof id, 1, f) != 1 || std::fclose(f) != 0 ||
        std::rename(tmp.c_str(), path.c_str()) != 0)
      die("cannot write NCCL's id to " + path);
    return id;
  }
  double timeout = 120;
  if (const char *t = std::getenv("MPC_NCCL_TIMEOUT"))
    timeout = std::atof(t);
  auto start = std::chrono::steady_clock::now();
  for (;;) {
    if (FILE *f = std::fopen(path.c_str(), "rb")) {
      size_t got = std::fread(&id, sizeof id, 1, f);
      std::fclose(f);
      if (got == 1)
        return id;
    }
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count() > timeout)
      die("no NCCL id from rank 0 in " + path + " after " +
          std::to_string(int(timeout)) + " s (MPC_NCCL_TIMEOUT)");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

ncclDataType_t ncclType(mpcrt_dtype dtype) {
  switch (dtype) {
  case MPCRT_F16:
    return ncclFloat16;
  case MPCRT_BF16:
    return ncclBfloat16;
  case MPCRT_F32:
    return ncclFloat32;
  case MPCRT_F64:
    return ncclFloat64;
  }
  die("all-reduce of an unknown dtype");
}

/// Every rank's `bytes` at `value` into `all` (rank order), through the
/// device.
void hostAllGather(const void *value, size_t bytes, void *all) {
  void *device = nullptr;
  checkCuda(cudaMalloc(&device, bytes * (size + 1)), "cudaMalloc");
  char *mine = static_cast<char *>(device) + bytes * size;
  cudaStream_t s = mpcrt::cuda::stream();
  checkCuda(cudaMemcpyAsync(mine, value, bytes, cudaMemcpyHostToDevice, s),
            "cudaMemcpyAsync");
  check(nccl.allGather(mine, device, bytes, ncclChar, comm, s),
        "ncclAllGather");
  checkCuda(
      cudaMemcpyAsync(all, device, bytes * size, cudaMemcpyDeviceToHost, s),
      "cudaMemcpyAsync");
  checkCuda(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  checkCuda(cudaFree(device), "cudaFree");
}

} // namespace

extern "C" {

int32_t mpcrt_comm_init(void) {
  mpcrt::comm::Launch launch = mpcrt::comm::launchOf();
  rank = launch.rank;
  size = launch.size;
  localRank = launch.localRank;
  if (size < 1 || rank < 0 || rank >= size) {
    mpcrt::errors::reportError("the launcher says rank %d of %d\n", rank, size);
    return 1;
  }
  load(); // a missing library is reported first
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    mpcrt::errors::reportError("rank %d: no CUDA device\n", rank);
    return 1;
  }
  // One GPU per rank, before the backend creates its context and stream.
  checkCuda(cudaSetDevice(localRank % devices), "cudaSetDevice");
  ncclUniqueId id = exchangeId();
  check(nccl.commInitRank(&comm, size, id, rank), "ncclCommInitRank");
  if (size > 1 && rank == 0)
    std::remove(idFile().c_str()); // every rank has joined
  joined = true;
  return 0;
}

int32_t mpcrt_comm_rank(void) { return rank; }
int32_t mpcrt_comm_size(void) { return size; }
int32_t mpcrt_comm_local_rank(void) { return localRank; }

void mpcrt_comm_all_reduce_start(int32_t, mpcrt_dtype dtype, void *data,
                                 int64_t count) {
  if (!joined || count <= 0)
    return;
  // In place on the backend's stream: the kernels after it wait for it,
  // and a recorded step replays it.
  check(nccl.allReduce(data, data, static_cast<size_t>(count), ncclType(dtype),
                       ncclSum, comm, mpcrt::cuda::stream()),
        "ncclAllReduce");
}

void mpcrt_comm_all_reduce_wait(int32_t) {}

void mpcrt_comm_host_sum(double *values, int64_t count) {
  if (size == 1 || count <= 0)
    return;
  std::vector<double> all(static_cast<size_t>(count) * size);
  hostAllGather(values, sizeof(double) * count, all.data());
  auto same = [](double v) { return v; };
  mpcrt::comm::sumInRankOrder<double>(all.data(), size, count, values, same,
                                      same);
}

void mpcrt_comm_host_gather(uint64_t value, uint64_t *all) {
  if (size == 1) {
    all[0] = value;
    return;
  }
  hostAllGather(&value, sizeof value, all);
}

void mpcrt_comm_all_gather(const void *mine, void *all, int64_t bytes) {
  if (bytes <= 0)
    return;
  char *slot = static_cast<char *>(all) + bytes * rank;
  cudaStream_t s = mpcrt::cuda::stream();
  if (!joined || size == 1) {
    if (mine != slot)
      checkCuda(cudaMemcpyAsync(slot, mine, size_t(bytes),
                                cudaMemcpyDeviceToDevice, s),
                "cudaMemcpyAsync");
    return;
  }
  // On the backend's stream, as the buckets' sums: ordered with the
  // kernels around it and recorded into the step's graph with them.
  check(nccl.allGather(mine, all, size_t(bytes), ncclChar, comm, s),
        "ncclAllGather");
}

void mpcrt_comm_abort(int32_t code) {
  std::fflush(stdout);
  std::fflush(stderr);
  if (comm && size > 1)
    nccl.commAbort(comm);
  std::exit(code);
}

void mpcrt_comm_finalize(void) {
  if (!joined)
    return;
  cudaStreamSynchronize(mpcrt::cuda::stream());
  nccl.commDestroy(comm);
  comm = nullptr;
  joined = false;
}

} // extern "C"
