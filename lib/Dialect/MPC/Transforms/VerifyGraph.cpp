//===- VerifyGraph.cpp - module-level training graph checks ---------------===//

#include "mpc/Dialect/MPC/IR/MPCOps.h"
#include "mpc/Dialect/MPC/Transforms/Passes.h"

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

static LogicalResult verifyGlobal(ml_program::GlobalOp global) {
  auto type = dyn_cast<RankedTensorType>(global.getType());
  if (!type || !type.hasStaticShape())
    return global.emitError("global @")
           << global.getSymName()
           << " must have a statically shaped tensor type (dynamic shapes "
              "are not supported), got "
           << global.getType();
  if (llvm::is_contained(type.getShape(), 0))
    return global.emitError("global @")
           << global.getSymName()
           << " has a zero-sized dimension: " << global.getType();
  if (!checkedByteSize(type))
    return global.emitError("global @")
           << global.getSymName()
           << " takes more than 2^48 bytes: " << global.getType();
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
  return success(ok);
}
} // namespace mlir::mpc
