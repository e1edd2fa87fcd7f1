//===- TrainingStep.h - what the training-step passes share -----*- C++ -*-===//
//
// The optimizer, loss-scaling and gradient-statistics passes each add
// state globals and work on the updates of a training step: one definition
// of each for all three.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_LIB_DIALECT_MPC_TRANSFORMS_TRAININGSTEP_H
#define MPC_LIB_DIALECT_MPC_TRANSFORMS_TRAININGSTEP_H

#include "mpc/Dialect/MPC/IR/MPCOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

namespace mlir::mpc {

/// On an mpc.increment: loss scaling leaves it advancing on a skipped step
/// (the learning-rate schedule's counter, as a PyTorch scheduler).
constexpr llvm::StringLiteral kAdvancesOnSkip = "mpc.advances_on_skip";

/// The range a numeric pass option must lie in: finite, and above `low`
/// (or at it when `lowIncluded`), below `high` (or at it when
/// `highIncluded`).
struct OptionRange {
  double low, high;
  bool lowIncluded = true, highIncluded = true;
};

/// A number as a user writes it in an option (%g).
inline std::string optionNumber(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", value);
  return text;
}

/// Checks `value` of option `name` of `pass`; an error on the module names
/// the option, the value and what is allowed.
inline LogicalResult checkOption(ModuleOp module, StringRef pass,
                                 StringRef name, double value,
                                 OptionRange range) {
  bool ok = std::isfinite(value) &&
            (range.lowIncluded ? value >= range.low : value > range.low) &&
            (range.highIncluded ? value <= range.high : value < range.high);
  if (ok)
    return success();
  std::string allowed;
  llvm::raw_string_ostream os(allowed);
  os << "a finite number";
  if (std::isfinite(range.low))
    os << (range.lowIncluded ? " >= " : " > ") << optionNumber(range.low);
  if (std::isfinite(range.high))
    os << (std::isfinite(range.low) ? " and" : "")
       << (range.highIncluded ? " <= " : " < ") << optionNumber(range.high);
  return module.emitError(pass) << ": option " << name << " must be " << allowed
                                << ", got " << optionNumber(value);
}

/// A pass option that means something only with some values of the others
/// (another optimizer kind, schedule or scaling mode): `changed` when it
/// differs from its default, `applies` when it is used, `where` saying when.
struct OptionUse {
  const char *option;
  bool changed, applies;
  const char *where;
};

/// Refuses the first option of `uses` that is changed but not used (it
/// would do nothing); an error on the module names it, where it applies
/// and `here`, the settings that leave it unused. An option at its
/// default passes: a printed pipeline gives every option.
inline LogicalResult checkOptionsApply(ModuleOp module, StringRef pass,
                                       ArrayRef<OptionUse> uses,
                                       StringRef here) {
  for (const OptionUse &use : uses)
    if (use.changed && !use.applies)
      return module.emitError(pass)
             << ": option " << use.option << " applies only with " << use.where
             << " (here " << here << ")";
  return success();
}

/// A new private global `name` at the start of the module (after `after`
/// when given); null, with an error naming `pass`, when the symbol exists.
/// A pass that creates many passes its `symbols` table (kept up to date):
/// `module.lookupSymbol` is a scan of the module, quadratic over many.
inline ml_program::GlobalOp
createStateGlobal(ModuleOp module, OpBuilder &b, StringRef pass, StringRef name,
                  RankedTensorType type, Attribute value, bool isMutable,
                  Operation *after = nullptr, SymbolTable *symbols = nullptr) {
  if (symbols ? symbols->lookup(name) != nullptr
              : module.lookupSymbol(name) != nullptr) {
    module.emitError(pass) << ": a symbol @" << name << " already exists";
    return {};
  }
  OpBuilder::InsertionGuard guard(b);
  if (after)
    b.setInsertionPointAfter(after);
  else
    b.setInsertionPointToStart(module.getBody());
  auto global = ml_program::GlobalOp::create(
      b, module.getLoc(), b.getStringAttr(name), TypeAttr::get(type),
      isMutable ? b.getUnitAttr() : nullptr, value, b.getStringAttr("private"));
  if (symbols)
    symbols->insert(global);
  return global;
}

/// The optimizer updates of a training step and the gradients they read.
struct OptimizerUpdates {
  SmallVector<Operation *> ops;
  SmallVector<Value> grads;   // operand 1 of each op
  Operation *first = nullptr; // the earliest op, or `before` if earlier
};

/// Collects the updates of `step`; `ops` is empty when there are none.
/// Fails, with an error on the update naming `pass`, when a gradient is
/// computed after the first update (or after `before`).
inline FailureOr<OptimizerUpdates>
collectOptimizerUpdates(func::FuncOp step, StringRef pass,
                        Operation *before = nullptr) {
  OptimizerUpdates result;
  step.walk([&](Operation *op) {
    if (isa<SGDUpdateOp, AdamUpdateOp>(op))
      result.ops.push_back(op);
  });
  if (result.ops.empty())
    return result;
  Operation *first = result.ops.front();
  for (Operation *u : result.ops)
    if (u->isBeforeInBlock(first))
      first = u;
  if (before && before->isBeforeInBlock(first))
    first = before;
  for (Operation *u : result.ops) {
    Value g = u->getOperand(1);
    if (Operation *def = g.getDefiningOp();
        def && def->getBlock() == first->getBlock() &&
        !def->isBeforeInBlock(first))
      return u->emitOpError(pass)
             << ": its gradient is computed after the first optimizer "
                "update; all gradients must come first";
    result.grads.push_back(g);
  }
  result.first = first;
  return result;
}

/// The gradient seed --mpc-autodiff marks (`mpc.loss_seed`) in `fn`, or
/// null.
inline Operation *findLossSeed(func::FuncOp fn) {
  Operation *seed = nullptr;
  fn.walk([&](Operation *op) {
    if (op->hasAttr("mpc.loss_seed"))
      seed = op;
  });
  return seed;
}

/// The accumulation micro-step of the training step `step` (the function
/// marked `mpc.accumulates = @step`), or null.
inline func::FuncOp findMicroStep(ModuleOp module, StringRef step) {
  for (auto fn : module.getOps<func::FuncOp>())
    if (auto of = fn->getAttrOfType<FlatSymbolRefAttr>("mpc.accumulates");
        of && of.getValue() == step)
      return fn;
  return {};
}

/// A copy of the loss function `loss` named `name`, placed after it and
/// public; null, with an error naming `pass`, when `loss` is missing, has
/// more than one block or does not return the scalar float loss first, or
/// when `name` is taken.
inline func::FuncOp cloneLossFunction(ModuleOp module, StringRef pass,
                                      StringRef loss, StringRef name) {
  auto source = module.lookupSymbol<func::FuncOp>(loss);
  if (!source || source.isDeclaration()) {
    module.emitError(pass) << ": no loss function @" << loss;
    return {};
  }
  if (module.lookupSymbol(name)) {
    module.emitError(pass) << ": a symbol @" << name
                           << " already exists; choose another name=";
    return {};
  }
  if (!source.getBody().hasOneBlock()) {
    source.emitOpError(pass) << ": the loss function must have a single block";
    return {};
  }
  FunctionType type = source.getFunctionType();
  auto lossType = type.getNumResults()
                      ? dyn_cast<RankedTensorType>(type.getResult(0))
                      : nullptr;
  if (!lossType || lossType.getRank() != 0 ||
      !isa<FloatType>(lossType.getElementType())) {
    source.emitOpError(pass) << ": the first result must be the scalar float "
                                "loss";
    return {};
  }
  OpBuilder b(module.getContext());
  b.setInsertionPointAfter(source);
  auto copy = cast<func::FuncOp>(b.clone(*source));
  copy.setSymName(name);
  copy.setPublic();
  return copy;
}

/// Erases, last first, the ops of `block` whose results nobody reads and
/// that have no effect.
inline void eraseDeadOps(Block &block) {
  SmallVector<Operation *> all;
  for (Operation &op : block.without_terminator())
    all.push_back(&op);
  for (Operation *op : llvm::reverse(all))
    if (op->use_empty() && isMemoryEffectFree(op))
      op->erase();
}

} // namespace mlir::mpc

#endif // MPC_LIB_DIALECT_MPC_TRANSFORMS_TRAININGSTEP_H
