//===- Optimizer.cpp - optimizer updates after the gradients --------------===//

#include "TrainingStep.h"

#include "mpc/Dialect/MPC/IR/MPCOps.h"
#include "mpc/Dialect/MPC/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/GlobPattern.h"

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

  /// One parameter-group pattern, and whether it matched a parameter.
  struct Group {
    std::string text;
    llvm::GlobPattern glob;
    double factor = 1.0;
    bool used = false;
  };

  /// Parses no-decay (factor unused) or lr-groups (PATTERN:FACTOR).
  FailureOr<SmallVector<Group>>
  parseGroups(ModuleOp module, ArrayRef<std::string> entries, bool withFactor) {
    SmallVector<Group> groups;
    const char *option = withFactor ? "lr-groups" : "no-decay";
    for (const std::string &entry : entries) {
      StringRef pattern = entry;
      double factor = 1.0;
      if (withFactor) {
        auto [head, tail] = StringRef(entry).rsplit(':');
        if (tail.empty() || head.empty() || head.size() == entry.size() ||
            !llvm::to_float(tail, factor) || !std::isfinite(factor) ||
            factor < 0) {
          module.emitError("mpc-optimizer: lr-groups entry '")
              << entry
              << "' is not PATTERN:FACTOR with a finite factor >= 0 (e.g. "
                 "embed*:0.1)";
          return failure();
        }
        pattern = head;
      }
      auto glob = llvm::GlobPattern::create(pattern);
      if (!glob) {
        module.emitError("mpc-optimizer: ")
            << option << " pattern '" << pattern
            << "' is not a glob pattern: " << llvm::toString(glob.takeError());
        return failure();
      }
      groups.push_back({pattern.str(), std::move(*glob), factor, false});
    }
    return groups;
  }

  /// The first group whose pattern matches `name`, or null.
  static Group *match(SmallVectorImpl<Group> &groups, StringRef name) {
    for (Group &g : groups)
      if (g.glob.match(name)) {
        g.used = true;
        return &g;
      }
    return nullptr;
  }

  /// An error for every pattern that matched no parameter.
  static LogicalResult checkUsed(ModuleOp module, ArrayRef<Group> groups,
                                 const char *option,
                                 ArrayRef<std::string> params) {
    for (const Group &g : groups)
      if (!g.used) {
        module.emitError("mpc-optimizer: ")
            << option << " pattern '" << g.text
            << "' matches no parameter (parameters: "
            << llvm::join(params, ", ") << ")";
        return failure();
      }
    return success();
  }

  void runOnOperation() override {
    if (failed(verifyTrainingGraph(getOperation())))
      return signalPassFailure();
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    symbols.emplace(module);
    bool adam = kind == "adam" || kind == "adamw" || kind == "lamb";
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
          << kind << "' (expected sgd, momentum, adam, adamw or lamb)";
      return signalPassFailure();
    }
    // An option of another kind or schedule is refused where it differs
    // from its default (as PyTorch's optimizers refuse a keyword they do
    // not take): kind=adam momentum=0.5 or gamma=0.5 with the constant
    // schedule did nothing.
    {
      const OptimizerPassOptions defaults;
      bool isMomentum = kind == "momentum", cosine = schedule == "cosine",
           oneCycle = schedule == "one-cycle", stepped = schedule == "step";
      const char *adams = "kind=adam, adamw or lamb",
                 *cycle = "schedule=one-cycle";
      if (failed(checkOptionsApply(
              module, "mpc-optimizer",
              {{"momentum", momentum != defaults.momentum, isMomentum,
                "kind=momentum"},
               {"nesterov", nesterov != defaults.nesterov, isMomentum,
                "kind=momentum"},
               {"beta1", beta1 != defaults.beta1, adam, adams},
               {"beta2", beta2 != defaults.beta2, adam, adams},
               {"eps", eps != defaults.eps, adam, adams},
               {"bias-correction", biasCorrection != defaults.biasCorrection,
                adam, adams},
               {"adam-w-mode", lambDecoupled != defaults.lambDecoupled,
                kind == "lamb", "kind=lamb"},
               {"warmup-steps", warmupSteps != defaults.warmupSteps,
                cosine || schedule == "linear-warmup",
                "schedule=linear-warmup or cosine"},
               {"total-steps", totalSteps != defaults.totalSteps,
                cosine || oneCycle, "schedule=cosine or one-cycle"},
               {"min-lr", minLr != defaults.minLr, cosine, "schedule=cosine"},
               {"gamma", gamma != defaults.gamma,
                stepped || schedule == "exponential",
                "schedule=step or exponential"},
               {"step-size", stepSize != defaults.stepSize, stepped,
                "schedule=step"},
               {"pct-start", pctStart != defaults.pctStart, oneCycle, cycle},
               {"div-factor", divFactor != defaults.divFactor, oneCycle, cycle},
               {"final-div-factor", finalDivFactor != defaults.finalDivFactor,
                oneCycle, cycle},
               {"three-phase", threePhase != defaults.threePhase, oneCycle,
                cycle}},
              "kind=" + kind.getValue() + ", schedule=" + schedule.getValue())))
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
    // The step's own read of a parameter (the forward's) is the value the
    // update takes: a second load would leave CSE to merge the two,
    // scanning every op between them (quadratic in the step's length).
    llvm::StringMap<Value> firstLoad;
    llvm::StringSet<> stored;
    for (Operation &op : step.getBody().front()) {
      if (auto load = dyn_cast<ml_program::GlobalLoadOp>(op))
        firstLoad.try_emplace(load.getGlobal().getLeafReference(),
                              load.getResult());
      else if (auto store = dyn_cast<ml_program::GlobalStoreOp>(op))
        stored.insert(store.getGlobal().getLeafReference());
    }
    auto loadOf = [&](FlatSymbolRefAttr of, Type type) -> Value {
      auto it = firstLoad.find(of.getValue());
      if (it != firstLoad.end() && !stored.contains(of.getValue()) &&
          it->second.getType() == type)
        return it->second;
      return ml_program::GlobalLoadOp::create(b, step.getLoc(), type, of);
    };
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

    // Parameter groups.
    FailureOr<SmallVector<Group>> decayGroups =
        parseGroups(module, noDecay, false);
    FailureOr<SmallVector<Group>> rateGroups =
        parseGroups(module, lrGroups, true);
    if (failed(decayGroups) || failed(rateGroups))
      return signalPassFailure();

    // The learning rate of group k (0: the default, factor 1): a global,
    // or the schedule's value at its count, with base and floor scaled by
    // the group's factor (every schedule is linear in them). Made when a
    // parameter first needs it.
    SmallVector<Value> rates(rateGroups->size() + 1);
    auto rateOf = [&](size_t k) -> Value {
      if (rates[k])
        return rates[k];
      double factor = k ? (*rateGroups)[k - 1].factor : 1.0;
      std::string suffix = k ? "_lr_group" + std::to_string(k) : "_lr";
      if (scheduled) {
        std::string kindName = schedule;
        std::replace(kindName.begin(), kindName.end(), '-', '_');
        auto op = LRScheduleOp::create(
            b, loc, scalar, scheduleT, b.getStringAttr(kindName),
            b.getF64FloatAttr(lr * factor), b.getI64IntegerAttr(warmupSteps),
            b.getI64IntegerAttr(totalSteps), b.getF64FloatAttr(minLr * factor),
            b.getF64FloatAttr(gamma), b.getI64IntegerAttr(stepSize),
            b.getF64FloatAttr(pctStart), b.getF64FloatAttr(divFactor),
            b.getF64FloatAttr(finalDivFactor), b.getBoolAttr(threePhase));
        if (failed(verify(op))) {
          module.emitError("mpc-optimizer: invalid schedule options");
          return Value();
        }
        return rates[k] = op;
      }
      auto lrGlobal = createGlobal(
          module, b, func.getValue() + suffix, scalar,
          DenseElementsAttr::get(scalar, b.getF32FloatAttr(lr * factor)),
          false);
      if (!lrGlobal)
        return Value();
      return rates[k] = ml_program::GlobalLoadOp::create(
                 b, loc, scalar,
                 FlatSymbolRefAttr::get(lrGlobal.getSymNameAttr()));
    };
    // The default group's rate first: its options are checked (and its
    // name claimed) before any update is built; removed below if no
    // parameter is left in the default group.
    if (!rateOf(0))
      return signalPassFailure();
    SmallVector<std::string> paramNames;
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
      paramNames.push_back(of.getValue().str());
      Group *rateGroup = match(*rateGroups, of.getValue());
      Value lrValue =
          rateOf(rateGroup ? 1 + (rateGroup - rateGroups->begin()) : 0);
      if (!lrValue)
        return signalPassFailure();
      double decay = match(*decayGroups, of.getValue()) ? 0.0 : weightDecay;
      Value w = loadOf(of, type);
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
            b.getF64FloatAttr(decay),
            kind == "adamw" || (kind == "lamb" && lambDecoupled)
                ? b.getUnitAttr()
                : nullptr,
            kind == "lamb" ? b.getUnitAttr() : nullptr,
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
          b.getF64FloatAttr(decay), TypeAttr());
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
    if (failed(checkUsed(module, *decayGroups, "no-decay", paramNames)) ||
        failed(checkUsed(module, *rateGroups, "lr-groups", paramNames)))
      return signalPassFailure();
    if (rates[0].use_empty()) {
      Operation *def = rates[0].getDefiningOp();
      if (auto load = dyn_cast<ml_program::GlobalLoadOp>(def))
        symbols->erase(symbols->lookup(load.getGlobal().getLeafReference()));
      def->erase();
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
