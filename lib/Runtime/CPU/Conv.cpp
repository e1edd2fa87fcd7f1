//===- Conv.cpp - convolutions and layer normalisation --------------------===//
//
// Convolutions as GEMMs in OpenBLAS over im2col matrices (Blas.h);
// layer normalisation in loops. f32 accumulation (f64 for f64), one
// rounding per stored value.
//
//===----------------------------------------------------------------------===//

#include "Blas.h"
#include "LayerNorm.h"
#include "Parallel.h"
#include "Storage.h"
#include "mpc/Runtime/mpcrt.h"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

using namespace mpcrt;

namespace {

/// The convolutions as GEMMs over an im2col matrix: one row per output
/// position (n, y, x), one column per filter tap (i, j, c) of a group, the
/// OHWI filter's order, so a group's filter is a [og, K] matrix. The
/// matrix is built in chunks of rows that fit kChunkBytes.
constexpr int64_t kChunkBytes = int64_t(8) << 20;

struct Im2col {
  const mpcrt_conv2d_shape &s;
  int64_t cg, og, k, positions;

  explicit Im2col(const mpcrt_conv2d_shape &s)
      : s(s), cg(s.c / s.groups), og(s.o / s.groups), k(s.kh * s.kw * cg),
        positions(s.n * s.ho * s.wo) {}

  template <typename Acc> int64_t chunkRows() const {
    int64_t rows = kChunkBytes / static_cast<int64_t>(sizeof(Acc)) /
                   std::max<int64_t>(k, 1);
    return std::clamp<int64_t>(rows, 1, std::max<int64_t>(positions, 1));
  }

  /// Calls fn(tap, inputOffset) for the taps of output position `pos` that
  /// fall inside the input (offset of channel 0 of group g), and
  /// pad(tap) for those in the padding; tap indexes the row's cg-blocks.
  template <typename In, typename Pad>
  void taps(int64_t pos, int64_t g, In in, Pad pad) const {
    int64_t x = pos % s.wo, y = (pos / s.wo) % s.ho, n = pos / (s.wo * s.ho);
    for (int64_t i = 0; i < s.kh; ++i) {
      int64_t iy = y * s.stride_h - s.pad_h + i * s.dilation_h;
      for (int64_t j = 0; j < s.kw; ++j) {
        int64_t ix = x * s.stride_w - s.pad_w + j * s.dilation_w;
        int64_t tap = i * s.kw + j;
        if (iy < 0 || iy >= s.h || ix < 0 || ix >= s.w)
          pad(tap);
        else
          in(tap, ((n * s.h + iy) * s.w + ix) * s.c + g * cg);
      }
    }
  }

  /// Rows [row0, row0 + rows) of group g's matrix, widened; the rows in
  /// parallel.
  template <typename T, typename Acc>
  void gather(const T *input, int64_t g, int64_t row0, int64_t rows,
              Acc *col) const {
    parallelFor(rows, grainFor(k), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        Acc *dst = col + r * k;
        taps(
            row0 + r, g,
            [&](int64_t tap, int64_t offset) {
              for (int64_t c = 0; c < cg; ++c)
                dst[tap * cg + c] = Storage<T>::load(input[offset + c]);
            },
            [&](int64_t tap) { std::fill_n(dst + tap * cg, cg, Acc(0)); });
      }
    });
  }

  /// Adds rows of a column-gradient matrix into the input gradient, in
  /// position then tap order. Images do not share input elements: the
  /// rows of each image in parallel.
  template <typename Acc>
  void scatterAdd(const Acc *col, int64_t g, int64_t row0, int64_t rows,
                  Acc *gradIn) const {
    int64_t perImage = s.ho * s.wo;
    int64_t first = row0 / perImage, last = (row0 + rows - 1) / perImage;
    parallelFor(last - first + 1, 1, [&](int64_t i0, int64_t i1) {
      int64_t begin = std::max(row0, (first + i0) * perImage);
      int64_t end = std::min(row0 + rows, (first + i1) * perImage);
      for (int64_t pos = begin; pos < end; ++pos) {
        const Acc *src = col + (pos - row0) * k;
        taps(
            pos, g,
            [&](int64_t tap, int64_t offset) {
              for (int64_t c = 0; c < cg; ++c)
                gradIn[offset + c] += src[tap * cg + c];
            },
            [](int64_t) {});
      }
    });
  }
};

/// Stores `count` accumulated values once each.
template <typename T>
void storeAll(const typename Storage<T>::Acc *from, T *to, int64_t count) {
  for (int64_t i = 0; i < count; ++i)
    to[i] = Storage<T>::store(from[i]);
}

/// Stride-1, undilated convolutions without an im2col matrix: on the
/// zero-padded image (Hp x Wp), output row y, column x of tap (i, j) reads
/// padded element (y + i) * Wp + x + j, so over a "wide" output of ho x Wp
/// positions (the last Wp - wo columns of each row are junk, never
/// stored) each tap is one GEMM on a contiguous block of padded rows. The
/// images in parallel, each with its own buffers; per image the taps are
/// summed in order.
struct Shifted {
  const mpcrt_conv2d_shape &s;
  int64_t cg, og, k, hp, wp, wide, padded;

  explicit Shifted(const mpcrt_conv2d_shape &s)
      : s(s), cg(s.c / s.groups), og(s.o / s.groups), k(s.kh * s.kw * cg),
        hp(s.h + 2 * s.pad_h), wp(s.w + 2 * s.pad_w), wide(s.ho * wp),
        // kw - 1 more rows: the last tap's block runs past the image.
        padded((hp * wp + s.kw) * s.c) {}

  static bool applies(const mpcrt_conv2d_shape &s) {
    return s.stride_h == 1 && s.stride_w == 1 && s.dilation_h == 1 &&
           s.dilation_w == 1 && s.ho == s.h + 2 * s.pad_h - s.kh + 1 &&
           s.wo == s.w + 2 * s.pad_w - s.kw + 1 && s.n > 0;
  }

  /// Offset in the padded image of the block tap t reads.
  int64_t tapOffset(int64_t t) const {
    return ((t / s.kw) * wp + t % s.kw) * s.c;
  }

  /// Image n of an NHWC tensor, widened, into a zeroed padded buffer.
  template <typename T, typename Acc>
  void pad(const T *x, int64_t n, Acc *p) const {
    std::fill_n(p, padded, Acc(0));
    const T *image = x + n * s.h * s.w * s.c;
    for (int64_t y = 0; y < s.h; ++y) {
      Acc *row = p + ((y + s.pad_h) * wp + s.pad_w) * s.c;
      const T *in = image + y * s.w * s.c;
      for (int64_t i = 0; i < s.w * s.c; ++i)
        row[i] = Storage<T>::load(in[i]);
    }
  }

  /// Image n of the output gradient on the wide grid, junk columns 0.
  template <typename T, typename Acc>
  void widenGrad(const T *dy, int64_t n, Acc *w) const {
    const T *image = dy + n * s.ho * s.wo * s.o;
    for (int64_t y = 0; y < s.ho; ++y) {
      Acc *row = w + y * wp * s.o;
      for (int64_t i = 0; i < s.wo * s.o; ++i)
        row[i] = Storage<T>::load(image[y * s.wo * s.o + i]);
      std::fill(row + s.wo * s.o, row + wp * s.o, Acc(0));
    }
  }
};

/// The shifted convolution; with an addend (of the output's shape, possibly
/// the output itself), each sum adds its element before the one rounding.
template <typename T>
void shiftedConv(const T *input, const T *filter, const T *addend, T *output,
                 const mpcrt_conv2d_shape &s) {
  using Acc = typename Storage<T>::Acc;
  Shifted m(s);
  const Acc *w = widen(filter, s.o * m.k, 1);
  parallelFor(s.n, 1, [&](int64_t n0, int64_t n1) {
    Acc *p = scratch<Acc>(0, m.padded);
    Acc *out = scratch<Acc>(2, m.wide * s.o);
    for (int64_t n = n0; n < n1; ++n) {
      m.pad(input, n, p);
      for (int64_t g = 0; g < s.groups; ++g)
        for (int64_t t = 0; t < s.kh * s.kw; ++t)
          gemm(false, true, m.wide, m.og, m.cg, p + m.tapOffset(t) + g * m.cg,
               s.c, w + g * m.og * m.k + t * m.cg, m.k, Acc(t ? 1 : 0),
               out + g * m.og, s.o);
      int64_t image = n * s.ho * s.wo * s.o;
      for (int64_t y = 0; y < s.ho; ++y)
        for (int64_t i = 0; i < s.wo * s.o; ++i) {
          int64_t at = image + y * s.wo * s.o + i;
          Acc sum = out[y * m.wp * s.o + i];
          if (addend)
            sum += Storage<T>::load(addend[at]);
          output[at] = Storage<T>::store(sum);
        }
    }
  });
}

template <typename T>
void shiftedConvBackwardData(const T *gradOut, const T *filter, T *gradIn,
                             const mpcrt_conv2d_shape &s) {
  using Acc = typename Storage<T>::Acc;
  Shifted m(s);
  const Acc *w = widen(filter, s.o * m.k, 1);
  parallelFor(s.n, 1, [&](int64_t n0, int64_t n1) {
    Acc *dy = scratch<Acc>(0, m.wide * s.o);
    Acc *dp = scratch<Acc>(2, m.padded);
    for (int64_t n = n0; n < n1; ++n) {
      m.widenGrad(gradOut, n, dy);
      std::fill_n(dp, m.padded, Acc(0));
      for (int64_t g = 0; g < s.groups; ++g)
        for (int64_t t = 0; t < s.kh * s.kw; ++t)
          gemm(false, false, m.wide, m.cg, m.og, dy + g * m.og, s.o,
               w + g * m.og * m.k + t * m.cg, m.k, Acc(1),
               dp + m.tapOffset(t) + g * m.cg, s.c);
      T *image = gradIn + n * s.h * s.w * s.c;
      for (int64_t y = 0; y < s.h; ++y) {
        const Acc *row = dp + ((y + s.pad_h) * m.wp + s.pad_w) * s.c;
        for (int64_t i = 0; i < s.w * s.c; ++i)
          image[y * s.w * s.c + i] = Storage<T>::store(row[i]);
      }
    }
  });
}

template <typename T>
void shiftedConvBackwardFilter(const T *gradOut, const T *input, T *gradFilter,
                               const mpcrt_conv2d_shape &s) {
  using Acc = typename Storage<T>::Acc;
  Shifted m(s);
  int64_t filterCount = s.o * m.k;
  // Each image's gradient apart, then summed in image order.
  std::vector<Acc> partial(static_cast<size_t>(s.n * filterCount));
  parallelFor(s.n, 1, [&](int64_t n0, int64_t n1) {
    Acc *dy = scratch<Acc>(0, m.wide * s.o);
    Acc *p = scratch<Acc>(2, m.padded);
    for (int64_t n = n0; n < n1; ++n) {
      m.widenGrad(gradOut, n, dy);
      m.pad(input, n, p);
      Acc *dw = partial.data() + n * filterCount;
      for (int64_t g = 0; g < s.groups; ++g)
        for (int64_t t = 0; t < s.kh * s.kw; ++t)
          gemm(true, false, m.og, m.cg, m.wide, dy + g * m.og, s.o,
               p + m.tapOffset(t) + g * m.cg, s.c, Acc(0),
               dw + g * m.og * m.k + t * m.cg, m.k);
    }
  });
  parallelFor(filterCount, grainFor(s.n), [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      Acc total = 0;
      for (int64_t n = 0; n < s.n; ++n)
        total += partial[n * filterCount + i];
      gradFilter[i] = Storage<T>::store(total);
    }
  });
}

/// The convolution, `addend` (null, or of the output's shape, possibly the
/// output itself) added in the accumulation: the GEMMs start from it.
template <typename T>
void conv(const T *input, const T *filter, const T *addend, T *output,
          const mpcrt_conv2d_shape &s) {
  if (Shifted::applies(s))
    return shiftedConv(input, filter, addend, output, s);
  using Acc = typename Storage<T>::Acc;
  constexpr bool exact = std::is_same_v<T, Acc>;
  Im2col m(s);
  const Acc *w = widen(filter, s.o * m.k, 1);
  int64_t chunk = m.chunkRows<Acc>();
  Acc *col = scratch<Acc>(0, chunk * m.k);
  for (int64_t row0 = 0; row0 < m.positions; row0 += chunk) {
    int64_t rows = std::min(chunk, m.positions - row0);
    Acc *out = exact ? reinterpret_cast<Acc *>(output + row0 * s.o)
                     : scratch<Acc>(2, rows * s.o);
    if (addend) {
      const T *from = addend + row0 * s.o;
      if constexpr (exact) {
        if (from != output + row0 * s.o)
          std::copy_n(from, rows * s.o, out);
      } else {
        for (int64_t i = 0; i < rows * s.o; ++i)
          out[i] = Storage<T>::load(from[i]);
      }
    }
    for (int64_t g = 0; g < s.groups; ++g) {
      m.gather(input, g, row0, rows, col);
      gemm(false, true, rows, m.og, m.k, col, m.k, w + g * m.og * m.k, m.k,
           Acc(addend ? 1 : 0), out + g * m.og, s.o);
    }
    if constexpr (!exact)
      storeAll(out, output + row0 * s.o, rows * s.o);
  }
}

template <typename T>
void convBackwardData(const T *gradOut, const T *filter, T *gradIn,
                      const mpcrt_conv2d_shape &s) {
  if (Shifted::applies(s))
    return shiftedConvBackwardData(gradOut, filter, gradIn, s);
  using Acc = typename Storage<T>::Acc;
  constexpr bool exact = std::is_same_v<T, Acc>;
  Im2col m(s);
  int64_t inCount = s.n * s.h * s.w * s.c;
  Acc *dx = exact ? reinterpret_cast<Acc *>(gradIn) : scratch<Acc>(2, inCount);
  std::fill_n(dx, inCount, Acc(0));
  const Acc *w = widen(filter, s.o * m.k, 1);
  int64_t chunk = m.chunkRows<Acc>();
  Acc *col = scratch<Acc>(0, chunk * m.k);
  for (int64_t row0 = 0; row0 < m.positions; row0 += chunk) {
    int64_t rows = std::min(chunk, m.positions - row0);
    const Acc *dy = widen(gradOut + row0 * s.o, rows * s.o, 3);
    for (int64_t g = 0; g < s.groups; ++g) {
      gemm(false, false, rows, m.k, m.og, dy + g * m.og, s.o,
           w + g * m.og * m.k, m.k, Acc(0), col, m.k);
      m.scatterAdd(col, g, row0, rows, dx);
    }
  }
  if constexpr (!exact)
    storeAll(dx, gradIn, inCount);
}

template <typename T>
void convBackwardFilter(const T *gradOut, const T *input, T *gradFilter,
                        const mpcrt_conv2d_shape &s) {
  if (Shifted::applies(s))
    return shiftedConvBackwardFilter(gradOut, input, gradFilter, s);
  using Acc = typename Storage<T>::Acc;
  constexpr bool exact = std::is_same_v<T, Acc>;
  Im2col m(s);
  int64_t filterCount = s.o * m.k;
  Acc *dw = exact ? reinterpret_cast<Acc *>(gradFilter)
                  : scratch<Acc>(2, filterCount);
  std::fill_n(dw, filterCount, Acc(0));
  int64_t chunk = m.chunkRows<Acc>();
  Acc *col = scratch<Acc>(0, chunk * m.k);
  // dW_g[og, K] += dY_g^T col over the chunks of rows, in order.
  for (int64_t row0 = 0; row0 < m.positions; row0 += chunk) {
    int64_t rows = std::min(chunk, m.positions - row0);
    const Acc *dy = widen(gradOut + row0 * s.o, rows * s.o, 3);
    for (int64_t g = 0; g < s.groups; ++g) {
      m.gather(input, g, row0, rows, col);
      gemm(true, false, m.og, m.k, rows, dy + g * m.og, s.o, col, m.k, Acc(1),
           dw + g * m.og * m.k, m.k);
    }
  }
  if constexpr (!exact)
    storeAll(dw, gradFilter, filterCount);
}

template <typename T, typename Stat>
void layerNorm(const T *x, mpcrt_dtype paramDtype, const void *gamma,
               const void *beta, T *y, Stat *mean, Stat *rstd, int64_t rows,
               int64_t cols, double epsilon) {
  parallelFor(rows, grainFor(6 * cols), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      layerNormRow(x + r * cols, paramDtype, gamma, beta, y + r * cols, mean[r],
                   rstd[r], cols, epsilon);
  });
}

template <typename T, typename Stat>
void layerNormBackward(const T *dy, const T *x, const Stat *mean,
                       const Stat *rstd, mpcrt_dtype paramDtype,
                       const void *gamma, T *dx, void *dgamma, void *dbeta,
                       const void *gammaAddend, const void *betaAddend,
                       int64_t rows, int64_t cols) {
  using A = typename Storage<T>::Acc;
  layerNormBackwardRows(dy, x, mean, rstd, paramDtype, gamma, dgamma, dbeta,
                        gammaAddend, betaAddend, rows, cols,
                        [&](int64_t r, const A *values) {
                          for (int64_t c = 0; c < cols; ++c)
                            dx[r * cols + c] = Storage<T>::store(values[c]);
                        });
}

} // namespace

extern "C" {

#define MPCRT_DEFINE(SUFFIX, ABI_T, T)                                         \
  void mpcrt_conv2d_##SUFFIX(const ABI_T *input, const ABI_T *filter,          \
                             ABI_T *output, const mpcrt_conv2d_shape *shape) { \
    conv(reinterpret_cast<const T *>(input),                                   \
         reinterpret_cast<const T *>(filter), static_cast<const T *>(nullptr), \
         reinterpret_cast<T *>(output), *shape);                               \
  }                                                                            \
  void mpcrt_conv2d_add_##SUFFIX(const ABI_T *input, const ABI_T *filter,      \
                                 const ABI_T *addend, ABI_T *output,           \
                                 const mpcrt_conv2d_shape *shape) {            \
    conv(reinterpret_cast<const T *>(input),                                   \
         reinterpret_cast<const T *>(filter),                                  \
         reinterpret_cast<const T *>(addend), reinterpret_cast<T *>(output),   \
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
      void *grad_gamma, void *grad_beta, const void *gamma_addend,             \
      const void *beta_addend, int64_t rows, int64_t cols) {                   \
    layerNormBackward(reinterpret_cast<const T *>(grad_output),                \
                      reinterpret_cast<const T *>(input), mean, rstd,          \
                      param_dtype, gamma, reinterpret_cast<T *>(grad_input),   \
                      grad_gamma, grad_beta, gamma_addend, beta_addend, rows,  \
                      cols);                                                   \
  }
MPCRT_FOR_EACH_DTYPE(MPCRT_DEFINE)
#undef MPCRT_DEFINE

} // extern "C"
