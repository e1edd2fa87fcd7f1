//===- NeuralNet.cpp - pooling, upsampling, embedding, dropout, losses ----===//

#include "Lowering.h"

#include "mpc/Dialect/MPC/IR/MPCOps.h"

#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::mpc;
using namespace mlir::mpc::lowering;

namespace {

/// mpcrt_pool2d_shape: twelve int64 fields then an int32, which on the
/// little-endian targets we build for is the low half of a 13th int64.
template <typename Op>
Value poolShape(Op op, ArrayRef<int64_t> x, ArrayRef<int64_t> y,
                int64_t countIncludePad, Lowering &l) {
  ArrayRef<int64_t> kernel = op.getKernel();
  ArrayRef<int64_t> stride = op.getStride() ? *op.getStride() : kernel;
  ArrayRef<int64_t> pad = op.getPadding();
  return l.i64Array({x[0], x[1], x[2], x[3], y[1], y[2], kernel[0], kernel[1],
                     stride[0], stride[1], pad[0], pad[1], countIncludePad});
}

template <typename Op>
LogicalResult pool(Op op, StringRef kernel, int64_t countIncludePad,
                   Lowering &l) {
  Value out = l.result(op, 0);
  if (!out)
    return failure();
  auto x = tensorType(op.getInput());
  l.call(("mpcrt_" + kernel + "_" + suffix(x.getElementType())).str(),
         {l.ptr(op.getInput()), out,
          poolShape(op, x.getShape(), op.getType().getShape(), countIncludePad,
                    l)});
  return success();
}

template <typename Op>
LogicalResult poolBackward(Op op, StringRef kernel, int64_t countIncludePad,
                           bool needsInput, Lowering &l) {
  Value out = l.result(op, 0);
  if (!out)
    return failure();
  auto x = tensorType(op.getInput());
  Value shape = poolShape(op, x.getShape(), tensorType(op.getGrad()).getShape(),
                          countIncludePad, l);
  SmallVector<Value> args{l.ptr(op.getGrad())};
  if (needsInput)
    args.push_back(l.ptr(op.getInput()));
  args.append({out, shape});
  l.call(("mpcrt_" + kernel + "_" + suffix(x.getElementType())).str(), args);
  return success();
}

/// A max pool's gradient plus its addend, read where it lies (a view of
/// a concatenation's gradient, its pixels evenly apart: rowStrideOf).
LogicalResult maxPoolBackwardAdd(MaxPool2DBackwardOp op, Lowering &l) {
  Value out = l.result(op, 0);
  if (!out)
    return failure();
  auto x = tensorType(op.getInput());
  Value shape =
      poolShape(op, x.getShape(), tensorType(op.getGrad()).getShape(), 0, l);
  auto [addend, strides] = stridedOperand(op.getAddend(), l);
  std::optional<int64_t> row = rowStrideOf(x.getShape(), strides);
  if (!row)
    return op.emitOpError("is lowered with an addend whose (n, h, w) "
                          "positions lie evenly apart, each one's channels "
                          "contiguous");
  l.call("mpcrt_max_pool2d_backward_add_" + suffix(x.getElementType()),
         {l.ptr(op.getGrad()), l.ptr(op.getInput()), addend, l.i64(*row), out,
          shape});
  return success();
}

LogicalResult upsample(Operation *op, bool backward, ArrayRef<int64_t> scale,
                       Lowering &l) {
  Value out = l.result(op, 0);
  if (!out)
    return failure();
  // n, h, w, c of the small (input) side.
  auto small = backward ? cast<RankedTensorType>(op->getResult(0).getType())
                        : tensorType(op->getOperand(0));
  ArrayRef<int64_t> s = small.getShape();
  l.call(std::string("mpcrt_upsample_nearest2d_") +
             (backward ? "backward_" : "") + suffix(small.getElementType()),
         {l.ptr(op->getOperand(0)), out, l.i64(s[0]), l.i64(s[1]), l.i64(s[2]),
          l.i64(s[3]), l.i64(scale[0]), l.i64(scale[1])});
  return success();
}

std::string where(Operation *op) {
  std::string s;
  llvm::raw_string_ostream os(s);
  if (auto file = op->getLoc()->findInstanceOf<FileLineColLoc>())
    os << file.getFilename().getValue() << ':' << file.getLine() << ':'
       << file.getColumn();
  else
    os << op->getLoc();
  os << ": '" << op->getName() << "'";
  return s;
}

LogicalResult embedding(EmbeddingOp op, Lowering &l) {
  Value out = l.result(op, 0);
  if (!out)
    return failure();
  auto table = tensorType(op.getTable());
  auto indices = tensorType(op.getIndices());
  Value code = l.call("mpcrt_embedding_" + suffix(table.getElementType()),
                      {l.ptr(op.getTable()), l.i64(table.getDimSize(0)),
                       l.i64(table.getDimSize(1)), l.ptr(op.getIndices()),
                       l.i32(indices.getElementTypeBitWidth()),
                       l.i64(indices.getNumElements()), out},
                      /*returnsI64=*/true);
  l.call("mpcrt_check_index", {code, l.string(where(op))});
  return success();
}

LogicalResult embeddingBackward(EmbeddingBackwardOp op, Lowering &l) {
  Value out = l.result(op, 0);
  if (!out)
    return failure();
  auto table = op.getType();
  auto indices = tensorType(op.getIndices());
  // The padding row gets no gradient: the kernels skip its indices.
  Value code = l.call(
      "mpcrt_embedding_backward_" + suffix(table.getElementType()),
      {l.ptr(op.getGrad()), l.ptr(op.getIndices()),
       l.i32(indices.getElementTypeBitWidth()), l.i64(indices.getNumElements()),
       l.i64(table.getDimSize(0)), l.i64(table.getDimSize(1)),
       l.i64(op.getPaddingIdx().value_or(-1)), l.ptrOrNull(op.getAddend()),
       out},
      /*returnsI64=*/true);
  l.call("mpcrt_check_index", {code, l.string(where(op))});
  return success();
}

LogicalResult dropout(DropoutOp op, Lowering &l) {
  Value out = l.result(op, 0), mask = l.result(op, 1);
  if (!out || !mask)
    return failure();
  auto type = tensorType(op.getInput());
  Type result = tensorType(op.getResult()).getElementType();
  SmallVector<Value> args = {l.ptr(op.getInput()),
                             out,
                             mask,
                             l.i64(type.getNumElements()),
                             l.f64(op.getP().convertToDouble()),
                             l.i64(static_cast<int64_t>(op.getSeed())),
                             l.offset(l.state, l.symbols.stepOffset)};
  if (result == type.getElementType()) {
    l.call("mpcrt_dropout_" + suffix(result), args);
    return success();
  }
  // Another result type: mpcrt_dropout_mixed(in, x, out, y, ...).
  args.insert(args.begin() + 1, l.i32(dtypeCode(result)));
  args.insert(args.begin(), l.i32(dtypeCode(type.getElementType())));
  l.call("mpcrt_dropout_mixed", args);
  return success();
}

LogicalResult dropoutAdd(DropoutAddOp op, Lowering &l) {
  Value out = l.result(op, 0);
  if (!out)
    return failure();
  auto type = tensorType(op.getInput());
  l.call("mpcrt_dropout_add",
         {l.i32(dtypeCode(type.getElementType())), l.ptr(op.getInput()),
          l.ptrOrNull(op.getResidual()), out, l.i64(type.getNumElements()),
          l.f64(op.getP().convertToDouble()),
          l.i64(static_cast<int64_t>(op.getSeed())),
          l.offset(l.state, l.symbols.stepOffset)});
  return success();
}

/// The arguments of mpcrt_attention(_backward) after the pointers: heads
/// (the leading dimensions, with layout "bshd" the heads' too), sq, sk, d,
/// dv, the heads sharing a row (1; H with layout "bshd"); scale, dropout_p,
/// seed and the step counter dropout draws with; the mask's bytes (or
/// null), the scores' shape and the mask's strides over it (0 where it
/// broadcasts), its rank and fill.
template <typename Op>
LogicalResult appendAttentionArgs(Op op, SmallVectorImpl<Value> &args,
                                  Lowering &l) {
  // The [..., H, S, D] shapes ("bhsd"), whatever the operands' layout.
  bool headsInner = op.getLayout() == "bshd";
  auto logical = [&](Value v) {
    return attentionHeadsFirst(tensorType(v).getShape(), op.getLayout());
  };
  SmallVector<int64_t> q = logical(op.getQuery()), k = logical(op.getKey()),
                       v = logical(op.getValue());
  int64_t heads = 1;
  for (int64_t n : ArrayRef<int64_t>(q).drop_back(2))
    heads *= n;
  int64_t rowHeads = headsInner ? q[q.size() - 3] : 1;
  args.append({l.i64(heads), l.i64(q[q.size() - 2]), l.i64(k[k.size() - 2]),
               l.i64(q.back()), l.i64(v.back()), l.i64(rowHeads),
               l.f64(op.getScale().convertToDouble()),
               l.f64(op.getDropoutP().convertToDouble()),
               l.i64(static_cast<int64_t>(op.getSeed())),
               l.offset(l.state, l.symbols.stepOffset)});
  SmallVector<int64_t> scores(q);
  scores.back() = k[k.size() - 2];
  if ((op.getMask() || op.getBias()) && scores.size() > 8)
    return op.emitOpError("is lowered with at most 8 dimensions, got ")
           << scores.size();
  // A mask's or bias's pointer, then its layout: the scores' shape, then
  // its strides over them (0 where it broadcasts), and the rank.
  auto appendLayout = [&](Value t) {
    ArrayRef<int64_t> shape = tensorType(t).getShape();
    SmallVector<int64_t> layout(scores), own = strides(shape);
    for (size_t d = 0; d < shape.size(); ++d)
      layout.push_back(shape[d] == 1 ? 0 : own[d]);
    args.append({l.ptr(t), l.i64Array(layout),
                 l.i32(static_cast<int32_t>(shape.size()))});
  };
  if (Value mask = op.getMask()) {
    appendLayout(mask);
    args.push_back(l.f64(op.getMaskValue()->convertToDouble()));
  } else {
    args.append({l.null(), l.null(), l.i32(0), l.f64(0)});
  }
  if (Value bias = op.getBias())
    appendLayout(bias);
  else
    args.append({l.null(), l.null(), l.i32(0)});
  return success();
}

LogicalResult attention(AttentionOp op, Lowering &l) {
  Value out = l.result(op, 0), lse = l.result(op, 1);
  if (!out || !lse)
    return failure();
  SmallVector<Value> args{
      l.i32(dtypeCode(tensorType(op.getQuery()).getElementType())),
      l.ptr(op.getQuery()),
      l.ptr(op.getKey()),
      l.ptr(op.getValue()),
      out,
      lse};
  if (failed(appendAttentionArgs(op, args, l)))
    return failure();
  l.call("mpcrt_attention", args);
  return success();
}

LogicalResult attentionBackward(AttentionBackwardOp op, Lowering &l) {
  Value dq = l.result(op, 0), dk = l.result(op, 1), dv = l.result(op, 2);
  if (!dq || !dk || !dv)
    return failure();
  SmallVector<Value> args{
      l.i32(dtypeCode(tensorType(op.getQuery()).getElementType())),
      l.ptr(op.getGrad()),
      l.ptr(op.getQuery()),
      l.ptr(op.getKey()),
      l.ptr(op.getValue()),
      l.ptr(op.getResult()),
      l.ptr(op.getLogsumexp()),
      dq,
      dk,
      dv};
  if (failed(appendAttentionArgs(op, args, l)))
    return failure();
  l.call("mpcrt_attention_backward", args);
  return success();
}

LogicalResult dropoutBackward(DropoutBackwardOp op, Lowering &l) {
  Value out = l.result(op, 0);
  if (!out)
    return failure();
  auto type = tensorType(op.getGrad());
  l.call("mpcrt_dropout_backward_" + suffix(type.getElementType()),
         {l.ptr(op.getGrad()), l.ptr(op.getMask()), out,
          l.i64(type.getNumElements()), l.f64(op.getP().convertToDouble())});
  return success();
}

/// The losses compute in the input's type and write a loss of that type.
LogicalResult checkLossType(Operation *op, Type input) {
  Type result = getElementTypeOrSelf(op->getResult(0).getType());
  if (result != input)
    return op->emitOpError("is lowered with a result of its input's element "
                           "type (")
           << input << "), got " << result;
  return success();
}

/// The runtime's `ignores, ignore_index` arguments of a cross-entropy or
/// accuracy: 1 and the label, or 0 and 0 without one.
void appendIgnoreIndex(IntegerAttr ignoreIndex, Lowering &l,
                       SmallVectorImpl<Value> &args) {
  args.push_back(l.i32(ignoreIndex != nullptr));
  args.push_back(l.i64(ignoreIndex ? ignoreIndex.getInt() : 0));
}

template <typename Op>
LogicalResult crossEntropy(Op op, bool backward, Lowering &l) {
  auto logits = tensorType(op.getInput());
  if (failed(checkLossType(op, logits.getElementType())))
    return failure();
  Value out = l.result(op, 0);
  if (!out)
    return failure();
  int64_t classes = logits.getDimSize(logits.getRank() - 1);
  int64_t rows = logits.getNumElements() / classes;
  auto labels = tensorType(op.getTarget());
  bool mean = op.getReduction() == Reduction::Mean;
  std::string t = suffix(logits.getElementType());
  SmallVector<Value> args;
  if constexpr (std::is_same_v<Op, CrossEntropyBackwardOp>)
    args.push_back(l.ptr(op.getGrad()));
  args.append({l.ptr(op.getInput()), l.ptr(op.getTarget()),
               l.i32(labels.getElementTypeBitWidth()), out, l.i64(rows),
               l.i64(classes), l.i32(mean)});
  appendIgnoreIndex(op.getIgnoreIndexAttr(), l, args);
  args.push_back(l.f64(op.getLabelSmoothing().convertToDouble()));
  Value code = l.call(std::string("mpcrt_cross_entropy_") +
                          (backward ? "backward_" : "") + t,
                      args, /*returnsI64=*/true);
  l.call("mpcrt_check_label", {code, l.i64(classes), l.string(where(op))});
  return success();
}

LogicalResult accuracy(AccuracyOp op, Lowering &l) {
  auto logits = tensorType(op.getInput());
  Value out = l.result(op, 0);
  if (!out)
    return failure();
  int64_t classes = logits.getDimSize(logits.getRank() - 1);
  int64_t rows = logits.getNumElements() / classes;
  if (rows >= (int64_t(1) << 31))
    return op.emitOpError("is lowered for fewer than 2^31 rows, got ") << rows;
  auto labels = tensorType(op.getTarget());
  SmallVector<Value> args = {l.ptr(op.getInput()),
                             l.ptr(op.getTarget()),
                             l.i32(labels.getElementTypeBitWidth()),
                             out,
                             l.i64(rows),
                             l.i64(classes)};
  appendIgnoreIndex(op.getIgnoreIndexAttr(), l, args);
  l.call("mpcrt_accuracy_" + suffix(logits.getElementType()), args);
  return success();
}

template <typename Op>
LogicalResult pointwiseLoss(Op op, int32_t kind, Lowering &l) {
  auto input = tensorType(op.getInput());
  if (failed(checkLossType(op, input.getElementType())))
    return failure();
  if (tensorType(op.getTarget()).getElementType() != input.getElementType())
    return op.emitOpError("is lowered with a target of its input's element "
                          "type");
  Value out = l.result(op, 0);
  if (!out)
    return failure();
  bool mean = op.getReduction() == Reduction::Mean;
  std::string t = suffix(input.getElementType());
  if constexpr (std::is_same_v<Op, MSEBackwardOp> ||
                std::is_same_v<Op, BCEWithLogitsBackwardOp> ||
                std::is_same_v<Op, BinaryCrossEntropyBackwardOp>)
    l.call("mpcrt_pointwise_loss_backward_" + t,
           {l.i32(kind), l.ptr(op.getGrad()), l.ptr(op.getInput()),
            l.ptr(op.getTarget()), out, l.i64(input.getNumElements()),
            l.i32(mean)});
  else
    l.call("mpcrt_pointwise_loss_" + t,
           {l.i32(kind), l.ptr(op.getInput()), l.ptr(op.getTarget()), out,
            l.i64(input.getNumElements()), l.i32(mean)});
  return success();
}

} // namespace

std::optional<LogicalResult> lowering::lowerNeuralNet(Operation *op,
                                                      Lowering &l) {
  return llvm::TypeSwitch<Operation *, std::optional<LogicalResult>>(op)
      .Case([&](MaxPool2DOp op) { return pool(op, "max_pool2d", 0, l); })
      .Case([&](AvgPool2DOp op) {
        return pool(op, "avg_pool2d", op.getCountIncludePad(), l);
      })
      .Case([&](MaxPool2DBackwardOp op) {
        if (op.getAddend())
          return maxPoolBackwardAdd(op, l);
        return poolBackward(op, "max_pool2d_backward", 0, true, l);
      })
      .Case([&](AvgPool2DBackwardOp op) {
        return poolBackward(op, "avg_pool2d_backward", op.getCountIncludePad(),
                            false, l);
      })
      .Case([&](UpsampleNearest2DOp op) {
        return upsample(op, false, op.getScale(), l);
      })
      .Case([&](UpsampleNearest2DBackwardOp op) {
        return upsample(op, true, op.getScale(), l);
      })
      .Case([&](EmbeddingOp op) { return embedding(op, l); })
      .Case([&](EmbeddingBackwardOp op) { return embeddingBackward(op, l); })
      .Case([&](DropoutOp op) { return dropout(op, l); })
      .Case([&](DropoutAddOp op) { return dropoutAdd(op, l); })
      .Case([&](AttentionOp op) { return attention(op, l); })
      .Case([&](AttentionBackwardOp op) { return attentionBackward(op, l); })
      .Case([&](DropoutBackwardOp op) { return dropoutBackward(op, l); })
      .Case([&](CrossEntropyOp op) { return crossEntropy(op, false, l); })
      .Case([&](AccuracyOp op) { return accuracy(op, l); })
      .Case(
          [&](CrossEntropyBackwardOp op) { return crossEntropy(op, true, l); })
      .Case([&](MSEOp op) { return pointwiseLoss(op, 0, l); })
      .Case([&](MSEBackwardOp op) { return pointwiseLoss(op, 0, l); })
      .Case([&](BCEWithLogitsOp op) { return pointwiseLoss(op, 1, l); })
      .Case([&](BCEWithLogitsBackwardOp op) { return pointwiseLoss(op, 1, l); })
      .Case([&](BinaryCrossEntropyOp op) { return pointwiseLoss(op, 2, l); })
      .Case([&](BinaryCrossEntropyBackwardOp op) {
        return pointwiseLoss(op, 2, l);
      })
      .Default([](Operation *) { return std::nullopt; });
}
