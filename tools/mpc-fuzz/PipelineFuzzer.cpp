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
// mpc-compile --arena-guards makes it) before those. Which of
// mpc-compile's variants an input takes follows from a hash of its bytes
// (pipelineVariant): the backend's lowering (cpu or cuda, whose fusion
// leaves attention unfused), the level (O1, O2 or O3) and type (f16 or
// bf16), and the optional passes (data parallelism, gradient statistics,
// Tensor Core padding, numerics checks, evaluation at the training
// level), so that every pass a user can ask for is fuzzed.
// Errors are the expected outcome for most inputs and are swallowed; a
// crash, a sanitizer report or a hang is a finding. Seeds: the test
// suite's .mlir files (scripts/fuzz.sh).
//
//===----------------------------------------------------------------------===//

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
#include "mlir/Pass/PassRegistry.h"

#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

using namespace mlir;

static MLIRContext &context() {
  static MLIRContext *ctx = [] {
    registerAllPasses();
    mpc::registerMPCPasses();
    DialectRegistry registry;
    registerAllDialects(registry);
    registerAllExtensions(registry);
    registry.insert<mpc::MPCDialect>();
    auto *c = new MLIRContext(registry, MLIRContext::Threading::DISABLED);
    c->loadAllAvailableDialects();
    c->printOpOnDiagnostic(false);
    return c;
  }();
  return *ctx;
}

namespace {

/// The mpc-compile options an input is compiled with, from its bytes.
struct Variant {
  bool cuda, dataParallel, gradStats, pad, checkNumerics, evalAmp,
      recomputeFirst;
  const char *level, *dtype;
};

/// MPC_FUZZ_VARIANT=N in the environment gives every input variant N
/// instead (its bits as the hash's): a sweep of the seeds through each
/// variant in turn.
Variant pipelineVariant(const uint8_t *data, size_t size) {
  static const char *forced = std::getenv("MPC_FUZZ_VARIANT");
  uint32_t h = 2166136261u; // FNV-1a
  for (size_t i = 0; i < size; ++i)
    h = (h ^ data[i]) * 16777619u;
  if (forced)
    h = static_cast<uint32_t>(std::strtoul(forced, nullptr, 0));
  // Half of the inputs lower for CUDA; a quarter take each optional
  // pass; O2 half of them, O1 and O3 a quarter each.
  static const char *const levels[] = {"O2", "O1", "O3", "O2"};
  Variant v;
  v.cuda = (h & 1) != 0;
  v.dataParallel = (h >> 1 & 3) == 0;
  v.gradStats = (h >> 3 & 3) == 0;
  v.pad = (h >> 5 & 3) == 0;
  v.checkNumerics = (h >> 7 & 3) == 0;
  v.evalAmp = (h >> 9 & 1) != 0;
  v.recomputeFirst = (h >> 10 & 1) != 0;
  v.level = levels[h >> 11 & 3];
  v.dtype = (h >> 13 & 1) != 0 ? "bf16" : "f16";
  return v;
}

/// mpc-compile's fusion options: on CUDA attention stays unfused; before
/// autodiff, moves are computed again and concatenations convolved in
/// parts only when `recompute` (mpc-compile never does; mpc-opt may).
std::string fuseOptions(const Variant &v, bool first, bool recompute) {
  std::string options = first ? "epilogues=false" : "";
  if (first && !recompute)
    options += " recompute-moves=false concat-convs=false";
  if (v.cuda)
    options += " attention=false";
  return options.empty() ? "mpc-fuse," : "mpc-fuse{" + options + "},";
}

/// A pipeline of the fuzzer's own that does not parse is its bug, not the
/// input's: stop, rather than fuzz nothing.
void parse(const std::string &pipeline, PassManager &pm) {
  if (failed(parsePassPipeline(pipeline, pm, llvm::errs())))
    llvm::report_fatal_error(llvm::Twine("mpc-fuzz-pipeline: ") + pipeline);
}

} // namespace

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
  Variant v = pipelineVariant(data, size);
  std::string backend = v.cuda ? "cuda" : "cpu";
  std::string precision = std::string("mpc-assign-precision{level=") + v.level +
                          " dtype=" + v.dtype + " alignment-remarks=false},";
  // The passes after the second fusion, as mpc-compile orders them.
  auto tail = [&](const std::string &func, const std::string &plan) {
    std::string passes;
    if (v.pad)
      passes += "mpc-pad-for-tensor-cores,";
    if (v.checkNumerics)
      passes += "mpc-check-numerics{func=" + func + "},";
    return passes + "mpc-plan-memory" + plan +
           ",mpc-lower-to-runtime{entry=" + func + " backend=" + backend + "})";
  };
  // A function of one scalar float result is also a loss: its training
  // step (mpc-compile --train's passes) is built on a copy.
  if (scalarLoss) {
    OwningOpRef<ModuleOp> copy = module->clone();
    PassManager train(&ctx);
    std::string pipeline =
        "builtin.module(mpc-verify-graph," +
        fuseOptions(v, /*first=*/true, v.recomputeFirst) +
        "mpc-autodiff{loss=" + entry +
        " name=mpc_fuzz_step},"
        "mpc-accumulate-gradients{func=mpc_fuzz_step steps=2},"
        "mpc-optimizer{func=mpc_fuzz_step kind=adam lr=0.001},"
        "mpc-eval-step{loss=" +
        entry + " name=mpc_fuzz_eval precision=" + (v.evalAmp ? "amp" : "f32") +
        "}," + precision;
    if (v.dataParallel)
      pipeline += "mpc-data-parallel{func=mpc_fuzz_step bucket-bytes=4096},";
    pipeline += "mpc-loss-scaling{func=mpc_fuzz_step clip-grad-norm=1.0},";
    if (v.gradStats)
      pipeline += "mpc-grad-stats{func=mpc_fuzz_step},";
    pipeline += "canonicalize,cse," + fuseOptions(v, false, true) +
                tail("mpc_fuzz_step", "{guard=32}");
    parse(pipeline, train);
    (void)train.run(*copy);
  }
  PassManager pm(&ctx);
  parse("builtin.module(mpc-verify-graph," +
            fuseOptions(v, /*first=*/true, v.recomputeFirst) + precision +
            "canonicalize,cse," + fuseOptions(v, false, true) + tail(entry, ""),
        pm);
  if (succeeded(pm.run(*module))) {
    std::string printed;
    llvm::raw_string_ostream os(printed);
    module->print(os);
  }
  return 0;
}
