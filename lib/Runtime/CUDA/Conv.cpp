//===- Conv.cpp - convolutions through cuDNN ------------------------------===//
//
// NHWC activations and OHWI filters are cuDNN's NHWC tensor and filter
// formats as they are. f16/bf16 use Tensor Core math with f32 accumulation;
// f32 uses FMA math (no TF32), f64 f64. The algorithm of each direction is
// cuDNN's heuristic choice, made once per shape and cached with its
// descriptors; one workspace, grown as needed, serves them all.
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"

#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <tuple>

// The convolution API of cuDNN 9 is marked deprecated in favour of the
// graph API; it remains supported.
#pragma clang diagnostic ignored "-Wdeprecated-declarations"
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace mpcrt::cuda {
namespace {

void checkDnn(cudnnStatus_t status, const char *what) {
  if (status == CUDNN_STATUS_SUCCESS)
    return;
  std::fprintf(stderr, "error: cuDNN: %s: %s\n", what,
               cudnnGetErrorString(status));
  std::exit(1);
}
#define MPCRT_DNN_CHECK(call) checkDnn((call), #call)

struct ConvPlan {
  cudnnTensorDescriptor_t x, y;
  cudnnFilterDescriptor_t w;
  cudnnConvolutionDescriptor_t conv;
  cudnnConvolutionFwdAlgo_t forward;
  cudnnConvolutionBwdDataAlgo_t backwardData;
  cudnnConvolutionBwdFilterAlgo_t backwardFilter;
  size_t workspace = 0;
};

// The output size follows from the rest, so it is not part of the key.
using Key = std::tuple<int, int64_t, int64_t, int64_t, int64_t, int64_t,
                       int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                       int64_t, int64_t, int64_t>;

struct Context {
  cudnnHandle_t handle = nullptr;
  void *workspace = nullptr;
  size_t workspaceBytes = 0;
  std::map<Key, ConvPlan> plans;
  std::mutex mutex;

  Context() {
    MPCRT_DNN_CHECK(cudnnCreate(&handle));
    MPCRT_DNN_CHECK(cudnnSetStream(handle, stream()));
  }
  void reserve(size_t bytes) {
    if (bytes <= workspaceBytes)
      return;
    if (workspace)
      cudaFree(workspace);
    if (cudaMalloc(&workspace, bytes) != cudaSuccess) {
      std::fprintf(stderr,
                   "error: CUDA: cannot allocate a cuDNN workspace "
                   "of %zu bytes\n",
                   bytes);
      std::exit(1);
    }
    workspaceBytes = bytes;
  }
};

Context &context() {
  static Context *ctx = new Context();
  return *ctx;
}

int narrow(int64_t v) { return static_cast<int>(v); }

ConvPlan makePlan(mpcrt_dtype dtype, const mpcrt_conv2d_shape &s) {
  Context &ctx = context();
  cudnnDataType_t type = dtype == MPCRT_F16    ? CUDNN_DATA_HALF
                         : dtype == MPCRT_BF16 ? CUDNN_DATA_BFLOAT16
                         : dtype == MPCRT_F32  ? CUDNN_DATA_FLOAT
                                               : CUDNN_DATA_DOUBLE;
  cudnnDataType_t compute =
      dtype == MPCRT_F64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
  ConvPlan p;
  MPCRT_DNN_CHECK(cudnnCreateTensorDescriptor(&p.x));
  MPCRT_DNN_CHECK(cudnnCreateTensorDescriptor(&p.y));
  MPCRT_DNN_CHECK(cudnnCreateFilterDescriptor(&p.w));
  MPCRT_DNN_CHECK(cudnnCreateConvolutionDescriptor(&p.conv));
  MPCRT_DNN_CHECK(cudnnSetTensor4dDescriptor(p.x, CUDNN_TENSOR_NHWC, type,
                                             narrow(s.n), narrow(s.c),
                                             narrow(s.h), narrow(s.w)));
  MPCRT_DNN_CHECK(cudnnSetTensor4dDescriptor(p.y, CUDNN_TENSOR_NHWC, type,
                                             narrow(s.n), narrow(s.o),
                                             narrow(s.ho), narrow(s.wo)));
  MPCRT_DNN_CHECK(cudnnSetFilter4dDescriptor(
      p.w, type, CUDNN_TENSOR_NHWC, narrow(s.o), narrow(s.c / s.groups),
      narrow(s.kh), narrow(s.kw)));
  MPCRT_DNN_CHECK(cudnnSetConvolution2dDescriptor(
      p.conv, narrow(s.pad_h), narrow(s.pad_w), narrow(s.stride_h),
      narrow(s.stride_w), narrow(s.dilation_h), narrow(s.dilation_w),
      CUDNN_CROSS_CORRELATION, compute));
  MPCRT_DNN_CHECK(cudnnSetConvolutionGroupCount(p.conv, narrow(s.groups)));
  MPCRT_DNN_CHECK(cudnnSetConvolutionMathType(
      p.conv, dtype == MPCRT_F16 || dtype == MPCRT_BF16 ? CUDNN_TENSOR_OP_MATH
                                                        : CUDNN_FMA_MATH));

  // The heuristic's best algorithm that cuDNN supports for this case.
  auto pick = [&](auto *results, int found, const char *direction) {
    for (int i = 0; i < found; ++i)
      if (results[i].status == CUDNN_STATUS_SUCCESS)
        return results[i].algo;
    std::fprintf(stderr,
                 "error: cuDNN: no %s algorithm for a %lldx%lldx%lldx%lld "
                 "convolution of this type\n",
                 direction, static_cast<long long>(s.n),
                 static_cast<long long>(s.h), static_cast<long long>(s.w),
                 static_cast<long long>(s.c));
    std::exit(1);
  };
  constexpr int kCandidates = 8;
  int found = 0;
  cudnnConvolutionFwdAlgoPerf_t fwd[kCandidates];
  MPCRT_DNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(
      ctx.handle, p.x, p.w, p.conv, p.y, kCandidates, &found, fwd));
  p.forward = pick(fwd, found, "forward");
  cudnnConvolutionBwdDataAlgoPerf_t bwdData[kCandidates];
  MPCRT_DNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(
      ctx.handle, p.w, p.y, p.conv, p.x, kCandidates, &found, bwdData));
  p.backwardData = pick(bwdData, found, "backward-data");
  cudnnConvolutionBwdFilterAlgoPerf_t bwdFilter[kCandidates];
  MPCRT_DNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
      ctx.handle, p.x, p.y, p.conv, p.w, kCandidates, &found, bwdFilter));
  p.backwardFilter = pick(bwdFilter, found, "backward-filter");

  size_t a = 0, b = 0, c = 0;
  MPCRT_DNN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(
      ctx.handle, p.x, p.w, p.conv, p.y, p.forward, &a));
  MPCRT_DNN_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(
      ctx.handle, p.w, p.y, p.conv, p.x, p.backwardData, &b));
  MPCRT_DNN_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(
      ctx.handle, p.x, p.y, p.conv, p.w, p.backwardFilter, &c));
  p.workspace = std::max(a, std::max(b, c));
  ctx.reserve(p.workspace);
  return p;
}

const ConvPlan &plan(mpcrt_dtype dtype, const mpcrt_conv2d_shape &s) {
  Context &ctx = context();
  Key key{dtype,   s.n,     s.h,          s.w,          s.c,
          s.o,     s.kh,    s.kw,         s.stride_h,   s.stride_w,
          s.pad_h, s.pad_w, s.dilation_h, s.dilation_w, s.groups};
  std::lock_guard<std::mutex> lock(ctx.mutex);
  auto it = ctx.plans.find(key);
  if (it == ctx.plans.end())
    it = ctx.plans.emplace(key, makePlan(dtype, s)).first;
  return it->second;
}

/// alpha = 1, beta = 0 in the type cuDNN expects for the data type.
struct Scalars {
  float one = 1, zero = 0;
  double oneD = 1, zeroD = 0;
  const void *alpha(mpcrt_dtype d) const {
    return d == MPCRT_F64 ? static_cast<const void *>(&oneD) : &one;
  }
  const void *beta(mpcrt_dtype d) const {
    return d == MPCRT_F64 ? static_cast<const void *>(&zeroD) : &zero;
  }
};

} // namespace

void conv2d(mpcrt_dtype dtype, const void *input, const void *filter,
            void *output, const mpcrt_conv2d_shape &s) {
  const ConvPlan &p = plan(dtype, s);
  Context &ctx = context();
  Scalars k;
  MPCRT_DNN_CHECK(cudnnConvolutionForward(
      ctx.handle, k.alpha(dtype), p.x, input, p.w, filter, p.conv, p.forward,
      ctx.workspace, ctx.workspaceBytes, k.beta(dtype), p.y, output));
}

void conv2dBackwardData(mpcrt_dtype dtype, const void *gradOutput,
                        const void *filter, void *gradInput,
                        const mpcrt_conv2d_shape &s) {
  const ConvPlan &p = plan(dtype, s);
  Context &ctx = context();
  Scalars k;
  MPCRT_DNN_CHECK(cudnnConvolutionBackwardData(
      ctx.handle, k.alpha(dtype), p.w, filter, p.y, gradOutput, p.conv,
      p.backwardData, ctx.workspace, ctx.workspaceBytes, k.beta(dtype), p.x,
      gradInput));
}

void conv2dBackwardFilter(mpcrt_dtype dtype, const void *gradOutput,
                          const void *input, void *gradFilter,
                          const mpcrt_conv2d_shape &s) {
  const ConvPlan &p = plan(dtype, s);
  Context &ctx = context();
  Scalars k;
  MPCRT_DNN_CHECK(cudnnConvolutionBackwardFilter(
      ctx.handle, k.alpha(dtype), p.x, input, p.y, gradOutput, p.conv,
      p.backwardFilter, ctx.workspace, ctx.workspaceBytes, k.beta(dtype), p.w,
      gradFilter));
}

} // namespace mpcrt::cuda
