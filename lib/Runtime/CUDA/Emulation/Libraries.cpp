//===- Libraries.cpp - no cuBLASLt or cuDNN under emulation ---------------===//
//
// The emulated backend has our kernels only: an entry point that needs
// cuBLASLt or cuDNN (matmuls, convolutions, attention's products) stops
// with a message; the unit tests of those skip under emulation.
//
//===----------------------------------------------------------------------===//

#include "Libraries.h"

#include <cstdio>
#include <cstdlib>

namespace mpcrt::cuda {
namespace {
[[noreturn]] void notEmulated(const char *library) {
  std::fprintf(stderr, "error: CUDA emulation: %s is not emulated\n", library);
  std::exit(1);
}
} // namespace

const CublasLt &lt() { notEmulated("cuBLASLt"); }
const Cudnn &dnn() { notEmulated("cuDNN"); }
void loadLibraries() {}

} // namespace mpcrt::cuda
