//===- Cudnn.cpp - the cuDNN calls of the backend, on the host ------------===//
//
// 2-D cross-correlations as the backend describes them: NHWC activations,
// NHWC (OHWI) filters, padding, strides, dilations and groups; forward,
// backward data and backward filter; f16/bf16/f32/f64 with f32 (f64 for
// f64) sums in a fixed order, D = alpha conv + beta D. The heuristic
// offers one algorithm (0) with no workspace, of the math type asked for;
// in the emulation's other order (MPC_EMULATION_ORDER=reverse) two: first
// algorithm 1, which the call answers NOT_SUPPORTED (as cuDNN may answer
// its heuristic's candidates), then algorithm 0 with a workspace that the
// call requires to be given whole, in device memory, and fills with 0xff
// bytes before it runs (what a convolution leaves there is not the
// caller's). A descriptor whose sizes do not fit the convolution is
// CUDNN_STATUS_BAD_PARAM, as cuDNN answers.
//
// Batch norm's training calls (the peer of the backend's own kernels,
// Kernels.h) over NHWC tensors, per channel (spatial modes), with the
// activation ReLU or none: float64 sums, the running variance unbiased,
// the saved inverse standard deviation 1/sqrt(biased variance + eps), as
// cuDNN documents them. With the activation, the forward leaves a bit per
// element in the reserve space (whether the activation passed it) and the
// backward reads that mask, so a backward given another reserve space
// computes another gradient; it also requires the output and beta, as
// cuDNN's does. In the other order the calls ask for a workspace of 4 KiB,
// which they fill with 0xff bytes.
//
//===----------------------------------------------------------------------===//

#include "Cudnn.h"

#include "Device.cuh"

#include <cmath>
#include <cstring>
#include <initializer_list>
#include <vector>

namespace mpcemu {
namespace {

struct Handle {
  cudaStream_t stream = nullptr;
};
struct Tensor {
  cudnnDataType_t type;
  int n, c, h, w;
};
struct Conv {
  int padH, padW, strideH, strideW, dilationH, dilationW;
  cudnnDataType_t compute;
  int groups = 1;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
};

template <typename To, typename From> To *as(From p) {
  return reinterpret_cast<To *>(p);
}

/// Elements of `type` through the backend's own conversions (Device.cuh).
mpcrt_dtype dtypeOf(cudnnDataType_t type) {
  return type == CUDNN_DATA_HALF       ? MPCRT_F16
         : type == CUDNN_DATA_BFLOAT16 ? MPCRT_BF16
         : type == CUDNN_DATA_FLOAT    ? MPCRT_F32
                                       : MPCRT_F64;
}
double load(cudnnDataType_t type, const void *p, int64_t i) {
  return mpcrt::cuda::loadAny(dtypeOf(type), p, i);
}
void store(cudnnDataType_t type, void *p, int64_t i, double v) {
  mpcrt::cuda::storeAny(dtypeOf(type), p, i, v);
}

/// The convolution x (*) w -> y, checked against its descriptors.
struct Problem {
  Tensor x, w, y; // w: o = n, c per group = c, kh = h, kw = w
  Conv conv;
  bool valid() const {
    int g = conv.groups;
    if (g < 1 || x.c != w.c * g || w.n % g != 0 || y.c != w.n || y.n != x.n ||
        x.type != w.type || x.type != y.type)
      return false;
    auto out = [](int in, int pad, int k, int dilation, int stride) {
      return (in + 2 * pad - dilation * (k - 1) - 1) / stride + 1;
    };
    return y.h == out(x.h, conv.padH, w.h, conv.dilationH, conv.strideH) &&
           y.w == out(x.w, conv.padW, w.w, conv.dilationW, conv.strideW);
  }
  /// Calls f(xi, wi, yi) for every term of the convolution, in the order
  /// of the output element, then the filter's (kh, kw, c), or of the
  /// filter element, then (n, ho, wo): `byFilter`.
  template <typename F> void terms(bool byFilter, F f) const {
    int g = conv.groups, perGroup = w.n / g;
    auto visit = [&](int n, int p, int q, int o, int r, int s, int ci) {
      int hi = p * conv.strideH - conv.padH + r * conv.dilationH;
      int wi = q * conv.strideW - conv.padW + s * conv.dilationW;
      if (hi < 0 || hi >= x.h || wi < 0 || wi >= x.w)
        return;
      int c = (o / perGroup) * w.c + ci;
      f(((int64_t(n) * x.h + hi) * x.w + wi) * x.c + c,
        ((int64_t(o) * w.h + r) * w.w + s) * w.c + ci,
        ((int64_t(n) * y.h + p) * y.w + q) * y.c + o);
    };
    if (!byFilter) {
      for (int n = 0; n < y.n; ++n)
        for (int p = 0; p < y.h; ++p)
          for (int q = 0; q < y.w; ++q)
            for (int o = 0; o < y.c; ++o)
              for (int r = 0; r < w.h; ++r)
                for (int s = 0; s < w.w; ++s)
                  for (int ci = 0; ci < w.c; ++ci)
                    visit(n, p, q, o, r, s, ci);
      return;
    }
    for (int o = 0; o < w.n; ++o)
      for (int r = 0; r < w.h; ++r)
        for (int s = 0; s < w.w; ++s)
          for (int ci = 0; ci < w.c; ++ci)
            for (int n = 0; n < y.n; ++n)
              for (int p = 0; p < y.h; ++p)
                for (int q = 0; q < y.w; ++q)
                  visit(n, p, q, o, r, s, ci);
  }
};

/// out = alpha sum + beta out over `count` elements, the sums in `Acc`.
template <typename Acc>
void finish(const std::vector<Acc> &sums, cudnnDataType_t type, void *out,
            double alpha, double beta) {
  for (size_t i = 0; i < sums.size(); ++i) {
    double v = alpha * double(sums[i]);
    if (beta != 0)
      v += beta * load(type, out, int64_t(i));
    store(type, out, int64_t(i), double(static_cast<Acc>(v)));
  }
}

enum Kind { kForward, kData, kFilter };

/// `count` elements of `p` converted to Acc (exactly, but for f64 data
/// summed in f32, which no descriptor asks for).
template <typename Acc>
std::vector<Acc> values(cudnnDataType_t type, const void *p, size_t count) {
  std::vector<Acc> v(count);
  for (size_t i = 0; i < count; ++i)
    v[i] = static_cast<Acc>(load(type, p, int64_t(i)));
  return v;
}

template <typename Acc>
void run(const Problem &pr, Kind kind, const void *x, const void *w,
         const void *y, void *out, double alpha, double beta) {
  cudnnDataType_t t = pr.x.type;
  size_t xs = size_t(pr.x.n) * pr.x.h * pr.x.w * pr.x.c,
         ws = size_t(pr.w.n) * pr.w.h * pr.w.w * pr.w.c,
         ys = size_t(pr.y.n) * pr.y.h * pr.y.w * pr.y.c;
  std::vector<Acc> wv =
      kind == kFilter ? std::vector<Acc>() : values<Acc>(t, w, ws);
  std::vector<Acc> xv =
      kind == kData ? std::vector<Acc>() : values<Acc>(t, x, xs);
  std::vector<Acc> yv =
      kind == kForward ? std::vector<Acc>() : values<Acc>(t, y, ys);
  if (kind == kForward) {
    std::vector<Acc> sums(ys, Acc(0));
    pr.terms(false, [&](int64_t xi, int64_t wi, int64_t yi) {
      sums[yi] += xv[xi] * wv[wi];
    });
    return finish(sums, t, out, alpha, beta);
  }
  if (kind == kData) {
    std::vector<Acc> sums(xs, Acc(0));
    pr.terms(false, [&](int64_t xi, int64_t wi, int64_t yi) {
      sums[xi] += yv[yi] * wv[wi];
    });
    return finish(sums, t, out, alpha, beta);
  }
  std::vector<Acc> sums(ws, Acc(0));
  pr.terms(true, [&](int64_t xi, int64_t wi, int64_t yi) {
    sums[wi] += yv[yi] * xv[xi];
  });
  finish(sums, t, out, alpha, beta);
}

/// The workspace algorithm `algo` needs in the other order: a few KiB and
/// a byte per output element.
size_t workspaceFor(const Problem &pr, int algo) {
  if (!otherOrderRequested() || algo != 0)
    return 0;
  return 4096 + size_t(pr.y.n) * pr.y.c * pr.y.h * pr.y.w;
}

cudnnStatus_t launch(cudnnHandle_t h, const Problem &pr, Kind kind, int algo,
                     void *workspace, size_t workspaceBytes, const void *alphaP,
                     const void *x, const void *w, const void *y,
                     const void *betaP, void *out) {
  if (!pr.valid())
    return CUDNN_STATUS_BAD_PARAM;
  if (algo != 0)
    return otherOrderRequested() && algo == 1 ? CUDNN_STATUS_NOT_SUPPORTED
                                              : CUDNN_STATUS_BAD_PARAM;
  size_t needed = workspaceFor(pr, algo);
  if (workspaceBytes < needed || (needed && !workspace))
    return CUDNN_STATUS_BAD_PARAM;
  const void *operands[] = {x, w, y, out};
  for (size_t i = 0; i < 4; ++i)
    checkAccessible("a cuDNN convolution", i, operands[i]);
  if (needed) {
    checkAccessible("a cuDNN convolution's workspace", 0, workspace);
    checkAccessible("a cuDNN convolution's workspace end", 0,
                    static_cast<char *>(workspace) + needed);
    enqueue(as<Handle>(h)->stream,
            [=] { std::memset(workspace, 0xff, needed); });
  }
  bool f64 = pr.conv.compute == CUDNN_DATA_DOUBLE;
  double alpha = f64 ? *static_cast<const double *>(alphaP)
                     : *static_cast<const float *>(alphaP);
  double beta = f64 ? *static_cast<const double *>(betaP)
                    : *static_cast<const float *>(betaP);
  enqueue(as<Handle>(h)->stream, [=] {
    if (f64)
      run<double>(pr, kind, x, w, y, out, alpha, beta);
    else
      run<float>(pr, kind, x, w, y, out, alpha, beta);
  });
  return CUDNN_STATUS_SUCCESS;
}

Problem problem(cudnnTensorDescriptor_t x, cudnnFilterDescriptor_t w,
                cudnnConvolutionDescriptor_t conv, cudnnTensorDescriptor_t y) {
  return {*as<Tensor>(x), *as<Tensor>(w), *as<Tensor>(y), *as<Conv>(conv)};
}

cudnnStatus_t create(cudnnHandle_t *h) {
  *h = as<cudnnContext>(new Handle);
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t setStream(cudnnHandle_t h, cudaStream_t stream) {
  as<Handle>(h)->stream = stream;
  return CUDNN_STATUS_SUCCESS;
}
const char *errorString(cudnnStatus_t status) {
  switch (status) {
  case CUDNN_STATUS_SUCCESS:
    return "CUDNN_STATUS_SUCCESS";
  case CUDNN_STATUS_BAD_PARAM:
    return "CUDNN_STATUS_BAD_PARAM";
  default:
    return "CUDNN_STATUS_NOT_SUPPORTED";
  }
}
size_t version() { return CUDNN_VERSION; }

cudnnStatus_t createTensor(cudnnTensorDescriptor_t *d) {
  *d = as<cudnnTensorStruct>(new Tensor{});
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t createFilter(cudnnFilterDescriptor_t *d) {
  *d = as<cudnnFilterStruct>(new Tensor{});
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t createConv(cudnnConvolutionDescriptor_t *d) {
  *d = as<cudnnConvolutionStruct>(new Conv{});
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t setTensor(cudnnTensorDescriptor_t d, cudnnTensorFormat_t format,
                        cudnnDataType_t type, int n, int c, int h, int w) {
  if (format != CUDNN_TENSOR_NHWC)
    return CUDNN_STATUS_NOT_SUPPORTED;
  *as<Tensor>(d) = {type, n, c, h, w};
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t setFilter(cudnnFilterDescriptor_t d, cudnnDataType_t type,
                        cudnnTensorFormat_t format, int k, int c, int h,
                        int w) {
  if (format != CUDNN_TENSOR_NHWC)
    return CUDNN_STATUS_NOT_SUPPORTED;
  *as<Tensor>(d) = {type, k, c, h, w};
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t setConv(cudnnConvolutionDescriptor_t d, int padH, int padW,
                      int strideH, int strideW, int dilationH, int dilationW,
                      cudnnConvolutionMode_t mode, cudnnDataType_t compute) {
  if (mode != CUDNN_CROSS_CORRELATION)
    return CUDNN_STATUS_NOT_SUPPORTED;
  Conv &c = *as<Conv>(d);
  c = {padH,      padW,    strideH,  strideW, dilationH,
       dilationW, compute, c.groups, c.math};
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t setGroups(cudnnConvolutionDescriptor_t d, int groups) {
  as<Conv>(d)->groups = groups;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t setMath(cudnnConvolutionDescriptor_t d, cudnnMathType_t math) {
  as<Conv>(d)->math = math;
  return CUDNN_STATUS_SUCCESS;
}

/// One algorithm (0), no workspace, of the math type asked for.
template <typename Perf>
cudnnStatus_t offer(const Problem &pr, int requested, int *found, Perf *r) {
  if (!pr.valid())
    return CUDNN_STATUS_BAD_PARAM;
  if (requested < 1)
    return CUDNN_STATUS_BAD_PARAM;
  *found = otherOrderRequested() && requested >= 2 ? 2 : 1;
  for (int i = 0; i < *found; ++i) {
    r[i] = Perf{};
    r[i].status = CUDNN_STATUS_SUCCESS;
    r[i].mathType = pr.conv.math;
    r[i].memory = workspaceFor(pr, *found - 1 - i);
    r[i].algo = static_cast<decltype(r[i].algo)>(*found - 1 - i);
  }
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t forwardAlgorithms(cudnnHandle_t, cudnnTensorDescriptor_t x,
                                cudnnFilterDescriptor_t w,
                                cudnnConvolutionDescriptor_t conv,
                                cudnnTensorDescriptor_t y, int requested,
                                int *found, cudnnConvolutionFwdAlgoPerf_t *r) {
  return offer(problem(x, w, conv, y), requested, found, r);
}
cudnnStatus_t dataAlgorithms(cudnnHandle_t, cudnnFilterDescriptor_t w,
                             cudnnTensorDescriptor_t y,
                             cudnnConvolutionDescriptor_t conv,
                             cudnnTensorDescriptor_t x, int requested,
                             int *found, cudnnConvolutionBwdDataAlgoPerf_t *r) {
  return offer(problem(x, w, conv, y), requested, found, r);
}
cudnnStatus_t filterAlgorithms(cudnnHandle_t, cudnnTensorDescriptor_t x,
                               cudnnTensorDescriptor_t y,
                               cudnnConvolutionDescriptor_t conv,
                               cudnnFilterDescriptor_t w, int requested,
                               int *found,
                               cudnnConvolutionBwdFilterAlgoPerf_t *r) {
  return offer(problem(x, w, conv, y), requested, found, r);
}

cudnnStatus_t forward(cudnnHandle_t h, const void *alpha,
                      cudnnTensorDescriptor_t xd, const void *x,
                      cudnnFilterDescriptor_t wd, const void *w,
                      cudnnConvolutionDescriptor_t conv,
                      cudnnConvolutionFwdAlgo_t algo, void *ws, size_t bytes,
                      const void *beta, cudnnTensorDescriptor_t yd, void *y) {
  return launch(h, problem(xd, wd, conv, yd), kForward, int(algo), ws, bytes,
                alpha, x, w, nullptr, beta, y);
}
cudnnStatus_t backwardData(cudnnHandle_t h, const void *alpha,
                           cudnnFilterDescriptor_t wd, const void *w,
                           cudnnTensorDescriptor_t yd, const void *dy,
                           cudnnConvolutionDescriptor_t conv,
                           cudnnConvolutionBwdDataAlgo_t algo, void *ws,
                           size_t bytes, const void *beta,
                           cudnnTensorDescriptor_t xd, void *dx) {
  return launch(h, problem(xd, wd, conv, yd), kData, int(algo), ws, bytes,
                alpha, nullptr, w, dy, beta, dx);
}
cudnnStatus_t backwardFilter(cudnnHandle_t h, const void *alpha,
                             cudnnTensorDescriptor_t xd, const void *x,
                             cudnnTensorDescriptor_t yd, const void *dy,
                             cudnnConvolutionDescriptor_t conv,
                             cudnnConvolutionBwdFilterAlgo_t algo, void *ws,
                             size_t bytes, const void *beta,
                             cudnnFilterDescriptor_t wd, void *dw) {
  return launch(h, problem(xd, wd, conv, yd), kFilter, int(algo), ws, bytes,
                alpha, x, nullptr, dy, beta, dw);
}

struct Activation {
  cudnnActivationMode_t mode = CUDNN_ACTIVATION_RELU;
  cudnnNanPropagation_t nan = CUDNN_NOT_PROPAGATE_NAN;
};

cudnnStatus_t createActivation(cudnnActivationDescriptor_t *d) {
  *d = as<cudnnActivationStruct>(new Activation{});
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t setActivation(cudnnActivationDescriptor_t d,
                            cudnnActivationMode_t mode,
                            cudnnNanPropagation_t nan, double) {
  if (mode != CUDNN_ACTIVATION_RELU)
    return CUDNN_STATUS_NOT_SUPPORTED;
  *as<Activation>(d) = {mode, nan};
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t deriveBatchNorm(cudnnTensorDescriptor_t derived,
                              cudnnTensorDescriptor_t xd,
                              cudnnBatchNormMode_t mode) {
  if (mode == CUDNN_BATCHNORM_PER_ACTIVATION)
    return CUDNN_STATUS_NOT_SUPPORTED;
  const Tensor &x = *as<Tensor>(xd);
  *as<Tensor>(derived) = {x.type == CUDNN_DATA_DOUBLE ? CUDNN_DATA_DOUBLE
                                                      : CUDNN_DATA_FLOAT,
                          1, x.c, 1, 1};
  return CUDNN_STATUS_SUCCESS;
}

/// A batch norm's operands as its descriptors give them.
struct BatchNormProblem {
  Tensor x;
  cudnnDataType_t params = CUDNN_DATA_FLOAT;
  bool relu = false, propagateNan = false;
  int64_t rows() const { return int64_t(x.n) * x.h * x.w; }
  int64_t count() const { return rows() * x.c; }
  /// The reserve space: a bit per element with the activation.
  size_t reserve() const { return relu ? size_t(count() + 7) / 8 : 0; }
};

/// The problem, or a status other than SUCCESS where the call is not one
/// this emulation (or cuDNN) accepts: spatial modes, the activation ReLU
/// or none, every tensor of x's descriptor, the parameters 1 x C x 1 x 1.
cudnnStatus_t
batchNormProblem(cudnnBatchNormMode_t mode, cudnnBatchNormOps_t ops,
                 cudnnActivationDescriptor_t activation,
                 cudnnTensorDescriptor_t xd,
                 std::initializer_list<cudnnTensorDescriptor_t> same,
                 cudnnTensorDescriptor_t paramsDesc, BatchNormProblem *p) {
  if (mode == CUDNN_BATCHNORM_PER_ACTIVATION ||
      ops == CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION)
    return CUDNN_STATUS_NOT_SUPPORTED;
  if (!xd || (ops == CUDNN_BATCHNORM_OPS_BN_ACTIVATION && !activation))
    return CUDNN_STATUS_BAD_PARAM;
  p->x = *as<Tensor>(xd);
  for (cudnnTensorDescriptor_t d : same) {
    if (!d)
      return CUDNN_STATUS_BAD_PARAM;
    const Tensor &t = *as<Tensor>(d);
    if (t.type != p->x.type || t.n != p->x.n || t.c != p->x.c ||
        t.h != p->x.h || t.w != p->x.w)
      return CUDNN_STATUS_BAD_PARAM;
  }
  p->params =
      p->x.type == CUDNN_DATA_DOUBLE ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
  if (paramsDesc) {
    const Tensor &t = *as<Tensor>(paramsDesc);
    if (t.type != p->params || t.n != 1 || t.c != p->x.c || t.h != 1 ||
        t.w != 1)
      return CUDNN_STATUS_BAD_PARAM;
  }
  p->relu = ops == CUDNN_BATCHNORM_OPS_BN_ACTIVATION;
  if (p->relu)
    p->propagateNan = as<Activation>(activation)->nan == CUDNN_PROPAGATE_NAN;
  return CUDNN_STATUS_SUCCESS;
}

/// The workspace of every batch-norm call: none, 4 KiB in the other order.
size_t batchNormWorkspace() { return otherOrderRequested() ? 4096 : 0; }

/// Whether `given` bytes at `p` hold `needed` (null only where none are
/// needed), checked as device memory; with `overwrite` (a workspace),
/// filled with 0xff bytes before the call runs.
bool spaceGiven(cudaStream_t stream, const char *what, void *p, size_t given,
                size_t needed, bool overwrite) {
  if (!needed)
    return true;
  if (!p || given < needed)
    return false;
  checkAccessible(what, 0, p);
  checkAccessible(what, 1, static_cast<char *>(p) + needed);
  if (overwrite)
    enqueue(stream, [=] { std::memset(p, 0xff, needed); });
  return true;
}

/// Whether a batch-norm call was given the reserve space and the
/// workspace it needs (spaceGiven; the workspace overwritten).
bool spacesGiven(cudaStream_t stream, const BatchNormProblem &p, void *reserve,
                 size_t reserveBytes, void *workspace, size_t workspaceBytes) {
  return spaceGiven(stream, "a cuDNN batch norm's reserve space", reserve,
                    reserveBytes, p.reserve(), false) &&
         spaceGiven(stream, "a cuDNN batch norm's workspace", workspace,
                    workspaceBytes, batchNormWorkspace(), true);
}

/// Channel `ch`'s mean and sum of squared deviations over `rows` rows of
/// `c` elements of `type`, in two float64 passes.
struct Moments {
  double mean, squares;
};
Moments channelMoments(cudnnDataType_t type, const void *x, int64_t rows,
                       int64_t c, int64_t ch) {
  double sum = 0, squares = 0;
  for (int64_t r = 0; r < rows; ++r)
    sum += load(type, x, r * c + ch);
  double mean = sum / double(rows);
  for (int64_t r = 0; r < rows; ++r) {
    double d = load(type, x, r * c + ch) - mean;
    squares += d * d;
  }
  return {mean, squares};
}

/// A host scaling factor: double for double data, float otherwise.
double scalar(const BatchNormProblem &p, const void *v) {
  return p.params == CUDNN_DATA_DOUBLE ? *static_cast<const double *>(v)
                                       : *static_cast<const float *>(v);
}

/// out[i] = alpha v + beta out[i] (out not read where beta is 0).
void blend(cudnnDataType_t type, void *out, int64_t i, double v, double alpha,
           double beta) {
  double r = alpha * v;
  if (beta != 0)
    r += beta * load(type, out, i);
  store(type, out, i, r);
}

cudnnStatus_t batchNormForwardWorkspace(
    cudnnHandle_t, cudnnBatchNormMode_t mode, cudnnBatchNormOps_t ops,
    cudnnTensorDescriptor_t xd, cudnnTensorDescriptor_t zd,
    cudnnTensorDescriptor_t yd, cudnnTensorDescriptor_t paramsDesc,
    cudnnActivationDescriptor_t activation, size_t *bytes) {
  BatchNormProblem p;
  if (zd)
    return CUDNN_STATUS_NOT_SUPPORTED;
  cudnnStatus_t status =
      batchNormProblem(mode, ops, activation, xd, {yd}, paramsDesc, &p);
  if (status == CUDNN_STATUS_SUCCESS)
    *bytes = batchNormWorkspace();
  return status;
}
cudnnStatus_t batchNormBackwardWorkspace(
    cudnnHandle_t, cudnnBatchNormMode_t mode, cudnnBatchNormOps_t ops,
    cudnnTensorDescriptor_t xd, cudnnTensorDescriptor_t yd,
    cudnnTensorDescriptor_t dyd, cudnnTensorDescriptor_t dzd,
    cudnnTensorDescriptor_t dxd, cudnnTensorDescriptor_t paramsDesc,
    cudnnActivationDescriptor_t activation, size_t *bytes) {
  BatchNormProblem p;
  if (dzd)
    return CUDNN_STATUS_NOT_SUPPORTED;
  cudnnStatus_t status = batchNormProblem(
      mode, ops, activation, xd,
      ops == CUDNN_BATCHNORM_OPS_BN_ACTIVATION
          ? std::initializer_list<cudnnTensorDescriptor_t>{yd, dyd, dxd}
          : std::initializer_list<cudnnTensorDescriptor_t>{dyd, dxd},
      paramsDesc, &p);
  if (status == CUDNN_STATUS_SUCCESS)
    *bytes = batchNormWorkspace();
  return status;
}
cudnnStatus_t batchNormReserve(cudnnHandle_t, cudnnBatchNormMode_t mode,
                               cudnnBatchNormOps_t ops,
                               cudnnActivationDescriptor_t activation,
                               cudnnTensorDescriptor_t xd, size_t *bytes) {
  BatchNormProblem p;
  cudnnStatus_t status =
      batchNormProblem(mode, ops, activation, xd, {}, nullptr, &p);
  if (status == CUDNN_STATUS_SUCCESS)
    *bytes = p.reserve();
  return status;
}

cudnnStatus_t batchNormForward(
    cudnnHandle_t h, cudnnBatchNormMode_t mode, cudnnBatchNormOps_t ops,
    const void *alphaP, const void *betaP, cudnnTensorDescriptor_t xd,
    const void *x, cudnnTensorDescriptor_t zd, const void *z,
    cudnnTensorDescriptor_t yd, void *y, cudnnTensorDescriptor_t paramsDesc,
    const void *gamma, const void *beta, double factor, void *runningMean,
    void *runningVar, double epsilon, void *savedMean, void *savedInvstd,
    cudnnActivationDescriptor_t activation, void *workspace,
    size_t workspaceBytes, void *reserve, size_t reserveBytes) {
  BatchNormProblem p;
  if (zd || z)
    return CUDNN_STATUS_NOT_SUPPORTED;
  cudnnStatus_t status =
      batchNormProblem(mode, ops, activation, xd, {yd}, paramsDesc, &p);
  if (status != CUDNN_STATUS_SUCCESS)
    return status;
  if (!x || !y || !gamma || !beta || epsilon < CUDNN_BN_MIN_EPSILON ||
      (!runningMean) != (!runningVar) || (!savedMean) != (!savedInvstd))
    return CUDNN_STATUS_BAD_PARAM;
  cudaStream_t stream = as<Handle>(h)->stream;
  if (!spacesGiven(stream, p, reserve, reserveBytes, workspace, workspaceBytes))
    return CUDNN_STATUS_BAD_PARAM;
  const void *operands[] = {x,           y,          gamma,     beta,
                            runningMean, runningVar, savedMean, savedInvstd};
  for (size_t i = 0; i < 8; ++i)
    checkAccessible("a cuDNN batch norm", i, operands[i]);
  double alpha = scalar(p, alphaP), blendBeta = scalar(p, betaP);
  enqueue(stream, [=] {
    const int64_t rows = p.rows(), c = p.x.c;
    cudnnDataType_t t = p.x.type, pt = p.params;
    auto *mask = static_cast<uint8_t *>(reserve);
    if (p.relu)
      std::memset(mask, 0, p.reserve());
    for (int64_t ch = 0; ch < c; ++ch) {
      auto [mean, squares] = channelMoments(t, x, rows, c, ch);
      double var = squares / double(rows);
      double invstd = 1 / std::sqrt(var + epsilon);
      if (runningMean) {
        double unbiased = rows > 1 ? squares / double(rows - 1) : var;
        store(pt, runningMean, ch,
              (1 - factor) * load(pt, runningMean, ch) + factor * mean);
        store(pt, runningVar, ch,
              (1 - factor) * load(pt, runningVar, ch) + factor * unbiased);
      }
      if (savedMean) {
        store(pt, savedMean, ch, mean);
        store(pt, savedInvstd, ch, invstd);
      }
      double g = load(pt, gamma, ch), b = load(pt, beta, ch);
      for (int64_t r = 0; r < rows; ++r) {
        int64_t i = r * c + ch;
        double v = g * (load(t, x, i) - mean) * invstd + b;
        if (p.relu) {
          if (v > 0)
            mask[i / 8] |= uint8_t(1u << (i % 8));
          else if (!(p.propagateNan && std::isnan(v)))
            v = 0;
        }
        blend(t, y, i, v, alpha, blendBeta);
      }
    }
  });
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t batchNormBackward(
    cudnnHandle_t h, cudnnBatchNormMode_t mode, cudnnBatchNormOps_t ops,
    const void *alphaDataP, const void *betaDataP, const void *alphaParamP,
    const void *betaParamP, cudnnTensorDescriptor_t xd, const void *x,
    cudnnTensorDescriptor_t yd, const void *y, cudnnTensorDescriptor_t dyd,
    const void *dy, cudnnTensorDescriptor_t dzd, void *dz,
    cudnnTensorDescriptor_t dxd, void *dx, cudnnTensorDescriptor_t paramsDesc,
    const void *gamma, const void *beta, void *dGamma, void *dBeta,
    double epsilon, const void *savedMean, const void *savedInvstd,
    cudnnActivationDescriptor_t activation, void *workspace,
    size_t workspaceBytes, void *reserve, size_t reserveBytes) {
  BatchNormProblem p;
  if (dzd || dz)
    return CUDNN_STATUS_NOT_SUPPORTED;
  bool relu = ops == CUDNN_BATCHNORM_OPS_BN_ACTIVATION;
  cudnnStatus_t status = batchNormProblem(
      mode, ops, activation, xd,
      relu ? std::initializer_list<cudnnTensorDescriptor_t>{yd, dyd, dxd}
           : std::initializer_list<cudnnTensorDescriptor_t>{dyd, dxd},
      paramsDesc, &p);
  if (status != CUDNN_STATUS_SUCCESS)
    return status;
  if (!x || !dy || !dx || !gamma || !dGamma || !dBeta ||
      epsilon < CUDNN_BN_MIN_EPSILON || (!savedMean) != (!savedInvstd) ||
      (relu && (!y || !beta)))
    return CUDNN_STATUS_BAD_PARAM;
  cudaStream_t stream = as<Handle>(h)->stream;
  if (!spacesGiven(stream, p, reserve, reserveBytes, workspace, workspaceBytes))
    return CUDNN_STATUS_BAD_PARAM;
  const void *operands[] = {x,    y,      dy,    dx,        gamma,
                            beta, dGamma, dBeta, savedMean, savedInvstd};
  for (size_t i = 0; i < 10; ++i)
    checkAccessible("a cuDNN batch norm backward", i, operands[i]);
  double alphaData = scalar(p, alphaDataP), betaData = scalar(p, betaDataP),
         alphaParam = scalar(p, alphaParamP), betaParam = scalar(p, betaParamP);
  enqueue(stream, [=] {
    const int64_t rows = p.rows(), c = p.x.c;
    cudnnDataType_t t = p.x.type, pt = p.params;
    const auto *mask = static_cast<const uint8_t *>(reserve);
    // The gradient reaching the batch norm: dy where the activation
    // passed the element (the forward's mask), 0 elsewhere.
    auto gradAt = [&](int64_t i) {
      if (p.relu && !(mask[i / 8] & (1u << (i % 8))))
        return 0.0;
      return load(t, dy, i);
    };
    for (int64_t ch = 0; ch < c; ++ch) {
      double mean, invstd;
      if (savedMean) {
        mean = load(pt, savedMean, ch);
        invstd = load(pt, savedInvstd, ch);
      } else {
        Moments m = channelMoments(t, x, rows, c, ch);
        mean = m.mean;
        invstd = 1 / std::sqrt(m.squares / double(rows) + epsilon);
      }
      double sumDy = 0, sumDyXhat = 0;
      for (int64_t r = 0; r < rows; ++r) {
        int64_t i = r * c + ch;
        double g = gradAt(i);
        sumDy += g;
        sumDyXhat += g * (load(t, x, i) - mean) * invstd;
      }
      blend(pt, dGamma, ch, sumDyXhat, alphaParam, betaParam);
      blend(pt, dBeta, ch, sumDy, alphaParam, betaParam);
      double scale = load(pt, gamma, ch) * invstd, n = double(rows);
      for (int64_t r = 0; r < rows; ++r) {
        int64_t i = r * c + ch;
        double xhat = (load(t, x, i) - mean) * invstd;
        blend(t, dx, i, scale * (gradAt(i) - sumDy / n - xhat * sumDyXhat / n),
              alphaData, betaData);
      }
    }
  });
  return CUDNN_STATUS_SUCCESS;
}

} // namespace

void fillCudnn(mpcrt::cuda::Cudnn &t) {
  // Batch norm's training calls and their descriptors.
  t.cudnnBatchNormalizationBackwardEx = batchNormBackward;
  t.cudnnBatchNormalizationForwardTrainingEx = batchNormForward;
  t.cudnnCreateActivationDescriptor = createActivation;
  t.cudnnDeriveBNTensorDescriptor = deriveBatchNorm;
  t.cudnnGetBatchNormalizationBackwardExWorkspaceSize =
      batchNormBackwardWorkspace;
  t.cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize =
      batchNormForwardWorkspace;
  t.cudnnGetBatchNormalizationTrainingExReserveSpaceSize = batchNormReserve;
  t.cudnnSetActivationDescriptor = setActivation;

  // The three directions' workspace queries.
  t.cudnnGetConvolutionForwardWorkspaceSize =
      [](cudnnHandle_t, cudnnTensorDescriptor_t x, cudnnFilterDescriptor_t w,
         cudnnConvolutionDescriptor_t conv, cudnnTensorDescriptor_t y,
         cudnnConvolutionFwdAlgo_t algo, size_t *bytes) {
        *bytes = workspaceFor(problem(x, w, conv, y), int(algo));
        return CUDNN_STATUS_SUCCESS;
      };
  t.cudnnGetConvolutionBackwardDataWorkspaceSize =
      [](cudnnHandle_t, cudnnFilterDescriptor_t w, cudnnTensorDescriptor_t y,
         cudnnConvolutionDescriptor_t conv, cudnnTensorDescriptor_t x,
         cudnnConvolutionBwdDataAlgo_t algo, size_t *bytes) {
        *bytes = workspaceFor(problem(x, w, conv, y), int(algo));
        return CUDNN_STATUS_SUCCESS;
      };
  t.cudnnGetConvolutionBackwardFilterWorkspaceSize =
      [](cudnnHandle_t, cudnnTensorDescriptor_t x, cudnnTensorDescriptor_t y,
         cudnnConvolutionDescriptor_t conv, cudnnFilterDescriptor_t w,
         cudnnConvolutionBwdFilterAlgo_t algo, size_t *bytes) {
        *bytes = workspaceFor(problem(x, w, conv, y), int(algo));
        return CUDNN_STATUS_SUCCESS;
      };
  t.cudnnConvolutionBackwardData = backwardData;
  t.cudnnConvolutionBackwardFilter = backwardFilter;
  t.cudnnConvolutionForward = forward;
  t.cudnnCreate = create;
  t.cudnnCreateConvolutionDescriptor = createConv;
  t.cudnnCreateFilterDescriptor = createFilter;
  t.cudnnCreateTensorDescriptor = createTensor;
  t.cudnnGetConvolutionBackwardDataAlgorithm_v7 = dataAlgorithms;
  t.cudnnGetConvolutionBackwardFilterAlgorithm_v7 = filterAlgorithms;
  t.cudnnGetConvolutionForwardAlgorithm_v7 = forwardAlgorithms;
  t.cudnnGetErrorString = errorString;
  t.cudnnGetVersion = version;
  t.cudnnSetConvolution2dDescriptor = setConv;
  t.cudnnSetConvolutionGroupCount = setGroups;
  t.cudnnSetConvolutionMathType = setMath;
  t.cudnnSetFilter4dDescriptor = setFilter;
  t.cudnnSetStream = setStream;
  t.cudnnSetTensor4dDescriptor = setTensor;
}

} // namespace mpcemu
