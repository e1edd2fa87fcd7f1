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
  // The text itself, not a copy (it may hold gigabytes of weights).
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBuffer(text, sourceName,
                                       /*RequiresNullTerminator=*/true),
      llvm::SMLoc());
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

std::string mpc::onnx_import::fillWeights(mlir::ModuleOp module,
                                          const Graph &graph) {
  std::string error;
  module.walk([&](mlir::Operation *op) {
    auto index = op->getAttrOfType<mlir::IntegerAttr>(kWeightMarker);
    if (!index)
      return;
    op->removeAttr(kWeightMarker);
    auto value = op->getAttrOfType<mlir::DenseElementsAttr>("value");
    int64_t i = index.getInt();
    if (!value || i < 0 ||
        i >= static_cast<int64_t>(graph.initializers.size())) {
      error = "mpc-import-onnx has a bug: a weight's placeholder does not "
              "name an initializer";
      return;
    }
    const std::vector<char> &bytes = graph.initializers[i].bytes;
    auto type = llvm::cast<mlir::ShapedType>(value.getType());
    bool splat = false;
    llvm::ArrayRef<char> raw(bytes.data(), bytes.size());
    if (!mlir::DenseElementsAttr::isValidRawBuffer(type, raw, splat)) {
      error = "initializer '" + graph.initializers[i].name + "' holds " +
              std::to_string(bytes.size()) + " bytes, which its type does not";
      return;
    }
    op->setAttr("value", mlir::DenseElementsAttr::getFromRawBuffer(type, raw));
  });
  return error;
}
