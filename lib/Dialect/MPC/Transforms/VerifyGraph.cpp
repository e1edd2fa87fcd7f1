//===- VerifyGraph.cpp - module-level training graph checks ---------------===//

#include "mpc/Dialect/MPC/IR/MPCOps.h"
#include "mpc/Dialect/MPC/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::mpc {
#define GEN_PASS_DEF_VERIFYGRAPHPASS
#include "mpc/Dialect/MPC/Transforms/Passes.h.inc"

namespace {

static bool usesFans(InitKind kind) {
  return kind == InitKind::XavierUniform || kind == InitKind::XavierNormal ||
         kind == InitKind::KaimingUniform || kind == InitKind::KaimingNormal;
}

/// A low-precision weight copy (`mpc.master = @w`, made at O2) names a
/// global of the same shape that the runtime initializes it from.
static LogicalResult verifyMaster(ml_program::GlobalOp global,
                                  SymbolTable &symbols) {
  Attribute attr = global->getAttr("mpc.master");
  if (!attr)
    return success();
  auto ref = dyn_cast<FlatSymbolRefAttr>(attr);
  auto master =
      ref ? symbols.lookup<ml_program::GlobalOp>(ref.getValue()) : nullptr;
  if (!master)
    return global.emitError("global @")
           << global.getSymName()
           << ": 'mpc.master' must name a global of the module, got " << attr;
  auto copyType = cast<RankedTensorType>(global.getType());
  auto masterType = dyn_cast<RankedTensorType>(master.getType());
  if (!masterType || masterType.getShape() != copyType.getShape())
    return global.emitError("global @")
           << global.getSymName() << " must have the shape of its master @"
           << master.getSymName() << ", got " << copyType << " and "
           << master.getType();
  return success();
}

/// A tensor type mpc can plan: ranked and statically shaped, with no
/// zero-sized dimension and at most 2^48 bytes, as the ops' own verifiers
/// require of their operands. `emit` begins the error with what has the
/// type (a global, an argument, an op's result).
static LogicalResult verifyTensorType(Type type,
                                      function_ref<InFlightDiagnostic()> emit) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return emit() << " must have a statically shaped tensor type (dynamic "
                     "shapes are not supported), got "
                  << type;
  if (llvm::is_contained(tensor.getShape(), 0))
    return emit() << " has a zero-sized dimension: " << type;
  if (!checkedByteSize(tensor))
    return emit() << " takes more than 2^48 bytes: " << type;
  return success();
}

static LogicalResult verifyGlobal(ml_program::GlobalOp global) {
  if (failed(verifyTensorType(global.getType(), [&] {
        return global.emitError("global @") << global.getSymName();
      })))
    return failure();
  auto type = cast<RankedTensorType>(global.getType());
  // ml_program.global's own verifier does not compare them: a dense value
  // of another shape or element type was read as the global's (past the
  // end of its data, found by the pipeline fuzzer).
  if (auto elements = dyn_cast_or_null<ElementsAttr>(global.getValueAttr());
      elements && elements.getType() != type)
    return global.emitError("global @")
           << global.getSymName() << ": its initial value is "
           << elements.getType() << ", not the global's type " << type;
  auto init = dyn_cast_or_null<InitAttr>(global.getValueAttr());
  if (!init)
    return success();
  if (!isa<FloatType>(type.getElementType()))
    return global.emitError("global @")
           << global.getSymName() << ": an #mpc.init initializer needs a "
           << "floating-point element type, got " << type.getElementType();
  if (usesFans(init.getKind()) && type.getRank() < 2)
    return global.emitError("global @")
           << global.getSymName() << ": '" << stringifyInitKind(init.getKind())
           << "' needs a tensor of rank >= 2 to compute fans, got " << type;
  return success();
}

/// A value's type: a tensor must pass verifyTensorType; other types are
/// left to the passes that read them. Ops of other dialects
/// (`tensor.empty`) and function signatures are checked here, before a
/// pass sizes them.
static LogicalResult verifyValueType(Type type,
                                     function_ref<InFlightDiagnostic()> emit) {
  return success(!isa<TensorType>(type) ||
                 succeeded(verifyTensorType(type, emit)));
}

static LogicalResult verifyFunction(func::FuncOp func) {
  bool ok = true;
  FunctionType type = func.getFunctionType();
  for (auto [i, input] : llvm::enumerate(type.getInputs()))
    ok &= succeeded(verifyValueType(input, [&, i = i] {
      Location loc =
          func.isExternal() ? func.getLoc() : func.getArgument(i).getLoc();
      return emitError(loc)
             << "argument #" << i << " of @" << func.getSymName();
    }));
  for (auto [i, result] : llvm::enumerate(type.getResults()))
    ok &= succeeded(verifyValueType(result, [&, i = i] {
      return func.emitError()
             << "result #" << i << " of @" << func.getSymName();
    }));
  return success(ok);
}

/// The tensors every op of the module makes (results, and arguments of the
/// blocks in its regions other than a function's entry block), at the
/// module's top level too: the first that is not well formed is an error.
static LogicalResult verifyValues(ModuleOp module) {
  WalkResult walk = module.walk([&](Operation *op) {
    for (OpResult result : op->getResults())
      if (failed(verifyValueType(result.getType(), [&] {
            return op->emitOpError() << "result #" << result.getResultNumber();
          })))
        return WalkResult::interrupt();
    for (Region &region : op->getRegions())
      for (Block &block : region) {
        if (isa<func::FuncOp>(op) && block.isEntryBlock())
          continue; // the signature, checked by verifyFunction
        for (BlockArgument arg : block.getArguments())
          if (failed(verifyValueType(arg.getType(), [&] {
                return emitError(arg.getLoc())
                       << "block argument #" << arg.getArgNumber() << " in '"
                       << op->getName() << "'";
              })))
            return WalkResult::interrupt();
      }
    return WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

struct VerifyGraphPass : public impl::VerifyGraphPassBase<VerifyGraphPass> {
  void runOnOperation() override {
    if (failed(verifyTrainingGraph(getOperation())))
      return signalPassFailure();
    markAllAnalysesPreserved();
  }
};

} // namespace

LogicalResult verifyTrainingGraph(ModuleOp module) {
  bool ok = true;
  std::optional<SymbolTable> symbols;
  for (auto global : module.getOps<ml_program::GlobalOp>()) {
    ok &= succeeded(verifyGlobal(global));
    if (ok && global->hasAttr("mpc.master")) {
      if (!symbols)
        symbols.emplace(module);
      ok &= succeeded(verifyMaster(global, *symbols));
    }
  }
  for (auto func : module.getOps<func::FuncOp>())
    ok &= succeeded(verifyFunction(func));
  return success(ok && succeeded(verifyValues(module)));
}
} // namespace mlir::mpc
