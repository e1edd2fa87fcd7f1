//===- Nccl.h - NCCL's calls of the backend, between host processes -*- C++
//-*-//

#ifndef MPC_LIB_RUNTIME_CUDA_EMULATION_NCCL_H
#define MPC_LIB_RUNTIME_CUDA_EMULATION_NCCL_H

#include <nccl.h>

namespace mpcemu {
/// The entry points Comm.cpp calls, in the order of its table.
struct EmulatedNccl {
  decltype(&::ncclGetUniqueId) getUniqueId;
  decltype(&::ncclCommInitRank) commInitRank;
  decltype(&::ncclAllReduce) allReduce;
  decltype(&::ncclAllGather) allGather;
  decltype(&::ncclCommDestroy) commDestroy;
  decltype(&::ncclCommAbort) commAbort;
  decltype(&::ncclGetErrorString) getErrorString;
};
/// Points the table at the shared-memory collectives (Nccl.cpp).
void fillNccl(EmulatedNccl &table);
} // namespace mpcemu

#endif // MPC_LIB_RUNTIME_CUDA_EMULATION_NCCL_H
