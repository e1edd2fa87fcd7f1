//===- Abi.cpp - the mpcrt_* C ABI on the CUDA backend --------------------===//
//
// The entry points of include/mpc/Runtime/mpcrt.h that the CUDA backend
// implements so far, mapped onto Kernels.h. Pointers are device pointers;
// the arrays of the multi-tensor entry points (dtypes, sizes, pointer
// arrays) are host arrays, as the lowering emits them.
//
//===----------------------------------------------------------------------===//

#include "Errors.h"
#include "Formulas.h"
#include "Kernels.h"

#include <cstdio>
#include <cstdlib>
#include <initializer_list>

using namespace mpcrt::cuda;

extern "C" {

void *mpcrt_buffer_alloc(int64_t bytes) {
  void *buffer = allocate(bytes);
  zero(buffer, bytes);
  return buffer;
}
void mpcrt_buffer_free(void *buffer) { release(buffer); }
int64_t mpcrt_memory_bytes(void) { return deviceBytes(); }
void mpcrt_compare(mpcrt_predicate predicate, int32_t element, const void *lhs,
                   const int64_t *lhs_strides, const void *rhs,
                   const int64_t *rhs_strides, uint8_t *out,
                   const int64_t *shape, int32_t rank) {
  compare(predicate, element, lhs, lhs_strides, rhs, rhs_strides, out, shape,
          rank);
}
void mpcrt_where(int32_t element_bytes, const uint8_t *condition,
                 const int64_t *condition_strides, const void *lhs,
                 const int64_t *lhs_strides, const void *rhs,
                 const int64_t *rhs_strides, void *out, const int64_t *shape,
                 int32_t rank) {
  where(element_bytes, condition, condition_strides, lhs, lhs_strides, rhs,
        rhs_strides, out, shape, rank);
}
// The rank whose masks dropout draws: read when a launch is recorded.
static int32_t dropoutRank = 0;
void mpcrt_set_rank(int32_t rank) { dropoutRank = rank; }
// A synchronised batch norm exchanges its statistics on the device
// (mpcrt_set_rank_gather); the host rank sum is the CPU backend's.
void mpcrt_set_rank_sum(void (*)(double *, int64_t)) {}
void mpcrt_set_rank_gather(int32_t ranks,
                           void (*gather)(const void *, void *, int64_t)) {
  setRankGather(ranks, gather);
}
// The step runs on the device: host threads do nothing for it.
void mpcrt_set_threads(int32_t) {}
int32_t mpcrt_threads(void) { return 1; }
void mpcrt_upload(void *buffer, const void *host, int64_t bytes) {
  copyToDevice(buffer, host, bytes);
}
void mpcrt_upload_input(void *buffer, const void *host, int64_t bytes) {
  uploadInput(buffer, host, bytes);
}
void mpcrt_inputs_ready(void) { inputsReady(); }
void mpcrt_gather_rows(const void *src, mpcrt_dtype from, void *dst,
                       mpcrt_dtype to, int64_t row_elements,
                       const int64_t *rows, int64_t count, int32_t raw_bytes) {
  gatherRows(src, from, dst, to, row_elements, rows, count, raw_bytes);
}
int64_t mpcrt_free_bytes(void) { return freeBytes(); }
void mpcrt_download(void *host, const void *buffer, int64_t bytes) {
  copyToHost(host, buffer, bytes);
  // Checks the device made without stopping the step report here.
  IndexErrors bad = takeDeviceErrors();
  if (bad.index)
    mpcrt::errors::badIndex(bad.index - 1, "an embedding (found on the device "
                                           "when results were read)");
  if (bad.label)
    mpcrt::errors::badLabel(bad.label - 1, -1,
                            "a cross-entropy (found on the device when "
                            "results were read)");
}

void mpcrt_numerics_begin(int32_t *first, float *amax, int64_t count) {
  numericsBegin(first, amax, count);
}
void mpcrt_check_numerics(int64_t num_tensors, const mpcrt_dtype *dtypes,
                          const void *const *inputs, const int64_t *sizes,
                          const int64_t *indices, int32_t *first, float *amax,
                          int64_t *counts) {
  checkNumerics(num_tensors, dtypes, inputs, sizes, indices, first, amax,
                counts);
}
void mpcrt_numerics_end(const int32_t *first, int64_t count,
                        const int64_t *step, int64_t *events, const float *amax,
                        float *event_amax) {
  numericsEnd(first, count, step, events, amax, event_amax);
}

int32_t mpcrt_graph_begin(void) {
  graphBegin();
  return 1;
}
int32_t mpcrt_graph_end(int32_t slot) { return graphEnd(slot) ? 1 : 0; }
void mpcrt_graph_launch(int32_t slot) { graphLaunch(slot); }

uint16_t mpcrt_f32_to_f16(float value) { return floatToHalf(value); }
float mpcrt_f16_to_f32(uint16_t bits) { return halfToFloat(bits); }
uint16_t mpcrt_f32_to_bf16(float value) { return floatToBfloat16(value); }
float mpcrt_bf16_to_f32(uint16_t bits) { return bfloat16ToFloat(bits); }

void mpcrt_strided_copy(const void *input, int64_t offset,
                        const int64_t *in_strides, void *output,
                        const int64_t *shape, int32_t rank, int32_t bytes) {
  stridedCopy(input, offset, in_strides, output, shape, rank, bytes);
}
void mpcrt_strided_scatter(const void *input, void *output, int64_t offset,
                           const int64_t *out_strides, const int64_t *shape,
                           int32_t rank, int32_t bytes) {
  stridedScatter(input, output, offset, out_strides, shape, rank, bytes);
}
/* Embedding and cross-entropy kernels record bad indices and labels on
 * the device (reported by the next mpcrt_download) and return 0. */
void mpcrt_check_index(int64_t code, const char *where) {
  if (code != 0)
    mpcrt::errors::badIndex(code - 1, where);
}
void mpcrt_check_label(int64_t code, int64_t classes, const char *where) {
  if (code != 0)
    mpcrt::errors::badLabel(code - 1, classes, where);
}

void mpcrt_copy(void *dst, const void *src, int64_t bytes) {
  copy(dst, src, bytes);
}
void mpcrt_zero(void *dst, int64_t bytes) { zero(dst, bytes); }
void mpcrt_fill(mpcrt_dtype dtype, void *dst, int64_t count, double value) {
  fill(dtype, dst, count, value);
}
void mpcrt_fill_random(mpcrt_dtype dtype, void *dst, int64_t count,
                       int32_t normal, double a, double b, uint64_t seed) {
  fillRandom(dtype, dst, count, normal != 0, a, b, seed);
}
void mpcrt_cast(mpcrt_dtype from, const void *input, mpcrt_dtype to,
                void *output, int64_t count) {
  cast(from, input, to, output, count);
}
void mpcrt_cast_i32(const int32_t *input, mpcrt_dtype to, void *output,
                    int64_t count) {
  castI32(input, to, output, count);
}
void mpcrt_increment_step(int64_t *step) { incrementStep(step); }
void mpcrt_increment_i32(const int32_t *in, int32_t *out, const uint8_t *skip) {
  incrementI32(in, out, skip);
}
void mpcrt_lr_schedule(const int32_t *step, float *lr, int32_t kind,
                       double base, int64_t warmup, int64_t total,
                       double min_lr, double gamma, int64_t step_size,
                       double pct_start, double div_factor,
                       double final_div_factor, int32_t three_phase) {
  lrSchedule(step, lr,
             {kind, base, warmup, total, min_lr, gamma, step_size, pct_start,
              div_factor, final_div_factor, three_phase != 0});
}

void mpcrt_unscale_and_check(const float *scale, int64_t num_tensors,
                             const mpcrt_dtype *dtypes,
                             const void *const *grads, const int64_t *sizes,
                             float *const *unscaled, uint8_t *found_inf) {
  unscaleAndCheck(scale, num_tensors, dtypes, grads, sizes, unscaled,
                  found_inf);
}
void mpcrt_clip_grad_norm(const float *scale, int64_t num_tensors,
                          const mpcrt_dtype *dtypes, const void *const *grads,
                          const int64_t *sizes, double max_norm,
                          float *inv_scale, float *norm, uint8_t *found_inf) {
  clipGradNorm(scale, num_tensors, dtypes, grads, sizes, max_norm, inv_scale,
               norm, found_inf);
}
void mpcrt_grad_stats(const float *scale, int64_t num_tensors,
                      const mpcrt_dtype *dtypes, const void *const *grads,
                      const int64_t *sizes, int64_t *stats) {
  gradStats(scale, num_tensors, dtypes, grads, sizes, stats);
}
void mpcrt_update_loss_scale(float *scale, int32_t *growth_tracker,
                             int32_t *hysteresis_tracker,
                             const uint8_t *found_inf, double growth_factor,
                             double backoff_factor, int64_t growth_interval,
                             int64_t hysteresis, double min_scale,
                             double max_scale) {
  updateLossScale(scale, growth_tracker, hysteresis_tracker, found_inf,
                  growth_factor, backoff_factor, growth_interval, hysteresis,
                  min_scale, max_scale);
}

#define MPCRT_DEFINE(SUFFIX, P, G, PD, GD)                                     \
  void mpcrt_sgd_update_##SUFFIX(                                              \
      P *param, const G *grad, const float *lr, P *buffer,                     \
      const uint8_t *found_inf, const float *inv_scale,                        \
      mpcrt_dtype copy_dtype, void *copy, int64_t count, double momentum,      \
      double dampening, int32_t nesterov, double weight_decay) {               \
    sgdUpdate(PD, GD, param, grad, lr, buffer, found_inf, inv_scale,           \
              copy_dtype, copy, count, momentum, dampening, nesterov != 0,     \
              weight_decay);                                                   \
  }                                                                            \
  void mpcrt_adam_update_##SUFFIX(                                             \
      P *param, const G *grad, P *exp_avg, P *exp_avg_sq, const float *lr,     \
      const int32_t *step, const uint8_t *found_inf, const float *inv_scale,   \
      mpcrt_dtype copy_dtype, void *copy, int64_t count, double beta1,         \
      double beta2, double eps, double weight_decay, int32_t decoupled,        \
      int32_t bias_correction, int32_t lamb) {                                 \
    adamUpdate(PD, GD, param, grad, exp_avg, exp_avg_sq, lr, step, found_inf,  \
               inv_scale, copy_dtype, copy, count, beta1, beta2, eps,          \
               weight_decay, decoupled != 0, bias_correction != 0, lamb != 0); \
  }
MPCRT_DEFINE(f32_f16, float, uint16_t, MPCRT_F32, MPCRT_F16)
MPCRT_DEFINE(f32_bf16, float, uint16_t, MPCRT_F32, MPCRT_BF16)
MPCRT_DEFINE(f32_f32, float, float, MPCRT_F32, MPCRT_F32)
MPCRT_DEFINE(f16_f16, uint16_t, uint16_t, MPCRT_F16, MPCRT_F16)
MPCRT_DEFINE(bf16_bf16, uint16_t, uint16_t, MPCRT_BF16, MPCRT_BF16)
MPCRT_DEFINE(f64_f64, double, double, MPCRT_F64, MPCRT_F64)
MPCRT_DEFINE(f16_f32, uint16_t, float, MPCRT_F16, MPCRT_F32)
MPCRT_DEFINE(bf16_f32, uint16_t, float, MPCRT_BF16, MPCRT_F32)
#undef MPCRT_DEFINE

void mpcrt_sgd_update_multi(
    int64_t num_tensors, const mpcrt_dtype *param_dtypes,
    const mpcrt_dtype *grad_dtypes, void *const *params,
    const void *const *grads, void *const *momentum_buffers,
    const mpcrt_dtype *copy_dtypes, void *const *copies, const int64_t *sizes,
    const float *lr, const uint8_t *found_inf, const float *inv_scale,
    double momentum, double dampening, int32_t nesterov, double weight_decay) {
  sgdUpdateMulti(num_tensors, param_dtypes, grad_dtypes, params, grads,
                 momentum_buffers, copy_dtypes, copies, sizes, lr, found_inf,
                 inv_scale, momentum, dampening, nesterov != 0, weight_decay);
}

void mpcrt_adam_update_multi(
    int64_t num_tensors, const mpcrt_dtype *param_dtypes,
    const mpcrt_dtype *grad_dtypes, void *const *params,
    const void *const *grads, void *const *exp_avgs, void *const *exp_avg_sqs,
    const mpcrt_dtype *copy_dtypes, void *const *copies, const int64_t *sizes,
    const float *lr, const int32_t *step, const uint8_t *found_inf,
    const float *inv_scale, double beta1, double beta2, double eps,
    double weight_decay, int32_t decoupled, int32_t bias_correction,
    int32_t lamb) {
  adamUpdateMulti(num_tensors, param_dtypes, grad_dtypes, params, grads,
                  exp_avgs, exp_avg_sqs, copy_dtypes, copies, sizes, lr, step,
                  found_inf, inv_scale, beta1, beta2, eps, weight_decay,
                  decoupled != 0, bias_correction != 0, lamb != 0);
}

/// The mixed-type entry points take one type (any), or several of f16,
/// bf16 and f32 (AnyFloat's types).
static void requireMixable(std::initializer_list<mpcrt_dtype> types,
                           const char *name) {
  bool same = true;
  for (mpcrt_dtype t : types)
    same = same && t == *types.begin();
  if (same)
    return;
  for (mpcrt_dtype t : types)
    if (t != MPCRT_F16 && t != MPCRT_BF16 && t != MPCRT_F32) {
      mpcrt::errors::reportError(
          "%s: a mixed-type kernel takes f16, bf16 and f32 "
          "only\n",
          name);
      std::exit(1);
    }
}

void mpcrt_softmax_mixed(mpcrt_dtype in, const void *input, mpcrt_dtype out,
                         void *output, int64_t rows, int64_t cols, int32_t log,
                         double scale) {
  requireMixable({in, out}, "mpcrt_softmax_mixed");
  softmax(in, input, out, output, rows, cols, log != 0, scale);
}

void mpcrt_softmax_backward_mixed(mpcrt_dtype grad, const void *grad_output,
                                  mpcrt_dtype out, const void *output,
                                  mpcrt_dtype result, void *grad_input,
                                  int64_t rows, int64_t cols, int32_t log,
                                  double scale) {
  requireMixable({grad, out, result}, "mpcrt_softmax_backward_mixed");
  softmaxBackward(grad, grad_output, out, output, result, grad_input, rows,
                  cols, log != 0, scale);
}

void mpcrt_softmax_dropout(mpcrt_dtype in, const void *input, mpcrt_dtype out,
                           void *output, int64_t rows, int64_t cols,
                           double scale, double p, uint64_t seed,
                           const int64_t *step) {
  requireMixable({in, out}, "mpcrt_softmax_dropout");
  softmaxDropout(in, input, out, output, rows, cols, scale, p,
                 mpcrt::formulas::rankSeed(seed, dropoutRank), step);
}

void mpcrt_softmax_dropout_backward(mpcrt_dtype grad, const void *grad_output,
                                    mpcrt_dtype in, const void *input,
                                    mpcrt_dtype result, void *grad_input,
                                    void *dropped, int64_t rows, int64_t cols,
                                    double scale, double p, uint64_t seed,
                                    const int64_t *step) {
  requireMixable({grad, in, result}, "mpcrt_softmax_dropout_backward");
  softmaxDropoutBackward(grad, grad_output, in, input, result, grad_input,
                         dropped, rows, cols, scale, p,
                         mpcrt::formulas::rankSeed(seed, dropoutRank), step);
}

void mpcrt_dropout_mixed(mpcrt_dtype in, const void *input, mpcrt_dtype out,
                         void *output, uint8_t *mask, int64_t count, double p,
                         uint64_t seed, const int64_t *step) {
  requireMixable({in, out}, "mpcrt_dropout_mixed");
  dropout(in, input, out, output, mask, count, p,
          mpcrt::formulas::rankSeed(seed, dropoutRank), step);
}

void mpcrt_dropout_add(mpcrt_dtype dtype, const void *x, const void *residual,
                       void *y, int64_t count, double p, uint64_t seed,
                       const int64_t *step) {
  dropoutAdd(dtype, x, residual, y, count, p,
             mpcrt::formulas::rankSeed(seed, dropoutRank), step);
}

void mpcrt_add_layer_norm(mpcrt_dtype dtype, const void *x,
                          const void *residual, mpcrt_dtype param_dtype,
                          const void *gamma, const void *beta, void *sum,
                          void *y, void *mean, void *rstd, int64_t rows,
                          int64_t cols, int64_t residual_rows, double epsilon,
                          double dropout_p, uint64_t seed,
                          const int64_t *step) {
  addLayerNorm(dtype, x, residual, param_dtype, gamma, beta, sum, y, mean, rstd,
               rows, cols, residual_rows, epsilon, dropout_p,
               mpcrt::formulas::rankSeed(seed, dropoutRank), step);
}

void mpcrt_add_layer_norm_backward(
    mpcrt_dtype dtype, const void *grad, const void *grad_sum, const void *sum,
    const void *mean, const void *rstd, mpcrt_dtype param_dtype,
    const void *gamma, void *grad_x, void *grad_residual, void *grad_gamma,
    void *grad_beta, const void *gamma_addend, const void *beta_addend,
    int64_t rows, int64_t cols, double dropout_p, uint64_t seed,
    const int64_t *step, void *grad_x_sums) {
  addLayerNormBackward(dtype, grad, grad_sum, sum, mean, rstd, param_dtype,
                       gamma, grad_x, grad_residual, grad_gamma, grad_beta,
                       gamma_addend, beta_addend, rows, cols, dropout_p,
                       mpcrt::formulas::rankSeed(seed, dropoutRank), step,
                       grad_x_sums);
}

void mpcrt_attention(mpcrt_dtype dtype, const void *query, const void *key,
                     const void *value, void *result, void *logsumexp,
                     int64_t heads, int64_t sq, int64_t sk, int64_t d,
                     int64_t dv, int64_t row_heads, double scale,
                     double dropout_p, uint64_t seed, const int64_t *step,
                     const uint8_t *mask, const int64_t *mask_layout,
                     int32_t mask_rank, double mask_value, const float *bias,
                     const int64_t *bias_layout, int32_t bias_rank) {
  attention(dtype, query, key, value, result, logsumexp, heads, sq, sk, d, dv,
            row_heads, scale, dropout_p,
            mpcrt::formulas::rankSeed(seed, dropoutRank), step,
            mpcrt::formulas::attentionMask(mask, mask_layout, mask_rank,
                                           mask_value, bias, bias_layout,
                                           bias_rank));
}

void mpcrt_attention_backward(
    mpcrt_dtype dtype, const void *grad, const void *query, const void *key,
    const void *value, const void *result, const void *logsumexp,
    void *grad_query, void *grad_key, void *grad_value, int64_t heads,
    int64_t sq, int64_t sk, int64_t d, int64_t dv, int64_t row_heads,
    double scale, double dropout_p, uint64_t seed, const int64_t *step,
    const uint8_t *mask, const int64_t *mask_layout, int32_t mask_rank,
    double mask_value, const float *bias, const int64_t *bias_layout,
    int32_t bias_rank) {
  attentionBackward(
      dtype, grad, query, key, value, result, logsumexp, grad_query, grad_key,
      grad_value, heads, sq, sk, d, dv, row_heads, scale, dropout_p,
      mpcrt::formulas::rankSeed(seed, dropoutRank), step,
      mpcrt::formulas::attentionMask(mask, mask_layout, mask_rank, mask_value,
                                     bias, bias_layout, bias_rank));
}

void mpcrt_fused_matmul(mpcrt_dtype in, mpcrt_dtype out, const void *a,
                        int64_t a_batch_stride, const void *b,
                        int64_t b_batch_stride, const void *bias, void *c,
                        void *pre, int64_t batch, int64_t m, int64_t n,
                        int64_t k, int32_t trans_a, int32_t trans_b,
                        int32_t activation) {
  fusedMatmul(in, out, a, a_batch_stride, b, b_batch_stride, bias, c, pre,
              batch, m, n, k, trans_a != 0, trans_b != 0, activation);
}

void mpcrt_strided_matmul(mpcrt_dtype dtype, const void *a,
                          const int64_t *a_strides, const void *b,
                          const int64_t *b_strides, void *c,
                          const int64_t *c_strides, int64_t outer,
                          int64_t inner, int64_t m, int64_t n, int64_t k,
                          int32_t trans_a, int32_t trans_b) {
  stridedMatmul(dtype, a, a_strides, b, b_strides, c, c_strides, outer, inner,
                m, n, k, trans_a != 0, trans_b != 0);
}

void mpcrt_matmul_add(mpcrt_dtype in, mpcrt_dtype out, const void *a,
                      int64_t a_batch_stride, const void *b,
                      int64_t b_batch_stride, const void *addend, void *c,
                      int64_t batch, int64_t m, int64_t n, int64_t k,
                      int32_t trans_a, int32_t trans_b) {
  matmulAdd(in, out, a, a_batch_stride, b, b_batch_stride, addend, c, batch, m,
            n, k, trans_a != 0, trans_b != 0);
}

void mpcrt_matmul_activation_grad(mpcrt_dtype in, mpcrt_dtype out,
                                  const void *a, int64_t a_batch_stride,
                                  const void *b, int64_t b_batch_stride,
                                  const void *saved, void *c, int64_t batch,
                                  int64_t m, int64_t n, int64_t k,
                                  int32_t trans_a, int32_t trans_b,
                                  int32_t activation) {
  matmulActivationGrad(in, out, a, a_batch_stride, b, b_batch_stride, saved, c,
                       batch, m, n, k, trans_a != 0, trans_b != 0, activation);
}

void mpcrt_column_sums(mpcrt_dtype in, mpcrt_dtype out, int64_t count,
                       const void *const *inputs, const void *const *addends,
                       void *const *sums, int64_t rows, int64_t cols) {
  columnSumsOfList(in, out, count, inputs, sums, rows, cols, addends);
}

void mpcrt_matmul_bias_grad(mpcrt_dtype in, mpcrt_dtype out, mpcrt_dtype grad,
                            const void *a, const void *b, const void *addend,
                            void *c, const void *bias_addend, void *bias_grad,
                            int64_t m, int64_t n, int64_t k, int32_t trans_a,
                            int32_t sums_of_a) {
  matmulBiasGrad(in, out, grad, a, b, addend, c, bias_addend, bias_grad, m, n,
                 k, trans_a != 0, sums_of_a != 0);
}

#define MPCRT_DEFINE(SUFFIX, T, DTYPE)                                         \
  void mpcrt_matmul_##SUFFIX(const T *a, int64_t a_batch_stride, const T *b,   \
                             int64_t b_batch_stride, T *c, int64_t batch,      \
                             int64_t m, int64_t n, int64_t k, int32_t trans_a, \
                             int32_t trans_b) {                                \
    matmul(DTYPE, a, a_batch_stride, b, b_batch_stride, c, batch, m, n, k,     \
           trans_a != 0, trans_b != 0);                                        \
  }
MPCRT_DEFINE(f16, uint16_t, MPCRT_F16)
MPCRT_DEFINE(bf16, uint16_t, MPCRT_BF16)
MPCRT_DEFINE(f32, float, MPCRT_F32)
MPCRT_DEFINE(f64, double, MPCRT_F64)
#undef MPCRT_DEFINE

// mpcrt_batch_norm_* and its backward (NAME empty), or the synchronised
// mpcrt_sync_batch_norm_* (NAME sync_, SYNC true).
#define MPCRT_DEFINE_BATCH_NORM(NAME, SUFFIX, T, DTYPE, SYNC)                  \
  void mpcrt_##NAME##batch_norm_##SUFFIX(                                      \
      const T *input, mpcrt_dtype param_dtype, const void *gamma,              \
      const void *beta, void *running_mean, void *running_var, T *output,      \
      float *saved_mean, float *saved_invstd, int64_t rows, int64_t c,         \
      double momentum, double epsilon, int32_t activation) {                   \
    batchNorm(DTYPE, input, param_dtype, gamma, beta, running_mean,            \
              running_var, output, saved_mean, saved_invstd, rows, c,          \
              momentum, epsilon, activation == MPCRT_RELU, SYNC);              \
  }                                                                            \
  void mpcrt_##NAME##batch_norm_backward_##SUFFIX(                             \
      const T *grad_output, const T *input, mpcrt_dtype param_dtype,           \
      const void *gamma, const float *saved_mean, const float *saved_invstd,   \
      T *grad_input, void *grad_gamma, void *grad_beta, int64_t rows,          \
      int64_t c, const T *output, const void *beta, const void *gamma_addend,  \
      const void *beta_addend) {                                               \
    batchNormBackward(DTYPE, grad_output, input, param_dtype, gamma,           \
                      saved_mean, saved_invstd, grad_input, grad_gamma,        \
                      grad_beta, rows, c, output, beta, gamma_addend,          \
                      beta_addend, SYNC);                                      \
  }

#define MPCRT_DEFINE(SUFFIX, T, DTYPE)                                         \
  void mpcrt_conv2d_##SUFFIX(const T *input, const T *filter, T *output,       \
                             const mpcrt_conv2d_shape *shape) {                \
    conv2d(DTYPE, input, filter, nullptr, output, *shape);                     \
  }                                                                            \
  void mpcrt_conv2d_add_##SUFFIX(const T *input, const T *filter,              \
                                 const T *addend, T *output,                   \
                                 const mpcrt_conv2d_shape *shape) {            \
    conv2d(DTYPE, input, filter, addend, output, *shape);                      \
  }                                                                            \
  void mpcrt_conv2d_backward_data_##SUFFIX(const T *grad_output,               \
                                           const T *filter, T *grad_input,     \
                                           const mpcrt_conv2d_shape *shape) {  \
    conv2dBackwardData(DTYPE, grad_output, filter, grad_input, *shape);        \
  }                                                                            \
  void mpcrt_conv2d_backward_filter_##SUFFIX(                                  \
      const T *grad_output, const T *input, T *grad_filter,                    \
      const mpcrt_conv2d_shape *shape) {                                       \
    conv2dBackwardFilter(DTYPE, grad_output, input, grad_filter, *shape);      \
  }                                                                            \
  MPCRT_DEFINE_BATCH_NORM(, SUFFIX, T, DTYPE, false)                           \
  MPCRT_DEFINE_BATCH_NORM(sync_, SUFFIX, T, DTYPE, true)                       \
  void mpcrt_batch_norm_inference_##SUFFIX(                                    \
      const T *input, mpcrt_dtype param_dtype, const void *gamma,              \
      const void *beta, const void *running_mean, const void *running_var,     \
      T *output, int64_t rows, int64_t c, double epsilon,                      \
      int32_t activation) {                                                    \
    batchNormInference(DTYPE, input, param_dtype, gamma, beta, running_mean,   \
                       running_var, output, rows, c, epsilon,                  \
                       activation == MPCRT_RELU);                              \
  }                                                                            \
  void mpcrt_max_pool2d_##SUFFIX(const T *input, T *output,                    \
                                 const mpcrt_pool2d_shape *shape) {            \
    maxPool2d(DTYPE, input, output, *shape);                                   \
  }                                                                            \
  void mpcrt_max_pool2d_backward_##SUFFIX(const T *grad_output,                \
                                          const T *input, T *grad_input,       \
                                          const mpcrt_pool2d_shape *shape) {   \
    maxPool2dBackward(DTYPE, grad_output, input, grad_input, *shape);          \
  }                                                                            \
  void mpcrt_max_pool2d_backward_add_##SUFFIX(                                 \
      const T *grad_output, const T *input, const T *addend,                   \
      int64_t addend_row, T *grad_input, const mpcrt_pool2d_shape *shape) {    \
    maxPool2dBackward(DTYPE, grad_output, input, grad_input, *shape, addend,   \
                      addend_row);                                             \
  }                                                                            \
  void mpcrt_avg_pool2d_##SUFFIX(const T *input, T *output,                    \
                                 const mpcrt_pool2d_shape *shape) {            \
    avgPool2d(DTYPE, input, output, *shape);                                   \
  }                                                                            \
  void mpcrt_avg_pool2d_backward_##SUFFIX(const T *grad_output, T *grad_input, \
                                          const mpcrt_pool2d_shape *shape) {   \
    avgPool2dBackward(DTYPE, grad_output, grad_input, *shape);                 \
  }                                                                            \
  void mpcrt_upsample_nearest2d_##SUFFIX(const T *input, T *output, int64_t n, \
                                         int64_t h, int64_t w, int64_t c,      \
                                         int64_t sh, int64_t sw) {             \
    upsampleNearest2d(DTYPE, input, output, n, h, w, c, sh, sw);               \
  }                                                                            \
  void mpcrt_upsample_nearest2d_backward_##SUFFIX(                             \
      const T *grad_output, T *grad_input, int64_t n, int64_t h, int64_t w,    \
      int64_t c, int64_t sh, int64_t sw) {                                     \
    upsampleNearest2dBackward(DTYPE, grad_output, grad_input, n, h, w, c, sh,  \
                              sw);                                             \
  }                                                                            \
  void mpcrt_pointwise_loss_##SUFFIX(int32_t kind, const T *input,             \
                                     const T *target, T *loss, int64_t count,  \
                                     int32_t mean) {                           \
    pointwiseLoss(DTYPE, kind, input, target, loss, count, mean != 0);         \
  }                                                                            \
  void mpcrt_pointwise_loss_backward_##SUFFIX(                                 \
      int32_t kind, const T *grad_loss, const T *input, const T *target,       \
      T *grad_input, int64_t count, int32_t mean) {                            \
    pointwiseLossBackward(DTYPE, kind, grad_loss, input, target, grad_input,   \
                          count, mean != 0);                                   \
  }                                                                            \
  int64_t mpcrt_embedding_##SUFFIX(const T *table, int64_t v, int64_t d,       \
                                   const void *indices, int32_t index_bits,    \
                                   int64_t count, T *output) {                 \
    embedding(DTYPE, table, v, d, indices, index_bits, count, output);         \
    return 0;                                                                  \
  }                                                                            \
  int64_t mpcrt_embedding_backward_##SUFFIX(                                   \
      const T *grad_output, const void *indices, int32_t index_bits,           \
      int64_t count, int64_t v, int64_t d, int64_t padding, const T *addend,   \
      T *grad_table) {                                                         \
    embeddingBackward(DTYPE, grad_output, indices, index_bits, count, v, d,    \
                      padding, addend, grad_table);                            \
    return 0;                                                                  \
  }                                                                            \
  void mpcrt_dropout_##SUFFIX(const T *input, T *output, uint8_t *mask,        \
                              int64_t count, double p, uint64_t seed,          \
                              const int64_t *step) {                           \
    dropout(DTYPE, input, DTYPE, output, mask, count, p,                       \
            mpcrt::formulas::rankSeed(seed, dropoutRank), step);               \
  }                                                                            \
  void mpcrt_dropout_backward_##SUFFIX(const T *grad_output,                   \
                                       const uint8_t *mask, T *grad_input,     \
                                       int64_t count, double p) {              \
    dropoutBackward(DTYPE, grad_output, mask, grad_input, count, p);           \
  }
MPCRT_DEFINE(f16, uint16_t, MPCRT_F16)
MPCRT_DEFINE(bf16, uint16_t, MPCRT_BF16)
MPCRT_DEFINE(f32, float, MPCRT_F32)
MPCRT_DEFINE(f64, double, MPCRT_F64)
#undef MPCRT_DEFINE
#undef MPCRT_DEFINE_BATCH_NORM

#define MPCRT_DEFINE(SUFFIX, T, DTYPE, STAT)                                   \
  void mpcrt_binary_##SUFFIX(mpcrt_binary_op op, const T *lhs,                 \
                             const int64_t *lhs_strides, const T *rhs,         \
                             const int64_t *rhs_strides, T *out,               \
                             const int64_t *shape, int32_t rank) {             \
    binary(DTYPE, op, lhs, lhs_strides, rhs, rhs_strides, out, shape, rank);   \
  }                                                                            \
  void mpcrt_unary_##SUFFIX(mpcrt_unary_op op, const T *input, T *out,         \
                            int64_t count) {                                   \
    unary(DTYPE, op, input, out, count);                                       \
  }                                                                            \
  void mpcrt_unary_grad_##SUFFIX(mpcrt_unary_op op, const T *grad,             \
                                 const T *saved, T *out, int64_t count) {      \
    unaryGrad(DTYPE, op, grad, saved, out, count);                             \
  }                                                                            \
  void mpcrt_reduce_##SUFFIX(mpcrt_reduce_op op, const T *input, T *out,       \
                             int64_t outer, int64_t reduced, int64_t inner) {  \
    reduce(DTYPE, op, input, out, outer, reduced, inner);                      \
  }                                                                            \
  void mpcrt_reduce_max_backward_##SUFFIX(                                     \
      const T *grad, const T *input, const T *max, T *grad_input,              \
      int64_t outer, int64_t reduced, int64_t inner) {                         \
    reduceMaxBackward(DTYPE, grad, input, max, grad_input, outer, reduced,     \
                      inner);                                                  \
  }                                                                            \
  void mpcrt_softmax_##SUFFIX(const T *input, T *output, int64_t rows,         \
                              int64_t cols, int32_t log) {                     \
    softmax(DTYPE, input, DTYPE, output, rows, cols, log != 0);                \
  }                                                                            \
  void mpcrt_softmax_backward_##SUFFIX(const T *grad_output, const T *output,  \
                                       T *grad_input, int64_t rows,            \
                                       int64_t cols, int32_t log) {            \
    softmaxBackward(DTYPE, grad_output, DTYPE, output, DTYPE, grad_input,      \
                    rows, cols, log != 0);                                     \
  }                                                                            \
  int64_t mpcrt_cross_entropy_##SUFFIX(                                        \
      const T *logits, const void *labels, int32_t label_bits, T *loss,        \
      int64_t rows, int64_t classes, int32_t mean, int32_t ignores,            \
      int64_t ignore_index, double label_smoothing) {                          \
    crossEntropy(DTYPE, logits, labels, label_bits, loss, rows, classes,       \
                 mean != 0, {ignores != 0, ignore_index}, label_smoothing);    \
    return 0;                                                                  \
  }                                                                            \
  int64_t mpcrt_cross_entropy_backward_##SUFFIX(                               \
      const T *grad_loss, const T *logits, const void *labels,                 \
      int32_t label_bits, T *grad_logits, int64_t rows, int64_t classes,       \
      int32_t mean, int32_t ignores, int64_t ignore_index,                     \
      double label_smoothing) {                                                \
    crossEntropyBackward(DTYPE, grad_loss, logits, labels, label_bits,         \
                         grad_logits, rows, classes, mean != 0,                \
                         {ignores != 0, ignore_index}, label_smoothing);       \
    return 0;                                                                  \
  }                                                                            \
  void mpcrt_accuracy_##SUFFIX(                                                \
      const T *logits, const void *labels, int32_t label_bits, float *out,     \
      int64_t rows, int64_t classes, int32_t ignores, int64_t ignore_index) {  \
    accuracy(DTYPE, logits, labels, label_bits, out, rows, classes,            \
             {ignores != 0, ignore_index});                                    \
  }                                                                            \
  void mpcrt_layer_norm_##SUFFIX(const T *input, mpcrt_dtype param_dtype,      \
                                 const void *gamma, const void *beta,          \
                                 T *output, STAT *mean, STAT *rstd,            \
                                 int64_t rows, int64_t cols, double epsilon) { \
    layerNorm(DTYPE, input, param_dtype, gamma, beta, output, mean, rstd,      \
              rows, cols, epsilon);                                            \
  }                                                                            \
  void mpcrt_layer_norm_backward_##SUFFIX(                                     \
      const T *grad_output, const T *input, const STAT *mean,                  \
      const STAT *rstd, mpcrt_dtype param_dtype, const void *gamma,            \
      T *grad_input, void *grad_gamma, void *grad_beta,                        \
      const void *gamma_addend, const void *beta_addend, int64_t rows,         \
      int64_t cols) {                                                          \
    layerNormBackward(DTYPE, grad_output, input, mean, rstd, param_dtype,      \
                      gamma, grad_input, grad_gamma, grad_beta, gamma_addend,  \
                      beta_addend, rows, cols);                                \
  }
MPCRT_DEFINE(f16, uint16_t, MPCRT_F16, float)
MPCRT_DEFINE(bf16, uint16_t, MPCRT_BF16, float)
MPCRT_DEFINE(f32, float, MPCRT_F32, float)
MPCRT_DEFINE(f64, double, MPCRT_F64, double)
#undef MPCRT_DEFINE

} // extern "C"
