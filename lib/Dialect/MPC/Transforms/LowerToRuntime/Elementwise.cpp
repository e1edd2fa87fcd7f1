//===- Elementwise.cpp - unary, binary, activation gradients, casts -------===//

#include "Lowering.h"

#include "mpc/Dialect/MPC/IR/MPCOps.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::mpc;
using namespace mlir::mpc::lowering;

namespace {

// The enums of mpcrt.h.
enum Unary {
  Neg,
  Exp,
  Log,
  Sqrt,
  Rsqrt,
  Tanh,
  Sigmoid,
  Relu,
  Gelu,
  GeluTanh,
  Sin,
  Cos
};
enum Binary { Add, Sub, Mul, Div, Pow };

LogicalResult unary(Operation *op, int32_t kind, Lowering &l) {
  Value in = op->getOperand(0);
  Value out = l.result(op, 0);
  if (!out)
    return failure();
  auto type = tensorType(in);
  l.call("mpcrt_unary_" + suffix(type.getElementType()),
         {l.i32(kind), l.ptr(in), out, l.i64(type.getNumElements())});
  return success();
}

LogicalResult unaryGrad(Operation *op, int32_t kind, Lowering &l) {
  Value grad = op->getOperand(0), saved = op->getOperand(1);
  Value out = l.result(op, 0);
  if (!out)
    return failure();
  auto type = tensorType(grad);
  l.call("mpcrt_unary_grad_" + suffix(type.getElementType()),
         {l.i32(kind), l.ptr(grad), l.ptr(saved), out,
          l.i64(type.getNumElements())});
  return success();
}

/// Strides of `operand`, its elements `own[d]` apart along dimension d,
/// broadcast to `shape` (numpy rules): 0 along the dimensions it repeats.
SmallVector<int64_t> broadcastStrides(ArrayRef<int64_t> operand,
                                      ArrayRef<int64_t> own,
                                      ArrayRef<int64_t> shape) {
  SmallVector<int64_t> result(shape.size(), 0);
  size_t lead = shape.size() - operand.size();
  for (size_t d = 0; d < operand.size(); ++d)
    result[lead + d] = operand[d] == 1 && shape[lead + d] != 1 ? 0 : own[d];
  return result;
}

/// The arguments of a broadcasting kernel: each operand's pointer and its
/// strides over the result's shape, then that shape and its rank (a scalar
/// result is a one-element vector).
struct BroadcastArgs {
  SmallVector<Value> operands;
  Value shape, rank;
};

BroadcastArgs broadcastArgs(ValueRange operands, Value result, Lowering &l) {
  SmallVector<int64_t> shape(tensorType(result).getShape());
  BroadcastArgs args;
  for (Value v : operands) {
    auto type = tensorType(v);
    // A view's elements where they lie in its buffer (Views.h).
    auto [pointer, own] = stridedOperand(v, l);
    SmallVector<int64_t> s =
        shape.empty() ? SmallVector<int64_t>{1}
                      : broadcastStrides(type.getShape(), own, shape);
    args.operands.append({pointer, l.i64Array(s)});
  }
  if (shape.empty())
    shape = {1};
  args.shape = l.i64Array(shape);
  args.rank = l.i32(shape.size());
  return args;
}

LogicalResult binary(Operation *op, int32_t kind, Lowering &l) {
  Value out = l.result(op, 0);
  if (!out)
    return failure();
  SmallVector<Value> args{l.i32(kind)};
  BroadcastArgs b = broadcastArgs(op->getOperands(), op->getResult(0), l);
  args.append(b.operands);
  args.append({out, b.shape, b.rank});
  l.call("mpcrt_binary_" +
             suffix(tensorType(op->getResult(0)).getElementType()),
         args);
  return success();
}

/// The element code of mpcrt_compare.
int32_t elementCode(Type element) {
  if (isa<FloatType>(element))
    return dtypeCode(element);
  if (element.isInteger(1))
    return 6;                           // MPCRT_ELEMENT_BOOL
  return element.isInteger(64) ? 5 : 4; // MPCRT_ELEMENT_I64, I32
}

LogicalResult compare(CompareOp op, Lowering &l) {
  Value out = l.result(op, 0);
  if (!out)
    return failure();
  int32_t predicate = llvm::StringSwitch<int32_t>(op.getPredicate())
                          .Case("eq", 0)
                          .Case("ne", 1)
                          .Case("lt", 2)
                          .Case("le", 3)
                          .Case("gt", 4)
                          .Default(5);
  SmallVector<Value> args{
      l.i32(predicate),
      l.i32(elementCode(tensorType(op.getLhs()).getElementType()))};
  BroadcastArgs b = broadcastArgs(op->getOperands(), op.getResult(), l);
  args.append(b.operands);
  args.append({out, b.shape, b.rank});
  l.call("mpcrt_compare", args);
  return success();
}

LogicalResult where(WhereOp op, Lowering &l) {
  Value out = l.result(op, 0);
  if (!out)
    return failure();
  Type element = tensorType(op.getResult()).getElementType();
  BroadcastArgs b = broadcastArgs(op->getOperands(), op.getResult(), l);
  SmallVector<Value> args{
      l.i32(static_cast<int32_t>(bytesOf(RankedTensorType::get({}, element))))};
  args.append(b.operands);
  args.append({out, b.shape, b.rank});
  l.call("mpcrt_where", args);
  return success();
}

LogicalResult castOp(CastOp op, Lowering &l) {
  Value out = l.result(op, 0);
  if (!out)
    return failure();
  auto in = tensorType(op.getInput());
  if (!isa<FloatType>(in.getElementType())) { // i32
    l.call("mpcrt_cast_i32", {l.ptr(op.getInput()),
                              l.i32(dtypeCode(op.getType().getElementType())),
                              out, l.i64(in.getNumElements())});
    return success();
  }
  l.call("mpcrt_cast",
         {l.i32(dtypeCode(in.getElementType())), l.ptr(op.getInput()),
          l.i32(dtypeCode(op.getType().getElementType())), out,
          l.i64(in.getNumElements())});
  return success();
}

} // namespace

std::optional<LogicalResult> lowering::lowerElementwise(Operation *op,
                                                        Lowering &l) {
  return llvm::TypeSwitch<Operation *, std::optional<LogicalResult>>(op)
      .Case([&](NegOp op) { return unary(op, Neg, l); })
      .Case([&](ExpOp op) { return unary(op, Exp, l); })
      .Case([&](LogOp op) { return unary(op, Log, l); })
      .Case([&](SqrtOp op) { return unary(op, Sqrt, l); })
      .Case([&](RsqrtOp op) { return unary(op, Rsqrt, l); })
      .Case([&](TanhOp op) { return unary(op, Tanh, l); })
      .Case([&](SigmoidOp op) { return unary(op, Sigmoid, l); })
      .Case([&](ReluOp op) { return unary(op, Relu, l); })
      .Case([&](SinOp op) { return unary(op, Sin, l); })
      .Case([&](CosOp op) { return unary(op, Cos, l); })
      .Case([&](GeluOp op) {
        return unary(op, op.getApproximate() ? GeluTanh : Gelu, l);
      })
      .Case([&](ReluGradOp op) { return unaryGrad(op, Relu, l); })
      .Case([&](GeluGradOp op) {
        return unaryGrad(op, op.getApproximate() ? GeluTanh : Gelu, l);
      })
      .Case([&](TanhGradOp op) { return unaryGrad(op, Tanh, l); })
      .Case([&](SigmoidGradOp op) { return unaryGrad(op, Sigmoid, l); })
      .Case([&](CompareOp op) { return compare(op, l); })
      .Case([&](WhereOp op) { return where(op, l); })
      .Case([&](AddOp op) { return binary(op, Add, l); })
      .Case([&](SubOp op) { return binary(op, Sub, l); })
      .Case([&](MulOp op) { return binary(op, Mul, l); })
      .Case([&](DivOp op) { return binary(op, Div, l); })
      .Case([&](PowOp op) { return binary(op, Pow, l); })
      .Case([&](ScaleLossOp op) { return binary(op, Mul, l); })
      .Case([&](CastOp op) { return castOp(op, l); })
      .Default([](Operation *) { return std::nullopt; });
}
