//===- DataMovement.cpp - constants, reshape, transpose, slices, concat ---===//

#include "../StateLayout.h"
#include "../TypeUtils.h"
#include "../Views.h"
#include "Lowering.h"

#include "mpc/Dialect/MPC/IR/MPCOps.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::mpc;
using namespace mlir::mpc::lowering;

namespace {

int32_t elementBytes(RankedTensorType type) {
  return std::max<int32_t>(1, type.getElementTypeBitWidth() / 8);
}

/// A rank-0 copy is a one-element copy.
void stridedCopy(Lowering &l, Value in, int64_t offset,
                 SmallVector<int64_t> inStrides, Value out,
                 SmallVector<int64_t> shape, int32_t bytes) {
  if (shape.empty()) {
    shape = {1};
    inStrides = {1};
  }
  l.call("mpcrt_strided_copy",
         {in, l.i64(offset), l.i64Array(inStrides), out, l.i64Array(shape),
          l.i32(shape.size()), l.i32(bytes)});
}

void stridedScatter(Lowering &l, Value in, Value out, int64_t offset,
                    SmallVector<int64_t> outStrides, SmallVector<int64_t> shape,
                    int32_t bytes) {
  if (shape.empty()) {
    shape = {1};
    outStrides = {1};
  }
  l.call("mpcrt_strided_scatter",
         {in, out, l.i64(offset), l.i64Array(outStrides), l.i64Array(shape),
          l.i32(shape.size()), l.i32(bytes)});
}

LogicalResult constant(ConstantOp op, Lowering &l) {
  auto dense = dyn_cast<DenseElementsAttr>(op.getValue());
  if (!dense)
    return op.emitOpError("is lowered for dense element values only");
  auto type = cast<RankedTensorType>(op.getType());
  Type element = type.getElementType();
  // Zeros only stored to globals: the stores zero the globals in place.
  if (isStoredZero(op))
    return success();
  // Large float splats are filled in the state at initialisation.
  auto splat = l.symbols.stateSplats.find(dense);
  if (splat != l.symbols.stateSplats.end()) {
    l.bind(op.getResult(), l.offset(l.state, splat->second));
    return success();
  }
  // Other splats are stored expanded (kernels read every element): only
  // small ones, or integer ones, which must fit the limit.
  if (dense.isSplat() && byteSize(type) > kMaxExpandedSplatBytes)
    return op.emitOpError("is a splat of ")
           << byteSize(type) << " bytes of " << element
           << "; integer splats are stored expanded, at most "
           << kMaxExpandedSplatBytes << " bytes";
  // LLVM arrays are one-dimensional: the data goes flat.
  auto [data, flatElement] = flatConstant(dense, type);
  // Splats are stored expanded: kernels read every element.
  if (dense.isSplat())
    data = DenseElementsAttr::get(
        RankedTensorType::get({type.getNumElements()}, flatElement),
        SmallVector<Attribute>(
            type.getNumElements(),
            cast<DenseElementsAttr>(data).getSplatValue<Attribute>()));
  int64_t count =
      std::max<int64_t>(1, cast<DenseElementsAttr>(data).getNumElements());
  StringRef symbol = l.symbols.constant(
      "__mpc_const_", data, LLVM::LLVMArrayType::get(flatElement, count));
  if (l.symbols.constantsInState) {
    int64_t bytes = count * ((flatElement.getIntOrFloatBitWidth() + 7) / 8);
    l.bind(op.getResult(),
           l.offset(l.state, l.symbols.stateConstant(symbol, bytes)));
    return success();
  }
  l.bind(op.getResult(), l.addressOf(symbol));
  return success();
}

/// The arena offset the plan gave `v`, if any.
std::optional<int64_t> plannedOffset(Value v) {
  auto result = dyn_cast<OpResult>(v);
  if (!result)
    return std::nullopt;
  auto offsets =
      result.getOwner()->getAttrOfType<DenseI64ArrayAttr>("mpc.offsets");
  if (!offsets || result.getResultNumber() >= offsets.size() ||
      offsets[result.getResultNumber()] < 0)
    return std::nullopt;
  return offsets[result.getResultNumber()];
}

/// Whether the plan gave `op`'s one result its operand `input`'s buffer,
/// the same offset (two live buffers never share one).
bool sharesBufferOf(Operation *op, Value input) {
  auto offsets = op->getAttrOfType<DenseI64ArrayAttr>("mpc.offsets");
  std::optional<int64_t> in = plannedOffset(input);
  return offsets && offsets.size() == 1 && in && *in == offsets[0];
}

/// A reshape is a view where the plan gave it its operand's buffer, and
/// costs nothing; otherwise (an operand outside the arena: an argument, a
/// global) it copies. A reshape of a slice's view is read where it lies
/// by its readers, as the view is (viewOf; the slice checked them).
LogicalResult reshape(ReshapeOp op, Lowering &l) {
  if (sharesBufferOf(op, op.getInput())) {
    l.bind(op.getResult(), l.ptr(op.getInput()));
    return success();
  }
  Value out = l.result(op, 0);
  if (!out)
    return failure();
  l.copy(out, l.ptr(op.getInput()), op.getType());
  return success();
}

/// `window`, the concatenation's window `result` may be written into,
/// where the plan gave `result` the concatenation's buffer (the same
/// offset); std::nullopt otherwise.
template <typename Window>
std::optional<Window> plannedInWindow(std::optional<Window> window,
                                      Value result) {
  std::optional<int64_t> at = plannedOffset(result);
  if (!window || !at || *at != plannedOffset(window->concat.getResult()))
    return std::nullopt;
  return window;
}

/// Where the plan wrote `transpose` into its concatenation's window (the
/// concatenation's buffer, Views.h): the window's scatter.
std::optional<ConcatWindow> writtenInConcat(TransposeOp op) {
  return plannedInWindow(concatWindowOf(op), op.getResult());
}

/// Whether `v` is a reshape the plan made a view without strides of its
/// own (Views.h regroupedByTransposes): its input's view, and its shape.
std::optional<std::pair<Value, View>> regroupedView(Value v) {
  auto reshape = v.getDefiningOp<ReshapeOp>();
  if (!reshape || !sharesBufferOf(reshape, reshape.getInput()) || viewOf(v))
    return std::nullopt;
  return viewOf(reshape.getInput());
}

LogicalResult transpose(TransposeOp op, Lowering &l) {
  auto in = tensorType(op.getInput());
  // Written into its concatenation: the input scattered into the window,
  // each of its dimensions at the strides of the result's it becomes.
  if (std::optional<ConcatWindow> window = writtenInConcat(op)) {
    if (viewOf(op.getInput()) || regroupedView(op.getInput()))
      return op.emitOpError("is written into its concatenation's buffer but "
                            "reads a view; run --mpc-plan-memory again after "
                            "changing the graph");
    Value whole = l.result(window->concat, 0);
    if (!whole)
      return failure();
    l.bind(op.getResult(), whole);
    stridedScatter(l, l.ptr(op.getInput()), whole, window->offset,
                   window->strides, window->shape, elementBytes(in));
    return success();
  }
  Value out = l.result(op, 0);
  if (!out)
    return failure();
  // A reshape of a view whose strides do not compose: the view read as
  // one loop over the result (the reshape's and the view's shapes split
  // into their common runs).
  if (std::optional<std::pair<Value, View>> inner =
          regroupedView(op.getInput())) {
    Value reshaped = op.getInput().getDefiningOp<ReshapeOp>().getInput();
    std::optional<std::pair<SmallVector<int64_t>, SmallVector<int64_t>>> loop =
        regroupedLoop(tensorType(reshaped).getShape(), inner->second.strides,
                      in.getShape(), op.getPermutation());
    if (!loop)
      return op.emitOpError("reads a reshaped view it cannot take as one "
                            "loop; run --mpc-plan-memory again after "
                            "changing the graph");
    stridedCopy(
        l,
        l.offset(l.ptr(inner->first), inner->second.offset * elementBytes(in)),
        0, loop->second, out, loop->first, elementBytes(in));
    return success();
  }
  auto [pointer, own] = stridedOperand(op.getInput(), l);
  SmallVector<int64_t> permuted;
  for (int64_t d : op.getPermutation())
    permuted.push_back(own[d]);
  stridedCopy(l, pointer, 0, permuted, out,
              SmallVector<int64_t>(op.getType().getShape()), elementBytes(in));
  return success();
}

/// A slice view is read where it stands (its readers take its window:
/// stridedOperand); otherwise the window is copied into its buffer, read
/// through its input's view where that is one.
LogicalResult slice(SliceOp op, Lowering &l) {
  if (std::optional<std::pair<Value, View>> view = viewOf(op.getResult())) {
    // Planned as a view but read otherwise since (here or through a
    // reshape of it): a copy would overwrite its own operand.
    if (!readersTakeStrides(op.getResult(), view->second.strides))
      return op.emitOpError(
          "shares its operand's buffer (a view) but is read by an op that "
          "takes no strides; run --mpc-plan-memory again after changing "
          "the graph");
    l.bind(op.getResult(), l.ptr(op.getInput()));
    return success();
  }
  Value out = l.result(op, 0);
  if (!out)
    return failure();
  auto in = tensorType(op.getInput());
  auto [pointer, own] = stridedOperand(op.getInput(), l);
  View w = windowOf(op, View{0, own});
  stridedCopy(l, pointer, w.offset, w.strides, out,
              SmallVector<int64_t>(op.getType().getShape()), elementBytes(in));
  return success();
}

LogicalResult sliceBackward(SliceBackwardOp op, Lowering &l) {
  Value out = l.result(op, 0);
  if (!out)
    return failure();
  auto type = op.getType();
  auto grad = tensorType(op.getGrad());
  View w =
      windowOf(op.getOffsets(), op.getStrides(), denseView(type.getShape()));
  l.call("mpcrt_zero", {out, l.i64(bytesOf(type))});
  stridedScatter(l, l.ptr(op.getGrad()), out, w.offset, w.strides,
                 SmallVector<int64_t>(grad.getShape()), elementBytes(grad));
  return success();
}

LogicalResult broadcastTo(BroadcastToOp op, Lowering &l) {
  Value out = l.result(op, 0);
  if (!out)
    return failure();
  auto in = tensorType(op.getInput());
  ArrayRef<int64_t> shape = op.getType().getShape();
  auto [pointer, own] = stridedOperand(op.getInput(), l);
  SmallVector<int64_t> s(shape.size(), 0);
  size_t lead = shape.size() - in.getRank();
  for (int64_t d = 0; d < in.getRank(); ++d)
    s[lead + d] = in.getDimSize(d) == 1 ? 0 : own[d];
  stridedCopy(l, pointer, 0, s, out, SmallVector<int64_t>(shape),
              elementBytes(in));
  return success();
}

LogicalResult concat(ConcatOp op, Lowering &l) {
  Value out = l.result(op, 0);
  if (!out)
    return failure();
  auto type = op.getType();
  int64_t axis = static_cast<int64_t>(op.getAxis());
  if (axis < 0)
    axis += type.getRank();
  SmallVector<int64_t> dense = strides(type.getShape());
  int64_t position = 0;
  for (Value input : op.getInputs()) {
    auto in = tensorType(input);
    // A transpose or a heads product (perhaps through reshapes) the plan
    // wrote into its window already.
    Value piece = input;
    while (auto reshape = piece.getDefiningOp<ReshapeOp>())
      piece = reshape.getInput();
    auto transpose = piece.getDefiningOp<TransposeOp>();
    auto heads = piece.getDefiningOp<HeadsMatmulOp>();
    if (!(transpose && writtenInConcat(transpose)) &&
        !(heads && headsWrittenInConcat(heads)))
      stridedScatter(l, l.ptr(input), out, position * dense[axis], dense,
                     SmallVector<int64_t>(in.getShape()), elementBytes(in));
    position += in.getDimSize(axis);
  }
  return success();
}

} // namespace

std::optional<HeadsWindow> lowering::headsWrittenInConcat(HeadsMatmulOp op) {
  return plannedInWindow(headsWindowOf(op), op.getResult());
}

std::optional<std::pair<Value, View>> lowering::viewOf(Value v) {
  if (auto slice = v.getDefiningOp<SliceOp>()) {
    if (!sharesBufferOf(slice, slice.getInput()) ||
        tensorType(v).getNumElements() == 0)
      return std::nullopt;
    std::optional<std::pair<Value, View>> inner = viewOf(slice.getInput());
    if (!inner)
      inner = {slice.getInput(),
               denseView(tensorType(slice.getInput()).getShape())};
    return std::make_pair(inner->first, windowOf(slice, inner->second));
  }
  if (auto reshape = v.getDefiningOp<ReshapeOp>()) {
    if (!sharesBufferOf(reshape, reshape.getInput()))
      return std::nullopt;
    std::optional<std::pair<Value, View>> inner = viewOf(reshape.getInput());
    if (!inner)
      return std::nullopt;
    std::optional<SmallVector<int64_t>> s =
        reshapedStrides(tensorType(reshape.getInput()).getShape(),
                        inner->second.strides, tensorType(v).getShape());
    if (!s)
      return std::nullopt;
    return std::make_pair(inner->first, View{inner->second.offset, *s});
  }
  return std::nullopt;
}

std::pair<Value, SmallVector<int64_t>> lowering::stridedOperand(Value v,
                                                                Lowering &l) {
  auto type = tensorType(v);
  std::optional<std::pair<Value, View>> view = viewOf(v);
  if (!view)
    return {l.ptr(v), strides(type.getShape())};
  return {
      l.offset(l.ptr(view->first), view->second.offset * elementBytes(type)),
      view->second.strides};
}

std::optional<LogicalResult> lowering::lowerDataMovement(Operation *op,
                                                         Lowering &l) {
  return llvm::TypeSwitch<Operation *, std::optional<LogicalResult>>(op)
      .Case([&](ConstantOp op) { return constant(op, l); })
      .Case([&](ReshapeOp op) { return reshape(op, l); })
      .Case([&](TransposeOp op) { return transpose(op, l); })
      .Case([&](SliceOp op) { return slice(op, l); })
      .Case([&](SliceBackwardOp op) { return sliceBackward(op, l); })
      .Case([&](BroadcastToOp op) { return broadcastTo(op, l); })
      .Case([&](ConcatOp op) { return concat(op, l); })
      .Default([](Operation *) { return std::nullopt; });
}
