//===- ReportFile.h - the passes' report files, written whole or not kept -===//
//
// A pass writing a report (--mpc-assign-precision's, --mpc-fuse's,
// --mpc-plan-memory's, --mpc-graph-summary's) keeps the file only when
// every byte reached it. A stream that failed (a full disk) would abort the
// process when it closes ("IO failure on output stream"): the pass reports
// it as an error naming the file instead, and the partial file goes.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_LIB_DIALECT_MPC_TRANSFORMS_REPORTFILE_H
#define MPC_LIB_DIALECT_MPC_TRANSFORMS_REPORTFILE_H

#include "mpc/Dialect/MPC/IR/InputLimits.h"

#include "mlir/IR/Operation.h"
#include "llvm/Support/ToolOutputFile.h"

namespace mlir::mpc {

/// Keeps `file` (written to `path` by `pass`) where it took every byte;
/// otherwise an error at `at` ("PASS: cannot write the report PATH:
/// REASON"), the stream's error cleared and the file not kept.
inline LogicalResult keepReport(llvm::ToolOutputFile &file, StringRef path,
                                Operation *at, StringRef pass) {
  if (std::string why = writeError(file.os()); !why.empty())
    return at->emitError(pass)
           << ": cannot write the report " << path << ": " << why;
  file.keep();
  return success();
}

} // namespace mlir::mpc

#endif // MPC_LIB_DIALECT_MPC_TRANSFORMS_REPORTFILE_H
