//===- Libraries.cpp - cuBLASLt and cuDNN under emulation -----------------===//
//
// cuBLASLt's plain GEMMs (CublasLt.cpp) and cuDNN's convolutions
// (Cudnn.cpp) on the host, in the tables the backend calls through.
//
//===----------------------------------------------------------------------===//

#include "CublasLt.h"
#include "Cudnn.h"

namespace mpcrt::cuda {

const CublasLt &lt() {
  static const CublasLt table = [] {
    CublasLt t;
    mpcemu::fillCublasLt(t);
    return t;
  }();
  return table;
}
const Cudnn &dnn() {
  static const Cudnn table = [] {
    Cudnn t;
    mpcemu::fillCudnn(t);
    return t;
  }();
  return table;
}
void loadLibraries() {}

} // namespace mpcrt::cuda
