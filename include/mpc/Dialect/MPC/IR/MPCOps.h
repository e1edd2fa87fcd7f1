//===- MPCOps.h - mpc dialect operations ------------------------*- C++ -*-===//

#ifndef MPC_DIALECT_MPC_IR_MPCOPS_H
#define MPC_DIALECT_MPC_IR_MPCOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mpc/Dialect/MPC/IR/MPCDialect.h"

#include "mpc/Dialect/MPC/IR/MPCInterfaces.h.inc"

namespace mlir::mpc {
/// The most bytes a tensor may take: far beyond any device, and small
/// enough that sums and products of sizes and offsets never overflow 64
/// bits downstream.
inline constexpr int64_t kMaxTensorBytes = int64_t(1) << 48;

/// The bytes of a statically shaped tensor's storage (i1 takes a byte), or
/// none when that is over kMaxTensorBytes (computed without overflow).
std::optional<int64_t> checkedByteSize(ShapedType type);

/// Whether a statically shaped tensor has no zero-sized dimension and fits
/// kMaxTensorBytes: what every tensor of the dialect must be.
bool isNonEmptyAddressable(Type type);

/// A batch norm's saved mean and inverse standard deviation beside
/// parameters of type `gamma`: f32 of gamma's shape, whatever its element
/// type (the kernels write them as f32).
inline Type batchNormSavedType(Type gamma) {
  auto shaped = dyn_cast<ShapedType>(gamma);
  return shaped ? shaped.clone(Float32Type::get(gamma.getContext())) : gamma;
}

/// Whether `residual` may be mpc.add_layer_norm's residual beside `input`:
/// the input's element type, and its shape or the shape of its last
/// dimensions (at least the last one), broadcast over the leading ones.
inline bool isResidualOf(RankedTensorType residual, RankedTensorType input) {
  ArrayRef<int64_t> shape = input.getShape(), tail = residual.getShape();
  return residual.getElementType() == input.getElementType() && !tail.empty() &&
         tail.size() <= shape.size() && shape.take_back(tail.size()) == tail;
}
} // namespace mlir::mpc

#define GET_OP_CLASSES
#include "mpc/Dialect/MPC/IR/MPCOps.h.inc"

namespace mlir::mpc {
/// The default precision category of `op`, or none for ops outside the
/// dialect that do not implement `PrecisionCategoryOpInterface`.
std::optional<PrecisionCategory> getDefaultPrecisionCategory(Operation *op);

/// Whether `v` is computed from model state (an ml_program.global_load):
/// a value autodiff may have to differentiate, unlike one computed from
/// the step's inputs and constants alone.
bool readsModelState(Value v);

/// An mpc.attention operand's shape as [..., H, S, D], the default layout
/// "bhsd": with layout "bshd" ([..., S, H, D]) its dimensions -3 and -2
/// swapped (the swap is its own inverse), else the shape itself.
SmallVector<int64_t> attentionHeadsFirst(ArrayRef<int64_t> shape,
                                         StringRef layout);

/// Attaches VJPOpInterface to every differentiable op (MPCGradients.cpp);
/// called when the dialect loads.
void registerVJPModels(MLIRContext *ctx);
} // namespace mlir::mpc

#endif // MPC_DIALECT_MPC_IR_MPCOPS_H
