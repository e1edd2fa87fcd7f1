//===- Libraries.cpp - cuBLASLt and cuDNN, loaded at run time -------------===//

#include "mpc/Runtime/Report.h"

#include "Libraries.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace mpcrt::cuda {
namespace {

#define MPCRT_STRINGIFY_(x) #x
#define MPCRT_STRINGIFY(x) MPCRT_STRINGIFY_(x)

/// A library the backend needs: its soname (the major version it was
/// built against), the variable that may name its file instead, and that
/// major version.
struct Library {
  const char *what, *soname, *variable;
  size_t major;
};

const Library kCublasLt = {"cuBLASLt",
                           "libcublasLt.so." MPCRT_STRINGIFY(CUBLAS_VER_MAJOR),
                           "MPC_CUBLASLT_LIBRARY", CUBLAS_VER_MAJOR};
const Library kCudnn = {"cuDNN", "libcudnn.so." MPCRT_STRINGIFY(CUDNN_MAJOR),
                        "MPC_CUDNN_LIBRARY", CUDNN_MAJOR};

[[noreturn]] void cannotLoad(const Library &library, const std::string &file,
                             const std::string &why) {
  mpcrt::errors::reportError(
      "CUDA backend: cannot load %s (%s): %s\n"
      "%sput the folder that holds %s on LD_LIBRARY_PATH, or set %s to "
      "the file; `mpc-cuda-env` finds CUDA's libraries (in the toolkit, in a "
      "cuDNN install or inside PyTorch's nvidia/* packages) and runs a "
      "program with them: mpc-cuda-env ./train ...\n",
      library.what, file.c_str(), why.c_str(),
      mpcrt::errors::prefix("note").text, library.soname, library.variable);
  std::exit(1);
}

/// dlopen's search (LD_LIBRARY_PATH, the loader cache, the default
/// folders), or the file the variable names.
void *open(const Library &library) {
  const char *named = std::getenv(library.variable);
  std::string file = named && *named ? named : library.soname;
  void *handle = dlopen(file.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!handle) {
    const char *why = dlerror();
    cannotLoad(library, file, why ? why : "not found");
  }
  return handle;
}

template <typename Table>
void resolve(void *handle, const Library &library, const char *name,
             Table &slot) {
  slot = reinterpret_cast<Table>(dlsym(handle, name));
  if (!slot)
    cannotLoad(library, library.soname,
               std::string("it has no entry point ") + name +
                   " (another version?)");
}

/// Both libraries report their version as major * 10000 + ...: another
/// major version than the backend was built for is refused.
void checkMajor(const Library &library, size_t version) {
  size_t major = version / 10000;
  if (major != library.major)
    cannotLoad(library, library.soname,
               "it is version " + std::to_string(major) +
                   ".x, the backend was built for " +
                   std::to_string(library.major) + ".x");
}

CublasLt loadCublasLt() {
  void *handle = open(kCublasLt);
  CublasLt table;
#define MPCRT_RESOLVE(name) resolve(handle, kCublasLt, #name, table.name);
  MPCRT_CUBLASLT_FUNCTIONS(MPCRT_RESOLVE)
#undef MPCRT_RESOLVE
  checkMajor(kCublasLt, table.cublasLtGetVersion());
  return table;
}

Cudnn loadCudnn() {
  void *handle = open(kCudnn);
  Cudnn table;
#define MPCRT_RESOLVE(name) resolve(handle, kCudnn, #name, table.name);
  MPCRT_CUDNN_FUNCTIONS(MPCRT_RESOLVE)
#undef MPCRT_RESOLVE
  checkMajor(kCudnn, table.cudnnGetVersion());
  return table;
}

} // namespace

const CublasLt &lt() {
  static const CublasLt table = loadCublasLt();
  return table;
}

const Cudnn &dnn() {
  static const Cudnn table = loadCudnn();
  return table;
}

void loadLibraries() {
  lt();
  dnn();
}

} // namespace mpcrt::cuda
