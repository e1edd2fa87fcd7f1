//===- Formulas.h - the element formulas both backends compute --*- C++ -*-===//
//
// One definition of every per-element formula, compiled by the host
// compiler for the CPU reference and by nvcc (as __host__ __device__) for
// the CUDA backend: the backends differ in how they loop, never in what
// they compute. `A` is the accumulation type (float, or double for f64).
// Math functions are called unqualified: std:: overloads on the host, the
// CUDA math library's on the device.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_LIB_RUNTIME_FORMULAS_H
#define MPC_LIB_RUNTIME_FORMULAS_H

#include "mpc/Runtime/mpcrt.h"

#include <cmath>
#include <cstdint>

#ifdef __CUDACC__
#define MPCRT_HD __host__ __device__
#else
#define MPCRT_HD
#endif

namespace mpcrt::formulas {

using std::ceil;
using std::cos;
using std::erf;
using std::exp;
using std::floor;
using std::fmax;
using std::isfinite;
using std::log;
using std::pow;
using std::sqrt;
using std::tanh;

template <typename A> MPCRT_HD A binary(mpcrt_binary_op op, A x, A y) {
  switch (op) {
  case MPCRT_ADD:
    return x + y;
  case MPCRT_SUB:
    return x - y;
  case MPCRT_MUL:
    return x * y;
  case MPCRT_DIV:
    return x / y;
  case MPCRT_POW:
    return pow(x, y);
  }
  return A(NAN);
}

/// `a pred b` (mpc.compare); a NaN compares unequal to everything.
template <typename A> MPCRT_HD bool compare(mpcrt_predicate p, A a, A b) {
  switch (p) {
  case MPCRT_EQ:
    return a == b;
  case MPCRT_NE:
    return !(a == b);
  case MPCRT_LT:
    return a < b;
  case MPCRT_LE:
    return a <= b;
  case MPCRT_GT:
    return a > b;
  case MPCRT_GE:
    return a >= b;
  }
  return false;
}

/// 1 / sqrt(2) and 1 / sqrt(2 pi): products by them, not divisions (on the
/// GPU a division is some ten instructions, and the f16 GELU pair is bound
/// by its instructions, docs/Benchmarks.md).
inline constexpr double kInvSqrt2 = 0.70710678118654752440;
inline constexpr double kInvSqrt2Pi = 0.39894228040143267794;

/// The standard normal CDF.
template <typename A> MPCRT_HD A phi(A x) {
  return A(0.5) * (A(1) + erf(x * A(kInvSqrt2)));
}

template <typename A> MPCRT_HD A geluTanhInner(A x) {
  return sqrt(A(2) / A(M_PI)) * (x + A(0.044715) * x * x * x);
}

template <typename A> MPCRT_HD A unary(mpcrt_unary_op op, A x) {
  switch (op) {
  case MPCRT_NEG:
    return -x;
  case MPCRT_EXP:
    return exp(x);
  case MPCRT_LOG:
    return log(x);
  case MPCRT_SQRT:
    return sqrt(x);
  case MPCRT_RSQRT:
    return A(1) / sqrt(x);
  case MPCRT_TANH:
    return tanh(x);
  case MPCRT_SIGMOID:
    return A(1) / (A(1) + exp(-x));
  case MPCRT_RELU:
    return x <= A(0) ? A(0) : x; // NaN propagates, as in PyTorch
  case MPCRT_GELU:
    return x * phi(x);
  case MPCRT_GELU_TANH:
    return A(0.5) * x * (A(1) + tanh(geluTanhInner(x)));
  case MPCRT_SIN:
    return sin(x);
  case MPCRT_COS:
    return cos(x);
  }
  return A(NAN);
}

/// Whether derivative() below has a case for `op` (NaN otherwise).
constexpr bool hasDerivative(mpcrt_unary_op op) {
  return op == MPCRT_TANH || op == MPCRT_SIGMOID || op == MPCRT_RELU ||
         op == MPCRT_GELU || op == MPCRT_GELU_TANH;
}

/// d op / dx at the saved value (x, or y for tanh and sigmoid).
template <typename A> MPCRT_HD A derivative(mpcrt_unary_op op, A s) {
  switch (op) {
  case MPCRT_TANH:
    return A(1) - s * s;
  case MPCRT_SIGMOID:
    return s * (A(1) - s);
  case MPCRT_RELU:
    return s <= A(0) ? A(0) : A(1); // NaN passes the gradient through
  case MPCRT_GELU:
    return phi(s) + s * exp(-s * s * A(0.5)) * A(kInvSqrt2Pi);
  case MPCRT_GELU_TANH: {
    A t = tanh(geluTanhInner(s));
    A inner = sqrt(A(2) / A(M_PI)) * (A(1) + A(3) * A(0.044715) * s * s);
    return A(0.5) * (A(1) + t) + A(0.5) * s * (A(1) - t * t) * inner;
  }
  default:
    return A(NAN);
  }
}

/// Element i of an index array of 32- or 64-bit integers (labels,
/// embedding indices).
MPCRT_HD inline int64_t indexAt(const void *indices, int32_t bits, int64_t i) {
  return bits == 64 ? static_cast<const int64_t *>(indices)[i]
                    : static_cast<const int32_t *>(indices)[i];
}

/// An embedding backward sums a row's gradients in segments of this many
/// of its positions (in position order), each from zero, then adds the
/// segments' sums in order: a row at many positions (a frequent token,
/// padding) is summed by as many blocks in parallel on the CUDA backend,
/// and the CPU reference adds in the same order (the same bits). A row at
/// no more positions than this is one segment: a plain sum in order.
inline constexpr int64_t kEmbeddingSegment = 32;

/// The label a cross-entropy or accuracy does not count (PyTorch's
/// ignore_index), where `ignores`.
struct IgnoredLabel {
  bool ignores = false;
  int64_t index = 0;
  MPCRT_HD bool operator()(int64_t label) const {
    return ignores && label == index;
  }
};

/// PyTorch's label smoothing `epsilon` of a cross-entropy over `classes`:
/// the target is (1 - epsilon) on the label plus epsilon / classes on
/// every class, so a row's term is lse - (1 - epsilon) x[y] - epsilon
/// mean(x) and its gradient p - (1 - epsilon) [c == y] - epsilon / classes.
template <typename A> struct LabelSmoothing {
  A onLabel = 1, onEach = 0; // the target's weights
  MPCRT_HD LabelSmoothing(double epsilon, int64_t classes)
      : onLabel(A(1 - epsilon)), onEach(A(epsilon / double(classes))) {}
  MPCRT_HD A target(bool isLabel) const {
    return (isLabel ? onLabel : A(0)) + onEach;
  }
};

/// Pointwise losses: 0 mse, 1 bce_with_logits (PyTorch's stable form),
/// 2 binary_cross_entropy (log clamped at -100, as PyTorch).
template <typename A> MPCRT_HD A pointwiseLoss(int32_t kind, A x, A t) {
  switch (kind) {
  case 0:
    return (x - t) * (x - t);
  case 1: {
    A m = fmax(-x, A(0));
    return (A(1) - t) * x + m + log(exp(-m) + exp(-x - m));
  }
  default:
    return -(t * fmax(log(x), A(-100)) +
             (A(1) - t) * fmax(log(A(1) - x), A(-100)));
  }
}

template <typename A> MPCRT_HD A pointwiseLossGrad(int32_t kind, A x, A t) {
  switch (kind) {
  case 0:
    return A(2) * (x - t);
  case 1:
    return A(1) / (A(1) + exp(-x)) - t;
  default:
    return (x - t) / fmax((A(1) - x) * x, A(1e-12));
  }
}

/// The dropout key of rank `rank` of a data-parallel job (mpcrt_set_rank):
/// rank 0 keeps `seed`, so its masks are a single process's.
MPCRT_HD inline uint64_t rankSeed(uint64_t seed, int32_t rank) {
  return seed ^ (static_cast<uint64_t>(rank) * 0x9e3779b97f4a7c15ULL);
}

/// The high 32 bits of the 64-bit product a b. On the device the
/// multiply-high instruction: written as a 64-bit product, NVVM kept the
/// Philox rounds below in 64-bit registers (64-bit multiplies, XORs and
/// masks in the PTX of every dropout kernel).
MPCRT_HD inline uint32_t mulHigh(uint32_t a, uint32_t b) {
#ifdef __CUDA_ARCH__
  return __umulhi(a, b);
#else
  return static_cast<uint32_t>((static_cast<uint64_t>(a) * b) >> 32);
#endif
}

/// Division of 32-bit indices by a divisor fixed before a launch, as a
/// multiply-high, an add and a shift (Granlund and Montgomery 1994; the
/// form of PyTorch's IntDivider): a division by a value the compiler does
/// not know takes about 20 instructions on a GPU, and the strided kernels
/// divide each index by every dimension. Exact for every divisor in
/// [1, 2^31] and every n below 2^31 (t <= n, so t + n does not wrap);
/// the default divides by 1.
struct FastDivider {
  uint32_t magic = 1, shift = 0;
  FastDivider() = default;
  explicit FastDivider(uint32_t divisor) {
    while ((uint64_t(1) << shift) < divisor)
      ++shift;
    magic = static_cast<uint32_t>(
        (uint64_t(1) << 32) * ((uint64_t(1) << shift) - divisor) / divisor + 1);
  }
  MPCRT_HD uint32_t divide(uint32_t n) const {
    return (mulHigh(n, magic) + n) >> shift;
  }
};

/// Philox4x32-10 (Salmon et al. 2011) on counter `c`, in place.
MPCRT_HD inline void philox4x32(uint32_t c[4], uint32_t k0, uint32_t k1) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    uint32_t hi0 = mulHigh(0xD2511F53u, c[0]), lo0 = 0xD2511F53u * c[0];
    uint32_t hi1 = mulHigh(0xCD9E8D57u, c[2]), lo1 = 0xCD9E8D57u * c[2];
    c[0] = hi1 ^ c[1] ^ k0;
    c[1] = lo1;
    c[2] = hi0 ^ c[3] ^ k1;
    c[3] = lo0;
  }
}

/// An attention mask (mpcrt_attention): for the scores [lead..., sq, sk]
/// (`rank` dimensions, `shape`), the mask's strides in bytes per dimension
/// (0 where it broadcasts); a nonzero byte fills that score with `value`.
constexpr int kMaxAttentionRank = 8;
struct AttentionMask {
  const uint8_t *mask = nullptr;
  const float *bias = nullptr; // added to the scaled scores
  int32_t rank = 0;
  int64_t shape[kMaxAttentionRank] = {};
  int64_t strides[kMaxAttentionRank] = {};
  int64_t biasStrides[kMaxAttentionRank] = {};
  double value = 0;
};

/// The mask and additive bias of mpcrt_attention's arguments (mpcrt.h):
/// each layout is the scores' shape then the tensor's strides over it.
inline AttentionMask attentionMask(const uint8_t *mask, const int64_t *layout,
                                   int32_t rank, double value,
                                   const float *bias = nullptr,
                                   const int64_t *biasLayout = nullptr,
                                   int32_t biasRank = 0) {
  AttentionMask m;
  if (mask) {
    m.mask = mask;
    m.rank = rank;
    m.value = value;
    for (int32_t d = 0; d < rank; ++d) {
      m.shape[d] = layout[d];
      m.strides[d] = layout[rank + d];
    }
  }
  if (bias) {
    m.bias = bias;
    m.rank = biasRank;
    for (int32_t d = 0; d < biasRank; ++d) {
      m.shape[d] = biasLayout[d];
      m.biasStrides[d] = biasLayout[biasRank + d];
    }
  }
  return m;
}

/// The element of score (h, i, j) in a tensor of `strides` over the
/// scores: h indexes the flattened leading dimensions (the last fastest).
MPCRT_HD inline int64_t scoreOffset(const AttentionMask &m,
                                    const int64_t *strides, int64_t h,
                                    int64_t i, int64_t j) {
  int64_t at = i * strides[m.rank - 2] + j * strides[m.rank - 1];
  for (int d = m.rank - 3; d >= 0; --d) {
    at += (h % m.shape[d]) * strides[d];
    h /= m.shape[d];
  }
  return at;
}

/// Head h's scores (i, j) from their dot products, in A: scaled plus the
/// bias (0 without one), or the mask's fill where the mask holds; every
/// backend's. The mask's and bias's offsets for the head are taken once
/// (scoreOffset divides by each leading dimension), not for every score.
template <typename A = float> struct HeadScores {
  const uint8_t *mask;
  const float *bias;
  int64_t maskRow = 0, maskColumn = 0, biasRow = 0, biasColumn = 0;
  A fill, scale;
  MPCRT_HD HeadScores(const AttentionMask &m, double scale, int64_t h)
      : mask(m.mask), bias(m.bias), fill(static_cast<A>(m.value)),
        scale(static_cast<A>(scale)) {
    if (mask) {
      mask += scoreOffset(m, m.strides, h, 0, 0);
      maskRow = m.strides[m.rank - 2];
      maskColumn = m.strides[m.rank - 1];
    }
    if (bias) {
      bias += scoreOffset(m, m.biasStrides, h, 0, 0);
      biasRow = m.biasStrides[m.rank - 2];
      biasColumn = m.biasStrides[m.rank - 1];
    }
  }
  MPCRT_HD bool filled(int64_t i, int64_t j) const {
    return mask && mask[i * maskRow + j * maskColumn] != 0;
  }
  MPCRT_HD A operator()(int64_t i, int64_t j, A dot) const {
    return filled(i, j)
               ? fill
               : scale * dot +
                     (bias ? static_cast<A>(bias[i * biasRow + j * biasColumn])
                           : A(0));
  }
};

/// Where the rows of an attention operand's heads lie (mpcrt_attention's
/// row_heads): [heads / inner, s, inner, width], `inner` heads sharing
/// each row (mpc.attention's layout "bshd"), or [heads, s, width] (inner
/// 1, "bhsd").
struct HeadRows {
  int64_t inner = 1;
  /// Head n's first element in an operand of `rows` rows of `width`.
  MPCRT_HD int64_t first(int64_t n, int64_t rows, int64_t width) const {
    return (n / inner * rows * inner + n % inner) * width;
  }
  /// The distance between two rows of a head.
  MPCRT_HD int64_t stride(int64_t width) const { return inner * width; }
};

/// The least word that dropout with probability `p` keeps, as a 64-bit
/// integer (2^32 would keep none): w >= keepThreshold(p) exactly when
/// w >= p * 2^32, the fraction's comparison (p * 2^32 is exact in double),
/// as one integer comparison per element instead of a conversion to
/// double and a double comparison.
MPCRT_HD inline uint64_t keepThreshold(double p) {
  return p <= 0 ? 0 : static_cast<uint64_t>(ceil(p * 4294967296.0));
}

/// The keep bits of a Philox group's four words: bit e set where word e is
/// kept (at least `threshold`, keepThreshold(p)).
MPCRT_HD inline uint32_t keepBitsOf(const uint32_t words[4],
                                    uint64_t threshold) {
  uint32_t bits = 0;
  for (int e = 0; e < 4; ++e)
    bits |= uint32_t(words[e] >= threshold) << e;
  return bits;
}

/// Whether dropout with probability `p` keeps element `i` at `step` under
/// the (rank's) key `seed`: word i % 4 of philox({lo(i/4), lo(step),
/// hi(step), hi(i/4)}, seed), as a fraction of 2^32, is >= p (mpcrt.h).
/// One element's bit, for ops that draw the mask out of order;
/// dropoutWords gives the four words of elements 4q..4q+3.
MPCRT_HD inline void dropoutWords(uint64_t seed, int64_t step, uint64_t q,
                                  uint32_t words[4]) {
  words[0] = static_cast<uint32_t>(q);
  words[1] = static_cast<uint32_t>(step);
  words[2] = static_cast<uint32_t>(static_cast<uint64_t>(step) >> 32);
  words[3] = static_cast<uint32_t>(q >> 32);
  philox4x32(words, static_cast<uint32_t>(seed),
             static_cast<uint32_t>(seed >> 32));
}

/// The dropout's keep bits of elements taken in increasing order, one
/// Philox call per group of four (dropoutWords) rather than one per
/// element; all kept at p = 0. The group's four bits are kept, not its
/// words: an array indexed by i % 4 would live in a GPU thread's local
/// memory (a stack), one access per element.
class KeepBits {
public:
  MPCRT_HD KeepBits(double p, uint64_t seed, int64_t step)
      : p(p), threshold(keepThreshold(p)), seed(seed), step(step) {}
  MPCRT_HD bool operator()(int64_t i) {
    if (p == 0)
      return true;
    uint64_t q = static_cast<uint64_t>(i) / 4;
    if (q != cached) {
      uint32_t words[4];
      dropoutWords(seed, step, q, words);
      bits = keepBitsOf(words, threshold);
      cached = q;
    }
    return bits >> (i % 4) & 1;
  }
  /// The keep bits of group q's four elements 4q .. 4q + 3 (bit e:
  /// element 4q + e) from one Philox call; all four at p = 0. Where a
  /// kernel's group of four is a Philox group (its first element a
  /// multiple of 4), one call site instead of operator()'s four: each of
  /// those is a copy of the Philox rounds in the kernel's code.
  MPCRT_HD uint32_t group(uint64_t q) const {
    if (p == 0)
      return 0xF;
    uint32_t words[4];
    dropoutWords(seed, step, q, words);
    return keepBitsOf(words, threshold);
  }
  /// The keep bits of the `count` (at most 32) elements from `first`
  /// (bit e: element first + e), their groups' calls in a loop: one copy
  /// of the Philox rounds in a kernel's code where calls of operator()
  /// for each element of an unrolled loop each inlined one.
  MPCRT_HD uint64_t run(uint64_t first, int count) const {
    uint64_t all = (uint64_t(1) << count) - 1;
    if (p == 0)
      return all;
    uint64_t q0 = first / 4;
    int offset = static_cast<int>(first % 4);
    int groups = (offset + count + 3) / 4;
    uint64_t bits = 0;
#if defined(__CUDA_ARCH__)
#pragma unroll 1
#endif
    for (int g = 0; g < groups; ++g)
      bits |= uint64_t(group(q0 + g)) << (4 * g);
    return bits >> offset & all;
  }

private:
  double p;
  uint64_t threshold;
  uint64_t seed;
  int64_t step;
  uint64_t cached = ~uint64_t(0);
  uint32_t bits = 0;
};

MPCRT_HD inline bool dropoutKeeps(uint64_t seed, int64_t step, int64_t i,
                                  double p) {
  uint32_t words[4];
  dropoutWords(seed, step, static_cast<uint64_t>(i) / 4, words);
  return words[i % 4] >= keepThreshold(p);
}

/// Uniform in [0, 1) with 53 random bits from two words.
MPCRT_HD inline double unitInterval(uint32_t hi, uint32_t lo) {
  return ((static_cast<uint64_t>(hi) << 21) ^ (lo >> 11)) *
         (1.0 / 9007199254740992.0);
}

/// PyTorch's cosine annealing from `start` to `end`, `pct` of the way.
MPCRT_HD inline double annealCos(double start, double end, double pct) {
  return end + (start - end) / 2.0 * (cos(M_PI * pct) + 1.0);
}

/// PyTorch's OneCycleLR (anneal_strategy='cos', cycle_momentum=False) at
/// scheduler step `s` (0-based), held at its final rate after the last
/// step (where PyTorch raises).
MPCRT_HD inline double oneCycle(double s, double maxLr, int64_t total,
                                double pctStart, double divFactor,
                                double finalDivFactor, bool threePhase) {
  double initial = maxLr / divFactor, minLr = initial / finalDivFactor;
  double t = static_cast<double>(total);
  double ends[3], from[3], to[3];
  int phases;
  if (threePhase) {
    phases = 3;
    ends[0] = pctStart * t - 1, from[0] = initial, to[0] = maxLr;
    ends[1] = 2 * pctStart * t - 2, from[1] = maxLr, to[1] = initial;
    ends[2] = t - 1, from[2] = initial, to[2] = minLr;
  } else {
    phases = 2;
    ends[0] = pctStart * t - 1, from[0] = initial, to[0] = maxLr;
    ends[1] = t - 1, from[1] = maxLr, to[1] = minLr;
  }
  double start = 0;
  for (int i = 0; i < phases; ++i) {
    if (s <= ends[i] || i == phases - 1) {
      double pct = (s - start) / (ends[i] - start);
      return annealCos(from[i], to[i], pct > 1.0 ? 1.0 : pct);
    }
    start = ends[i];
  }
  return minLr;
}

/// The learning rate of update `step` (see mpcrt_lr_schedule).
MPCRT_HD inline double learningRate(int32_t step, int32_t kind, double base,
                                    int64_t warmup, int64_t total, double minLr,
                                    double gamma, int64_t stepSize,
                                    double pctStart, double divFactor,
                                    double finalDivFactor, bool threePhase) {
  // PyTorch's schedulers: update t uses the rate after t - 1 calls of
  // scheduler.step().
  double done = static_cast<double>(step) - 1.0;
  switch (kind) {
  case 3:
    return oneCycle(done, base, total, pctStart, divFactor, finalDivFactor,
                    threePhase);
  case 4:
    return base * pow(gamma, floor(done / static_cast<double>(stepSize)));
  case 5:
    return base * pow(gamma, done);
  default:
    break;
  }
  double t = step, rate = base;
  if (kind != 0 && t < static_cast<double>(warmup))
    rate = base * t / static_cast<double>(warmup);
  else if (kind == 2) {
    double progress =
        (t - static_cast<double>(warmup)) / static_cast<double>(total - warmup);
    progress = progress < 0.0 ? 0.0 : progress > 1.0 ? 1.0 : progress;
    rate = minLr + (base - minLr) * 0.5 * (1.0 + cos(M_PI * progress));
  }
  return rate;
}

/// LAMB (Apex's FusedLAMB, grad_averaging on): Adam's moments, the update
/// direction u = m_hat / (sqrt(v_hat) + eps) (+ weight_decay * p when
/// decoupled, Apex's adam_w_mode), then p -= lr * trustRatio * u.
template <typename A> struct Lamb {
  A inv, b2, oneMinusB1, oneMinusB2, correction1, correction2, eps, weightDecay;
  bool decoupled;

  MPCRT_HD Lamb(int32_t step, A inv, double beta1, double beta2, double epsilon,
                double weightDecay, bool decoupled, bool biasCorrection)
      : inv(inv), b2(static_cast<A>(beta2)),
        oneMinusB1(static_cast<A>(1 - beta1)),
        oneMinusB2(static_cast<A>(1 - beta2)), correction1(1), correction2(1),
        eps(static_cast<A>(epsilon)), weightDecay(static_cast<A>(weightDecay)),
        decoupled(decoupled) {
    if (biasCorrection) {
      correction1 = static_cast<A>(1 - pow(beta1, static_cast<double>(step)));
      correction2 =
          static_cast<A>(sqrt(1 - pow(beta2, static_cast<double>(step))));
    }
  }

  /// The update direction of one element; updates the moments m and v.
  MPCRT_HD A direction(A p, A g, A &m, A &v) const {
    g = g * inv;
    if (!decoupled && weightDecay != A(0))
      g += weightDecay * p;
    m += oneMinusB1 * (g - m);
    v = b2 * v + oneMinusB2 * g * g;
    A u = (m / correction1) / (sqrt(v) / correction2 + eps);
    if (decoupled && weightDecay != A(0))
      u += weightDecay * p;
    return u;
  }
};

/// LAMB's trust ratio ||p|| / ||u||, 1 when either norm is 0 (Apex).
MPCRT_HD inline double trustRatio(double paramNorm, double updateNorm) {
  return paramNorm > 0 && updateNorm > 0 ? paramNorm / updateNorm : 1.0;
}

/// mpc.clip_grad_norm's scalars from the sum of squares of the scaled
/// gradients: a non-finite element makes the sum, and so the norm, not
/// finite.
MPCRT_HD inline void clipFactor(double sumSquares, float scale, double maxNorm,
                                float *invScale, float *norm,
                                uint8_t *foundInf) {
  double inv = 1.0 / static_cast<double>(scale);
  double n = sqrt(sumSquares) * inv;
  bool bad = !isfinite(n);
  *norm = static_cast<float>(n);
  *foundInf = bad;
  double coef = maxNorm / (n + 1e-6);
  coef = coef < 1.0 ? coef : 1.0;
  *invScale = bad ? static_cast<float>(inv) : static_cast<float>(inv * coef);
}

/// mpc.update_loss_scale on its scalars: GradScaler's rule with hysteresis
/// and clamps.
MPCRT_HD inline void updateLossScale(float *scale, int32_t *growthTracker,
                                     int32_t *hysteresisTracker, bool foundInf,
                                     double growthFactor, double backoffFactor,
                                     int64_t growthInterval, int64_t hysteresis,
                                     double minScale, double maxScale) {
  if (foundInf) {
    *growthTracker = 0;
    if (--*hysteresisTracker > 0)
      return;
    *hysteresisTracker = 0;
    float backedOff = static_cast<float>(*scale * backoffFactor);
    *scale = minScale > 0 && backedOff < minScale ? static_cast<float>(minScale)
                                                  : backedOff;
    return;
  }
  *hysteresisTracker = static_cast<int32_t>(hysteresis);
  int32_t successful = *growthTracker + 1;
  if (successful < growthInterval) {
    *growthTracker = successful;
    return;
  }
  float grown = static_cast<float>(*scale * growthFactor);
  if (grown - grown == 0.0f) // finite
    *scale = grown > maxScale ? static_cast<float>(maxScale) : grown;
  *growthTracker = 0;
}

/// The per-step scalars of an SGD update, formed once.
template <typename A> struct Sgd {
  A rate, inv, momentum, oneMinusDampening, weightDecay;
  bool nesterov, hasBuffer;

  /// The new parameter from p and gradient g; updates the momentum
  /// buffer b when there is one.
  MPCRT_HD A step(A p, A g, A &b) const {
    g = g * inv;
    if (weightDecay != A(0))
      g += weightDecay * p;
    if (hasBuffer) {
      b = momentum * b + oneMinusDampening * g;
      g = nesterov ? g + momentum * b : b;
    }
    return p - rate * g;
  }
};

/// The per-step scalars of an Adam(W) update. Scalar coefficients are formed
/// in double and rounded once, as PyTorch forms them in Python: 1 - beta2
/// from a float beta2 would be off by 1.3e-5 relative for 0.999.
template <typename A> struct Adam {
  A inv, b2, oneMinusB1, oneMinusB2, decay, stepSize, correction2, eps,
      weightDecay;
  bool decoupled;

  MPCRT_HD Adam(double lr, int32_t step, A inv, double beta1, double beta2,
                double epsilon, double weightDecay, bool decoupled,
                bool biasCorrection)
      : inv(inv), b2(static_cast<A>(beta2)),
        oneMinusB1(static_cast<A>(1 - beta1)),
        oneMinusB2(static_cast<A>(1 - beta2)),
        decay(static_cast<A>(1 - lr * weightDecay)),
        eps(static_cast<A>(epsilon)), weightDecay(static_cast<A>(weightDecay)),
        decoupled(decoupled) {
    // step_size = lr / (1 - beta1^t); denom = sqrt(v) / sqrt(1 - beta2^t)
    // + eps.
    double correction1 = 1, correction2Sqrt = 1;
    if (biasCorrection) {
      correction1 = 1 - pow(beta1, static_cast<double>(step));
      correction2Sqrt = sqrt(1 - pow(beta2, static_cast<double>(step)));
    }
    stepSize = static_cast<A>(lr / correction1);
    correction2 = static_cast<A>(correction2Sqrt);
  }

  /// The new parameter; updates the moments m and v.
  MPCRT_HD A step(A p, A g, A &m, A &v) const {
    g = g * inv;
    if (weightDecay != A(0)) {
      if (decoupled)
        p *= decay;
      else
        g += weightDecay * p;
    }
    m += oneMinusB1 * (g - m); // lerp
    v = b2 * v + oneMinusB2 * g * g;
    A denom = sqrt(v) / correction2 + eps;
    return p - stepSize * m / denom;
  }
};

} // namespace mpcrt::formulas

#endif // MPC_LIB_RUNTIME_FORMULAS_H
