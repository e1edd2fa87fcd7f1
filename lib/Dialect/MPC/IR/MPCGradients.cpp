//===- MPCGradients.cpp - vector-Jacobian products of the mpc ops ---------===//
//
// Each forward op builds its own VJP (VJPOpInterface) from the dialect's
// backward ops: matmul gradients are matmuls with transposes, convolutions
// use their data/filter gradients, broadcasting is undone by reductions.
// The models are attached to the ops when the dialect loads.
//
//===----------------------------------------------------------------------===//

#include "mpc/Dialect/MPC/IR/MPCOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::mpc;

namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// A scalar constant of `like`'s element type.
Value scalar(OpBuilder &b, Location loc, Value like, double value) {
  auto type = RankedTensorType::get({}, typeOf(like).getElementType());
  Attribute attr = b.getFloatAttr(type.getElementType(), value);
  return ConstantOp::create(b, loc, type, DenseElementsAttr::get(type, attr));
}

/// Sums `grad` down to `target`'s shape: the adjoint of numpy broadcasting.
/// The leading dimensions go in one reduction, then each broadcast
/// dimension in its own (kept) one: every reduction is over adjacent
/// dimensions, as the runtime computes them.
Value unbroadcast(OpBuilder &b, Location loc, Value grad,
                  RankedTensorType target) {
  Value g = grad;
  int64_t lead = typeOf(g).getRank() - target.getRank();
  if (lead > 0)
    g = ReduceSumOp::create(b, loc, g,
                            llvm::to_vector(llvm::seq<int64_t>(0, lead)));
  for (int64_t d = 0; d < target.getRank(); ++d)
    if (target.getDimSize(d) == 1 && typeOf(g).getDimSize(d) != 1)
      g = ReduceSumOp::create(b, loc, g, ArrayRef<int64_t>{d},
                              /*keep_dims=*/true);
  return g;
}

/// The gradient of a reduction broadcast back over the reduced dimensions.
Value expandReduced(OpBuilder &b, Location loc, Value grad,
                    ArrayRef<int64_t> dims, RankedTensorType input) {
  SmallVector<int64_t> kept(input.getShape());
  for (int64_t d : dims)
    kept[d < 0 ? d + input.getRank() : d] = 1;
  auto keptType = RankedTensorType::get(kept, typeOf(grad).getElementType());
  Value g = grad;
  if (typeOf(g).getShape() != ArrayRef<int64_t>(kept))
    g = ReshapeOp::create(b, loc, keptType, g);
  if (keptType.getShape() == input.getShape())
    return g;
  return BroadcastToOp::create(
      b, loc,
      RankedTensorType::get(input.getShape(), keptType.getElementType()), g);
}

using Grads = SmallVectorImpl<Value>;

LogicalResult binary(Operation *op, OpBuilder &b, Value g, Grads &out) {
  Location loc = op->getLoc();
  Value lhs = op->getOperand(0), rhs = op->getOperand(1), y = op->getResult(0);
  Value dl, dr;
  if (isa<AddOp>(op)) {
    dl = g;
    dr = g;
  } else if (isa<SubOp>(op)) {
    dl = g;
    dr = NegOp::create(b, loc, g);
  } else if (isa<MulOp>(op)) {
    dl = MulOp::create(b, loc, g, rhs);
    dr = MulOp::create(b, loc, g, lhs);
  } else if (isa<DivOp>(op)) {
    dl = DivOp::create(b, loc, g, rhs);
    dr = NegOp::create(b, loc,
                       DivOp::create(b, loc, MulOp::create(b, loc, g, y), rhs));
  } else {
    // pow: d/dl = r * l^(r-1), 0 where r = 0; d/dr = y * log(l), 0 where
    // l = 0 and r >= 0. PyTorch's pow_backward takes the same limits, where
    // the formulas give 0 * inf or 0 * -inf: NaN gradients (and at O2
    // every step skipped) for 0^0 or a trainable exponent of a zero base.
    auto compare = [&](Value v, double c, StringRef predicate) {
      return CompareOp::create(b, loc, v, scalar(b, loc, v, c),
                               b.getStringAttr(predicate))
          .getResult();
    };
    Value zero = scalar(b, loc, y, 0.0);
    Value rm1 = SubOp::create(b, loc, rhs, scalar(b, loc, rhs, 1.0));
    Value dBase =
        MulOp::create(b, loc, rhs, PowOp::create(b, loc, lhs, rm1)).getResult();
    // A constant exponent without zeros (x^2, x^0.5) needs no guard.
    DenseElementsAttr exponent;
    bool noZeroExponent =
        matchPattern(rhs, m_Constant(&exponent)) &&
        llvm::none_of(exponent.getValues<APFloat>(),
                      [](const APFloat &v) { return v.isZero(); });
    if (!noZeroExponent)
      dBase = WhereOp::create(b, loc, compare(rhs, 0.0, "eq"), zero, dBase);
    dl = MulOp::create(b, loc, g, dBase);
    Value dExp = MulOp::create(b, loc, y, LogOp::create(b, loc, lhs));
    dExp = WhereOp::create(
        b, loc, compare(lhs, 0.0, "eq"),
        WhereOp::create(b, loc, compare(rhs, 0.0, "ge"), zero, dExp), dExp);
    dr = MulOp::create(b, loc, g, dExp);
  }
  out[0] = unbroadcast(b, loc, dl, typeOf(lhs));
  out[1] = unbroadcast(b, loc, dr, typeOf(rhs));
  return success();
}

LogicalResult unary(Operation *op, OpBuilder &b, Value g, Grads &out) {
  Location loc = op->getLoc();
  Value x = op->getOperand(0), y = op->getResult(0);
  out[0] =
      llvm::TypeSwitch<Operation *, Value>(op)
          .Case([&](NegOp) { return NegOp::create(b, loc, g); })
          .Case([&](ExpOp) { return MulOp::create(b, loc, g, y); })
          .Case([&](LogOp) { return DivOp::create(b, loc, g, x); })
          .Case([&](SqrtOp) {
            return DivOp::create(
                b, loc, g, MulOp::create(b, loc, y, scalar(b, loc, y, 2.0)));
          })
          .Case([&](RsqrtOp) { // -1/2 x^-3/2 = -1/2 y^3
            Value y3 = MulOp::create(b, loc, MulOp::create(b, loc, y, y), y);
            return MulOp::create(
                b, loc, g, MulOp::create(b, loc, y3, scalar(b, loc, y, -0.5)));
          })
          .Case([&](SinOp) {
            return MulOp::create(b, loc, g, CosOp::create(b, loc, x));
          })
          .Case([&](CosOp) {
            return NegOp::create(
                b, loc, MulOp::create(b, loc, g, SinOp::create(b, loc, x)));
          })
          .Case([&](TanhOp) { return TanhGradOp::create(b, loc, g, y); })
          .Case([&](SigmoidOp) { return SigmoidGradOp::create(b, loc, g, y); })
          .Case([&](ReluOp) { return ReluGradOp::create(b, loc, g, x); })
          .Case([&](GeluOp gelu) {
            return GeluGradOp::create(b, loc, g, x, gelu.getApproximateAttr());
          })
          .Default([](Operation *) { return Value(); });
  return success(out[0] != nullptr);
}

/// The gradients of op(a) x op(w) from the result's gradient `g`.
void matmulGrads(OpBuilder &b, Location loc, Value a, Value w, bool ta, bool tb,
                 Value g, Grads &out) {
  Value da = !ta ? MatmulOp::create(b, loc, g, w, false, !tb)
                 : MatmulOp::create(b, loc, w, g, tb, true);
  out[0] = unbroadcast(b, loc, da, typeOf(a));
  RankedTensorType at = typeOf(a), wt = typeOf(w), gt = typeOf(g);
  if (!ta && wt.getRank() == 2 && at.getRank() > 2) {
    // A linear layer over [..., M, K] rows with one weight: the weight's
    // gradient is one product over all rows (the batch folded into the
    // contraction), not one per batch summed afterwards (an extra
    // gradient per batch, each rounded to the operands' type).
    int64_t k = at.getShape().back(), rows = at.getNumElements() / k;
    Value a2 = ReshapeOp::create(
        b, loc, RankedTensorType::get({rows, k}, at.getElementType()), a);
    Value g2 =
        ReshapeOp::create(b, loc,
                          RankedTensorType::get({rows, gt.getShape().back()},
                                                gt.getElementType()),
                          g);
    out[1] = tb ? MatmulOp::create(b, loc, g2, a2, true, false)
                : MatmulOp::create(b, loc, a2, g2, true, false);
    return;
  }
  Value dw = !tb ? MatmulOp::create(b, loc, a, g, !ta, false)
                 : MatmulOp::create(b, loc, g, a, true, ta);
  out[1] = unbroadcast(b, loc, dw, wt);
}

LogicalResult matmul(MatmulOp op, OpBuilder &b, Value g, Grads &out) {
  matmulGrads(b, op.getLoc(), op.getA(), op.getB(), op.getTransposeA(),
              op.getTransposeB(), g, out);
  return success();
}

/// activation(op(a) x op(w) + bias): the activation's gradient (ReLU's from
/// the output, which is positive where its input is; GELU's from the
/// pre-activation, written by the op or recomputed) plus the gradient of
/// the pre-activation result where something reads it, the bias's sum over
/// the rows, then the product's gradients in the operands' type.
LogicalResult fusedMatmul(FusedMatmulOp op, OpBuilder &b, Value g,
                          Value preGrad, Grads &out) {
  Location loc = op.getLoc();
  Value dh = g;
  if (!g) {
    dh = preGrad;
  } else if (op.getActivation() == "relu") {
    dh = ReluGradOp::create(b, loc, g, op.getResult());
  } else if (op.getActivation() == "gelu_tanh") {
    // The pre-activation the op wrote, or the product again.
    Value h = op.getPreActivation();
    if (!h)
      h = FusedMatmulOp::create(b, loc, op.getResult().getType(), Type(),
                                op.getA(), op.getB(), op.getBias(),
                                op.getTransposeAAttr(), op.getTransposeBAttr(),
                                b.getStringAttr("none"))
              .getResult();
    dh = GeluGradOp::create(b, loc, g, h, b.getUnitAttr());
  }
  if (g && preGrad)
    dh = AddOp::create(b, loc, dh, preGrad);
  out[2] = unbroadcast(b, loc, dh, typeOf(op.getBias()));
  RankedTensorType operands = typeOf(op.getA());
  if (typeOf(dh).getElementType() != operands.getElementType())
    dh =
        CastOp::create(b, loc, typeOf(dh).clone(operands.getElementType()), dh);
  matmulGrads(b, loc, op.getA(), op.getB(), op.getTransposeA(),
              op.getTransposeB(), dh, out);
  return success();
}

template <typename Loss, typename Backward>
LogicalResult loss(Loss op, OpBuilder &b, Value g, Grads &out) {
  if constexpr (std::is_same_v<Loss, CrossEntropyOp>)
    out[0] =
        Backward::create(b, op.getLoc(), typeOf(op.getInput()), g,
                         op.getInput(), op.getTarget(), op.getReductionAttr(),
                         op.getIgnoreIndexAttr(), op.getLabelSmoothingAttr());
  else
    out[0] =
        Backward::create(b, op.getLoc(), typeOf(op.getInput()), g,
                         op.getInput(), op.getTarget(), op.getReductionAttr());
  return success();
}

LogicalResult vjp(Operation *op, OpBuilder &b, ArrayRef<Value> gs, Grads &out) {
  Location loc = op->getLoc();
  Value g = gs.empty() ? Value() : gs[0];
  if (auto fused = dyn_cast<AddLayerNormOp>(op)) {
    if ((gs.size() > 2 && gs[2]) || (gs.size() > 3 && gs[3]))
      return op->emitOpError("has no gradient through its statistics");
    if (!g && gs.size() > 1 && gs[1]) // only the sum is read: dy = 0
      g = ConstantOp::create(
          b, loc, fused.getResult().getType(),
          DenseElementsAttr::get(
              fused.getResult().getType(),
              b.getFloatAttr(fused.getResult().getType().getElementType(), 0)));
  }
  if (auto fused = dyn_cast<FusedMatmulOp>(op)) {
    Value preGrad = gs.size() > 1 ? gs[1] : Value();
    if (!g && !preGrad)
      return success();
    return fusedMatmul(fused, b, g, preGrad, out);
  }
  // Only an op's first result is differentiable, besides the fused
  // residual's sum and the fused GEMM's pre-activation: the others are
  // statistics, log-sum-exps or masks for the backward ops. A gradient
  // reaching one is an error; before, it was silently dropped (a loss of
  // attention's log-sum-exp trained with a zero gradient).
  for (size_t i = 1; i < gs.size(); ++i) {
    if (!gs[i] || (i == 1 && isa<AddLayerNormOp>(op))) // its sum: below
      continue;
    if (isa<AttentionOp>(op))
      return op->emitOpError("has no gradient through its logsumexp");
    return op->emitOpError("has no gradient through its result #")
           << i << "; only result #0 is differentiable";
  }
  if (!g) // nothing flows back
    return success();
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case<AddOp, SubOp, MulOp, DivOp, PowOp>(
          [&](Operation *op) { return binary(op, b, g, out); })
      .Case<NegOp, ExpOp, LogOp, SqrtOp, RsqrtOp, TanhOp, SigmoidOp, ReluOp,
            GeluOp, SinOp, CosOp>(
          [&](Operation *op) { return unary(op, b, g, out); })
      .Case([&](CastOp op) {
        // Integers have no gradient.
        if (!isa<FloatType>(typeOf(op.getInput()).getElementType()))
          return success();
        out[0] = CastOp::create(b, loc, typeOf(op.getInput()), g);
        return success();
      })
      .Case([&](WhereOp op) {
        // Each value receives the gradient where it was chosen, zero
        // elsewhere (the condition has none).
        Value zero = scalar(b, loc, g, 0.0);
        out[1] = unbroadcast(
            b, loc, WhereOp::create(b, loc, op.getCondition(), g, zero),
            typeOf(op.getLhs()));
        out[2] = unbroadcast(
            b, loc, WhereOp::create(b, loc, op.getCondition(), zero, g),
            typeOf(op.getRhs()));
        return success();
      })
      .Case([&](ScaleLossOp op) {
        out[0] = MulOp::create(b, loc, g, op.getScale());
        return success();
      })
      .Case([&](MatmulOp op) { return matmul(op, b, g, out); })
      .Case([&](DropoutAddOp op) {
        // The same bits scale the gradient: the input's is the gradient
        // dropped again; the residual's is the gradient itself.
        out[0] = DropoutAddOp::create(b, loc, g, Value(), op.getPAttr(),
                                      op.getSeedAttr());
        if (op.getResidual())
          out[1] = g;
        return success();
      })
      .Case([&](MatmulAddOp op) {
        // The addend's gradient is g; the product's, g in the operands'
        // type.
        out[2] = g;
        Value dp = g;
        Type operands = typeOf(op.getA()).getElementType();
        if (typeOf(g).getElementType() != operands)
          dp = CastOp::create(b, loc, typeOf(g).clone(operands), g);
        matmulGrads(b, loc, op.getA(), op.getB(), op.getTransposeA(),
                    op.getTransposeB(), dp, out);
        return success();
      })
      .Case([&](Conv2DOp op) {
        // The addend's gradient is g itself.
        if (op.getAddend())
          out[2] = g;
        out[0] = Conv2DBackwardDataOp::create(
            b, loc, typeOf(op.getInput()), g, op.getFilter(),
            op.getStrideAttr(), op.getPaddingAttr(), op.getDilationAttr(),
            op.getGroupsAttr());
        out[1] = Conv2DBackwardFilterOp::create(
            b, loc, typeOf(op.getFilter()), g, op.getInput(),
            op.getStrideAttr(), op.getPaddingAttr(), op.getDilationAttr(),
            op.getGroupsAttr());
        return success();
      })
      .Case([&](ConvTranspose2DOp op) {
        // y = conv2d_backward_data(x, w): dx = conv2d(dy, w), dw =
        // conv2d_backward_filter(x, dy).
        out[0] =
            Conv2DOp::create(b, loc, typeOf(op.getInput()), g, op.getFilter(),
                             op.getStrideAttr(), op.getPaddingAttr(),
                             op.getDilationAttr(), b.getI64IntegerAttr(1),
                             /*addend=*/Value());
        out[1] = Conv2DBackwardFilterOp::create(
            b, loc, typeOf(op.getFilter()), op.getInput(), g,
            op.getStrideAttr(), op.getPaddingAttr(), op.getDilationAttr(),
            b.getI64IntegerAttr(1));
        return success();
      })
      .Case([&](ReduceSumOp op) {
        out[0] = expandReduced(b, loc, g, op.getDims(), typeOf(op.getInput()));
        return success();
      })
      .Case([&](ReduceMeanOp op) {
        auto in = typeOf(op.getInput());
        int64_t n = 1;
        for (int64_t d : op.getDims())
          n *= in.getDimSize(d < 0 ? d + in.getRank() : d);
        Value scaled = MulOp::create(b, loc, g, scalar(b, loc, g, 1.0 / n));
        out[0] = expandReduced(b, loc, scaled, op.getDims(), in);
        return success();
      })
      .Case([&](ReduceMaxOp op) {
        out[0] = ReduceMaxBackwardOp::create(
            b, loc, typeOf(op.getInput()), g, op.getInput(), op.getResult(),
            op.getDimsAttr(), op.getKeepDimsAttr());
        return success();
      })
      // The input gradient in the input's type (a mixed-type op's
      // backward rounds it once).
      .Case([&](SoftmaxOp op) {
        out[0] = SoftmaxBackwardOp::create(b, loc, typeOf(op.getInput()), g,
                                           op.getResult(), op.getAxisAttr(),
                                           op.getScaleAttr());
        return success();
      })
      .Case([&](LogSoftmaxOp op) {
        out[0] = LogSoftmaxBackwardOp::create(b, loc, typeOf(op.getInput()), g,
                                              op.getResult(), op.getAxisAttr(),
                                              op.getScaleAttr());
        return success();
      })
      // From the input: the probabilities and the mask are computed again.
      .Case([&](SoftmaxDropoutOp op) {
        out[0] = SoftmaxDropoutBackwardOp::create(
                     b, loc, typeOf(op.getInput()), /*dropped=*/Type(), g,
                     op.getInput(), op.getScaleAttr(), op.getPAttr(),
                     op.getSeedAttr())
                     .getResult();
        return success();
      })
      .Case([&](AttentionOp op) -> LogicalResult {
        // The bias gets no gradient: one computed from model state would
        // silently not train.
        if (op.getBias() && readsModelState(op.getBias()))
          return op.emitOpError(
              "has no gradient through its bias, which is computed from "
              "model state (a learned bias): write the scores out unfused");
        auto back = AttentionBackwardOp::create(
            b, loc, g, op.getQuery(), op.getKey(), op.getValue(),
            op.getResult(), op.getLogsumexp(), op.getMask(), op.getBias(),
            op.getScaleAttr(), op.getDropoutPAttr(), op.getSeedAttr(),
            op.getMaskValueAttr(), op.getLayoutAttr());
        out[0] = back.getGradQuery();
        out[1] = back.getGradKey();
        out[2] = back.getGradValue();
        return success();
      })
      .Case([&](AddLayerNormOp op) {
        Value sumGrad = gs.size() > 1 ? gs[1] : Value();
        RankedTensorType residual = typeOf(op.getResidual());
        if (residual != typeOf(op.getInput()) && op.getDropoutP().isZero()) {
          // A broadcast residual (BERT's position embeddings): its gradient
          // is a sum over the leading dimensions, which the unfused graph
          // takes from the layer norm's backward (f32 at every level) and
          // the fused one would round to the activations' type first. The
          // unfused backward keeps the unfused graph's precision, and
          // without dropout the input's gradient is the sum's.
          auto back = LayerNormBackwardOp::create(
              b, loc, g, op.getSum(), op.getMean(), op.getRstd(), op.getGamma(),
              /*gamma_addend=*/Value(),
              /*beta_addend=*/Value(), b.getI64IntegerAttr(-1));
          Value ds = back.getGradInput();
          if (sumGrad)
            ds = AddOp::create(b, loc, ds, sumGrad);
          out[0] = ds;
          out[1] = unbroadcast(b, loc, ds, residual);
          out[2] = back.getGradGamma();
          out[3] = back.getGradBeta();
          return success();
        }
        auto back = AddLayerNormBackwardOp::create(
            b, loc, g, op.getSum(), op.getMean(), op.getRstd(), op.getGamma(),
            sumGrad, /*gamma_addend=*/Value(), /*beta_addend=*/Value(),
            op.getDropoutPAttr(), op.getSeedAttr());
        out[0] = back.getGradInput();
        // A broadcast residual's gradient: the sum's, summed over the
        // leading dimensions.
        out[1] = unbroadcast(b, loc, back.getGradResidual(),
                             typeOf(op.getResidual()));
        out[2] = back.getGradGamma();
        out[3] = back.getGradBeta();
        return success();
      })
      .Case([&](LayerNormOp op) {
        auto back = LayerNormBackwardOp::create(
            b, loc, g, op.getInput(), op.getMean(), op.getRstd(), op.getGamma(),
            /*gamma_addend=*/Value(), /*beta_addend=*/Value(),
            op.getAxisAttr());
        out[0] = back.getGradInput();
        out[1] = back.getGradGamma();
        out[2] = back.getGradBeta();
        return success();
      })
      .Case([&](BatchNormOp op) {
        // A fused ReLU's gradient is formed from the op's result.
        bool relu = op.getActivation() == "relu";
        auto back = BatchNormBackwardOp::create(
            b, loc, g, op.getInput(), op.getGamma(), op.getSavedMean(),
            op.getSavedInvstd(), relu ? op.getResult() : Value(), Value(),
            /*gamma_addend=*/Value(), /*beta_addend=*/Value(),
            op.getActivationAttr(), op.getSyncAttr());
        out[0] = back.getGradInput();
        out[1] = back.getGradGamma();
        out[2] = back.getGradBeta();
        return success();
      })
      .Case([&](ReshapeOp op) {
        out[0] = ReshapeOp::create(b, loc, typeOf(op.getInput()), g);
        return success();
      })
      .Case([&](TransposeOp op) {
        ArrayRef<int64_t> perm = op.getPermutation();
        SmallVector<int64_t> inverse(perm.size());
        for (auto [i, p] : llvm::enumerate(perm))
          inverse[p] = i;
        out[0] = TransposeOp::create(b, loc, g, inverse);
        return success();
      })
      .Case([&](SliceOp op) {
        out[0] =
            SliceBackwardOp::create(b, loc, typeOf(op.getInput()), g,
                                    op.getOffsetsAttr(), op.getStridesAttr());
        return success();
      })
      .Case([&](BroadcastToOp op) {
        out[0] = unbroadcast(b, loc, g, typeOf(op.getInput()));
        return success();
      })
      .Case([&](ConcatOp op) {
        auto type = typeOf(g);
        int64_t axis = static_cast<int64_t>(op.getAxis());
        if (axis < 0)
          axis += type.getRank();
        int64_t at = 0;
        for (auto [i, input] : llvm::enumerate(op.getInputs())) {
          auto in = typeOf(input);
          SmallVector<int64_t> offsets(type.getRank(), 0);
          offsets[axis] = at;
          out[i] = SliceOp::create(b, loc, in, g, offsets, in.getShape(),
                                   /*strides=*/nullptr);
          at += in.getDimSize(axis);
        }
        return success();
      })
      .Case([&](EmbeddingOp op) {
        out[0] = EmbeddingBackwardOp::create(
            b, loc, typeOf(op.getTable()), g, op.getIndices(),
            /*addend=*/Value(), op.getPaddingIdxAttr());
        return success();
      })
      .Case([&](DropoutOp op) {
        Value dx =
            DropoutBackwardOp::create(b, loc, g, op.getMask(), op.getPAttr());
        // A mixed-type dropout's gradient in its input's type.
        if (dx.getType() != op.getInput().getType())
          dx = CastOp::create(b, loc, typeOf(op.getInput()), dx);
        out[0] = dx;
        return success();
      })
      .Case([&](MaxPool2DOp op) {
        out[0] = MaxPool2DBackwardOp::create(
            b, loc, typeOf(op.getInput()), g, op.getInput(), op.getKernelAttr(),
            op.getStrideAttr(), op.getPaddingAttr(), /*addend=*/Value());
        return success();
      })
      .Case([&](AvgPool2DOp op) {
        out[0] = AvgPool2DBackwardOp::create(
            b, loc, typeOf(op.getInput()), g, op.getInput(), op.getKernelAttr(),
            op.getStrideAttr(), op.getPaddingAttr(),
            op.getCountIncludePadAttr());
        return success();
      })
      .Case([&](UpsampleNearest2DOp op) {
        out[0] = UpsampleNearest2DBackwardOp::create(
            b, loc, typeOf(op.getInput()), g, op.getScaleAttr());
        return success();
      })
      .Case([&](CrossEntropyOp op) {
        return loss<CrossEntropyOp, CrossEntropyBackwardOp>(op, b, g, out);
      })
      .Case([&](MSEOp op) {
        // The target is differentiable too (distillation): the opposite of
        // the input's gradient.
        (void)loss<MSEOp, MSEBackwardOp>(op, b, g, out);
        out[1] = NegOp::create(b, loc, out[0]);
        return success();
      })
      .Case([&](BCEWithLogitsOp op) {
        return loss<BCEWithLogitsOp, BCEWithLogitsBackwardOp>(op, b, g, out);
      })
      .Case([&](BinaryCrossEntropyOp op) {
        return loss<BinaryCrossEntropyOp, BinaryCrossEntropyBackwardOp>(op, b,
                                                                        g, out);
      })
      .Default([](Operation *) { return failure(); });
}

template <typename Op>
struct VJPModel : public VJPOpInterface::ExternalModel<VJPModel<Op>, Op> {
  LogicalResult buildVJP(Operation *op, OpBuilder &builder,
                         ArrayRef<Value> resultGrads,
                         SmallVectorImpl<Value> &operandGrads) const {
    operandGrads.assign(op->getNumOperands(), Value());
    return vjp(op, builder, resultGrads, operandGrads);
  }
};

template <typename... Ops> void attach(MLIRContext *ctx) {
  (Ops::template attachInterface<VJPModel<Ops>>(*ctx), ...);
}

} // namespace

void mlir::mpc::registerVJPModels(MLIRContext *ctx) {
  attach<AddOp, SubOp, MulOp, DivOp, PowOp, NegOp, ExpOp, LogOp, SqrtOp,
         RsqrtOp, TanhOp, SigmoidOp, ReluOp, GeluOp, SinOp, CosOp, CastOp,
         ScaleLossOp, WhereOp, MatmulOp, FusedMatmulOp, MatmulAddOp,
         DropoutAddOp, AttentionOp, AddLayerNormOp, Conv2DOp, ConvTranspose2DOp,
         ReduceSumOp, ReduceMeanOp, ReduceMaxOp, SoftmaxOp, LogSoftmaxOp,
         SoftmaxDropoutOp, LayerNormOp, BatchNormOp, ReshapeOp, TransposeOp,
         SliceOp, BroadcastToOp, ConcatOp, EmbeddingOp, DropoutOp, MaxPool2DOp,
         AvgPool2DOp, UpsampleNearest2DOp, CrossEntropyOp, MSEOp,
         BCEWithLogitsOp, BinaryCrossEntropyOp>(ctx);
}
