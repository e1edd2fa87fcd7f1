//===- Kernels.h - the CUDA backend's entry points, in C++ ------*- C++ -*-===//
//
// What libmpcrt-cuda implements, under C++ names so that a test can link it
// beside the CPU reference (whose C names it would otherwise clash with):
// Abi.cpp maps the mpcrt_* C ABI of include/mpc/Runtime/mpcrt.h onto these.
// Every pointer is a device pointer unless its comment says "host";
// every call is enqueued on the backend's stream (stream()) and returns
// without waiting: scalars such as the loss scale, found_inf, the learning
// rate and step counters stay on the device.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_LIB_RUNTIME_CUDA_KERNELS_H
#define MPC_LIB_RUNTIME_CUDA_KERNELS_H

#include "../Formulas.h"
#include "mpc/Runtime/mpcrt.h"

#include <cstdint>
#include <string>

typedef struct CUstream_st *cudaStream_t;

namespace mpcrt::cuda {

/// Bytes of one element of a float dtype.
inline int64_t bytesOf(mpcrt_dtype dtype) {
  return dtype == MPCRT_F64 ? 8 : dtype == MPCRT_F32 ? 4 : 2;
}

/// Loads cuBLASLt and cuDNN (once; see Libraries.h): called before the
/// first CUDA call, so that a missing library is what gets reported.
void initialize();
/// Whether a CUDA device can be used; if not, `why` says why.
bool deviceAvailable(std::string *why);
/// The stream every entry point enqueues on (created on first use); ask
/// for it right before enqueueing (with MPC_CUDA_OP_TIMES, markOp).
cudaStream_t stream();
/// Waits for the stream; exits with a message on an asynchronous error.
void synchronize();
/// With MPC_CUDA_OP_TIMES=FILE in the environment: records an event after
/// the work an entry point `name` enqueued (stream() records one before
/// it, the first time a call asks for the stream), so that the time
/// between the two is the device time of the entry point's work (kernels,
/// library calls, copies), and the time from the previous mark to the
/// begin the device's idle time before it (waiting for the host),
/// written to FILE as one JSON line per call, in order, each time results
/// are read (mpcrt_download). Steps must run eagerly (--no-graph): a
/// capture is then an error. Nothing without the variable.
void markOp(const char *name);

/// An f32 scratch buffer of at least `elements` (one per process, grown
/// as needed; the first step runs before a graph is captured).
float *scratchF32(int64_t elements);
/// At least `count` counters, each 0 (one set per process, grown as
/// scratchF32): how many blocks of a tile (a column reduction's,
/// Columns.cuh) or of a row (a row reduction's segments) have stored their
/// partials; the last block to arrive sets its counter back to 0.
unsigned *arrivalCounters(int64_t count);
/// Which of two values the environment variable `variable` holds: false
/// for `first` (also unset or empty: the default), true for `second`.
/// Another value stops the program with an error that says what each
/// means (`firstMeans`, `secondMeans`).
bool environmentChoice(const char *variable, const char *first,
                       const char *firstMeans, const char *second,
                       const char *secondMeans);

// Device memory for the runner and the tests.
/// Every byte of device memory the backend holds: buffers, the cuBLASLt
/// and cuDNN workspaces, scratch (what PyTorch's max_memory_allocated
/// counts of its own); countDeviceBytes adds or removes some.
int64_t deviceBytes();
void countDeviceBytes(int64_t delta);
void *allocate(int64_t bytes);
void release(void *pointer);
void copyToDevice(void *device, const void *host, int64_t bytes);
void copyToHost(void *host, const void *device, int64_t bytes);
/// mpcrt_upload_input and mpcrt_inputs_ready: per input buffer, two pinned
/// host buffers (alternating: the one a pending copy reads is waited for
/// before it is refilled), a staging buffer the copy stream fills, and
/// events ordering each copy after the staged bytes were taken.
void uploadInput(void *device, const void *host, int64_t bytes);
void inputsReady();
/// mpcrt_gather_rows (`rows` a host array: passed to the kernel by value,
/// 64 rows a launch) and mpcrt_free_bytes.
void gatherRows(const void *src, mpcrt_dtype from, void *dst, mpcrt_dtype to,
                int64_t rowElements, const int64_t *rows, int64_t count,
                int32_t rawBytes);
int64_t freeBytes();

// Step graphs: stream capture into a CUDA Graph per slot (one per entry
// function, 0 to MPCRT_GRAPH_SLOTS-1), instantiated once. While capturing,
// a failing call (CUDA, cuBLASLt, cuDNN) fails the capture, not the
// program: graphEnd then discards it, warns once, clears the error and
// returns false, and the caller runs that entry eagerly.
void graphBegin();
bool graphEnd(int slot = 0);
void graphLaunch(int slot = 0);
/// Whether graphEnd makes the dependencies between a step graph's kernels
/// programmatic (Programmatic Dependent Launch, sm_90 and later): an edge
/// from any kernel node to a node of one of the backend's own kernels,
/// whose prologue (MPCRT_KERNEL_PROLOGUE, Device.cuh) waits for the grids
/// before it, so that its launch and its blocks' scheduling overlap the
/// kernel before it. Off by default; MPC_CUDA_PDL=on turns it on, read at
/// the first graphEnd unless set here; returns the setting before (tests).
/// The emulation's graphs are lists of work without edges: nothing to
/// change there.
bool setProgrammaticEdges(bool on);
/// The dependencies the last graphEnd made programmatic, and the edges
/// between kernel nodes it found (tests, the note MPC_CUDA_PDL=on prints).
struct ProgrammaticEdges {
  int64_t made = 0, betweenKernels = 0;
  /// Why the runtime refused to make one (the conversion stops there and
  /// keeps that edge as it was), or null.
  const char *refusal = nullptr;
};
ProgrammaticEdges lastProgrammaticEdges();
/// Frees a buffer replaced by a larger one, unless a recorded graph may
/// address it (then it is kept to the end of the process); returns whether
/// it was freed.
bool releaseGrown(void *pointer);
/// During a capture: records `what` as the reason it failed and returns
/// true (the caller goes on); otherwise returns false.
bool captureFailure(const std::string &what);
/// Whether a step graph is being captured (work is recorded, not run).
bool capturingGraph();

// Support (mpcrt_copy, mpcrt_zero, mpcrt_fill, mpcrt_fill_random, mpcrt_cast,
// mpcrt_increment_step, mpcrt_increment_i32, mpcrt_lr_schedule).
void copy(void *dst, const void *src, int64_t bytes);
void zero(void *dst, int64_t bytes);
void fill(mpcrt_dtype dtype, void *dst, int64_t count, double value);
void fillRandom(mpcrt_dtype dtype, void *dst, int64_t count, bool normal,
                double a, double b, uint64_t seed);
void cast(mpcrt_dtype from, const void *input, mpcrt_dtype to, void *output,
          int64_t count);
// mpcrt_cast_i32: each integer to f32 (nearest even), then to `to`.
void castI32(const int32_t *input, mpcrt_dtype to, void *output, int64_t count);
void incrementStep(int64_t *step);
void incrementI32(const int32_t *in, int32_t *out, const uint8_t *skip);
/// mpcrt_lr_schedule's parameters.
struct LrSchedule {
  int32_t kind;
  double base;
  int64_t warmup, total;
  double minLr, gamma;
  int64_t stepSize;
  double pctStart, divFactor, finalDivFactor;
  bool threePhase;
};
void lrSchedule(const int32_t *step, float *lr, const LrSchedule &s);

// Loss scaling. `dtypes`, `grads`, `sizes` and `unscaled` are host arrays
// (of device pointers): one multi-tensor launch per 48 tensors.
void unscaleAndCheck(const float *scale, int64_t numTensors,
                     const mpcrt_dtype *dtypes, const void *const *grads,
                     const int64_t *sizes, float *const *unscaled,
                     uint8_t *foundInf);
void clipGradNorm(const float *scale, int64_t numTensors,
                  const mpcrt_dtype *dtypes, const void *const *grads,
                  const int64_t *sizes, double maxNorm, float *invScale,
                  float *norm, uint8_t *foundInf);
void gradStats(const float *scale, int64_t numTensors,
               const mpcrt_dtype *dtypes, const void *const *grads,
               const int64_t *sizes, int64_t *stats);
void updateLossScale(float *scale, int32_t *growthTracker,
                     int32_t *hysteresisTracker, const uint8_t *foundInf,
                     double growthFactor, double backoffFactor,
                     int64_t growthInterval, int64_t hysteresis,
                     double minScale, double maxScale);

// Master-weight updates: param (type p) and its state updated in place from
// the gradient (type g), unscaled by *invScale when given, nothing changed
// when *foundInf is set; the copy (copyDtype) is written either way.
void sgdUpdate(mpcrt_dtype p, mpcrt_dtype g, void *param, const void *grad,
               const float *lr, void *momentumBuffer, const uint8_t *foundInf,
               const float *invScale, mpcrt_dtype copyDtype, void *copy,
               int64_t count, double momentum, double dampening, bool nesterov,
               double weightDecay);
void adamUpdate(mpcrt_dtype p, mpcrt_dtype g, void *param, const void *grad,
                void *expAvg, void *expAvgSq, const float *lr,
                const int32_t *step, const uint8_t *foundInf,
                const float *invScale, mpcrt_dtype copyDtype, void *copy,
                int64_t count, double beta1, double beta2, double eps,
                double weightDecay, bool decoupled, bool biasCorrection,
                bool lamb = false);
// mpcrt_sgd_update_multi: sgdUpdate of every tensor, one launch per type
// pair and per 36 tensors; each element's arithmetic is sgdUpdate's.
void sgdUpdateMulti(int64_t numTensors, const mpcrt_dtype *paramDtypes,
                    const mpcrt_dtype *gradDtypes, void *const *params,
                    const void *const *grads, void *const *momentumBuffers,
                    const mpcrt_dtype *copyDtypes, void *const *copies,
                    const int64_t *sizes, const float *lr,
                    const uint8_t *foundInf, const float *invScale,
                    double momentum, double dampening, bool nesterov,
                    double weightDecay);
// mpcrt_adam_update_multi: adamUpdate of every tensor, one launch per type
// pair and per 36 tensors (LAMB: three, its norms summed per 4096-element
// chunk); each element's arithmetic is adamUpdate's.
void adamUpdateMulti(int64_t numTensors, const mpcrt_dtype *paramDtypes,
                     const mpcrt_dtype *gradDtypes, void *const *params,
                     const void *const *grads, void *const *expAvgs,
                     void *const *expAvgSqs, const mpcrt_dtype *copyDtypes,
                     void *const *copies, const int64_t *sizes, const float *lr,
                     const int32_t *step, const uint8_t *foundInf,
                     const float *invScale, double beta1, double beta2,
                     double eps, double weightDecay, bool decoupled,
                     bool biasCorrection, bool lamb = false);

// Elementwise ops, reductions, softmax, losses and layer norm (mpcrt_binary_*,
// mpcrt_unary_*, ...), by runtime dtype. Strides and shapes are host arrays.
/// mpcrt_compare and mpcrt_where (their ABI's arguments).
void compare(int32_t predicate, int32_t element, const void *lhs,
             const int64_t *lhsStrides, const void *rhs,
             const int64_t *rhsStrides, uint8_t *out, const int64_t *shape,
             int32_t rank);
void where(int32_t bytes, const uint8_t *condition,
           const int64_t *conditionStrides, const void *lhs,
           const int64_t *lhsStrides, const void *rhs,
           const int64_t *rhsStrides, void *out, const int64_t *shape,
           int32_t rank);
void binary(mpcrt_dtype dtype, mpcrt_binary_op op, const void *lhs,
            const int64_t *lhsStrides, const void *rhs,
            const int64_t *rhsStrides, void *out, const int64_t *shape,
            int32_t rank);
void unary(mpcrt_dtype dtype, mpcrt_unary_op op, const void *input, void *out,
           int64_t count);
void unaryGrad(mpcrt_dtype dtype, mpcrt_unary_op op, const void *grad,
               const void *saved, void *out, int64_t count);
void reduce(mpcrt_dtype dtype, mpcrt_reduce_op op, const void *input, void *out,
            int64_t outer, int64_t reduced, int64_t inner);
void reduceMaxBackward(mpcrt_dtype dtype, const void *grad, const void *input,
                       const void *max, void *gradInput, int64_t outer,
                       int64_t reduced, int64_t inner);
/// Input and output may differ in type (f16, bf16, f32 each; mpcrt_*_mixed):
/// computed in f32, rounded once. softmax(scale * x); the gradient times
/// scale.
void softmax(mpcrt_dtype in, const void *input, mpcrt_dtype out, void *output,
             int64_t rows, int64_t cols, bool logarithm, double scale = 1);
void softmaxBackward(mpcrt_dtype gradType, const void *grad,
                     mpcrt_dtype outputType, const void *output,
                     mpcrt_dtype resultType, void *gradInput, int64_t rows,
                     int64_t cols, bool logarithm, double scale = 1);
/// mpc.softmax_dropout and its backward (the types as softmax's; `seed`
/// the rank's); the backward writes the forward's result to `dropped`
/// where not null.
void softmaxDropout(mpcrt_dtype in, const void *input, mpcrt_dtype out,
                    void *output, int64_t rows, int64_t cols, double scale,
                    double p, uint64_t seed, const int64_t *step);
void softmaxDropoutBackward(mpcrt_dtype gradType, const void *grad,
                            mpcrt_dtype inputType, const void *input,
                            mpcrt_dtype resultType, void *gradInput,
                            void *dropped, int64_t rows, int64_t cols,
                            double scale, double p, uint64_t seed,
                            const int64_t *step);
/// A row whose label is ignored adds nothing and is not counted; another
/// whose label is outside [0, classes) adds nothing (its gradient row is
/// zero) and is recorded on the device (see takeDeviceErrors). `smoothing`:
/// PyTorch's label_smoothing.
void crossEntropy(mpcrt_dtype dtype, const void *logits, const void *labels,
                  int32_t labelBits, void *loss, int64_t rows, int64_t classes,
                  bool mean, formulas::IgnoredLabel ignored = {},
                  double smoothing = 0);
/// Numerics checks (see mpcrt_numerics_* and mpcrt_check_numerics).
void numericsBegin(int32_t *first, float *amax, int64_t count);
void checkNumerics(int64_t numTensors, const mpcrt_dtype *dtypes,
                   const void *const *inputs, const int64_t *sizes,
                   const int64_t *indices, int32_t *first, float *amax,
                   int64_t *counts);
void numericsEnd(const int32_t *first, int64_t count, const int64_t *step,
                 int64_t *events, const float *amax, float *eventAmax);
/// Top-1 accuracy (see mpcrt_accuracy_*); rows < 2^31.
void accuracy(mpcrt_dtype dtype, const void *logits, const void *labels,
              int32_t labelBits, float *out, int64_t rows, int64_t classes,
              formulas::IgnoredLabel ignored = {});
void crossEntropyBackward(mpcrt_dtype dtype, const void *gradLoss,
                          const void *logits, const void *labels,
                          int32_t labelBits, void *gradLogits, int64_t rows,
                          int64_t classes, bool mean,
                          formulas::IgnoredLabel ignored = {},
                          double smoothing = 0);
/// Whether a layer norm backward over whole rows of f16 or bf16 (a warp's,
/// up to 1024 elements) takes gamma's and beta's sums in its row kernel
/// (MPC_CUDA_NORM_SUMS=rows in the environment) rather than in a column
/// reduction reading dy and x again (the default: faster on an H200);
/// returns the setting before (tests, mpc-bench-kernels).
bool setLayerNormRowSums(bool on);
/// The blocks (about) that kernel's rows are cut into, 256 by default
/// whatever the device; returns the number before (tests: several rows a
/// warp at small sizes).
int64_t setLayerNormSumBlocks(int64_t blocks);
/// The partials the column reductions' first pass aims for (chunks x
/// columns, about; 4096 x 32 by default, the cut of every reduction over
/// rows: bias and norm parameter gradients, batch-norm statistics,
/// column sums); returns the target before (mpc-bench-kernels --sweep:
/// results change in the last bits with the cut).
int64_t setColumnPartialsTarget(int64_t partials);
/// Whether a column reduction whose rows make at most 32 chunks (or
/// enough blocks at 32), and a reduction of few long rows cut into
/// segments, run as one launch, the last block of each tile or row
/// combining the partials (the default), rather than as a first pass and
/// a second launch; returns the setting before (tests,
/// mpc-bench-kernels).
bool setReductionsInOneLaunch(bool on);
/// The launches of a column reduction of `outer` [rows, cols] arrays of
/// `dtype` as planColumns cuts it: 1 or 2, 0 where the grid cannot hold
/// it (tests, mpc-bench-kernels).
int columnReductionLaunches(mpcrt_dtype dtype, int64_t outer, int64_t rows,
                            int64_t cols);
/// The accesses per thread the batch norms' elementwise kernels are
/// launched for (4 by default); returns the number before
/// (mpc-bench-kernels --sweep).
int64_t setChannelVectorsPerThread(int64_t vectors);
/// Whether a batch norm's second pass (the forward's normalisation, the
/// backward's input gradient) runs from the tensor's end, where its first
/// pass ended (true, the default) or from its start; returns the value
/// before (tests, mpc-bench-kernels: the same results either way).
bool setBatchNormSecondPassReversed(bool reversed);
/// The bytes a batch norm's second pass may read and write within L2:
/// where the tensors that pass reads again and writes (the forward's input
/// and output; the backward's input, gradient, a read ReLU output and the
/// input gradient) take more, batchNorm and batchNormBackward run both
/// passes over one group of channels, then both over the next, each
/// group's bytes within this, so that the second pass finds what it reads
/// in L2 instead of memory. 0 runs each pass over every channel at once.
/// Unset, MPC_CUDA_BN_GROUPS decides at the first batch norm: `off` (the
/// default) 0, `l2` the device's L2. Returns the value before (tests,
/// mpc-bench-kernels). Not for synchronised batch norms, whose exchange is
/// over every channel.
int64_t setBatchNormGroupBytes(int64_t bytes);
/// The groups of channels the last batchNorm or batchNormBackward ran
/// over (1: all channels at once; tests, mpc-bench-kernels).
int64_t lastBatchNormGroups();
/// mean and rstd are f32 (f64 for f64 inputs).
void layerNorm(mpcrt_dtype dtype, const void *input, mpcrt_dtype paramDtype,
               const void *gamma, const void *beta, void *output, void *mean,
               void *rstd, int64_t rows, int64_t cols, double epsilon);
void layerNormBackward(mpcrt_dtype dtype, const void *gradOutput,
                       const void *input, const void *mean, const void *rstd,
                       mpcrt_dtype paramDtype, const void *gamma,
                       void *gradInput, void *gradGamma, void *gradBeta,
                       const void *gammaAddend, const void *betaAddend,
                       int64_t rows, int64_t cols);

/// mpcrt_add_layer_norm and its backward (mpcrt.h); `step` is the device
/// step counter. The backward's gradXSums (mpcrt.h's grad_x_sums) come
/// from its parameter sums' column reduction, as a third sum, in the order
/// columnSums of gradX takes them: the same bits.
void addLayerNorm(mpcrt_dtype dtype, const void *x, const void *residual,
                  mpcrt_dtype paramDtype, const void *gamma, const void *beta,
                  void *sum, void *y, void *mean, void *rstd, int64_t rows,
                  int64_t cols, int64_t residualRows, double epsilon,
                  double dropoutP, uint64_t seed, const int64_t *step);
void addLayerNormBackward(mpcrt_dtype dtype, const void *grad,
                          const void *gradSum, const void *sum,
                          const void *mean, const void *rstd,
                          mpcrt_dtype paramDtype, const void *gamma,
                          void *gradX, void *gradResidual, void *gradGamma,
                          void *gradBeta, const void *gammaAddend,
                          const void *betaAddend, int64_t rows, int64_t cols,
                          double dropoutP, uint64_t seed, const int64_t *step,
                          void *gradXSums = nullptr);

// Data movement, embedding, dropout (mpcrt_strided_copy, ...). Strides and
// shapes are host arrays.
void stridedCopy(const void *input, int64_t offset, const int64_t *inStrides,
                 void *output, const int64_t *shape, int32_t rank,
                 int32_t bytes);
void stridedScatter(const void *input, void *output, int64_t offset,
                    const int64_t *outStrides, const int64_t *shape,
                    int32_t rank, int32_t bytes);
/// How a strided copy (or scatter) of this layout between these pointers
/// is moved through shared-memory tiles (a transpose of the innermost
/// dimension): the elements of each access, 1, or 2 (2-byte elements in
/// pairs), or 0 where it is not tiled (for tests).
int32_t stridedCopyTiles(const void *input, int64_t offset,
                         const int64_t *strides, const void *output,
                         const int64_t *shape, int32_t rank, int32_t bytes);
/// The batches of a tiled copy along its grid's y dimension, at most
/// (1 to 65535, the default; the rest along z); returns the value before
/// (for tests).
int64_t setTiledBatchesAlongY(int64_t most);
/// Rows outside [0, v) give zeros and are recorded on the device, not
/// returned (see takeDeviceErrors).
void embedding(mpcrt_dtype dtype, const void *table, int64_t v, int64_t d,
               const void *indices, int32_t indexBits, int64_t count,
               void *output);
/// mpcrt_embedding_backward_*: the CPU reference's sums, bit for bit
/// (Data.cu); `addend` null, gradTable itself or another table.
void embeddingBackward(mpcrt_dtype dtype, const void *gradOutput,
                       const void *indices, int32_t indexBits, int64_t count,
                       int64_t v, int64_t d, int64_t padding,
                       const void *addend, void *gradTable);
/// 1 + the position of the first bad embedding index and of the first bad
/// class label since the last call (0: none), read in stream order: waits
/// for the work enqueued so far, then clears the record.
struct IndexErrors {
  int64_t index = 0, label = 0;
};
IndexErrors takeDeviceErrors();
/// The result may differ in type from the input (f16, bf16, f32 each).
void dropout(mpcrt_dtype in, const void *input, mpcrt_dtype out, void *output,
             uint8_t *mask, int64_t count, double p, uint64_t seed,
             const int64_t *step);
void dropoutBackward(mpcrt_dtype dtype, const void *gradOutput,
                     const uint8_t *mask, void *gradInput, int64_t count,
                     double p);

// Host conversions of single values (the runner's metrics).
float halfToFloat(uint16_t bits);
float bfloat16ToFloat(uint16_t bits);
uint16_t floatToHalf(float value);
uint16_t floatToBfloat16(float value);

// Batch norm (channels last), pooling, upsampling, pointwise losses.
void batchNorm(mpcrt_dtype dtype, const void *input, mpcrt_dtype paramDtype,
               const void *gamma, const void *beta, void *runningMean,
               void *runningVar, void *output, float *savedMean,
               float *savedInvstd, int64_t rows, int64_t c, double momentum,
               double epsilon, bool relu = false, bool sync = false);
void batchNormInference(mpcrt_dtype dtype, const void *input,
                        mpcrt_dtype paramDtype, const void *gamma,
                        const void *beta, const void *runningMean,
                        const void *runningVar, void *output, int64_t rows,
                        int64_t c, double epsilon, bool relu);
/// `output` (not null): the fused ReLU's output, whose gradient
/// relu_grad(gradOutput, output) reaches the batch norm; or `beta` (not
/// null, paramDtype): that output formed again from the input. With
/// `gammaAddend` or `betaAddend` (paramDtype), the parameter gradient is
/// added to it as mpcrt_batch_norm_backward_* adds it.
void batchNormBackward(mpcrt_dtype dtype, const void *gradOutput,
                       const void *input, mpcrt_dtype paramDtype,
                       const void *gamma, const float *savedMean,
                       const float *savedInvstd, void *gradInput,
                       void *gradGamma, void *gradBeta, int64_t rows, int64_t c,
                       const void *output = nullptr, const void *beta = nullptr,
                       const void *gammaAddend = nullptr,
                       const void *betaAddend = nullptr, bool sync = false);
/// `sync` above: the statistics (and the backward's means) of every rank,
/// each rank's moments or sums gathered by `gather` over `ranks` ranks
/// (mpcrt_set_rank_gather; one rank or none: the rank's own).
void setRankGather(int32_t ranks,
                   void (*gather)(const void *, void *, int64_t));
void maxPool2d(mpcrt_dtype dtype, const void *input, void *output,
               const mpcrt_pool2d_shape &shape);
/// With an addend (`addendRow` elements from one (n, h, w) position to the
/// next), the gradient rounded, added to it and rounded again.
void maxPool2dBackward(mpcrt_dtype dtype, const void *gradOutput,
                       const void *input, void *gradInput,
                       const mpcrt_pool2d_shape &shape,
                       const void *addend = nullptr, int64_t addendRow = 0);
void avgPool2d(mpcrt_dtype dtype, const void *input, void *output,
               const mpcrt_pool2d_shape &shape);
void avgPool2dBackward(mpcrt_dtype dtype, const void *gradOutput,
                       void *gradInput, const mpcrt_pool2d_shape &shape);
void upsampleNearest2d(mpcrt_dtype dtype, const void *input, void *output,
                       int64_t n, int64_t h, int64_t w, int64_t c, int64_t sh,
                       int64_t sw);
void upsampleNearest2dBackward(mpcrt_dtype dtype, const void *gradOutput,
                               void *gradInput, int64_t n, int64_t h, int64_t w,
                               int64_t c, int64_t sh, int64_t sw);
void pointwiseLoss(mpcrt_dtype dtype, int32_t kind, const void *input,
                   const void *target, void *loss, int64_t count, bool mean);
void pointwiseLossBackward(mpcrt_dtype dtype, int32_t kind,
                           const void *gradLoss, const void *input,
                           const void *target, void *gradInput, int64_t count,
                           bool mean);

// Convolutions through cuDNN (NHWC, OHWI filters), forward and backward.
// The forward adds `addend` where not null (of the output's shape; it may
// be the output): cuDNN's beta = 1 over the output holding it.
void conv2d(mpcrt_dtype dtype, const void *input, const void *filter,
            const void *addend, void *output, const mpcrt_conv2d_shape &shape);
void conv2dBackwardData(mpcrt_dtype dtype, const void *gradOutput,
                        const void *filter, void *gradInput,
                        const mpcrt_conv2d_shape &shape);
void conv2dBackwardFilter(mpcrt_dtype dtype, const void *gradOutput,
                          const void *input, void *gradFilter,
                          const mpcrt_conv2d_shape &shape);

/// cuDNN's own batch norm, the peer of batchNorm and batchNormBackward:
/// cudnnBatchNormalizationForwardTrainingEx and BackwardEx on NHWC
/// [n, h, w, c] with f32 parameters (f64 for f64), in
/// CUDNN_BATCHNORM_SPATIAL_PERSISTENT mode, as PyTorch's channels-last
/// training calls them; with `relu`, cuDNN's fused activation
/// (CUDNN_BATCHNORM_OPS_BN_ACTIVATION), whose backward reads the forward's
/// reserve space (and the output and beta) where ours forms the mask
/// again. Compiled programs do not run it: mpc-bench-kernels times it beside
/// ours, and a unit test checks that it computes what ours does. Each
/// returns false, having run nothing, where cuDNN answers NOT_SUPPORTED;
/// another failure stops the program.
struct CudnnBatchNormShape {
  int64_t n, h, w, c;
  bool relu;
};
/// The reserve space the forward leaves for the backward, in bytes.
size_t cudnnBatchNormReserveBytes(mpcrt_dtype dtype,
                                  const CudnnBatchNormShape &shape);
bool cudnnBatchNorm(mpcrt_dtype dtype, const CudnnBatchNormShape &shape,
                    const void *input, const void *gamma, const void *beta,
                    void *runningMean, void *runningVar, void *output,
                    void *savedMean, void *savedInvstd, double momentum,
                    double epsilon, void *reserve, size_t reserveBytes);
bool cudnnBatchNormBackward(mpcrt_dtype dtype, const CudnnBatchNormShape &shape,
                            const void *gradOutput, const void *input,
                            const void *output, const void *gamma,
                            const void *beta, const void *savedMean,
                            const void *savedInvstd, void *gradInput,
                            void *gradGamma, void *gradBeta, double epsilon,
                            void *reserve, size_t reserveBytes);

// mpc.attention and its backward (mpcrt_attention*): cuBLASLt products
// over chunks of heads, one block per score row between them, only a
// chunk's scores in scratch at a time; `step` is the device step counter
// and `seed` the rank's dropout key; the backward's `result` is the
// forward's (the flash kernels take D = rowsum(dO * O) from it);
// `rowHeads` heads share each row of the operands (mpcrt.h's row_heads).
// f16 and bf16 calls with head sizes up to 128 go to flash kernels (no
// scores in memory) unless `on` is false (tests); returns the setting
// before.
bool setAttentionFlash(bool on);
// The scratch bytes attention's chunks may take (default 256 MiB; at least
// one head's whatever the limit), returning the previous limit (for tests).
int64_t setAttentionScratchBytes(int64_t bytes);
// Score rows of up to `columns` (default 1024) go one warp each, longer
// ones a block each; returns the previous limit (for tests).
int64_t setAttentionWarpColumns(int64_t columns);
void attention(mpcrt_dtype dtype, const void *query, const void *key,
               const void *value, void *result, void *logsumexp, int64_t heads,
               int64_t sq, int64_t sk, int64_t d, int64_t dv, int64_t rowHeads,
               double scale, double dropoutP, uint64_t seed,
               const int64_t *step, const formulas::AttentionMask &mask);
void attentionBackward(mpcrt_dtype dtype, const void *grad, const void *query,
                       const void *key, const void *value, const void *result,
                       const void *logsumexp, void *gradQuery, void *gradKey,
                       void *gradValue, int64_t heads, int64_t sq, int64_t sk,
                       int64_t d, int64_t dv, int64_t rowHeads, double scale,
                       double dropoutP, uint64_t seed, const int64_t *step,
                       const formulas::AttentionMask &mask);

// Matrix multiplication through cuBLASLt (f32 accumulation, Tensor Cores for
// f16/bf16; f64 in f64), the algorithm chosen by cuBLASLt's heuristic once
// per shape and cached.
void matmul(mpcrt_dtype dtype, const void *a, int64_t aBatchStride,
            const void *b, int64_t bBatchStride, void *c, int64_t batch,
            int64_t m, int64_t n, int64_t k, bool transA, bool transB);
// The same with a result of type `out`: `in`, or f32 for f16/bf16 operands
// (the f32 accumulation rounded once to f32).
void matmulTo(mpcrt_dtype in, mpcrt_dtype out, const void *a,
              int64_t aBatchStride, const void *b, int64_t bBatchStride,
              void *c, int64_t batch, int64_t m, int64_t n, int64_t k,
              bool transA, bool transB);

// mpcrt_strided_matmul: matrices `strides` apart in a two-dimensional
// batch (see mpcrt.h), each with its rows' leading dimension: one
// strided-batch cuBLASLt call where the batch is one stride apart after
// all, else one pointer-array call (MPC_CUDA_HEAD_PRODUCTS, Matmul.cpp),
// else a strided-batch call per index of the smaller batch dimension.
void stridedMatmul(mpcrt_dtype dtype, const void *a, const int64_t *aStrides,
                   const void *b, const int64_t *bStrides, void *c,
                   const int64_t *cStrides, int64_t outer, int64_t inner,
                   int64_t m, int64_t n, int64_t k, bool transA, bool transB);

// Whether stridedMatmul takes its loop of strided batches where it would
// take pointer arrays (MPC_CUDA_HEAD_PRODUCTS=loop); returns the choice
// before. For the kernel benchmark's lines of both.
bool setHeadProductsLoop(bool loop);

// mpcrt_fused_matmul: the bias and activation in cuBLASLt's epilogue
// (BIAS, RELU_BIAS, GELU_BIAS; GELU_AUX_BIAS with the pre-activation), or,
// where cuBLASLt has no algorithm for it, the plain GEMM followed by
// biasActivation (an f16/bf16 result from the f32 product, rounded once).
void fusedMatmul(mpcrt_dtype in, mpcrt_dtype out, const void *a,
                 int64_t aBatchStride, const void *b, int64_t bBatchStride,
                 const void *bias, void *c, void *pre, int64_t batch, int64_t m,
                 int64_t n, int64_t k, bool transA, bool transB,
                 int32_t activation);

// mpcrt_matmul_add: the addend as cuBLASLt's C matrix with beta = 1 (in
// place when it is C).
void matmulAdd(mpcrt_dtype in, mpcrt_dtype out, const void *a,
               int64_t aBatchStride, const void *b, int64_t bBatchStride,
               const void *addend, void *c, int64_t batch, int64_t m, int64_t n,
               int64_t k, bool transA, bool transB);

// mpcrt_matmul_activation_grad: GELU's derivative in cuBLASLt's DGELU
// epilogue (the saved input its auxiliary matrix); ReLU's (whose DRELU
// epilogue reads a bit mask, not a saved tensor), and GELU's where
// cuBLASLt has no algorithm, by the plain GEMM followed by unaryGrad in
// place (GELU's f16/bf16 result from the f32 product, rounded once).
void matmulActivationGrad(mpcrt_dtype in, mpcrt_dtype out, const void *a,
                          int64_t aBatchStride, const void *b,
                          int64_t bBatchStride, const void *saved, void *c,
                          int64_t batch, int64_t m, int64_t n, int64_t k,
                          bool transA, bool transB, int32_t activation);

// mpcrt_matmul_bias_grad: the bias gradient from cuBLASLt's BGRADA
// epilogue where it has the operands' type and there are no addends, or
// the GEMM (matmulAdd's with an addend) followed by columnSums (f32 sums
// of f16/bf16 operands, which cuBLASLt does not write, and where it has no
// algorithm). With `sumsOfA` (A transposed, [k, m]) the sums are A's
// columns', always from columnSums.
void matmulBiasGrad(mpcrt_dtype in, mpcrt_dtype out, mpcrt_dtype grad,
                    const void *a, const void *b, const void *addend, void *c,
                    const void *biasAddend, void *biasGrad, int64_t m,
                    int64_t n, int64_t k, bool transA, bool sumsOfA = false);

// sums[j] = the sum of column j of a [rows, cols] array of type `in` over
// its rows (f32 accumulation, f64 for f64; the same order on every GPU),
// stored as `out` (`in`, or f32 for f16/bf16); with `addend` (of type
// `out`; it may be `sums`), that sum added to addend[j] and rounded again.
/// Column sums of no rows, `bytes` of them: zeros, or the addend's values
/// (nothing to copy where `sums` is the addend).
void sumsOfNoRows(void *sums, const void *addend, int64_t bytes);
void columnSums(mpcrt_dtype in, mpcrt_dtype out, const void *input, void *sums,
                int64_t rows, int64_t cols, const void *addend = nullptr);
// columnSums of each of `count` arrays of one shape and type, with
// addends[i] as array i's addend where `addends` is not null, the arrays
// kColumnSumsList at a time in one launch: the same cut of each, so the
// same bits as a call for each.
constexpr int kColumnSumsList = 8;
void columnSumsOfList(mpcrt_dtype in, mpcrt_dtype out, int64_t count,
                      const void *const *inputs, void *const *sums,
                      int64_t rows, int64_t cols,
                      const void *const *addends = nullptr);

// mpc.dropout_add: y = dropout(x) + residual (residual may be null), the
// dropout kernel's bits, each step rounded as the separate ops round it.
void dropoutAdd(mpcrt_dtype dtype, const void *x, const void *residual, void *y,
                int64_t count, double p, uint64_t seed, const int64_t *step);

// c[i] = act(c[i] + bias[i % n]) over rows x n elements of type `dtype`
// (activation an mpcrt_unary_op or MPCRT_ACTIVATION_NONE); pre[i], when
// `pre` is not null, the sum before the activation. With `product` (the
// f32 product of f16/bf16 operands), product[i] instead of c[i]: each
// result rounded once.
void biasActivation(mpcrt_dtype dtype, void *c, const void *bias, void *pre,
                    int64_t rows, int64_t n, int32_t activation,
                    const float *product = nullptr);
// out[i] = product[i] * op'(saved[i]), product the f32 product of f16/bf16
// operands, rounded once to `dtype`.
void unaryGradOfProduct(mpcrt_dtype dtype, mpcrt_unary_op op,
                        const float *product, const void *saved, void *out,
                        int64_t count);

} // namespace mpcrt::cuda

#endif // MPC_LIB_RUNTIME_CUDA_KERNELS_H
