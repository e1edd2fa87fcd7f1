//===- CublasLt.cpp - the cuBLASLt calls of the backend, on the host ------===//
//
// The GEMMs as the backend asks for them: column-major layouts with
// leading dimensions, transposes, strided batches (and arrays of the
// matrices' addresses, CUBLASLT_BATCH_MODE_POINTER_ARRAY, which the
// heuristic offers only with MPC_EMULATION_ORDER=reverse, as it does
// epilogues, so that the backend's fallback runs in the first pass; with
// MPC_EMULATION_REFUSE=pointer-arrays it offers them in either order and
// the call answers CUBLAS_STATUS_NOT_SUPPORTED, a heuristic promising what
// its kernels then refuse),
// f16/bf16/f32/f64 matrices, f32 or f64 compute and scalars, D = alpha op(A)
// op(B) + beta C.
//
// Epilogues, as cuBLASLt's documentation defines them, are offered only
// with MPC_EMULATION_ORDER=reverse (the second ctest pass): otherwise the
// heuristic finds no algorithm with an epilogue, so the backend's own
// bias, activation and bias-gradient kernels run after the plain GEMM
// (the path it takes where cuBLASLt has none), and the two passes check
// both paths. Offered: BIAS, RELU_BIAS, GELU_BIAS, GELU_AUX_BIAS (a bias
// of D's rows added to alpha op(A) op(B) + beta C, then the activation,
// GELU's tanh form; GELU_AUX_BIAS also stores its input in the auxiliary
// matrix), DGELU (the product times GELU's derivative at the auxiliary
// matrix), BGRADA and BGRADB (the sums of op(A)'s rows or of op(B)'s
// columns over k, into the bias pointer), each of one batch, or of several
// with a bias shared by every batch (bias batch stride 0) and no bias
// gradient, the bias or its gradient of D's type (cublasLt.h: other bias
// types are for integer and fp8 kernels only; an f32 bias gradient of an
// f16 product has no algorithm). The epilogue is evaluated in the compute type
// and rounded once to D's; which cases the library's heuristic really offers,
// and its own evaluation's last bits, are checked on a GPU only. A layout that
// does not fit the operation is CUBLAS_STATUS_INVALID_VALUE, as cuBLASLt
// answers.
//
// Sums run in the compute type in order of k, rounded to the compute type
// and then to D's.
//
//===----------------------------------------------------------------------===//

#include "CublasLt.h"

#include "Device.cuh"
#include "Formulas.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace mpcemu {
namespace {

struct Layout {
  cudaDataType type;
  uint64_t rows, cols;
  int64_t ld;
  int32_t batch = 1;
  int64_t stride = 0;
  // CUBLASLT_BATCH_MODE_POINTER_ARRAY: the matrix argument is a device
  // array of `batch` matrix addresses, read when the product runs.
  bool pointers = false;
};

struct Desc {
  cublasComputeType_t compute;
  cudaDataType scale;
  cublasOperation_t transA = CUBLAS_OP_N, transB = CUBLAS_OP_N;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  // The epilogue's bias (or bias gradient) and auxiliary matrix; a type
  // of -1 is D's.
  const void *bias = nullptr;
  int32_t biasType = -1;
  int64_t biasBatchStride = 0;
  const void *aux = nullptr;
  int64_t auxLd = 0, auxBatchStride = 0;
  int32_t auxType = -1;
};

/// MPC_EMULATION_REFUSE=pointer-arrays (see the file comment); any other
/// value stops the program.
bool refusePointerArrays() {
  static const bool refuse = [] {
    const char *what = std::getenv("MPC_EMULATION_REFUSE");
    if (!what || !*what)
      return false;
    if (std::string(what) == "pointer-arrays")
      return true;
    std::fprintf(stderr,
                 "error: MPC_EMULATION_REFUSE is '%s': it takes "
                 "'pointer-arrays' (cuBLASLt's pointer-array products offered "
                 "and then refused)\n",
                 what);
    std::exit(1);
  }();
  return refuse;
}

bool addsBias(cublasLtEpilogue_t e) {
  return e == CUBLASLT_EPILOGUE_BIAS || e == CUBLASLT_EPILOGUE_RELU_BIAS ||
         e == CUBLASLT_EPILOGUE_GELU_BIAS ||
         e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
}
bool biasGradient(cublasLtEpilogue_t e) {
  return e == CUBLASLT_EPILOGUE_BGRADA || e == CUBLASLT_EPILOGUE_BGRADB;
}
bool readsOrWritesAux(cublasLtEpilogue_t e) {
  return e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS || e == CUBLASLT_EPILOGUE_DGELU;
}

Layout *layoutOf(cublasLtMatrixLayout_t l) {
  return reinterpret_cast<Layout *>(l);
}
Desc *descOf(cublasLtMatmulDesc_t d) { return reinterpret_cast<Desc *>(d); }

/// Elements of `type` through the backend's own conversions (Device.cuh).
mpcrt_dtype dtypeOf(cudaDataType type) {
  return type == CUDA_R_16F    ? MPCRT_F16
         : type == CUDA_R_16BF ? MPCRT_BF16
         : type == CUDA_R_32F  ? MPCRT_F32
                               : MPCRT_F64;
}
double load(cudaDataType type, const void *p, int64_t i) {
  return mpcrt::cuda::loadAny(dtypeOf(type), p, i);
}
void store(cudaDataType type, void *p, int64_t i, double v) {
  mpcrt::cuda::storeAny(dtypeOf(type), p, i, v);
}

bool known(cudaDataType type) {
  return type == CUDA_R_16F || type == CUDA_R_16BF || type == CUDA_R_32F ||
         type == CUDA_R_64F;
}

/// op(X)'s rows and columns.
std::pair<uint64_t, uint64_t> shapeOf(const Layout &l, cublasOperation_t op) {
  return op == CUBLAS_OP_N ? std::make_pair(l.rows, l.cols)
                           : std::make_pair(l.cols, l.rows);
}

cublasStatus_t create(cublasLtHandle_t *handle) {
  static int context;
  *handle = reinterpret_cast<cublasLtHandle_t>(&context);
  return CUBLAS_STATUS_SUCCESS;
}

const char *statusString(cublasStatus_t status) {
  switch (status) {
  case CUBLAS_STATUS_SUCCESS:
    return "CUBLAS_STATUS_SUCCESS";
  case CUBLAS_STATUS_INVALID_VALUE:
    return "CUBLAS_STATUS_INVALID_VALUE";
  case CUBLAS_STATUS_NOT_SUPPORTED:
    return "CUBLAS_STATUS_NOT_SUPPORTED";
  default:
    return "CUBLAS_STATUS_INTERNAL_ERROR";
  }
}

size_t version() { return CUBLAS_VER_MAJOR * 10000 + CUBLAS_VER_MINOR * 100; }

cublasStatus_t layoutCreate(cublasLtMatrixLayout_t *l, cudaDataType type,
                            uint64_t rows, uint64_t cols, int64_t ld) {
  if (!known(type) || ld < int64_t(rows))
    return CUBLAS_STATUS_INVALID_VALUE;
  *l = reinterpret_cast<cublasLtMatrixLayout_t>(
      new Layout{type, rows, cols, ld});
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t layoutDestroy(cublasLtMatrixLayout_t l) {
  delete layoutOf(l);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t layoutSet(cublasLtMatrixLayout_t l,
                         cublasLtMatrixLayoutAttribute_t attribute,
                         const void *value, size_t bytes) {
  Layout &layout = *layoutOf(l);
  if (attribute == CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT && bytes == 4)
    std::memcpy(&layout.batch, value, 4);
  else if (attribute == CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET &&
           bytes == 8)
    std::memcpy(&layout.stride, value, 8);
  else if (attribute == CUBLASLT_MATRIX_LAYOUT_BATCH_MODE && bytes == 4) {
    uint32_t mode;
    std::memcpy(&mode, value, 4);
    if (mode != CUBLASLT_BATCH_MODE_STRIDED &&
        mode != CUBLASLT_BATCH_MODE_POINTER_ARRAY)
      return CUBLAS_STATUS_INVALID_VALUE;
    layout.pointers = mode == CUBLASLT_BATCH_MODE_POINTER_ARRAY;
  } else
    return CUBLAS_STATUS_INVALID_VALUE;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t descCreate(cublasLtMatmulDesc_t *d, cublasComputeType_t compute,
                          cudaDataType scale) {
  if (compute != CUBLAS_COMPUTE_32F && compute != CUBLAS_COMPUTE_64F)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  *d = reinterpret_cast<cublasLtMatmulDesc_t>(new Desc{compute, scale});
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t descDestroy(cublasLtMatmulDesc_t d) {
  delete descOf(d);
  return CUBLAS_STATUS_SUCCESS;
}

/// Copies an attribute's value into `field`, which must be its size.
template <typename T>
cublasStatus_t setField(T &field, const void *value, size_t bytes) {
  if (bytes != sizeof field)
    return CUBLAS_STATUS_INVALID_VALUE;
  std::memcpy(&field, value, bytes);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t descSet(cublasLtMatmulDesc_t d,
                       cublasLtMatmulDescAttributes_t attribute,
                       const void *value, size_t bytes) {
  Desc &desc = *descOf(d);
  switch (attribute) {
  case CUBLASLT_MATMUL_DESC_TRANSA:
    return setField(desc.transA, value, bytes);
  case CUBLASLT_MATMUL_DESC_TRANSB:
    return setField(desc.transB, value, bytes);
  case CUBLASLT_MATMUL_DESC_EPILOGUE:
    return setField(desc.epilogue, value, bytes);
  case CUBLASLT_MATMUL_DESC_BIAS_POINTER:
    return setField(desc.bias, value, bytes);
  case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE:
    return setField(desc.biasType, value, bytes);
  case CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE:
    return setField(desc.biasBatchStride, value, bytes);
  case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER:
    return setField(desc.aux, value, bytes);
  case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD:
    return setField(desc.auxLd, value, bytes);
  case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE:
    return setField(desc.auxBatchStride, value, bytes);
  case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE:
    return setField(desc.auxType, value, bytes);
  default:
    return CUBLAS_STATUS_INVALID_VALUE;
  }
}

cublasStatus_t preferenceCreate(cublasLtMatmulPreference_t *p) {
  static int preference;
  *p = reinterpret_cast<cublasLtMatmulPreference_t>(&preference);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t preferenceDestroy(cublasLtMatmulPreference_t) {
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t preferenceSet(cublasLtMatmulPreference_t,
                             cublasLtMatmulPreferenceAttributes_t, const void *,
                             size_t) {
  return CUBLAS_STATUS_SUCCESS;
}

/// Whether the layouts fit D = op(A) op(B) + C.
bool fits(const Desc &d, const Layout &a, const Layout &b, const Layout &c,
          const Layout &dl) {
  auto [m, k] = shapeOf(a, d.transA);
  auto [k2, n] = shapeOf(b, d.transB);
  if (k != k2 || c.rows != m || c.cols != n || dl.rows != m || dl.cols != n)
    return false;
  if (a.type != b.type || c.type != dl.type)
    return false;
  int32_t batch = dl.batch;
  for (const Layout *l : {&a, &b, &c})
    if (l->batch != batch && l->batch != 1)
      return false;
  // Pointer arrays for all four matrices or none, of one batch count.
  for (const Layout *l : {&a, &b, &c})
    if (l->pointers != dl.pointers || (l->pointers && l->batch != batch))
      return false;
  return true;
}

cublasStatus_t heuristic(cublasLtHandle_t, cublasLtMatmulDesc_t d,
                         cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                         cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t dl,
                         cublasLtMatmulPreference_t, int requested,
                         cublasLtMatmulHeuristicResult_t *results, int *found) {
  if (requested < 1)
    return CUBLAS_STATUS_INVALID_VALUE;
  if (!fits(*descOf(d), *layoutOf(a), *layoutOf(b), *layoutOf(c),
            *layoutOf(dl)))
    return CUBLAS_STATUS_INVALID_VALUE;
  const Desc &desc = *descOf(d);
  cublasLtEpilogue_t e = desc.epilogue;
  bool offered = e == CUBLASLT_EPILOGUE_DEFAULT;
  // Pointer arrays in the other order only (as epilogues): the backend's
  // strided products then take their per-batch loop in the first order
  // and the pointer arrays in the second, without an epilogue.
  if (layoutOf(dl)->pointers)
    offered = offered && (otherOrderRequested() || refusePointerArrays());
  // Epilogues in the other order only (see the file comment).
  if (otherOrderRequested() &&
      (addsBias(e) || biasGradient(e) || e == CUBLASLT_EPILOGUE_DGELU)) {
    // A bias (or bias gradient) of D's type, as cublasLt.h documents for
    // every kernel but the integer and fp8 ones, shared by the batches; a
    // bias gradient of one batch; an auxiliary matrix of D's type whose
    // leading dimension (a multiple of 8, as cuBLASLt requires) holds D's
    // rows.
    const Layout &dd = *layoutOf(dl);
    offered = desc.biasBatchStride == 0 && !(biasGradient(e) && dd.batch > 1) &&
              (!(addsBias(e) || biasGradient(e)) || desc.biasType == -1 ||
               desc.biasType == int32_t(dd.type));
    if (readsOrWritesAux(e))
      offered = offered && desc.auxLd % 8 == 0 &&
                desc.auxLd >= int64_t(dd.rows) &&
                (desc.auxType == -1 || desc.auxType == int32_t(dd.type)) &&
                (dd.batch == 1 || desc.auxBatchStride > 0);
  }
  // Two algorithms where two or more are asked for (both compute the
  // same), so that the backend's timing of the candidates
  // (MPC_CUBLASLT_ALGORITHMS=measure) runs.
  *found = offered ? std::min(requested, 2) : 0;
  for (int i = 0; i < *found; ++i) {
    results[i] = cublasLtMatmulHeuristicResult_t{};
    results[i].algo.data[0] = uint64_t(i);
    results[i].state = CUBLAS_STATUS_SUCCESS;
  }
  return CUBLAS_STATUS_SUCCESS;
}

/// D = alpha op(A) op(B) + beta C, batch by batch, summing in Acc over k
/// in order: op(A)'s rows and op(B) are first converted to Acc (exactly,
/// for f16/bf16), then each row of D accumulates a row of op(B) at a time,
/// which the compiler vectorises across D's columns without reordering any
/// element's sum.
template <typename Acc>
void multiply(const Desc &d, const Layout &a, const void *As, const Layout &b,
              const void *Bs, const Layout &c, const void *Cs, const Layout &dd,
              void *Ds, double alpha, double beta) {
  auto [m, k] = shapeOf(a, d.transA);
  uint64_t n = dd.cols;
  cudaDataType biasType = d.biasType == -1 ? dd.type : cudaDataType(d.biasType),
               auxType = d.auxType == -1 ? dd.type : cudaDataType(d.auxType);
  auto at = [](const Layout &l, cublasOperation_t op, uint64_t i, uint64_t j) {
    return op == CUBLAS_OP_N ? int64_t(i) + int64_t(j) * l.ld
                             : int64_t(j) + int64_t(i) * l.ld;
  };
  std::vector<Acc> opA(m * k), opB(k * n), row(n);
  for (int32_t batch = 0; batch < dd.batch; ++batch) {
    auto offset = [&](const Layout &l) {
      return l.batch == 1 || l.pointers ? 0 : batch * l.stride;
    };
    // The batch's matrix: its address from the array, or the argument.
    auto matrix = [&](const Layout &l, const void *x) {
      return l.pointers ? static_cast<const void *const *>(x)[batch] : x;
    };
    const void *A = matrix(a, As), *B = matrix(b, Bs), *C = matrix(c, Cs);
    void *D = const_cast<void *>(matrix(dd, Ds));
    for (uint64_t i = 0; i < m; ++i)
      for (uint64_t p = 0; p < k; ++p)
        opA[i * k + p] = static_cast<Acc>(
            load(a.type, A, offset(a) + at(a, d.transA, i, p)));
    for (uint64_t p = 0; p < k; ++p)
      for (uint64_t j = 0; j < n; ++j)
        opB[p * n + j] = static_cast<Acc>(
            load(b.type, B, offset(b) + at(b, d.transB, p, j)));
    for (uint64_t i = 0; i < m; ++i) {
      std::fill(row.begin(), row.end(), Acc(0));
      for (uint64_t p = 0; p < k; ++p) {
        Acc x = opA[i * k + p];
        const Acc *y = &opB[p * n];
        for (uint64_t j = 0; j < n; ++j)
          row[j] += x * y[j];
      }
      for (uint64_t j = 0; j < n; ++j) {
        double v = alpha * double(row[j]);
        if (beta != 0)
          v += beta *
               load(c.type, C, offset(c) + int64_t(i) + int64_t(j) * c.ld);
        Acc x = static_cast<Acc>(v);
        int64_t auxAt =
            batch * d.auxBatchStride + int64_t(i) + int64_t(j) * d.auxLd;
        if (addsBias(d.epilogue))
          x += static_cast<Acc>(load(biasType, d.bias, int64_t(i)));
        if (d.epilogue == CUBLASLT_EPILOGUE_GELU_AUX_BIAS)
          store(auxType, const_cast<void *>(d.aux), auxAt, double(x));
        if (d.epilogue == CUBLASLT_EPILOGUE_RELU_BIAS)
          x = mpcrt::formulas::unary(MPCRT_RELU, x);
        else if (d.epilogue == CUBLASLT_EPILOGUE_GELU_BIAS ||
                 d.epilogue == CUBLASLT_EPILOGUE_GELU_AUX_BIAS)
          x = mpcrt::formulas::unary(MPCRT_GELU_TANH, x);
        else if (d.epilogue == CUBLASLT_EPILOGUE_DGELU)
          x *= mpcrt::formulas::derivative(
              MPCRT_GELU_TANH, static_cast<Acc>(load(auxType, d.aux, auxAt)));
        store(dd.type, D, offset(dd) + int64_t(i) + int64_t(j) * dd.ld,
              double(x));
      }
    }
    // Bias gradients: op(A)'s rows or op(B)'s columns summed over k.
    if (d.epilogue == CUBLASLT_EPILOGUE_BGRADA)
      for (uint64_t i = 0; i < m; ++i) {
        Acc sum = 0;
        for (uint64_t p = 0; p < k; ++p)
          sum += opA[i * k + p];
        store(biasType, const_cast<void *>(d.bias), int64_t(i), double(sum));
      }
    else if (d.epilogue == CUBLASLT_EPILOGUE_BGRADB)
      for (uint64_t j = 0; j < n; ++j) {
        Acc sum = 0;
        for (uint64_t p = 0; p < k; ++p)
          sum += opB[p * n + j];
        store(biasType, const_cast<void *>(d.bias), int64_t(j), double(sum));
      }
  }
}

cublasStatus_t matmul(cublasLtHandle_t, cublasLtMatmulDesc_t dp,
                      const void *alphaP, const void *A,
                      cublasLtMatrixLayout_t al, const void *B,
                      cublasLtMatrixLayout_t bl, const void *betaP,
                      const void *C, cublasLtMatrixLayout_t cl, void *D,
                      cublasLtMatrixLayout_t dl, const cublasLtMatmulAlgo_t *,
                      void *, size_t, cudaStream_t stream) {
  const Desc d = *descOf(dp);
  const Layout a = *layoutOf(al), b = *layoutOf(bl), c = *layoutOf(cl),
               dd = *layoutOf(dl);
  if (!fits(d, a, b, c, dd))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (dd.pointers && refusePointerArrays())
    return CUBLAS_STATUS_NOT_SUPPORTED;
  if (d.epilogue != CUBLASLT_EPILOGUE_DEFAULT) {
    // Only what the heuristic offers (the backend asks it first).
    int found = 0;
    cublasLtMatmulHeuristicResult_t result;
    heuristic(nullptr, dp, al, bl, cl, dl, nullptr, 1, &result, &found);
    if (!found)
      return CUBLAS_STATUS_NOT_SUPPORTED;
    if ((addsBias(d.epilogue) || biasGradient(d.epilogue)) && !d.bias)
      return CUBLAS_STATUS_INVALID_VALUE;
    if (readsOrWritesAux(d.epilogue) && !d.aux)
      return CUBLAS_STATUS_INVALID_VALUE;
  }
  const void *operands[] = {A, B, C, D, d.bias, d.aux};
  for (size_t i = 0; i < 6; ++i)
    checkAccessible("cublasLtMatmul", i, operands[i]);
  // Host scalars are read when the call is made (and so captured).
  bool f64 = d.scale == CUDA_R_64F;
  double alpha = f64 ? *static_cast<const double *>(alphaP)
                     : *static_cast<const float *>(alphaP);
  double beta = f64 ? *static_cast<const double *>(betaP)
                    : *static_cast<const float *>(betaP);
  bool wide = d.compute == CUBLAS_COMPUTE_64F;
  enqueue(stream, [=] {
    if (wide)
      multiply<double>(d, a, A, b, B, c, C, dd, D, alpha, beta);
    else
      multiply<float>(d, a, A, b, B, c, C, dd, D, alpha, beta);
  });
  return CUBLAS_STATUS_SUCCESS;
}

} // namespace

void fillCublasLt(mpcrt::cuda::CublasLt &t) {
  t.cublasLtCreate = create;
  t.cublasLtGetStatusString = statusString;
  t.cublasLtGetVersion = version;
  t.cublasLtMatmul = matmul;
  t.cublasLtMatmulAlgoGetHeuristic = heuristic;
  t.cublasLtMatmulDescCreate = descCreate;
  t.cublasLtMatmulDescDestroy = descDestroy;
  t.cublasLtMatmulDescSetAttribute = descSet;
  t.cublasLtMatmulPreferenceCreate = preferenceCreate;
  t.cublasLtMatmulPreferenceDestroy = preferenceDestroy;
  t.cublasLtMatmulPreferenceSetAttribute = preferenceSet;
  t.cublasLtMatrixLayoutCreate = layoutCreate;
  t.cublasLtMatrixLayoutDestroy = layoutDestroy;
  t.cublasLtMatrixLayoutSetAttribute = layoutSet;
}

} // namespace mpcemu
