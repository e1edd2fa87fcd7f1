//===- ForEachDtype.h - the C ABI's typed entry points ----------*- C++ -*-===//
//
// Tests of both backends call the typed entry points (mpcrt_*_f16, ...) of
// a dtype known at run time through this switch.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_UNITTESTS_RUNTIME_FOREACHDTYPE_H
#define MPC_UNITTESTS_RUNTIME_FOREACHDTYPE_H

#include "mpc/Runtime/mpcrt.h"

/// Expands CALL(SUFFIX, T, STAT) for the C ABI instance of dtype `d`: the
/// suffix, the ABI element type and the statistics type (layer norm).
#define MPCRT_FOR_DTYPE(d, CALL)                                               \
  do {                                                                         \
    switch (d) {                                                               \
    case MPCRT_F16:                                                            \
      CALL(f16, uint16_t, float);                                              \
      break;                                                                   \
    case MPCRT_BF16:                                                           \
      CALL(bf16, uint16_t, float);                                             \
      break;                                                                   \
    case MPCRT_F32:                                                            \
      CALL(f32, float, float);                                                 \
      break;                                                                   \
    default:                                                                   \
      CALL(f64, double, double);                                               \
    }                                                                          \
  } while (0)

#endif // MPC_UNITTESTS_RUNTIME_FOREACHDTYPE_H
