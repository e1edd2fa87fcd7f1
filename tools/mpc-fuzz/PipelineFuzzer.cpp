//===- PipelineFuzzer.cpp - libFuzzer over parse -> AMP -> lowering
//--------===//
//
// Each input is a graph in the textual IR. It is parsed, verified, run
// through the mpc passes a compiled step goes through (graph checks,
// fusion, precision assignment, cast clean-up, memory planning, lowering
// to the runtime ABI) and printed. When its first function returns one
// scalar float, a copy also goes through the training passes of
// mpc-compile --train (autodiff, accumulation, the optimizer, the
// evaluation step, loss scaling with clipping; its plan with guards, as
// mpc-compile --arena-guards makes it) before those, each in the variant
// of mpc-compile's options that a hash of the input picks (Variants.h).
// Errors are the expected outcome for most inputs and are swallowed; a
// crash, a sanitizer report or a hang is a finding. Seeds: the test
// suite's .mlir files (scripts/fuzz.sh).
//
//===----------------------------------------------------------------------===//

#include "Variants.h"

#include "mpc/Dialect/MPC/IR/InputLimits.h"
#include "mpc/Dialect/MPC/IR/MPCOps.h"
#include "mpc/Dialect/MPC/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/Verifier.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cstddef>
#include <cstdint>
#include <string>

using namespace mlir;
namespace fuzz = ::mpc::fuzz;

static MLIRContext &context() {
  static MLIRContext *ctx = [] {
    registerAllPasses();
    mlir::mpc::registerMPCPasses();
    DialectRegistry registry;
    registerAllDialects(registry);
    registerAllExtensions(registry);
    registry.insert<mlir::mpc::MPCDialect>();
    auto *c = new MLIRContext(registry, MLIRContext::Threading::DISABLED);
    c->loadAllAvailableDialects();
    c->printOpOnDiagnostic(false);
    return c;
  }();
  return *ctx;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  MLIRContext &ctx = context();
  ScopedDiagnosticHandler quiet(&ctx, [](Diagnostic &) { return success(); });
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(
          llvm::StringRef(reinterpret_cast<const char *>(data), size),
          "fuzz.mlir"),
      llvm::SMLoc());
  // As the tools do: nothing nested too deep reaches the parser.
  if (failed(mlir::mpc::checkBeforeParsing(sourceMgr, llvm::nulls())))
    return 0;
  ParserConfig config(&ctx);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, config);
  if (!module || failed(verify(*module)))
    return 0;
  // The entry is the first function, whatever its name.
  std::string entry = "train_step";
  bool scalarLoss = false;
  for (auto fn : module->getOps<func::FuncOp>())
    if (!fn.isDeclaration()) {
      entry = fn.getSymName().str();
      auto results = fn.getFunctionType().getResults();
      auto type = results.size() == 1 ? dyn_cast<RankedTensorType>(results[0])
                                      : RankedTensorType();
      scalarLoss =
          type && type.getRank() == 0 && isa<FloatType>(type.getElementType());
      break;
    }
  fuzz::Variant v = fuzz::pipelineVariant(data, size);
  // A function of one scalar float result is also a loss: its training
  // step (mpc-compile --train's passes, with --accumulate=2, the
  // evaluation step, clipping and --arena-guards) is built on a copy.
  if (scalarLoss) {
    OwningOpRef<ModuleOp> copy = module->clone();
    PassManager train(&ctx);
    mlir::mpc::StepPipelineOptions options =
        fuzz::trainingPipeline(v, entry, "mpc_fuzz_step", 2, "mpc_fuzz_eval");
    options.clipGradNorm = "1.0";
    options.planOptions = "guard=32";
    fuzz::addPipeline(options, train);
    (void)train.run(*copy);
  }
  PassManager pm(&ctx);
  fuzz::addPipeline(fuzz::inferencePipeline(v, entry), pm);
  if (succeeded(pm.run(*module))) {
    std::string printed;
    llvm::raw_string_ostream os(printed);
    module->print(os);
  }
  return 0;
}
