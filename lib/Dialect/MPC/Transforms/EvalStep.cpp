//===- EvalStep.cpp - an evaluation step from the loss function -----------===//
//
// The evaluation step is the loss function with dropout off, batch norm on
// its running statistics, no state written, and the accuracy beside a
// cross-entropy loss.
//
//===----------------------------------------------------------------------===//

#include "TrainingStep.h"

#include "mpc/Dialect/MPC/IR/MPCOps.h"
#include "mpc/Dialect/MPC/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::mpc {
#define GEN_PASS_DEF_EVALSTEPPASS
#include "mpc/Dialect/MPC/Transforms/Passes.h.inc"
} // namespace mlir::mpc

using namespace mlir;
using namespace mlir::mpc;

namespace {

constexpr const char *kPass = "mpc-eval-step";
/// Marks the loss an evaluation step reports where the returned loss is
/// built from several (mpc-import-onnx's --loss-output).
constexpr const char *kEvalLoss = "mpc.eval_loss";

/// Batch norm on its running statistics (with its fused ReLU).
void inferenceBatchNorm(BatchNormOp bn) {
  OpBuilder b(bn);
  Value y = BatchNormInferenceOp::create(
      b, bn.getLoc(), bn.getInput(), bn.getGamma(), bn.getBeta(),
      bn.getRunningMean(), bn.getRunningVar(), bn.getEpsilonAttr(),
      bn.getActivationAttr());
  bn.getResult().replaceAllUsesWith(y);
}

struct EvalStepPass : public mpc::impl::EvalStepPassBase<EvalStepPass> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(verifyTrainingGraph(getOperation())))
      return signalPassFailure();
    ModuleOp module = getOperation();
    if (precision != "f32" && precision != "amp") {
      module.emitError(kPass)
          << ": unknown precision '" << precision << "' (expected f32 or amp)";
      return signalPassFailure();
    }
    auto eval = cloneLossFunction(module, kPass, loss, name);
    if (!eval)
      return signalPassFailure();
    FunctionType type = eval.getFunctionType();
    OpBuilder b(module.getContext());
    eval->setAttr("mpc.eval", b.getUnitAttr());
    if (precision == "f32")
      eval->setAttr("mpc.keep_f32", b.getUnitAttr());

    SmallVector<Operation *> ops;
    eval.walk([&](Operation *op) {
      if (isa<DropoutOp, BatchNormOp, ml_program::GlobalStoreOp>(op))
        ops.push_back(op);
      // Fused attention's, residual norms' and softmaxes' dropout goes
      // off with the rest.
      if (auto attention = dyn_cast<AttentionOp>(op))
        attention.setDropoutP(llvm::APFloat(0.0));
      if (auto norm = dyn_cast<AddLayerNormOp>(op))
        norm.setDropoutP(llvm::APFloat(0.0));
      if (auto residual = dyn_cast<DropoutAddOp>(op))
        residual.setP(llvm::APFloat(0.0));
      if (auto probs = dyn_cast<SoftmaxDropoutOp>(op))
        probs.setP(llvm::APFloat(0.0));
    });
    for (Operation *op : ops) {
      if (auto dropout = dyn_cast<DropoutOp>(op)) {
        if (!dropout.getMask().use_empty()) {
          dropout.emitOpError(kPass)
              << ": the dropout's mask is used in the loss function; an "
                 "evaluation step turns dropout off";
          eval.erase();
          return signalPassFailure();
        }
        dropout.getResult().replaceAllUsesWith(dropout.getInput());
        dropout.erase();
      } else if (auto bn = dyn_cast<BatchNormOp>(op)) {
        inferenceBatchNorm(bn);
      } else {
        op->erase(); // evaluation writes no state
      }
    }
    auto ret = cast<func::ReturnOp>(eval.getBody().front().getTerminator());
    // The loss evaluation reports: the one op marked kEvalLoss (the main
    // head's, of a loss summed over several heads: PyTorch's GoogLeNet
    // evaluates its main logits alone), else the returned one.
    Value loss = ret.getOperand(0);
    Operation *marked = nullptr;
    WalkResult walk = eval.walk([&](Operation *op) {
      if (!op->hasAttr(kEvalLoss))
        return WalkResult::advance();
      if (marked) {
        op->emitOpError(kPass) << ": a second op marked " << kEvalLoss
                               << " (one names the evaluation's loss)";
        return WalkResult::interrupt();
      }
      auto type = op->getNumResults() == 1
                      ? dyn_cast<RankedTensorType>(op->getResult(0).getType())
                      : RankedTensorType();
      if (!type || type.getRank() != 0 ||
          !isa<FloatType>(type.getElementType()) ||
          type != cast<RankedTensorType>(loss.getType())) {
        op->emitOpError(kPass)
            << ": " << kEvalLoss
            << " marks an op whose result is not a scalar loss of the "
               "returned loss's type";
        return WalkResult::interrupt();
      }
      marked = op;
      return WalkResult::advance();
    });
    if (walk.wasInterrupted()) {
      eval.erase();
      return signalPassFailure();
    }
    if (marked)
      loss = marked->getResult(0);
    SmallVector<Value> results{loss};
    SmallVector<StringRef> names{"loss"};
    b.setInsertionPoint(ret);
    if (auto ce = loss.getDefiningOp<CrossEntropyOp>()) {
      results.push_back(AccuracyOp::create(b, ce.getLoc(), ce.getInput(),
                                           ce.getTarget(),
                                           ce.getIgnoreIndexAttr()));
      names.push_back("accuracy");
    }
    func::ReturnOp::create(b, ret.getLoc(), results);
    ret.erase();
    // What only the dropped results and stores read goes (batch norm's
    // training-mode op among it).
    eraseDeadOps(eval.getBody().front());
    SmallVector<Type> resultTypes;
    for (Value v : results)
      resultTypes.push_back(v.getType());
    eval.setType(b.getFunctionType(type.getInputs(), resultTypes));
    SmallVector<DictionaryAttr> resultAttrs;
    for (StringRef n : names)
      resultAttrs.push_back(
          b.getDictionaryAttr(b.getNamedAttr("mpc.name", b.getStringAttr(n))));
    eval.setAllResultAttrs(resultAttrs);
  }
};

} // namespace
