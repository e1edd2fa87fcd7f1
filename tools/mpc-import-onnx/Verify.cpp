//===- Verify.cpp - the imported text parsed and verified ----------------===//
//
// What the importer writes is parsed and verified by mpc's dialect before
// it is written out. ONNX's shape inference keeps the types a model
// declares where it cannot compute them, and leaves some operand shapes
// of some ops unchecked (Gemm's bias, a convolution's channels), so a
// malformed model can reach the emitters with types that do not hold
// together; the emitters check what they rely on, and whatever still
// fails mpc's verifiers is an error at the node whose ops it is.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

using namespace mpc::onnx_import;

/// The node a location names: an op's location is NAME(FILE:LINE:1); a
/// parse error points into the text, whose line names its node the same
/// way.
static std::string nodeOf(mlir::Location where, llvm::StringRef text) {
  if (auto name = llvm::dyn_cast<mlir::NameLoc>(where))
    return name.getName().str();
  auto file = llvm::dyn_cast<mlir::FileLineColLoc>(where);
  if (!file || file.getLine() == 0)
    return "";
  llvm::SmallVector<llvm::StringRef> lines;
  text.split(lines, '\n');
  if (file.getLine() > lines.size())
    return "";
  llvm::StringRef line = lines[file.getLine() - 1];
  size_t at = line.rfind(" loc(\"");
  if (at == llvm::StringRef::npos)
    return "";
  llvm::StringRef rest = line.drop_front(at + 6);
  return rest.take_until([](char c) { return c == '"'; }).str();
}

std::string mpc::onnx_import::parseImported(
    const std::string &text, const std::string &sourceName,
    mlir::MLIRContext &context, mlir::OwningOpRef<mlir::ModuleOp> &module) {
  std::string first;
  mlir::Location where = mlir::UnknownLoc::get(&context);
  mlir::ScopedDiagnosticHandler collect(&context, [&](mlir::Diagnostic &d) {
    if (d.getSeverity() == mlir::DiagnosticSeverity::Error && first.empty()) {
      first = d.str();
      where = d.getLocation();
    }
    return mlir::success();
  });
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(text, sourceName), llvm::SMLoc());
  module = mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, &context);
  if (module && mlir::succeeded(mlir::verify(*module)))
    return "";
  module = nullptr;
  std::string node = nodeOf(where, text);
  return (node.empty() ? std::string() : "node '" + node + "': ") +
         "the imported ops do not verify (" +
         (first.empty() ? std::string("no diagnostic") : first) +
         "): the model's types disagree where ONNX's shape inference does "
         "not check them, or mpc-import-onnx has a bug";
}
