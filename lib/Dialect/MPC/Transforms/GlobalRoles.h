//===- GlobalRoles.h - what each global of a training graph holds ---------===//
//
// --mpc-graph-summary, --mpc-plan-memory's report and the weight bytes of
// --mpc-assign-precision's report sort a module's globals into parameters,
// optimizer state, other state and constants; this header is the one rule
// they read.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_LIB_DIALECT_MPC_TRANSFORMS_GLOBALROLES_H
#define MPC_LIB_DIALECT_MPC_TRANSFORMS_GLOBALROLES_H

#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/IR/BuiltinOps.h"
#include "mpc/Dialect/MPC/IR/MPCOps.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::mpc {

enum class GlobalRole { Parameter, OptimizerState, OtherState, Constant };

/// The role of each global of `module` (by name):
/// - a constant: a global that is not mutable (a hyper-parameter such as
///   a learning rate; nothing can train it);
/// - optimizer state: an mpc.sgd_update's momentum buffer or an
///   mpc.adam_update's moments;
/// - a parameter: what an update op updates, a global no op writes (a
///   forward graph's weights), and a low-precision copy of a master weight
///   (`mpc.master`), whatever writes it;
/// - other state: any other global the graph writes (batch norms' running
///   statistics, the loss scale, step counters).
inline llvm::StringMap<GlobalRole> globalRoles(ModuleOp module) {
  auto globalOf = [](Value v) -> StringRef {
    if (auto load = v.getDefiningOp<ml_program::GlobalLoadOp>())
      return load.getGlobal().getLeafReference();
    return {};
  };
  llvm::StringMap<GlobalRole> roles;
  llvm::DenseSet<StringRef> updated;
  module.walk([&](Operation *op) {
    if (auto sgd = dyn_cast<SGDUpdateOp>(op)) {
      if (sgd.getMomentumBuffer())
        roles[globalOf(sgd.getMomentumBuffer())] = GlobalRole::OptimizerState;
    } else if (auto adam = dyn_cast<AdamUpdateOp>(op)) {
      roles[globalOf(adam.getExpAvg())] = GlobalRole::OptimizerState;
      roles[globalOf(adam.getExpAvgSq())] = GlobalRole::OptimizerState;
    } else {
      return;
    }
    updated.insert(globalOf(op->getOperand(0)));
  });
  module.walk([&](ml_program::GlobalStoreOp store) {
    StringRef name = store.getGlobal().getLeafReference();
    if (!roles.count(name) && !updated.contains(name))
      roles[name] = GlobalRole::OtherState;
  });
  llvm::StringMap<GlobalRole> byGlobal;
  for (auto global : module.getOps<ml_program::GlobalOp>()) {
    auto found = roles.find(global.getSymName());
    byGlobal[global.getSymName()] =
        !global.getIsMutable() ? GlobalRole::Constant
        : global->hasAttr("mpc.master") || found == roles.end()
            ? GlobalRole::Parameter
            : found->second;
  }
  return byGlobal;
}

} // namespace mlir::mpc

#endif // MPC_LIB_DIALECT_MPC_TRANSFORMS_GLOBALROLES_H
