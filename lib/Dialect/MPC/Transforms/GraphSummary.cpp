//===- GraphSummary.cpp - per-graph op and parameter summary --------------===//

#include "GlobalRoles.h"
#include "ReportFile.h"
#include "TypeUtils.h"
#include "mpc/Dialect/MPC/IR/MPCOps.h"
#include "mpc/Dialect/MPC/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/ToolOutputFile.h"

namespace mlir::mpc {
#define GEN_PASS_DEF_GRAPHSUMMARYPASS
#include "mpc/Dialect/MPC/Transforms/Passes.h.inc"

namespace {

struct GraphSummaryPass : public impl::GraphSummaryPassBase<GraphSummaryPass> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(verifyTrainingGraph(getOperation())))
      return signalPassFailure();
    auto file = openReport(output, getOperation(), "mpc-graph-summary");
    if (!file)
      return signalPassFailure();
    llvm::raw_ostream &os = file->os();
    ModuleOp module = getOperation();

    // Parameters, optimizer state, other state (e.g. BatchNorm running
    // statistics) and constants, by the rule of GlobalRoles.h.
    llvm::StringMap<GlobalRole> roles = globalRoles(module);
    struct Tally {
      int64_t count = 0, elements = 0, bytes = 0;
      void add(RankedTensorType type) {
        ++count;
        elements += type.getNumElements();
        bytes += byteSize(type);
      }
    };
    Tally params, state, optimizerState, constants;
    llvm::MapVector<Type, Tally> paramsByType;
    for (auto global : module.getOps<ml_program::GlobalOp>()) {
      auto type = dyn_cast<RankedTensorType>(global.getType());
      if (!type || !type.hasStaticShape())
        continue;
      switch (roles.lookup(global.getSymName())) {
      case GlobalRole::Parameter:
        params.add(type);
        paramsByType[type.getElementType()].add(type);
        break;
      case GlobalRole::OptimizerState:
        optimizerState.add(type);
        state.add(type);
        break;
      case GlobalRole::OtherState:
        state.add(type);
        break;
      case GlobalRole::Constant:
        constants.add(type);
        break;
      }
    }
    StringRef name = module.getName() ? *module.getName() : "module";
    os << llvm::formatv("{0}: {1} parameters, {2} elements, {3} bytes; "
                        "{4} state globals, {5} bytes\n",
                        name, params.count, params.elements, params.bytes,
                        state.count, state.bytes);
    for (auto &[type, tally] : paramsByType) {
      os << "  parameters ";
      type.print(os);
      os << llvm::formatv(": {0}, {1} bytes\n", tally.count, tally.bytes);
    }
    if (optimizerState.count)
      os << llvm::formatv("  optimizer state: {0}, {1} bytes\n",
                          optimizerState.count, optimizerState.bytes);
    if (constants.count)
      os << llvm::formatv("  constants: {0}, {1} bytes\n", constants.count,
                          constants.bytes);

    for (auto func : module.getOps<func::FuncOp>()) {
      llvm::MapVector<StringRef, int64_t> counts;
      int64_t total = 0;
      func.walk([&](Operation *op) {
        if (op == func)
          return;
        ++counts[op->getName().getStringRef()];
        ++total;
      });
      llvm::sort(counts, [](auto &a, auto &b) {
        return a.second != b.second ? a.second > b.second : a.first < b.first;
      });
      os << llvm::formatv("  func @{0}: {1} ops\n", func.getSymName(), total);
      for (auto &[opName, count] : counts)
        os << llvm::formatv("    {0,-32} {1,6}\n", opName, count);
    }
    if (failed(keepReport(*file, output, module, "mpc-graph-summary")))
      return signalPassFailure();
    markAllAnalysesPreserved();
  }
};

} // namespace
} // namespace mlir::mpc
