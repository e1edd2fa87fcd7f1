//===- Matmul.cpp - mpc.matmul through cuBLASLt ---------------------------===//
//
// Row-major C[m, n] = op(A) x op(B) is column-major C^T = op(B)^T x op(A)^T:
// cuBLASLt gets our B as its A and our A as its B, no data moved. f16/bf16
// operands accumulate in f32 on Tensor Cores (CUBLAS_COMPUTE_32F), f32 in
// full f32, f64 in f64. The heuristic's first algorithm is chosen once per
// shape and cached with its descriptors. cuBLASLt's heuristic assumes
// 256-byte aligned pointers unless told otherwise, and an algorithm chosen
// for aligned ones may fault on others: the alignment of the pointers
// (up to 256) is part of the plan's key and given to the heuristic.
//
// mpc.fused_matmul adds its bias and activation in the epilogue (BIAS,
// RELU_BIAS, GELU_BIAS; the bias is a vector over cuBLASLt's D rows, our
// columns). Where the heuristic has no algorithm for the epilogue, the
// plan falls back to the plain GEMM and biasActivation (one rounding
// more). A fused product that keeps its pre-activation for the backward
// (tanh GELU in training) writes it as GELU_AUX_BIAS's auxiliary matrix;
// a ReLU that keeps it has the BIAS epilogue write it and the ReLU kernel
// read it (RELU_AUX_BIAS's auxiliary output is a bit mask). Where a GEMM's
// result is f16/bf16, split-K algorithms may reduce only in f32.
// mpc.matmul_bias_grad takes the bias gradient, the column sums of our B,
// from the BGRADA epilogue where it is of the product's type, or from
// columnSums: f32 sums of an f16/bf16 product (cuBLASLt writes a bias
// gradient only in D's type), or where cuBLASLt has no algorithm.
// mpc.matmul_activation_grad applies GELU's derivative in the DGELU
// epilogue, reading the saved pre-activation as the auxiliary matrix;
// ReLU's DRELU reads a bit mask that RELU_AUX writes, not a saved tensor,
// so ReLU's gradient is the plain GEMM and unaryGrad in place, as is
// GELU's without an algorithm.
// mpc.matmul_add gives its addend as cuBLASLt's C with beta = 1 (C may be
// D: the sum accumulates in place).
//
// MPC_CUBLASLT_ALGORITHMS=measure (as PyTorch's TunableOp does for its
// GEMMs) asks the heuristic for up to 8 candidates and times them on each
// plan's first call outside a capture, keeping the fastest; `heuristic`
// (the default) takes its first.
//
// The auxiliary matrix has D's layout: row-major [m, n] is column-major
// with leading dimension n, which cuBLASLt requires to be a multiple of 8.
//
//===----------------------------------------------------------------------===//

#include "mpc/Runtime/Report.h"

#include "Kernels.h"
#include "Libraries.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace mpcrt::cuda {
namespace {

void checkLt(cublasStatus_t status, const char *what) {
  if (status == CUBLAS_STATUS_SUCCESS ||
      captureFailure(std::string(what) + ": " +
                     lt().cublasLtGetStatusString(status)))
    return;
  mpcrt::errors::reportError("cuBLASLt: %s: %s\n", what,
                             lt().cublasLtGetStatusString(status));
  std::exit(1);
}
#define MPCRT_LT_CHECK(call) checkLt((call), #call)

constexpr size_t kWorkspaceBytes = 32u << 20;

struct Plan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  bool epilogue = false; // the bias and activation run in cuBLASLt
  // With MPC_CUBLASLT_ALGORITHMS=measure: the heuristic's candidates, in
  // its order, timed on the plan's first call outside a capture.
  std::vector<cublasLtMatmulAlgo_t> candidates;
  bool timed = false;
};

/// The candidates asked of the heuristic when measuring, and the timings
/// of each (the least kept).
constexpr int kCandidates = 8;
constexpr int kTimings = 3;

/// MPC_CUBLASLT_ALGORITHMS: whether a product's candidate algorithms are
/// timed (`measure`) or the heuristic's first is taken (`heuristic`, unset
/// or empty); read once.
bool measuring() {
  static const std::string measureMeans =
      "its first " + std::to_string(kCandidates) +
      " candidates timed on a product's first call";
  static const bool measure = measureRequested(
      "MPC_CUBLASLT_ALGORITHMS", "cuBLASLt's first", measureMeans.c_str());
  return measure;
}

/// in, out, strides, batch, m, n, k, transposes, alignments (A, B, C, the
/// auxiliary matrix), epilogue (cublasLtEpilogue_t), and the type of its
/// bias or bias gradient (the descriptor holds it: a bias gradient in f16
/// and one in f32 of the same product are two plans).
using Key =
    std::tuple<int, int, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
               bool, bool, uint32_t, uint32_t, uint32_t, uint32_t, int, int>;

/// Whether an epilogue reads a bias or writes a bias gradient.
bool usesBias(cublasLtEpilogue_t epilogue) {
  return (epilogue & (CUBLASLT_EPILOGUE_BIAS | 16 | CUBLASLT_EPILOGUE_BGRADA |
                      CUBLASLT_EPILOGUE_BGRADB)) != 0;
}

/// The largest power of two up to 256 that divides `pointer`.
uint32_t alignmentOf(const void *pointer) {
  uintptr_t p = reinterpret_cast<uintptr_t>(pointer) | 256;
  return static_cast<uint32_t>(p & -p);
}

struct Context {
  cublasLtHandle_t handle = nullptr;
  void *workspace = nullptr;
  std::map<Key, Plan> plans;
  std::mutex mutex;

  Context() {
    MPCRT_LT_CHECK(lt().cublasLtCreate(&handle));
    if (cudaMalloc(&workspace, kWorkspaceBytes) != cudaSuccess) {
      mpcrt::errors::reportError("CUDA: cannot allocate the cuBLASLt "
                                 "workspace\n");
      std::exit(1);
    }
    countDeviceBytes(kWorkspaceBytes);
  }
};

Context &context() {
  static Context *ctx = new Context(); // lives as long as the process
  return *ctx;
}

/// A column-major rows x cols layout, its columns `ld` apart (0: rows),
/// of `batch` matrices `stride` apart, or through arrays of their
/// addresses (`pointers`, CUBLASLT_BATCH_MODE_POINTER_ARRAY).
cublasLtMatrixLayout_t layout(cudaDataType type, int64_t rows, int64_t cols,
                              int64_t batch, int64_t stride, int64_t ld = 0,
                              bool pointers = false) {
  cublasLtMatrixLayout_t l;
  MPCRT_LT_CHECK(
      lt().cublasLtMatrixLayoutCreate(&l, type, rows, cols, ld ? ld : rows));
  if (batch > 1 || pointers) {
    int32_t count = static_cast<int32_t>(batch);
    MPCRT_LT_CHECK(lt().cublasLtMatrixLayoutSetAttribute(
        l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)));
  }
  if (pointers) {
    uint32_t mode = CUBLASLT_BATCH_MODE_POINTER_ARRAY;
    MPCRT_LT_CHECK(lt().cublasLtMatrixLayoutSetAttribute(
        l, CUBLASLT_MATRIX_LAYOUT_BATCH_MODE, &mode, sizeof(mode)));
  } else if (batch > 1) {
    MPCRT_LT_CHECK(lt().cublasLtMatrixLayoutSetAttribute(
        l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
        sizeof(stride)));
  }
  return l;
}

/// A product's descriptor: f32 compute (f64 for f64 operands) and our
/// transposes as cuBLASLt's (its A is our B, its B our A: see the file
/// comment).
cublasLtMatmulDesc_t productDesc(mpcrt_dtype in, bool transA, bool transB) {
  bool f64 = in == MPCRT_F64;
  cublasLtMatmulDesc_t op;
  MPCRT_LT_CHECK(lt().cublasLtMatmulDescCreate(
      &op, f64 ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F,
      f64 ? CUDA_R_64F : CUDA_R_32F));
  cublasOperation_t opA = transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opB = transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  MPCRT_LT_CHECK(lt().cublasLtMatmulDescSetAttribute(
      op, CUBLASLT_MATMUL_DESC_TRANSA, &opA, sizeof(opA)));
  MPCRT_LT_CHECK(lt().cublasLtMatmulDescSetAttribute(
      op, CUBLASLT_MATMUL_DESC_TRANSB, &opB, sizeof(opB)));
  return op;
}

/// Destroys a plan's descriptors (one the heuristic found nothing for).
void destroyDescriptors(Plan &plan) {
  lt().cublasLtMatmulDescDestroy(plan.op);
  for (cublasLtMatrixLayout_t l : {plan.a, plan.b, plan.c})
    lt().cublasLtMatrixLayoutDestroy(l);
}

/// Stops the program: cuBLASLt has no algorithm for the product.
[[noreturn]] void noAlgorithm(const char *what, int64_t m, int64_t n, int64_t k,
                              int64_t batch) {
  mpcrt::errors::reportError(
      "cuBLASLt: no algorithm for a %lldx%lldx%lld %s (batch %lld)\n",
      static_cast<long long>(m), static_cast<long long>(n),
      static_cast<long long>(k), what, static_cast<long long>(batch));
  std::exit(1);
}

cudaDataType cudaType(mpcrt_dtype dtype) {
  return dtype == MPCRT_F16    ? CUDA_R_16F
         : dtype == MPCRT_BF16 ? CUDA_R_16BF
         : dtype == MPCRT_F32  ? CUDA_R_32F
                               : CUDA_R_64F;
}

/// The algorithm for the plan's descriptors, or false. With an f16/bf16
/// result (`narrow`), a split-K algorithm may only reduce its partial sums
/// in the compute type: cuBLASLt's INPLACE and OUTPUT_TYPE schemes round
/// each partial sum to the result's type, which the one-rounding error
/// bounds of mpc's GEMMs do not allow.
bool chooseAlgorithm(Plan &plan, uint32_t alignA, uint32_t alignB,
                     uint32_t alignC, bool narrow) {
  Context &ctx = context();
  cublasLtMatmulPreference_t preference;
  MPCRT_LT_CHECK(lt().cublasLtMatmulPreferenceCreate(&preference));
  size_t workspace = kWorkspaceBytes;
  MPCRT_LT_CHECK(lt().cublasLtMatmulPreferenceSetAttribute(
      preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
      sizeof(workspace)));
  // cuBLASLt's A and B are our B and A.
  const std::pair<cublasLtMatmulPreferenceAttributes_t, uint32_t> aligned[] = {
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, alignB},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, alignA},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, alignC},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, alignC}};
  for (auto [attribute, bytes] : aligned)
    MPCRT_LT_CHECK(lt().cublasLtMatmulPreferenceSetAttribute(
        preference, attribute, &bytes, sizeof(bytes)));
  if (narrow) {
    uint32_t schemes =
        CUBLASLT_REDUCTION_SCHEME_NONE | CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
    MPCRT_LT_CHECK(lt().cublasLtMatmulPreferenceSetAttribute(
        preference, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &schemes,
        sizeof(schemes)));
  }
  cublasLtMatmulHeuristicResult_t results[kCandidates] = {};
  int found = 0;
  cublasStatus_t status = lt().cublasLtMatmulAlgoGetHeuristic(
      ctx.handle, plan.op, plan.a, plan.b, plan.c, plan.c, preference,
      measuring() ? kCandidates : 1, results, &found);
  lt().cublasLtMatmulPreferenceDestroy(preference);
  if (status != CUBLAS_STATUS_SUCCESS || found == 0)
    return false;
  plan.algo = results[0].algo;
  plan.candidates.clear();
  for (int i = 0; i < found && i < kCandidates; ++i)
    if (results[i].state == CUBLAS_STATUS_SUCCESS)
      plan.candidates.push_back(results[i].algo);
  return true;
}

Plan makePlan(mpcrt_dtype in, mpcrt_dtype out, int64_t aStride, int64_t bStride,
              int64_t batch, int64_t m, int64_t n, int64_t k, bool transA,
              bool transB, uint32_t alignA, uint32_t alignB, uint32_t alignC,
              cublasLtEpilogue_t epilogue, mpcrt_dtype biasDtype,
              const void *aux) {
  bool narrow = out == MPCRT_F16 || out == MPCRT_BF16;
  Plan plan;
  plan.op = productDesc(in, transA, transB);
  cudaDataType type = cudaType(in);
  plan.a = layout(type, transB ? k : n, transB ? n : k, batch, bStride);
  plan.b = layout(type, transA ? m : k, transA ? k : m, batch, aStride);
  plan.c = layout(cudaType(out), n, m, batch, m * n);

  // The auxiliary matrix has D's layout, which cuBLASLt takes only with
  // a leading dimension that is a multiple of 8.
  if (aux && n % 8 != 0)
    epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  if (epilogue != CUBLASLT_EPILOGUE_DEFAULT) {
    MPCRT_LT_CHECK(lt().cublasLtMatmulDescSetAttribute(
        plan.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)));
    if (usesBias(epilogue)) {
      int32_t biasType = cudaType(biasDtype);
      int64_t biasStride = 0; // one bias for every batch
      MPCRT_LT_CHECK(lt().cublasLtMatmulDescSetAttribute(
          plan.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &biasType,
          sizeof(biasType)));
      MPCRT_LT_CHECK(lt().cublasLtMatmulDescSetAttribute(
          plan.op, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, &biasStride,
          sizeof(biasStride)));
    }
    if (aux) {
      // The heuristic reads the pointer's alignment (the key holds it).
      int64_t ld = n, stride = m * n;
      int32_t auxType = cudaType(out);
      MPCRT_LT_CHECK(lt().cublasLtMatmulDescSetAttribute(
          plan.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux,
          sizeof(aux)));
      MPCRT_LT_CHECK(lt().cublasLtMatmulDescSetAttribute(
          plan.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld, sizeof(ld)));
      MPCRT_LT_CHECK(lt().cublasLtMatmulDescSetAttribute(
          plan.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE, &auxType,
          sizeof(auxType)));
      if (batch > 1)
        MPCRT_LT_CHECK(lt().cublasLtMatmulDescSetAttribute(
            plan.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE, &stride,
            sizeof(stride)));
    }
    if (chooseAlgorithm(plan, alignA, alignB, alignC, narrow)) {
      plan.epilogue = true;
      return plan;
    }
    // No algorithm with this epilogue: the plain GEMM (then our kernel),
    // planned on fresh descriptors: the epilogue's bias and auxiliary
    // attributes left on these make the heuristic find nothing at all.
    destroyDescriptors(plan);
    return makePlan(in, out, aStride, bStride, batch, m, n, k, transA, transB,
                    alignA, alignB, alignC, CUBLASLT_EPILOGUE_DEFAULT,
                    biasDtype, nullptr);
  }
  if (!chooseAlgorithm(plan, alignA, alignB, alignC, narrow))
    noAlgorithm("matmul", m, n, k, batch);
  return plan;
}

cublasLtEpilogue_t epilogueOf(int32_t activation) {
  switch (activation) {
  case MPCRT_RELU:
    return CUBLASLT_EPILOGUE_RELU_BIAS;
  case MPCRT_GELU_TANH:
    return CUBLASLT_EPILOGUE_GELU_BIAS;
  default:
    return CUBLASLT_EPILOGUE_BIAS;
  }
}

/// Takes the fastest of plan.candidates on this call's operands (each run
/// once, then kTimings times under CUDA events, the least time kept; one
/// that fails is dropped) as plan.algo, and names it on stderr. The timed
/// results go to a buffer of their own (D of `bytes`), so that the runs
/// neither add to an in-place sum again nor overwrite what another operand
/// may share with `c`; where that buffer cannot be had, to `c` itself,
/// unless the product adds to `c` in place (`inPlace`: then the heuristic's
/// first stays, untimed). `bytes` < 0: to `c` itself (a strided product,
/// whose D is the layout's matrices or a table of their addresses; it reads
/// no C and shares nothing with its operands). `run(algo, d)` runs the
/// product with D = d.
template <typename Run>
void measure(Plan &plan, int64_t bytes, bool inPlace, void *c, Run run,
             int64_t batch, int64_t m, int64_t n, int64_t k) {
  if (plan.candidates.size() < 2)
    return;
  void *d = c;
  if (bytes >= 0 && cudaMalloc(&d, size_t(bytes)) != cudaSuccess) {
    (void)cudaGetLastError();
    if (inPlace)
      return;
    d = c;
  }
  float best = std::numeric_limits<float>::infinity(), first = best;
  size_t chosen = 0, timed = 0;
  for (size_t i = 0; i < plan.candidates.size(); ++i) {
    if (run(plan.candidates[i], d) != CUBLAS_STATUS_SUCCESS)
      continue;
    float least = leastMilliseconds(stream(), kTimings,
                                    [&] { (void)run(plan.candidates[i], d); });
    ++timed;
    if (i == 0)
      first = least;
    if (least < best) {
      best = least;
      chosen = i;
    }
  }
  if (d != c)
    MPCRT_CUDA_CHECK(cudaFree(d));
  if (timed == 0)
    return; // the run proper says why
  plan.algo = plan.candidates[chosen];
  char firstTime[32] = "failed";
  if (first != std::numeric_limits<float>::infinity())
    std::snprintf(firstTime, sizeof(firstTime), "%.4f ms", first);
  std::fprintf(stderr,
               "mpc: cuBLASLt %lldx%lldx%lld product (batch %lld): timed %zu "
               "of %zu candidates, the heuristic's #%zu in %.4f ms (its first: "
               "%s)\n",
               static_cast<long long>(m), static_cast<long long>(n),
               static_cast<long long>(k), static_cast<long long>(batch), timed,
               plan.candidates.size(), chosen + 1, best, firstTime);
}

/// One cuBLASLt GEMM, C = op(A) op(B), with `epilogue` (DEFAULT: none)
/// whose bias vector, or bias-gradient output, is `bias` of type
/// `biasType`, and whose auxiliary matrix (C's type and layout: the
/// pre-activation GELU_AUX_BIAS writes, the one DGELU reads) is `aux`.
/// With `addend` (C's shape and type, possibly C itself), C = op(A) op(B) +
/// addend: cuBLASLt's C matrix with beta = 1. False where cuBLASLt has no
/// algorithm for the epilogue: the plain GEMM ran (unless `plainWithout`
/// is false: then nothing did), and the caller applies the epilogue itself.
bool gemm(mpcrt_dtype in, mpcrt_dtype out, const void *a, int64_t aBatchStride,
          const void *b, int64_t bBatchStride, void *c, int64_t batch,
          int64_t m, int64_t n, int64_t k, bool transA, bool transB,
          cublasLtEpilogue_t epilogue, const void *bias, mpcrt_dtype biasType,
          const void *aux = nullptr, const void *addend = nullptr,
          bool plainWithout = true) {
  Context &ctx = context();
  // C (the addend) and D (the result) share a layout; the plan assumes
  // the alignment of both.
  uint32_t alignA = alignmentOf(a), alignB = alignmentOf(b),
           alignC =
               std::min(alignmentOf(c), addend ? alignmentOf(addend) : 256u),
           alignAux = aux ? alignmentOf(aux) : 0;
  int biasKey = usesBias(epilogue) ? int(biasType) : -1;
  Key key{in,     out,      aBatchStride,  bBatchStride, batch,  m,
          n,      k,        transA,        transB,       alignA, alignB,
          alignC, alignAux, int(epilogue), biasKey};
  float one = 1.0f, zeroF = 0.0f;
  double oneD = 1.0, zeroD = 0.0;
  bool f64 = in == MPCRT_F64;
  // The plan's bias pointer is set per call: the lock covers the launch.
  std::lock_guard<std::mutex> lock(ctx.mutex);
  auto it = ctx.plans.find(key);
  if (it == ctx.plans.end())
    it = ctx.plans
             .emplace(key, makePlan(in, out, aBatchStride, bBatchStride, batch,
                                    m, n, k, transA, transB, alignA, alignB,
                                    alignC, epilogue, biasType, aux))
             .first;
  Plan &plan = it->second;
  if (epilogue != CUBLASLT_EPILOGUE_DEFAULT && !plan.epilogue && !plainWithout)
    return false;
  if (plan.epilogue && usesBias(epilogue))
    MPCRT_LT_CHECK(lt().cublasLtMatmulDescSetAttribute(
        plan.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
  if (plan.epilogue && aux)
    MPCRT_LT_CHECK(lt().cublasLtMatmulDescSetAttribute(
        plan.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux, sizeof(aux)));
  const void *beta = addend
                         ? (f64 ? static_cast<const void *>(&oneD) : &one)
                         : (f64 ? static_cast<const void *>(&zeroD) : &zeroF);
  auto run = [&](const cublasLtMatmulAlgo_t &algo, void *d) {
    return lt().cublasLtMatmul(
        ctx.handle, plan.op, f64 ? static_cast<const void *>(&oneD) : &one, b,
        plan.a, a, plan.b, beta, addend ? addend : c, plan.c, d, plan.c, &algo,
        ctx.workspace, kWorkspaceBytes, stream());
  };
  if (measuring() && !plan.timed && !capturingGraph()) {
    plan.timed = true;
    measure(plan, batch * m * n * int64_t(bytesOf(out)), addend == c, c, run,
            batch, m, n, k);
  }
  MPCRT_LT_CHECK(run(plan.algo, c));
  markOp("matmul");
  return epilogue == CUBLASLT_EPILOGUE_DEFAULT || plan.epilogue;
}

bool narrow(mpcrt_dtype dtype) {
  return dtype == MPCRT_F16 || dtype == MPCRT_BF16;
}

/// op(A) op(B) of f16/bf16 operands in f32 scratch: where cuBLASLt has no
/// algorithm for an epilogue, our kernel then rounds the result once, as
/// the epilogue would (rounding the product to f16/bf16 first and again
/// after the epilogue would be two roundings).
const float *productInScratch(mpcrt_dtype in, const void *a,
                              int64_t aBatchStride, const void *b,
                              int64_t bBatchStride, int64_t batch, int64_t m,
                              int64_t n, int64_t k, bool transA, bool transB) {
  float *product = scratchF32(batch * m * n);
  matmulTo(in, MPCRT_F32, a, aBatchStride, b, bBatchStride, product, batch, m,
           n, k, transA, transB);
  return product;
}

/// setHeadProductsLoop's choice: -1 (none: the environment's), 0 or 1.
int headProductsChoice = -1;

/// MPC_CUDA_HEAD_PRODUCTS: how a product of matrices not one stride apart
/// (mpcrt_strided_matmul's two-dimensional batch) runs: `pointers` (unset
/// or empty: one cuBLASLt call in its pointer-array batch mode, where the
/// heuristic has an algorithm for it) or `loop` (a strided-batch call per
/// index of the smaller batch dimension); read once.
bool headProductsLoop() {
  static const bool loop = environmentChoice(
      "MPC_CUDA_HEAD_PRODUCTS", "pointers",
      "one cuBLASLt call with arrays of the matrices' addresses", "loop",
      "a strided-batch call per index of the smaller batch dimension");
  return headProductsChoice < 0 ? loop : headProductsChoice == 1;
}

/// A strided product's plan: dtype, leading dimensions (A, B, C), batch,
/// batch strides (A, B, C; unused with pointer arrays), pointer arrays, m,
/// n, k, transposes, alignments (A, B, C).
using StridedKey = std::tuple<int, int64_t, int64_t, int64_t, int64_t, int64_t,
                              int64_t, int64_t, bool, int64_t, int64_t, int64_t,
                              bool, bool, uint32_t, uint32_t, uint32_t>;

/// The arrays of matrix addresses of a pointer-array product, in device
/// memory: cuBLASLt's A (our B), its B (our A), then C (also D).
using TableKey =
    std::tuple<const void *, const void *, const void *, int64_t, int64_t,
               int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int>;

struct StridedContext {
  std::map<StridedKey, std::unique_ptr<Plan>> plans; // null: no algorithm
  std::map<TableKey, const void **> tables;
  std::mutex mutex;
};

StridedContext &stridedContext() {
  static StridedContext *ctx = new StridedContext(); // lives with the process
  return *ctx;
}

/// One of the strided product's matrices as cuBLASLt reads it.
struct Operand {
  const void *base;
  const int64_t *strides; // [outer, inner, row]
};

/// The largest power of two up to 256 dividing every matrix's address of
/// `x` (its base, and its batch strides in bytes where they are used).
uint32_t alignmentOf(Operand x, int64_t outer, int64_t inner,
                     int64_t elementBytes) {
  uint32_t align = alignmentOf(x.base);
  auto of = [&](int64_t stride) {
    return alignmentOf(reinterpret_cast<const void *>(
        static_cast<uintptr_t>(stride * elementBytes)));
  };
  if (outer > 1)
    align = std::min(align, of(x.strides[0]));
  if (inner > 1)
    align = std::min(align, of(x.strides[1]));
  return align;
}

/// The plan of a product of `batch` matrices, strided (strides A, B, C) or
/// through pointer arrays; null where the heuristic has no algorithm.
Plan *stridedPlan(mpcrt_dtype dtype, const int64_t ld[3], int64_t batch,
                  const int64_t stride[3], bool pointers, int64_t m, int64_t n,
                  int64_t k, bool transA, bool transB,
                  const uint32_t align[3]) {
  StridedContext &ctx = stridedContext();
  StridedKey key{dtype,     ld[0],     ld[1],    ld[2],    batch,   stride[0],
                 stride[1], stride[2], pointers, m,        n,       k,
                 transA,    transB,    align[0], align[1], align[2]};
  auto it = ctx.plans.find(key);
  if (it != ctx.plans.end())
    return it->second.get();
  auto plan = std::make_unique<Plan>();
  plan->op = productDesc(dtype, transA, transB);
  cudaDataType type = cudaType(dtype);
  // cuBLASLt's A is our B, its B our A (see the file comment): row-major
  // rows x cols with rows `ld` apart is column-major cols x rows.
  plan->a = layout(type, transB ? k : n, transB ? n : k, batch, stride[1],
                   ld[1], pointers);
  plan->b = layout(type, transA ? m : k, transA ? k : m, batch, stride[0],
                   ld[0], pointers);
  plan->c = layout(type, n, m, batch, stride[2], ld[2], pointers);
  bool narrowOut = dtype == MPCRT_F16 || dtype == MPCRT_BF16;
  if (!chooseAlgorithm(*plan, align[0], align[1], align[2], narrowOut)) {
    destroyDescriptors(*plan);
    plan.reset();
  }
  return ctx.plans.emplace(key, std::move(plan)).first->second.get();
}

/// Drops a pointer-array plan that cuBLASLt refused when called (`status`),
/// so that stridedPlan answers null for it from now on (the products of
/// its key take the loop of strided batches), and says so on stderr.
void refusedPointerArrays(Plan *plan, cublasStatus_t status, int64_t m,
                          int64_t n, int64_t k, int64_t batch) {
  StridedContext &ctx = stridedContext();
  for (auto &[key, held] : ctx.plans)
    if (held.get() == plan) {
      destroyDescriptors(*held);
      held.reset();
    }
  std::fprintf(stderr,
               "mpc: cuBLASLt refused the %lldx%lldx%lld product through "
               "pointer arrays (batch %lld): %s; it runs as strided batches, "
               "a call per index of the smaller batch dimension\n",
               static_cast<long long>(m), static_cast<long long>(n),
               static_cast<long long>(k), static_cast<long long>(batch),
               lt().cublasLtGetStatusString(status));
}

/// Where the arrays of a product of `count` matrices lie apart, in
/// pointers: each starts 256 bytes aligned, as cudaMalloc's memory does.
int64_t tableStride(int64_t count) { return (count + 31) / 32 * 32; }

/// The device arrays of the product's matrix addresses (see TableKey),
/// made on the first call outside a graph capture (a capture cannot copy
/// them from the host); null during a capture that meets a new product.
const void **pointerTables(const Operand ops[3], int64_t outer, int64_t inner,
                           mpcrt_dtype dtype) {
  StridedContext &ctx = stridedContext();
  TableKey key{ops[0].base,
               ops[1].base,
               ops[2].base,
               ops[0].strides[0],
               ops[0].strides[1],
               ops[1].strides[0],
               ops[1].strides[1],
               ops[2].strides[0],
               ops[2].strides[1],
               outer,
               inner,
               dtype};
  auto it = ctx.tables.find(key);
  if (it != ctx.tables.end())
    return it->second;
  if (capturingGraph())
    return nullptr;
  int64_t count = outer * inner, bytes = bytesOf(dtype);
  int64_t apart = tableStride(count);
  std::vector<const void *> host(3 * apart);
  // cuBLASLt's A (our B), B (our A), then C.
  const Operand *order[3] = {&ops[1], &ops[0], &ops[2]};
  for (int t = 0; t < 3; ++t)
    for (int64_t p = 0; p < outer; ++p)
      for (int64_t q = 0; q < inner; ++q)
        host[t * apart + p * inner + q] =
            static_cast<const char *>(order[t]->base) +
            (p * order[t]->strides[0] + q * order[t]->strides[1]) * bytes;
  const void **device = nullptr;
  size_t size = host.size() * sizeof(void *);
  MPCRT_CUDA_CHECK(cudaMalloc(reinterpret_cast<void **>(&device), size));
  countDeviceBytes(int64_t(size));
  MPCRT_CUDA_CHECK(
      cudaMemcpy(device, host.data(), size, cudaMemcpyHostToDevice));
  ctx.tables.emplace(key, device);
  return device;
}

} // namespace

bool setHeadProductsLoop(bool loop) {
  bool before = headProductsLoop();
  headProductsChoice = loop ? 1 : 0;
  return before;
}

void stridedMatmul(mpcrt_dtype dtype, const void *a, const int64_t *aStrides,
                   const void *b, const int64_t *bStrides, void *c,
                   const int64_t *cStrides, int64_t outer, int64_t inner,
                   int64_t m, int64_t n, int64_t k, bool transA, bool transB) {
  if (m == 0 || n == 0 || outer == 0 || inner == 0)
    return;
  int64_t bytes = bytesOf(dtype);
  const Operand ops[3] = {{a, aStrides}, {b, bStrides}, {c, cStrides}};
  const int64_t ld[3] = {aStrides[2], bStrides[2], cStrides[2]};
  if (k == 0) {
    // Zeros: all of C where its matrices tile it (stored in order or
    // heads-second); otherwise (rows wider than the matrices: a window of
    // a packed tensor) zeros scattered into the matrices' rows.
    const int64_t *s = cStrides;
    int64_t count = outer * inner * m * n;
    bool tiles = (s[2] == n && s[1] == m * n && s[0] == inner * m * n) ||
                 (s[1] == n && s[2] == inner * n && s[0] == m * inner * n);
    if (tiles) {
      zero(c, count * bytes);
      return;
    }
    float *zeros = scratchF32((count * bytes + 3) / 4);
    zero(zeros, count * bytes);
    const int64_t shape[4] = {outer, inner, m, n},
                  strides[4] = {s[0], s[1], s[2], 1};
    stridedScatter(zeros, c, 0, strides, shape, 4, int32_t(bytes));
    return;
  }
  uint32_t align[3];
  for (int i = 0; i < 3; ++i)
    align[i] = alignmentOf(ops[i], outer, inner, bytes);
  float one = 1.0f, zeroF = 0.0f;
  double oneD = 1.0, zeroD = 0.0;
  bool f64 = dtype == MPCRT_F64;
  const void *alpha = f64 ? static_cast<const void *>(&oneD) : &one;
  const void *beta = f64 ? static_cast<const void *>(&zeroD) : &zeroF;
  Context &ltContext = context();
  auto launch = [&](const Plan &plan, const cublasLtMatmulAlgo_t &algo,
                    const void *cublasA, const void *cublasB, void *cd) {
    return lt().cublasLtMatmul(ltContext.handle, plan.op, alpha, cublasA,
                               plan.a, cublasB, plan.b, beta, cd, plan.c, cd,
                               plan.c, &algo, ltContext.workspace,
                               kWorkspaceBytes, stream());
  };
  // With MPC_CUBLASLT_ALGORITHMS=measure, a plan's candidates are timed on
  // its first call outside a capture (one call of the loop's), written
  // into C.
  auto run = [&](Plan &plan, const void *cublasA, const void *cublasB, void *cd,
                 int64_t batch) {
    if (measuring() && !plan.timed && !capturingGraph()) {
      plan.timed = true;
      measure(
          plan, -1, false, cd,
          [&](const cublasLtMatmulAlgo_t &algo, void *d) {
            return launch(plan, algo, cublasA, cublasB, d);
          },
          batch, m, n, k);
    }
    return launch(plan, plan.algo, cublasA, cublasB, cd);
  };
  StridedContext &ctx = stridedContext();
  std::lock_guard<std::mutex> lock(ctx.mutex);
  std::lock_guard<std::mutex> ltLock(ltContext.mutex);
  // One stride apart after all (the heads' product of one batch or one
  // head, or matrices stored in order): one strided batch.
  auto collapses = [&](int64_t (&stride)[3]) {
    for (int i = 0; i < 3; ++i) {
      const int64_t *x = ops[i].strides;
      if (outer == 1)
        stride[i] = x[1];
      else if (inner == 1)
        stride[i] = x[0];
      else if (x[0] == inner * x[1])
        stride[i] = x[1];
      else
        return false;
    }
    return true;
  };
  int64_t strides[3];
  if (collapses(strides)) {
    Plan *plan = stridedPlan(dtype, ld, outer * inner, strides, false, m, n, k,
                             transA, transB, align);
    if (!plan)
      noAlgorithm("strided matmul", m, n, k, outer * inner);
    MPCRT_LT_CHECK(run(*plan, b, a, c, outer * inner));
    markOp("matmul");
    return;
  }
  if (!headProductsLoop()) {
    const int64_t none[3] = {0, 0, 0};
    Plan *plan = stridedPlan(dtype, ld, outer * inner, none, true, m, n, k,
                             transA, transB, align);
    const void **tables =
        plan ? pointerTables(ops, outer, inner, dtype) : nullptr;
    if (tables) {
      int64_t apart = tableStride(outer * inner);
      cublasStatus_t status =
          run(*plan, tables, tables + apart,
              const_cast<void **>(tables + 2 * apart), outer * inner);
      if (status == CUBLAS_STATUS_SUCCESS || capturingGraph()) {
        MPCRT_LT_CHECK(status);
        markOp("matmul");
        return;
      }
      // Offered by the heuristic but refused when called (a plan's first
      // call is outside a capture: its tables are made there): the plan
      // is dropped and the product, and every later one of its plan, runs
      // as the loop below.
      refusedPointerArrays(plan, status, m, n, k, outer * inner);
    }
  }
  // A strided batch along one dimension, a call per index of the other
  // (the fewer calls).
  bool alongInner = inner >= outer;
  int64_t calls = alongInner ? outer : inner,
          batch = alongInner ? inner : outer;
  for (int i = 0; i < 3; ++i)
    strides[i] = ops[i].strides[alongInner ? 1 : 0];
  Plan *plan = stridedPlan(dtype, ld, batch, strides, false, m, n, k, transA,
                           transB, align);
  if (!plan)
    noAlgorithm("strided matmul", m, n, k, batch);
  for (int64_t i = 0; i < calls; ++i) {
    auto at = [&](const Operand &x) {
      return static_cast<const char *>(x.base) +
             i * x.strides[alongInner ? 0 : 1] * bytes;
    };
    MPCRT_LT_CHECK(run(*plan, at(ops[1]), at(ops[0]),
                       const_cast<char *>(at(ops[2])), batch));
  }
  markOp("matmul");
}

void matmulTo(mpcrt_dtype in, mpcrt_dtype out, const void *a,
              int64_t aBatchStride, const void *b, int64_t bBatchStride,
              void *c, int64_t batch, int64_t m, int64_t n, int64_t k,
              bool transA, bool transB) {
  if (m == 0 || n == 0 || batch == 0)
    return;
  if (k == 0)
    return zero(c, batch * m * n * bytesOf(out));
  gemm(in, out, a, aBatchStride, b, bBatchStride, c, batch, m, n, k, transA,
       transB, CUBLASLT_EPILOGUE_DEFAULT, nullptr, out);
}

void matmul(mpcrt_dtype dtype, const void *a, int64_t aBatchStride,
            const void *b, int64_t bBatchStride, void *c, int64_t batch,
            int64_t m, int64_t n, int64_t k, bool transA, bool transB) {
  matmulTo(dtype, dtype, a, aBatchStride, b, bBatchStride, c, batch, m, n, k,
           transA, transB);
}

void fusedMatmul(mpcrt_dtype in, mpcrt_dtype out, const void *a,
                 int64_t aBatchStride, const void *b, int64_t bBatchStride,
                 const void *bias, void *c, void *pre, int64_t batch, int64_t m,
                 int64_t n, int64_t k, bool transA, bool transB,
                 int32_t activation) {
  if (m == 0 || n == 0 || batch == 0)
    return;
  if (k == 0) {
    zero(c, batch * m * n * bytesOf(out));
    return biasActivation(out, c, bias, pre, batch * m, n, activation);
  }
  // With the pre-activation: GELU_AUX_BIAS writes it. ReLU's auxiliary
  // output is a bit mask, so a ReLU that keeps it has the BIAS epilogue
  // write the pre-activation (one rounding, as unfused) and takes its ReLU
  // (exact on the rounded value).
  bool once = narrow(out); // the fallback rounds the f32 product once
  auto product = [&] {
    return productInScratch(in, a, aBatchStride, b, bBatchStride, batch, m, n,
                            k, transA, transB);
  };
  if (pre && activation != MPCRT_GELU_TANH) {
    if (!gemm(in, out, a, aBatchStride, b, bBatchStride, pre, batch, m, n, k,
              transA, transB, CUBLASLT_EPILOGUE_BIAS, bias, out, nullptr,
              nullptr, !once))
      biasActivation(out, pre, bias, nullptr, batch * m, n,
                     MPCRT_ACTIVATION_NONE, once ? product() : nullptr);
    if (activation == MPCRT_RELU)
      return unary(out, MPCRT_RELU, pre, c, batch * m * n);
    return copy(c, pre, batch * m * n * bytesOf(out));
  }
  cublasLtEpilogue_t epilogue = epilogueOf(activation);
  if (pre)
    epilogue = CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
  if (!gemm(in, out, a, aBatchStride, b, bBatchStride, c, batch, m, n, k,
            transA, transB, epilogue, bias, out, pre, nullptr, !once))
    biasActivation(out, c, bias, pre, batch * m, n, activation,
                   once ? product() : nullptr);
}

void matmulAdd(mpcrt_dtype in, mpcrt_dtype out, const void *a,
               int64_t aBatchStride, const void *b, int64_t bBatchStride,
               const void *addend, void *c, int64_t batch, int64_t m, int64_t n,
               int64_t k, bool transA, bool transB) {
  if (m == 0 || n == 0 || batch == 0)
    return;
  int64_t bytes = batch * m * n * bytesOf(out);
  if (k == 0) { // the empty product: C is the addend
    if (addend != c)
      copy(c, addend, bytes);
    return;
  }
  gemm(in, out, a, aBatchStride, b, bBatchStride, c, batch, m, n, k, transA,
       transB, CUBLASLT_EPILOGUE_DEFAULT, nullptr, out, nullptr, addend);
}

void matmulActivationGrad(mpcrt_dtype in, mpcrt_dtype out, const void *a,
                          int64_t aBatchStride, const void *b,
                          int64_t bBatchStride, const void *saved, void *c,
                          int64_t batch, int64_t m, int64_t n, int64_t k,
                          bool transA, bool transB, int32_t activation) {
  if (m == 0 || n == 0 || batch == 0)
    return;
  int64_t count = batch * m * n;
  auto op = static_cast<mpcrt_unary_op>(activation);
  if (k == 0) { // a zero product, times the derivative (NaN stays NaN)
    zero(c, count * bytesOf(out));
    return unaryGrad(out, op, c, saved, c, count);
  }
  cublasLtEpilogue_t epilogue = activation == MPCRT_GELU_TANH
                                    ? CUBLASLT_EPILOGUE_DGELU
                                    : CUBLASLT_EPILOGUE_DEFAULT;
  // ReLU's derivative (0 or 1) is exact on the rounded product; GELU's
  // fallback rounds the f32 product times the derivative once.
  bool once = narrow(out) && epilogue != CUBLASLT_EPILOGUE_DEFAULT;
  bool done = gemm(in, out, a, aBatchStride, b, bBatchStride, c, batch, m, n, k,
                   transA, transB, epilogue, nullptr, out,
                   epilogue == CUBLASLT_EPILOGUE_DEFAULT ? nullptr : saved,
                   nullptr, !once);
  if (!done && once)
    unaryGradOfProduct(out, op,
                       productInScratch(in, a, aBatchStride, b, bBatchStride,
                                        batch, m, n, k, transA, transB),
                       saved, c, count);
  else if (!done || epilogue == CUBLASLT_EPILOGUE_DEFAULT)
    unaryGrad(out, op, c, saved, c, count);
}

void matmulBiasGrad(mpcrt_dtype in, mpcrt_dtype out, mpcrt_dtype grad,
                    const void *a, const void *b, const void *addend, void *c,
                    const void *biasAddend, void *biasGrad, int64_t m,
                    int64_t n, int64_t k, bool transA, bool sumsOfA) {
  if (sumsOfA && !transA) {
    mpcrt::errors::reportError("CUDA backend: mpcrt_matmul_bias_grad: the "
                               "sums of A need A transposed ([k, m])\n");
    std::exit(1);
  }
  // The summed operand: B's n columns, or A's m ([k, m]).
  const void *summed = sumsOfA ? a : b;
  int64_t sums = sumsOfA ? m : n;
  if (sums == 0)
    return;
  if (addend) {
    // A gradient accumulator: the GEMM sums into it (C with beta = 1, in
    // place where it is C).
    matmulAdd(in, out, a, 0, b, 0, addend, c, 1, m, n, k, transA, false);
  } else if (m == 0 || n == 0 || k == 0) {
    zero(c, m * n * bytesOf(in));
  } else if (grad == in && !biasAddend && !sumsOfA) {
    // Our B is cuBLASLt's A (see the file comment): its sums over k are
    // BGRADA's, a vector over D's rows (our columns). cuBLASLt writes them
    // only in D's type (cublasLt.h: other bias types are for integer and
    // fp8 kernels), so the f32 sums of an f16/bf16 product are the column
    // reduction's, and so are sums added to a bias addend. Sums of our A
    // (cuBLASLt's B, BGRADB's) are always the column reduction's.
    if (gemm(in, in, a, 0, b, 0, c, 1, m, n, k, transA, false,
             CUBLASLT_EPILOGUE_BGRADA, biasGrad, grad))
      return;
  } else {
    gemm(in, in, a, 0, b, 0, c, 1, m, n, k, transA, false,
         CUBLASLT_EPILOGUE_DEFAULT, nullptr, in);
  }
  columnSums(in, grad, summed, biasGrad, k, sums, biasAddend);
}

} // namespace mpcrt::cuda
