//===- Normalization.cpp - softmax, layer/batch norm, reductions ----------===//

#include "Lowering.h"

#include "mpc/Dialect/MPC/IR/MPCOps.h"
#include "mpc/Runtime/mpcrt.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::mpc;
using namespace mlir::mpc::lowering;

namespace {

int64_t product(ArrayRef<int64_t> dims) {
  int64_t p = 1;
  for (int64_t d : dims)
    p *= d;
  return p;
}

int64_t normalizeAxis(int64_t axis, int64_t rank) {
  return axis < 0 ? axis + rank : axis;
}

/// Softmax-like ops run along the last axis.
FailureOr<std::pair<int64_t, int64_t>>
rowsAndCols(Operation *op, RankedTensorType type, int64_t axis) {
  int64_t rank = type.getRank();
  if (rank == 0 || normalizeAxis(axis, rank) != rank - 1)
    return op->emitOpError("is lowered along the last axis only; transpose "
                           "axis ")
           << axis << " last first";
  int64_t cols = type.getDimSize(rank - 1);
  return std::make_pair(type.getNumElements() / cols, cols);
}

/// The `scale` of a softmax, log-softmax or their backward.
double softmaxScale(Operation *op) {
  if (auto o = dyn_cast<SoftmaxOp>(op))
    return o.getScale().convertToDouble();
  if (auto o = dyn_cast<LogSoftmaxOp>(op))
    return o.getScale().convertToDouble();
  if (auto o = dyn_cast<SoftmaxBackwardOp>(op))
    return o.getScale().convertToDouble();
  return cast<LogSoftmaxBackwardOp>(op).getScale().convertToDouble();
}

/// The single-type entry point where the types agree and the scale is 1,
/// else mpcrt_softmax_mixed (each operand's type and the scale).
LogicalResult softmax(Operation *op, int64_t axis, bool log, Lowering &l) {
  auto type = cast<RankedTensorType>(op->getResult(0).getType());
  auto rc = rowsAndCols(op, type, axis);
  Value out = succeeded(rc) ? l.result(op, 0) : Value();
  if (!out)
    return failure();
  Type in = tensorType(op->getOperand(0)).getElementType();
  double scale = softmaxScale(op);
  if (in == type.getElementType() && scale == 1)
    l.call("mpcrt_softmax_" + suffix(in),
           {l.ptr(op->getOperand(0)), out, l.i64(rc->first), l.i64(rc->second),
            l.i32(log)});
  else
    l.call("mpcrt_softmax_mixed",
           {l.i32(dtypeCode(in)), l.ptr(op->getOperand(0)),
            l.i32(dtypeCode(type.getElementType())), out, l.i64(rc->first),
            l.i64(rc->second), l.i32(log), l.f64(scale)});
  return success();
}

LogicalResult softmaxBackward(Operation *op, int64_t axis, bool log,
                              Lowering &l) {
  auto type = cast<RankedTensorType>(op->getResult(0).getType());
  auto rc = rowsAndCols(op, type, axis);
  Value out = succeeded(rc) ? l.result(op, 0) : Value();
  if (!out)
    return failure();
  Type grad = tensorType(op->getOperand(0)).getElementType();
  Type output = tensorType(op->getOperand(1)).getElementType();
  double scale = softmaxScale(op);
  if (grad == output && grad == type.getElementType() && scale == 1)
    l.call("mpcrt_softmax_backward_" + suffix(grad),
           {l.ptr(op->getOperand(0)), l.ptr(op->getOperand(1)), out,
            l.i64(rc->first), l.i64(rc->second), l.i32(log)});
  else
    l.call("mpcrt_softmax_backward_mixed",
           {l.i32(dtypeCode(grad)), l.ptr(op->getOperand(0)),
            l.i32(dtypeCode(output)), l.ptr(op->getOperand(1)),
            l.i32(dtypeCode(type.getElementType())), out, l.i64(rc->first),
            l.i64(rc->second), l.i32(log), l.f64(scale)});
  return success();
}

/// mpcrt_softmax_dropout(_backward): each operand's type, the rows of the
/// last axis, the softmax's scale, the dropout's p, seed and step counter;
/// the backward's dropped probabilities, where it writes them (else null).
LogicalResult softmaxDropout(Operation *op, double scale, double p,
                             uint64_t seed, Lowering &l) {
  auto type = cast<RankedTensorType>(op->getResult(0).getType());
  auto rc = rowsAndCols(op, type, -1);
  Value out = succeeded(rc) ? l.result(op, 0) : Value();
  if (!out)
    return failure();
  auto backward = dyn_cast<SoftmaxDropoutBackwardOp>(op);
  SmallVector<Value> args;
  for (Value operand : op->getOperands())
    args.append({l.i32(dtypeCode(tensorType(operand).getElementType())),
                 l.ptr(operand)});
  args.append({l.i32(dtypeCode(type.getElementType())), out});
  if (backward) {
    Value dropped = backward.getDropped() ? l.result(op, 1) : l.null();
    if (!dropped)
      return failure();
    args.push_back(dropped);
  }
  args.append({l.i64(rc->first), l.i64(rc->second), l.f64(scale), l.f64(p),
               l.i64(static_cast<int64_t>(seed)),
               l.offset(l.state, l.symbols.stepOffset)});
  l.call(backward ? "mpcrt_softmax_dropout_backward" : "mpcrt_softmax_dropout",
         args);
  return success();
}

std::pair<int64_t, int64_t> layerNormRows(RankedTensorType type, int64_t axis) {
  int64_t a = normalizeAxis(axis, type.getRank());
  ArrayRef<int64_t> shape = type.getShape();
  return {product(shape.take_front(a)), product(shape.drop_front(a))};
}

LogicalResult layerNorm(LayerNormOp op, Lowering &l) {
  Value y = l.result(op, 0), mean = l.result(op, 1), rstd = l.result(op, 2);
  if (!y || !mean || !rstd)
    return failure();
  auto type = tensorType(op.getInput());
  auto [rows, cols] = layerNormRows(type, op.getAxis());
  l.call("mpcrt_layer_norm_" + suffix(type.getElementType()),
         {l.ptr(op.getInput()),
          l.i32(dtypeCode(tensorType(op.getGamma()).getElementType())),
          l.ptr(op.getGamma()), l.ptr(op.getBeta()), y, mean, rstd, l.i64(rows),
          l.i64(cols), l.f64(op.getEpsilon().convertToDouble())});
  return success();
}

LogicalResult layerNormBackward(LayerNormBackwardOp op, Lowering &l) {
  Value dx = l.result(op, 0), dg = l.result(op, 1), db = l.result(op, 2);
  if (!dx || !dg || !db)
    return failure();
  auto type = tensorType(op.getInput());
  auto [rows, cols] = layerNormRows(type, op.getAxis());
  l.call("mpcrt_layer_norm_backward_" + suffix(type.getElementType()),
         {l.ptr(op.getGrad()), l.ptr(op.getInput()), l.ptr(op.getMean()),
          l.ptr(op.getRstd()),
          l.i32(dtypeCode(tensorType(op.getGamma()).getElementType())),
          l.ptr(op.getGamma()), dx, dg, db, l.ptrOrNull(op.getGammaAddend()),
          l.ptrOrNull(op.getBetaAddend()), l.i64(rows), l.i64(cols)});
  return success();
}

LogicalResult addLayerNorm(AddLayerNormOp op, Lowering &l) {
  Value y = l.result(op, 0), sum = l.result(op, 1), mean = l.result(op, 2),
        rstd = l.result(op, 3);
  if (!y || !sum || !mean || !rstd)
    return failure();
  auto type = tensorType(op.getInput());
  auto [rows, cols] = layerNormRows(type, -1);
  // A broadcast residual's rows repeat over the input's leading dimensions.
  int64_t residualRows =
      cols == 0 ? 0 : tensorType(op.getResidual()).getNumElements() / cols;
  l.call("mpcrt_add_layer_norm",
         {l.i32(dtypeCode(type.getElementType())), l.ptr(op.getInput()),
          l.ptr(op.getResidual()),
          l.i32(dtypeCode(tensorType(op.getGamma()).getElementType())),
          l.ptr(op.getGamma()), l.ptr(op.getBeta()), sum, y, mean, rstd,
          l.i64(rows), l.i64(cols), l.i64(residualRows),
          l.f64(op.getEpsilon().convertToDouble()),
          l.f64(op.getDropoutP().convertToDouble()),
          l.i64(static_cast<int64_t>(op.getSeed())),
          l.offset(l.state, l.symbols.stepOffset)});
  return success();
}

LogicalResult addLayerNormBackward(AddLayerNormBackwardOp op, Lowering &l) {
  // An input or residual gradient nobody reads is not written (null), but
  // for an input gradient the kernel sums (Unwritten.h).
  Value dx = l.resultOrNull(op, 0), dr = l.resultOrNull(op, 1),
        dg = l.result(op, 2), db = l.result(op, 3);
  // The input gradient's sums (input_sums), or null.
  Value sums = op.getGradInputSums() ? l.result(op, 4) : l.null();
  if (!dx || !dr || !dg || !db || !sums)
    return failure();
  auto type = tensorType(op.getSum());
  auto [rows, cols] = layerNormRows(type, -1);
  l.call("mpcrt_add_layer_norm_backward",
         {l.i32(dtypeCode(type.getElementType())),
          l.ptr(op.getGrad()),
          l.ptrOrNull(op.getSumGrad()),
          l.ptr(op.getSum()),
          l.ptr(op.getMean()),
          l.ptr(op.getRstd()),
          l.i32(dtypeCode(tensorType(op.getGamma()).getElementType())),
          l.ptr(op.getGamma()),
          dx,
          dr,
          dg,
          db,
          l.ptrOrNull(op.getGammaAddend()),
          l.ptrOrNull(op.getBetaAddend()),
          l.i64(rows),
          l.i64(cols),
          l.f64(op.getDropoutP().convertToDouble()),
          l.i64(static_cast<int64_t>(op.getSeed())),
          l.offset(l.state, l.symbols.stepOffset),
          sums});
  return success();
}

LogicalResult batchNorm(BatchNormOp op, Lowering &l) {
  SmallVector<Value> out;
  for (unsigned i = 0; i < 5; ++i)
    if (!out.emplace_back(l.result(op, i)))
      return failure();
  auto type = tensorType(op.getInput());
  auto param = tensorType(op.getGamma());
  int64_t c = param.getNumElements();
  // The op is functional: the kernel updates the running statistics in
  // place, so it works on copies in the result buffers, except where the
  // plan computes them in their globals (mpc.in_globals: the result
  // buffer is then the operand's, and copy() copies nothing).
  l.copy(out[1], l.ptr(op.getRunningMean()), param);
  l.copy(out[2], l.ptr(op.getRunningVar()), param);
  // With sync: the statistics of every rank (mpcrt_sync_batch_norm_*).
  l.call(std::string(op.getSync() ? "mpcrt_sync_batch_norm_"
                                  : "mpcrt_batch_norm_") +
             suffix(type.getElementType()),
         {l.ptr(op.getInput()), l.i32(dtypeCode(param.getElementType())),
          l.ptr(op.getGamma()), l.ptr(op.getBeta()), out[1], out[2], out[0],
          out[3], out[4], l.i64(type.getNumElements() / c), l.i64(c),
          l.f64(op.getMomentum().convertToDouble()),
          l.f64(op.getEpsilon().convertToDouble()),
          l.i32(activationCode(op.getActivation()))});
  return success();
}

LogicalResult batchNormInference(BatchNormInferenceOp op, Lowering &l) {
  Value out = l.result(op, 0);
  if (!out)
    return failure();
  auto type = tensorType(op.getInput());
  auto param = tensorType(op.getGamma());
  int64_t c = param.getNumElements();
  l.call("mpcrt_batch_norm_inference_" + suffix(type.getElementType()),
         {l.ptr(op.getInput()), l.i32(dtypeCode(param.getElementType())),
          l.ptr(op.getGamma()), l.ptr(op.getBeta()), l.ptr(op.getRunningMean()),
          l.ptr(op.getRunningVar()), out, l.i64(type.getNumElements() / c),
          l.i64(c), l.f64(op.getEpsilon().convertToDouble()),
          l.i32(activationCode(op.getActivation()))});
  return success();
}

LogicalResult batchNormBackward(BatchNormBackwardOp op, Lowering &l) {
  Value dx = l.result(op, 0), dg = l.result(op, 1), db = l.result(op, 2);
  if (!dx || !dg || !db)
    return failure();
  auto type = tensorType(op.getInput());
  auto param = tensorType(op.getGamma());
  int64_t c = param.getNumElements();
  l.call(std::string(op.getSync() ? "mpcrt_sync_batch_norm_backward_"
                                  : "mpcrt_batch_norm_backward_") +
             suffix(type.getElementType()),
         {l.ptr(op.getGrad()), l.ptr(op.getInput()),
          l.i32(dtypeCode(param.getElementType())), l.ptr(op.getGamma()),
          l.ptr(op.getSavedMean()), l.ptr(op.getSavedInvstd()), dx, dg, db,
          l.i64(type.getNumElements() / c), l.i64(c),
          l.ptrOrNull(op.getResult()), l.ptrOrNull(op.getBeta()),
          l.ptrOrNull(op.getGammaAddend()), l.ptrOrNull(op.getBetaAddend())});
  return success();
}

/// Reductions over a contiguous run of dimensions, as
/// [outer, reduced, inner].
LogicalResult reduce(Operation *op, ArrayRef<int64_t> dims, int32_t kind,
                     Lowering &l) {
  // The reduced tensor: the input (operand 1 of the max's backward).
  auto type = tensorType(op->getOperand(kind < 0 ? 1 : 0));
  int64_t rank = type.getRank();
  SmallVector<int64_t> sorted;
  for (int64_t d : dims)
    sorted.push_back(normalizeAxis(d, rank));
  llvm::sort(sorted);
  for (size_t i = 1; i < sorted.size(); ++i)
    if (sorted[i] != sorted[i - 1] + 1)
      return op->emitOpError("is lowered over adjacent dimensions only; "
                             "transpose them together first");
  Value out = l.result(op, 0);
  if (!out)
    return failure();
  ArrayRef<int64_t> shape = type.getShape();
  int64_t first = sorted.empty() ? rank : sorted.front();
  int64_t last = sorted.empty() ? rank : sorted.back() + 1;
  Value outer = l.i64(product(shape.take_front(first))),
        reduced = l.i64(product(shape.slice(first, last - first))),
        inner = l.i64(product(shape.drop_front(last)));
  if (kind < 0) // reduce_max_backward(grad, input, max)
    l.call("mpcrt_reduce_max_backward_" + suffix(type.getElementType()),
           {l.ptr(op->getOperand(0)), l.ptr(op->getOperand(1)),
            l.ptr(op->getOperand(2)), out, outer, reduced, inner});
  else
    l.call("mpcrt_reduce_" + suffix(type.getElementType()),
           {l.i32(kind), l.ptr(op->getOperand(0)), out, outer, reduced, inner});
  return success();
}

} // namespace

std::optional<LogicalResult> lowering::lowerNormalization(Operation *op,
                                                          Lowering &l) {
  return llvm::TypeSwitch<Operation *, std::optional<LogicalResult>>(op)
      .Case([&](SoftmaxOp op) { return softmax(op, op.getAxis(), false, l); })
      .Case([&](LogSoftmaxOp op) { return softmax(op, op.getAxis(), true, l); })
      .Case([&](SoftmaxBackwardOp op) {
        return softmaxBackward(op, op.getAxis(), false, l);
      })
      .Case([&](LogSoftmaxBackwardOp op) {
        return softmaxBackward(op, op.getAxis(), true, l);
      })
      .Case([&](SoftmaxDropoutOp op) {
        return softmaxDropout(op, op.getScale().convertToDouble(),
                              op.getP().convertToDouble(), op.getSeed(), l);
      })
      .Case([&](SoftmaxDropoutBackwardOp op) {
        return softmaxDropout(op, op.getScale().convertToDouble(),
                              op.getP().convertToDouble(), op.getSeed(), l);
      })
      .Case([&](LayerNormOp op) { return layerNorm(op, l); })
      .Case([&](LayerNormBackwardOp op) { return layerNormBackward(op, l); })
      .Case([&](AddLayerNormOp op) { return addLayerNorm(op, l); })
      .Case([&](AddLayerNormBackwardOp op) {
        return addLayerNormBackward(op, l);
      })
      .Case([&](BatchNormOp op) { return batchNorm(op, l); })
      .Case([&](BatchNormInferenceOp op) { return batchNormInference(op, l); })
      .Case([&](BatchNormBackwardOp op) { return batchNormBackward(op, l); })
      .Case([&](ReduceSumOp op) { return reduce(op, op.getDims(), 0, l); })
      .Case([&](ReduceMeanOp op) { return reduce(op, op.getDims(), 1, l); })
      .Case([&](ReduceMaxOp op) { return reduce(op, op.getDims(), 2, l); })
      .Case([&](ReduceMaxBackwardOp op) {
        return reduce(op, op.getDims(), /*kind=*/-1, l);
      })
      .Default([](Operation *) { return std::nullopt; });
}
