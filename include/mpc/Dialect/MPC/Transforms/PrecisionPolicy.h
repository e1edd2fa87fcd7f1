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
#include "llvm/Support/GlobPattern.h"

#include <deque>
#include <optional>
#include <string>
#include <vector>

namespace mlir::mpc {

/// Where an op's category came from, for the precision report.
struct CategoryChoice {
  PrecisionCategory category;
  /// "default", "option <name>", "policy <file>", "attribute
  /// mpc.precision" or "policy <file>:<line>:<col> name '<glob>'".
  std::string source;
  /// A decision about this op instance (its mpc.precision attribute or a
  /// policy entry matching its location name): it holds at every level.
  bool instance = false;
};

/// The discardable attribute that sets one op's category ("lowp", "fp32",
/// "promote" or "follow"); --mpc-autodiff copies it to the op's gradient
/// ops.
constexpr llvm::StringLiteral kPrecisionAttr = "mpc.precision";

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

  /// Keeps the ops whose location names (NameLoc, also inside fused and
  /// call-site locations) match `glob`, and that are `opName` when given,
  /// in `category`. `source` names the entry in the report.
  LogicalResult addNameRule(MLIRContext *context, StringRef glob,
                            StringRef opName, PrecisionCategory category,
                            StringRef source, std::string &error);

  /// The category `op` runs in, or none for ops without one: its
  /// mpc.precision attribute, else the first name rule that matches it,
  /// else an override of its op name, else its default. Fails on a bad
  /// mpc.precision attribute, with `error` set.
  FailureOr<std::optional<CategoryChoice>> lookup(Operation *op,
                                                  std::string &error) const;
  /// lookup() for ops already checked.
  std::optional<CategoryChoice> lookup(Operation *op) const {
    std::string error;
    FailureOr<std::optional<CategoryChoice>> choice = lookup(op, error);
    return succeeded(choice) ? *choice : std::nullopt;
  }

  /// The sources of the name rules that matched no op looked up so far.
  std::vector<std::string> unusedNameRules() const;

private:
  struct NameRule {
    std::string text; // what `glob` refers to (GlobPattern keeps views)
    llvm::GlobPattern glob;
    std::string opName; // empty: any op
    CategoryChoice choice;
    mutable bool used = false;
  };
  llvm::StringMap<CategoryChoice> overrides;
  std::deque<NameRule> nameRules; // stable addresses: see NameRule::text
};

} // namespace mlir::mpc

#endif // MPC_DIALECT_MPC_TRANSFORMS_PRECISIONPOLICY_H
