//===- PrintPrecisionCategories.cpp - remark per op category --------------===//

#include "mpc/Dialect/MPC/IR/MPCOps.h"
#include "mpc/Dialect/MPC/Transforms/Passes.h"

namespace mlir::mpc {
#define GEN_PASS_DEF_PRINTPRECISIONCATEGORIESPASS
#include "mpc/Dialect/MPC/Transforms/Passes.h.inc"

namespace {
struct PrintPrecisionCategoriesPass
    : public impl::PrintPrecisionCategoriesPassBase<
          PrintPrecisionCategoriesPass> {
  void runOnOperation() override {
    getOperation().walk([](Operation *op) {
      if (std::optional<PrecisionCategory> category =
              getDefaultPrecisionCategory(op))
        op->emitRemark("precision category of '")
            << op->getName() << "': " << stringifyPrecisionCategory(*category);
    });
    markAllAnalysesPreserved();
  }
};
} // namespace
} // namespace mlir::mpc
