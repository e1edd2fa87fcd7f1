/*===- mpcrt.h - the mpc runtime ABI -------------------------------*- C -*-===*
 *
 * The flat C ABI that compiled training steps call, implemented by both
 * backends (libmpcrt-cpu, the reference, and libmpcrt-cuda). Entry points are
 * named mpcrt_<op>_<dtype>; tensors are dense row-major buffers; f16 and bf16
 * values are stored as their IEEE bit patterns in uint16_t. Every kernel
 * accumulates in f32 (f64 for f64 tensors) and rounds its results to nearest
 * even, as the GPU stores them.
 *
 * This header grows with the lowering; what is declared here is implemented
 * and tested.
 *
 *===----------------------------------------------------------------------===*/

#ifndef MPC_RUNTIME_MPCRT_H
#define MPC_RUNTIME_MPCRT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Element types of runtime buffers. */
typedef enum mpcrt_dtype {
  MPCRT_F16 = 0,
  MPCRT_BF16 = 1,
  MPCRT_F32 = 2,
  MPCRT_F64 = 3,
} mpcrt_dtype;

/* Scalar conversions, bit-exact with the GPU: round to nearest even,
 * subnormals kept, overflow to infinity, NaN stays NaN (quietened). */
uint16_t mpcrt_f32_to_f16(float value);
float mpcrt_f16_to_f32(uint16_t bits);
uint16_t mpcrt_f32_to_bf16(float value);
float mpcrt_bf16_to_f32(uint16_t bits);

/* mpc.cast: converts `count` elements from one type to another. */
void mpcrt_cast(mpcrt_dtype from, const void *input, mpcrt_dtype to,
                void *output, int64_t count);

/* mpc.cast from i32: each integer rounded to f32 (nearest even), then to
 * `to` as mpcrt_cast rounds from f32 (f64: exact). */
void mpcrt_cast_i32(const int32_t *input, mpcrt_dtype to, void *output,
                    int64_t count);

/* mpc.matmul: C[b] = op(A[b]) x op(B[b]) for b in [0, batch), where op
 * transposes when asked. A is [m, k] ([k, m] transposed), B is [k, n]
 * ([n, k] transposed), C is [m, n]; consecutive batches of A and B are
 * `a_batch_stride` and `b_batch_stride` elements apart (0 broadcasts one
 * matrix over the batch). A, B and C share the element type of the suffix. */
#define MPCRT_DECLARE_MATMUL(SUFFIX, T)                                        \
  void mpcrt_matmul_##SUFFIX(const T *a, int64_t a_batch_stride, const T *b,   \
                             int64_t b_batch_stride, T *c, int64_t batch,      \
                             int64_t m, int64_t n, int64_t k, int32_t trans_a, \
                             int32_t trans_b);
MPCRT_DECLARE_MATMUL(f16, uint16_t)
MPCRT_DECLARE_MATMUL(bf16, uint16_t)
MPCRT_DECLARE_MATMUL(f32, float)
MPCRT_DECLARE_MATMUL(f64, double)
#undef MPCRT_DECLARE_MATMUL

/* mpc.heads_matmul: C[p][q] = op(A[p][q]) x op(B[p][q]) for p in
 * [0, outer) and q in [0, inner), with A, B, C, m, n, k and the transposes
 * as mpcrt_matmul_*, of `dtype` (f16, bf16, f32 or f64), and each matrix's
 * place given by three strides in elements: matrix [p][q] of X starts at
 * X + p * x_strides[0] + q * x_strides[1] and its rows are x_strides[2]
 * apart (at least its row's length). */
void mpcrt_strided_matmul(mpcrt_dtype dtype, const void *a,
                          const int64_t *a_strides, const void *b,
                          const int64_t *b_strides, void *c,
                          const int64_t *c_strides, int64_t outer,
                          int64_t inner, int64_t m, int64_t n, int64_t k,
                          int32_t trans_a, int32_t trans_b);

/* mpc.fused_matmul: C[b] = act(op(A[b]) x op(B[b]) + bias) with A, B, the
 * strides and the transposes as mpcrt_matmul_*, `bias` a vector of n added
 * to every row and `activation` MPCRT_RELU, MPCRT_GELU_TANH or
 * MPCRT_ACTIVATION_NONE. The product accumulates in f32 (f64 for f64), the
 * bias and activation apply to the sum, which is rounded once. `in` is A
 * and B's type; `out` is C, `pre` and the bias's: `in`, or f32 for
 * f16/bf16. `pre`, when not null, receives the sum before the activation
 * (rounded once). */
#define MPCRT_ACTIVATION_NONE (-1)
void mpcrt_fused_matmul(mpcrt_dtype in, mpcrt_dtype out, const void *a,
                        int64_t a_batch_stride, const void *b,
                        int64_t b_batch_stride, const void *bias, void *c,
                        void *pre, int64_t batch, int64_t m, int64_t n,
                        int64_t k, int32_t trans_a, int32_t trans_b,
                        int32_t activation);

/* mpc.matmul_add: C[b] = op(A[b]) x op(B[b]) + addend[b] with A, B, the
 * strides and the transposes as mpcrt_matmul_*, `addend` of C's shape and
 * type. The product accumulates in f32 (f64 for f64), the addend is added
 * to the sum, which is rounded once. `in` is A and B's type; `out` C and
 * the addend's. `c` may be `addend` (the sum is accumulated in place). */
void mpcrt_matmul_add(mpcrt_dtype in, mpcrt_dtype out, const void *a,
                      int64_t a_batch_stride, const void *b,
                      int64_t b_batch_stride, const void *addend, void *c,
                      int64_t batch, int64_t m, int64_t n, int64_t k,
                      int32_t trans_a, int32_t trans_b);

/* mpc.matmul_activation_grad: C[b] = (op(A[b]) x op(B[b])) * act'(saved[b])
 * with A, B, the strides and the transposes as mpcrt_matmul_*, `activation`
 * MPCRT_RELU or MPCRT_GELU_TANH and `saved` of C's shape and type (the
 * activation's input; for ReLU its output does as well). The product
 * accumulates in f32 (f64 for f64) and is multiplied by the derivative
 * before the one rounding. `in` is A and B's type; `out` C and saved's. */
void mpcrt_matmul_activation_grad(mpcrt_dtype in, mpcrt_dtype out,
                                  const void *a, int64_t a_batch_stride,
                                  const void *b, int64_t b_batch_stride,
                                  const void *saved, void *c, int64_t batch,
                                  int64_t m, int64_t n, int64_t k,
                                  int32_t trans_a, int32_t trans_b,
                                  int32_t activation);

/* mpc.matmul_bias_grad: C[m, n] = op(A) x B as mpcrt_matmul_* (one pair
 * of matrices, B not transposed), or op(A) x B + addend as
 * mpcrt_matmul_add where `addend` is not null, and bias_grad[j], the sum
 * of column j of B over its k rows, accumulated in f32 (f64 for f64) in
 * row order and rounded once, then, where `bias_addend` is not null, added
 * to bias_addend[j] and rounded again. With `sums_of_a` (and trans_a: A
 * is [k, m]), bias_grad[i] is the sum of column i of A over its k rows
 * instead (m sums, as `bias_addend` holds): the weight gradient g^T x of
 * a layer whose weight is [out, in], with g its output's gradient. `in` is A
 * and B's type; `out` is C's (and the addend's): `in` without an addend, `in`
 * or f32 for f16/bf16 with one; `grad` is bias_grad's and bias_addend's: `in`,
 * or f32 for f16/bf16. `c` may be `addend`, `bias_grad` may be `bias_addend`.
 */
void mpcrt_matmul_bias_grad(mpcrt_dtype in, mpcrt_dtype out, mpcrt_dtype grad,
                            const void *a, const void *b, const void *addend,
                            void *c, const void *bias_addend, void *bias_grad,
                            int64_t m, int64_t n, int64_t k, int32_t trans_a,
                            int32_t sums_of_a);

/* mpc.column_sums: sums[i][j], the sum of column j of inputs[i] ([rows,
 * cols] of type `in`) over its rows, for each i < count, as
 * mpcrt_matmul_bias_grad sums its gradient: accumulated in f32 (f64 for
 * f64) and rounded once to `out` (`in`, or f32 for f16/bf16); where
 * `addends` is not null, then added to addends[i][j] (of type `out`) and
 * rounded again, as its bias_addend. sums[i] may be addends[i]. */
void mpcrt_column_sums(mpcrt_dtype in, mpcrt_dtype out, int64_t count,
                       const void *const *inputs, const void *const *addends,
                       void *const *sums, int64_t rows, int64_t cols);

/* mpc.softmax / mpc.log_softmax along the last axis of `rows` rows of
 * `cols` elements (the lowering transposes other axes last), and their
 * backward from the forward's output. */
#define MPCRT_DECLARE_SOFTMAX(SUFFIX, T)                                       \
  void mpcrt_softmax_##SUFFIX(const T *input, T *output, int64_t rows,         \
                              int64_t cols, int32_t log);                      \
  void mpcrt_softmax_backward_##SUFFIX(const T *grad_output, const T *output,  \
                                       T *grad_input, int64_t rows,            \
                                       int64_t cols, int32_t log);
MPCRT_DECLARE_SOFTMAX(f16, uint16_t)
MPCRT_DECLARE_SOFTMAX(bf16, uint16_t)
MPCRT_DECLARE_SOFTMAX(f32, float)
MPCRT_DECLARE_SOFTMAX(f64, double)
#undef MPCRT_DECLARE_SOFTMAX

/* The same with the types of each operand given (one type, or several of
 * f16, bf16 and f32: mpc.softmax from or to f32) and the op's `scale`:
 * softmax(scale * x), and its gradient times scale. Computed in f32 from
 * the inputs widened exactly, the result rounded once to its type, so that
 * with scale 1 it equals the single-type op on f32 with mpcrt_cast before
 * or after. */
void mpcrt_softmax_mixed(mpcrt_dtype in, const void *input, mpcrt_dtype out,
                         void *output, int64_t rows, int64_t cols, int32_t log,
                         double scale);
void mpcrt_softmax_backward_mixed(mpcrt_dtype grad, const void *grad_output,
                                  mpcrt_dtype out, const void *output,
                                  mpcrt_dtype result, void *grad_input,
                                  int64_t rows, int64_t cols, int32_t log,
                                  double scale);

/* mpc.softmax_dropout along the last axis of `rows` rows of `cols`:
 * output = dropout(softmax(scale * input)), the probabilities computed in
 * f32 (f64 for f64) as mpcrt_softmax_mixed computes them, element i kept
 * exactly when mpcrt_dropout_* keeps it at *step, scaled by 1/(1-p) and
 * rounded once to `out`: mpcrt_softmax_mixed to f32 then
 * mpcrt_dropout_mixed, bit for bit, with nothing else written. The
 * backward computes the probabilities and the keep bits again from the
 * input: g = the gradient dropped as mpcrt_dropout_backward_* drops it
 * (rounded to `grad`'s type), grad_input = scale * y * (g - sum(g * y))
 * rounded once to `result`, as mpcrt_softmax_backward_mixed. Where
 * `dropped` is not null the backward also writes there the forward's
 * output, of `grad`'s type (the type of the output's gradient), bit for
 * bit what mpcrt_softmax_dropout writes from the same input. Each type one
 * of f16, bf16 and f32, or all f64. */
void mpcrt_softmax_dropout(mpcrt_dtype in, const void *input, mpcrt_dtype out,
                           void *output, int64_t rows, int64_t cols,
                           double scale, double p, uint64_t seed,
                           const int64_t *step);
void mpcrt_softmax_dropout_backward(mpcrt_dtype grad, const void *grad_output,
                                    mpcrt_dtype in, const void *input,
                                    mpcrt_dtype result, void *grad_input,
                                    void *dropped, int64_t rows, int64_t cols,
                                    double scale, double p, uint64_t seed,
                                    const int64_t *step);

/* ---- Elementwise. */

typedef enum mpcrt_binary_op {
  MPCRT_ADD = 0,
  MPCRT_SUB = 1,
  MPCRT_MUL = 2,
  MPCRT_DIV = 3,
  MPCRT_POW = 4,
} mpcrt_binary_op;

typedef enum mpcrt_unary_op {
  MPCRT_NEG = 0,
  MPCRT_EXP = 1,
  MPCRT_LOG = 2,
  MPCRT_SQRT = 3,
  MPCRT_RSQRT = 4,
  MPCRT_TANH = 5,
  MPCRT_SIGMOID = 6,
  MPCRT_RELU = 7,
  MPCRT_GELU = 8,      /* x * Phi(x), erf form */
  MPCRT_GELU_TANH = 9, /* tanh approximation */
  MPCRT_SIN = 10,
  MPCRT_COS = 11,
} mpcrt_unary_op;

/* out = lhs op rhs over `shape` (rank dims, row-major output). Operand
 * strides are in elements per dimension; a stride of 0 broadcasts. */
#define MPCRT_DECLARE_ELEMENTWISE(SUFFIX, T)                                   \
  void mpcrt_binary_##SUFFIX(mpcrt_binary_op op, const T *lhs,                 \
                             const int64_t *lhs_strides, const T *rhs,         \
                             const int64_t *rhs_strides, T *out,               \
                             const int64_t *shape, int32_t rank);              \
  void mpcrt_unary_##SUFFIX(mpcrt_unary_op op, const T *input, T *out,         \
                            int64_t count);                                    \
  /* out = grad * d op(x)/dx; `saved` is x for relu/gelu, y for tanh and       \
   * sigmoid (what their forward returned). */                                 \
  void mpcrt_unary_grad_##SUFFIX(mpcrt_unary_op op, const T *grad,             \
                                 const T *saved, T *out, int64_t count);
MPCRT_DECLARE_ELEMENTWISE(f16, uint16_t)
MPCRT_DECLARE_ELEMENTWISE(bf16, uint16_t)
MPCRT_DECLARE_ELEMENTWISE(f32, float)
MPCRT_DECLARE_ELEMENTWISE(f64, double)
#undef MPCRT_DECLARE_ELEMENTWISE

/* mpc.compare: out[i] = 1 if lhs pred rhs else 0, one byte per element,
 * over `shape` with broadcasting strides as mpcrt_binary_*. `element` is
 * an mpcrt_dtype or one of the codes below (i1 tensors take a byte per
 * element, 0 or 1). A NaN compares unequal to everything. */
#define MPCRT_ELEMENT_I32 4
#define MPCRT_ELEMENT_I64 5
#define MPCRT_ELEMENT_BOOL 6
typedef enum mpcrt_predicate {
  MPCRT_EQ = 0,
  MPCRT_NE = 1,
  MPCRT_LT = 2,
  MPCRT_LE = 3,
  MPCRT_GT = 4,
  MPCRT_GE = 5,
} mpcrt_predicate;
void mpcrt_compare(mpcrt_predicate predicate, int32_t element, const void *lhs,
                   const int64_t *lhs_strides, const void *rhs,
                   const int64_t *rhs_strides, uint8_t *out,
                   const int64_t *shape, int32_t rank);
/* mpc.where: out[i] = condition ? lhs : rhs over `shape`, each operand
 * with broadcasting strides; values of `element_bytes` bytes are copied
 * as they are. */
void mpcrt_where(int32_t element_bytes, const uint8_t *condition,
                 const int64_t *condition_strides, const void *lhs,
                 const int64_t *lhs_strides, const void *rhs,
                 const int64_t *rhs_strides, void *out, const int64_t *shape,
                 int32_t rank);

/* ---- Reductions and losses. */

typedef enum mpcrt_reduce_op {
  MPCRT_REDUCE_SUM = 0,
  MPCRT_REDUCE_MEAN = 1,
  MPCRT_REDUCE_MAX = 2,
} mpcrt_reduce_op;

/* Reduces the middle dimension of an [outer, reduced, inner] buffer into
 * [outer, inner] (the lowering groups the reduced dimensions). */
#define MPCRT_DECLARE_REDUCE(SUFFIX, T)                                        \
  void mpcrt_reduce_##SUFFIX(mpcrt_reduce_op op, const T *input, T *out,       \
                             int64_t outer, int64_t reduced, int64_t inner);   \
  /* The adjoint of the max: grad shared evenly by the maxima (torch.amax). */ \
  void mpcrt_reduce_max_backward_##SUFFIX(                                     \
      const T *grad, const T *input, const T *max, T *grad_input,              \
      int64_t outer, int64_t reduced, int64_t inner);                          \
  /* Softmax cross-entropy of [rows, classes] logits against integer labels    \
   * (label_bits 32 or 64), the target smoothed by `label_smoothing` in [0,    \
   * 1] (PyTorch's); mean (1) or sum (0) over the rows counted: with           \
   * `ignores`, a row whose label is `ignore_index` adds nothing and is not    \
   * counted (its gradient row is zero; a mean over no row is 0). Another      \
   * row whose label is outside [0, classes) adds nothing either (its          \
   * gradient row is zero); both return 0, or 1 + the position of the first    \
   * such label (for mpcrt_check_label; a backend that checks on the device    \
   * returns 0 and reports at the next mpcrt_download). */                     \
  int64_t mpcrt_cross_entropy_##SUFFIX(                                        \
      const T *logits, const void *labels, int32_t label_bits, T *loss,        \
      int64_t rows, int64_t classes, int32_t mean, int32_t ignores,            \
      int64_t ignore_index, double label_smoothing);                           \
  int64_t mpcrt_cross_entropy_backward_##SUFFIX(                               \
      const T *grad_loss, const T *logits, const void *labels,                 \
      int32_t label_bits, T *grad_logits, int64_t rows, int64_t classes,       \
      int32_t mean, int32_t ignores, int64_t ignore_index,                     \
      double label_smoothing);                                                 \
  /* Top-1 accuracy of [rows, classes] logits against integer labels: the      \
   * fraction of the rows counted (with `ignores`, those whose label is not    \
   * `ignore_index`; 0 of none) whose label is the first index of the row's    \
   * maximum (NaN the maximum), as f32; labels outside [0, classes) count as   \
   * wrong. rows < 2^31. */                                                    \
  void mpcrt_accuracy_##SUFFIX(const T *logits, const void *labels,            \
                               int32_t label_bits, float *accuracy,            \
                               int64_t rows, int64_t classes, int32_t ignores, \
                               int64_t ignore_index);
MPCRT_DECLARE_REDUCE(f16, uint16_t)
MPCRT_DECLARE_REDUCE(bf16, uint16_t)
MPCRT_DECLARE_REDUCE(f32, float)
MPCRT_DECLARE_REDUCE(f64, double)
#undef MPCRT_DECLARE_REDUCE

/* ---- Convolutions: NHWC activations, OHWI filters ([O, kh, kw, C/groups]).
 * conv_transpose2d is conv2d_backward_data. conv2d_add adds `addend` (of the
 * output's shape; it may be the output itself) to the convolution's sums
 * before their one rounding to the output's type. */
typedef struct mpcrt_conv2d_shape {
  int64_t n, h, w, c; /* input */
  int64_t o, kh, kw;  /* output channels, kernel */
  int64_t ho, wo;     /* output spatial size */
  int64_t stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w, groups;
} mpcrt_conv2d_shape;

#define MPCRT_DECLARE_CONV(SUFFIX, T)                                          \
  void mpcrt_conv2d_##SUFFIX(const T *input, const T *filter, T *output,       \
                             const mpcrt_conv2d_shape *shape);                 \
  void mpcrt_conv2d_add_##SUFFIX(const T *input, const T *filter,              \
                                 const T *addend, T *output,                   \
                                 const mpcrt_conv2d_shape *shape);             \
  void mpcrt_conv2d_backward_data_##SUFFIX(const T *grad_output,               \
                                           const T *filter, T *grad_input,     \
                                           const mpcrt_conv2d_shape *shape);   \
  void mpcrt_conv2d_backward_filter_##SUFFIX(const T *grad_output,             \
                                             const T *input, T *grad_filter,   \
                                             const mpcrt_conv2d_shape *shape);
MPCRT_DECLARE_CONV(f16, uint16_t)
MPCRT_DECLARE_CONV(bf16, uint16_t)
MPCRT_DECLARE_CONV(f32, float)
MPCRT_DECLARE_CONV(f64, double)
#undef MPCRT_DECLARE_CONV

/* ---- Layer normalisation over the last `cols` elements of `rows` rows.
 * gamma/beta have their own type (f32 with a low-precision input at O2);
 * the saved mean and 1/std are f32 (f64 for f64 inputs, see docs). The
 * backward's parameter gradients are added to gamma_addend, beta_addend
 * where not null (of gamma's type; each may be its gradient's buffer):
 * the gradient rounded to that type, the addend added, rounded again. */
#define MPCRT_DECLARE_LAYER_NORM(SUFFIX, T, STAT)                              \
  void mpcrt_layer_norm_##SUFFIX(const T *input, mpcrt_dtype param_dtype,      \
                                 const void *gamma, const void *beta,          \
                                 T *output, STAT *mean, STAT *rstd,            \
                                 int64_t rows, int64_t cols, double epsilon);  \
  void mpcrt_layer_norm_backward_##SUFFIX(                                     \
      const T *grad_output, const T *input, const STAT *mean,                  \
      const STAT *rstd, mpcrt_dtype param_dtype, const void *gamma,            \
      T *grad_input, void *grad_gamma, void *grad_beta,                        \
      const void *gamma_addend, const void *beta_addend, int64_t rows,         \
      int64_t cols);
MPCRT_DECLARE_LAYER_NORM(f16, uint16_t, float)
MPCRT_DECLARE_LAYER_NORM(bf16, uint16_t, float)
MPCRT_DECLARE_LAYER_NORM(f32, float, float)
MPCRT_DECLARE_LAYER_NORM(f64, double, double)
#undef MPCRT_DECLARE_LAYER_NORM

/* ---- Data movement, pooling, embedding, dropout, other losses. */

/* out[i] = in[offset + sum_d index_d(i) * in_strides[d]] over `shape`, with
 * `out` dense: transpose, slice (offset, strides), broadcast (stride 0) and
 * the pieces of concat are all one strided copy. `bytes` is the element
 * size. */
void mpcrt_strided_copy(const void *input, int64_t offset,
                        const int64_t *in_strides, void *output,
                        const int64_t *shape, int32_t rank, int32_t bytes);

/* The inverse placement: input is dense over `shape`, written to
 * output[offset + sum_d index_d * out_strides[d]]; other elements of output
 * are untouched (mpc.slice_backward zero-fills first). */
void mpcrt_strided_scatter(const void *input, void *output, int64_t offset,
                           const int64_t *out_strides, const int64_t *shape,
                           int32_t rank, int32_t bytes);

/* Philox4x32-10 (Salmon et al. 2011, as in cuRAND): 4 random words for a
 * 128-bit counter and a 64-bit key. Dropout keeps element i at step t when
 * word (i % 4) of philox(counter, key), as a fraction of 2^32, is >= p, with
 * q = i / 4, counter = {lo32(q), lo32(t), hi32(t), hi32(q)} and key =
 * {lo32(seed), hi32(seed)}: any backend reproduces the mask exactly. */
void mpcrt_philox4x32(const uint32_t counter[4], const uint32_t key[2],
                      uint32_t out[4]);

/* mpc.attention over `heads` independent triples (the product of the
 * leading dimensions): query [sq, d], key [sk, d], value [sk, dv], result
 * [sq, dv], all row-major of type `dtype`; logsumexp [sq] per head, f32 (f64
 * for f64). With `row_heads` > 1 (mpc.attention's layout "bshd") the heads
 * come in groups of `row_heads` that share rows: head n's row i of query
 * starts at element ((n / row_heads * sq + i) * row_heads + n % row_heads)
 * * d, and so for key, value, result and the gradients ([..., s,
 * row_heads, width] arrays); logsumexp stays [heads, sq]. With 1 (or 0)
 * they are [heads, s, width]. Scores and softmax in f32 (f64), the result
 * rounded once. With dropout_p > 0 a probability is kept exactly when
 * mpcrt_dropout_* with `seed` at `*step` keeps the same element of the
 * [heads, sq, sk] probabilities. `mask` (or null): one byte per element,
 * nonzero where the scaled score is replaced by `mask_value`; `mask_layout`
 * holds the scores' shape [lead..., sq, sk] (`mask_rank` <= 8 dimensions)
 * and then the mask's strides over it in elements (0 where it broadcasts).
 * `bias` (or null): f32 values added to the scaled scores (before the
 * mask's fill), `bias_layout` as `mask_layout`. The backward recomputes the
 * probabilities and the dropout mask from the logsumexp and writes the
 * three gradients (none through filled scores; none of the bias). */
void mpcrt_attention(mpcrt_dtype dtype, const void *query, const void *key,
                     const void *value, void *result, void *logsumexp,
                     int64_t heads, int64_t sq, int64_t sk, int64_t d,
                     int64_t dv, int64_t row_heads, double scale,
                     double dropout_p, uint64_t seed, const int64_t *step,
                     const uint8_t *mask, const int64_t *mask_layout,
                     int32_t mask_rank, double mask_value, const float *bias,
                     const int64_t *bias_layout, int32_t bias_rank);
void mpcrt_attention_backward(
    mpcrt_dtype dtype, const void *grad, const void *query, const void *key,
    const void *value, const void *result, const void *logsumexp,
    void *grad_query, void *grad_key, void *grad_value, int64_t heads,
    int64_t sq, int64_t sk, int64_t d, int64_t dv, int64_t row_heads,
    double scale, double dropout_p, uint64_t seed, const int64_t *step,
    const uint8_t *mask, const int64_t *mask_layout, int32_t mask_rank,
    double mask_value, const float *bias, const int64_t *bias_layout,
    int32_t bias_rank);

/* mpc.dropout whose result type differs from its input's (each of f16,
 * bf16 and f32): the mask of mpcrt_dropout_*, the kept values scaled in
 * f32 and rounded once to `out`, so that f32 to f16/bf16 equals
 * mpcrt_dropout_f32 then mpcrt_cast. */
void mpcrt_dropout_mixed(mpcrt_dtype in, const void *input, mpcrt_dtype out,
                         void *output, uint8_t *mask, int64_t count, double p,
                         uint64_t seed, const int64_t *step);

/* mpc.dropout_add: y = dropout(x) + residual over `count` elements of
 * `dtype`, element i kept exactly when mpcrt_dropout_* keeps it at *step,
 * the dropped value and the sum each rounded to `dtype` (the separate ops'
 * roundings); no mask. `residual` may be null: y = dropout(x). `y` may be
 * `x` or `residual`. */
void mpcrt_dropout_add(mpcrt_dtype dtype, const void *x, const void *residual,
                       void *y, int64_t count, double p, uint64_t seed,
                       const int64_t *step);

/* mpc.add_layer_norm over `rows` rows of `cols`: sum = dropout(x) +
 * residual, y = layer_norm(sum) as mpcrt_layer_norm_* (mean and rstd f32,
 * f64 for f64). `residual` holds `residual_rows` rows, a divisor of
 * `rows` (`rows` itself where it does not broadcast): row r adds its row
 * r % residual_rows. The dropout keeps element i exactly when
 * mpcrt_dropout_* of x keeps it at *step (dropout_p 0: every element); the
 * dropped value and the sum are each rounded to `dtype`, as the separate ops
 * round them. Backward: ds = the layer norm's input gradient (+ grad_sum when
 * not null), in f32, rounded once to grad_residual; grad_x = ds through the
 * same dropout; grad_gamma, grad_beta as mpcrt_layer_norm_backward_*.
 * grad_x or grad_residual may be null: not written (grad_x not with
 * grad_x_sums). grad_x_sums, where not null (`cols` of f32, f64 for f64), gets
 * grad_x's column sums: each over the rows of the rounded grad_x values, in
 * that type, as mpcrt_matmul_bias_grad sums its gradient. */
void mpcrt_add_layer_norm(mpcrt_dtype dtype, const void *x,
                          const void *residual, mpcrt_dtype param_dtype,
                          const void *gamma, const void *beta, void *sum,
                          void *y, void *mean, void *rstd, int64_t rows,
                          int64_t cols, int64_t residual_rows, double epsilon,
                          double dropout_p, uint64_t seed, const int64_t *step);
void mpcrt_add_layer_norm_backward(
    mpcrt_dtype dtype, const void *grad, const void *grad_sum, const void *sum,
    const void *mean, const void *rstd, mpcrt_dtype param_dtype,
    const void *gamma, void *grad_x, void *grad_residual, void *grad_gamma,
    void *grad_beta, const void *gamma_addend, const void *beta_addend,
    int64_t rows, int64_t cols, double dropout_p, uint64_t seed,
    const int64_t *step, void *grad_x_sums);

/* Training-mode batch norm, channels last: input [rows, c] with rows =
 * N*H*W. Updates running statistics in place (unbiased variance), saves
 * mean and 1/std (f32) for the backward pass. Parameters and running
 * statistics have type param_dtype. `activation` MPCRT_RELU applies a ReLU
 * to the rounded result (MPCRT_ACTIVATION_NONE: none); the backward's
 * `output`, when not null, is that fused op's output, and its gradient
 * reaches the batch norm as relu_grad(grad_output, output), rounded. With
 * `output` null and `beta` (param_dtype) not null, the backward forms that
 * output again from the input, the saved statistics, gamma and beta, as
 * the forward did (f16, bf16 and f32 inputs: the saved statistics are the
 * ones the forward applied), and reads no output. grad_gamma and
 * grad_beta (param_dtype) are each rounded, added to gamma_addend's and
 * beta_addend's element where not null and rounded again (a separate
 * add's values; the addend may be the gradient itself).
 * batch_norm_inference normalises with the running statistics instead:
 * (x - mean) * rsqrt(var + epsilon) * gamma + beta in the accumulation
 * type, rounded once, then the activation; nothing is updated or saved. */
typedef struct mpcrt_pool2d_shape {
  int64_t n, h, w, c, ho, wo, kh, kw, stride_h, stride_w, pad_h, pad_w;
  int32_t count_include_pad;
} mpcrt_pool2d_shape;

/* mpcrt_batch_norm_* and mpcrt_batch_norm_backward_* (NAME empty), or
 * the synchronised ones (NAME sync_, below). */
#define MPCRT_DECLARE_BATCH_NORM(NAME, SUFFIX, T)                              \
  void mpcrt_##NAME##batch_norm_##SUFFIX(                                      \
      const T *input, mpcrt_dtype param_dtype, const void *gamma,              \
      const void *beta, void *running_mean, void *running_var, T *output,      \
      float *saved_mean, float *saved_invstd, int64_t rows, int64_t c,         \
      double momentum, double epsilon, int32_t activation);                    \
  void mpcrt_##NAME##batch_norm_backward_##SUFFIX(                             \
      const T *grad_output, const T *input, mpcrt_dtype param_dtype,           \
      const void *gamma, const float *saved_mean, const float *saved_invstd,   \
      T *grad_input, void *grad_gamma, void *grad_beta, int64_t rows,          \
      int64_t c, const T *output, const void *beta, const void *gamma_addend,  \
      const void *beta_addend);

#define MPCRT_DECLARE_NN(SUFFIX, T)                                            \
  MPCRT_DECLARE_BATCH_NORM(, SUFFIX, T)                                        \
  void mpcrt_batch_norm_inference_##SUFFIX(                                    \
      const T *input, mpcrt_dtype param_dtype, const void *gamma,              \
      const void *beta, const void *running_mean, const void *running_var,     \
      T *output, int64_t rows, int64_t c, double epsilon, int32_t activation); \
  void mpcrt_max_pool2d_##SUFFIX(const T *input, T *output,                    \
                                 const mpcrt_pool2d_shape *shape);             \
  void mpcrt_max_pool2d_backward_##SUFFIX(const T *grad_output,                \
                                          const T *input, T *grad_input,       \
                                          const mpcrt_pool2d_shape *shape);    \
  /* The same plus `addend` ([n, h, w, c]: addend_row elements from one        \
   * (n, h, w) position to the next, its channels contiguous), each            \
   * gradient rounded to T first, then the sum (mpc.add's values). */          \
  void mpcrt_max_pool2d_backward_add_##SUFFIX(                                 \
      const T *grad_output, const T *input, const T *addend,                   \
      int64_t addend_row, T *grad_input, const mpcrt_pool2d_shape *shape);     \
  void mpcrt_avg_pool2d_##SUFFIX(const T *input, T *output,                    \
                                 const mpcrt_pool2d_shape *shape);             \
  void mpcrt_avg_pool2d_backward_##SUFFIX(const T *grad_output, T *grad_input, \
                                          const mpcrt_pool2d_shape *shape);    \
  /* NHWC [n, h, w, c] -> [n, h*sh, w*sw, c], and its adjoint. */              \
  void mpcrt_upsample_nearest2d_##SUFFIX(const T *input, T *output, int64_t n, \
                                         int64_t h, int64_t w, int64_t c,      \
                                         int64_t sh, int64_t sw);              \
  void mpcrt_upsample_nearest2d_backward_##SUFFIX(                             \
      const T *grad_output, T *grad_input, int64_t n, int64_t h, int64_t w,    \
      int64_t c, int64_t sh, int64_t sw);                                      \
  /* Rows of a [v, d] table; the backward scatter-adds in f32 into a zeroed    \
   * table, or with an addend (which may be grad_table itself) into a copy of  \
   * it: each hit row's sum rounded to T, added to the addend's row and        \
   * rounded again. Indices equal to `padding` (-1: none) add nothing. Both    \
   * return 0, or 1 + the position of the first index outside [0, v) (its      \
   * row then gets nothing from it).                                           \
   */                                                                          \
  int64_t mpcrt_embedding_##SUFFIX(const T *table, int64_t v, int64_t d,       \
                                   const void *indices, int32_t index_bits,    \
                                   int64_t count, T *output);                  \
  int64_t mpcrt_embedding_backward_##SUFFIX(                                   \
      const T *grad_output, const void *indices, int32_t index_bits,           \
      int64_t count, int64_t v, int64_t d, int64_t padding, const T *addend,   \
      T *grad_table);                                                          \
  void mpcrt_dropout_##SUFFIX(const T *input, T *output, uint8_t *mask,        \
                              int64_t count, double p, uint64_t seed,          \
                              const int64_t *step);                            \
  void mpcrt_dropout_backward_##SUFFIX(const T *grad_output,                   \
                                       const uint8_t *mask, T *grad_input,     \
                                       int64_t count, double p);               \
  /* Pointwise losses of `count` elements, mean (1) or sum (0). kind 0:        \
   * mse, 1: bce_with_logits, 2: binary_cross_entropy (log clamped at -100     \
   * as PyTorch does). */                                                      \
  void mpcrt_pointwise_loss_##SUFFIX(int32_t kind, const T *input,             \
                                     const T *target, T *loss, int64_t count,  \
                                     int32_t mean);                            \
  void mpcrt_pointwise_loss_backward_##SUFFIX(                                 \
      int32_t kind, const T *grad_loss, const T *input, const T *target,       \
      T *grad_input, int64_t count, int32_t mean);
MPCRT_DECLARE_NN(f16, uint16_t)
MPCRT_DECLARE_NN(bf16, uint16_t)
MPCRT_DECLARE_NN(f32, float)
MPCRT_DECLARE_NN(f64, double)

/* mpc.batch_norm {sync} and its backward (both backends): the same
 * arguments and results as mpcrt_batch_norm_* and
 * mpcrt_batch_norm_backward_*, with the statistics of every rank of a
 * data-parallel job (PyTorch's SyncBatchNorm). The forward sums each
 * channel's values and row counts over the ranks, then the squared
 * deviations from that mean; the backward sums sum(dy) and sum(dy * xhat)
 * for the input's gradient, while gamma's and beta's gradients stay the
 * rank's own sums (the data-parallel reduction adds them). Sums go
 * through the function mpcrt_set_rank_sum gave on the CPU backend, and on
 * the CUDA backend as each rank's per-channel moments (or sums), in
 * double, gathered by the function mpcrt_set_rank_gather gave and combined
 * in rank order on the device (none: the rank's own, the same bits as
 * mpcrt_batch_norm_*). Every rank has the same rows. */
MPCRT_DECLARE_BATCH_NORM(sync_, f16, uint16_t)
MPCRT_DECLARE_BATCH_NORM(sync_, bf16, uint16_t)
MPCRT_DECLARE_BATCH_NORM(sync_, f32, float)
MPCRT_DECLARE_BATCH_NORM(sync_, f64, double)
#undef MPCRT_DECLARE_NN
#undef MPCRT_DECLARE_BATCH_NORM

/* ---- Loss scaling. Scalars are passed by pointer: they live on the device,
 * and the host never reads them inside a step. */

/* mpc.unscale_and_check: unscaled[t][i] = grads[t][i] * (1 / *scale) in f32
 * for each of `num_tensors` tensors (element type dtypes[t], sizes[t]
 * elements); *found_inf = 1 if any input element is infinite or NaN, else 0.
 * A null unscaled[t] only checks tensor t (the optimizer unscales it). */
void mpcrt_unscale_and_check(const float *scale, int64_t num_tensors,
                             const mpcrt_dtype *dtypes,
                             const void *const *grads, const int64_t *sizes,
                             float *const *unscaled, uint8_t *found_inf);

/* mpc.clip_grad_norm: *norm = sqrt(sum over all tensors of (grads / *scale)^2)
 * (summed in double), *found_inf = 1 if an element or the norm is not
 * finite, *inv_scale = (1 / *scale) * min(1, max_norm / (*norm + 1e-6)) in
 * f32. The gradients are only read. */
void mpcrt_clip_grad_norm(const float *scale, int64_t num_tensors,
                          const mpcrt_dtype *dtypes, const void *const *grads,
                          const int64_t *sizes, double max_norm,
                          float *inv_scale, float *norm, uint8_t *found_inf);

/* mpc.grad_stats: stats = {elements, zero, underflow, nonfinite} over all
 * `num_tensors` gradients; underflow counts nonzero finite elements with
 * |grad / *scale| <= 2^-25 (they round to zero in f16). */
void mpcrt_grad_stats(const float *scale, int64_t num_tensors,
                      const mpcrt_dtype *dtypes, const void *const *grads,
                      const int64_t *sizes, int64_t *stats);

/* mpc.update_loss_scale, in place (see the op for the rule). min_scale <= 0
 * and max_scale = +inf mean no clamp. */
void mpcrt_update_loss_scale(float *scale, int32_t *growth_tracker,
                             int32_t *hysteresis_tracker,
                             const uint8_t *found_inf, double growth_factor,
                             double backoff_factor, int64_t growth_interval,
                             int64_t hysteresis, double min_scale,
                             double max_scale);

/* ---- Optimizer updates, in place on the parameter and its state: the
 * "master-weight update kernel". The gradient (type G) is multiplied by
 * *inv_scale when inv_scale is not null. When found_inf is not null and
 * *found_inf is set, parameter and state are left bit-identical. When copy is
 * not null, it receives the parameter rounded to copy_dtype (always, so it is
 * defined on skipped steps too). Computation is in f32 (f64 for f64).
 * Suffix: <param type>_<grad type>. */
#define MPCRT_DECLARE_OPTIMIZERS(SUFFIX, P, G)                                 \
  void mpcrt_sgd_update_##SUFFIX(                                              \
      P *param, const G *grad, const float *lr, P *momentum_buffer,            \
      const uint8_t *found_inf, const float *inv_scale,                        \
      mpcrt_dtype copy_dtype, void *copy, int64_t count, double momentum,      \
      double dampening, int32_t nesterov, double weight_decay);                \
  void mpcrt_adam_update_##SUFFIX(                                             \
      P *param, const G *grad, P *exp_avg, P *exp_avg_sq, const float *lr,     \
      const int32_t *step, const uint8_t *found_inf, const float *inv_scale,   \
      mpcrt_dtype copy_dtype, void *copy, int64_t count, double beta1,         \
      double beta2, double eps, double weight_decay, int32_t decoupled,        \
      int32_t bias_correction, int32_t lamb);
MPCRT_DECLARE_OPTIMIZERS(f32_f16, float, uint16_t)
MPCRT_DECLARE_OPTIMIZERS(f32_bf16, float, uint16_t)
MPCRT_DECLARE_OPTIMIZERS(f32_f32, float, float)
MPCRT_DECLARE_OPTIMIZERS(f16_f16, uint16_t, uint16_t)
MPCRT_DECLARE_OPTIMIZERS(bf16_bf16, uint16_t, uint16_t)
MPCRT_DECLARE_OPTIMIZERS(f64_f64, double, double)
/* Low-precision parameters with f32 gradients: O3 with gradient
 * accumulation (the accumulated sums stay f32). */
MPCRT_DECLARE_OPTIMIZERS(f16_f32, uint16_t, float)
MPCRT_DECLARE_OPTIMIZERS(bf16_f32, uint16_t, float)
#undef MPCRT_DECLARE_OPTIMIZERS

/* mpcrt_sgd_update_<p>_<g> of `num_tensors` parameters that share the
 * rate, skip flag, unscale factor and hyperparameters, in one call, as
 * mpcrt_adam_update_multi below: momentum_buffers[t] may be null (no
 * momentum), for every tensor or for none. */
void mpcrt_sgd_update_multi(
    int64_t num_tensors, const mpcrt_dtype *param_dtypes,
    const mpcrt_dtype *grad_dtypes, void *const *params,
    const void *const *grads, void *const *momentum_buffers,
    const mpcrt_dtype *copy_dtypes, void *const *copies, const int64_t *sizes,
    const float *lr, const uint8_t *found_inf, const float *inv_scale,
    double momentum, double dampening, int32_t nesterov, double weight_decay);

/* mpcrt_adam_update_<p>_<g> (Adam, or LAMB) of `num_tensors` parameters that
 * share the rate, step, skip flag, unscale factor and hyperparameters, in
 * one call: tensor t has types param_dtypes[t] and grad_dtypes[t] (a pair
 * with a suffix above), its buffers params[t], grads[t], exp_avgs[t],
 * exp_avg_sqs[t] and copies[t] (may be null; rounded to copy_dtypes[t]),
 * and sizes[t] elements. Each tensor gets what its own call would give
 * (exactly, but for LAMB's trust ratio on CUDA, whose norms are summed in
 * another order); the CUDA backend updates them all in one launch per
 * pair of types (and per 36 tensors), LAMB in three. */
void mpcrt_adam_update_multi(
    int64_t num_tensors, const mpcrt_dtype *param_dtypes,
    const mpcrt_dtype *grad_dtypes, void *const *params,
    const void *const *grads, void *const *exp_avgs, void *const *exp_avg_sqs,
    const mpcrt_dtype *copy_dtypes, void *const *copies, const int64_t *sizes,
    const float *lr, const int32_t *step, const uint8_t *found_inf,
    const float *inv_scale, double beta1, double beta2, double eps,
    double weight_decay, int32_t decoupled, int32_t bias_correction,
    int32_t lamb);

/* ---- Numerics checks (--mpc-check-numerics), on the device, nothing read
 * back by a step. For checked op `index` of `count`: amax[2 * index] is the
 * step's largest finite |x|, amax[2 * index + 1] the run's; counts[4 *
 * index + 0..3] add up, over the run, the values that were not finite, the
 * nonzero finite values below 2^-14 (f16's smallest normal) and below 2^-24
 * (its smallest subnormal), and all values; *first is the smallest index
 * of the step whose value held an inf or NaN (count: none).
 * mpcrt_check_numerics records `num_tensors` values at once (one launch on
 * a GPU): tensor t (element type dtypes[t], sizes[t] elements) as op
 * indices[t], the indices distinct. mpcrt_numerics_end appends a step with
 * one to events ([0]: the number of such steps; then a ring of 16 (step
 * counter, first index) pairs at 2 + 2 * (n % 16)) and copies the step's
 * amax column to event_amax. */
void mpcrt_numerics_begin(int32_t *first, float *amax, int64_t count);
void mpcrt_check_numerics(int64_t num_tensors, const mpcrt_dtype *dtypes,
                          const void *const *inputs, const int64_t *sizes,
                          const int64_t *indices, int32_t *first, float *amax,
                          int64_t *counts);
void mpcrt_numerics_end(const int32_t *first, int64_t count,
                        const int64_t *step, int64_t *events, const float *amax,
                        float *event_amax);

/* ---- Buffers, for the program that drives compiled steps: memory the
 * backend's kernels address (host memory on the CPU, device memory on
 * CUDA), zeroed and 256-byte aligned, and copies between it and the host.
 * A download waits for the work enqueued before it. */
void *mpcrt_buffer_alloc(int64_t bytes);
void mpcrt_buffer_free(void *buffer);
/* The bytes the backend holds now: its buffers and, on CUDA, the cuBLASLt
 * and cuDNN workspaces and scratch buffers (what PyTorch's
 * max_memory_allocated counts of its own). The CPU counts its buffers
 * only: kernels' temporaries come and go. */
int64_t mpcrt_memory_bytes(void);
void mpcrt_upload(void *buffer, const void *host, int64_t bytes);
void mpcrt_download(void *host, const void *buffer, int64_t bytes);
/* A step's input batch, uploaded while the work already enqueued runs:
 * `host` may be reused when the call returns, and `buffer` holds the bytes
 * for the work enqueued after the next mpcrt_inputs_ready, not before it
 * (the step before still reads the previous batch). CUDA: copied to pinned
 * memory, then to a staging buffer on a second stream; mpcrt_inputs_ready
 * orders the step's stream after that copy and moves the staged bytes into
 * `buffer` (a device-to-device copy). The CPU copies at once. */
void mpcrt_upload_input(void *buffer, const void *host, int64_t bytes);
void mpcrt_inputs_ready(void);
/* A batch from a dataset kept in the backend's memory (the runner's
 * --data-on-device): row rows[r] (a host array of `count` row numbers) of
 * `src`, `row_elements` elements of type `from`, becomes row r of `dst`,
 * of type `to` (f16/bf16 rows widened exactly to f32/f64, or the same
 * type). With raw_bytes > 0 the elements are copied as units of that many
 * bytes (integer data) and from/to are not read. Enqueued in order with
 * the steps. */
void mpcrt_gather_rows(const void *src, mpcrt_dtype from, void *dst,
                       mpcrt_dtype to, int64_t row_elements,
                       const int64_t *rows, int64_t count, int32_t raw_bytes);
/* How many more bytes of buffers the backend can hold now (CUDA: the
 * device's free memory; CPU: the memory available to the process, the
 * smaller of the system's available memory, what its address-space limit
 * leaves and what MPCRT_MEMORY_LIMIT leaves), or -1 when unknown. On the
 * CPU, the environment variable MPCRT_MEMORY_LIMIT (bytes) caps what
 * mpcrt_buffer_alloc hands out, as a device of that size would. */
int64_t mpcrt_free_bytes(void);

/* Step graphs: mpcrt_graph_begin returns 1 when the backend records the
 * work enqueued until mpcrt_graph_end instead of running it (CUDA: stream
 * capture into a CUDA Graph), 0 when it cannot (the CPU); mpcrt_graph_end
 * keeps the recording in `slot` (0 to MPCRT_GRAPH_SLOTS-1, one per entry
 * function: the step, the accumulation micro-step, the evaluation step)
 * and mpcrt_graph_launch(slot) runs it once more. The runner records each
 * entry after a first eager call, then launches it: one launch per call.
 * mpcrt_graph_end returns 1 when a graph was recorded, 0 when recording
 * failed (CUDA: the capture is discarded with a warning): nothing recorded
 * ran, so the caller runs that entry eagerly, from then on. */
/* Host threads of the backend's kernels (the CPU's kernels and OpenBLAS;
 * CUDA ignores it). A count <= 0 restores the default: OMP_NUM_THREADS
 * when set, else every core the process may use. Results do not depend
 * on it. */
void mpcrt_set_threads(int32_t count);
int32_t mpcrt_threads(void);

#define MPCRT_GRAPH_SLOTS 4
int32_t mpcrt_graph_begin(void);
int32_t mpcrt_graph_end(int32_t slot);
void mpcrt_graph_launch(int32_t slot);

/* ---- Support for compiled steps. */

/* Byte copies and zero fills of buffers (overlap allowed in the copy). */
void mpcrt_copy(void *dst, const void *src, int64_t bytes);
void mpcrt_zero(void *dst, int64_t bytes);

/* Global initialisers, deterministic from the seed on every backend:
 * `count` elements of `dtype` set to `value`, or drawn uniformly from
 * [a, b) (normal = 0) or from N(a, b^2) (normal = 1, Box-Muller). Pair q of
 * elements comes from philox4x32(counter = {lo32(q), 0, 0, hi32(q)}, key =
 * seed): words 0-1 make the first 53-bit uniform, words 2-3 the second. */
void mpcrt_fill(mpcrt_dtype dtype, void *dst, int64_t count, double value);
void mpcrt_fill_random(mpcrt_dtype dtype, void *dst, int64_t count,
                       int32_t normal, double a, double b, uint64_t seed);

/* The step counter that seeds dropout: the entry function increments it at
 * its end. */
void mpcrt_increment_step(int64_t *step);

/* mpc.lr_schedule: *lr = the rate of update *step (1-based); kind 0
 * constant, 1 linear warm-up, 2 warm-up then cosine decay to min_lr at
 * total, 3 PyTorch's OneCycleLR over total steps (base = max_lr;
 * pct_start, div_factor, final_div_factor, three_phase), 4 StepLR (gamma
 * every step_size updates), 5 ExponentialLR (gamma). Computed in double,
 * stored as float. */
void mpcrt_lr_schedule(const int32_t *step, float *lr, int32_t kind,
                       double base, int64_t warmup, int64_t total,
                       double min_lr, double gamma, int64_t step_size,
                       double pct_start, double div_factor,
                       double final_div_factor, int32_t three_phase);

/* mpc.increment: *out = *in + 1 (an i32 counter such as Adam's step), or
 * *in when skip is not null and *skip is set. */
void mpcrt_increment_i32(const int32_t *in, int32_t *out, const uint8_t *skip);

/* Stops the program with a message naming `where` when an embedding kernel
 * returned a bad index (code = 1 + its position); nothing when code is 0. */
void mpcrt_check_index(int64_t code, const char *where);
/* The same for a cross-entropy label outside [0, classes). */
void mpcrt_check_label(int64_t code, int64_t classes, const char *where);

/* ---- Data parallel (--mpc-data-parallel): the ranks of one job.
 *
 * Implemented apart from the backends: a job of one process (every
 * executable compiled without --data-parallel), MPI (the CPU backend) and
 * NCCL (the CUDA backend, on its stream). The training executable calls
 * mpcrt_comm_init first and mpcrt_comm_finalize last. */

/* Joins the job (launched by mpirun: MPI_Init; otherwise a job of one).
 * Returns 0, or non-zero after a message on stderr. */
int32_t mpcrt_comm_init(void);
int32_t mpcrt_comm_rank(void);
int32_t mpcrt_comm_size(void);
/* The rank among the job's processes on this machine (its GPU). */
int32_t mpcrt_comm_local_rank(void);
/* Collective `slot` of a step: starts the sum over every rank of `count`
 * elements of `dtype` at `data`, in place; each element is accumulated in
 * rank order (f32 for f16/bf16/f32, f64 for f64), rounded once, and every
 * rank receives the same bits. The data must not be read or written until
 * mpcrt_comm_all_reduce_wait(slot) has returned. */
void mpcrt_comm_all_reduce_start(int32_t slot, mpcrt_dtype dtype, void *data,
                                 int64_t count);
void mpcrt_comm_all_reduce_wait(int32_t slot);
/* Host memory, between steps: `values` summed over the ranks in rank
 * order (the same bits on every rank). */
void mpcrt_comm_host_sum(double *values, int64_t count);
/* Host memory: all[r] = rank r's `value` (all holds size() values). */
void mpcrt_comm_host_gather(uint64_t value, uint64_t *all);
/* The backend's memory (the device's on CUDA, in order on its stream):
 * every rank's `bytes` at `mine` into `all` (size() * bytes), rank r's at
 * all + r * bytes; what a synchronised batch norm exchanges on a device.
 * `mine` may be `all` + rank() * bytes. */
void mpcrt_comm_all_gather(const void *mine, void *all, int64_t bytes);
/* Ends this rank with exit status `code`, its output flushed, and with it
 * the job: the launcher ends the other ranks (never returns). */
void mpcrt_comm_abort(int32_t code);
void mpcrt_comm_finalize(void);

/* The rank whose dropout masks this process draws (0 by default): rank r
 * keys its Philox streams with seed ^ (r * 0x9e3779b97f4a7c15), so rank 0
 * draws the masks of a single-process run. Set before the first step. */
void mpcrt_set_rank(int32_t rank);

/* The sum over the ranks that mpcrt_sync_batch_norm_* use: `count`
 * doubles summed in place, in rank order, the same bits on every rank
 * (the training executable gives mpcrt_comm_host_sum). Null (the
 * default): each rank's own. */
void mpcrt_set_rank_sum(void (*sum)(double *values, int64_t count));
/* The gather over the `ranks` ranks of a job that a device backend's
 * mpcrt_sync_batch_norm_* use (the training executable gives
 * mpcrt_comm_all_gather). Null, or one rank (the default): each rank's
 * own. The CPU backend uses mpcrt_set_rank_sum's instead. */
void mpcrt_set_rank_gather(int32_t ranks,
                           void (*gather)(const void *mine, void *all,
                                          int64_t bytes));

#ifdef __cplusplus
}
#endif

#endif /* MPC_RUNTIME_MPCRT_H */
