//===- ImportFuzzer.cpp - libFuzzer over the ONNX importer ----------------===//
//
// Each input is an ONNX model (a serialized ModelProto). It goes through
// what mpc-import-onnx does: ONNX's checker, version converter and shape
// inference (in the importer's child process), the translation into the
// mpc dialect, then the parse and verification of that text. A model the
// importer accepts is imported a second time with a loss (a
// cross-entropy over its first integer input, when it has one, else a
// mean squared error against a target of its output's shape), and that
// graph goes through what mpc-compile --train runs on it (autodiff,
// the optimizer, precision assignment, loss scaling, fusion, memory
// planning, the lowering), in the variant of mpc-compile's options that a
// hash of the input picks (Variants.h).
//
// Errors are the expected outcome for most inputs and are swallowed; a
// crash, a sanitizer report or a hang is a finding. An imported graph
// that does not verify is an error naming the node for the user (the
// emitters check what ONNX's shape inference leaves unchecked, and
// mpc's verifiers catch the rest); with MPC_FUZZ_IMPORT_STRICT=1 in the
// environment it is a finding too, which points at a check an emitter
// lacks.
// Crashes of libonnx itself happen in the child and are errors. Seeds:
// the importer's test models and ONNX's node tests (scripts/fuzz.sh).
//
//===----------------------------------------------------------------------===//

#include "Importer.h"
#include "OnnxModel.h"
#include "Variants.h"

#include "mpc/Dialect/MPC/IR/MPCOps.h"
#include "mpc/Dialect/MPC/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/Support/raw_ostream.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

using namespace mpc::onnx_import;

/// Swallows the diagnostics of the passes (errors are expected).
struct ScopedQuiet {
  explicit ScopedQuiet(mlir::MLIRContext &ctx)
      : handler(&ctx, [](mlir::Diagnostic &) { return mlir::success(); }) {}
  mlir::ScopedDiagnosticHandler handler;
};

static mlir::MLIRContext &context() {
  static mlir::MLIRContext *ctx = [] {
    mlir::registerAllPasses();
    mlir::mpc::registerMPCPasses();
    mlir::DialectRegistry registry;
    mlir::registerAllDialects(registry);
    mlir::registerAllExtensions(registry);
    registry.insert<mlir::mpc::MPCDialect>();
    auto *c =
        new mlir::MLIRContext(registry, mlir::MLIRContext::Threading::DISABLED);
    c->loadAllAvailableDialects();
    return c;
  }();
  return *ctx;
}

/// Imports `graph` with `options`. With a loss, the training pipeline
/// (in `variant`) then runs on what verifies.
static bool importAndVerify(const Graph &graph, const ImportOptions &options,
                            const mpc::fuzz::Variant &variant) {
  std::string text;
  if (!importGraph(graph, options, text).empty())
    return false;
  mlir::MLIRContext &ctx = context();
  mlir::OwningOpRef<mlir::ModuleOp> module;
  if (std::string err = parseImported(text, "fuzz.onnx", ctx, module);
      !err.empty()) {
    // An error for the user either way; with MPC_FUZZ_IMPORT_STRICT set,
    // a finding: a check an emitter lacks.
    static const bool strict = getenv("MPC_FUZZ_IMPORT_STRICT") != nullptr;
    if (strict) {
      llvm::errs() << "mpc-fuzz-import: " << err << "\n" << text << "\n";
      std::abort();
    }
    return false;
  }
  // What mpc-import-onnx writes (the large weights' hex from their bytes)
  // must be what MLIR prints after fillWeights, byte for byte.
  {
    mlir::OwningOpRef<mlir::ModuleOp> copy = module->clone();
    WeightKeys keys;
    if (!placeWeights(*copy, graph, keys).empty())
      std::abort(); // the importer's own placeholders
    auto flags = mlir::OpPrintingFlags().enableDebugInfo(true, false);
    std::string written, printed;
    llvm::raw_string_ostream writtenOs(written), printedOs(printed);
    printWithWeights(*copy, graph, keys, flags, writtenOs);
    if (!fillWeights(*module, graph).empty())
      std::abort();
    module->print(printedOs, flags);
    if (written != printed) {
      llvm::errs() << "mpc-fuzz-import: the written module differs from "
                      "the printed one\n";
      std::abort();
    }
  }
  ScopedQuiet quiet(ctx);
  if (options.loss.empty())
    return true;
  mlir::PassManager pm(&ctx);
  mpc::fuzz::addPipeline(
      mpc::fuzz::trainingPipeline(variant, "loss", "train_step", 1, ""), pm);
  (void)pm.run(*module);
  return true;
}

/// `graph` with its float inputs of known shape, but the first when there
/// are more, made zero initializers where it has no float initializer of
/// its own (ONNX's node tests take every operand as an input): its
/// training import then has parameters to differentiate, and autodiff,
/// the optimizer and what follows see the node's gradients, where they
/// would stop at a graph without parameters.
static Graph withParameters(Graph graph) {
  for (const TensorValue &t : graph.initializers)
    if (isFloat(t.type.element))
      return graph;
  size_t floats = 0;
  for (const auto &[name, type] : graph.inputs)
    floats += isFloat(type.element);
  bool keptData = floats < 2;
  std::vector<std::pair<std::string, TensorType>> inputs;
  for (auto &[name, type] : graph.inputs) {
    bool known = type.hasShape;
    for (int64_t d : type.dims)
      known = known && d > 0;
    if (!isFloat(type.element) || !known || !keptData) {
      keptData = keptData || isFloat(type.element);
      inputs.emplace_back(name, type);
      continue;
    }
    graph.initializers.push_back(TensorValue{name, type, {}}); // zeros
  }
  graph.inputs = std::move(inputs);
  return graph;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const std::string path = [] {
    const char *tmp = getenv("TMPDIR");
    return std::string(tmp && *tmp ? tmp : "/tmp") + "/mpc-fuzz-import-" +
           std::to_string(getpid()) + ".onnx";
  }();
  FILE *f = std::fopen(path.c_str(), "wb");
  if (!f)
    return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  Graph graph;
  if (!loadModel(path, {}, graph).empty())
    return 0;
  ImportOptions options;
  options.sourceName = "fuzz.onnx";
  mpc::fuzz::Variant variant = mpc::fuzz::pipelineVariant(data, size);
  if (!importAndVerify(graph, options, variant))
    return 0;
  // Trained: with a cross-entropy over its first integer input (the
  // class labels) where it has one, else with a mean squared error
  // against a target of its output's shape (a new argument).
  graph = withParameters(std::move(graph));
  options.loss = "mse";
  options.labels = "mpc_fuzz_target";
  for (const auto &[name, type] : graph.inputs)
    if (type.element == "int64" || type.element == "int32") {
      options.loss = "cross_entropy";
      options.labels = name;
      break;
    }
  importAndVerify(graph, options, variant);
  return 0;
}
