//===- LossScaling.cpp - loss scaling decided at compile time -------------===//

#include "TrainingStep.h"

#include "mpc/Dialect/MPC/IR/MPCOps.h"
#include "mpc/Dialect/MPC/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/IR/Builders.h"

#include <limits>

namespace mlir::mpc {
#define GEN_PASS_DEF_LOSSSCALINGPASS
#include "mpc/Dialect/MPC/Transforms/Passes.h.inc"
} // namespace mlir::mpc

using namespace mlir;
using namespace mlir::mpc;

namespace {

struct LossScalingPass
    : public mpc::impl::LossScalingPassBase<LossScalingPass> {
  using Base::Base;

  FlatSymbolRefAttr createGlobal(ModuleOp module, OpBuilder &b, StringRef name,
                                 RankedTensorType type, Attribute value,
                                 bool isMutable) {
    auto g = createStateGlobal(module, b, "mpc-loss-scaling", name, type, value,
                               isMutable);
    return g ? FlatSymbolRefAttr::get(g.getSymNameAttr()) : FlatSymbolRefAttr();
  }

  void runOnOperation() override {
    if (failed(verifyTrainingGraph(getOperation())))
      return signalPassFailure();
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    if (mode != "auto" && mode != "dynamic" && mode != "static" &&
        mode != "none") {
      module.emitError("mpc-loss-scaling: unknown mode '")
          << mode << "' (expected auto, dynamic, static or none)";
      return signalPassFailure();
    }
    // A dynamic scale's options with mode=static, or any scale's with
    // mode=none, set away from their defaults did nothing: refused (mode=
    // auto decides for the step, so it takes them all).
    {
      const LossScalingPassOptions defaults;
      bool scaled = mode != "none",
           dynamic = mode != "none" && mode != "static";
      const char *grows = "mode=dynamic or auto";
      if (failed(checkOptionsApply(
              module, "mpc-loss-scaling",
              {{"init-scale", initScale != defaults.initScale, scaled,
                "mode=dynamic, static or auto"},
               {"growth-factor", growthFactor != defaults.growthFactor, dynamic,
                grows},
               {"backoff-factor", backoffFactor != defaults.backoffFactor,
                dynamic, grows},
               {"growth-interval", growthInterval != defaults.growthInterval,
                dynamic, grows},
               {"hysteresis", hysteresis != defaults.hysteresis, dynamic,
                grows},
               {"min-scale", minScale != defaults.minScale, dynamic, grows},
               {"max-scale", maxScale != defaults.maxScale, dynamic, grows}},
              "mode=" + mode.getValue())))
        return signalPassFailure();
    }
    constexpr double inf = std::numeric_limits<double>::infinity();
    const char *pass = "mpc-loss-scaling";
    if (failed(checkOption(module, pass, "init-scale", initScale,
                           {0, inf, false})) ||
        failed(checkOption(module, pass, "growth-factor", growthFactor,
                           {1, inf})) ||
        failed(checkOption(module, pass, "backoff-factor", backoffFactor,
                           {0, 1, false})) ||
        failed(checkOption(module, pass, "growth-interval",
                           double(growthInterval), {1, inf})) ||
        failed(checkOption(module, pass, "hysteresis", double(hysteresis),
                           {1, inf})) ||
        failed(checkOption(module, pass, "min-scale", minScale, {0, inf})) ||
        failed(checkOption(module, pass, "max-scale", maxScale, {0, inf})) ||
        failed(checkOption(module, pass, "clip-grad-norm", clipGradNorm,
                           {0, inf})))
      return signalPassFailure();
    bool clip = clipGradNorm > 0;
    if (minScale > 0 && maxScale > 0 && minScale > maxScale) {
      module.emitError(pass)
          << ": min-scale " << optionNumber(minScale) << " is above max-scale "
          << optionNumber(maxScale);
      return signalPassFailure();
    }
    // The scale starts within the clamps, as Apex's LossScaler starts at
    // min(max_loss_scale, init_scale): max-scale=1024 alone caps the first
    // steps' scale too, not only the growth (a printed pipeline, which
    // gives every option, reads back the same).
    double firstScale = initScale;
    if (maxScale > 0 && firstScale > maxScale)
      firstScale = maxScale;
    if (minScale > 0 && firstScale < minScale)
      firstScale = minScale;
    auto step = module.lookupSymbol<func::FuncOp>(func);
    if (!step || step.isDeclaration()) {
      module.emitError("mpc-loss-scaling: no training step @") << func;
      return signalPassFailure();
    }
    std::string kind = mode;
    if (kind == "auto") {
      bool f16 = false;
      step.walk([&](Operation *op) {
        for (Type t : op->getResultTypes())
          if (auto tensor = dyn_cast<RankedTensorType>(t))
            f16 |= tensor.getElementType().isF16();
      });
      kind = f16 ? "dynamic" : "none";
    }
    if (kind == "none" && !clip)
      return;
    bool scaled = kind != "none";

    Operation *seed = findLossSeed(step);
    FailureOr<OptimizerUpdates> collected =
        collectOptimizerUpdates(step, "mpc-loss-scaling");
    if (failed(collected))
      return signalPassFailure();
    ArrayRef<Operation *> updates = collected->ops;
    if (scaled && !seed) {
      step.emitOpError("mpc-loss-scaling: no loss gradient seed (the "
                       "constant --mpc-autodiff marks mpc.loss_seed); run "
                       "it before canonicalization");
      return signalPassFailure();
    }
    if (updates.empty()) {
      step.emitOpError("mpc-loss-scaling: no optimizer update to guard; run "
                       "--mpc-optimizer first");
      return signalPassFailure();
    }

    // State.
    OpBuilder b(ctx);
    auto f32 = RankedTensorType::get({}, b.getF32Type());
    auto i32 = RankedTensorType::get({}, b.getI32Type());
    auto i1 = RankedTensorType::get({}, b.getI1Type());
    bool dynamic = kind == "dynamic";
    FlatSymbolRefAttr scaleRef, growthRef, hysteresisRef, normRef;
    if (scaled &&
        !(scaleRef = createGlobal(
              module, b, "loss_scale", f32,
              DenseElementsAttr::get(f32, b.getF32FloatAttr(firstScale)),
              dynamic)))
      return signalPassFailure();
    FlatSymbolRefAttr skippedRef =
        createGlobal(module, b, "loss_scale_skipped", i1,
                     DenseElementsAttr::get(i1, b.getBoolAttr(false)), true);
    if (!skippedRef)
      return signalPassFailure();
    FlatSymbolRefAttr cleanRef;
    if (dynamic &&
        !(cleanRef = createGlobal(
              module, b, "loss_scale_clean_steps", i32,
              DenseElementsAttr::get(i32, b.getI32IntegerAttr(0)), true)))
      return signalPassFailure();
    if (dynamic) {
      growthRef = createGlobal(
          module, b, "loss_scale_growth_tracker", i32,
          DenseElementsAttr::get(i32, b.getI32IntegerAttr(0)), true);
      hysteresisRef = createGlobal(
          module, b, "loss_scale_hysteresis_tracker", i32,
          DenseElementsAttr::get(
              i32, b.getI32IntegerAttr(static_cast<int32_t>(hysteresis))),
          true);
      if (!growthRef || !hysteresisRef)
        return signalPassFailure();
    }
    if (clip &&
        !(normRef = createGlobal(
              module, b, "grad_norm", f32,
              DenseElementsAttr::get(f32, b.getF32FloatAttr(0.0f)), true)))
      return signalPassFailure();

    Location loc = step.getLoc();
    Value scale;
    if (scaled) {
      // The backward pass starts from the scale (times the seed's value:
      // 1/K with gradient accumulation), in the step and in its
      // micro-step.
      auto scaleSeed = [&](Operation *seedOp, func::FuncOp fn) -> Value {
        b.setInsertionPointToStart(&fn.getBody().front());
        Value s = ml_program::GlobalLoadOp::create(b, loc, f32, scaleRef);
        Value seedValue = seedOp->getResult(0);
        auto value =
            cast<DenseElementsAttr>(cast<ConstantOp>(seedOp).getValue());
        double factor = value.getSplatValue<APFloat>().convertToDouble();
        Value scaledSeed = s;
        if (factor != 1.0)
          scaledSeed = MulOp::create(
              b, loc, s,
              ConstantOp::create(b, loc, f32,
                                 DenseElementsAttr::get(
                                     f32, b.getF32FloatAttr(float(factor)))));
        if (seedValue.getType() != f32)
          scaledSeed = CastOp::create(b, loc, seedValue.getType(), scaledSeed);
        seedValue.replaceAllUsesWith(scaledSeed);
        seedOp->erase();
        return s;
      };
      if (func::FuncOp micro = findMicroStep(module, func)) {
        Operation *microSeed = findLossSeed(micro);
        if (!microSeed) {
          micro.emitOpError("mpc-loss-scaling: no loss gradient seed in the "
                            "micro-step");
          return signalPassFailure();
        }
        scaleSeed(microSeed, micro);
      }
      scale = scaleSeed(seed, step);
    }

    // One unscale and check of every gradient (with clipping, one norm and
    // check), before the first update.
    Operation *first = collected->first;
    ArrayRef<Value> grads = collected->grads;
    b.setInsertionPoint(first);
    if (!scaled)
      scale = ConstantOp::create(
          b, loc, f32, DenseElementsAttr::get(f32, b.getF32FloatAttr(1.0f)));
    Value foundInf, invScale;
    Operation *check;
    if (clip) {
      auto op = ClipGradNormOp::create(b, loc, f32, f32, i1, scale, grads,
                                       b.getF64FloatAttr(clipGradNorm));
      foundInf = op.getFoundInf();
      invScale = op.getInvScale();
      ml_program::GlobalStoreOp::create(b, loc, normRef, op.getNorm());
      check = op;
    } else {
      SmallVector<Type> unscaledTypes;
      for (Value g : grads)
        unscaledTypes.push_back(RankedTensorType::get(
            cast<RankedTensorType>(g.getType()).getShape(), b.getF32Type()));
      auto op =
          UnscaleAndCheckOp::create(b, loc, unscaledTypes, i1, scale, grads);
      foundInf = op.getFoundInf();
      check = op;
      // The updates read the gradient as computed (low precision at O2)
      // and unscale it themselves: the master-weight update is one op, and
      // the check writes no unscaled copy.
      Attribute one = b.getF32FloatAttr(1.0f);
      invScale = DivOp::create(
          b, loc,
          ConstantOp::create(b, loc, f32, DenseElementsAttr::get(f32, one)),
          scale);
    }
    for (Operation *u : updates) {
      if (auto sgd = dyn_cast<SGDUpdateOp>(u)) {
        sgd.getFoundInfMutable().assign(foundInf);
        sgd.getInvScaleMutable().assign(invScale);
      } else {
        auto adam = cast<AdamUpdateOp>(u);
        adam.getFoundInfMutable().assign(foundInf);
        adam.getInvScaleMutable().assign(invScale);
      }
    }

    // Optimizer step counters (Adam's bias correction) do not advance on
    // skipped steps, as PyTorch's optimizer.step() is not called: the
    // increment moves after the check and takes found_inf. A schedule's
    // counter marked kAdvancesOnSkip advances (scheduler.step() is called).
    SmallVector<IncrementOp> counters;
    step.walk([&](IncrementOp inc) {
      if (!inc.getSkip() && !inc->hasAttr(kAdvancesOnSkip))
        counters.push_back(inc);
    });
    for (IncrementOp inc : counters) {
      if (inc->isBeforeInBlock(check)) {
        inc->moveAfter(check);
        for (Operation *user : inc->getUsers())
          if (user->isBeforeInBlock(inc))
            user->moveAfter(inc);
      }
      inc.getSkipMutable().assign(foundInf);
    }

    // After the updates: the scale's update and the skipped flag.
    Operation *last = updates.front();
    for (Operation *u : updates)
      if (last->isBeforeInBlock(u))
        last = u;
    b.setInsertionPointAfter(last);
    ml_program::GlobalStoreOp::create(b, loc, skippedRef, foundInf);
    if (dynamic) {
      // The steps not skipped, for the runner's loss-scale health (it
      // reads them on logged steps only: skips = steps - clean steps).
      Value clean = ml_program::GlobalLoadOp::create(b, loc, i32, cleanRef);
      ml_program::GlobalStoreOp::create(
          b, loc, cleanRef, IncrementOp::create(b, loc, clean, foundInf));
      Value growth = ml_program::GlobalLoadOp::create(b, loc, i32, growthRef);
      Value hyst = ml_program::GlobalLoadOp::create(b, loc, i32, hysteresisRef);
      auto update = UpdateLossScaleOp::create(
          b, loc, f32, i32, i32, scale, growth, hyst, foundInf,
          b.getF64FloatAttr(growthFactor), b.getF64FloatAttr(backoffFactor),
          b.getI64IntegerAttr(growthInterval), b.getI64IntegerAttr(hysteresis),
          minScale > 0 ? b.getF64FloatAttr(minScale) : FloatAttr(),
          maxScale > 0 ? b.getF64FloatAttr(maxScale) : FloatAttr());
      ml_program::GlobalStoreOp::create(b, loc, scaleRef, update.getNewScale());
      ml_program::GlobalStoreOp::create(b, loc, growthRef,
                                        update.getNewGrowthTracker());
      ml_program::GlobalStoreOp::create(b, loc, hysteresisRef,
                                        update.getNewHysteresisTracker());
    }
  }
};

} // namespace
