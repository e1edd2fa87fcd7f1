//===- MPI.cpp - the ranks of a data-parallel job over MPI ----------------===//
//
// The comm ABI of the CPU backend. A sum over the ranks is a reduce-scatter
// and an all-gather done by hand over MPI's all-to-all: rank r receives
// every rank's r-th chunk, adds them in rank order (f32 accumulation, f64
// for f64, rounded once), and the chunks are gathered back to every rank.
// That is the traffic of a ring all-reduce, and every element is computed
// once, by one rank, in one order: the result does not depend on MPI's
// choice of algorithm, and all ranks hold the same bits.
//
// Without a launcher (no mpirun) the job is this process alone and MPI is
// never initialised.
//
//===----------------------------------------------------------------------===//

#include "Job.h"

#include "mpc/Runtime/Report.h"
#include "mpc/Runtime/mpcrt.h"

#include <mpi.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

bool joined = false;
int rank = 0, size = 1, localRank = 0;

/// Ends this rank with `code`, what it printed flushed. Not MPI_Abort:
/// Open MPI may kill the ranks before its launcher has forwarded the
/// aborting rank's last lines (its own manual says one may or may not see
/// them), and those lines are the error. A rank that exits without
/// MPI_Finalize makes mpirun end the others, after it has read the rank's
/// output to its end.
[[noreturn]] void leave(int code) {
  std::fflush(stdout);
  std::fflush(stderr);
  std::_Exit(code);
}

[[noreturn]] void die(const char *what) {
  mpcrt::errors::reportError("rank %d: %s\n", rank, what);
  leave(1);
}

int elementBytes(mpcrt_dtype dtype) {
  switch (dtype) {
  case MPCRT_F16:
  case MPCRT_BF16:
    return 2;
  case MPCRT_F32:
    return 4;
  case MPCRT_F64:
    return 8;
  }
  die("all-reduce of an unknown dtype");
}

/// A collective in flight: the exchange of chunks, then the sums.
struct Pending {
  bool active = false;
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Datatype element = MPI_DATATYPE_NULL;
  mpcrt_dtype dtype = MPCRT_F32;
  char *data = nullptr;
  std::vector<int> counts, displs; // elements of each rank's chunk
  std::vector<int> recvCounts, recvDispls;
  std::vector<char> received; // every rank's copy of this rank's chunk
};
std::vector<Pending> pending;

/// This rank's chunk: every rank's copy of it in `received`, summed.
template <typename T, typename Acc, typename Load, typename Store>
void sumChunks(const char *received, char *out, int count, Load load,
               Store store) {
  mpcrt::comm::sumInRankOrder<Acc>(reinterpret_cast<const T *>(received), size,
                                   count, reinterpret_cast<T *>(out), load,
                                   store);
}

} // namespace

extern "C" {

int32_t mpcrt_comm_init(void) {
  mpcrt::comm::Launch launch = mpcrt::comm::launchOf();
  if (!launch.launched)
    return 0;
  int provided = 0;
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) !=
      MPI_SUCCESS) {
    mpcrt::errors::reportError("MPI_Init failed\n");
    return 1;
  }
  joined = true;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  localRank = launch.localRank;
  return 0;
}

int32_t mpcrt_comm_rank(void) { return rank; }
int32_t mpcrt_comm_size(void) { return size; }
int32_t mpcrt_comm_local_rank(void) { return localRank; }

void mpcrt_comm_all_reduce_start(int32_t slot, mpcrt_dtype dtype, void *data,
                                 int64_t count) {
  if (size == 1 || count <= 0)
    return;
  if (slot < 0)
    die("all-reduce of a negative slot");
  if (size_t(slot) >= pending.size())
    pending.resize(slot + 1);
  Pending &p = pending[slot];
  if (p.active)
    die("all-reduce started twice without a wait");
  if (count / size >= INT_MAX - 1)
    die("an all-reduce bucket is too large for MPI's int counts; compile "
        "with a smaller --mpc-data-parallel bucket-bytes");
  int bytes = elementBytes(dtype);
  if (p.element == MPI_DATATYPE_NULL || p.dtype != dtype) {
    if (p.element != MPI_DATATYPE_NULL)
      MPI_Type_free(&p.element);
    MPI_Type_contiguous(bytes, MPI_BYTE, &p.element);
    MPI_Type_commit(&p.element);
  }
  p.dtype = dtype;
  p.data = static_cast<char *>(data);
  p.counts.assign(size, 0);
  p.displs.assign(size, 0);
  int64_t base = count / size, extra = count % size, at = 0;
  for (int r = 0; r < size; ++r) {
    p.counts[r] = int(base + (r < extra ? 1 : 0));
    p.displs[r] = int(at);
    at += p.counts[r];
  }
  int mine = p.counts[rank];
  p.recvCounts.assign(size, mine);
  p.recvDispls.resize(size);
  for (int r = 0; r < size; ++r)
    p.recvDispls[r] = r * mine;
  p.received.resize(size_t(size) * size_t(mine) * size_t(bytes));
  if (MPI_Ialltoallv(p.data, p.counts.data(), p.displs.data(), p.element,
                     p.received.data(), p.recvCounts.data(),
                     p.recvDispls.data(), p.element, MPI_COMM_WORLD,
                     &p.request) != MPI_SUCCESS)
    die("MPI_Ialltoallv failed");
  p.active = true;
  // MPI moves a nonblocking exchange on only inside MPI calls: each start
  // also lets the earlier buckets' exchanges progress.
  for (Pending &other : pending)
    if (other.active && other.request != MPI_REQUEST_NULL) {
      int done = 0;
      MPI_Test(&other.request, &done, MPI_STATUS_IGNORE);
    }
}

void mpcrt_comm_all_reduce_wait(int32_t slot) {
  if (size == 1 || slot < 0 || size_t(slot) >= pending.size() ||
      !pending[slot].active)
    return;
  Pending &p = pending[slot];
  if (MPI_Wait(&p.request, MPI_STATUS_IGNORE) != MPI_SUCCESS)
    die("MPI_Wait failed");
  int mine = p.counts[rank];
  int bytes = elementBytes(p.dtype);
  char *out = p.data + int64_t(p.displs[rank]) * bytes;
  switch (p.dtype) {
  case MPCRT_F16:
    sumChunks<uint16_t, float>(p.received.data(), out, mine, mpcrt_f16_to_f32,
                               mpcrt_f32_to_f16);
    break;
  case MPCRT_BF16:
    sumChunks<uint16_t, float>(p.received.data(), out, mine, mpcrt_bf16_to_f32,
                               mpcrt_f32_to_bf16);
    break;
  case MPCRT_F32:
    sumChunks<float, float>(
        p.received.data(), out, mine, [](float v) { return v; },
        [](float v) { return v; });
    break;
  case MPCRT_F64:
    sumChunks<double, double>(
        p.received.data(), out, mine, [](double v) { return v; },
        [](double v) { return v; });
    break;
  }
  if (MPI_Allgatherv(MPI_IN_PLACE, 0, p.element, p.data, p.counts.data(),
                     p.displs.data(), p.element, MPI_COMM_WORLD) != MPI_SUCCESS)
    die("MPI_Allgatherv failed");
  p.active = false;
}

void mpcrt_comm_host_sum(double *values, int64_t count) {
  if (size == 1 || count <= 0)
    return;
  if (count >= INT_MAX / size)
    die("host sum too large");
  std::vector<double> all(size_t(count) * size);
  if (MPI_Allgather(values, int(count), MPI_DOUBLE, all.data(), int(count),
                    MPI_DOUBLE, MPI_COMM_WORLD) != MPI_SUCCESS)
    die("MPI_Allgather failed");
  auto same = [](double v) { return v; };
  mpcrt::comm::sumInRankOrder<double>(all.data(), size, count, values, same,
                                      same);
}

void mpcrt_comm_host_gather(uint64_t value, uint64_t *all) {
  if (size == 1) {
    all[0] = value;
    return;
  }
  if (MPI_Allgather(&value, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T,
                    MPI_COMM_WORLD) != MPI_SUCCESS)
    die("MPI_Allgather failed");
}

void mpcrt_comm_all_gather(const void *mine, void *all, int64_t bytes) {
  if (bytes <= 0)
    return;
  char *slot = static_cast<char *>(all) + bytes * rank;
  if (size == 1) {
    if (mine != slot)
      std::memmove(slot, mine, size_t(bytes));
    return;
  }
  if (bytes >= INT_MAX)
    die("gather too large");
  if (MPI_Allgather(mine == slot ? MPI_IN_PLACE : mine, int(bytes), MPI_BYTE,
                    all, int(bytes), MPI_BYTE, MPI_COMM_WORLD) != MPI_SUCCESS)
    die("MPI_Allgather failed");
}

void mpcrt_comm_abort(int32_t code) { leave(code); }

void mpcrt_comm_finalize(void) {
  if (!joined)
    return;
  for (Pending &p : pending)
    if (p.element != MPI_DATATYPE_NULL)
      MPI_Type_free(&p.element);
  pending.clear();
  MPI_Finalize();
  joined = false;
}

} // extern "C"
