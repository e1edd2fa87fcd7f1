//===- Autodiff.cpp - reverse-mode differentiation of a loss --------------===//

#include "TrainingStep.h"
#include "TypeUtils.h"

#include "mpc/Dialect/MPC/IR/MPCOps.h"

#include "mlir/IR/Diagnostics.h"
#include "mpc/Dialect/MPC/Transforms/Passes.h"
#include "mpc/Dialect/MPC/Transforms/PrecisionPolicy.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"

namespace mlir::mpc {
#define GEN_PASS_DEF_AUTODIFFPASS
#include "mpc/Dialect/MPC/Transforms/Passes.h.inc"
} // namespace mlir::mpc

using namespace mlir;
using namespace mlir::mpc;

namespace {

Value zeros(OpBuilder &b, Location loc, RankedTensorType type) {
  Attribute zero = b.getFloatAttr(type.getElementType(), 0.0);
  return ConstantOp::create(b, loc, type, DenseElementsAttr::get(type, zero));
}

struct AutodiffPass : public mpc::impl::AutodiffPassBase<AutodiffPass> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(verifyTrainingGraph(getOperation())))
      return signalPassFailure();
    ModuleOp module = getOperation();
    auto step = cloneLossFunction(module, "mpc-autodiff", loss, name);
    if (!step)
      return signalPassFailure();
    FunctionType type = step.getFunctionType();
    OpBuilder b(module.getContext());
    Block &body = step.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());

    // Trainable globals: loaded, not stored, mutable float, not frozen.
    DenseSet<StringRef> stored;
    step.walk([&](ml_program::GlobalStoreOp s) {
      stored.insert(s.getGlobal().getLeafReference());
    });
    SymbolTable symbols(module);
    auto trainable = [&](StringRef global) {
      auto g = symbols.lookup<ml_program::GlobalOp>(global);
      return g && g.getIsMutable() && floatTensor(g.getType()) &&
             !g->hasAttr("mpc.frozen") && !stored.contains(global);
    };

    // The reverse sweep, appended before the return.
    b.setInsertionPoint(ret);
    DenseMap<Value, Value> grads;
    llvm::MapVector<StringRef, Value> globalGrads;
    auto accumulate = [&](Value &slot, Value g) {
      slot = slot ? AddOp::create(b, g.getLoc(), slot, g).getResult() : g;
    };
    Value lossValue = ret.getOperand(0);
    auto lossType = cast<RankedTensorType>(lossValue.getType());
    Attribute one = b.getFloatAttr(lossType.getElementType(), 1.0);
    // The seed d loss / d loss = 1, marked: --mpc-loss-scaling replaces it
    // by the loss scale (scaling the loss before the backward pass).
    Operation *seed = ConstantOp::create(b, step.getLoc(), lossType,
                                         DenseElementsAttr::get(lossType, one));
    seed->setAttr("mpc.loss_seed", b.getUnitAttr());
    grads[lossValue] = seed->getResult(0);

    SmallVector<Operation *> forward;
    for (Operation &op : body.without_terminator())
      forward.push_back(&op);
    for (Operation *op : llvm::reverse(forward)) {
      SmallVector<Value> resultGrads;
      bool any = false;
      for (Value r : op->getResults()) {
        resultGrads.push_back(grads.lookup(r));
        any |= resultGrads.back() != nullptr;
      }
      if (!any)
        continue;
      if (auto load = dyn_cast<ml_program::GlobalLoadOp>(op)) {
        StringRef global = load.getGlobal().getLeafReference();
        if (trainable(global))
          accumulate(globalGrads[global], resultGrads[0]);
        continue;
      }
      if (isa<ConstantOp>(op))
        continue;
      auto vjp = dyn_cast<VJPOpInterface>(op);
      SmallVector<Value> operandGrads;
      Operation *before = ret->getPrevNode();
      // A VJP that fails says why (a gradient it does not have); one that
      // fails without an error, or no VJP at all, gets the general one.
      bool explained = false;
      LogicalResult built = failure();
      if (vjp) {
        ScopedDiagnosticHandler seen(&getContext(), [&](Diagnostic &d) {
          explained |= d.getSeverity() == DiagnosticSeverity::Error;
          return failure(); // still reported
        });
        built = vjp.buildVJP(b, resultGrads, operandGrads);
      }
      if (failed(built)) {
        if (!explained)
          op->emitOpError("has no vector-Jacobian product; mpc-autodiff needs "
                          "one for every op between the trainable globals "
                          "and the loss");
        return signalPassFailure();
      }
      // An op kept in a precision by its attribute keeps its gradient ops
      // there too (autocast runs an op's backward in its forward's type).
      if (Attribute precision = op->getAttr(kPrecisionAttr))
        for (Operation *built = before ? before->getNextNode() : &body.front();
             built != ret; built = built->getNextNode())
          if (getDefaultPrecisionCategory(built) && !isa<ConstantOp>(built))
            built->setAttr(kPrecisionAttr, precision);
      for (auto [operand, g] : llvm::zip(op->getOperands(), operandGrads))
        if (g && floatTensor(operand.getType()))
          accumulate(grads[operand], g);
    }

    // Return the loss and the gradients, in declaration order.
    SmallVector<Value> results{lossValue};
    SmallVector<Attribute> gradOf;
    // What the step reads, in one walk (not one per global).
    llvm::DenseSet<StringRef> loadedGlobals;
    step.walk([&](ml_program::GlobalLoadOp l) {
      loadedGlobals.insert(l.getGlobal().getLeafReference());
    });
    for (auto global : module.getOps<ml_program::GlobalOp>()) {
      StringRef n = global.getSymName();
      if (!loadedGlobals.contains(n) || !trainable(n))
        continue;
      Value g = globalGrads.lookup(n);
      if (!g) // read, but not on a path to the loss
        g = zeros(b, step.getLoc(), cast<RankedTensorType>(global.getType()));
      results.push_back(g);
      gradOf.push_back(FlatSymbolRefAttr::get(module.getContext(), n));
    }
    // Without a parameter the step would train nothing, and the passes
    // after this one would say only that it has no gradient.
    if (gradOf.empty()) {
      module.lookupSymbol<func::FuncOp>(loss).emitOpError()
          << "mpc-autodiff: @" << loss
          << " reads no trainable parameter (a mutable float "
             "ml_program.global, not mpc.frozen, that the function does not "
             "store): there is nothing to train";
      step.erase();
      return signalPassFailure();
    }
    // Parameters read, but none on a path to the loss (only through a
    // comparison, a mask, an index): every gradient would be zero, and
    // --mpc-loss-scaling would find no seed to scale. PyTorch's backward
    // refuses such a loss too ("does not require grad").
    if (globalGrads.empty()) {
      InFlightDiagnostic d =
          module.lookupSymbol<func::FuncOp>(loss).emitOpError()
          << "mpc-autodiff: the loss of @" << loss
          << " depends on none of the trainable parameters "
             "it reads (";
      llvm::interleaveComma(gradOf, d, [&](Attribute g) { d << g; });
      d << "): no gradient reaches them (only comparisons, masks or indices "
           "lie between them and the loss), there is nothing to train";
      step.erase();
      return signalPassFailure();
    }
    func::ReturnOp::create(b, ret.getLoc(), results);
    ret.erase();
    // Gradients nobody needs (of inputs, labels' producers, constants) go.
    eraseDeadOps(body);

    SmallVector<Type> resultTypes;
    for (Value v : results)
      resultTypes.push_back(v.getType());
    step.setType(b.getFunctionType(type.getInputs(), resultTypes));
    // All at once: setting one result's attributes rebuilds the list of
    // all of them (quadratic in the number of gradients).
    SmallVector<DictionaryAttr> resultAttrs{b.getDictionaryAttr(
        b.getNamedAttr("mpc.name", b.getStringAttr("loss")))};
    for (Attribute g : gradOf)
      resultAttrs.push_back(
          b.getDictionaryAttr(b.getNamedAttr("mpc.grad_of", g)));
    step.setAllResultAttrs(resultAttrs);
  }
};

} // namespace
