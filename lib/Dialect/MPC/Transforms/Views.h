//===- Views.h - values the memory plan reads inside another's buffer -----===//
//
// A slice whose every reader takes its operands with strides (the
// broadcasting elementwise ops: each operand a pointer and a stride per
// dimension) needs no copy: --mpc-plan-memory gives it its operand's buffer,
// and the lowering hands those readers the operand's pointer at the slice's
// offset with the slice's strides. This header is what both passes decide
// it from.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_LIB_DIALECT_MPC_TRANSFORMS_VIEWS_H
#define MPC_LIB_DIALECT_MPC_TRANSFORMS_VIEWS_H

#include "mpc/Dialect/MPC/IR/MPCOps.h"

#include "llvm/ADT/STLExtras.h"

namespace mlir::mpc {

/// Ops whose lowering reads every tensor operand through strides over the
/// result's shape (mpcrt_binary_*, mpcrt_compare, mpcrt_where).
inline bool readsOperandsStrided(Operation *op) {
  return isa<AddOp, SubOp, MulOp, DivOp, PowOp, ScaleLossOp, CompareOp,
             WhereOp>(op);
}

/// Whether `slice` may be read in its operand's buffer: it has elements
/// and readers, and every reader takes operands through strides. Where its
/// operand has an arena buffer the plan then makes it a view of it
/// (PlanMemory.cpp).
inline bool readableInPlace(SliceOp slice) {
  auto type = dyn_cast<RankedTensorType>(slice.getType());
  return type && type.hasStaticShape() && type.getNumElements() > 0 &&
         !slice->use_empty() &&
         llvm::all_of(slice->getUsers(), readsOperandsStrided);
}

} // namespace mlir::mpc

#endif // MPC_LIB_DIALECT_MPC_TRANSFORMS_VIEWS_H
