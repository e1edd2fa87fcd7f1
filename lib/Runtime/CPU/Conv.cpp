//===- Conv.cpp - convolutions and layer normalisation --------------------===//
//
// Direct loops: the reference, not a fast path. f32 accumulation (f64 for
// f64), one rounding per stored value.
//
//===----------------------------------------------------------------------===//

#include "Storage.h"
#include "mpc/Runtime/mpcrt.h"

#include <cmath>
#include <vector>

using namespace mpcrt;

namespace {

/// Visits every (output position, filter tap, input position) triple that
/// contributes to the convolution, with flat indices into the NHWC input,
/// OHWI filter and NHWC output. All three kernels are this one loop nest.
template <typename Fn> void forEachTap(const mpcrt_conv2d_shape &s, Fn fn) {
  int64_t cg = s.c / s.groups, og = s.o / s.groups;
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t y = 0; y < s.ho; ++y)
      for (int64_t x = 0; x < s.wo; ++x)
        for (int64_t o = 0; o < s.o; ++o) {
          int64_t g = o / og;
          int64_t out = ((n * s.ho + y) * s.wo + x) * s.o + o;
          for (int64_t i = 0; i < s.kh; ++i) {
            int64_t iy = y * s.stride_h - s.pad_h + i * s.dilation_h;
            if (iy < 0 || iy >= s.h)
              continue;
            for (int64_t j = 0; j < s.kw; ++j) {
              int64_t ix = x * s.stride_w - s.pad_w + j * s.dilation_w;
              if (ix < 0 || ix >= s.w)
                continue;
              for (int64_t c = 0; c < cg; ++c) {
                int64_t in = ((n * s.h + iy) * s.w + ix) * s.c + g * cg + c;
                int64_t f = ((o * s.kh + i) * s.kw + j) * cg + c;
                fn(out, f, in);
              }
            }
          }
        }
}

/// Accumulates `target[a] += x[b] * y[c]` over the taps in the accumulation
/// type, then rounds every target once.
template <typename T, typename Pick>
void accumulate(const mpcrt_conv2d_shape &s, int64_t targetSize, T *target,
                const T *x, const T *y, Pick pick) {
  using S = Storage<T>;
  std::vector<typename S::Acc> acc(targetSize, 0);
  forEachTap(s, [&](int64_t out, int64_t f, int64_t in) {
    auto [t, a, b] = pick(out, f, in);
    acc[t] += S::load(x[a]) * S::load(y[b]);
  });
  for (int64_t i = 0; i < targetSize; ++i)
    target[i] = S::store(acc[i]);
}

struct Triple {
  int64_t target, a, b;
};

template <typename T>
void conv(const T *input, const T *filter, T *output,
          const mpcrt_conv2d_shape &s) {
  accumulate(
      s, s.n * s.ho * s.wo * s.o, output, input, filter,
      [](int64_t out, int64_t f, int64_t in) { return Triple{out, in, f}; });
}

template <typename T>
void convBackwardData(const T *gradOut, const T *filter, T *gradIn,
                      const mpcrt_conv2d_shape &s) {
  accumulate(
      s, s.n * s.h * s.w * s.c, gradIn, gradOut, filter,
      [](int64_t out, int64_t f, int64_t in) { return Triple{in, out, f}; });
}

template <typename T>
void convBackwardFilter(const T *gradOut, const T *input, T *gradFilter,
                        const mpcrt_conv2d_shape &s) {
  accumulate(
      s, s.o * s.kh * s.kw * (s.c / s.groups), gradFilter, gradOut, input,
      [](int64_t out, int64_t f, int64_t in) { return Triple{f, out, in}; });
}

template <typename T, typename Stat>
void layerNorm(const T *x, mpcrt_dtype paramDtype, const void *gamma,
               const void *beta, T *y, Stat *mean, Stat *rstd, int64_t rows,
               int64_t cols, double epsilon) {
  using S = Storage<T>;
  using A = typename S::Acc;
  for (int64_t r = 0; r < rows; ++r) {
    const T *row = x + r * cols;
    A mu = 0;
    for (int64_t c = 0; c < cols; ++c)
      mu += S::load(row[c]);
    mu /= static_cast<A>(cols);
    A var = 0; // biased, two-pass
    for (int64_t c = 0; c < cols; ++c) {
      A d = S::load(row[c]) - mu;
      var += d * d;
    }
    var /= static_cast<A>(cols);
    A inv = A(1) / std::sqrt(var + static_cast<A>(epsilon));
    mean[r] = static_cast<Stat>(mu);
    rstd[r] = static_cast<Stat>(inv);
    for (int64_t c = 0; c < cols; ++c) {
      A g = static_cast<A>(loadAny(paramDtype, gamma, c));
      A b = static_cast<A>(loadAny(paramDtype, beta, c));
      y[r * cols + c] = S::store((S::load(row[c]) - mu) * inv * g + b);
    }
  }
}

template <typename T, typename Stat>
void layerNormBackward(const T *dy, const T *x, const Stat *mean,
                       const Stat *rstd, mpcrt_dtype paramDtype,
                       const void *gamma, T *dx, void *dgamma, void *dbeta,
                       int64_t rows, int64_t cols) {
  using S = Storage<T>;
  using A = typename S::Acc;
  std::vector<A> dg(cols, 0), db(cols, 0);
  for (int64_t r = 0; r < rows; ++r) {
    A mu = static_cast<A>(mean[r]), inv = static_cast<A>(rstd[r]);
    // dx = inv * (g*dy - mean(g*dy) - xhat * mean(g*dy*xhat))
    A sumGdy = 0, sumGdyXhat = 0;
    for (int64_t c = 0; c < cols; ++c) {
      A xhat = (S::load(x[r * cols + c]) - mu) * inv;
      A d = S::load(dy[r * cols + c]);
      A gdy = static_cast<A>(loadAny(paramDtype, gamma, c)) * d;
      sumGdy += gdy;
      sumGdyXhat += gdy * xhat;
      dg[c] += d * xhat;
      db[c] += d;
    }
    A n = static_cast<A>(cols);
    for (int64_t c = 0; c < cols; ++c) {
      A xhat = (S::load(x[r * cols + c]) - mu) * inv;
      A gdy = static_cast<A>(loadAny(paramDtype, gamma, c)) *
              S::load(dy[r * cols + c]);
      dx[r * cols + c] =
          S::store(inv * (gdy - sumGdy / n - xhat * sumGdyXhat / n));
    }
  }
  for (int64_t c = 0; c < cols; ++c) {
    storeAny(paramDtype, dgamma, c, dg[c]);
    storeAny(paramDtype, dbeta, c, db[c]);
  }
}

} // namespace

extern "C" {

#define MPCRT_DEFINE(SUFFIX, ABI_T, T)                                         \
  void mpcrt_conv2d_##SUFFIX(const ABI_T *input, const ABI_T *filter,          \
                             ABI_T *output, const mpcrt_conv2d_shape *shape) { \
    conv(reinterpret_cast<const T *>(input),                                   \
         reinterpret_cast<const T *>(filter), reinterpret_cast<T *>(output),   \
         *shape);                                                              \
  }                                                                            \
  void mpcrt_conv2d_backward_data_##SUFFIX(                                    \
      const ABI_T *grad_output, const ABI_T *filter, ABI_T *grad_input,        \
      const mpcrt_conv2d_shape *shape) {                                       \
    convBackwardData(reinterpret_cast<const T *>(grad_output),                 \
                     reinterpret_cast<const T *>(filter),                      \
                     reinterpret_cast<T *>(grad_input), *shape);               \
  }                                                                            \
  void mpcrt_conv2d_backward_filter_##SUFFIX(                                  \
      const ABI_T *grad_output, const ABI_T *input, ABI_T *grad_filter,        \
      const mpcrt_conv2d_shape *shape) {                                       \
    convBackwardFilter(reinterpret_cast<const T *>(grad_output),               \
                       reinterpret_cast<const T *>(input),                     \
                       reinterpret_cast<T *>(grad_filter), *shape);            \
  }                                                                            \
  void mpcrt_layer_norm_##SUFFIX(                                              \
      const ABI_T *input, mpcrt_dtype param_dtype, const void *gamma,          \
      const void *beta, ABI_T *output, Storage<T>::Acc *mean,                  \
      Storage<T>::Acc *rstd, int64_t rows, int64_t cols, double epsilon) {     \
    layerNorm(reinterpret_cast<const T *>(input), param_dtype, gamma, beta,    \
              reinterpret_cast<T *>(output), mean, rstd, rows, cols, epsilon); \
  }                                                                            \
  void mpcrt_layer_norm_backward_##SUFFIX(                                     \
      const ABI_T *grad_output, const ABI_T *input,                            \
      const Storage<T>::Acc *mean, const Storage<T>::Acc *rstd,                \
      mpcrt_dtype param_dtype, const void *gamma, ABI_T *grad_input,           \
      void *grad_gamma, void *grad_beta, int64_t rows, int64_t cols) {         \
    layerNormBackward(reinterpret_cast<const T *>(grad_output),                \
                      reinterpret_cast<const T *>(input), mean, rstd,          \
                      param_dtype, gamma, reinterpret_cast<T *>(grad_input),   \
                      grad_gamma, grad_beta, rows, cols);                      \
  }
MPCRT_FOR_EACH_DTYPE(MPCRT_DEFINE)
#undef MPCRT_DEFINE

} // extern "C"
