//===- Cudnn.h - the cuDNN calls of the backend, on the host ----*- C++ -*-===//

#ifndef MPC_LIB_RUNTIME_CUDA_EMULATION_CUDNN_H
#define MPC_LIB_RUNTIME_CUDA_EMULATION_CUDNN_H

#include "Libraries.h"

namespace mpcemu {
/// Points the table at the host convolutions (Cudnn.cpp).
void fillCudnn(mpcrt::cuda::Cudnn &table);
} // namespace mpcemu

#endif // MPC_LIB_RUNTIME_CUDA_EMULATION_CUDNN_H
