//===- PrecisionPolicy.h - op category overrides ----------------*- C++ -*-===//
//
// The categories the mixed-precision pass uses: each op's default
// (PrecisionCategoryOpInterface) unless an override moves it.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_DIALECT_MPC_TRANSFORMS_PRECISIONPOLICY_H
#define MPC_DIALECT_MPC_TRANSFORMS_PRECISIONPOLICY_H

#include "mpc/Dialect/MPC/IR/MPCOps.h"

#include "llvm/ADT/StringMap.h"

namespace mlir::mpc {

/// Where an op's category came from, for the precision report.
struct CategoryChoice {
  PrecisionCategory category;
  /// "default", "option <name>" or "policy <file>".
  std::string source;
};

class PrecisionPolicy {
public:
  /// Moves `opName` ("mpc.softmax" or "softmax") to `category`. Fails, with
  /// `error` set, if no such op is registered in the mpc dialect.
  LogicalResult addOverride(MLIRContext *context, StringRef opName,
                            PrecisionCategory category, StringRef source,
                            std::string &error);

  /// Reads a JSON policy file: an object whose keys are category names and
  /// whose values are arrays of op names. Errors name the file position.
  LogicalResult addPolicyFile(MLIRContext *context, StringRef path,
                              StringRef contents, std::string &error);

  /// The category `op` runs in, or none for ops without one.
  std::optional<CategoryChoice> lookup(Operation *op) const;

  /// Whether an override (rather than the default) moved `op`.
  bool isOverridden(Operation *op) const {
    return overrides.contains(op->getName().getStringRef());
  }

private:
  llvm::StringMap<CategoryChoice> overrides;
};

} // namespace mlir::mpc

#endif // MPC_DIALECT_MPC_TRANSFORMS_PRECISIONPOLICY_H
