//===- InputLimits.h - limits checked before MLIR's parser runs -*- C++ -*-===//
//
// MLIR's parser descends recursively, one call chain per level of nested
// brackets, so a file nesting brackets thousands deep (a few kilobytes of
// "(((") overflows the stack before any error is reported; and it crashes
// on a dense array of `index` elements (`array<index: 1>`: it takes index
// for an integer or float type and asks for its bit width). Every mpc tool
// that parses textual IR checks the text first. And what they write: a
// stream that could not write every byte (a full disk) is an error naming
// the file, not LLVM's abort when the stream closes.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_DIALECT_MPC_IR_INPUTLIMITS_H
#define MPC_DIALECT_MPC_IR_INPUTLIMITS_H

#include "mlir/Support/LLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <string>

namespace mlir::mpc {

/// The deepest nesting of brackets mpc's tools parse. Real graphs nest a
/// handful of levels (a rank-8 dense literal, a region in a function in a
/// module); 256 stays far below what overflows the parser's stack, also
/// in a sanitized build.
constexpr unsigned kMaxNesting = 256;

/// Checks that the main buffer of `sourceMgr` nests `(`, `[`, `{` and `<`
/// at most `limit` deep and holds no `array<index` outside string literals
/// and `//` comments. If not, prints "FILE:LINE:COL: error: ..." at the
/// first such place to `os` and fails. Linear in the buffer's size.
LogicalResult checkBeforeParsing(const llvm::SourceMgr &sourceMgr,
                                 llvm::raw_ostream &os,
                                 unsigned limit = kMaxNesting);

/// Why `os` did not take every byte (flushed first), or "": the stream's
/// error cleared (mpc/Support/Files.h's writeError, for code that sees
/// mlir::mpc, whose `mpc::` the global namespace of that header would make
/// ambiguous).
std::string writeError(llvm::raw_fd_ostream &os);

/// Whether paths `a` and `b` name one file (mpc/Support/Files.h's
/// sameFile, for code that sees mlir::mpc).
bool sameFile(StringRef a, StringRef b);

/// Whether `os`, written to `path`, took every byte (flushed first). Where
/// it did not, prints "TOOL: error: PATH: REASON" to `errs` and clears the
/// stream's error (an uncleared one aborts the process when the stream
/// closes): the caller then does not keep the file.
bool wroteAll(llvm::raw_fd_ostream &os, StringRef path, StringRef tool,
              llvm::raw_ostream &errs);

/// mlir::openInputFile, refusing what never ends or is no file
/// (mpc::files::notAFile: a device, a folder, a socket). A regular file, a
/// pipe and "-" (standard input) are read.
std::unique_ptr<llvm::MemoryBuffer> openSourceFile(StringRef path,
                                                   std::string *error);

} // namespace mlir::mpc

#endif
