//===- Unwritten.h - results a kernel leaves unwritten --------------------===//
//
// Some kernels write a result only where they are given somewhere to
// write it: where nothing reads that result, --mpc-plan-memory gives it no
// buffer (offset -1) and the lowering passes the kernel a null pointer in
// its place (mpcrt.h says which arguments may be null). This header is
// what both passes decide it from.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_LIB_DIALECT_MPC_TRANSFORMS_UNWRITTEN_H
#define MPC_LIB_DIALECT_MPC_TRANSFORMS_UNWRITTEN_H

#include "mpc/Dialect/MPC/IR/MPCOps.h"

namespace mlir::mpc {

/// Whether `result` is one its op's kernel leaves unwritten: nothing
/// reads it, and it is
/// - an unscaled gradient of mpc.unscale_and_check (the op then only
///   checks that gradient; its found-inf flag is always written);
/// - mpc.add_layer_norm_backward's residual gradient, or its input
///   gradient unless the op sums that gradient (input_sums: the kernel
///   reads it back). Canonicalization leaves the residual's unread where
///   the norm has no dropout (the two are then the same values).
inline bool isLeftUnwritten(OpResult result) {
  if (!result.use_empty())
    return false;
  Operation *op = result.getOwner();
  if (isa<UnscaleAndCheckOp>(op))
    return result != op->getResults().back();
  if (auto back = dyn_cast<AddLayerNormBackwardOp>(op))
    return result == back.getGradResidual() ||
           (result == back.getGradInput() && !back.getInputSums());
  return false;
}

} // namespace mlir::mpc

#endif // MPC_LIB_DIALECT_MPC_TRANSFORMS_UNWRITTEN_H
