//===- AccumulateGradients.cpp - K micro-batches per optimizer step -------===//
//
// Splits the training step built by --mpc-autodiff into a micro-step that
// adds its gradients to f32 accumulators and the step proper, which adds
// the accumulators to its own gradients, zeroes them and hands the sum to
// the optimizer. Both backward passes start from 1/K.
//
//===----------------------------------------------------------------------===//

#include "TrainingStep.h"

#include "mpc/Dialect/MPC/IR/MPCOps.h"
#include "mpc/Dialect/MPC/Transforms/Passes.h"
#include "mpc/Dialect/MPC/Transforms/PrecisionPolicy.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/IR/Builders.h"

namespace mlir::mpc {
#define GEN_PASS_DEF_ACCUMULATEGRADIENTSPASS
#include "mpc/Dialect/MPC/Transforms/Passes.h.inc"
} // namespace mlir::mpc

using namespace mlir;
using namespace mlir::mpc;

namespace {

constexpr const char *kPass = "mpc-accumulate-gradients";

/// Replaces the seed's value 1 by 1/K (the loss divided by K).
void divideSeed(Operation *seed, int64_t k) {
  auto constant = cast<ConstantOp>(seed);
  auto type = cast<RankedTensorType>(constant.getType());
  OpBuilder b(seed);
  constant.setValueAttr(DenseElementsAttr::get(
      type, b.getFloatAttr(type.getElementType(), 1.0 / double(k))));
}

/// `op`, kept in f32 at every level (the sums of many low-precision terms;
/// the precision pass must not round them or give the accumulators copies).
Value inF32(Operation *op) {
  op->setAttr(kPrecisionAttr, StringAttr::get(op->getContext(), "fp32"));
  return op->getResult(0);
}

Value zerosLike(OpBuilder &b, Location loc, RankedTensorType type) {
  return ConstantOp::create(
      b, loc, type,
      DenseElementsAttr::get(type, b.getFloatAttr(type.getElementType(), 0)));
}

struct AccumulateGradientsPass
    : public mpc::impl::AccumulateGradientsPassBase<AccumulateGradientsPass> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(verifyTrainingGraph(getOperation())))
      return signalPassFailure();
    ModuleOp module = getOperation();
    if (failed(checkOption(module, kPass, "steps", double(steps), {1, 65536})))
      return signalPassFailure();
    if (steps == 1)
      return;
    auto step = module.lookupSymbol<func::FuncOp>(func);
    if (!step || step.isDeclaration()) {
      module.emitError(kPass) << ": no training step @" << func;
      return signalPassFailure();
    }
    std::string microName = func + "_accumulate";
    if (module.lookupSymbol(microName)) {
      module.emitError(kPass)
          << ": a symbol @" << microName << " already exists";
      return signalPassFailure();
    }
    Operation *seed = findLossSeed(step);
    if (!seed) {
      step.emitOpError(kPass)
          << ": no loss gradient seed (the constant --mpc-autodiff marks "
             "mpc.loss_seed); run it after --mpc-autodiff, before "
             "--mpc-optimizer and canonicalization";
      return signalPassFailure();
    }
    auto ret = cast<func::ReturnOp>(step.getBody().back().getTerminator());
    SmallVector<unsigned> gradResults;
    for (unsigned i = 0; i < ret.getNumOperands(); ++i)
      if (step.getResultAttr(i, "mpc.grad_of"))
        gradResults.push_back(i);
    if (gradResults.empty()) {
      step.emitOpError(kPass) << ": no result is marked mpc.grad_of; run "
                                 "--mpc-autodiff first, and --mpc-optimizer "
                                 "after this pass";
      return signalPassFailure();
    }
    auto lossType =
        dyn_cast<RankedTensorType>(step.getFunctionType().getResult(0));
    if (!lossType || lossType.getRank() != 0 ||
        !isa<FloatType>(lossType.getElementType())) {
      step.emitOpError(kPass) << ": the first result must be the scalar loss";
      return signalPassFailure();
    }

    // The accumulators: f32, zero, together after the module's globals
    // (then the loss's), in the order of the step's gradients: the state
    // layout follows the declarations, so the step's resets of them are
    // one run of memory, which the lowering zeroes at once.
    OpBuilder b(&getContext());
    SymbolTable symbols(module);
    Location loc = step.getLoc();
    Operation *after = nullptr;
    for (auto global : module.getOps<ml_program::GlobalOp>())
      after = global;
    SmallVector<FlatSymbolRefAttr> accumulators;
    for (unsigned i : gradResults) {
      auto of = step.getResultAttrOfType<FlatSymbolRefAttr>(i, "mpc.grad_of");
      auto type = cast<RankedTensorType>(ret.getOperand(i).getType());
      auto f32 = type.clone(b.getF32Type());
      auto global = createStateGlobal(
          module, b, kPass, (of.getValue() + "_grad_accum").str(), f32,
          InitAttr::get(&getContext(), InitKind::Zeros, 0, nullptr, nullptr,
                        nullptr, nullptr, nullptr, nullptr),
          true, after, &symbols);
      if (!global)
        return signalPassFailure();
      after = global;
      global->setAttr("mpc.grad_accumulator", of);
      accumulators.push_back(FlatSymbolRefAttr::get(global.getSymNameAttr()));
    }
    auto f32Scalar = RankedTensorType::get({}, b.getF32Type());
    auto lossGlobal = createStateGlobal(
        module, b, kPass, func + "_loss_accum", f32Scalar,
        DenseElementsAttr::get(f32Scalar, b.getF32FloatAttr(0.0f)), true, after,
        &symbols);
    if (!lossGlobal)
      return signalPassFailure();
    auto lossRef = FlatSymbolRefAttr::get(lossGlobal.getSymNameAttr());
    auto toF32 = [&](Value v) -> Value {
      auto type = cast<RankedTensorType>(v.getType());
      if (type.getElementType().isF32())
        return v;
      return CastOp::create(b, loc, type.clone(b.getF32Type()), v);
    };

    // The micro-step: gradients and loss into the accumulators.
    b.setInsertionPointAfter(step);
    auto micro = cast<func::FuncOp>(b.clone(*step));
    micro.setSymName(microName);
    symbols.insert(micro);
    auto microRet =
        cast<func::ReturnOp>(micro.getBody().back().getTerminator());
    b.setInsertionPoint(microRet);
    for (auto [k, i] : llvm::enumerate(gradResults)) {
      Value g = toF32(microRet.getOperand(i));
      Value acc = ml_program::GlobalLoadOp::create(b, loc, g.getType(),
                                                   accumulators[k]);
      ml_program::GlobalStoreOp::create(b, loc, accumulators[k],
                                        inF32(AddOp::create(b, loc, acc, g)));
    }
    Value microLoss = microRet.getOperand(0);
    Value lossSum =
        ml_program::GlobalLoadOp::create(b, loc, f32Scalar, lossRef);
    ml_program::GlobalStoreOp::create(
        b, loc, lossRef,
        inF32(AddOp::create(b, loc, lossSum, toF32(microLoss))));
    func::ReturnOp::create(b, microRet.getLoc(), ValueRange{microLoss});
    microRet.erase();
    micro.setType(
        b.getFunctionType(micro.getArgumentTypes(), {microLoss.getType()}));
    micro.setResultAttrs(0, step.getResultAttrDict(0));
    micro->setAttr("mpc.accumulates", FlatSymbolRefAttr::get(step));
    divideSeed(findLossSeed(micro), steps);

    // The step: its gradients plus the accumulators', which it zeroes; the
    // mean loss of the K micro-batches.
    b.setInsertionPoint(ret);
    for (auto [k, i] : llvm::enumerate(gradResults)) {
      Value g = ret.getOperand(i);
      auto type = cast<RankedTensorType>(g.getType());
      Value acc = ml_program::GlobalLoadOp::create(
          b, loc, type.clone(b.getF32Type()), accumulators[k]);
      Value sum = inF32(AddOp::create(b, loc, acc, toF32(g)));
      if (sum.getType() != type)
        sum = CastOp::create(b, loc, type, sum);
      ret.setOperand(i, sum);
    }
    Value loss = ret.getOperand(0);
    Value total = inF32(AddOp::create(
        b, loc, ml_program::GlobalLoadOp::create(b, loc, f32Scalar, lossRef),
        toF32(loss)));
    Value mean = inF32(MulOp::create(
        b, loc, total,
        ConstantOp::create(b, loc, f32Scalar,
                           DenseElementsAttr::get(
                               f32Scalar, b.getF32FloatAttr(1.0f / steps)))));
    if (mean.getType() != loss.getType())
      mean = CastOp::create(b, loc, loss.getType(), mean);
    ret.setOperand(0, mean);
    for (auto [k, i] : llvm::enumerate(gradResults)) {
      auto type = cast<RankedTensorType>(ret.getOperand(i).getType());
      ml_program::GlobalStoreOp::create(
          b, loc, accumulators[k],
          zerosLike(b, loc, type.clone(b.getF32Type())));
    }
    ml_program::GlobalStoreOp::create(b, loc, lossRef,
                                      zerosLike(b, loc, f32Scalar));
    step->setAttr("mpc.accumulate_steps", b.getI64IntegerAttr(steps));
    divideSeed(seed, steps);
  }
};

} // namespace
