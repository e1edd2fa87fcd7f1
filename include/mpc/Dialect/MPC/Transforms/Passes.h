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

/// Registers --mpc-amp-pipeline (Pipelines.cpp).
void registerMPCPipelines();

} // namespace mlir::mpc

#endif // MPC_DIALECT_MPC_TRANSFORMS_PASSES_H
