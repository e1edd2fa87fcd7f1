//===- GradStats.cpp - gradient diagnostics -------------------------------===//

#include "TrainingStep.h"

#include "mpc/Dialect/MPC/IR/MPCOps.h"
#include "mpc/Dialect/MPC/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/IR/Builders.h"

namespace mlir::mpc {
#define GEN_PASS_DEF_GRADSTATSPASS
#include "mpc/Dialect/MPC/Transforms/Passes.h.inc"
} // namespace mlir::mpc

using namespace mlir;
using namespace mlir::mpc;

namespace {

struct GradStatsPass : public mpc::impl::GradStatsPassBase<GradStatsPass> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(verifyTrainingGraph(getOperation())))
      return signalPassFailure();
    ModuleOp module = getOperation();
    auto step = module.lookupSymbol<func::FuncOp>(func);
    if (!step || step.isDeclaration()) {
      module.emitError("mpc-grad-stats: no training step @") << func;
      return signalPassFailure();
    }
    OpBuilder b(&getContext());
    auto statsType = RankedTensorType::get({4}, b.getI64Type());
    if (!createStateGlobal(
            module, b, "mpc-grad-stats", "grad_stats", statsType,
            DenseElementsAttr::get(statsType, b.getI64IntegerAttr(0)), true))
      return signalPassFailure();
    UnscaleAndCheckOp check;
    step.walk([&](UnscaleAndCheckOp c) { check = c; });
    FailureOr<OptimizerUpdates> updates =
        collectOptimizerUpdates(step, "mpc-grad-stats", check);
    if (failed(updates))
      return signalPassFailure();
    if (updates->ops.empty()) {
      step.emitOpError("mpc-grad-stats: no optimizer update whose gradient "
                       "to inspect; run --mpc-optimizer first");
      return signalPassFailure();
    }
    b.setInsertionPoint(updates->first);
    Location loc = step.getLoc();
    Value scale;
    if (check) {
      scale = check.getScale();
    } else {
      auto f32 = RankedTensorType::get({}, b.getF32Type());
      scale = ConstantOp::create(
          b, loc, f32, DenseElementsAttr::get(f32, b.getF32FloatAttr(1.0f)));
    }
    Value stats = GradStatsOp::create(b, loc, scale, updates->grads);
    ml_program::GlobalStoreOp::create(
        b, loc, FlatSymbolRefAttr::get(b.getStringAttr("grad_stats")), stats);
  }
};

} // namespace
