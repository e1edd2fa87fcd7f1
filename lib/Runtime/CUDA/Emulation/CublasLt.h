//===- CublasLt.h - the cuBLASLt calls of the backend, on the host -*- C++ -*-//

#ifndef MPC_LIB_RUNTIME_CUDA_EMULATION_CUBLASLT_H
#define MPC_LIB_RUNTIME_CUDA_EMULATION_CUBLASLT_H

#include "Libraries.h"

namespace mpcemu {
/// Points the table at the host GEMM (CublasLt.cpp).
void fillCublasLt(mpcrt::cuda::CublasLt &table);
} // namespace mpcemu

#endif // MPC_LIB_RUNTIME_CUDA_EMULATION_CUBLASLT_H
