//===- Job.h - what every implementation of the comm ABI shares -*- C++ -*-===//
//
// The rank and size a launcher (Open MPI's mpirun, a PMI/PMIx launcher such
// as srun or MPICH's hydra) gives each process in its environment, and the
// sum of every rank's copy of some values in rank order.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_LIB_RUNTIME_COMM_JOB_H
#define MPC_LIB_RUNTIME_COMM_JOB_H

#include <cstdint>
#include <cstdlib>

namespace mpcrt::comm {

struct Launch {
  int rank = 0, size = 1, localRank = 0;
  bool launched = false; // by a launcher (mpirun): MPI_Init joins the job
};

inline Launch launchOf() {
  auto read = [](const char *const *names, int fallback, bool &found) {
    for (const char *const *n = names; *n; ++n)
      if (const char *v = std::getenv(*n)) {
        found = true;
        return std::atoi(v);
      }
    return fallback;
  };
  static const char *const sizes[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE",
                                      "PMI_SIZE", nullptr};
  static const char *const ranks[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK",
                                      "PMI_RANK", nullptr};
  static const char *const locals[] = {"OMPI_COMM_WORLD_LOCAL_RANK",
                                       "MPI_LOCALRANKID", nullptr};
  Launch l;
  bool found = false, ignored = false;
  l.size = read(sizes, 1, found);
  l.rank = read(ranks, 0, ignored);
  l.localRank = read(locals, 0, ignored);
  l.launched = found;
  return l;
}

/// out[i] = the sum over r of all[r * count + i] (rank r's copy), added in
/// rank order in `Acc` from `load`ed values and rounded once by `store`:
/// the same bits on every rank that computes it.
template <typename Acc, typename T, typename Load, typename Store>
void sumInRankOrder(const T *all, int ranks, int64_t count, T *out, Load load,
                    Store store) {
  for (int64_t i = 0; i < count; ++i) {
    Acc acc = load(all[i]);
    for (int r = 1; r < ranks; ++r)
      acc += load(all[int64_t(r) * count + i]);
    out[i] = store(acc);
  }
}

} // namespace mpcrt::comm

#endif // MPC_LIB_RUNTIME_COMM_JOB_H
