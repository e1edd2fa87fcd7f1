//===- InputLimits.cpp - limits checked before MLIR's parser runs ---------===//

#include "mpc/Dialect/MPC/IR/InputLimits.h"

#include "mpc/Support/Files.h"

#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/raw_ostream.h"

#include <cctype>

using namespace mlir;

/// Whether `text` at `i` is `array<`, then optional spaces, then the
/// keyword `index`.
static bool indexArrayAt(StringRef text, size_t i) {
  if (!text.substr(i).starts_with("array<") ||
      (i > 0 && (isalnum(static_cast<unsigned char>(text[i - 1])) ||
                 text[i - 1] == '_' || text[i - 1] == '.')))
    return false;
  StringRef rest = text.substr(i + 6).ltrim(" \t\r\n");
  return rest.starts_with("index") &&
         (rest.size() == 5 ||
          !(isalnum(static_cast<unsigned char>(rest[5])) || rest[5] == '_'));
}

LogicalResult mlir::mpc::checkBeforeParsing(const llvm::SourceMgr &sourceMgr,
                                            llvm::raw_ostream &os,
                                            unsigned limit) {
  const llvm::MemoryBuffer *buffer =
      sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID());
  StringRef text = buffer->getBuffer();
  // The open brackets. An arrow's `>` closes nothing, and a closer pops
  // only its own opener (the `>` of an affine set's `>=` inside `(...)`
  // pops nothing); the parser stops at a real mismatch before it could
  // nest deeper, so the count never falls below the parser's depth.
  SmallVector<char, 64> open;
  // After `{-#`: the file's resources, whose blobs are hex strings that
  // start with their alignment (4 bytes, little-endian). MLIR's parser
  // refuses one that is not a power of two but 0, which it then passes
  // to the allocator ("LLVM ERROR: out of memory", an abort).
  bool resources = false;
  for (size_t i = 0, n = text.size(); i < n; ++i) {
    char c = text[i];
    if (c == '"' && resources && text.substr(i + 1).starts_with("0x") &&
        text.substr(i + 3, 8) == "00000000") {
      sourceMgr.PrintMessage(
          os, llvm::SMLoc::getFromPointer(text.data() + i),
          llvm::SourceMgr::DK_Error,
          "a resource blob whose alignment (its first 4 bytes) is 0: mpc "
          "does not parse one (MLIR's parser would crash); give a power of "
          "two");
      return failure();
    }
    if (c == '{' && text.substr(i).starts_with("{-#"))
      resources = true;
    if (c == '"') { // a string literal, with its escapes
      for (++i; i < n && text[i] != '"'; ++i)
        if (text[i] == '\\')
          ++i;
      continue;
    }
    if (c == '/' && i + 1 < n && text[i + 1] == '/') { // a comment
      while (i < n && text[i] != '\n')
        ++i;
      continue;
    }
    if (c == 'a' && indexArrayAt(text, i)) {
      sourceMgr.PrintMessage(
          os, llvm::SMLoc::getFromPointer(text.data() + i),
          llvm::SourceMgr::DK_Error,
          "a dense array of index elements: mpc does not parse one (MLIR's "
          "parser would crash); use i64");
      return failure();
    }
    if (c == '>' && i > 0 && text[i - 1] == '-') // an arrow
      continue;
    char opener = c == ')'   ? '('
                  : c == ']' ? '['
                  : c == '}' ? '{'
                  : c == '>' ? '<'
                             : 0;
    if (opener) {
      if (!open.empty() && open.back() == opener)
        open.pop_back();
      continue;
    }
    if (c != '(' && c != '[' && c != '{' && c != '<')
      continue;
    open.push_back(c);
    if (open.size() > limit) {
      sourceMgr.PrintMessage(
          os, llvm::SMLoc::getFromPointer(text.data() + i),
          llvm::SourceMgr::DK_Error,
          "brackets nest more than " + std::to_string(limit) +
              " levels deep here; mpc does not parse such input (MLIR's "
              "parser would run out of stack)");
      return failure();
    }
  }
  return success();
}

std::string mlir::mpc::writeError(llvm::raw_fd_ostream &os) {
  return ::mpc::files::writeError(os);
}

bool mlir::mpc::sameFile(StringRef a, StringRef b) {
  return ::mpc::files::sameFile(a, b);
}

bool mlir::mpc::wroteAll(llvm::raw_fd_ostream &os, StringRef path,
                         StringRef tool, llvm::raw_ostream &errs) {
  std::string why = ::mpc::files::writeError(os);
  if (why.empty())
    return true;
  errs << tool << ": error: " << path << ": " << why << "\n";
  return false;
}

std::unique_ptr<llvm::MemoryBuffer>
mlir::mpc::openSourceFile(StringRef path, std::string *error) {
  if (std::string why = path == "-" ? "" : ::mpc::files::notAFile(path);
      !why.empty()) {
    if (error)
      *error = why;
    return nullptr;
  }
  return openInputFile(path, error);
}
