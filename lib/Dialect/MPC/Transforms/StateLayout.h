//===- StateLayout.h - where globals live at run time -----------*- C++ -*-===//
//
// One state buffer holds every ml_program.global of a module, in declaration
// order, each at the next 256-byte boundary, then the 8-byte step counter.
// The lowering places globals by it and the memory report counts it.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_LIB_DIALECT_MPC_TRANSFORMS_STATELAYOUT_H
#define MPC_LIB_DIALECT_MPC_TRANSFORMS_STATELAYOUT_H

#include "TypeUtils.h"

#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/MapVector.h"

namespace mlir::mpc {

inline constexpr int64_t kStateAlignment = 256;

struct StateLayout {
  llvm::MapVector<StringRef, int64_t> offsets; // by global, in order
  int64_t stepOffset = 0, bytes = 0;
};

/// The layout of the module's globals; globals that are not statically
/// shaped tensors are skipped (the lowering rejects them).
inline StateLayout layOutState(ModuleOp module) {
  StateLayout layout;
  int64_t offset = 0;
  for (auto global : module.getOps<ml_program::GlobalOp>()) {
    auto type = dyn_cast<RankedTensorType>(global.getType());
    if (!type || !type.hasStaticShape())
      continue;
    layout.offsets[global.getSymName()] = offset;
    offset = llvm::alignTo(offset + byteSize(type), kStateAlignment);
  }
  layout.stepOffset = offset;
  layout.bytes = llvm::alignTo(offset + 8, kStateAlignment);
  return layout;
}

} // namespace mlir::mpc

#endif // MPC_LIB_DIALECT_MPC_TRANSFORMS_STATELAYOUT_H
