//===- RowTransposes.h - transposes moved through row-wise ops ------------===//
//
// `--mpc-fuse`'s `row-transposes`: a transpose that keeps the innermost
// dimension (a batch-first <-> sequence-first swap) moved through the ops
// that work on rows (products by one weight matrix, adds of a vector along
// the rows, casts, slices of the rows) and the reshapes of leading
// dimensions between them, to the transpose it then composes with.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_LIB_DIALECT_MPC_TRANSFORMS_ROWTRANSPOSES_H
#define MPC_LIB_DIALECT_MPC_TRANSFORMS_ROWTRANSPOSES_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"

#include <functional>
#include <optional>

namespace mlir::mpc {

/// A transpose between reshapes: the input reshaped to `shape`, then its
/// dimensions taken in `permutation`'s order.
struct ComposedTranspose {
  SmallVector<int64_t> shape, permutation;
};

/// The transpose `second` of a tensor of `shape` transposed by `first` and
/// reshaped to `reshaped`, as one transpose between reshapes: the input's
/// dimensions split as the common refinement of the two middle shapes
/// splits them, taken in the order `second` takes the refinement's, and
/// the dimensions that stay neighbours merged again. std::nullopt where
/// the middle shapes have no common refinement.
std::optional<ComposedTranspose> composedTranspose(ArrayRef<int64_t> shape,
                                                   ArrayRef<int64_t> first,
                                                   ArrayRef<int64_t> reshaped,
                                                   ArrayRef<int64_t> second);

/// `composed` of `x`, reshaped to `type`: the reshapes and transpose made
/// (where each is not the identity) before b's insertion point; `made`,
/// where given, set to the transpose.
Value buildComposedTranspose(OpBuilder &b, Location loc, Value x,
                             const ComposedTranspose &composed,
                             RankedTensorType type, Operation **made = nullptr);

/// Under `root`: every transpose that keeps the innermost dimension and
/// would meet another transpose (directly or through reshapes) once moved
/// down through the row-wise ops that read it, or up through those that
/// make its input, is moved there; then each transpose of reshapes of a
/// transpose (each read only by the next) becomes one transpose between
/// reshapes, over the shapes' common refinement. `remark(op, text)` is
/// called with each moved or composed transpose. The values are the same
/// bit for bit: the ops move, none computes differently.
void moveRowTransposes(
    Operation *root, const std::function<void(Operation *, StringRef)> &remark);

} // namespace mlir::mpc

#endif // MPC_LIB_DIALECT_MPC_TRANSFORMS_ROWTRANSPOSES_H
