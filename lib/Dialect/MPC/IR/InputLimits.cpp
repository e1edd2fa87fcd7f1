//===- InputLimits.cpp - limits checked before MLIR's parser runs ---------===//

#include "mpc/Dialect/MPC/IR/InputLimits.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

LogicalResult mlir::mpc::checkNesting(const llvm::SourceMgr &sourceMgr,
                                      llvm::raw_ostream &os, unsigned limit) {
  const llvm::MemoryBuffer *buffer =
      sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID());
  StringRef text = buffer->getBuffer();
  // The open brackets. An arrow's `>` closes nothing, and a closer pops
  // only its own opener (the `>` of an affine set's `>=` inside `(...)`
  // pops nothing); the parser stops at a real mismatch before it could
  // nest deeper, so the count never falls below the parser's depth.
  SmallVector<char, 64> open;
  for (size_t i = 0, n = text.size(); i < n; ++i) {
    char c = text[i];
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
