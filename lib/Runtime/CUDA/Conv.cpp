//===- Conv.cpp - convolutions through cuDNN ------------------------------===//
//
// NHWC activations and OHWI filters are cuDNN's NHWC tensor and filter
// formats as they are. f16/bf16 use Tensor Core math with f32 accumulation;
// f32 uses FMA math (no TF32), f64 f64. Each direction (forward, backward
// data, backward filter) has its own convolution descriptor, because the
// math type belongs to the descriptor and cuDNN ranks algorithms together
// with the math type they want: the chosen candidate's is set on it. The
// candidates are cuDNN's heuristic ranking, asked once per shape and
// direction on first use and cached; a candidate that reports
// NOT_SUPPORTED, or whose workspace cannot be allocated, gives way to the
// next. One workspace, grown as needed, serves them all (growth happens in
// the eager first step, never while a step graph is captured).
//
// MPC_CUDNN_ALGORITHMS=measure (PyTorch's cudnn.benchmark) times the
// candidates instead, on the first call's own operands outside a capture,
// and orders them fastest first; `heuristic` (the default) keeps cuDNN's
// ranking.
//
// Last, cuDNN's own batch norm, the peer of the backend's (Kernels.h):
// mpc-bench-kernels times it and a test compares it with ours; compiled
// programs do not call it.
//
//===----------------------------------------------------------------------===//

#include "mpc/Runtime/Report.h"

#include "Kernels.h"
#include "Libraries.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

// The convolution API of cuDNN 9 is marked deprecated in favour of the
// graph API; it remains supported.
#pragma clang diagnostic ignored "-Wdeprecated-declarations"
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace mpcrt::cuda {

namespace {

void checkDnn(cudnnStatus_t status, const char *what) {
  if (status == CUDNN_STATUS_SUCCESS ||
      captureFailure(std::string(what) + ": " +
                     dnn().cudnnGetErrorString(status)))
    return;
  mpcrt::errors::reportError("cuDNN: %s: %s\n", what,
                             dnn().cudnnGetErrorString(status));
  std::exit(1);
}
#define MPCRT_DNN_CHECK(call) checkDnn((call), #call)

/// Statuses after which the next candidate algorithm is tried.
bool tryAnother(cudnnStatus_t status) {
  return CUDNN_STATUS_CATEGORY(status) == CUDNN_STATUS_NOT_SUPPORTED;
}

enum Kind { kForward, kBackwardData, kBackwardFilter };
const char *const kKindNames[] = {"forward", "backward-data",
                                  "backward-filter"};

/// One direction: its descriptor, the acceptable candidates (algorithm as
/// an int, math type) best first, and the one in use.
struct Direction {
  cudnnConvolutionDescriptor_t conv = nullptr;
  std::vector<std::pair<int, cudnnMathType_t>> candidates;
  size_t chosen = 0;
  bool planned = false;
};

struct ConvPlan {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  bool lowPrecision = false;
  Direction directions[3];
};

// The output size follows from the rest, so it is not part of the key.
// The last member: whether the forward adds to its output (beta = 1), a
// plan of its own, so that a candidate that refuses beta = 1 is not
// dropped for the plain convolution of the shape too, nor timed for it.
using Key = std::tuple<int, int64_t, int64_t, int64_t, int64_t, int64_t,
                       int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                       int64_t, int64_t, int64_t, bool>;

struct Context {
  cudnnHandle_t handle = nullptr;
  void *workspace = nullptr;
  size_t workspaceBytes = 0;
  std::map<Key, ConvPlan> plans;
  std::mutex mutex;

  Context() {
    MPCRT_DNN_CHECK(dnn().cudnnCreate(&handle));
    MPCRT_DNN_CHECK(dnn().cudnnSetStream(handle, stream()));
  }
  /// Whether a workspace of `bytes` is available (grown if needed).
  bool reserve(size_t bytes) {
    if (bytes <= workspaceBytes)
      return true;
    // Not while a graph is captured: the capture fails instead.
    if (captureFailure("the cuDNN workspace would grow during capture"))
      return true;
    void *grown = nullptr;
    if (cudaMalloc(&grown, bytes) != cudaSuccess) {
      cudaGetLastError(); // not sticky: clear it, the caller moves on
      return false;
    }
    bool freed = releaseGrown(workspace);
    countDeviceBytes(static_cast<int64_t>(bytes) -
                     (freed ? static_cast<int64_t>(workspaceBytes) : 0));
    workspace = grown;
    workspaceBytes = bytes;
    return true;
  }
};

Context &context() {
  static Context *ctx = new Context();
  return *ctx;
}

int narrow(int64_t v) { return static_cast<int>(v); }

/// cuDNN's name of the element type.
cudnnDataType_t dataTypeOf(mpcrt_dtype dtype) {
  return dtype == MPCRT_F16    ? CUDNN_DATA_HALF
         : dtype == MPCRT_BF16 ? CUDNN_DATA_BFLOAT16
         : dtype == MPCRT_F32  ? CUDNN_DATA_FLOAT
                               : CUDNN_DATA_DOUBLE;
}

ConvPlan makePlan(mpcrt_dtype dtype, const mpcrt_conv2d_shape &s) {
  const Cudnn &api = dnn();
  cudnnDataType_t type = dataTypeOf(dtype);
  ConvPlan p;
  p.compute = dtype == MPCRT_F64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
  p.lowPrecision = dtype == MPCRT_F16 || dtype == MPCRT_BF16;
  MPCRT_DNN_CHECK(api.cudnnCreateTensorDescriptor(&p.x));
  MPCRT_DNN_CHECK(api.cudnnCreateTensorDescriptor(&p.y));
  MPCRT_DNN_CHECK(api.cudnnCreateFilterDescriptor(&p.w));
  MPCRT_DNN_CHECK(api.cudnnSetTensor4dDescriptor(p.x, CUDNN_TENSOR_NHWC, type,
                                                 narrow(s.n), narrow(s.c),
                                                 narrow(s.h), narrow(s.w)));
  MPCRT_DNN_CHECK(api.cudnnSetTensor4dDescriptor(p.y, CUDNN_TENSOR_NHWC, type,
                                                 narrow(s.n), narrow(s.o),
                                                 narrow(s.ho), narrow(s.wo)));
  MPCRT_DNN_CHECK(api.cudnnSetFilter4dDescriptor(
      p.w, type, CUDNN_TENSOR_NHWC, narrow(s.o), narrow(s.c / s.groups),
      narrow(s.kh), narrow(s.kw)));
  for (Direction &d : p.directions) {
    MPCRT_DNN_CHECK(api.cudnnCreateConvolutionDescriptor(&d.conv));
    MPCRT_DNN_CHECK(api.cudnnSetConvolution2dDescriptor(
        d.conv, narrow(s.pad_h), narrow(s.pad_w), narrow(s.stride_h),
        narrow(s.stride_w), narrow(s.dilation_h), narrow(s.dilation_w),
        CUDNN_CROSS_CORRELATION, p.compute));
    MPCRT_DNN_CHECK(
        api.cudnnSetConvolutionGroupCount(d.conv, narrow(s.groups)));
    // What the heuristic is asked for: Tensor Cores for f16/bf16, plain
    // FMA (no TF32) otherwise.
    MPCRT_DNN_CHECK(api.cudnnSetConvolutionMathType(
        d.conv, p.lowPrecision ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH));
  }
  return p;
}

/// f32 and f64 keep their precision: a candidate that would compute in
/// TF32 or f16 (a conversion) is not taken.
bool acceptable(const ConvPlan &p, cudnnMathType_t math) {
  return p.lowPrecision || math == CUDNN_FMA_MATH || math == CUDNN_DEFAULT_MATH;
}

/// Fills d.candidates from the heuristic ranking of direction `kind`.
void rank(Context &ctx, ConvPlan &p, Kind kind) {
  const Cudnn &api = dnn();
  Direction &d = p.directions[kind];
  constexpr int kCandidates = 16;
  int found = 0;
  auto keep = [&](const auto *results) {
    for (int i = 0; i < found; ++i)
      if (results[i].status == CUDNN_STATUS_SUCCESS &&
          acceptable(p, results[i].mathType))
        d.candidates.emplace_back(static_cast<int>(results[i].algo),
                                  results[i].mathType);
  };
  if (kind == kForward) {
    cudnnConvolutionFwdAlgoPerf_t r[kCandidates];
    MPCRT_DNN_CHECK(api.cudnnGetConvolutionForwardAlgorithm_v7(
        ctx.handle, p.x, p.w, d.conv, p.y, kCandidates, &found, r));
    keep(r);
  } else if (kind == kBackwardData) {
    cudnnConvolutionBwdDataAlgoPerf_t r[kCandidates];
    MPCRT_DNN_CHECK(api.cudnnGetConvolutionBackwardDataAlgorithm_v7(
        ctx.handle, p.w, p.y, d.conv, p.x, kCandidates, &found, r));
    keep(r);
  } else {
    cudnnConvolutionBwdFilterAlgoPerf_t r[kCandidates];
    MPCRT_DNN_CHECK(api.cudnnGetConvolutionBackwardFilterAlgorithm_v7(
        ctx.handle, p.x, p.y, d.conv, p.w, kCandidates, &found, r));
    keep(r);
  }
  d.planned = true;
}

/// MPC_CUDNN_ALGORITHMS: whether the candidates are timed (`measure`) or
/// taken in the heuristic's order (`heuristic`, unset or empty); read once.
bool measuring() {
  static const bool measure =
      measureRequested("MPC_CUDNN_ALGORITHMS", "cuDNN's ranking",
                       "each candidate timed on the first call");
  return measure;
}

/// A candidate whose workspace is larger than this is not timed (the
/// heuristic's first is, whatever it needs): the workspace, once grown,
/// stays.
constexpr size_t kMeasuredWorkspaceLimit = size_t(512) << 20;

/// The timings of each candidate, the least kept.
constexpr int kTimings = 3;

[[noreturn]] void noAlgorithm(Kind kind, const mpcrt_conv2d_shape &s,
                              const char *why) {
  mpcrt::errors::reportError(
      "cuDNN: no %s algorithm ran for a %lldx%lldx%lldx%lld "
      "(NHWC) convolution to %lld channels of this type: %s\n",
      kKindNames[kind], static_cast<long long>(s.n),
      static_cast<long long>(s.h), static_cast<long long>(s.w),
      static_cast<long long>(s.c), static_cast<long long>(s.o), why);
  std::exit(1);
}

/// alpha = 1, beta = 0 (or 1: adding to the output) in the type cuDNN
/// expects for the data type.
struct Scalars {
  float one = 1, zero = 0;
  double oneD = 1, zeroD = 0;
  const void *alpha(mpcrt_dtype d) const {
    return d == MPCRT_F64 ? static_cast<const void *>(&oneD) : &one;
  }
  const void *beta(mpcrt_dtype d, bool add = false) const {
    if (add)
      return alpha(d);
    return d == MPCRT_F64 ? static_cast<const void *>(&zeroD) : &zero;
  }
};

/// Where a direction's timed runs write: normally its output; for one that
/// adds to its output (beta = 1), which holds the addend, a buffer of its
/// own, so that the runs do not add to it again and again.
struct Target {
  void *output;
  size_t bytes = 0; // non-zero: the output holds an addend
  void *current;
  Target(void *output, size_t addendBytes)
      : output(output), bytes(addendBytes), current(output) {}
};

/// Orders d.candidates by their time on this call's operands, fastest
/// first, dropping those that do not run; leaves them as they are if none
/// does (execute then says why). One line on stderr names the choice.
template <typename WorkspaceOf, typename Run>
void measure(Context &ctx, ConvPlan &p, Direction &d, Kind kind,
             const mpcrt_conv2d_shape &s, WorkspaceOf workspaceOf, Run run) {
  std::vector<std::pair<float, std::pair<int, cudnnMathType_t>>> timed;
  for (size_t i = 0; i < d.candidates.size(); ++i) {
    auto [algo, math] = d.candidates[i];
    MPCRT_DNN_CHECK(dnn().cudnnSetConvolutionMathType(d.conv, math));
    size_t bytes = 0;
    if (workspaceOf(p, d, algo, &bytes) != CUDNN_STATUS_SUCCESS ||
        (i > 0 && bytes > kMeasuredWorkspaceLimit) || !ctx.reserve(bytes))
      continue;
    // Once untimed: a candidate that fails is not kept.
    if (run(p, d, algo, ctx.workspace, ctx.workspaceBytes) !=
        CUDNN_STATUS_SUCCESS)
      continue;
    float best = leastMilliseconds(stream(), kTimings, [&, a = algo] {
      (void)run(p, d, a, ctx.workspace, ctx.workspaceBytes);
    });
    timed.push_back({best, d.candidates[i]});
  }
  if (timed.empty())
    return;
  std::stable_sort(
      timed.begin(), timed.end(),
      [](const auto &a, const auto &b) { return a.first < b.first; });
  int heuristicFirst = d.candidates.front().first;
  size_t offered = d.candidates.size();
  d.candidates.clear();
  for (auto &[ms, candidate] : timed)
    d.candidates.push_back(candidate);
  std::fprintf(stderr,
               "mpc: cuDNN %s, %lldx%lldx%lldx%lld (NHWC) to %lld channels: "
               "timed %zu of %zu candidates, algorithm %d in %.4f ms (the "
               "heuristic's first: algorithm %d)\n",
               kKindNames[kind], static_cast<long long>(s.n),
               static_cast<long long>(s.h), static_cast<long long>(s.w),
               static_cast<long long>(s.c), static_cast<long long>(s.o),
               timed.size(), offered, timed.front().second.first,
               timed.front().first, heuristicFirst);
}

/// Runs direction `kind` with its current candidate, moving to the next
/// one while cuDNN says NOT_SUPPORTED or the workspace cannot be had.
/// `workspaceOf(algo, &bytes)` and `run(algo, workspace, bytes)` call the
/// direction's cuDNN functions.
template <typename WorkspaceOf, typename Run>
void execute(mpcrt_dtype dtype, const mpcrt_conv2d_shape &s, Kind kind,
             WorkspaceOf workspaceOf, Run run, Target *target = nullptr) {
  Context &ctx = context();
  Key key{dtype,        s.n,          s.h,      s.w,
          s.c,          s.o,          s.kh,     s.kw,
          s.stride_h,   s.stride_w,   s.pad_h,  s.pad_w,
          s.dilation_h, s.dilation_w, s.groups, target && target->bytes};
  std::lock_guard<std::mutex> lock(ctx.mutex);
  auto it = ctx.plans.find(key);
  if (it == ctx.plans.end())
    it = ctx.plans.emplace(key, makePlan(dtype, s)).first;
  ConvPlan &p = it->second;
  Direction &d = p.directions[kind];
  if (!d.planned) {
    rank(ctx, p, kind);
    if (measuring() && !capturingGraph() && !d.candidates.empty()) {
      void *aside = nullptr;
      if (target && target->bytes) {
        if (cudaMalloc(&aside, target->bytes) != cudaSuccess) {
          (void)cudaGetLastError(); // the heuristic's order stays, untimed
          aside = nullptr;
        }
      }
      if (!target || !target->bytes || aside) {
        if (aside)
          target->current = aside;
        measure(ctx, p, d, kind, s, workspaceOf, run);
        if (aside) {
          target->current = target->output;
          MPCRT_CUDA_CHECK(cudaFree(aside));
        }
      }
    }
  }
  const char *why = "the heuristic offered none for this case";
  for (; d.chosen < d.candidates.size(); ++d.chosen) {
    auto [algo, math] = d.candidates[d.chosen];
    MPCRT_DNN_CHECK(dnn().cudnnSetConvolutionMathType(d.conv, math));
    size_t bytes = 0;
    cudnnStatus_t status = workspaceOf(p, d, algo, &bytes);
    if (status != CUDNN_STATUS_SUCCESS) {
      if (!tryAnother(status))
        checkDnn(status, "workspace size");
      why = "every candidate was NOT_SUPPORTED";
      continue;
    }
    if (!ctx.reserve(bytes)) {
      why = "the workspaces of the candidates could not be allocated";
      continue;
    }
    status = run(p, d, algo, ctx.workspace, ctx.workspaceBytes);
    if (status == CUDNN_STATUS_SUCCESS || captureFailure(kKindNames[kind]))
      return;
    if (!tryAnother(status))
      checkDnn(status, kKindNames[kind]);
    why = "every candidate was NOT_SUPPORTED";
  }
  noAlgorithm(kind, s, why);
}

} // namespace

void conv2d(mpcrt_dtype dtype, const void *input, const void *filter,
            const void *addend, void *output, const mpcrt_conv2d_shape &s) {
  Context &ctx = context();
  const Cudnn &api = dnn();
  Scalars k;
  size_t addendBytes = 0;
  if (addend) {
    addendBytes = size_t(s.n * s.ho * s.wo * s.o * bytesOf(dtype));
    if (addend != output)
      copy(output, addend, int64_t(addendBytes));
  }
  Target target(output, addendBytes);
  execute(
      dtype, s, kForward,
      [&](ConvPlan &p, Direction &d, int algo, size_t *bytes) {
        return api.cudnnGetConvolutionForwardWorkspaceSize(
            ctx.handle, p.x, p.w, d.conv, p.y,
            static_cast<cudnnConvolutionFwdAlgo_t>(algo), bytes);
      },
      [&](ConvPlan &p, Direction &d, int algo, void *ws, size_t bytes) {
        return api.cudnnConvolutionForward(
            ctx.handle, k.alpha(dtype), p.x, input, p.w, filter, d.conv,
            static_cast<cudnnConvolutionFwdAlgo_t>(algo), ws, bytes,
            k.beta(dtype, addend != nullptr), p.y, target.current);
      },
      &target);
  markOp(addend ? "conv2d_add" : "conv2d");
}

void conv2dBackwardData(mpcrt_dtype dtype, const void *gradOutput,
                        const void *filter, void *gradInput,
                        const mpcrt_conv2d_shape &s) {
  Context &ctx = context();
  const Cudnn &api = dnn();
  Scalars k;
  execute(
      dtype, s, kBackwardData,
      [&](ConvPlan &p, Direction &d, int algo, size_t *bytes) {
        return api.cudnnGetConvolutionBackwardDataWorkspaceSize(
            ctx.handle, p.w, p.y, d.conv, p.x,
            static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), bytes);
      },
      [&](ConvPlan &p, Direction &d, int algo, void *ws, size_t bytes) {
        return api.cudnnConvolutionBackwardData(
            ctx.handle, k.alpha(dtype), p.w, filter, p.y, gradOutput, d.conv,
            static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), ws, bytes,
            k.beta(dtype), p.x, gradInput);
      });
  markOp("conv2d_backward_data");
}

void conv2dBackwardFilter(mpcrt_dtype dtype, const void *gradOutput,
                          const void *input, void *gradFilter,
                          const mpcrt_conv2d_shape &s) {
  Context &ctx = context();
  const Cudnn &api = dnn();
  Scalars k;
  execute(
      dtype, s, kBackwardFilter,
      [&](ConvPlan &p, Direction &d, int algo, size_t *bytes) {
        return api.cudnnGetConvolutionBackwardFilterWorkspaceSize(
            ctx.handle, p.x, p.y, d.conv, p.w,
            static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo), bytes);
      },
      [&](ConvPlan &p, Direction &d, int algo, void *ws, size_t bytes) {
        return api.cudnnConvolutionBackwardFilter(
            ctx.handle, k.alpha(dtype), p.x, input, p.y, gradOutput, d.conv,
            static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo), ws, bytes,
            k.beta(dtype), p.w, gradFilter);
      });
  markOp("conv2d_backward_filter");
}

// cuDNN's batch norm, the peer of ours (Kernels.h): the calls of PyTorch's
// channels-last training, on descriptors made once per shape.
namespace {

constexpr cudnnBatchNormMode_t kPeerMode = CUDNN_BATCHNORM_SPATIAL_PERSISTENT;

struct BatchNormPeer {
  cudnnTensorDescriptor_t x = nullptr, params = nullptr;
  cudnnActivationDescriptor_t relu = nullptr;
  cudnnBatchNormOps_t ops(bool relu) const {
    return relu ? CUDNN_BATCHNORM_OPS_BN_ACTIVATION : CUDNN_BATCHNORM_OPS_BN;
  }
  cudnnActivationDescriptor_t activation(bool relu) const {
    return relu ? this->relu : nullptr;
  }
};

const BatchNormPeer &batchNormPeer(mpcrt_dtype dtype,
                                   const CudnnBatchNormShape &s) {
  static std::map<std::tuple<int, int64_t, int64_t, int64_t, int64_t>,
                  BatchNormPeer>
      peers;
  Context &ctx = context();
  std::lock_guard<std::mutex> lock(ctx.mutex);
  auto key = std::make_tuple(int(dtype), s.n, s.h, s.w, s.c);
  auto it = peers.find(key);
  if (it != peers.end())
    return it->second;
  for (int64_t extent : {s.n, s.h, s.w, s.c})
    if (extent < 1 || extent > INT32_MAX) {
      mpcrt::errors::reportError(
          "cuDNN batch norm: the extents of [%lld, %lld, %lld, %lld] must "
          "each be between 1 and 2^31 - 1\n",
          (long long)s.n, (long long)s.h, (long long)s.w, (long long)s.c);
      std::exit(1);
    }
  const Cudnn &api = dnn();
  cudnnDataType_t type = dataTypeOf(dtype);
  BatchNormPeer p;
  MPCRT_DNN_CHECK(api.cudnnCreateTensorDescriptor(&p.x));
  MPCRT_DNN_CHECK(api.cudnnSetTensor4dDescriptor(p.x, CUDNN_TENSOR_NHWC, type,
                                                 narrow(s.n), narrow(s.c),
                                                 narrow(s.h), narrow(s.w)));
  MPCRT_DNN_CHECK(api.cudnnCreateTensorDescriptor(&p.params));
  MPCRT_DNN_CHECK(api.cudnnDeriveBNTensorDescriptor(p.params, p.x, kPeerMode));
  MPCRT_DNN_CHECK(api.cudnnCreateActivationDescriptor(&p.relu));
  MPCRT_DNN_CHECK(api.cudnnSetActivationDescriptor(
      p.relu, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0));
  return peers.emplace(key, p).first->second;
}

/// Whether `status` of `what` is NOT_SUPPORTED (false: success); another
/// failure stops the program.
bool refused(cudnnStatus_t status, const char *what) {
  if (tryAnother(status))
    return true;
  checkDnn(status, what);
  return false;
}

/// The context's workspace, grown to `bytes`, or the program stops.
void *peerWorkspace(size_t bytes) {
  Context &ctx = context();
  if (!ctx.reserve(bytes)) {
    mpcrt::errors::reportError(
        "cuDNN batch norm: cannot allocate its workspace of %zu bytes\n",
        bytes);
    std::exit(1);
  }
  return ctx.workspace;
}

} // namespace

size_t cudnnBatchNormReserveBytes(mpcrt_dtype dtype,
                                  const CudnnBatchNormShape &s) {
  const BatchNormPeer &p = batchNormPeer(dtype, s);
  size_t bytes = 0;
  if (refused(dnn().cudnnGetBatchNormalizationTrainingExReserveSpaceSize(
                  context().handle, kPeerMode, p.ops(s.relu),
                  p.activation(s.relu), p.x, &bytes),
              "cudnnGetBatchNormalizationTrainingExReserveSpaceSize"))
    return 0;
  return bytes;
}

bool cudnnBatchNorm(mpcrt_dtype dtype, const CudnnBatchNormShape &s,
                    const void *input, const void *gamma, const void *beta,
                    void *runningMean, void *runningVar, void *output,
                    void *savedMean, void *savedInvstd, double momentum,
                    double epsilon, void *reserve, size_t reserveBytes) {
  const BatchNormPeer &p = batchNormPeer(dtype, s);
  Context &ctx = context();
  const Cudnn &api = dnn();
  Scalars k;
  size_t bytes = 0;
  if (refused(api.cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize(
                  ctx.handle, kPeerMode, p.ops(s.relu), p.x, nullptr, p.x,
                  p.params, p.activation(s.relu), &bytes),
              "cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize"))
    return false;
  void *workspace = peerWorkspace(bytes);
  if (refused(api.cudnnBatchNormalizationForwardTrainingEx(
                  ctx.handle, kPeerMode, p.ops(s.relu), k.alpha(dtype),
                  k.beta(dtype), p.x, input, nullptr, nullptr, p.x, output,
                  p.params, gamma, beta, momentum, runningMean, runningVar,
                  epsilon, savedMean, savedInvstd, p.activation(s.relu),
                  workspace, bytes, reserve, reserveBytes),
              "cudnnBatchNormalizationForwardTrainingEx"))
    return false;
  markOp("batch_norm_cudnn");
  return true;
}

bool cudnnBatchNormBackward(mpcrt_dtype dtype, const CudnnBatchNormShape &s,
                            const void *gradOutput, const void *input,
                            const void *output, const void *gamma,
                            const void *beta, const void *savedMean,
                            const void *savedInvstd, void *gradInput,
                            void *gradGamma, void *gradBeta, double epsilon,
                            void *reserve, size_t reserveBytes) {
  const BatchNormPeer &p = batchNormPeer(dtype, s);
  Context &ctx = context();
  const Cudnn &api = dnn();
  Scalars k;
  // The output (y) and beta take part only with the activation.
  cudnnTensorDescriptor_t y = s.relu ? p.x : nullptr;
  size_t bytes = 0;
  if (refused(api.cudnnGetBatchNormalizationBackwardExWorkspaceSize(
                  ctx.handle, kPeerMode, p.ops(s.relu), p.x, y, p.x, nullptr,
                  p.x, p.params, p.activation(s.relu), &bytes),
              "cudnnGetBatchNormalizationBackwardExWorkspaceSize"))
    return false;
  void *workspace = peerWorkspace(bytes);
  if (refused(api.cudnnBatchNormalizationBackwardEx(
                  ctx.handle, kPeerMode, p.ops(s.relu), k.alpha(dtype),
                  k.beta(dtype), k.alpha(dtype), k.beta(dtype), p.x, input, y,
                  s.relu ? output : nullptr, p.x, gradOutput, nullptr, nullptr,
                  p.x, gradInput, p.params, gamma, s.relu ? beta : nullptr,
                  gradGamma, gradBeta, epsilon, savedMean, savedInvstd,
                  p.activation(s.relu), workspace, bytes, reserve,
                  reserveBytes),
              "cudnnBatchNormalizationBackwardEx"))
    return false;
  markOp("batch_norm_backward_cudnn");
  return true;
}

} // namespace mpcrt::cuda
