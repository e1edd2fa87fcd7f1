//===- Optimizer.cpp - optimizer updates after the gradients --------------===//

#include "TrainingStep.h"

#include "mpc/Dialect/MPC/IR/MPCOps.h"
#include "mpc/Dialect/MPC/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"

namespace mlir::mpc {
#define GEN_PASS_DEF_OPTIMIZERPASS
#include "mpc/Dialect/MPC/Transforms/Passes.h.inc"
} // namespace mlir::mpc

using namespace mlir;
using namespace mlir::mpc;

namespace {

struct OptimizerPass : public mpc::impl::OptimizerPassBase<OptimizerPass> {
  using Base::Base;

  /// A new global, or an error when the name is taken.
  ml_program::GlobalOp createGlobal(ModuleOp module, OpBuilder &b,
                                    StringRef name, RankedTensorType type,
                                    Attribute value, bool isMutable,
                                    Operation *after = nullptr) {
    return createStateGlobal(module, b, "mpc-optimizer", name, type, value,
                             isMutable, after, &*symbols);
  }

  /// The module's symbols, built once per run.
  std::optional<SymbolTable> symbols;

  void runOnOperation() override {
    if (failed(verifyTrainingGraph(getOperation())))
      return signalPassFailure();
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    symbols.emplace(module);
    bool adam = kind == "adam" || kind == "adamw";
    if (schedule != "constant" && schedule != "linear-warmup" &&
        schedule != "cosine" && schedule != "one-cycle" && schedule != "step" &&
        schedule != "exponential") {
      module.emitError("mpc-optimizer: unknown schedule '")
          << schedule
          << "' (expected constant, linear-warmup, cosine, one-cycle, step or "
             "exponential)";
      return signalPassFailure();
    }
    if (scheduleOnSkip != "advance" && scheduleOnSkip != "hold") {
      module.emitError("mpc-optimizer: schedule-on-skip must be advance or "
                       "hold, got '")
          << scheduleOnSkip << "'";
      return signalPassFailure();
    }
    if (kind != "sgd" && kind != "momentum" && !adam) {
      module.emitError("mpc-optimizer: unknown kind '")
          << kind << "' (expected sgd, momentum, adam or adamw)";
      return signalPassFailure();
    }
    constexpr double inf = std::numeric_limits<double>::infinity();
    const char *pass = "mpc-optimizer";
    if (failed(checkOption(module, pass, "lr", lr, {0, inf})) ||
        failed(checkOption(module, pass, "momentum", momentum, {0, inf})) ||
        failed(
            checkOption(module, pass, "weight-decay", weightDecay, {0, inf})) ||
        failed(
            checkOption(module, pass, "beta1", beta1, {0, 1, true, false})) ||
        failed(
            checkOption(module, pass, "beta2", beta2, {0, 1, true, false})) ||
        failed(checkOption(module, pass, "eps", eps, {0, inf, false})) ||
        failed(checkOption(module, pass, "min-lr", minLr, {0, inf})) ||
        failed(checkOption(module, pass, "warmup-steps", double(warmupSteps),
                           {0, inf})) ||
        failed(checkOption(module, pass, "total-steps", double(totalSteps),
                           {0, inf})) ||
        failed(checkOption(module, pass, "gamma", gamma, {0, inf, false})) ||
        failed(checkOption(module, pass, "step-size", double(stepSize),
                           {0, inf})) ||
        failed(checkOption(module, pass, "pct-start", pctStart,
                           {0, 1, false, false})) ||
        failed(checkOption(module, pass, "div-factor", divFactor,
                           {0, inf, false})) ||
        failed(checkOption(module, pass, "final-div-factor", finalDivFactor,
                           {0, inf, false})))
      return signalPassFailure();
    auto step = module.lookupSymbol<func::FuncOp>(func);
    if (!step || step.isDeclaration()) {
      module.emitError("mpc-optimizer: no training step @") << func;
      return signalPassFailure();
    }
    auto ret = cast<func::ReturnOp>(step.getBody().back().getTerminator());
    OpBuilder b(ctx);
    auto scalar = RankedTensorType::get({}, b.getF32Type());
    bool scheduled = schedule != "constant";
    b.setInsertionPoint(ret);
    Location loc = ret.getLoc();

    // Step counts, incremented before the updates (1 at the first): Adam's
    // (bias correction), which loss scaling holds on a skipped step, and
    // the schedule's, which by default advances on one (PyTorch calls
    // scheduler.step() whether or not the optimizer stepped).
    auto counter = [&](StringRef suffix) -> Value {
      auto i32 = RankedTensorType::get({}, b.getI32Type());
      auto global = createGlobal(
          module, b, (func.getValue() + suffix).str(), i32,
          DenseElementsAttr::get(i32, b.getI32IntegerAttr(0)), true);
      if (!global)
        return Value();
      auto ref = FlatSymbolRefAttr::get(global.getSymNameAttr());
      Value old = ml_program::GlobalLoadOp::create(b, loc, i32, ref);
      Value next = IncrementOp::create(b, loc, old, Value());
      ml_program::GlobalStoreOp::create(b, loc, ref, next);
      return next;
    };
    Value t, scheduleT;
    if (adam && !(t = counter("_step")))
      return signalPassFailure();
    if (scheduled) {
      if (!(scheduleT = counter("_lr_step")))
        return signalPassFailure();
      if (scheduleOnSkip == "advance")
        scheduleT.getDefiningOp()->setAttr(kAdvancesOnSkip, b.getUnitAttr());
    }

    // The learning rate: a global, or the schedule's value at its count.
    Value lrValue;
    if (scheduled) {
      std::string kindName = schedule;
      std::replace(kindName.begin(), kindName.end(), '-', '_');
      auto op = LRScheduleOp::create(
          b, loc, scalar, scheduleT, b.getStringAttr(kindName),
          b.getF64FloatAttr(lr), b.getI64IntegerAttr(warmupSteps),
          b.getI64IntegerAttr(totalSteps), b.getF64FloatAttr(minLr),
          b.getF64FloatAttr(gamma), b.getI64IntegerAttr(stepSize),
          b.getF64FloatAttr(pctStart), b.getF64FloatAttr(divFactor),
          b.getF64FloatAttr(finalDivFactor), b.getBoolAttr(threePhase));
      if (failed(verify(op))) {
        module.emitError("mpc-optimizer: invalid schedule options");
        return signalPassFailure();
      }
      lrValue = op;
    } else {
      auto lrGlobal = createGlobal(
          module, b, func.getValue() + "_lr", scalar,
          DenseElementsAttr::get(scalar, b.getF32FloatAttr(lr)), false);
      if (!lrGlobal)
        return signalPassFailure();
      lrValue = ml_program::GlobalLoadOp::create(
          b, loc, scalar, FlatSymbolRefAttr::get(lrGlobal.getSymNameAttr()));
    }
    SmallVector<Value> kept;
    SmallVector<DictionaryAttr> keptAttrs;
    bool any = false;
    for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
      auto of = step.getResultAttrOfType<FlatSymbolRefAttr>(i, "mpc.grad_of");
      if (!of) {
        kept.push_back(value);
        keptAttrs.push_back(step.getResultAttrDict(i));
        continue;
      }
      any = true;
      auto param = symbols->lookup<ml_program::GlobalOp>(of.getValue());
      auto type = param ? dyn_cast<RankedTensorType>(param.getType()) : nullptr;
      if (!type) {
        step.emitOpError("result #") << i << " is the gradient of " << of
                                     << ", which is not a tensor global";
        return signalPassFailure();
      }
      Value w = ml_program::GlobalLoadOp::create(b, loc, type, of);
      Attribute zeros = InitAttr::get(ctx, InitKind::Zeros, 0, nullptr, nullptr,
                                      nullptr, nullptr, nullptr, nullptr);
      auto stateGlobal = [&](StringRef suffix) -> FlatSymbolRefAttr {
        auto g = createGlobal(module, b, (of.getValue() + suffix).str(), type,
                              zeros, true, param);
        return g ? FlatSymbolRefAttr::get(g.getSymNameAttr())
                 : FlatSymbolRefAttr();
      };
      if (adam) {
        FlatSymbolRefAttr m = stateGlobal("_exp_avg"),
                          v = stateGlobal("_exp_avg_sq");
        if (!m || !v)
          return signalPassFailure();
        Value mv = ml_program::GlobalLoadOp::create(b, loc, type, m);
        Value vv = ml_program::GlobalLoadOp::create(b, loc, type, v);
        auto update = AdamUpdateOp::create(
            b, loc, type, type, type, Type(), w, value, mv, vv, lrValue, t,
            Value(), Value(), b.getF64FloatAttr(beta1),
            b.getF64FloatAttr(beta2), b.getF64FloatAttr(eps),
            b.getF64FloatAttr(weightDecay),
            kind == "adamw" ? b.getUnitAttr() : nullptr,
            b.getBoolAttr(biasCorrection), TypeAttr());
        ml_program::GlobalStoreOp::create(b, loc, of, update.getNewParam());
        ml_program::GlobalStoreOp::create(b, loc, m, update.getNewExpAvg());
        ml_program::GlobalStoreOp::create(b, loc, v, update.getNewExpAvgSq());
        continue;
      }
      Value buffer;
      if (kind == "momentum") {
        Attribute zero =
            InitAttr::get(ctx, InitKind::Zeros, 0, nullptr, nullptr, nullptr,
                          nullptr, nullptr, nullptr);
        auto m = createGlobal(module, b, (of.getValue() + "_momentum").str(),
                              type, zero, true, param);
        if (!m)
          return signalPassFailure();
        buffer = ml_program::GlobalLoadOp::create(
            b, loc, type, FlatSymbolRefAttr::get(m.getSymNameAttr()));
      }
      auto update = SGDUpdateOp::create(
          b, loc, type, buffer ? Type(type) : Type(), Type(), w, value, lrValue,
          buffer, Value(), Value(),
          b.getF64FloatAttr(kind == "momentum" ? momentum.getValue() : 0.0),
          b.getF64FloatAttr(0.0), nesterov ? b.getUnitAttr() : nullptr,
          b.getF64FloatAttr(weightDecay), TypeAttr());
      ml_program::GlobalStoreOp::create(b, loc, of, update.getNewParam());
      if (buffer)
        ml_program::GlobalStoreOp::create(
            b, loc,
            FlatSymbolRefAttr::get(ctx, (of.getValue() + "_momentum").str()),
            update.getNewMomentumBuffer());
    }
    if (!any) {
      step.emitOpError("mpc-optimizer: no result is marked mpc.grad_of; run "
                       "--mpc-autodiff first");
      return signalPassFailure();
    }
    func::ReturnOp::create(b, loc, kept);
    ret.erase();
    SmallVector<Type> types;
    for (Value v : kept)
      types.push_back(v.getType());
    step.setType(b.getFunctionType(step.getArgumentTypes(), types));
    for (auto [i, attrs] : llvm::enumerate(keptAttrs))
      step.setResultAttrs(i, attrs);
  }
};

} // namespace
