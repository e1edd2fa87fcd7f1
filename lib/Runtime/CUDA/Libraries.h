//===- Libraries.h - cuBLASLt and cuDNN, loaded at run time -----*- C++ -*-===//
//
// The backend opens cuBLASLt and cuDNN with dlopen instead of linking them,
// so that an executable whose libraries are not on the loader's path stops
// with a message naming the missing library and what to set, rather than
// the loader's bare "cannot open shared object file" before main. Where
// the libraries live differs between machines: inside the CUDA toolkit, in
// a separate cuDNN install, or in PyTorch's nvidia/* Python packages
// (`mpc-cuda-env` finds them). The CUDA runtime itself is linked
// statically.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_LIB_RUNTIME_CUDA_LIBRARIES_H
#define MPC_LIB_RUNTIME_CUDA_LIBRARIES_H

#include "Kernels.h"

#include <cublasLt.h>
#include <cudnn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace mpcrt::cuda {

#define MPCRT_CUBLASLT_FUNCTIONS(X)                                            \
  X(cublasLtCreate)                                                            \
  X(cublasLtGetStatusString)                                                   \
  X(cublasLtGetVersion)                                                        \
  X(cublasLtMatmul)                                                            \
  X(cublasLtMatmulAlgoGetHeuristic)                                            \
  X(cublasLtMatmulDescCreate)                                                  \
  X(cublasLtMatmulDescDestroy)                                                 \
  X(cublasLtMatmulDescSetAttribute)                                            \
  X(cublasLtMatmulPreferenceCreate)                                            \
  X(cublasLtMatmulPreferenceDestroy)                                           \
  X(cublasLtMatmulPreferenceSetAttribute)                                      \
  X(cublasLtMatrixLayoutCreate)                                                \
  X(cublasLtMatrixLayoutDestroy)                                               \
  X(cublasLtMatrixLayoutSetAttribute)

#define MPCRT_CUDNN_FUNCTIONS(X)                                               \
  X(cudnnBatchNormalizationBackwardEx)                                         \
  X(cudnnBatchNormalizationForwardTrainingEx)                                  \
  X(cudnnConvolutionBackwardData)                                              \
  X(cudnnConvolutionBackwardFilter)                                            \
  X(cudnnConvolutionForward)                                                   \
  X(cudnnCreate)                                                               \
  X(cudnnCreateActivationDescriptor)                                           \
  X(cudnnCreateConvolutionDescriptor)                                          \
  X(cudnnCreateFilterDescriptor)                                               \
  X(cudnnCreateTensorDescriptor)                                               \
  X(cudnnDeriveBNTensorDescriptor)                                             \
  X(cudnnGetBatchNormalizationBackwardExWorkspaceSize)                         \
  X(cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize)                  \
  X(cudnnGetBatchNormalizationTrainingExReserveSpaceSize)                      \
  X(cudnnGetConvolutionBackwardDataAlgorithm_v7)                               \
  X(cudnnGetConvolutionBackwardDataWorkspaceSize)                              \
  X(cudnnGetConvolutionBackwardFilterAlgorithm_v7)                             \
  X(cudnnGetConvolutionBackwardFilterWorkspaceSize)                            \
  X(cudnnGetConvolutionForwardAlgorithm_v7)                                    \
  X(cudnnGetConvolutionForwardWorkspaceSize)                                   \
  X(cudnnGetErrorString)                                                       \
  X(cudnnGetVersion)                                                           \
  X(cudnnSetActivationDescriptor)                                              \
  X(cudnnSetConvolution2dDescriptor)                                           \
  X(cudnnSetConvolutionGroupCount)                                             \
  X(cudnnSetConvolutionMathType)                                               \
  X(cudnnSetFilter4dDescriptor)                                                \
  X(cudnnSetStream)                                                            \
  X(cudnnSetTensor4dDescriptor)

#define MPCRT_DECLARE_POINTER(name) decltype(&::name) name = nullptr;
/// cuBLASLt's entry points, called as `lt().cublasLtMatmul(...)`.
struct CublasLt {
  MPCRT_CUBLASLT_FUNCTIONS(MPCRT_DECLARE_POINTER)
};
/// cuDNN's entry points, called as `dnn().cudnnCreate(...)`.
struct Cudnn {
  MPCRT_CUDNN_FUNCTIONS(MPCRT_DECLARE_POINTER)
};
#undef MPCRT_DECLARE_POINTER

/// The libraries, loaded on first use; a library that cannot be loaded,
/// lacks an entry point or has another major version stops the program
/// with a message saying what to set.
const CublasLt &lt();
const Cudnn &dnn();

/// Loads both now (before the first CUDA call), so that a missing library
/// is reported first, whatever the machine's other problems.
void loadLibraries();

/// Whether the environment variable `variable` asks for the libraries'
/// candidate algorithms to be timed: `measure`; `heuristic`, empty or unset
/// (the library's ranking): no. Another value stops the program with an
/// error that says what each means (environmentChoice).
inline bool measureRequested(const char *variable, const char *heuristicMeans,
                             const char *measureMeans) {
  return environmentChoice(variable, "heuristic", heuristicMeans, "measure",
                           measureMeans);
}

/// Support.cu's: exits with a message naming the call when a CUDA runtime
/// call fails (Device.cuh declares the same for the kernels' files).
void check(cudaError_t status, const char *what);
#define MPCRT_CUDA_CHECK(call) ::mpcrt::cuda::check((call), #call)

/// The least of `times` timings, in milliseconds under CUDA events, of
/// run() enqueueing its work on `stream` (the algorithm timings of
/// MPC_CUDNN_ALGORITHMS and MPC_CUBLASLT_ALGORITHMS).
template <typename Run>
float leastMilliseconds(cudaStream_t stream, int times, Run run) {
  cudaEvent_t start, stop;
  MPCRT_CUDA_CHECK(cudaEventCreate(&start));
  MPCRT_CUDA_CHECK(cudaEventCreate(&stop));
  float least = 3.4e38f;
  for (int t = 0; t < times; ++t) {
    MPCRT_CUDA_CHECK(cudaEventRecord(start, stream));
    run();
    MPCRT_CUDA_CHECK(cudaEventRecord(stop, stream));
    MPCRT_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    MPCRT_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    least = ms < least ? ms : least;
  }
  MPCRT_CUDA_CHECK(cudaEventDestroy(start));
  MPCRT_CUDA_CHECK(cudaEventDestroy(stop));
  return least;
}

} // namespace mpcrt::cuda

#endif // MPC_LIB_RUNTIME_CUDA_LIBRARIES_H
