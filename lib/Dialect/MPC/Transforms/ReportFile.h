//===- ReportFile.h - the passes' report files, written whole or not kept -===//
//
// A pass writing a report (--mpc-assign-precision's, --mpc-fuse's,
// --mpc-plan-memory's, --mpc-graph-summary's) keeps the file only when
// every byte reached it. A stream that failed (a full disk) would abort the
// process when it closes ("IO failure on output stream"): the pass reports
// it as an error naming the file instead, and the partial file goes. Nor
// is a report written over the file the module was read from.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_LIB_DIALECT_MPC_TRANSFORMS_REPORTFILE_H
#define MPC_LIB_DIALECT_MPC_TRANSFORMS_REPORTFILE_H

#include "mpc/Dialect/MPC/IR/InputLimits.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/Operation.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/ToolOutputFile.h"

namespace mlir::mpc {
/// The report file `path` of `pass` opened for writing, or null after an
/// error at `at`'s location (not the op: no copy of the module in a
/// note): "PASS: cannot open report output: REASON", or, where
/// `path` names the file `at` was read from (its location's file), "PASS:
/// the report PATH is the file the module was read from: ...". Opening
/// would empty that file, the user's model, which the parser may still
/// read where it mapped the file rather than copied it (a bus error).
inline std::unique_ptr<llvm::ToolOutputFile>
openReport(StringRef path, Operation *at, StringRef pass) {
  if (auto source = at->getLoc()->findInstanceOf<FileLineColLoc>();
      path != "-" && source && source.getFilename() != "-" &&
      sameFile(path, source.getFilename())) {
    emitError(at->getLoc(), pass)
        << ": the report " << path
        << " is the file the module was read from: writing "
           "it would lose the model; name another file";
    return nullptr;
  }
  std::string error;
  std::unique_ptr<llvm::ToolOutputFile> file = openOutputFile(path, &error);
  if (!file)
    emitError(at->getLoc(), pass) << ": cannot open report output: " << error;
  return file;
}

/// Keeps `file` (written to `path` by `pass`) where it took every byte;
/// otherwise an error at `at` ("PASS: cannot write the report PATH:
/// REASON"), the stream's error cleared and the file not kept.
inline LogicalResult keepReport(llvm::ToolOutputFile &file, StringRef path,
                                Operation *at, StringRef pass) {
  if (std::string why = writeError(file.os()); !why.empty())
    return emitError(at->getLoc(), pass)
           << ": cannot write the report " << path << ": " << why;
  file.keep();
  return success();
}

} // namespace mlir::mpc

#endif // MPC_LIB_DIALECT_MPC_TRANSFORMS_REPORTFILE_H
