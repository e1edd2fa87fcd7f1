//===- Libraries.cpp - no cuBLASLt or cuDNN under emulation ---------------===//
//
// cuBLASLt's plain GEMMs run on the host (CublasLt.cpp); cuDNN is not
// emulated: an entry point that needs it (convolutions) stops with a
// message, and the unit tests of those skip under emulation.
//
//===----------------------------------------------------------------------===//

#include "CublasLt.h"

#include <cstdio>
#include <cstdlib>

namespace mpcrt::cuda {
namespace {
[[noreturn]] void notEmulated(const char *library) {
  std::fprintf(stderr, "error: CUDA emulation: %s is not emulated\n", library);
  std::exit(1);
}
} // namespace

const CublasLt &lt() {
  static const CublasLt table = [] {
    CublasLt t;
    mpcemu::fillCublasLt(t);
    return t;
  }();
  return table;
}
const Cudnn &dnn() { notEmulated("cuDNN"); }
void loadLibraries() {}

} // namespace mpcrt::cuda
