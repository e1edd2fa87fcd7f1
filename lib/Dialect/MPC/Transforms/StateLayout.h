//===- StateLayout.h - where globals live at run time -----------*- C++ -*-===//
//
// One state buffer holds every ml_program.global of a module, in declaration
// order, each at the next 256-byte boundary, then the 8-byte step counter,
// then the large floating-point splat constants of the functions (filled
// at initialisation rather than stored expanded in the executable: a
// `dense<0.5> : tensor<65536x65536xf32>` costs its bytes at run time, not
// 16 GiB of object file). The lowering places globals by it and the memory
// report counts it.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_LIB_DIALECT_MPC_TRANSFORMS_STATELAYOUT_H
#define MPC_LIB_DIALECT_MPC_TRANSFORMS_STATELAYOUT_H

#include "TypeUtils.h"

#include "mpc/Dialect/MPC/IR/MPCOps.h"

#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/MapVector.h"

namespace mlir::mpc {

inline constexpr int64_t kStateAlignment = 256;

/// Splat constants larger than this live in the state, filled at
/// initialisation; smaller ones are stored in the executable.
inline constexpr int64_t kStateSplatBytes = 4096;

struct StateLayout {
  llvm::MapVector<StringRef, int64_t> offsets; // by global, in order
  int64_t stepOffset = 0, bytes = 0;
  /// Offsets of the large float splats, by value (identical ones share).
  llvm::MapVector<Attribute, int64_t> splats;
};

/// Whether `value` (of an mpc.constant) lives in the state: a float splat
/// of more than kStateSplatBytes.
inline bool isStateSplat(Attribute value) {
  auto dense = dyn_cast<DenseElementsAttr>(value);
  auto type = dense ? dyn_cast<RankedTensorType>(dense.getType()) : nullptr;
  return type && dense.isSplat() && isa<FloatType>(type.getElementType()) &&
         type.hasStaticShape() && byteSize(type) > kStateSplatBytes;
}

/// Whether `op` is a zero splat whose every user stores it to a global: the
/// lowering zeroes the globals in place and the constant needs no storage.
inline bool isStoredZero(ConstantOp op) {
  auto dense = dyn_cast<DenseElementsAttr>(op.getValue());
  if (!dense || !dense.isSplat() || op->use_empty())
    return false;
  Type element = dense.getElementType();
  bool zero =
      isa<FloatType>(element)
          ? dense.getSplatValue<APFloat>().isPosZero()
          : isa<IntegerType>(element) && dense.getSplatValue<APInt>().isZero();
  return zero && llvm::all_of(op->getUsers(), [](Operation *user) {
           return isa<ml_program::GlobalStoreOp>(user);
         });
}

/// Bytes left after every global and the step counter (the module's
/// `mpc.state_guard`, set by `--mpc-plan-memory guard=N`), 0 without.
inline int64_t stateGuardBytes(ModuleOp module) {
  auto guard = module->getAttrOfType<IntegerAttr>("mpc.state_guard");
  return guard ? guard.getInt() : 0;
}

/// The layout of the module's globals; globals that are not statically
/// shaped tensors are skipped (the lowering rejects them).
inline StateLayout layOutState(ModuleOp module) {
  StateLayout layout;
  int64_t offset = 0, guard = stateGuardBytes(module);
  for (auto global : module.getOps<ml_program::GlobalOp>()) {
    auto type = dyn_cast<RankedTensorType>(global.getType());
    if (!type || !type.hasStaticShape())
      continue;
    layout.offsets[global.getSymName()] = offset;
    offset = llvm::alignTo(offset + byteSize(type) + guard, kStateAlignment);
  }
  layout.stepOffset = offset;
  offset = llvm::alignTo(offset + 8 + guard, kStateAlignment);
  module.walk([&](ConstantOp op) {
    Attribute value = op.getValue();
    if (!isStateSplat(value) || layout.splats.count(value) || isStoredZero(op))
      return;
    layout.splats[value] = offset;
    offset =
        llvm::alignTo(offset + byteSize(cast<RankedTensorType>(op.getType())),
                      kStateAlignment);
  });
  layout.bytes = offset;
  return layout;
}

} // namespace mlir::mpc

#endif // MPC_LIB_DIALECT_MPC_TRANSFORMS_STATELAYOUT_H
