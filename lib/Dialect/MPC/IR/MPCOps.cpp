//===- MPCOps.cpp - mpc op verifiers, type inference and folds ------------===//
//
// Shape checks of ops with inferred result types live in `inferReturnTypes`:
// it runs both when the custom syntax is parsed and when the op is verified,
// so a bad op gets the same located message either way. It must not assume
// the ODS type constraints have run.
//
//===----------------------------------------------------------------------===//

#include "mpc/Dialect/MPC/IR/MPCOps.h"

#include "mlir/Dialect/Traits.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace mlir;
using namespace mlir::mpc;

namespace {

/// Emits "'<op>' op <message>" at an optional location.
class Diag {
public:
  Diag(std::optional<Location> loc, StringRef opName)
      : loc(loc), opName(opName) {}

  template <typename... Args> LogicalResult operator()(Args &&...args) const {
    return emitOptionalError(loc, "'", opName, "' op ",
                             std::forward<Args>(args)...);
  }

private:
  std::optional<Location> loc;
  StringRef opName;
};

} // namespace

static std::string shapeStr(ArrayRef<int64_t> shape) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "[";
  llvm::interleaveComma(shape, os);
  os << "]";
  return s;
}

/// The operand as a statically shaped ranked tensor, or an error.
static FailureOr<RankedTensorType> staticTensor(Type type, StringRef what,
                                                const Diag &diag) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor) {
    (void)diag("expects ", what, " to be a ranked tensor, got ", type);
    return failure();
  }
  if (!tensor.hasStaticShape()) {
    (void)diag("expects ", what,
               " to have a static shape (dynamic shapes are not supported), "
               "got ",
               type);
    return failure();
  }
  return tensor;
}

static FailureOr<RankedTensorType> staticTensor(Value value, StringRef what,
                                                const Diag &diag) {
  return staticTensor(value.getType(), what, diag);
}

static LogicalResult checkRank(RankedTensorType type, StringRef what,
                               int64_t rank, const Diag &diag) {
  if (type.getRank() != rank)
    return diag("expects ", what, " of rank ", rank, ", got ", type);
  return success();
}

static LogicalResult checkSameElementType(RankedTensorType a, StringRef aName,
                                          RankedTensorType b, StringRef bName,
                                          const Diag &diag) {
  if (a.getElementType() != b.getElementType())
    return diag("expects ", aName, " and ", bName,
                " of the same element type, got ", a.getElementType(), " and ",
                b.getElementType());
  return success();
}

/// `axis` in [-rank, rank) made non-negative, or an error.
static FailureOr<int64_t> normalizeAxis(int64_t axis, int64_t rank,
                                        const Diag &diag) {
  if (axis < -rank || axis >= rank) {
    (void)diag("expects axis in [", -rank, ", ", rank, "), got ", axis);
    return failure();
  }
  return axis < 0 ? axis + rank : axis;
}

static LogicalResult checkPair(ArrayRef<int64_t> pair, StringRef name,
                               int64_t min, const Diag &diag) {
  if (pair.size() != 2)
    return diag("expects '", name, "' to have 2 elements [h, w], got ",
                pair.size());
  if (pair[0] < min || pair[1] < min)
    return diag("expects '", name, "' elements >= ", min, ", got ",
                shapeStr(pair));
  return success();
}

static LogicalResult checkFraction(double value, StringRef name,
                                   bool closedHigh, const Diag &diag) {
  if (!(value >= 0.0) || (closedHigh ? value > 1.0 : value >= 1.0)) // NaN too
    return diag("expects ", name, " in [0, 1", closedHigh ? "]" : ")", ", got ",
                value);
  return success();
}

static LogicalResult checkDropoutP(double p, const Diag &diag) {
  return checkFraction(p, "dropout_p", /*closedHigh=*/false, diag);
}

//===----------------------------------------------------------------------===//
// ConstantOp, CastOp
//===----------------------------------------------------------------------===//

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

/// Whether every value of `from` is exactly representable in `to`.
static bool isExactWidening(Type from, Type to) {
  auto f = dyn_cast<FloatType>(from), t = dyn_cast<FloatType>(to);
  if (!f || !t)
    return false;
  const llvm::fltSemantics &a = f.getFloatSemantics();
  const llvm::fltSemantics &b = t.getFloatSemantics();
  // More significand bits, a larger exponent range, and a smallest
  // subnormal at least as small.
  return APFloat::semanticsPrecision(b) >= APFloat::semanticsPrecision(a) &&
         APFloat::semanticsMaxExponent(b) >= APFloat::semanticsMaxExponent(a) &&
         APFloat::semanticsMinExponent(b) -
                 static_cast<int>(APFloat::semanticsPrecision(b)) <=
             APFloat::semanticsMinExponent(a) -
                 static_cast<int>(APFloat::semanticsPrecision(a));
}

OpFoldResult CastOp::fold(FoldAdaptor adaptor) {
  RankedTensorType type = getType();
  if (getInput().getType() == type)
    return getInput();
  // Integer constants convert at compile time as the runtime converts
  // them: to f32 (nearest even), then to the result type.
  if (auto ints = dyn_cast_or_null<DenseIntElementsAttr>(adaptor.getInput())) {
    const llvm::fltSemantics &semantics =
        cast<FloatType>(type.getElementType()).getFloatSemantics();
    return ints.mapValues(type.getElementType(), [&](const APInt &value) {
      APFloat f(static_cast<float>(value.getSExtValue()));
      bool lost;
      f.convert(semantics, APFloat::rmNearestTiesToEven, &lost);
      return f.bitcastToAPInt();
    });
  }
  // Constants convert at compile time, rounding to nearest even.
  if (auto dense = dyn_cast_or_null<DenseFPElementsAttr>(adaptor.getInput())) {
    const llvm::fltSemantics &semantics =
        cast<FloatType>(type.getElementType()).getFloatSemantics();
    return dense.mapValues(type.getElementType(), [&](const APFloat &value) {
      APFloat rounded = value;
      bool lost;
      rounded.convert(semantics, APFloat::rmNearestTiesToEven, &lost);
      return rounded.bitcastToAPInt();
    });
  }
  // cast(cast(x)) is cast(x) when the inner cast only widens: f16 -> f32 ->
  // f16 is x itself. A narrowing inner cast rounds, so f32 -> f16 -> f32
  // stays.
  if (auto inner = getInput().getDefiningOp<CastOp>()) {
    Value source = inner.getInput();
    if (!isExactWidening(
            cast<RankedTensorType>(source.getType()).getElementType(),
            inner.getType().getElementType()))
      return {};
    if (source.getType() == type)
      return source;
    getInputMutable().assign(source);
    return getResult();
  }
  return {};
}

namespace {
/// Moves a cast below an op that selects elements (slice, max pooling, max
/// reduction): the op's result is smaller, so the cast converts less. Exact:
/// rounding is monotone and these ops only pick elements.
template <typename OpTy>
struct CastBelowSelection : public OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    auto castOp = op->getOperand(0).template getDefiningOp<CastOp>();
    if (!castOp)
      return rewriter.notifyMatchFailure(op, "input is not a cast");
    if (!isa<FloatType>(castOp.getInput().getType().getElementType()))
      return rewriter.notifyMatchFailure(op, "the cast is from integers");
    auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
    if (resultType.getNumElements() >= castOp.getType().getNumElements())
      return rewriter.notifyMatchFailure(op, "result is not smaller");
    Type source = castOp.getInput().getType().getElementType();
    Operation *moved = rewriter.clone(*op);
    moved->setOperand(0, castOp.getInput());
    moved->getResult(0).setType(resultType.clone(source));
    rewriter.replaceOpWithNewOp<CastOp>(op, resultType, moved->getResult(0));
    return success();
  }
};

/// Moves a cast above an op that replicates elements (broadcast,
/// upsampling): its input is smaller, so the cast converts less. Also above
/// a reshape (the same elements): the cast then meets the other casts of
/// the reshaped value, and CSE keeps one (a linear layer's output gradient
/// is cast once for both of its products, and its f32 original dies
/// after the first).
template <typename OpTy>
struct CastAboveReplication : public OpRewritePattern<CastOp> {
  using OpRewritePattern<CastOp>::OpRewritePattern;
  LogicalResult matchAndRewrite(CastOp castOp,
                                PatternRewriter &rewriter) const override {
    auto op = castOp.getInput().getDefiningOp<OpTy>();
    if (!op || !op->getResult(0).hasOneUse())
      return rewriter.notifyMatchFailure(castOp, "input is not a lone " +
                                                     OpTy::getOperationName());
    auto input = cast<RankedTensorType>(op->getOperand(0).getType());
    Type target = castOp.getType().getElementType();
    Value converted = CastOp::create(rewriter, castOp.getLoc(),
                                     input.clone(target), op->getOperand(0));
    Operation *moved = rewriter.clone(*op);
    moved->setOperand(0, converted);
    moved->getResult(0).setType(castOp.getType());
    rewriter.replaceOp(castOp, moved->getResult(0));
    return success();
  }
};
} // namespace

void CastOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                         MLIRContext *context) {
  patterns
      .add<CastBelowSelection<SliceOp>, CastBelowSelection<MaxPool2DOp>,
           CastBelowSelection<ReduceMaxOp>, CastAboveReplication<BroadcastToOp>,
           CastAboveReplication<UpsampleNearest2DOp>,
           CastAboveReplication<ReshapeOp>>(context);
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

static LogicalResult inferBroadcast(Value lhs, Value rhs, const Diag &diag,
                                    SmallVectorImpl<Type> &results) {
  auto l = staticTensor(lhs, "lhs", diag);
  auto r = staticTensor(rhs, "rhs", diag);
  if (failed(l) || failed(r) ||
      failed(checkSameElementType(*l, "lhs", *r, "rhs", diag)))
    return failure();
  SmallVector<int64_t> shape;
  if (!OpTrait::util::getBroadcastedShape(l->getShape(), r->getShape(), shape))
    return diag("expects broadcast-compatible shapes, got ",
                shapeStr(l->getShape()), " and ", shapeStr(r->getShape()));
  results.push_back(RankedTensorType::get(shape, l->getElementType()));
  return success();
}

#define MPC_BROADCAST_INFER(OP)                                                \
  LogicalResult OP::inferReturnTypes(                                          \
      MLIRContext *, std::optional<Location> loc, Adaptor adaptor,             \
      SmallVectorImpl<Type> &results) {                                        \
    return inferBroadcast(adaptor.getLhs(), adaptor.getRhs(),                  \
                          Diag(loc, getOperationName()), results);             \
  }
MPC_BROADCAST_INFER(AddOp)
MPC_BROADCAST_INFER(SubOp)
MPC_BROADCAST_INFER(MulOp)
MPC_BROADCAST_INFER(DivOp)
MPC_BROADCAST_INFER(PowOp)
#undef MPC_BROADCAST_INFER

LogicalResult CompareOp::inferReturnTypes(MLIRContext *context,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &results) {
  Diag diag(loc, getOperationName());
  StringRef p = adaptor.getPredicate();
  if (p != "eq" && p != "ne" && p != "lt" && p != "le" && p != "gt" &&
      p != "ge")
    return diag("unknown predicate '", p,
                "' (expected eq, ne, lt, le, gt or ge)");
  if (failed(inferBroadcast(adaptor.getLhs(), adaptor.getRhs(), diag, results)))
    return failure();
  results[0] =
      cast<RankedTensorType>(results[0]).clone(IntegerType::get(context, 1));
  return success();
}

LogicalResult WhereOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &results) {
  Diag diag(loc, getOperationName());
  auto c = staticTensor(adaptor.getCondition(), "condition", diag);
  if (failed(c) ||
      failed(inferBroadcast(adaptor.getLhs(), adaptor.getRhs(), diag, results)))
    return failure();
  auto values = cast<RankedTensorType>(results[0]);
  SmallVector<int64_t> shape;
  if (!OpTrait::util::getBroadcastedShape(values.getShape(), c->getShape(),
                                          shape))
    return diag("expects a condition broadcast-compatible with the values, "
                "got ",
                shapeStr(c->getShape()), " and ", shapeStr(values.getShape()));
  results[0] = RankedTensorType::get(shape, values.getElementType());
  return success();
}

//===----------------------------------------------------------------------===//
// MatmulOp
//===----------------------------------------------------------------------===//

/// The result shape of op(a) x op(b), or an error.
static FailureOr<SmallVector<int64_t>> matmulShape(Value aValue, Value bValue,
                                                   bool transA, bool transB,
                                                   const Diag &diag) {
  auto a = staticTensor(aValue, "a", diag);
  auto b = staticTensor(bValue, "b", diag);
  if (failed(a) || failed(b) ||
      failed(checkSameElementType(*a, "a", *b, "b", diag)))
    return failure();
  if (a->getRank() < 2 || b->getRank() < 2) {
    (void)diag("expects operands of rank >= 2, got ", *a, " and ", *b);
    return failure();
  }
  ArrayRef<int64_t> as = a->getShape(), bs = b->getShape();
  int64_t ra = as.size(), rb = bs.size();
  int64_t m = as[ra - 2], ka = as[ra - 1];
  if (transA)
    std::swap(m, ka);
  int64_t kb = bs[rb - 2], n = bs[rb - 1];
  if (transB)
    std::swap(kb, n);
  if (ka != kb) {
    (void)diag("expects equal contracting dimensions, got K = ", ka,
               " for a and ", kb, " for b");
    return failure();
  }
  SmallVector<int64_t> shape;
  if (!OpTrait::util::getBroadcastedShape(as.drop_back(2), bs.drop_back(2),
                                          shape)) {
    (void)diag("expects broadcast-compatible batch dimensions, got ",
               shapeStr(as.drop_back(2)), " and ", shapeStr(bs.drop_back(2)));
    return failure();
  }
  shape.append({m, n});
  return shape;
}

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  Diag diag(loc, getOperationName());
  auto shape =
      matmulShape(adaptor.getA(), adaptor.getB(), adaptor.getTransposeA(),
                  adaptor.getTransposeB(), diag);
  if (failed(shape))
    return failure();
  results.push_back(RankedTensorType::get(
      *shape,
      cast<RankedTensorType>(adaptor.getA().getType()).getElementType()));
  return success();
}

/// The product of an op with a GEMM epilogue: a result of the product's
/// shape, of the operands' element type or f32 for f16/bf16 operands.
static FailureOr<SmallVector<int64_t>>
epilogueProductShape(Value a, Value b, bool transA, bool transB,
                     RankedTensorType result, const Diag &diag) {
  auto shape = matmulShape(a, b, transA, transB, diag);
  if (failed(shape))
    return failure();
  if (result.getShape() != ArrayRef<int64_t>(*shape)) {
    (void)diag("expects a result of the product's shape ", shapeStr(*shape),
               ", got ", shapeStr(result.getShape()));
    return failure();
  }
  Type in = cast<RankedTensorType>(a.getType()).getElementType(),
       out = result.getElementType();
  if (out != in && !(out.isF32() && (in.isF16() || in.isBF16()))) {
    (void)diag("expects a result of the operands' element type, or f32 "
               "for f16/bf16 operands, got ",
               out, " for ", in, " operands");
    return failure();
  }
  return shape;
}

LogicalResult FusedMatmulOp::verify() {
  Diag diag(getLoc(), getOperationName());
  StringRef act = getActivation();
  if (act != "none" && act != "relu" && act != "gelu_tanh")
    return diag("unknown activation '", act,
                "' (expected none, relu or gelu_tanh)");
  RankedTensorType result = getResult().getType();
  auto shape = epilogueProductShape(getA(), getB(), getTransposeA(),
                                    getTransposeB(), result, diag);
  if (failed(shape))
    return failure();
  Type out = result.getElementType();
  if (Value pre = getPreActivation()) {
    if (act == "none")
      return diag("has a pre_activation result but no activation (the "
                  "result is the pre-activation)");
    if (pre.getType() != result)
      return diag("expects a pre_activation of the result's type ", result,
                  ", got ", pre.getType());
  }
  RankedTensorType bias = getBias().getType();
  if (bias.getRank() != 1 || bias.getDimSize(0) != shape->back())
    return diag("expects a bias of shape [", shape->back(),
                "] (the result's last dimension), got ",
                shapeStr(bias.getShape()));
  if (bias.getElementType() != out)
    return diag("expects a bias of the result's element type ", out, ", got ",
                bias.getElementType());
  return success();
}

LogicalResult DropoutAddOp::verify() {
  Diag diag(getLoc(), getOperationName());
  if (failed(checkFraction(getP().convertToDouble(), "p",
                           /*closedHigh=*/false, diag)))
    return failure();
  if (Value residual = getResidual();
      residual && residual.getType() != getInput().getType())
    return diag("expects a residual of the input's type ", getInput().getType(),
                ", got ", residual.getType());
  return success();
}

LogicalResult MatmulAddOp::verify() {
  Diag diag(getLoc(), getOperationName());
  RankedTensorType result = getType();
  if (failed(epilogueProductShape(getA(), getB(), getTransposeA(),
                                  getTransposeB(), result, diag)))
    return failure();
  if (getAddend().getType() != result)
    return diag("expects an addend of the result's type ", result, ", got ",
                getAddend().getType());
  return success();
}

LogicalResult HeadsMatmulOp::verify() {
  Diag diag(getLoc(), getOperationName());
  auto a = staticTensor(getA(), "a", diag);
  auto b = staticTensor(getB(), "b", diag);
  auto c = staticTensor(getResult(), "the result", diag);
  if (failed(a) || failed(b) || failed(c) ||
      failed(checkSameElementType(*a, "a", *b, "b", diag)) ||
      failed(checkSameElementType(*a, "a", *c, "the result", diag)) ||
      failed(checkRank(*a, "a", 4, diag)) ||
      failed(checkRank(*b, "b", 4, diag)) ||
      failed(checkRank(*c, "the result", 4, diag)))
    return failure();
  // Each as the product reads or writes it: [B, H, rows, columns].
  auto logical = [](RankedTensorType t, bool bshd) {
    SmallVector<int64_t> shape(t.getShape());
    if (bshd)
      std::swap(shape[1], shape[2]);
    return shape;
  };
  SmallVector<int64_t> as = logical(*a, getABshd()),
                       bs = logical(*b, getBBshd()),
                       cs = logical(*c, getResultBshd());
  int64_t m = as[2], ka = as[3], kb = bs[2], n = bs[3];
  if (getTransposeA())
    std::swap(m, ka);
  if (getTransposeB())
    std::swap(kb, n);
  if (ka != kb)
    return diag("expects equal contracting dimensions, got K = ", ka,
                " for a and ", kb, " for b");
  ArrayRef<int64_t> batch = ArrayRef<int64_t>(cs).take_front(2);
  if (ArrayRef<int64_t>(as).take_front(2) != batch ||
      ArrayRef<int64_t>(bs).take_front(2) != batch)
    return diag("expects the batch dimensions [B, H] of a (",
                shapeStr(ArrayRef<int64_t>(as).take_front(2)), "), b (",
                shapeStr(ArrayRef<int64_t>(bs).take_front(2)),
                ") and the result (", shapeStr(batch),
                ") to be equal, as read in their layouts");
  if (cs[2] != m || cs[3] != n)
    return diag("expects a result of ", m, " x ", n,
                " matrices (as read in its layout), got ", cs[2], " x ", cs[3]);
  return success();
}

LogicalResult MatmulActivationGradOp::verify() {
  Diag diag(getLoc(), getOperationName());
  StringRef act = getActivation();
  if (act != "relu" && act != "gelu_tanh")
    return diag("unknown activation '", act, "' (expected relu or gelu_tanh)");
  RankedTensorType result = getType();
  if (failed(epilogueProductShape(getA(), getB(), getTransposeA(),
                                  getTransposeB(), result, diag)))
    return failure();
  if (getSaved().getType() != result)
    return diag("expects a saved value of the result's type ", result, ", got ",
                getSaved().getType());
  return success();
}

/// The type column sums of `element` values are kept in: f32 for f16
/// and bf16, the values' own otherwise (mpc.matmul_bias_grad's bias
/// gradient, mpc.column_sums).
static Type biasSumsType(Type element) {
  return element.isF16() || element.isBF16()
             ? Float32Type::get(element.getContext())
             : element;
}

LogicalResult
MatmulBiasGradOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                   Adaptor adaptor,
                                   SmallVectorImpl<Type> &results) {
  Diag diag(loc, getOperationName());
  auto shape = matmulShape(adaptor.getA(), adaptor.getB(),
                           adaptor.getTransposeA(), false, diag);
  if (failed(shape))
    return failure();
  auto b = cast<RankedTensorType>(adaptor.getB().getType());
  if (shape->size() != 2 ||
      cast<RankedTensorType>(adaptor.getA().getType()).getRank() != 2)
    return diag("expects two matrices (the bias gradient sums b's rows), "
                "got ",
                adaptor.getA().getType(), " and ", b);
  if (adaptor.getBiasOfA() && !adaptor.getTransposeA())
    return diag("expects transpose_a with bias_of_a (the sums of a over the "
                "contraction dimension, its rows)");
  Type element = b.getElementType();
  Type sums = biasSumsType(element);
  auto product = RankedTensorType::get(*shape, element);
  if (Value addend = adaptor.getAddend()) {
    // The sum has the addend's type: the product's, or f32 for f16/bf16.
    auto type = cast<RankedTensorType>(addend.getType());
    if (type.getShape() != product.getShape() ||
        (type.getElementType() != element && type.getElementType() != sums))
      return diag("expects an addend of the product's shape ",
                  shapeStr(product.getShape()),
                  " and its element type (or f32 for f16/bf16 operands), got ",
                  type);
    product = type;
  }
  auto biasGrad = RankedTensorType::get(
      {adaptor.getBiasOfA() ? shape->front() : shape->back()}, sums);
  if (Value addend = adaptor.getBiasAddend();
      addend && addend.getType() != biasGrad)
    return diag("expects a bias_addend of the bias gradient's type ", biasGrad,
                ", got ", addend.getType());
  results.push_back(product);
  results.push_back(biasGrad);
  return success();
}

LogicalResult ColumnSumsOp::inferReturnTypes(MLIRContext *context,
                                             std::optional<Location> loc,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &results) {
  Diag diag(loc, getOperationName());
  if (adaptor.getInputs().empty())
    return diag("expects at least one matrix");
  RankedTensorType first;
  for (Value input : adaptor.getInputs()) {
    auto type = staticTensor(input, "inputs", diag);
    if (failed(type) || failed(checkRank(*type, "matrices", 2, diag)))
      return failure();
    if (!first)
      first = *type;
    else if (*type != first)
      return diag("expects matrices of one type, got ", first, " and ", *type);
    results.push_back(RankedTensorType::get(
        {type->getDimSize(1)}, biasSumsType(type->getElementType())));
  }
  ValueRange addends = adaptor.getAddends();
  if (!addends.empty() && addends.size() != results.size())
    return diag("expects an addend for each matrix or none, got ",
                addends.size(), " for ", results.size());
  for (auto [addend, result] : llvm::zip(addends, results))
    if (addend.getType() != result)
      return diag("expects addends of the sums' type ", result, ", got ",
                  addend.getType());
  return success();
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

bool mlir::mpc::readsModelState(Value v) {
  SmallVector<Value> work{v};
  DenseSet<Value> seen{v};
  while (!work.empty()) {
    Operation *def = work.pop_back_val().getDefiningOp();
    if (!def)
      continue;
    if (isa<ml_program::GlobalLoadOp>(def))
      return true;
    for (Value operand : def->getOperands())
      if (seen.insert(operand).second)
        work.push_back(operand);
  }
  return false;
}

SmallVector<int64_t> mlir::mpc::attentionHeadsFirst(ArrayRef<int64_t> shape,
                                                    StringRef layout) {
  SmallVector<int64_t> out(shape);
  if (layout == "bshd")
    std::swap(out[out.size() - 3], out[out.size() - 2]);
  return out;
}

/// The shapes of attention's query [..., Sq, D], key [..., Sk, D] and value
/// [..., Sk, Dv] (with layout "bshd" [..., Sq, H, D], ..., checked as
/// their [..., H, S, D] transposes), checked; the result [..., Sq, Dv]
/// ([..., Sq, H, Dv]) and log-sum-exp [..., Sq] ([..., H, Sq]) types.
static LogicalResult inferAttention(Value queryValue, Value keyValue,
                                    Value valueValue, Value mask, Value bias,
                                    std::optional<double> maskValue,
                                    double scale, double dropout,
                                    StringRef layout, const Diag &diag,
                                    SmallVectorImpl<Type> &results) {
  auto q = staticTensor(queryValue, "query", diag);
  auto k = staticTensor(keyValue, "key", diag);
  auto v = staticTensor(valueValue, "value", diag);
  if (failed(q) || failed(k) || failed(v) ||
      failed(checkSameElementType(*q, "query", *k, "key", diag)) ||
      failed(checkSameElementType(*q, "query", *v, "value", diag)))
    return failure();
  if (layout != "bhsd" && layout != "bshd")
    return diag("expects layout \"bhsd\" or \"bshd\", got \"", layout, "\"");
  bool headsInner = layout == "bshd";
  int64_t least = headsInner ? 3 : 2;
  if (q->getRank() < least || k->getRank() != q->getRank() ||
      v->getRank() != q->getRank())
    return diag("expects query, key and value of one rank >= ", least,
                headsInner ? " (layout \"bshd\")" : "", ", got ", *q, ", ", *k,
                " and ", *v);
  SmallVector<int64_t> qShape = attentionHeadsFirst(q->getShape(), layout),
                       kShape = attentionHeadsFirst(k->getShape(), layout),
                       vShape = attentionHeadsFirst(v->getShape(), layout);
  ArrayRef<int64_t> qs = qShape, ks = kShape, vs = vShape;
  if (qs.drop_back(2) != ks.drop_back(2) || qs.drop_back(2) != vs.drop_back(2))
    return diag("expects query, key and value with the same leading "
                "dimensions, got ",
                shapeStr(qs.drop_back(2)), ", ", shapeStr(ks.drop_back(2)),
                " and ", shapeStr(vs.drop_back(2)));
  if (qs.back() != ks.back())
    return diag("expects query and key of one head size, got ", qs.back(),
                " and ", ks.back());
  if (ks[ks.size() - 2] != vs[vs.size() - 2])
    return diag("expects key and value of one sequence length, got ",
                ks[ks.size() - 2], " and ", vs[vs.size() - 2]);
  if (!std::isfinite(scale))
    return diag("expects a finite scale, got ", scale);
  if (failed(checkDropoutP(dropout, diag)))
    return failure();
  SmallVector<int64_t> scores(qs);
  scores.back() = ks[ks.size() - 2];
  // A mask or bias: the scores' rank, each dimension 1 or the scores'.
  auto broadcastsToScores = [&](RankedTensorType t) {
    bool fits = t.getRank() == static_cast<int64_t>(scores.size());
    for (int64_t d = 0; fits && d < t.getRank(); ++d)
      fits = t.getDimSize(d) == 1 || t.getDimSize(d) == scores[d];
    return fits;
  };
  if (bias) {
    auto t = staticTensor(bias, "bias", diag);
    if (failed(t))
      return failure();
    if (!broadcastsToScores(*t))
      return diag("expects a bias of the scores' rank whose dimensions are 1 "
                  "or the scores' ",
                  shapeStr(scores), ", got ", shapeStr(t->getShape()));
  }
  if (mask) {
    auto m = staticTensor(mask, "mask", diag);
    if (failed(m))
      return failure();
    if (!broadcastsToScores(*m))
      return diag("expects a mask of the scores' rank whose dimensions are 1 "
                  "or the scores' ",
                  shapeStr(scores), ", got ", shapeStr(m->getShape()));
    if (!maskValue)
      return diag("expects a mask_value with a mask");
    if (std::isnan(*maskValue))
      return diag("expects a mask_value that is not NaN");
  } else if (maskValue) {
    return diag("has a mask_value but no mask");
  }
  Type element = q->getElementType();
  SmallVector<int64_t> out(qs);
  out.back() = vs.back();
  out = attentionHeadsFirst(out, layout); // back to the operands' layout
  results.push_back(RankedTensorType::get(out, element));
  Type stats =
      element.isF64() ? element : Float32Type::get(element.getContext());
  results.push_back(RankedTensorType::get(qs.drop_back(), stats));
  return success();
}

LogicalResult AttentionOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  Diag diag(loc, getOperationName());
  std::optional<double> maskValue;
  if (adaptor.getMaskValue())
    maskValue = adaptor.getMaskValue()->convertToDouble();
  return inferAttention(adaptor.getQuery(), adaptor.getKey(),
                        adaptor.getValue(), adaptor.getMask(),
                        adaptor.getBias(), maskValue,
                        adaptor.getScale().convertToDouble(),
                        adaptor.getDropoutP().convertToDouble(),
                        adaptor.getLayout(), diag, results);
}

LogicalResult AttentionBackwardOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &results) {
  Diag diag(loc, getOperationName());
  SmallVector<Type> forward;
  std::optional<double> maskValue;
  if (adaptor.getMaskValue())
    maskValue = adaptor.getMaskValue()->convertToDouble();
  if (failed(inferAttention(adaptor.getQuery(), adaptor.getKey(),
                            adaptor.getValue(), adaptor.getMask(),
                            adaptor.getBias(), maskValue,
                            adaptor.getScale().convertToDouble(),
                            adaptor.getDropoutP().convertToDouble(),
                            adaptor.getLayout(), diag, forward)))
    return failure();
  for (auto [value, name, want] :
       {std::tuple<Value, const char *, Type>{adaptor.getGrad(), "grad",
                                              forward[0]},
        {adaptor.getResult(), "result", forward[0]},
        {adaptor.getLogsumexp(), "logsumexp", forward[1]}})
    if (value.getType() != want)
      return diag("expects ", name, " of type ", want, ", got ",
                  value.getType());
  results.push_back(adaptor.getQuery().getType());
  results.push_back(adaptor.getKey().getType());
  results.push_back(adaptor.getValue().getType());
  return success();
}

//===----------------------------------------------------------------------===//
// Convolutions
//===----------------------------------------------------------------------===//

namespace {
struct ConvParams {
  ArrayRef<int64_t> stride, padding, dilation;
  int64_t groups = 1;
};
} // namespace

static LogicalResult checkConvParams(const ConvParams &p, const Diag &diag) {
  if (failed(checkPair(p.stride, "stride", 1, diag)) ||
      failed(checkPair(p.padding, "padding", 0, diag)) ||
      failed(checkPair(p.dilation, "dilation", 1, diag)))
    return failure();
  if (p.groups < 1)
    return diag("expects groups >= 1, got ", p.groups);
  return success();
}

/// The NHWC result shape of conv2d(input, filter), or an error.
static FailureOr<SmallVector<int64_t>> conv2dShape(RankedTensorType input,
                                                   RankedTensorType filter,
                                                   const ConvParams &p,
                                                   const Diag &diag) {
  if (failed(checkConvParams(p, diag)) ||
      failed(checkRank(input, "an NHWC input", 4, diag)) ||
      failed(checkRank(filter, "an OHWI filter", 4, diag)))
    return failure();
  ArrayRef<int64_t> in = input.getShape(), f = filter.getShape();
  int64_t channels = in[3], outChannels = f[0];
  if (channels % p.groups || outChannels % p.groups) {
    (void)diag("expects input channels (", channels, ") and output channels (",
               outChannels, ") divisible by groups (", p.groups, ")");
    return failure();
  }
  if (f[3] != channels / p.groups) {
    (void)diag("expects filter input channels (", f[3],
               ") to equal input channels / groups (", channels / p.groups,
               ")");
    return failure();
  }
  SmallVector<int64_t> out = {in[0], 0, 0, outChannels};
  for (int i = 0; i < 2; ++i) {
    int64_t extent =
        in[1 + i] + 2 * p.padding[i] - p.dilation[i] * (f[1 + i] - 1) - 1;
    if (extent < 0) {
      (void)diag("expects the dilated kernel (", f[1 + i], " with dilation ",
                 p.dilation[i], ") to fit the padded input (", in[1 + i],
                 " + 2*", p.padding[i], ")");
      return failure();
    }
    out[1 + i] = extent / p.stride[i] + 1;
  }
  return out;
}

LogicalResult Conv2DOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  Diag diag(loc, getOperationName());
  auto input = staticTensor(adaptor.getInput(), "input", diag);
  auto filter = staticTensor(adaptor.getFilter(), "filter", diag);
  if (failed(input) || failed(filter) ||
      failed(checkSameElementType(*input, "input", *filter, "filter", diag)))
    return failure();
  ConvParams p{adaptor.getStride(), adaptor.getPadding(), adaptor.getDilation(),
               static_cast<int64_t>(adaptor.getGroups())};
  auto shape = conv2dShape(*input, *filter, p, diag);
  if (failed(shape))
    return failure();
  results.push_back(RankedTensorType::get(*shape, input->getElementType()));
  return success();
}

/// Checks a conv2d backward op: the forward conv2d(input, filter) must give
/// `grad`'s shape.
static LogicalResult verifyConvBackward(RankedTensorType grad,
                                        RankedTensorType input,
                                        RankedTensorType filter,
                                        const ConvParams &p, const Diag &diag) {
  if (failed(checkSameElementType(grad, "grad", input, "input", diag)) ||
      failed(checkSameElementType(grad, "grad", filter, "filter", diag)))
    return failure();
  auto shape = conv2dShape(input, filter, p, diag);
  if (failed(shape))
    return failure();
  if (ArrayRef<int64_t>(*shape) != grad.getShape())
    return diag("expects grad of the forward output's shape ", shapeStr(*shape),
                ", got ", shapeStr(grad.getShape()));
  return success();
}

/// An op's optional addend: of its result's type.
static LogicalResult verifyAddend(Operation *op, Value addend, Type result) {
  if (addend && addend.getType() != result)
    return op->emitOpError("expects an addend of the result's type ")
           << result << ", got " << addend.getType();
  return success();
}

LogicalResult Conv2DOp::verify() {
  return verifyAddend(*this, getAddend(), getType());
}

LogicalResult Conv2DBackwardDataOp::verify() {
  Diag diag(getLoc(), getOperationName());
  return verifyConvBackward(getGrad().getType(), getType(),
                            getFilter().getType(),
                            {getStride(), getPadding(), getDilation(),
                             static_cast<int64_t>(getGroups())},
                            diag);
}

LogicalResult Conv2DBackwardFilterOp::verify() {
  Diag diag(getLoc(), getOperationName());
  return verifyConvBackward(getGrad().getType(), getInput().getType(),
                            getType(),
                            {getStride(), getPadding(), getDilation(),
                             static_cast<int64_t>(getGroups())},
                            diag);
}

LogicalResult
ConvTranspose2DOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                    Adaptor adaptor,
                                    SmallVectorImpl<Type> &results) {
  Diag diag(loc, getOperationName());
  auto input = staticTensor(adaptor.getInput(), "input", diag);
  auto filter = staticTensor(adaptor.getFilter(), "filter", diag);
  if (failed(input) || failed(filter) ||
      failed(checkSameElementType(*input, "input", *filter, "filter", diag)))
    return failure();
  ConvParams p{adaptor.getStride(), adaptor.getPadding(),
               adaptor.getDilation()};
  ArrayRef<int64_t> outPad = adaptor.getOutputPadding();
  if (failed(checkConvParams(p, diag)) ||
      failed(checkPair(outPad, "output_padding", 0, diag)) ||
      failed(checkRank(*input, "an NHWC input", 4, diag)) ||
      failed(checkRank(*filter, "an IHWO filter", 4, diag)))
    return failure();
  ArrayRef<int64_t> in = input->getShape(), f = filter->getShape();
  if (f[0] != in[3])
    return diag("expects filter input channels (", f[0],
                ") to equal input channels (", in[3], ")");
  SmallVector<int64_t> out = {in[0], 0, 0, f[3]};
  for (int i = 0; i < 2; ++i) {
    if (outPad[i] >= std::max(p.stride[i], p.dilation[i]))
      return diag("expects output_padding smaller than stride or dilation, "
                  "got ",
                  shapeStr(outPad));
    out[1 + i] = (in[1 + i] - 1) * p.stride[i] - 2 * p.padding[i] +
                 p.dilation[i] * (f[1 + i] - 1) + outPad[i] + 1;
    if (out[1 + i] < 1)
      return diag("expects a non-empty output, got size ", out[1 + i]);
  }
  results.push_back(RankedTensorType::get(out, input->getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions, softmax, normalisation
//===----------------------------------------------------------------------===//

static LogicalResult inferReduce(Value input, ArrayRef<int64_t> dims,
                                 bool keepDims, const Diag &diag,
                                 SmallVectorImpl<Type> &results) {
  auto type = staticTensor(input, "input", diag);
  if (failed(type))
    return failure();
  int64_t rank = type->getRank();
  for (auto [i, d] : llvm::enumerate(dims))
    if (d < 0 || d >= rank || (i > 0 && d <= dims[i - 1]))
      return diag("expects dims distinct, increasing and in [0, ", rank,
                  "), got ", shapeStr(dims));
  SmallVector<int64_t> shape;
  for (auto [i, size] : llvm::enumerate(type->getShape())) {
    if (!llvm::is_contained(dims, static_cast<int64_t>(i)))
      shape.push_back(size);
    else if (keepDims)
      shape.push_back(1);
  }
  results.push_back(RankedTensorType::get(shape, type->getElementType()));
  return success();
}

#define MPC_REDUCE_INFER(OP)                                                   \
  LogicalResult OP::inferReturnTypes(                                          \
      MLIRContext *, std::optional<Location> loc, Adaptor adaptor,             \
      SmallVectorImpl<Type> &results) {                                        \
    return inferReduce(adaptor.getInput(), adaptor.getDims(),                  \
                       adaptor.getKeepDims(), Diag(loc, getOperationName()),   \
                       results);                                               \
  }
MPC_REDUCE_INFER(ReduceSumOp)
MPC_REDUCE_INFER(ReduceMeanOp)
MPC_REDUCE_INFER(ReduceMaxOp)
#undef MPC_REDUCE_INFER

template <typename OpTy> static LogicalResult verifyAxis(OpTy op) {
  Diag diag(op.getLoc(), op.getOperationName());
  return normalizeAxis(static_cast<int64_t>(op.getAxis()),
                       op.getType().getRank(), diag);
}

/// The operands and results of an op that may mix element types (softmax,
/// its gradient, dropout): all one type, or each of f16, bf16 and f32.
static LogicalResult verifyMixableTypes(Operation *op, TypeRange types) {
  Type first = getElementTypeOrSelf(types.front());
  if (llvm::all_of(types,
                   [&](Type t) { return getElementTypeOrSelf(t) == first; }))
    return success();
  for (Type t : types) {
    Type element = getElementTypeOrSelf(t);
    if (!element.isF16() && !element.isBF16() && !element.isF32())
      return op->emitOpError("mixes element types only among f16, bf16 and "
                             "f32, got ")
             << element;
  }
  return success();
}

/// A softmax's `scale`: finite.
template <typename OpTy> static LogicalResult verifyScale(OpTy op) {
  double scale = op.getScale().convertToDouble();
  if (!std::isfinite(scale))
    return op.emitOpError("expects a finite scale, got ") << scale;
  return success();
}

/// A softmax or its gradient: `types` (its operands' and result's) mixing
/// only what the kernels take, its axis and its scale.
template <typename OpTy>
static LogicalResult verifySoftmaxLike(OpTy op, TypeRange types) {
  return failure(failed(verifyMixableTypes(op, types)) ||
                 failed(verifyAxis(op)) || failed(verifyScale(op)));
}

LogicalResult SoftmaxOp::verify() {
  return verifySoftmaxLike(*this, {getInput().getType(), getType()});
}
LogicalResult LogSoftmaxOp::verify() {
  return verifySoftmaxLike(*this, {getInput().getType(), getType()});
}
LogicalResult SoftmaxBackwardOp::verify() {
  return verifySoftmaxLike(
      *this, {getGrad().getType(), getOutput().getType(), getType()});
}
LogicalResult LogSoftmaxBackwardOp::verify() {
  return verifySoftmaxLike(
      *this, {getGrad().getType(), getOutput().getType(), getType()});
}

/// Splits `input` at the normalisation axis and checks the affine parameter
/// covers the normalised part. Returns the axis.
static FailureOr<int64_t> checkLayerNormShapes(RankedTensorType input,
                                               RankedTensorType gamma,
                                               int64_t axis, const Diag &diag) {
  if (input.getRank() < 1) {
    (void)diag("expects an input of rank >= 1");
    return failure();
  }
  auto a = normalizeAxis(axis, input.getRank(), diag);
  if (failed(a))
    return failure();
  ArrayRef<int64_t> normalized = input.getShape().drop_front(*a);
  if (gamma.getShape() != normalized) {
    (void)diag("expects gamma of the normalised shape ", shapeStr(normalized),
               ", got ", shapeStr(gamma.getShape()));
    return failure();
  }
  return *a;
}

/// Layer-norm statistics: f32, f64 for f64 input (what the runtimes write:
/// the accumulation type).
static RankedTensorType statsType(RankedTensorType input, int64_t axis) {
  Type element = input.getElementType().isF64()
                     ? input.getElementType()
                     : Float32Type::get(input.getContext());
  return RankedTensorType::get(input.getShape().take_front(axis), element);
}

LogicalResult LayerNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  Diag diag(loc, getOperationName());
  auto input = staticTensor(adaptor.getInput(), "input", diag);
  auto gamma = staticTensor(adaptor.getGamma(), "gamma", diag);
  if (failed(input) || failed(gamma))
    return failure();
  if (!(adaptor.getEpsilon().convertToDouble() > 0.0))
    return diag("expects epsilon > 0, got ",
                adaptor.getEpsilon().convertToDouble());
  auto axis = checkLayerNormShapes(
      *input, *gamma, static_cast<int64_t>(adaptor.getAxis()), diag);
  if (failed(axis))
    return failure();
  Type stats = statsType(*input, *axis);
  results.append({*input, stats, stats});
  return success();
}

/// A norm backward's addends of its parameter gradients: of gamma's type
/// (the gradients' type), where given.
static LogicalResult checkParamAddends(Value gammaAddend, Value betaAddend,
                                       RankedTensorType gamma,
                                       const Diag &diag) {
  for (auto [addend, name] : {std::pair{gammaAddend, "gamma_addend"},
                              std::pair{betaAddend, "beta_addend"}})
    if (addend && addend.getType() != gamma)
      return diag("expects ", name, " of gamma's type ", gamma, ", got ",
                  addend.getType());
  return success();
}

LogicalResult LayerNormBackwardOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &results) {
  Diag diag(loc, getOperationName());
  auto grad = staticTensor(adaptor.getGrad(), "grad", diag);
  auto input = staticTensor(adaptor.getInput(), "input", diag);
  auto gamma = staticTensor(adaptor.getGamma(), "gamma", diag);
  auto mean = staticTensor(adaptor.getMean(), "mean", diag);
  auto rstd = staticTensor(adaptor.getRstd(), "rstd", diag);
  if (failed(grad) || failed(input) || failed(gamma) || failed(mean) ||
      failed(rstd))
    return failure();
  auto axis = checkLayerNormShapes(
      *input, *gamma, static_cast<int64_t>(adaptor.getAxis()), diag);
  if (failed(axis))
    return failure();
  RankedTensorType stats = statsType(*input, *axis);
  if (*mean != stats || *rstd != stats)
    return diag("expects mean and rstd of type ", stats, ", got ", *mean,
                " and ", *rstd);
  if (failed(checkParamAddends(adaptor.getGammaAddend(),
                               adaptor.getBetaAddend(), *gamma, diag)))
    return failure();
  results.append({*input, *gamma, *gamma});
  return success();
}

LogicalResult AddLayerNormOp::inferReturnTypes(MLIRContext *,
                                               std::optional<Location> loc,
                                               Adaptor adaptor,
                                               SmallVectorImpl<Type> &results) {
  Diag diag(loc, getOperationName());
  auto input = staticTensor(adaptor.getInput(), "input", diag);
  auto residual = staticTensor(adaptor.getResidual(), "residual", diag);
  auto gamma = staticTensor(adaptor.getGamma(), "gamma", diag);
  if (failed(input) || failed(residual) || failed(gamma) ||
      failed(checkDropoutP(adaptor.getDropoutP().convertToDouble(), diag)))
    return failure();
  if (!isResidualOf(*residual, *input))
    return diag("expects a residual of the input's type or of the shape of "
                "its last dimensions, with its element type; got ",
                *input, " and ", *residual);
  if (!(adaptor.getEpsilon().convertToDouble() > 0.0))
    return diag("expects epsilon > 0, got ",
                adaptor.getEpsilon().convertToDouble());
  auto axis = checkLayerNormShapes(*input, *gamma, -1, diag);
  if (failed(axis))
    return failure();
  Type stats = statsType(*input, *axis);
  results.append({*input, *input, stats, stats});
  return success();
}

LogicalResult AddLayerNormBackwardOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &results) {
  Diag diag(loc, getOperationName());
  auto grad = staticTensor(adaptor.getGrad(), "grad", diag);
  auto sum = staticTensor(adaptor.getSum(), "sum", diag);
  auto gamma = staticTensor(adaptor.getGamma(), "gamma", diag);
  auto mean = staticTensor(adaptor.getMean(), "mean", diag);
  if (failed(grad) || failed(sum) || failed(gamma) || failed(mean) ||
      failed(checkDropoutP(adaptor.getDropoutP().convertToDouble(), diag)))
    return failure();
  if (*grad != *sum)
    return diag("expects grad and sum of one type, got ", *grad, " and ", *sum);
  if (Value sumGrad = adaptor.getSumGrad();
      sumGrad && sumGrad.getType() != *sum)
    return diag("expects sum_grad of the sum's type ", *sum, ", got ",
                sumGrad.getType());
  auto axis = checkLayerNormShapes(*sum, *gamma, -1, diag);
  if (failed(axis))
    return failure();
  RankedTensorType stats = statsType(*sum, *axis);
  if (*mean != stats)
    return diag("expects mean and rstd of type ", stats, ", got ", *mean);
  if (failed(checkParamAddends(adaptor.getGammaAddend(),
                               adaptor.getBetaAddend(), *gamma, diag)))
    return failure();
  results.append({*sum, *sum, *gamma, *gamma});
  // The input gradient's sums over its rows, in the accumulation type.
  if (adaptor.getInputSums()) {
    Type element = sum->getElementType();
    if (!element.isF64())
      element = Float32Type::get(element.getContext());
    results.push_back(RankedTensorType::get({sum->getShape().back()}, element));
  }
  return success();
}

/// Without dropout the residual's gradient is the input's, bit for bit (the
/// runtime rounds the same f32 value to both): its readers read the input's,
/// and the kernel writes one tensor where it wrote two.
LogicalResult AddLayerNormBackwardOp::canonicalize(AddLayerNormBackwardOp op,
                                                   PatternRewriter &rewriter) {
  if (!op.getDropoutP().isZero() || op.getGradResidual().use_empty())
    return failure();
  rewriter.replaceAllUsesWith(op.getGradResidual(), op.getGradInput());
  return success();
}

/// Checks an NC or NHWC input against per-channel `[C]` parameters.
static LogicalResult checkBatchNormShapes(RankedTensorType input,
                                          RankedTensorType channel,
                                          const Diag &diag) {
  if (input.getRank() != 2 && input.getRank() != 4)
    return diag("expects an NC or NHWC input (rank 2 or 4), got ", input);
  int64_t c = input.getShape().back();
  if (channel.getRank() != 1 || channel.getDimSize(0) != c)
    return diag("expects per-channel tensors of shape [", c, "], got ",
                channel);
  return success();
}

/// What mpc.batch_norm and mpc.batch_norm_inference share: shapes, epsilon
/// and activation. The input's and gamma's types in `input`, `gamma`.
template <typename Adaptor>
static LogicalResult checkBatchNorm(Adaptor adaptor, const Diag &diag,
                                    RankedTensorType &input,
                                    RankedTensorType &gamma) {
  auto in = staticTensor(adaptor.getInput(), "input", diag);
  auto g = staticTensor(adaptor.getGamma(), "gamma", diag);
  if (failed(in) || failed(g) || failed(checkBatchNormShapes(*in, *g, diag)))
    return failure();
  if (!(adaptor.getEpsilon().convertToDouble() > 0.0))
    return diag("expects epsilon > 0, got ",
                adaptor.getEpsilon().convertToDouble());
  if (adaptor.getActivation() != "none" && adaptor.getActivation() != "relu")
    return diag("unknown activation '", adaptor.getActivation(),
                "' (expected none or relu)");
  input = *in;
  gamma = *g;
  return success();
}

LogicalResult BatchNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  Diag diag(loc, getOperationName());
  RankedTensorType input, gamma;
  if (failed(checkBatchNorm(adaptor, diag, input, gamma)) ||
      failed(checkFraction(adaptor.getMomentum().convertToDouble(), "momentum",
                           /*closedHigh=*/true, diag)))
    return failure();
  // The saved statistics are f32 whatever the parameters' type: the
  // kernels write them as f32 (a buffer of the parameters' f16 type would
  // hold half of them).
  auto saved = cast<RankedTensorType>(batchNormSavedType(gamma));
  results.append({input, gamma, gamma, saved, saved});
  return success();
}

LogicalResult BatchNormInferenceOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &results) {
  Diag diag(loc, getOperationName());
  RankedTensorType input, gamma;
  if (failed(checkBatchNorm(adaptor, diag, input, gamma)))
    return failure();
  results.push_back(input);
  return success();
}

LogicalResult BatchNormBackwardOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &results) {
  Diag diag(loc, getOperationName());
  auto grad = staticTensor(adaptor.getGrad(), "grad", diag);
  auto input = staticTensor(adaptor.getInput(), "input", diag);
  auto gamma = staticTensor(adaptor.getGamma(), "gamma", diag);
  if (failed(grad) || failed(input) || failed(gamma) ||
      failed(checkBatchNormShapes(*input, *gamma, diag)))
    return failure();
  StringRef act = adaptor.getActivation();
  if (act != "none" && act != "relu")
    return diag("unknown activation '", act, "' (expected none or relu)");
  Value result = adaptor.getResult(), beta = adaptor.getBeta();
  if (result && beta)
    return diag("takes the fused op's result or its beta, not both (the "
                "ReLU's mask comes from one)");
  if ((act == "relu") != (result || beta))
    return diag(result ? "has a result operand but no activation (it is "
                         "the fused op's output, for the ReLU's gradient)"
                : beta ? "has a beta operand but no activation (it forms "
                         "the fused op's output again, for the ReLU's "
                         "gradient)"
                       : "with activation 'relu' expects the fused op's "
                         "result as `result(...)` or its beta as "
                         "`beta(...)`");
  if (result && result.getType() != adaptor.getGrad().getType())
    return diag("expects a result of the gradient's type ", *grad, ", got ",
                result.getType());
  if (beta && beta.getType() != *gamma)
    return diag("expects a beta of gamma's type ", *gamma, ", got ",
                beta.getType());
  if (beta && input->getElementType().isF64())
    return diag("cannot form the ReLU's mask again from an f64 input (its "
                "forward applied f64 statistics, saved as f32): expects "
                "`result(...)`");
  if (failed(checkParamAddends(adaptor.getGammaAddend(),
                               adaptor.getBetaAddend(), *gamma, diag)))
    return failure();
  // A synchronised forward's gradient needs the means over every rank: a
  // backward that disagrees would be silently wrong on several ranks.
  if (auto forward = adaptor.getSavedMean().getDefiningOp<BatchNormOp>();
      forward && forward.getSync() != bool(adaptor.getSync()))
    return diag(forward.getSync()
                    ? "is the backward of a batch norm with `sync` and must "
                      "have `sync` too (its input's gradient takes the "
                      "means over every rank)"
                    : "has `sync` but its forward batch norm has not (the "
                      "statistics it reads are the rank's own)");
  results.append({*input, *gamma, *gamma});
  return success();
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  RankedTensorType in = getInput().getType(), out = getType();
  if (in.getElementType() != out.getElementType())
    return emitOpError("expects the same element type, got ")
           << in.getElementType() << " and " << out.getElementType();
  if (in.getNumElements() != out.getNumElements())
    return emitOpError("expects the same number of elements, got ")
           << in.getNumElements() << " and " << out.getNumElements();
  return success();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  // A reshape back to the shape of a value a chain of reshapes started
  // from (a few links looked at: the fold stays linear). Other chains of
  // reshapes stay: they are views, and fusion patterns match them.
  Value v = getInput();
  for (int links = 0; links < 8; ++links) {
    auto inner = v.getDefiningOp<ReshapeOp>();
    if (!inner)
      break;
    v = inner.getInput();
    if (v.getType() == getType())
      return v;
  }
  return {};
}

namespace {
/// A transpose that keeps the order of the dimensions that are not 1 (it
/// only moves unit dimensions: `[N, C, 1, 1]` to `[N, 1, 1, C]`) is a
/// reshape: the same bytes in the same order, a view in the memory plan
/// instead of a strided copy.
struct TransposeOfUnitDims : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TransposeOp op,
                                PatternRewriter &rewriter) const override {
    SmallVector<int64_t> kept;
    for (int64_t d : op.getPermutation())
      if (op.getInput().getType().getDimSize(d) != 1)
        kept.push_back(d);
    if (!llvm::is_sorted(kept))
      return failure();
    rewriter.replaceOpWithNewOp<ReshapeOp>(op, op.getType(), op.getInput());
    return success();
  }
};

/// A reshape from `from` to `to` as groups of consecutive dimensions with
/// equal products: each group's `from` dimensions split, merged or kept
/// as its `to` dimensions (a unit dimension added or dropped is a group
/// with one side empty). Nothing where a size is 0.
struct ReshapeGroup {
  SmallVector<int64_t> from, to;
};
static std::optional<SmallVector<ReshapeGroup>>
reshapeGroups(ArrayRef<int64_t> from, ArrayRef<int64_t> to) {
  if (llvm::is_contained(from, 0) || llvm::is_contained(to, 0))
    return std::nullopt;
  SmallVector<ReshapeGroup> groups;
  size_t i = 0, j = 0;
  while (i < from.size() || j < to.size()) {
    ReshapeGroup g;
    int64_t a = 1, b = 1;
    if (i < from.size()) {
      g.from.push_back(i);
      a *= from[i++];
    }
    if (j < to.size()) {
      g.to.push_back(j);
      b *= to[j++];
    }
    while (a != b) {
      if (a < b && i < from.size()) {
        g.from.push_back(i);
        a *= from[i++];
      } else if (b < a && j < to.size()) {
        g.to.push_back(j);
        b *= to[j++];
      } else {
        return std::nullopt;
      }
    }
    groups.push_back(std::move(g));
  }
  return groups;
}

/// Whether `dims` (of `shape`), less those of size 1, increase.
static bool inOrder(ArrayRef<int64_t> dims, ArrayRef<int64_t> shape) {
  int64_t last = -1;
  for (int64_t d : dims) {
    if (shape[d] == 1)
      continue;
    if (d <= last)
      return false;
    last = d;
  }
  return true;
}

/// A reshape of a transpose whose only user is a transpose: where each
/// group of the reshape reads dimensions of the transpose's input that
/// are adjacent and in order, the reshape moves above the transpose
/// (regrouping the input itself), and the transpose below it composes
/// with the user. With the next pattern, this lets NCHW <-> NHWC pairs
/// meet through a channel shuffle's reshapes.
struct ReshapeAboveTranspose : OpRewritePattern<ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReshapeOp op,
                                PatternRewriter &rewriter) const override {
    auto transpose = op.getInput().getDefiningOp<TransposeOp>();
    if (!transpose || !transpose->hasOneUse() || !op->hasOneUse() ||
        !isa<TransposeOp>(*op->user_begin()))
      return failure();
    RankedTensorType source = transpose.getInput().getType();
    ArrayRef<int64_t> perm = transpose.getPermutation();
    auto groups =
        reshapeGroups(transpose.getType().getShape(), op.getType().getShape());
    if (!groups)
      return failure();
    // Each group's dimensions of the source: a run of them, in order.
    SmallVector<std::pair<int64_t, size_t>> starts; // (first, group)
    SmallVector<size_t> inserted;
    for (auto [k, g] : llvm::enumerate(*groups)) {
      if (g.from.empty()) {
        inserted.push_back(k);
        continue;
      }
      SmallVector<int64_t> dims;
      for (int64_t d : g.from)
        dims.push_back(perm[d]);
      SmallVector<int64_t> sorted(dims);
      llvm::sort(sorted);
      for (size_t n = 1; n < sorted.size(); ++n)
        if (sorted[n] != sorted[n - 1] + 1)
          return failure();
      if (!inOrder(dims, source.getShape()))
        return failure();
      starts.push_back({sorted.front(), k});
    }
    llvm::sort(starts);
    // The source regrouped in its own order, the added unit dimensions
    // last; then the groups put in the reshape's order.
    SmallVector<int64_t> shape, position(op.getType().getRank());
    auto place = [&](size_t k) {
      for (int64_t d : (*groups)[k].to) {
        position[d] = shape.size();
        shape.push_back(op.getType().getDimSize(d));
      }
    };
    for (auto [first, k] : starts)
      place(k);
    for (size_t k : inserted)
      place(k);
    Value regrouped = rewriter.createOrFold<ReshapeOp>(
        op.getLoc(), RankedTensorType::get(shape, source.getElementType()),
        transpose.getInput());
    rewriter.replaceOp(op, rewriter.createOrFold<TransposeOp>(
                               op.getLoc(), regrouped, position));
    return success();
  }
};

/// A transpose of a reshape of a transpose (each with no other user):
/// where the outer transpose moves the reshape's groups whole, keeping
/// each one's dimensions in order, it moves above the reshape and
/// composes with the inner one (the pair NCHW -> NHWC -> NCHW around a
/// `[N, C, 1, 1]` view cancels, and a channel shuffle's transpose lands
/// on the NHWC value).
struct TransposeAboveReshape : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TransposeOp op,
                                PatternRewriter &rewriter) const override {
    auto reshape = op.getInput().getDefiningOp<ReshapeOp>();
    if (!reshape || !reshape->hasOneUse())
      return failure();
    auto inner = reshape.getInput().getDefiningOp<TransposeOp>();
    if (!inner || !inner->hasOneUse())
      return failure();
    RankedTensorType middle = reshape.getType();
    auto groups = reshapeGroups(reshape.getInput().getType().getShape(),
                                middle.getShape());
    if (!groups)
      return failure();
    SmallVector<int64_t> groupOf(middle.getRank());
    for (auto [k, g] : llvm::enumerate(*groups))
      for (int64_t d : g.to)
        groupOf[d] = k;
    // The groups in the order the transpose takes their dimensions of
    // size above 1, each run whole and in order; groups of unit
    // dimensions only, last.
    SmallVector<int64_t> order;
    SmallVector<bool> taken(groups->size(), false);
    ArrayRef<int64_t> perm = op.getPermutation();
    for (size_t n = 0; n < perm.size(); ++n) {
      int64_t d = perm[n];
      if (middle.getDimSize(d) == 1)
        continue;
      int64_t k = groupOf[d];
      if (!order.empty() && order.back() == k)
        continue;
      if (taken[k])
        return failure();
      taken[k] = true;
      order.push_back(k);
      // The group's dimensions above 1, in order, next in the transpose.
      SmallVector<int64_t> run;
      for (size_t m = n; m < perm.size(); ++m)
        if (middle.getDimSize(perm[m]) != 1) {
          if (groupOf[perm[m]] != k)
            break;
          run.push_back(perm[m]);
        }
      SmallVector<int64_t> expected;
      for (int64_t e : (*groups)[k].to)
        if (middle.getDimSize(e) != 1)
          expected.push_back(e);
      if (run != expected)
        return failure();
    }
    for (size_t k = 0; k < groups->size(); ++k)
      if (!taken[k])
        order.push_back(k);
    SmallVector<int64_t> permutation;
    for (int64_t k : order)
      llvm::append_range(permutation, (*groups)[k].from);
    Value moved = rewriter.createOrFold<TransposeOp>(
        op.getLoc(), reshape.getInput(), permutation);
    rewriter.replaceOpWithNewOp<ReshapeOp>(op, op.getType(), moved);
    return success();
  }
};
} // namespace

void ReshapeOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                            MLIRContext *context) {
  patterns.add<ReshapeAboveTranspose>(context);
}

void TransposeOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                              MLIRContext *context) {
  patterns.add<TransposeOfUnitDims, TransposeAboveReshape>(context);
}

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  auto isIdentity = [](ArrayRef<int64_t> perm) {
    for (auto [i, p] : llvm::enumerate(perm))
      if (p != static_cast<int64_t>(i))
        return false;
    return true;
  };
  if (isIdentity(getPermutation()))
    return getInput();
  auto inner = getInput().getDefiningOp<TransposeOp>();
  if (!inner)
    return {};
  // Result dim i = this input's dim p[i] = the inner input's dim q[p[i]].
  ArrayRef<int64_t> p = getPermutation(), q = inner.getPermutation();
  SmallVector<int64_t> composed;
  for (int64_t d : p)
    composed.push_back(q[d]);
  if (isIdentity(composed))
    return inner.getInput();
  getInputMutable().assign(inner.getInput());
  setPermutation(composed);
  return getResult();
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  Diag diag(loc, getOperationName());
  auto type = staticTensor(adaptor.getInput(), "input", diag);
  if (failed(type))
    return failure();
  ArrayRef<int64_t> perm = adaptor.getPermutation();
  int64_t rank = type->getRank();
  SmallVector<bool> seen(rank, false);
  bool valid = static_cast<int64_t>(perm.size()) == rank;
  for (int64_t p : perm) {
    valid = valid && p >= 0 && p < rank && !seen[p];
    if (valid)
      seen[p] = true;
  }
  if (!valid)
    return diag("expects a permutation of [0, ", rank, "), got ",
                shapeStr(perm));
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(type->getDimSize(p));
  results.push_back(RankedTensorType::get(shape, type->getElementType()));
  return success();
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  Diag diag(loc, getOperationName());
  if (adaptor.getInputs().empty())
    return diag("expects at least one input");
  auto first = staticTensor(adaptor.getInputs().front(), "inputs", diag);
  if (failed(first))
    return failure();
  auto axis = normalizeAxis(static_cast<int64_t>(adaptor.getAxis()),
                            first->getRank(), diag);
  if (failed(axis))
    return failure();
  SmallVector<int64_t> shape(first->getShape());
  for (Value v : adaptor.getInputs().drop_front()) {
    auto type = staticTensor(v, "inputs", diag);
    if (failed(type) ||
        failed(checkSameElementType(*first, "inputs", *type, "inputs", diag)))
      return failure();
    if (type->getRank() != first->getRank())
      return diag("expects inputs of the same rank, got ", *first, " and ",
                  *type);
    for (int64_t d = 0; d < first->getRank(); ++d) {
      if (d == *axis)
        continue;
      if (type->getDimSize(d) != first->getDimSize(d))
        return diag("expects inputs to agree except along axis ", *axis,
                    ", got ", *first, " and ", *type);
    }
    shape[*axis] += type->getDimSize(*axis);
  }
  results.push_back(RankedTensorType::get(shape, first->getElementType()));
  return success();
}

/// Checks that a box of `sizes` at `offsets`, `strides` apart, fits `shape`.
static LogicalResult checkSliceBox(ArrayRef<int64_t> shape,
                                   ArrayRef<int64_t> offsets,
                                   ArrayRef<int64_t> sizes,
                                   std::optional<ArrayRef<int64_t>> strides,
                                   const Diag &diag) {
  size_t rank = shape.size();
  if (offsets.size() != rank || sizes.size() != rank ||
      (strides && strides->size() != rank))
    return diag("expects offsets, sizes and strides with one entry per "
                "dimension (",
                rank, ")");
  for (size_t d = 0; d < rank; ++d) {
    int64_t stride = strides ? (*strides)[d] : 1;
    if (offsets[d] < 0 || sizes[d] < 1 || stride < 1)
      return diag("expects offsets >= 0, sizes >= 1 and strides >= 1 in "
                  "dimension ",
                  d);
    // offset + (size - 1) * stride, computed without overflow.
    int64_t span, last;
    if (llvm::MulOverflow(sizes[d] - 1, stride, span) ||
        llvm::AddOverflow(offsets[d], span, last) || last >= shape[d])
      return diag("expects the slice within bounds in dimension ", d,
                  ": offset ", offsets[d], " + (", sizes[d], " - 1) * ", stride,
                  " >= ", shape[d]);
  }
  return success();
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &results) {
  Diag diag(loc, getOperationName());
  auto type = staticTensor(adaptor.getInput(), "input", diag);
  if (failed(type) ||
      failed(checkSliceBox(type->getShape(), adaptor.getOffsets(),
                           adaptor.getSizes(), adaptor.getStrides(), diag)))
    return failure();
  results.push_back(
      RankedTensorType::get(adaptor.getSizes(), type->getElementType()));
  return success();
}

LogicalResult SliceBackwardOp::verify() {
  Diag diag(getLoc(), getOperationName());
  RankedTensorType grad = getGrad().getType(), out = getType();
  if (failed(checkSameElementType(grad, "grad", out, "result", diag)))
    return failure();
  if (grad.getRank() != out.getRank())
    return diag("expects grad and result of the same rank, got ", grad, " and ",
                out);
  return checkSliceBox(out.getShape(), getOffsets(), grad.getShape(),
                       getStrides(), diag);
}

LogicalResult BroadcastToOp::verify() {
  RankedTensorType in = getInput().getType(), out = getType();
  if (in.getElementType() != out.getElementType())
    return emitOpError("expects the same element type, got ")
           << in.getElementType() << " and " << out.getElementType();
  int64_t lead = out.getRank() - in.getRank();
  bool ok = lead >= 0;
  for (int64_t d = 0; ok && d < in.getRank(); ++d)
    ok = in.getDimSize(d) == 1 || in.getDimSize(d) == out.getDimSize(lead + d);
  if (!ok)
    return emitOpError("cannot broadcast ")
           << shapeStr(in.getShape()) << " to " << shapeStr(out.getShape());
  return success();
}

namespace {
/// A broadcast read by an op that broadcasts its operands itself (the
/// elementwise binary ops, compare, where): that op reads the broadcast's
/// input instead, where the shape it broadcasts its operands to stays its
/// result's; the broadcast is erased once nothing reads it. The reader
/// then repeats the elements itself (stride 0) instead of reading a tensor
/// that a copy wrote out in full.
struct BroadcastIntoReaders : public OpRewritePattern<BroadcastToOp> {
  using OpRewritePattern<BroadcastToOp>::OpRewritePattern;
  LogicalResult matchAndRewrite(BroadcastToOp op,
                                PatternRewriter &rewriter) const override {
    bool changed = false;
    for (OpOperand &use : llvm::make_early_inc_range(op->getUses())) {
      Operation *reader = use.getOwner();
      if (!isa<AddOp, SubOp, MulOp, DivOp, PowOp, CompareOp, WhereOp>(reader))
        continue;
      auto result = cast<RankedTensorType>(reader->getResult(0).getType());
      SmallVector<int64_t> shape;
      bool compatible = true;
      for (OpOperand &operand : reader->getOpOperands()) {
        Value v = &operand == &use ? op.getInput() : operand.get();
        SmallVector<int64_t> next;
        compatible &= OpTrait::util::getBroadcastedShape(
            shape, cast<RankedTensorType>(v.getType()).getShape(), next);
        shape = next;
      }
      if (!compatible || ArrayRef<int64_t>(shape) != result.getShape())
        continue;
      rewriter.modifyOpInPlace(reader, [&] { use.set(op.getInput()); });
      changed = true;
    }
    if (!changed)
      return rewriter.notifyMatchFailure(op, "no reader broadcasts itself");
    if (op->use_empty())
      rewriter.eraseOp(op);
    return success();
  }
};
} // namespace

void BroadcastToOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                                MLIRContext *context) {
  patterns.add<BroadcastIntoReaders>(context);
}

LogicalResult EmbeddingOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  Diag diag(loc, getOperationName());
  auto table = staticTensor(adaptor.getTable(), "table", diag);
  auto indices = staticTensor(adaptor.getIndices(), "indices", diag);
  if (failed(table) || failed(indices) ||
      failed(checkRank(*table, "a [V, D] table", 2, diag)))
    return failure();
  SmallVector<int64_t> shape(indices->getShape());
  shape.push_back(table->getDimSize(1));
  results.push_back(RankedTensorType::get(shape, table->getElementType()));
  return success();
}

/// A padding row within the table's V rows.
static LogicalResult checkPaddingIdx(std::optional<int64_t> padding,
                                     RankedTensorType table, const Diag &diag) {
  if (padding && table.getRank() == 2 &&
      (*padding < 0 || *padding >= table.getDimSize(0)))
    return diag("expects padding_idx in [0, ", table.getDimSize(0), "), got ",
                *padding);
  return success();
}

LogicalResult EmbeddingOp::verify() {
  return checkPaddingIdx(getPaddingIdx(), getTable().getType(),
                         Diag(getLoc(), getOperationName()));
}

LogicalResult EmbeddingBackwardOp::verify() {
  Diag diag(getLoc(), getOperationName());
  RankedTensorType grad = getGrad().getType(), table = getType();
  if (failed(checkRank(table, "a [V, D] table result", 2, diag)) ||
      failed(checkSameElementType(grad, "grad", table, "result", diag)) ||
      failed(checkPaddingIdx(getPaddingIdx(), table, diag)))
    return failure();
  SmallVector<int64_t> expected(getIndices().getType().getShape());
  expected.push_back(table.getDimSize(1));
  if (grad.getShape() != ArrayRef<int64_t>(expected))
    return diag("expects grad of shape ", shapeStr(expected),
                " (indices shape, then D), got ", shapeStr(grad.getShape()));
  return success();
}

/// The NHWC result shape of a 2-D pooling, or an error.
static FailureOr<SmallVector<int64_t>>
pool2dShape(RankedTensorType input, ArrayRef<int64_t> kernel,
            std::optional<ArrayRef<int64_t>> strideAttr,
            ArrayRef<int64_t> padding, const Diag &diag) {
  ArrayRef<int64_t> stride = strideAttr ? *strideAttr : kernel;
  if (failed(checkRank(input, "an NHWC input", 4, diag)) ||
      failed(checkPair(kernel, "kernel", 1, diag)) ||
      failed(checkPair(stride, "stride", 1, diag)) ||
      failed(checkPair(padding, "padding", 0, diag)))
    return failure();
  SmallVector<int64_t> out(input.getShape());
  for (int i = 0; i < 2; ++i) {
    if (2 * padding[i] > kernel[i]) {
      (void)diag("expects padding at most half the kernel, got padding ",
                 shapeStr(padding), " for kernel ", shapeStr(kernel));
      return failure();
    }
    int64_t extent = out[1 + i] + 2 * padding[i] - kernel[i];
    if (extent < 0) {
      (void)diag("expects the kernel ", shapeStr(kernel),
                 " to fit the padded input");
      return failure();
    }
    out[1 + i] = extent / stride[i] + 1;
  }
  return out;
}

#define MPC_POOL_INFER(OP)                                                     \
  LogicalResult OP::inferReturnTypes(                                          \
      MLIRContext *, std::optional<Location> loc, Adaptor adaptor,             \
      SmallVectorImpl<Type> &results) {                                        \
    Diag diag(loc, getOperationName());                                        \
    auto input = staticTensor(adaptor.getInput(), "input", diag);              \
    if (failed(input))                                                         \
      return failure();                                                        \
    auto shape = pool2dShape(*input, adaptor.getKernel(), adaptor.getStride(), \
                             adaptor.getPadding(), diag);                      \
    if (failed(shape))                                                         \
      return failure();                                                        \
    results.push_back(RankedTensorType::get(*shape, input->getElementType())); \
    return success();                                                          \
  }
MPC_POOL_INFER(MaxPool2DOp)
MPC_POOL_INFER(AvgPool2DOp)
#undef MPC_POOL_INFER

template <typename OpTy> static LogicalResult verifyPoolBackward(OpTy op) {
  Diag diag(op.getLoc(), op.getOperationName());
  RankedTensorType grad = op.getGrad().getType();
  auto shape = pool2dShape(op.getInput().getType(), op.getKernel(),
                           op.getStride(), op.getPadding(), diag);
  if (failed(shape) ||
      failed(checkSameElementType(grad, "grad", op.getInput().getType(),
                                  "input", diag)))
    return failure();
  if (grad.getShape() != ArrayRef<int64_t>(*shape))
    return diag("expects grad of the forward output's shape ", shapeStr(*shape),
                ", got ", shapeStr(grad.getShape()));
  return success();
}

LogicalResult MaxPool2DBackwardOp::verify() {
  if (failed(verifyPoolBackward(*this)))
    return failure();
  return verifyAddend(*this, getAddend(), getType());
}
LogicalResult AvgPool2DBackwardOp::verify() {
  return verifyPoolBackward(*this);
}

/// Upsampling (`up`) multiplies H and W by the scale; its backward divides.
static LogicalResult inferUpsample(Value value, ArrayRef<int64_t> scale,
                                   bool up, const Diag &diag,
                                   SmallVectorImpl<Type> &results) {
  auto type = staticTensor(value, up ? "input" : "grad", diag);
  if (failed(type) || failed(checkRank(*type, "an NHWC tensor", 4, diag)) ||
      failed(checkPair(scale, "scale", 1, diag)))
    return failure();
  SmallVector<int64_t> shape(type->getShape());
  for (int i = 0; i < 2; ++i) {
    if (up) {
      shape[1 + i] *= scale[i];
      continue;
    }
    if (shape[1 + i] % scale[i])
      return diag("expects grad H and W divisible by scale ", shapeStr(scale),
                  ", got ", *type);
    shape[1 + i] /= scale[i];
  }
  results.push_back(RankedTensorType::get(shape, type->getElementType()));
  return success();
}

LogicalResult UpsampleNearest2DOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &results) {
  return inferUpsample(adaptor.getInput(), adaptor.getScale(), /*up=*/true,
                       Diag(loc, getOperationName()), results);
}

LogicalResult UpsampleNearest2DBackwardOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &results) {
  return inferUpsample(adaptor.getGrad(), adaptor.getScale(), /*up=*/false,
                       Diag(loc, getOperationName()), results);
}

LogicalResult DropoutOp::inferReturnTypes(MLIRContext *context,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &results) {
  // p is checked by the verifier (an inference error would be reported
  // twice).
  Diag diag(loc, getOperationName());
  auto type = staticTensor(adaptor.getInput(), "input", diag);
  if (failed(type))
    return failure();
  results.append({*type, RankedTensorType::get(type->getShape(),
                                               IntegerType::get(context, 1))});
  return success();
}

bool DropoutOp::isCompatibleReturnTypes(TypeRange inferred, TypeRange actual) {
  // The result's type is the verifier's to check (its own message).
  return inferred.size() == 2 && actual.size() == 2 && inferred[1] == actual[1];
}

LogicalResult DropoutOp::verify() {
  Diag diag(getLoc(), getOperationName());
  if (failed(checkFraction(getP().convertToDouble(), "p",
                           /*closedHigh=*/false, diag)))
    return failure();
  if (getResult().getType().getShape() != getInput().getType().getShape())
    return diag("expects a result of the input's shape, got ",
                getResult().getType(), " for ", getInput().getType());
  return verifyMixableTypes(*this,
                            {getInput().getType(), getResult().getType()});
}

LogicalResult DropoutBackwardOp::verify() {
  Diag diag(getLoc(), getOperationName());
  if (failed(checkFraction(getP().convertToDouble(), "p",
                           /*closedHigh=*/false, diag)))
    return failure();
  if (getMask().getType().getShape() != getGrad().getType().getShape())
    return diag("expects mask and grad of the same shape, got ",
                getMask().getType(), " and ", getGrad().getType());
  return success();
}

/// mpc.softmax_dropout and its backward: `types` mixing only what the
/// kernels take, a rank of at least 1 (the last axis), the softmax's
/// scale and the dropout's p.
template <typename OpTy>
static LogicalResult verifySoftmaxDropout(OpTy op, TypeRange types) {
  Diag diag(op.getLoc(), op.getOperationName());
  if (cast<RankedTensorType>(types.front()).getRank() == 0)
    return diag("expects a tensor of rank >= 1, got ", types.front());
  if (failed(checkFraction(op.getP().convertToDouble(), "p",
                           /*closedHigh=*/false, diag)))
    return failure();
  return failure(failed(verifyScale(op)) ||
                 failed(verifyMixableTypes(op, types)));
}

LogicalResult SoftmaxDropoutOp::verify() {
  return verifySoftmaxDropout(*this, {getInput().getType(), getType()});
}
LogicalResult SoftmaxDropoutBackwardOp::verify() {
  if (failed(verifySoftmaxDropout(
          *this,
          {getGrad().getType(), getInput().getType(), getResult().getType()})))
    return failure();
  // The forward's result: the type of its gradient.
  if (Value dropped = getDropped();
      dropped && dropped.getType() != getGrad().getType())
    return emitOpError("expects dropped probabilities of the gradient's type ")
           << getGrad().getType() << ", got " << dropped.getType();
  return success();
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

/// Checks loss operands: class-index targets have the input's shape less
/// its last (class) dimension; other targets the input's type.
static LogicalResult checkLossOperands(Value inputValue, Value targetValue,
                                       bool classIndices, const Diag &diag) {
  auto input = staticTensor(inputValue, "input", diag);
  auto target = staticTensor(targetValue, "target", diag);
  if (failed(input) || failed(target))
    return failure();
  if (!classIndices) {
    if (*input != *target)
      return diag("expects input and target of the same type, got ", *input,
                  " and ", *target);
    return success();
  }
  if (input->getRank() < 2)
    return diag("expects logits of rank >= 2 with classes last, got ", *input);
  ArrayRef<int64_t> expected = input->getShape().drop_back();
  if (target->getShape() != expected)
    return diag("expects labels of shape ", shapeStr(expected),
                " (logits without the class dimension), got ",
                shapeStr(target->getShape()));
  return success();
}

/// A label smoothing in [0, 1], as PyTorch's.
static LogicalResult checkLabelSmoothing(FloatAttr smoothing,
                                         const Diag &diag) {
  if (!smoothing)
    return success();
  double e = smoothing.getValueAsDouble();
  if (!(e >= 0 && e <= 1))
    return diag("expects a label_smoothing in [0, 1], got ", e);
  return success();
}

/// An ignore_index that 32-bit labels can hold (another would never match).
static LogicalResult checkIgnoreIndex(IntegerAttr ignore, Value target,
                                      const Diag &diag) {
  if (!ignore ||
      !cast<RankedTensorType>(target.getType()).getElementType().isInteger(32))
    return success();
  int64_t v = ignore.getInt();
  if (v < std::numeric_limits<int32_t>::min() ||
      v > std::numeric_limits<int32_t>::max())
    return diag("expects an ignore_index that 32-bit labels can hold, got ", v);
  return success();
}

/// mpc.cross_entropy's and its backward's ignore_index and label_smoothing.
template <typename Adaptor>
static LogicalResult checkCrossEntropyAttrs(Adaptor adaptor, const Diag &diag) {
  if (failed(checkIgnoreIndex(adaptor.getIgnoreIndexAttr(), adaptor.getTarget(),
                              diag)))
    return failure();
  return checkLabelSmoothing(adaptor.getLabelSmoothingAttr(), diag);
}

template <bool ClassIndices, typename Adaptor>
static LogicalResult inferLoss(Adaptor adaptor, const Diag &diag,
                               SmallVectorImpl<Type> &results) {
  if (failed(checkLossOperands(adaptor.getInput(), adaptor.getTarget(),
                               ClassIndices, diag)))
    return failure();
  if constexpr (ClassIndices)
    if (failed(checkCrossEntropyAttrs(adaptor, diag)))
      return failure();
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  results.push_back(RankedTensorType::get({}, input.getElementType()));
  return success();
}

template <bool ClassIndices, typename Adaptor>
static LogicalResult inferLossBackward(Adaptor adaptor, const Diag &diag,
                                       SmallVectorImpl<Type> &results) {
  if (failed(checkLossOperands(adaptor.getInput(), adaptor.getTarget(),
                               ClassIndices, diag)))
    return failure();
  if constexpr (ClassIndices)
    if (failed(checkCrossEntropyAttrs(adaptor, diag)))
      return failure();
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  auto grad = staticTensor(adaptor.getGrad(), "grad", diag);
  if (failed(grad))
    return failure();
  auto scalar = RankedTensorType::get({}, input.getElementType());
  if (*grad != scalar)
    return diag("expects a rank-0 loss gradient of type ", scalar, ", got ",
                *grad);
  results.push_back(input);
  return success();
}

#define MPC_LOSS_INFER(OP, HOW, CLASSES)                                       \
  LogicalResult OP::inferReturnTypes(                                          \
      MLIRContext *, std::optional<Location> loc, Adaptor adaptor,             \
      SmallVectorImpl<Type> &results) {                                        \
    return HOW<CLASSES>(adaptor, Diag(loc, getOperationName()), results);      \
  }
MPC_LOSS_INFER(CrossEntropyOp, inferLoss, true)
MPC_LOSS_INFER(CrossEntropyBackwardOp, inferLossBackward, true)
MPC_LOSS_INFER(MSEOp, inferLoss, false)
MPC_LOSS_INFER(MSEBackwardOp, inferLossBackward, false)
MPC_LOSS_INFER(BCEWithLogitsOp, inferLoss, false)
MPC_LOSS_INFER(BCEWithLogitsBackwardOp, inferLossBackward, false)
MPC_LOSS_INFER(BinaryCrossEntropyOp, inferLoss, false)
MPC_LOSS_INFER(BinaryCrossEntropyBackwardOp, inferLossBackward, false)
#undef MPC_LOSS_INFER

LogicalResult AccuracyOp::inferReturnTypes(MLIRContext *context,
                                           std::optional<Location> loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &results) {
  Diag diag(loc, getOperationName());
  if (failed(checkLossOperands(adaptor.getInput(), adaptor.getTarget(), true,
                               diag)) ||
      failed(checkIgnoreIndex(adaptor.getIgnoreIndexAttr(), adaptor.getTarget(),
                              diag)))
    return failure();
  results.push_back(RankedTensorType::get({}, Float32Type::get(context)));
  return success();
}

//===----------------------------------------------------------------------===//
// Loss scaling
//===----------------------------------------------------------------------===//

LogicalResult AllReduceOp::inferReturnTypes(MLIRContext *context,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  Diag diag(loc, getOperationName());
  if (adaptor.getInputs().empty())
    return diag("expects at least one tensor");
  Type element;
  for (Value input : adaptor.getInputs()) {
    auto type = staticTensor(input, "inputs", diag);
    if (failed(type))
      return failure();
    if (element && type->getElementType() != element)
      return diag("expects one element type in a bucket, got ", element,
                  " and ", type->getElementType());
    element = type->getElementType();
    results.push_back(*type);
  }
  if (static_cast<int64_t>(adaptor.getBucket()) < 0)
    return diag("bucket must be 0 or more, got ",
                static_cast<int64_t>(adaptor.getBucket()));
  return success();
}

LogicalResult UnscaleAndCheckOp::inferReturnTypes(
    MLIRContext *context, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &results) {
  Diag diag(loc, getOperationName());
  if (adaptor.getGrads().empty())
    return diag("expects at least one gradient");
  Type f32 = Float32Type::get(context);
  for (Value grad : adaptor.getGrads()) {
    auto type = staticTensor(grad, "grads", diag);
    if (failed(type))
      return failure();
    results.push_back(RankedTensorType::get(type->getShape(), f32));
  }
  results.push_back(RankedTensorType::get({}, IntegerType::get(context, 1)));
  return success();
}

/// A number in a diagnostic as a user writes it (%g).
static std::string shortNumber(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

LogicalResult ClipGradNormOp::verify() {
  if (getGrads().empty())
    return emitOpError("expects at least one gradient");
  double maxNorm = getMaxNorm().convertToDouble();
  if (!(maxNorm > 0) || !std::isfinite(maxNorm))
    return emitOpError("expects max_norm > 0 and finite, got ")
           << shortNumber(maxNorm);
  return success();
}

LogicalResult GradStatsOp::inferReturnTypes(MLIRContext *context,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  Diag diag(loc, getOperationName());
  if (adaptor.getGrads().empty())
    return diag("expects at least one gradient");
  for (Value grad : adaptor.getGrads())
    if (failed(staticTensor(grad, "grads", diag)))
      return failure();
  results.push_back(RankedTensorType::get({4}, IntegerType::get(context, 64)));
  return success();
}

LogicalResult UpdateLossScaleOp::verify() {
  double growth = getGrowthFactor().convertToDouble();
  double backoff = getBackoffFactor().convertToDouble();
  if (!(growth > 1.0))
    return emitOpError("expects growth_factor > 1, got ") << growth;
  if (!(backoff > 0.0 && backoff < 1.0))
    return emitOpError("expects backoff_factor in (0, 1), got ") << backoff;
  if (static_cast<int64_t>(getGrowthInterval()) < 1)
    return emitOpError("expects growth_interval >= 1, got ")
           << static_cast<int64_t>(getGrowthInterval());
  if (static_cast<int64_t>(getHysteresis()) < 1)
    return emitOpError("expects hysteresis >= 1, got ")
           << static_cast<int64_t>(getHysteresis());
  std::optional<APFloat> lo = getMinScale(), hi = getMaxScale();
  if (lo && !(lo->convertToDouble() > 0.0))
    return emitOpError("expects min_scale > 0, got ") << lo->convertToDouble();
  if (lo && hi && lo->convertToDouble() > hi->convertToDouble())
    return emitOpError("expects min_scale <= max_scale, got ")
           << lo->convertToDouble() << " > " << hi->convertToDouble();
  if (hi && !(hi->convertToDouble() > 0.0))
    return emitOpError("expects max_scale > 0, got ") << hi->convertToDouble();
  return success();
}

//===----------------------------------------------------------------------===//
// Optimizer updates
//===----------------------------------------------------------------------===//

/// The type of the low-precision weight copy of `param`.
static RankedTensorType copyTypeOf(Type param, Type element) {
  return RankedTensorType::get(cast<RankedTensorType>(param).getShape(),
                               element);
}

/// Checks what both optimizer ops share: gradient shape, state types, the
/// copy result and the hyper-parameters that must be non-negative.
template <typename OpTy>
static LogicalResult verifyUpdateCommon(OpTy op, ValueRange state,
                                        ValueRange newState) {
  RankedTensorType param = op.getParam().getType();
  if (op.getGrad().getType().getShape() != param.getShape())
    return op.emitOpError("expects grad of the parameter's shape ")
           << shapeStr(param.getShape()) << ", got " << op.getGrad().getType();
  if (op.getNewParam().getType() != param)
    return op.emitOpError("expects the new parameter of type ") << param;
  for (auto [in, out] : llvm::zip_equal(state, newState))
    if (in.getType() != param || out.getType() != param)
      return op.emitOpError("expects optimizer state and its new value of the "
                            "parameter's type ")
             << param << ", got " << in.getType() << " and " << out.getType();
  std::optional<Type> copy = op.getCopyType();
  if (copy.has_value() != static_cast<bool>(op.getParamCopy()))
    return op.emitOpError("expects a parameter copy result exactly when "
                          "'copy_type' is set");
  if (copy && op.getParamCopy().getType() != copyTypeOf(param, *copy))
    return op.emitOpError("expects the copy of type ")
           << copyTypeOf(param, *copy);
  if (op.getWeightDecay().convertToDouble() < 0.0)
    return op.emitOpError("expects weight_decay >= 0, got ")
           << op.getWeightDecay().convertToDouble();
  return success();
}

LogicalResult SGDUpdateOp::verify() {
  if (static_cast<bool>(getMomentumBuffer()) !=
      static_cast<bool>(getNewMomentumBuffer()))
    return emitOpError("expects a new momentum buffer result exactly when a "
                       "momentum buffer is given");
  SmallVector<Value> state, newState;
  if (getMomentumBuffer()) {
    state.push_back(getMomentumBuffer());
    newState.push_back(getNewMomentumBuffer());
  }
  if (failed(verifyUpdateCommon(*this, state, newState)))
    return failure();
  double momentum = getMomentum().convertToDouble();
  double dampening = getDampening().convertToDouble();
  if (momentum < 0.0)
    return emitOpError("expects momentum >= 0, got ") << momentum;
  if (dampening < 0.0 || dampening > 1.0)
    return emitOpError("expects dampening in [0, 1], got ") << dampening;
  if ((momentum > 0.0) != static_cast<bool>(getMomentumBuffer()))
    return emitOpError("expects a momentum buffer exactly when momentum > 0");
  if (getNesterov() && (momentum == 0.0 || dampening != 0.0))
    return emitOpError("expects momentum > 0 and zero dampening with "
                       "nesterov");
  return success();
}

LogicalResult AdamUpdateOp::verify() {
  if (failed(verifyUpdateCommon(*this, ValueRange{getExpAvg(), getExpAvgSq()},
                                ValueRange{getNewExpAvg(), getNewExpAvgSq()})))
    return failure();
  Diag diag(getLoc(), getOperationName());
  if (failed(checkFraction(getBeta1().convertToDouble(), "beta1",
                           /*closedHigh=*/false, diag)) ||
      failed(checkFraction(getBeta2().convertToDouble(), "beta2",
                           /*closedHigh=*/false, diag)))
    return failure();
  if (!(getEps().convertToDouble() > 0.0))
    return emitOpError("expects eps > 0, got ") << getEps().convertToDouble();
  return success();
}

/// Custom syntax shared by the optimizer ops:
///   `op %param, %grad[, %state...] lr(%lr) [step(%t)] [momentum_buffer(%m)]
///    [found_inf(%f)] [inv_scale(%s)] [copy(T)] attr-dict : Tparam, Tgrad`
/// Scalar operands have fixed types and state the parameter's, so only the
/// parameter and gradient types are written.
namespace {
struct OptionalOperand {
  StringRef keyword;
  Value value;
};
} // namespace

static void printUpdate(OpAsmPrinter &p, Operation *op, ValueRange leading,
                        ArrayRef<OptionalOperand> keyed,
                        std::optional<Type> copyType,
                        ArrayRef<StringRef> elided) {
  p << ' ';
  p.printOperands(leading);
  for (const OptionalOperand &k : keyed) {
    if (!k.value)
      continue;
    p << ' ' << k.keyword << '(';
    p.printOperand(k.value);
    p << ')';
  }
  if (copyType)
    p << " copy(" << *copyType << ')';
  SmallVector<StringRef> skip(elided);
  skip.append({"operandSegmentSizes", "resultSegmentSizes", "copy_type"});
  p.printOptionalAttrDict(op->getAttrDictionary().getValue(), skip);
  p << " : " << leading[0].getType() << ", " << leading[1].getType();
}

/// Parses the shared syntax. `numLeading` operands come first; `keywords`
/// lists the optional keyed operands, `required` those that must appear.
/// Fills `present` per keyword and returns the parsed pieces.
namespace {
struct ParsedUpdate {
  SmallVector<OpAsmParser::UnresolvedOperand> leading;
  SmallVector<std::optional<OpAsmParser::UnresolvedOperand>> keyed;
  Type copyType;
  Type paramType, gradType;
};
} // namespace

/// Checks the kind of each inherent attribute in an attribute dictionary
/// (what the declarative assembly formats do after `attr-dict`).
using AttrCheck = function_ref<LogicalResult(
    NamedAttrList &, function_ref<InFlightDiagnostic()>)>;

static ParseResult parseUpdate(OpAsmParser &parser, OperationState &result,
                               unsigned numLeading,
                               ArrayRef<StringRef> keywords,
                               ArrayRef<StringRef> required,
                               AttrCheck checkAttrs, ParsedUpdate &parsed) {
  if (parser.parseOperandList(parsed.leading) ||
      parsed.leading.size() != numLeading)
    return parser.emitError(parser.getCurrentLocation(), "expects ")
           << numLeading << " leading operands";
  parsed.keyed.resize(keywords.size());
  for (auto [i, keyword] : llvm::enumerate(keywords)) {
    if (failed(parser.parseOptionalKeyword(keyword))) {
      if (llvm::is_contained(required, keyword))
        return parser.emitError(parser.getCurrentLocation(), "expects '")
               << keyword << "(...)'";
      continue;
    }
    OpAsmParser::UnresolvedOperand operand;
    if (parser.parseLParen() || parser.parseOperand(operand) ||
        parser.parseRParen())
      return failure();
    parsed.keyed[i] = operand;
  }
  if (succeeded(parser.parseOptionalKeyword("copy"))) {
    SMLoc loc = parser.getCurrentLocation();
    if (parser.parseLParen() || parser.parseType(parsed.copyType) ||
        parser.parseRParen())
      return failure();
    if (!isa<FloatType>(parsed.copyType))
      return parser.emitError(loc, "expects a floating-point copy type, got ")
             << parsed.copyType;
    result.addAttribute("copy_type", TypeAttr::get(parsed.copyType));
  }
  SMLoc attrLoc = parser.getCurrentLocation();
  if (parser.parseOptionalAttrDict(result.attributes) ||
      failed(checkAttrs(result.attributes,
                        [&] { return parser.emitError(attrLoc); })) ||
      parser.parseColon() || parser.parseType(parsed.paramType) ||
      parser.parseComma() || parser.parseType(parsed.gradType))
    return failure();
  if (!isa<RankedTensorType>(parsed.paramType))
    return parser.emitError(parser.getNameLoc(),
                            "expects a ranked tensor parameter type");
  return success();
}

/// Resolves an optional keyed operand to `type`; returns its segment size.
static FailureOr<int32_t>
resolveKeyed(OpAsmParser &parser, OperationState &result,
             const std::optional<OpAsmParser::UnresolvedOperand> &operand,
             Type type) {
  if (!operand)
    return 0;
  if (parser.resolveOperand(*operand, type, result.operands))
    return failure();
  return 1;
}

void SGDUpdateOp::print(OpAsmPrinter &p) {
  SmallVector<StringRef> elided;
  if (getMomentum().isZero())
    elided.push_back("momentum");
  if (getDampening().isZero())
    elided.push_back("dampening");
  if (getWeightDecay().isZero())
    elided.push_back("weight_decay");
  printUpdate(p, *this, {getParam(), getGrad()},
              {{"lr", getLr()},
               {"momentum_buffer", getMomentumBuffer()},
               {"found_inf", getFoundInf()},
               {"inv_scale", getInvScale()}},
              getCopyType(), elided);
}

ParseResult SGDUpdateOp::parse(OpAsmParser &parser, OperationState &result) {
  ParsedUpdate parsed;
  auto checkAttrs = [&](NamedAttrList &attrs,
                        function_ref<InFlightDiagnostic()> emitError) {
    return verifyInherentAttrs(result.name, attrs, emitError);
  };
  if (parseUpdate(parser, result, 2,
                  {"lr", "momentum_buffer", "found_inf", "inv_scale"}, {"lr"},
                  checkAttrs, parsed))
    return failure();
  Builder &b = parser.getBuilder();
  auto f32 = RankedTensorType::get({}, b.getF32Type());
  auto i1 = RankedTensorType::get({}, b.getI1Type());
  if (parser.resolveOperand(parsed.leading[0], parsed.paramType,
                            result.operands) ||
      parser.resolveOperand(parsed.leading[1], parsed.gradType,
                            result.operands))
    return failure();
  Type keyedTypes[] = {f32, parsed.paramType, i1, f32};
  std::array<int32_t, 6> segments = {1, 1, 0, 0, 0, 0};
  for (int i = 0; i < 4; ++i) {
    auto n = resolveKeyed(parser, result, parsed.keyed[i], keyedTypes[i]);
    if (failed(n))
      return failure();
    segments[2 + i] = *n;
  }
  result.getOrAddProperties<Properties>().operandSegmentSizes = segments;
  int32_t hasCopy = parsed.copyType ? 1 : 0;
  result.getOrAddProperties<Properties>().resultSegmentSizes = {1, segments[3],
                                                                hasCopy};
  result.addTypes(parsed.paramType);
  if (segments[3])
    result.addTypes(parsed.paramType);
  if (hasCopy)
    result.addTypes(copyTypeOf(parsed.paramType, parsed.copyType));
  return success();
}

void AdamUpdateOp::print(OpAsmPrinter &p) {
  SmallVector<StringRef> elided;
  auto isDefault = [](APFloat value, double dflt) {
    return value.convertToDouble() == dflt;
  };
  if (isDefault(getBeta1(), 0.9))
    elided.push_back("beta1");
  if (isDefault(getBeta2(), 0.999))
    elided.push_back("beta2");
  if (isDefault(getEps(), 1.0e-8))
    elided.push_back("eps");
  if (getWeightDecay().isZero())
    elided.push_back("weight_decay");
  if (getBiasCorrection())
    elided.push_back("bias_correction");
  printUpdate(p, *this, {getParam(), getGrad(), getExpAvg(), getExpAvgSq()},
              {{"lr", getLr()},
               {"step", getStep()},
               {"found_inf", getFoundInf()},
               {"inv_scale", getInvScale()}},
              getCopyType(), elided);
}

ParseResult AdamUpdateOp::parse(OpAsmParser &parser, OperationState &result) {
  ParsedUpdate parsed;
  auto checkAttrs = [&](NamedAttrList &attrs,
                        function_ref<InFlightDiagnostic()> emitError) {
    return verifyInherentAttrs(result.name, attrs, emitError);
  };
  if (parseUpdate(parser, result, 4, {"lr", "step", "found_inf", "inv_scale"},
                  {"lr", "step"}, checkAttrs, parsed))
    return failure();
  Builder &b = parser.getBuilder();
  auto f32 = RankedTensorType::get({}, b.getF32Type());
  auto i1 = RankedTensorType::get({}, b.getI1Type());
  auto i32 = RankedTensorType::get({}, b.getI32Type());
  Type leadingTypes[] = {parsed.paramType, parsed.gradType, parsed.paramType,
                         parsed.paramType};
  for (auto [operand, type] : llvm::zip_equal(parsed.leading, leadingTypes))
    if (parser.resolveOperand(operand, type, result.operands))
      return failure();
  Type keyedTypes[] = {f32, i32, i1, f32};
  std::array<int32_t, 8> segments = {1, 1, 1, 1, 0, 0, 0, 0};
  for (int i = 0; i < 4; ++i) {
    auto n = resolveKeyed(parser, result, parsed.keyed[i], keyedTypes[i]);
    if (failed(n))
      return failure();
    segments[4 + i] = *n;
  }
  result.getOrAddProperties<Properties>().operandSegmentSizes = segments;
  int32_t hasCopy = parsed.copyType ? 1 : 0;
  result.addTypes({parsed.paramType, parsed.paramType, parsed.paramType});
  if (hasCopy)
    result.addTypes(copyTypeOf(parsed.paramType, parsed.copyType));
  return success();
}

std::optional<int64_t> mlir::mpc::checkedByteSize(ShapedType type) {
  int64_t elementBytes =
      llvm::divideCeil(type.getElementTypeBitWidth(), int64_t(8));
  int64_t bytes = elementBytes;
  for (int64_t d : type.getShape())
    if (d < 0 || llvm::MulOverflow(bytes, d, bytes) || bytes > kMaxTensorBytes)
      return std::nullopt;
  return bytes;
}

bool mlir::mpc::isNonEmptyAddressable(Type type) {
  auto shaped = dyn_cast<ShapedType>(type);
  if (!shaped || !shaped.hasStaticShape())
    return false;
  if (llvm::is_contained(shaped.getShape(), 0))
    return false;
  return checkedByteSize(shaped).has_value();
}

//===----------------------------------------------------------------------===//
// Custom type directives of the ops that may mix element types
//===----------------------------------------------------------------------===//

/// `input type (-> result type)?`: the arrow when the types differ.
static ParseResult parseResultType(OpAsmParser &parser, Type &input,
                                   Type &result) {
  if (parser.parseType(input))
    return failure();
  result = input;
  if (succeeded(parser.parseOptionalArrow()))
    return parser.parseType(result);
  return success();
}

static void printResultType(OpAsmPrinter &p, Operation *, Type input,
                            Type result) {
  p << input;
  if (result != input)
    p << " -> " << result;
}

/// `grad type (, output type)? (-> result type)?`: a type left out is the
/// gradient's.
static ParseResult parseOutputAndResultTypes(OpAsmParser &parser, Type &grad,
                                             Type &output, Type &result) {
  if (parser.parseType(grad))
    return failure();
  output = grad;
  result = grad;
  if (succeeded(parser.parseOptionalComma()) && parser.parseType(output))
    return failure();
  if (succeeded(parser.parseOptionalArrow()))
    return parser.parseType(result);
  return success();
}

static void printOutputAndResultTypes(OpAsmPrinter &p, Operation *, Type grad,
                                      Type output, Type result) {
  p << grad;
  if (output != grad)
    p << ", " << output;
  if (result != grad)
    p << " -> " << result;
}

/// `input type (, residual type)?, gamma type`: the residual's type is
/// written where it differs from the input's (a broadcast residual).
static ParseResult parseInputResidualGammaTypes(OpAsmParser &parser,
                                                Type &input, Type &residual,
                                                Type &gamma) {
  if (parser.parseType(input) || parser.parseComma() || parser.parseType(gamma))
    return failure();
  residual = input;
  if (succeeded(parser.parseOptionalComma())) {
    residual = gamma;
    return parser.parseType(gamma);
  }
  return success();
}

static void printInputResidualGammaTypes(OpAsmPrinter &p, Operation *,
                                         Type input, Type residual,
                                         Type gamma) {
  p << input;
  if (residual != input)
    p << ", " << residual;
  p << ", " << gamma;
}

/// The dropout's types as parseResultType's, and its mask type (i1 of the
/// input's shape).
static ParseResult parseResultAndMaskTypes(OpAsmParser &parser, Type &input,
                                           Type &result, Type &mask) {
  if (failed(parseResultType(parser, input, result)))
    return failure();
  auto shaped = dyn_cast<ShapedType>(input);
  if (!shaped || !shaped.hasRank())
    return parser.emitError(parser.getCurrentLocation(),
                            "expects a ranked tensor input, got ")
           << input;
  mask =
      RankedTensorType::get(shaped.getShape(), parser.getBuilder().getI1Type());
  return success();
}

static void printResultAndMaskTypes(OpAsmPrinter &p, Operation *op, Type input,
                                    Type result, Type) {
  printResultType(p, op, input, result);
}

#define GET_OP_CLASSES
#include "mpc/Dialect/MPC/IR/MPCOps.cpp.inc"

//===----------------------------------------------------------------------===//
// LRScheduleOp
//===----------------------------------------------------------------------===//

LogicalResult LRScheduleOp::verify() {
  StringRef kind = getKind();
  bool pytorch = kind == "one_cycle" || kind == "step" || kind == "exponential";
  if (kind != "constant" && kind != "linear_warmup" && kind != "cosine" &&
      !pytorch)
    return emitOpError("expects kind constant, linear_warmup, cosine, "
                       "one_cycle, step or exponential, got '")
           << kind << "'";
  int64_t warmup = static_cast<int64_t>(getWarmup());
  int64_t total = static_cast<int64_t>(getTotal());
  if (warmup < 0)
    return emitOpError("expects warmup >= 0, got ") << warmup;
  if (pytorch && warmup != 0)
    return emitOpError("expects no warmup for a ")
           << kind << " schedule (warm-up is linear_warmup's and cosine's)";
  double gamma = getGamma().convertToDouble();
  if ((kind == "step" || kind == "exponential") &&
      !(gamma > 0 && std::isfinite(gamma)))
    return emitOpError("expects gamma > 0, got ") << shortNumber(gamma);
  if (kind == "step" && static_cast<int64_t>(getStepSize()) < 1)
    return emitOpError("expects step_size >= 1 for a step schedule, got ")
           << static_cast<int64_t>(getStepSize());
  if (kind == "one_cycle") {
    double pct = getPctStart().convertToDouble();
    double div = getDivFactor().convertToDouble();
    double finalDiv = getFinalDivFactor().convertToDouble();
    if (!(pct > 0 && pct < 1))
      return emitOpError("expects 0 < pct_start < 1, got ") << shortNumber(pct);
    if (!(div > 0 && std::isfinite(div)) ||
        !(finalDiv > 0 && std::isfinite(finalDiv)))
      return emitOpError("expects div_factor and final_div_factor > 0");
    // PyTorch's phase ends, each after the one before (else a phase has no
    // length and its fraction divides by zero).
    double t = static_cast<double>(total);
    double first = pct * t - 1;
    double second = getThreePhase() ? 2 * pct * t - 2 : t - 1;
    if (!(first > 0 && second > first && t - 1 >= second))
      return emitOpError("expects phases of positive length: total ")
             << total << " with pct_start " << shortNumber(pct)
             << (getThreePhase() ? " (three phases)" : "")
             << " leaves a phase empty";
  }
  if (kind == "linear_warmup" && warmup == 0)
    return emitOpError("expects warmup > 0 for a linear warm-up");
  if (kind == "cosine" && total <= warmup)
    return emitOpError("expects total > warmup for a cosine schedule, got "
                       "total ")
           << total << " and warmup " << warmup;
  return success();
}

//===----------------------------------------------------------------------===//
// ReduceMaxBackwardOp
//===----------------------------------------------------------------------===//

LogicalResult ReduceMaxBackwardOp::verify() {
  auto input = cast<RankedTensorType>(getInput().getType());
  SmallVector<Type> inferred;
  if (failed(ReduceMaxOp::inferReturnTypes(
          getContext(), getLoc(), ValueRange{getInput()},
          DictionaryAttr::get(
              getContext(), {NamedAttribute(getDimsAttrName(), getDimsAttr())}),
          nullptr, {}, inferred)))
    return failure();
  SmallVector<int64_t> kept(input.getShape());
  for (int64_t d : getDims())
    kept[d < 0 ? d + input.getRank() : d] = 1;
  auto expected = getKeepDims()
                      ? RankedTensorType::get(kept, input.getElementType())
                      : cast<RankedTensorType>(inferred.front());
  if (getGrad().getType() != expected)
    return emitOpError("expects the gradient of the maximum to have type ")
           << expected << ", got " << getGrad().getType();
  return success();
}

//===----------------------------------------------------------------------===//
// Numerics checks
//===----------------------------------------------------------------------===//

LogicalResult CheckNumericsOp::verify() {
  if (getInputs().empty())
    return emitOpError("expects at least one value to check");
  if (getIndices().size() != getInputs().size())
    return emitOpError("expects one index per value, got ")
           << getIndices().size() << " for " << getInputs().size() << " values";
  llvm::SmallDenseSet<int64_t> seen;
  for (int64_t index : getIndices()) {
    if (index < 0)
      return emitOpError("expects non-negative indices, got ") << index;
    if (!seen.insert(index).second)
      return emitOpError("checks index ") << index << " twice";
  }
  return success();
}
