//===- GradStats.cpp - gradient diagnostics -------------------------------===//

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
    ModuleOp module = getOperation();
    auto step = module.lookupSymbol<func::FuncOp>(func);
    if (!step || step.isDeclaration()) {
      module.emitError("mpc-grad-stats: no training step @") << func;
      return signalPassFailure();
    }
    if (module.lookupSymbol("grad_stats")) {
      module.emitError("mpc-grad-stats: a symbol @grad_stats already exists");
      return signalPassFailure();
    }
    SmallVector<Operation *> updates;
    UnscaleAndCheckOp check;
    step.walk([&](Operation *op) {
      if (isa<SGDUpdateOp, AdamUpdateOp>(op))
        updates.push_back(op);
      if (auto c = dyn_cast<UnscaleAndCheckOp>(op))
        check = c;
    });
    if (updates.empty()) {
      step.emitOpError("mpc-grad-stats: no optimizer update whose gradient "
                       "to inspect; run --mpc-optimizer first");
      return signalPassFailure();
    }
    Operation *first = updates.front();
    for (Operation *u : updates)
      if (u->isBeforeInBlock(first))
        first = u;
    if (check && check->isBeforeInBlock(first))
      first = check;
    SmallVector<Value> grads;
    for (Operation *u : updates) {
      Value g = u->getOperand(1);
      if (Operation *def = g.getDefiningOp();
          def && def->getBlock() == first->getBlock() &&
          !def->isBeforeInBlock(first)) {
        u->emitOpError("mpc-grad-stats: its gradient is computed after the "
                       "first optimizer update; all gradients must come "
                       "first");
        return signalPassFailure();
      }
      grads.push_back(g);
    }

    OpBuilder b(&getContext());
    auto statsType = RankedTensorType::get({4}, b.getI64Type());
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(module.getBody());
      ml_program::GlobalOp::create(
          b, module.getLoc(), b.getStringAttr("grad_stats"),
          TypeAttr::get(statsType), b.getUnitAttr(),
          DenseElementsAttr::get(statsType, b.getI64IntegerAttr(0)),
          b.getStringAttr("private"));
    }
    b.setInsertionPoint(first);
    Location loc = step.getLoc();
    Value scale;
    if (check) {
      scale = check.getScale();
    } else {
      auto f32 = RankedTensorType::get({}, b.getF32Type());
      scale = ConstantOp::create(
          b, loc, f32, DenseElementsAttr::get(f32, b.getF32FloatAttr(1.0f)));
    }
    Value stats = GradStatsOp::create(b, loc, scale, grads);
    ml_program::GlobalStoreOp::create(
        b, loc, FlatSymbolRefAttr::get(b.getStringAttr("grad_stats")), stats);
  }
};

} // namespace
