//===- Passes.h - mpc dialect passes ----------------------------*- C++ -*-===//

#ifndef MPC_DIALECT_MPC_TRANSFORMS_PASSES_H
#define MPC_DIALECT_MPC_TRANSFORMS_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::mpc {

#define GEN_PASS_DECL
#include "mpc/Dialect/MPC/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "mpc/Dialect/MPC/Transforms/Passes.h.inc"

/// The module-level checks of --mpc-verify-graph (globals statically
/// shaped tensors, initializers that fit their type, weight copies that
/// name a master of their shape), with errors at the globals. Every mpc
/// pass that reads globals runs them first, so that a graph it cannot
/// handle is an error, never an assertion or a wrong size.
LogicalResult verifyTrainingGraph(ModuleOp module);

/// Registers --mpc-amp-pipeline (Pipelines.cpp).
void registerMPCPipelines();

} // namespace mlir::mpc

#endif // MPC_DIALECT_MPC_TRANSFORMS_PASSES_H
