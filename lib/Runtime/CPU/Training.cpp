//===- Training.cpp - loss scaling and optimizer updates ------------------===//
//
// The reference twins of the fused GPU kernels: one multi-tensor unscale
// with an inf/NaN check, the single-thread scale update, and the in-place
// master-weight updates that skip themselves on found_inf. Formulas follow
// PyTorch's (torch.optim.SGD/Adam/AdamW, torch.amp.GradScaler) operation by
// operation so results agree to rounding.
//
//===----------------------------------------------------------------------===//

#include "Formulas.h"
#include "Parallel.h"
#include "Storage.h"
#include "mpc/Runtime/Report.h"
#include "mpc/Runtime/mpcrt.h"

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <type_traits>
#include <vector>

using namespace mpcrt;

namespace {

bool skipped(const uint8_t *foundInf) { return foundInf && *foundInf; }

/// Writes the low-precision weight copy.
template <typename P>
void writeCopy(const P *param, mpcrt_dtype dtype, void *copy, int64_t count) {
  if (!copy)
    return;
  parallelFor(count, grainFor(4), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      float value = static_cast<float>(Storage<P>::load(param[i]));
      if (dtype == MPCRT_F16)
        static_cast<uint16_t *>(copy)[i] = f32ToF16(value);
      else if (dtype == MPCRT_BF16)
        static_cast<uint16_t *>(copy)[i] = f32ToBF16(value);
      else
        static_cast<float *>(copy)[i] = value;
    }
  });
}

template <typename P, typename G>
void sgd(P *param, const G *grad, const float *lr, P *buffer,
         const uint8_t *foundInf, const float *invScale, mpcrt_dtype copyDtype,
         void *copy, int64_t count, double momentum, double dampening,
         bool nesterov, double weightDecay) {
  using Acc = typename Storage<P>::Acc;
  if (!skipped(foundInf)) {
    const formulas::Sgd<Acc> rule{static_cast<Acc>(*lr),
                                  invScale ? static_cast<Acc>(*invScale)
                                           : Acc(1),
                                  static_cast<Acc>(momentum),
                                  static_cast<Acc>(1 - dampening),
                                  static_cast<Acc>(weightDecay),
                                  nesterov,
                                  buffer != nullptr};
    parallelFor(count, grainFor(8), [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        Acc b = buffer ? Storage<P>::load(buffer[i]) : Acc(0);
        Acc g = static_cast<Acc>(Storage<G>::load(grad[i]));
        param[i] =
            Storage<P>::store(rule.step(Storage<P>::load(param[i]), g, b));
        if (buffer)
          buffer[i] = Storage<P>::store(b);
      }
    });
  }
  writeCopy(param, copyDtype, copy, count);
}

template <typename P, typename G>
void adam(P *param, const G *grad, P *expAvg, P *expAvgSq, const float *lr,
          const int32_t *step, const uint8_t *foundInf, const float *invScale,
          mpcrt_dtype copyDtype, void *copy, int64_t count, double beta1,
          double beta2, double eps, double weightDecay, bool decoupled,
          bool biasCorrection, bool lamb) {
  using Acc = typename Storage<P>::Acc;
  if (lamb && !skipped(foundInf)) {
    // Two passes: the direction and both norms (in double), then the step.
    const formulas::Lamb<Acc> rule(
        *step, invScale ? static_cast<Acc>(*invScale) : Acc(1), beta1, beta2,
        eps, weightDecay, decoupled, biasCorrection);
    std::vector<Acc> u(count);
    double paramSquares = 0, updateSquares = 0;
    for (int64_t i = 0; i < count; ++i) {
      Acc m = Storage<P>::load(expAvg[i]), v = Storage<P>::load(expAvgSq[i]);
      Acc p = Storage<P>::load(param[i]);
      u[i] =
          rule.direction(p, static_cast<Acc>(Storage<G>::load(grad[i])), m, v);
      expAvg[i] = Storage<P>::store(m);
      expAvgSq[i] = Storage<P>::store(v);
      paramSquares += static_cast<double>(p) * p;
      updateSquares += static_cast<double>(u[i]) * u[i];
    }
    Acc rate =
        static_cast<Acc>(*lr * formulas::trustRatio(std::sqrt(paramSquares),
                                                    std::sqrt(updateSquares)));
    for (int64_t i = 0; i < count; ++i)
      param[i] = Storage<P>::store(Storage<P>::load(param[i]) - rate * u[i]);
  } else if (!skipped(foundInf)) {
    const formulas::Adam<Acc> rule(
        *lr, *step, invScale ? static_cast<Acc>(*invScale) : Acc(1), beta1,
        beta2, eps, weightDecay, decoupled, biasCorrection);
    parallelFor(count, grainFor(16), [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        Acc m = Storage<P>::load(expAvg[i]), v = Storage<P>::load(expAvgSq[i]);
        Acc p = rule.step(Storage<P>::load(param[i]),
                          static_cast<Acc>(Storage<G>::load(grad[i])), m, v);
        expAvg[i] = Storage<P>::store(m);
        expAvgSq[i] = Storage<P>::store(v);
        param[i] = Storage<P>::store(p);
      }
    });
  }
  writeCopy(param, copyDtype, copy, count);
}

/// The optimizers' type pairs: suffix, ABI parameter and gradient types,
/// storage types, dtype codes.
#define MPCRT_FOR_EACH_OPTIMIZER_PAIR(M)                                       \
  M(f32_f16, float, uint16_t, float, F16, MPCRT_F32, MPCRT_F16)                \
  M(f32_bf16, float, uint16_t, float, BF16, MPCRT_F32, MPCRT_BF16)             \
  M(f32_f32, float, float, float, float, MPCRT_F32, MPCRT_F32)                 \
  M(f16_f16, uint16_t, uint16_t, F16, F16, MPCRT_F16, MPCRT_F16)               \
  M(bf16_bf16, uint16_t, uint16_t, BF16, BF16, MPCRT_BF16, MPCRT_BF16)         \
  M(f64_f64, double, double, double, double, MPCRT_F64, MPCRT_F64)             \
  M(f16_f32, uint16_t, float, F16, float, MPCRT_F16, MPCRT_F32)                \
  M(bf16_f32, uint16_t, float, BF16, float, MPCRT_BF16, MPCRT_F32)

/// f(P *, G *) (null pointers) for the optimizers' type pairs.
template <typename F> void dispatchPair(mpcrt_dtype p, mpcrt_dtype g, F f) {
#define MPCRT_CASE(SUFFIX, ABI_P, ABI_G, P, G, PD, GD)                         \
  if (p == PD && g == GD)                                                      \
    return f(static_cast<P *>(nullptr), static_cast<G *>(nullptr));
  MPCRT_FOR_EACH_OPTIMIZER_PAIR(MPCRT_CASE)
#undef MPCRT_CASE
  mpcrt::errors::reportError(
      "optimizer update: unsupported types (parameter %d, "
      "gradient %d)\n",
      int(p), int(g));
  std::exit(1);
}

} // namespace

extern "C" {

void mpcrt_unscale_and_check(const float *scale, int64_t numTensors,
                             const mpcrt_dtype *dtypes,
                             const void *const *grads, const int64_t *sizes,
                             float *const *unscaled, uint8_t *foundInf) {
  float inv = 1.0f / *scale;
  std::atomic<bool> any{false}; // an OR: the same with any thread count
  for (int64_t t = 0; t < numTensors; ++t)
    parallelFor(sizes[t], grainFor(8), [&](int64_t i0, int64_t i1) {
      bool local = false;
      for (int64_t i = i0; i < i1; ++i) {
        float value = static_cast<float>(loadAny(dtypes[t], grads[t], i));
        local |= !std::isfinite(value);
        if (unscaled[t]) // null: check only
          unscaled[t][i] = value * inv;
      }
      if (local)
        any.store(true, std::memory_order_relaxed);
    });
  *foundInf = any.load();
}

void mpcrt_clip_grad_norm(const float *scale, int64_t numTensors,
                          const mpcrt_dtype *dtypes, const void *const *grads,
                          const int64_t *sizes, double maxNorm, float *invScale,
                          float *norm, uint8_t *foundInf) {
  // Partial sums over blocks of a fixed size, added in order.
  double sum = 0;
  for (int64_t t = 0; t < numTensors; ++t)
    sum = blockedSum(sum, sizes[t], 8192, [&](int64_t i) {
      double value = loadAny(dtypes[t], grads[t], i);
      return value * value;
    });
  formulas::clipFactor(sum, *scale, maxNorm, invScale, norm, foundInf);
}

void mpcrt_grad_stats(const float *scale, int64_t numTensors,
                      const mpcrt_dtype *dtypes, const void *const *grads,
                      const int64_t *sizes, int64_t *stats) {
  // In double: the true gradient grad/scale is not rounded to f32 first.
  const double inv = 1.0 / static_cast<double>(*scale);
  const double f16Flush = std::ldexp(1.0, -25);
  int64_t elements = 0;
  std::atomic<int64_t> zero{0}, underflow{0}, nonfinite{0}; // counts
  for (int64_t t = 0; t < numTensors; ++t) {
    elements += sizes[t];
    parallelFor(sizes[t], grainFor(8), [&](int64_t i0, int64_t i1) {
      int64_t z = 0, u = 0, n = 0;
      for (int64_t i = i0; i < i1; ++i) {
        double value = loadAny(dtypes[t], grads[t], i);
        if (value == 0.0)
          ++z;
        else if (!std::isfinite(value))
          ++n;
        else if (std::fabs(value * inv) <= f16Flush)
          ++u;
      }
      zero += z, underflow += u, nonfinite += n;
    });
  }
  stats[0] = elements;
  stats[1] = zero;
  stats[2] = underflow;
  stats[3] = nonfinite;
}

void mpcrt_update_loss_scale(float *scale, int32_t *growthTracker,
                             int32_t *hysteresisTracker,
                             const uint8_t *foundInf, double growthFactor,
                             double backoffFactor, int64_t growthInterval,
                             int64_t hysteresis, double minScale,
                             double maxScale) {
  formulas::updateLossScale(scale, growthTracker, hysteresisTracker,
                            *foundInf != 0, growthFactor, backoffFactor,
                            growthInterval, hysteresis, minScale, maxScale);
}

#define MPCRT_DEFINE(SUFFIX, ABI_P, ABI_G, P, G, PD, GD)                       \
  void mpcrt_sgd_update_##SUFFIX(                                              \
      ABI_P *param, const ABI_G *grad, const float *lr, ABI_P *buffer,         \
      const uint8_t *found_inf, const float *inv_scale,                        \
      mpcrt_dtype copy_dtype, void *copy, int64_t count, double momentum,      \
      double dampening, int32_t nesterov, double weight_decay) {               \
    sgd(reinterpret_cast<P *>(param), reinterpret_cast<const G *>(grad), lr,   \
        reinterpret_cast<P *>(buffer), found_inf, inv_scale, copy_dtype, copy, \
        count, momentum, dampening, nesterov, weight_decay);                   \
  }                                                                            \
  void mpcrt_adam_update_##SUFFIX(                                             \
      ABI_P *param, const ABI_G *grad, ABI_P *exp_avg, ABI_P *exp_avg_sq,      \
      const float *lr, const int32_t *step, const uint8_t *found_inf,          \
      const float *inv_scale, mpcrt_dtype copy_dtype, void *copy,              \
      int64_t count, double beta1, double beta2, double eps,                   \
      double weight_decay, int32_t decoupled, int32_t bias_correction,         \
      int32_t lamb) {                                                          \
    adam(reinterpret_cast<P *>(param), reinterpret_cast<const G *>(grad),      \
         reinterpret_cast<P *>(exp_avg), reinterpret_cast<P *>(exp_avg_sq),    \
         lr, step, found_inf, inv_scale, copy_dtype, copy, count, beta1,       \
         beta2, eps, weight_decay, decoupled, bias_correction, lamb != 0);     \
  }
MPCRT_FOR_EACH_OPTIMIZER_PAIR(MPCRT_DEFINE)
#undef MPCRT_DEFINE

void mpcrt_sgd_update_multi(
    int64_t num_tensors, const mpcrt_dtype *param_dtypes,
    const mpcrt_dtype *grad_dtypes, void *const *params,
    const void *const *grads, void *const *momentum_buffers,
    const mpcrt_dtype *copy_dtypes, void *const *copies, const int64_t *sizes,
    const float *lr, const uint8_t *found_inf, const float *inv_scale,
    double momentum, double dampening, int32_t nesterov, double weight_decay) {
  for (int64_t t = 0; t < num_tensors; ++t)
    dispatchPair(param_dtypes[t], grad_dtypes[t], [&](auto *p, auto *g) {
      using P = std::remove_pointer_t<decltype(p)>;
      using G = std::remove_pointer_t<decltype(g)>;
      sgd(static_cast<P *>(params[t]), static_cast<const G *>(grads[t]), lr,
          static_cast<P *>(momentum_buffers[t]), found_inf, inv_scale,
          copy_dtypes[t], copies[t], sizes[t], momentum, dampening,
          nesterov != 0, weight_decay);
    });
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
  for (int64_t t = 0; t < num_tensors; ++t)
    dispatchPair(param_dtypes[t], grad_dtypes[t], [&](auto *p, auto *g) {
      using P = std::remove_pointer_t<decltype(p)>;
      using G = std::remove_pointer_t<decltype(g)>;
      adam(static_cast<P *>(params[t]), static_cast<const G *>(grads[t]),
           static_cast<P *>(exp_avgs[t]), static_cast<P *>(exp_avg_sqs[t]), lr,
           step, found_inf, inv_scale, copy_dtypes[t], copies[t], sizes[t],
           beta1, beta2, eps, weight_decay, decoupled, bias_correction,
           lamb != 0);
    });
}

} // extern "C"
