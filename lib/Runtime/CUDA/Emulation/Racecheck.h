//===- Racecheck.h - between the race check and the memory profile -------===//
//
// The kernels built for the race check call its hooks (Racecheck.cpp),
// which also feed the memory profile (Profile.cpp); both name the code an
// access was made from.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_LIB_RUNTIME_CUDA_EMULATION_RACECHECK_H
#define MPC_LIB_RUNTIME_CUDA_EMULATION_RACECHECK_H

#include <cstddef>
#include <string>
#include <vector>

namespace mpcemu {

/// Whether MPC_EMULATION_PROFILE asks for the memory profile.
bool profiling();
/// An access of the running thread to device memory, for the profile.
void profileAccess(const char *address, size_t bytes, bool isWrite,
                   const void *pc);

/// Where a hook was called from: the innermost (inlined) function and its
/// "file:line:column" (empty where not known), and "binary+0xoffset".
struct CodeLocation {
  std::string function, line, address;
};
/// The locations of the calls that return to `returns`, from one run of
/// llvm-symbolizer (LLVM_SYMBOLIZER_PATH, or on the PATH) over them all;
/// the dynamic symbol's name where it finds nothing.
std::vector<CodeLocation> locate(const std::vector<const void *> &returns);

} // namespace mpcemu

#endif // MPC_LIB_RUNTIME_CUDA_EMULATION_RACECHECK_H
