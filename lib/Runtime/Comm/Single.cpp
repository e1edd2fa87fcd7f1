//===- Single.cpp - the job of one process --------------------------------===//
//
// The comm ABI of every executable compiled without --data-parallel: one
// rank, nothing to reduce. Launched by mpirun on several ranks it refuses
// to run (each rank would train alone and all would write the same files).
//
//===----------------------------------------------------------------------===//

#include "Job.h"

#include "mpc/Runtime/Report.h"
#include "mpc/Runtime/mpcrt.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

extern "C" {

int32_t mpcrt_comm_init(void) {
  mpcrt::comm::Launch launch = mpcrt::comm::launchOf();
  if (launch.size > 1) {
    mpcrt::errors::reportError(
        "this executable was compiled without "
        "--data-parallel but runs as rank %d of %d; compile it with "
        "mpc-compile --data-parallel, or run one process\n",
        launch.rank, launch.size);
    return 1;
  }
  return 0;
}
int32_t mpcrt_comm_rank(void) { return 0; }
int32_t mpcrt_comm_size(void) { return 1; }
int32_t mpcrt_comm_local_rank(void) { return 0; }
void mpcrt_comm_all_reduce_start(int32_t, mpcrt_dtype, void *, int64_t) {}
void mpcrt_comm_all_reduce_wait(int32_t) {}
void mpcrt_comm_host_sum(double *, int64_t) {}
void mpcrt_comm_host_gather(uint64_t value, uint64_t *all) { all[0] = value; }
void mpcrt_comm_all_gather(const void *mine, void *all, int64_t bytes) {
  if (mine != all && bytes > 0)
    std::memmove(all, mine, size_t(bytes));
}
void mpcrt_comm_abort(int32_t code) { std::exit(code); }
void mpcrt_comm_finalize(void) {}

} // extern "C"
