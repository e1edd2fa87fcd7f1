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

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include <cstring>

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

/// The initializer a placeholder op names and its attribute type, or an
/// error message.
static std::string placeholder(mlir::Operation *op, const Graph &graph,
                               int64_t &index, mlir::ShapedType &type) {
  auto marker = op->getAttrOfType<mlir::IntegerAttr>(kWeightMarker);
  auto value = op->getAttrOfType<mlir::DenseElementsAttr>("value");
  index = marker ? marker.getInt() : -1;
  if (!value || index < 0 ||
      index >= static_cast<int64_t>(graph.initializers.size()))
    return "mpc-import-onnx has a bug: a weight's placeholder does not "
           "name an initializer";
  type = llvm::cast<mlir::ShapedType>(value.getType());
  const std::vector<char> &bytes = graph.initializers[index].bytes;
  bool splat = false;
  if (!mlir::DenseElementsAttr::isValidRawBuffer(
          type, llvm::ArrayRef<char>(bytes.data(), bytes.size()), splat))
    return "initializer '" + graph.initializers[index].name + "' holds " +
           std::to_string(bytes.size()) + " bytes, which its type does not";
  return "";
}

/// Gives `op` the value `bytes` of `type`.
static void setValue(mlir::Operation *op, mlir::ShapedType type,
                     const std::vector<char> &bytes) {
  op->setAttr("value",
              mlir::DenseElementsAttr::getFromRawBuffer(
                  type, llvm::ArrayRef<char>(bytes.data(), bytes.size())));
}

std::string mpc::onnx_import::fillWeights(mlir::ModuleOp module,
                                          const Graph &graph) {
  std::string error;
  module.walk([&](mlir::Operation *op) {
    if (!op->hasAttr(kWeightMarker) || !error.empty())
      return;
    int64_t i;
    mlir::ShapedType type;
    if (error = placeholder(op, graph, i, type); !error.empty())
      return;
    op->removeAttr(kWeightMarker);
    setValue(op, type, graph.initializers[i].bytes);
  });
  return error;
}

/// Whether MLIR's printer writes these bytes of `type` as hex: more than
/// 100 elements (its default threshold; 1 KiB holds at least 128 of any
/// float type) that are not all the same (a splat prints as one value).
static bool printedAsHex(const std::vector<char> &bytes,
                         mlir::ShapedType type) {
  if (bytes.size() < 1024)
    return false;
  size_t width = bytes.size() / static_cast<size_t>(type.getNumElements());
  for (size_t at = width; at < bytes.size(); at += width)
    if (std::memcmp(bytes.data(), bytes.data() + at, width) != 0)
      return true;
  return false;
}

std::string mpc::onnx_import::placeWeights(mlir::ModuleOp module,
                                           const Graph &graph,
                                           WeightKeys &keys) {
  auto &resources = mlir::DenseResourceElementsHandle::getManagerInterface(
      module.getContext());
  keys.clear();
  std::string error;
  module.walk([&](mlir::Operation *op) {
    if (!op->hasAttr(kWeightMarker) || !error.empty())
      return;
    int64_t i;
    mlir::ShapedType type;
    if (error = placeholder(op, graph, i, type); !error.empty())
      return;
    op->removeAttr(kWeightMarker);
    const std::vector<char> &bytes = graph.initializers[i].bytes;
    if (!printedAsHex(bytes, type)) {
      setValue(op, type, bytes);
      return;
    }
    // A resource without data: the printer writes its key, and nothing
    // in the resource section.
    auto handle = resources.insert(kWeightKey + std::to_string(keys.size()));
    keys.emplace_back(handle.getKey().str(), i);
    op->setAttr("value", mlir::DenseResourceElementsAttr::get(type, handle));
  });
  return error;
}

void mpc::onnx_import::printWithWeights(mlir::ModuleOp module,
                                        const Graph &graph,
                                        const WeightKeys &keys,
                                        mlir::OpPrintingFlags flags,
                                        llvm::raw_ostream &os) {
  std::string text;
  {
    llvm::raw_string_ostream out(text);
    module->print(out, flags);
  }
  // Each key where the printer wrote it, in the ops' order, and no other
  // key-like text (a name in the model could spell one: then MLIR's
  // printer writes the weights).
  auto spelled = [](llvm::StringRef key) {
    return ("dense_resource<" + key + ">").str();
  };
  std::vector<size_t> where;
  size_t count = 0;
  const std::string any = "dense_resource<" + std::string(kWeightKey);
  for (size_t at = text.find(any); at != std::string::npos;
       at = text.find(any, at + 1))
    ++count;
  for (size_t k = 0, from = 0; k < keys.size(); ++k) {
    size_t at = text.find(spelled(keys[k].first), from);
    if (at == std::string::npos)
      break;
    where.push_back(at);
    from = at + 1;
  }
  if (count != keys.size() || where.size() != keys.size()) {
    module.walk([&](mlir::Operation *op) {
      auto value = op->getAttrOfType<mlir::DenseResourceElementsAttr>("value");
      if (!value)
        return;
      for (const auto &[key, i] : keys)
        if (key == value.getRawHandle().getKey())
          setValue(op, value.getType(), graph.initializers[i].bytes);
    });
    module->print(os, flags);
    return;
  }
  // The text between the keys as printed, each key replaced by the hex
  // MLIR's printer would write (upper case, the bytes in memory order),
  // a piece at a time.
  size_t done = 0;
  char hex[1 << 16];
  for (size_t k = 0; k < keys.size(); ++k) {
    os.write(text.data() + done, where[k] - done);
    os << "dense<\"0x";
    const std::vector<char> &bytes = graph.initializers[keys[k].second].bytes;
    for (size_t at = 0; at < bytes.size();) {
      size_t n = std::min(bytes.size() - at, sizeof hex / 2);
      for (size_t j = 0; j < n; ++j) {
        auto b = static_cast<unsigned char>(bytes[at + j]);
        hex[2 * j] = llvm::hexdigit(b >> 4);
        hex[2 * j + 1] = llvm::hexdigit(b & 15);
      }
      os.write(hex, 2 * n);
      at += n;
    }
    os << "\">";
    done = where[k] + spelled(keys[k].first).size();
  }
  os.write(text.data() + done, text.size() - done);
}
