//===- Errors.h - the run-time errors both backends report ------*- C++ -*-===//
//
// One wording for the errors a training step can meet at run time, so that
// the CPU reference and the CUDA backend stop with the same message.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_LIB_RUNTIME_ERRORS_H
#define MPC_LIB_RUNTIME_ERRORS_H

#include "mpc/Runtime/Report.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace mpcrt::errors {

/// An embedding index outside [0, rows) at `position` of the indices of the
/// op `where` (a location and op name).
[[noreturn]] inline void badIndex(int64_t position, const char *where) {
  mpcrt::errors::reportError("%s: index out of range at position %lld of the "
                             "indices\n",
                             where, static_cast<long long>(position));
  std::exit(1);
}

/// A class label outside [0, classes) at `position` of the labels
/// (classes < 0: not known where the error is reported).
[[noreturn]] inline void badLabel(int64_t position, int64_t classes,
                                  const char *where) {
  if (classes >= 0)
    mpcrt::errors::reportError(
        "%s: label out of range [0, %lld) at position %lld "
        "of the labels\n",
        where, static_cast<long long>(classes),
        static_cast<long long>(position));
  else
    mpcrt::errors::reportError(
        "%s: label out of range [0, classes) at position "
        "%lld of the labels\n",
        where, static_cast<long long>(position));
  std::exit(1);
}

} // namespace mpcrt::errors

#endif // MPC_LIB_RUNTIME_ERRORS_H
