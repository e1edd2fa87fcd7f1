//===- Storage.h - element storage, conversions, index walks ----*- C++ -*-===//
//
// The reference backend stores f16/bf16 as bit patterns and converts them
// exactly as the GPU does (round to nearest even), written out with integer
// arithmetic so it does not depend on what the host compiler does with
// _Float16 or __bf16.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_RUNTIME_CPU_STORAGE_H
#define MPC_RUNTIME_CPU_STORAGE_H

#include "mpc/Runtime/Report.h"
#include "mpc/Runtime/mpcrt.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace mpcrt {

inline uint32_t bitsOf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

inline float floatOf(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

/// f32 -> IEEE binary16, round to nearest even.
inline uint16_t f32ToF16(float value) {
  uint32_t x = bitsOf(value);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t abs = x & 0x7fffffffu;
  if (abs > 0x7f800000u) // NaN: keep the top payload bits, force quiet.
    return static_cast<uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));
  if (abs >= 0x47800000u) // >= 65536 (incl. inf): overflow to infinity.
    return static_cast<uint16_t>(sign | 0x7c00u);
  if (abs >= 0x38800000u) { // Normal in f16 (>= 2^-14).
    // Rebias the exponent (127 -> 15) and round the 13 dropped bits.
    uint32_t mantissa = abs + 0xc8000000u; // - (112 << 23)
    uint32_t rounded = (mantissa + 0x0fffu + ((mantissa >> 13) & 1u)) >> 13;
    // A carry out of the mantissa bumps the exponent; 65520 and up reach
    // 0x7c00, infinity, as they must.
    return static_cast<uint16_t>(sign | rounded);
  }
  if (abs < 0x33000000u) // < 2^-25: rounds to zero (2^-25 ties to even 0).
    return static_cast<uint16_t>(sign);
  // Subnormal in f16: value = m * 2^-24 with m < 1024.
  uint32_t exponent = abs >> 23;
  uint32_t mantissa = (abs & 0x7fffffu) | 0x800000u;
  uint32_t shift = 126 - exponent; // 14..24: to units of 2^-24
  uint32_t result = mantissa >> shift;
  uint32_t remainder = mantissa & ((1u << shift) - 1);
  uint32_t half = 1u << (shift - 1);
  if (remainder > half || (remainder == half && (result & 1u)))
    ++result;
  return static_cast<uint16_t>(sign | result);
}

/// IEEE binary16 -> f32, exact.
inline float f16ToF32(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1f) // inf / NaN
    return floatOf(sign | 0x7f800000u | (mantissa << 13));
  if (exponent != 0)
    return floatOf(sign | ((exponent + 112) << 23) | (mantissa << 13));
  if (mantissa == 0)
    return floatOf(sign);
  // Subnormal: normalise.
  int shift = 0;
  while (!(mantissa & 0x400u)) {
    mantissa <<= 1;
    ++shift;
  }
  return floatOf(sign | ((113 - shift) << 23) | ((mantissa & 0x3ffu) << 13));
}

/// f32 -> bfloat16, round to nearest even.
inline uint16_t f32ToBF16(float value) {
  uint32_t x = bitsOf(value);
  if ((x & 0x7fffffffu) > 0x7f800000u) // NaN: quiet, keep sign and payload.
    return static_cast<uint16_t>((x >> 16) | 0x0040u);
  uint32_t rounded = x + 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(rounded >> 16);
}

/// bfloat16 -> f32, exact.
inline float bf16ToF32(uint16_t b) {
  return floatOf(static_cast<uint32_t>(b) << 16);
}

/// Storage types: the element as stored, and how to load/store it in the
/// accumulation type.
struct F16 {
  uint16_t bits;
};
struct BF16 {
  uint16_t bits;
};

template <typename T> struct Storage {
  using Acc = T;
  static Acc load(T v) { return v; }
  static T store(Acc v) { return v; }
};
template <> struct Storage<F16> {
  using Acc = float;
  static float load(F16 v) { return f16ToF32(v.bits); }
  static F16 store(float v) { return {f32ToF16(v)}; }
};
template <> struct Storage<BF16> {
  using Acc = float;
  static float load(BF16 v) { return bf16ToF32(v.bits); }
  static BF16 store(float v) { return {f32ToBF16(v)}; }
};

/// `sum` rounded to T, then added to `addend` and rounded again: what a
/// separate add of the rounded sum to the addend computes (a gradient
/// summed into its accumulator by the op that computes it).
template <typename T> T storeAdded(T addend, typename Storage<T>::Acc sum) {
  using S = Storage<T>;
  return S::store(S::load(addend) + S::load(S::store(sum)));
}

/// f64 -> f32 rounding to odd: truncate, then set the last bit if inexact.
/// Rounding that to f16/bf16 (nearest even) equals rounding the f64
/// directly, because f32 keeps at least two more bits than either; plain
/// f64 -> f32 -> f16 could round twice.
inline float toOddF32(double value) {
  float f = static_cast<float>(value);
  if (std::isnan(value) || static_cast<double>(f) == value)
    return f;
  if (std::fabs(static_cast<double>(f)) > std::fabs(value))
    f = std::nextafter(f, 0.0f);
  return floatOf(bitsOf(f) | 1u);
}

/// Element `i` of a buffer of type `dtype`, exactly, as double.
inline double loadAny(mpcrt_dtype dtype, const void *data, int64_t i) {
  switch (dtype) {
  case MPCRT_F16:
    return f16ToF32(static_cast<const uint16_t *>(data)[i]);
  case MPCRT_BF16:
    return bf16ToF32(static_cast<const uint16_t *>(data)[i]);
  case MPCRT_F32:
    return static_cast<const float *>(data)[i];
  case MPCRT_F64:
    return static_cast<const double *>(data)[i];
  }
  return 0;
}

/// Stores `value` as element `i`, rounding once to nearest even.
inline void storeAny(mpcrt_dtype dtype, void *data, int64_t i, double value) {
  switch (dtype) {
  case MPCRT_F16:
    static_cast<uint16_t *>(data)[i] = f32ToF16(toOddF32(value));
    return;
  case MPCRT_BF16:
    static_cast<uint16_t *>(data)[i] = f32ToBF16(toOddF32(value));
    return;
  case MPCRT_F32:
    static_cast<float *>(data)[i] = static_cast<float>(value);
    return;
  case MPCRT_F64:
    static_cast<double *>(data)[i] = value;
    return;
  }
}

/// Stores `value` as element `i`; with an `addend` (of `dtype`, which may be
/// `data` itself), the value rounded to `dtype`, element `i` of the addend
/// added and the sum rounded again: what a separate add of the rounded
/// value computes (the exact sum of two such values, rounded once).
inline void storeSumAny(mpcrt_dtype dtype, void *data, const void *addend,
                        int64_t i, double value) {
  if (addend) {
    double rounded;
    storeAny(dtype, &rounded, 0, value);
    value = loadAny(dtype, addend, i) + loadAny(dtype, &rounded, 0);
  }
  storeAny(dtype, data, i, value);
}

/// Calls f(T *) (a null pointer) with the storage type of `dtype`, as the
/// CUDA backend's dispatch: the entry points that take an mpcrt_dtype.
template <typename F> void dispatch(mpcrt_dtype dtype, F f) {
  switch (dtype) {
  case MPCRT_F16:
    return f(static_cast<F16 *>(nullptr));
  case MPCRT_BF16:
    return f(static_cast<BF16 *>(nullptr));
  case MPCRT_F32:
    return f(static_cast<float *>(nullptr));
  case MPCRT_F64:
    return f(static_cast<double *>(nullptr));
  }
}

/// What a kernel whose operands differ in type computes in: the widest of
/// their Acc types (f32 for f16, bf16 and f32).
template <typename... T>
using CommonAcc = decltype((typename Storage<T>::Acc() + ...));

/// The mixed-type entry points (mpcrt_*_mixed): f(T *) (a null pointer)
/// with the storage type of `dtype`, one of f16, bf16 and f32; an error
/// for any other.
template <typename F> void dispatchMixable(mpcrt_dtype dtype, F f) {
  switch (dtype) {
  case MPCRT_F16:
    return f(static_cast<F16 *>(nullptr));
  case MPCRT_BF16:
    return f(static_cast<BF16 *>(nullptr));
  case MPCRT_F32:
    return f(static_cast<float *>(nullptr));
  default:
    mpcrt::errors::reportError("a mixed-type kernel takes f16, bf16 and "
                               "f32 only\n");
    std::exit(1);
  }
}

/// Instantiates M(suffix, ABI element type, storage type) for every dtype of
/// the single-type entry points (mpcrt_<op>_<suffix>).
#define MPCRT_FOR_EACH_DTYPE(M)                                                \
  M(f16, uint16_t, F16)                                                        \
  M(bf16, uint16_t, BF16)                                                      \
  M(f32, float, float)                                                         \
  M(f64, double, double)

/// Calls fn(i, offsets...) for the elements i in [begin, end) of a dense
/// row-major `shape`, with one strided offset per operand: offset_k =
/// base_k + sum_d index_d * strides_k[d]. The index walk of broadcasting,
/// transposes and slices; a range of it is one thread's share.
template <size_t N, typename Fn>
void forEachStridedIn(const int64_t *shape, int32_t rank,
                      const int64_t *const (&strides)[N],
                      const int64_t (&bases)[N], int64_t begin, int64_t end,
                      Fn fn) {
  if (begin >= end)
    return;
  std::vector<int64_t> index(rank, 0);
  int64_t offsets[N];
  for (size_t k = 0; k < N; ++k)
    offsets[k] = bases[k];
  for (int64_t d = rank - 1, rest = begin; d >= 0; --d) {
    index[d] = shape[d] ? rest % shape[d] : 0;
    rest = shape[d] ? rest / shape[d] : 0;
    for (size_t k = 0; k < N; ++k)
      offsets[k] += index[d] * strides[k][d];
  }
  for (int64_t i = begin; i < end; ++i) {
    fn(i, offsets);
    for (int32_t d = rank - 1; d >= 0; --d) { // odometer, offsets follow
      for (size_t k = 0; k < N; ++k)
        offsets[k] += strides[k][d];
      if (++index[d] < shape[d])
        break;
      for (size_t k = 0; k < N; ++k)
        offsets[k] -= strides[k][d] * shape[d];
      index[d] = 0;
    }
  }
}

/// Elements of a dense row-major shape.
inline int64_t elementCount(const int64_t *shape, int32_t rank) {
  int64_t count = 1;
  for (int32_t d = 0; d < rank; ++d)
    count *= shape[d];
  return count;
}

/// forEachStridedIn over the whole shape.
template <size_t N, typename Fn>
void forEachStrided(const int64_t *shape, int32_t rank,
                    const int64_t *const (&strides)[N],
                    const int64_t (&bases)[N], Fn fn) {
  forEachStridedIn(shape, rank, strides, bases, 0, elementCount(shape, rank),
                   fn);
}

} // namespace mpcrt

#endif // MPC_RUNTIME_CPU_STORAGE_H
