//===- Fuse.cpp - GEMM epilogues and attention ----------------------------===//
//
// A linear layer written as `matmul` + bias `add` (+ `relu` / tanh `gelu`)
// becomes one `mpc.fused_matmul`, whose bias and activation run in the
// GEMM's epilogue (cuBLASLt's BIAS, RELU_BIAS, GELU_BIAS): the product and
// the pre-activation are never written, unless the backward pass reads
// the pre-activation (GELU's gradient does; ReLU's reads the output
// instead, which is positive exactly where its input is).
//
// Scaled dot-product attention, `matmul(q, k^T)` * scale -> `softmax` (->
// `dropout`) -> `matmul(., v)`, becomes one `mpc.attention` that never
// writes the scores. Its intermediates must have no other reader, so it
// fuses forward graphs: before autodiff, which then differentiates the
// fused op.
//
//===----------------------------------------------------------------------===//

#include "mpc/Dialect/MPC/IR/MPCOps.h"
#include "mpc/Dialect/MPC/Transforms/Passes.h"

#include "ReportFile.h"
#include "RowTransposes.h"
#include "TypeUtils.h"
#include "Views.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/IR/Builders.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/ToolOutputFile.h"

#include <cmath>
#include <cstdio>

namespace mlir::mpc {
#define GEN_PASS_DEF_FUSEPASS
#include "mpc/Dialect/MPC/Transforms/Passes.h.inc"
} // namespace mlir::mpc

using namespace mlir;
using namespace mlir::mpc;

namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// A product a GEMM epilogue can take: x @ W with W one [K, N] matrix
/// (a linear layer, one GEMM over all rows), f16/bf16/f32, read once. At
/// O1 its f16/bf16 result is widened to f32 by a cast, also read once.
struct Product {
  MatmulOp matmul;
  CastOp widen; // or null

  /// The ops a fusion of the product with `rest` replaces, in program
  /// order.
  SmallVector<Operation *> with(ArrayRef<Operation *> rest) const {
    SmallVector<Operation *> parts{matmul};
    if (widen)
      parts.push_back(widen);
    llvm::append_range(parts, rest);
    return parts;
  }

  /// Hands the product's precision to the op fused from it and erases the
  /// product and its cast (their readers are gone).
  void retire(Operation *fused) {
    if (Attribute precision = matmul->getAttr("mpc.precision"))
      fused->setAttr("mpc.precision", precision);
    if (widen)
      widen.erase();
    matmul.erase();
  }
};

/// A product (through its widening cast) that one fused op can take in
/// place of its reader. With `weightGradient`, also `matmul(x, g)
/// {transpose_a}` of two matrices: a weight gradient, which a GEMM sums
/// into its addend (mpc.matmul_add) as well as another product.
std::optional<Product> productOf(Value v, bool weightGradient = false) {
  Product p{};
  if (auto cast = v.getDefiningOp<CastOp>()) {
    Type from = typeOf(cast.getInput()).getElementType();
    if (!typeOf(cast.getResult()).getElementType().isF32() ||
        !(from.isF16() || from.isBF16()) || !cast->hasOneUse())
      return std::nullopt;
    p.widen = cast;
    v = cast.getInput();
  }
  p.matmul = v.getDefiningOp<MatmulOp>();
  if (!p.matmul || !p.matmul->hasOneUse() ||
      typeOf(p.matmul.getB()).getRank() != 2)
    return std::nullopt;
  if (p.matmul.getTransposeA() &&
      (!weightGradient || typeOf(p.matmul.getA()).getRank() != 2))
    return std::nullopt;
  Type t = p.matmul.getType().getElementType();
  if (!t.isF16() && !t.isBF16() && !t.isF32())
    return std::nullopt;
  return p;
}

/// Whether `user` is a gradient of `kind` (relu or gelu_tanh) that reads
/// `h` as its saved value.
bool isGradientReading(Operation *user, Value h, StringRef kind) {
  if (auto grad = dyn_cast<ReluGradOp>(user))
    return kind == "relu" && grad.getSaved() == h;
  if (auto grad = dyn_cast<GeluGradOp>(user))
    return kind == "gelu_tanh" && grad.getApproximate() && grad.getSaved() == h;
  if (auto grad = dyn_cast<MatmulActivationGradOp>(user))
    return grad.getActivation() == kind && grad.getSaved() == h;
  return false;
}

/// The activation that follows `h` and can join the epilogue: its one
/// reader other than the activation's gradients, in its block. ReLU's
/// gradients are given the ReLU's output; tanh-GELU's, which need its
/// input, the pre-activation the fused op then also writes
/// (`needsPre`). Exact GELU does not join: cuBLASLt's GELU epilogue is
/// the tanh approximation.
Operation *activationOf(Value h, bool &needsPre) {
  needsPre = false;
  Operation *act = nullptr;
  for (Operation *user : h.getUsers()) {
    if (isa<ReluGradOp, GeluGradOp, MatmulActivationGradOp>(user))
      continue;
    if (act || !isa<ReluOp, GeluOp>(user))
      return nullptr;
    act = user;
  }
  if (!act)
    return nullptr;
  if (auto gelu = dyn_cast<GeluOp>(act); gelu && !gelu.getApproximate())
    return nullptr;
  StringRef kind = isa<ReluOp>(act) ? "relu" : "gelu_tanh";
  for (Operation *user : h.getUsers()) {
    if (user == act)
      continue;
    if (!isGradientReading(user, h, kind) ||
        act->getBlock() != user->getBlock())
      return nullptr;
    needsPre |= kind == "gelu_tanh";
  }
  return act;
}

/// The value of a scalar computed from splat float constants (an imported
/// graph's 1/sqrt(d) is `div(scores, pow(8, 0.5))`), or nothing.
std::optional<double> constantValue(Value v, int depth = 0) {
  Operation *def = v.getDefiningOp();
  if (!def || depth > 4)
    return std::nullopt;
  if (auto constant = dyn_cast<ConstantOp>(def)) {
    auto dense = dyn_cast<DenseFPElementsAttr>(constant.getValue());
    if (!dense || !dense.isSplat())
      return std::nullopt;
    return dense.getSplatValue<APFloat>().convertToDouble();
  }
  if (def->getNumOperands() == 1 && isa<SqrtOp, RsqrtOp, NegOp>(def)) {
    std::optional<double> x = constantValue(def->getOperand(0), depth + 1);
    if (!x)
      return std::nullopt;
    return isa<SqrtOp>(def)    ? std::sqrt(*x)
           : isa<RsqrtOp>(def) ? 1 / std::sqrt(*x)
                               : -*x;
  }
  if (!isa<MulOp, DivOp, PowOp, AddOp, SubOp>(def))
    return std::nullopt;
  std::optional<double> a = constantValue(def->getOperand(0), depth + 1),
                        b = constantValue(def->getOperand(1), depth + 1);
  if (!a || !b)
    return std::nullopt;
  return isa<MulOp>(def)   ? *a * *b
         : isa<DivOp>(def) ? *a / *b
         : isa<PowOp>(def) ? std::pow(*a, *b)
         : isa<AddOp>(def) ? *a + *b
                           : *a - *b;
}

/// The scale of `scores * c` (or `c * scores`, `scores / c`) with `c` a
/// scalar of constants, and the scaled value's other operand.
std::optional<std::pair<double, Value>> scaleOf(Operation *op) {
  if (!isa_and_nonnull<MulOp, DivOp>(op))
    return std::nullopt;
  for (int side = 0; side < 2; ++side) {
    if (isa<DivOp>(op) && side == 0)
      continue; // c / scores is not a scaling
    Value operand = op->getOperand(side);
    if (typeOf(operand).getNumElements() != 1)
      continue;
    std::optional<double> c = constantValue(operand);
    if (!c)
      continue;
    double scale = isa<DivOp>(op) ? 1 / *c : *c;
    if (!std::isfinite(scale))
      return std::nullopt;
    return std::make_pair(scale, op->getOperand(1 - side));
  }
  return std::nullopt;
}

/// `k` such that `kt` is k with its last two dimensions swapped, made by
/// composing a transpose that produces `kt` (read only by the product,
/// unless `anyUses`), or nothing.
Value untransposed(OpBuilder &b, Value kt, bool anyUses = false) {
  auto transpose = kt.getDefiningOp<TransposeOp>();
  if (!transpose || (!anyUses && !transpose->hasOneUse()))
    return Value();
  SmallVector<int64_t> perm(transpose.getPermutation());
  std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
  Value input = transpose.getInput();
  auto inputType = typeOf(input);
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(inputType.getDimSize(p));
  b.setInsertionPoint(transpose);
  return TransposeOp::create(
      b, transpose.getLoc(),
      RankedTensorType::get(shape, inputType.getElementType()), input,
      b.getDenseI64ArrayAttr(perm));
}

/// The location of an op fused from `parts` (in program order): theirs,
/// with their names as metadata (the fusion report and remarks read them);
/// a part with casts or scales folded into it, or a matmul_add or
/// matmul_bias_grad fused again, gives its own parts.
Location fusedLocation(MLIRContext *context, ArrayRef<Operation *> parts) {
  SmallVector<Location> locs;
  SmallVector<Attribute> names;
  for (Operation *part : parts) {
    auto fused = dyn_cast<FusedLoc>(part->getLoc());
    auto partNames =
        fused ? dyn_cast_or_null<ArrayAttr>(fused.getMetadata()) : ArrayAttr();
    if (partNames && partNames.size() == fused.getLocations().size() &&
        (isa<MatmulAddOp, MatmulBiasGradOp>(part) ||
         llvm::is_contained(
             partNames,
             StringAttr::get(context, part->getName().getStringRef())))) {
      llvm::append_range(locs, fused.getLocations());
      llvm::append_range(names, partNames);
      continue;
    }
    locs.push_back(part->getLoc());
    names.push_back(StringAttr::get(context, part->getName().getStringRef()));
  }
  return FusedLoc::get(locs, ArrayAttr::get(context, names), context);
}

/// The names of the ops a fused op came from (its location's metadata;
/// none for a hand-written one).
SmallVector<StringRef> partsOf(Operation *op) {
  SmallVector<StringRef> names;
  auto loc = dyn_cast<FusedLoc>(op->getLoc());
  if (auto list =
          loc ? dyn_cast_or_null<ArrayAttr>(loc.getMetadata()) : ArrayAttr())
    for (Attribute name : list)
      if (auto s = dyn_cast<StringAttr>(name))
        names.push_back(s.getValue());
  return names;
}

/// An op with a cast or a scale folded into it (--mpc-fuse's `casts` and
/// `scales`).
bool hasFoldedParts(Operation *op) {
  if (!isa<SoftmaxOp, LogSoftmaxOp, SoftmaxBackwardOp, LogSoftmaxBackwardOp,
           DropoutOp, SoftmaxDropoutOp, SoftmaxDropoutBackwardOp>(op))
    return false;
  SmallVector<StringRef> parts = partsOf(op);
  return llvm::is_contained(parts, "mpc.cast") ||
         llvm::is_contained(parts, "mpc.mul");
}

/// Where reports and remarks place a fused op: its location, but for an
/// op with casts folded into it the op's own part (not the cast's line).
Location reportedLocation(Location loc) {
  auto fused = dyn_cast<FusedLoc>(loc);
  auto names =
      fused ? dyn_cast_or_null<ArrayAttr>(fused.getMetadata()) : ArrayAttr();
  if (!names || names.size() != fused.getLocations().size())
    return loc;
  for (auto [name, part] : llvm::zip_equal(names, fused.getLocations())) {
    auto s = dyn_cast<StringAttr>(name);
    if (s && s.getValue() != "mpc.cast" && s.getValue() != "mpc.mul")
      return reportedLocation(part); // a backward op's, its forward's
  }
  return loc;
}

Location reportedLocation(Operation *op) {
  return hasFoldedParts(op) ? reportedLocation(op->getLoc()) : op->getLoc();
}

/// A parameter-gradient op that adds its gradients to addends (the sums of
/// gradient accumulation folded into it).
bool hasGradientAddends(Operation *op) {
  return llvm::TypeSwitch<Operation *, bool>(op)
      .Case<LayerNormBackwardOp, AddLayerNormBackwardOp, BatchNormBackwardOp>(
          [](auto back) {
            return back.getGammaAddend() || back.getBetaAddend();
          })
      .Case(
          [](EmbeddingBackwardOp back) { return back.getAddend() != nullptr; })
      .Case(
          [](MaxPool2DBackwardOp back) { return back.getAddend() != nullptr; })
      .Default([](Operation *) { return false; });
}

/// A convolution of a concatenation's part adding to the one before, or
/// the concatenation of the parts' filter gradients (`concat-convs`).
bool isSplitConcatConv(Operation *op) {
  if (auto conv = dyn_cast<Conv2DOp>(op))
    return conv.getAddend() &&
           llvm::is_contained(partsOf(op), ConcatOp::getOperationName());
  return isa<ConcatOp>(op) &&
         llvm::is_contained(partsOf(op),
                            Conv2DBackwardFilterOp::getOperationName());
}

/// A concatenation `slice-grads` made of a sum of slices' gradients.
bool isConcatOfSliceGrads(Operation *op) {
  return isa<ConcatOp>(op) &&
         llvm::is_contained(partsOf(op), SliceBackwardOp::getOperationName());
}

/// A layer norm `decomposed-norms` made of its steps.
bool isDecomposedNorm(Operation *op) {
  return isa<LayerNormOp>(op) &&
         llvm::is_contained(partsOf(op), ReduceMeanOp::getOperationName());
}

/// A batch norm (training or inference, or its backward) that took a ReLU.
bool isFusedNorm(Operation *op) {
  if (auto norm = dyn_cast<BatchNormOp>(op))
    return norm.getActivation() != "none";
  if (auto norm = dyn_cast<BatchNormInferenceOp>(op))
    return norm.getActivation() != "none";
  if (auto back = dyn_cast<BatchNormBackwardOp>(op))
    return back.getActivation() != "none";
  return false;
}

struct FusePass : public mpc::impl::FusePassBase<FusePass> {
  using FusePassBase::FusePassBase;

  /// Every fused op of the module, as JSON: its function, kind, location
  /// and the ops it replaced.
  LogicalResult writeReport() {
    auto file = openReport(report, getOperation(), "mpc-fuse");
    if (!file)
      return failure();
    llvm::json::OStream json(file->os(), 2);
    json.object([&] {
      json.attributeArray("fused", [&] {
        getOperation().walk([&](Operation *op) {
          if (!isa<FusedMatmulOp, MatmulBiasGradOp, MatmulActivationGradOp,
                   MatmulAddOp, ColumnSumsOp, DropoutAddOp, AttentionOp,
                   AddLayerNormOp, SoftmaxDropoutOp, SoftmaxDropoutBackwardOp,
                   HeadsMatmulOp>(op) &&
              !isFusedNorm(op) && !hasFoldedParts(op) &&
              !hasGradientAddends(op) && !isConcatOfSliceGrads(op) &&
              !isDecomposedNorm(op) && !isSplitConcatConv(op))
            return;
          json.object([&] {
            auto func = op->getParentOfType<func::FuncOp>();
            json.attribute("function",
                           func ? func.getSymName().str() : std::string());
            json.attribute("op", op->getName().getStringRef().str());
            if (auto fm = dyn_cast<FusedMatmulOp>(op)) {
              json.attribute("activation", fm.getActivation().str());
              json.attribute("pre_activation",
                             fm.getPreActivation() != nullptr);
            }
            if (auto grad = dyn_cast<MatmulActivationGradOp>(op))
              json.attribute("activation", grad.getActivation().str());
            if (isFusedNorm(op))
              json.attribute("activation", "relu");
            if (auto norm = dyn_cast<AddLayerNormOp>(op))
              json.attribute("dropout_p", norm.getDropoutP().convertToDouble());
            if (auto residual = dyn_cast<DropoutAddOp>(op))
              json.attribute("dropout_p", residual.getP().convertToDouble());
            if (auto probs = dyn_cast<SoftmaxDropoutOp>(op)) {
              json.attribute("dropout_p", probs.getP().convertToDouble());
              json.attribute("recompute", probs.getRecompute());
            }
            if (auto back = dyn_cast<SoftmaxDropoutBackwardOp>(op)) {
              json.attribute("dropout_p", back.getP().convertToDouble());
              json.attribute("dropped", back.getDropped() != nullptr);
            }
            if (auto at = dyn_cast<AttentionOp>(op)) {
              json.attribute("dropout_p", at.getDropoutP().convertToDouble());
              json.attribute("masked", at.getMask() != nullptr);
              json.attribute("bias", at.getBias() != nullptr);
            }
            // The product's source line (the first of the fused location).
            std::string where;
            if (auto file =
                    reportedLocation(op)->findInstanceOf<FileLineColLoc>())
              where =
                  llvm::formatv("{0}:{1}:{2}", file.getFilename().getValue(),
                                file.getLine(), file.getColumn());
            json.attribute("location", where);
            json.attributeArray("from", [&] {
              for (StringRef name : partsOf(op))
                json.value(name.str());
            });
          });
        });
      });
    });
    file->os() << "\n";
    return keepReport(*file, report, getOperation(), "mpc-fuse");
  }

  /// With `remarks`: what a fused op replaced, at the fused op.
  void remark(Operation *fused, const Twine &detail = "") {
    if (remarks)
      emitRemark(reportedLocation(fused))
          << "fused: " << llvm::join(partsOf(fused), " + ") << " -> "
          << fused->getName() << detail;
  }

  /// Calls `fuse` on every op of type OpT in the module, in program order,
  /// all collected first (a fusion erases and creates ops).
  template <typename OpT, typename F> void eachOp(F fuse) {
    SmallVector<OpT> ops;
    getOperation().walk([&](OpT op) { ops.push_back(op); });
    for (OpT op : ops)
      fuse(op);
  }

  /// eachOp for the ops that may scale a value: every mpc.mul and
  /// mpc.div.
  template <typename F> void eachScaling(F fuse) {
    SmallVector<Operation *> ops;
    getOperation().walk([&](Operation *op) {
      if (isa<MulOp, DivOp>(op))
        ops.push_back(op);
    });
    for (Operation *op : ops)
      fuse(op);
  }

  void runOnOperation() override {
    // First: the heads' transposes it composes are then the ones the
    // attention patterns and the memory plan's views read.
    if (rowTransposes)
      moveRowTransposes(getOperation(), [&](Operation *op, StringRef text) {
        if (remarks)
          emitRemark(op->getLoc()) << text;
      });
    // Before attention: the scores' product then reads the keys it
    // composed ([B, S, H D] to [B, H D, S], viewed as [B H, D, S]) as a
    // transposed operand.
    if (transposedOperands)
      eachOp<MatmulOp>([&](MatmulOp op) {
        bool flipped = false;
        for (unsigned side : {0u, 1u})
          flipped |= reshapedTransposeFlipped(op, side);
        if (flipped && remarks)
          emitRemark(op.getLoc())
              << "folded: the last two dimensions of mpc.transpose into its "
                 "products (the transpose keeps the innermost dimension)";
      });
    if (attention)
      eachOp<MatmulOp>([&](MatmulOp op) { fuseAttention(op); });
    // Before the layout: the query's scale (nn.MultiheadAttention divides
    // the queries by sqrt(d)) then no longer stands between the attention
    // and its heads' transposes.
    if (attention && scales)
      eachOp<AttentionOp>([&](AttentionOp op) { foldQueryScale(op); });
    if (attention && attentionLayout)
      eachOp<AttentionOp>([&](AttentionOp op) { foldHeadTransposes(op); });
    // After attention (whose patterns read the transposes): in the forward
    // graph's run, so that autodiff differentiates the untransposed
    // weight (its gradient then has the weight's layout).
    if (transposedOperands)
      eachOp<MatmulOp>([&](MatmulOp op) { foldOperandTransposes(op); });
    // Before the norms: a layer norm found here may take its residual add.
    if (decomposedNorms) {
      SmallVector<ReduceMeanOp> means;
      getOperation().walk([&](ReduceMeanOp op) { means.push_back(op); });
      // Last first: a chain's second mean, which goes with the chain, is
      // then visited (and left) before its first mean fuses it.
      for (ReduceMeanOp mean : llvm::reverse(means))
        fuseDecomposedNorm(mean);
    }
    if (norms) {
      eachOp<LayerNormOp>([&](LayerNormOp norm) { fuseResidualNorm(norm); });
      eachOp<BatchNormOp>([&](BatchNormOp norm) { fuseNormActivation(norm); });
      eachOp<BatchNormInferenceOp>(
          [&](BatchNormInferenceOp norm) { fuseInferenceActivation(norm); });
    }
    if (reluMaskFromInput) {
      SmallVector<BatchNormBackwardOp> backward;
      getOperation().walk([&](BatchNormBackwardOp op) {
        if (op.getResult())
          backward.push_back(op);
      });
      for (BatchNormBackwardOp back : backward)
        maskFromInput(back);
    }
    if (residuals)
      eachOp<DropoutOp>([&](DropoutOp dropout) { fuseDropoutAdd(dropout); });
    // Before the epilogues: a sum left after the concatenation may then
    // join a GEMM (mpc.matmul_add).
    if (sliceGrads)
      eachOp<AddOp>([&](AddOp add) { concatSliceGrads(add); });
    if (epilogues) {
      getOperation().walk([&](ml_program::GlobalStoreOp store) {
        storesOf[store.getGlobalAttr()].push_back(store);
      });
      eachOp<AddOp>([&](AddOp add) { fuseLinear(add); });
      eachOp<AddOp>([&](AddOp add) { fuseMatmulAdd(add); });
      SmallVector<Operation *> gradients;
      getOperation().walk([&](Operation *op) {
        if (isa<ReluGradOp, GeluGradOp>(op))
          gradients.push_back(op);
      });
      for (Operation *gradient : gradients)
        fuseActivationGrad(gradient);
      eachOp<ReduceSumOp>([&](ReduceSumOp sum) { fuseBiasGrad(sum); });
      if (weightGradSums) {
        SmallVector<Operation *> paramGrads;
        getOperation().walk([&](Operation *op) {
          if (isa<LayerNormBackwardOp, AddLayerNormBackwardOp,
                  BatchNormBackwardOp, EmbeddingBackwardOp>(op))
            paramGrads.push_back(op);
        });
        for (Operation *op : paramGrads)
          sumParamGrads(op);
      }
      if (siblingBiasGrads)
        sumSiblingBiasGrads();
    }
    if (poolGradSums)
      eachOp<AddOp>([&](AddOp add) { addToPoolGrad(add); });
    // Before the moves computed again: a concatenation the convolutions no
    // longer read is then not there to be copied.
    if (concatConvs)
      eachOp<ConcatOp>([&](ConcatOp concat) { splitConcatConvs(concat); });
    if (casts) {
      SmallVector<CastOp> widening, narrowing;
      getOperation().walk([&](CastOp op) {
        (isWidening(op) ? widening : narrowing).push_back(op);
      });
      for (CastOp cast : widening)
        foldCastIntoReaders(cast);
      for (CastOp cast : narrowing)
        foldCastIntoProducer(cast);
    }
    // After the casts: the softmax then reads the scaled product itself,
    // and its gradient writes what the scaling reads.
    if (scales)
      eachScaling([&](Operation *op) { foldScale(op); });
    // After attention and the scales, which fold a query's scale into
    // their own where they can.
    if (scaleMoves)
      eachScaling([&](Operation *op) { moveScaleAboveMoves(op); });
    // After the casts and scales: the softmax then reads the scores
    // themselves, at their type, with its scale.
    if (softmaxDropout) {
      eachOp<SoftmaxOp>(
          [&](SoftmaxOp softmax) { fuseSoftmaxDropout(softmax); });
    }
    if (recompute) {
      eachOp<SoftmaxDropoutOp>(
          [&](SoftmaxDropoutOp op) { recomputeForLateReaders(op); });
      if (recomputeInBackward)
        eachOp<SoftmaxDropoutOp>(
            [&](SoftmaxDropoutOp copy) { recomputeInBackwardOf(copy); });
    }
    if (recomputeMoves)
      getOperation().walk([&](func::FuncOp f) {
        if (!f.getBody().empty())
          recomputeMovesOf(f.getBody().front());
      });
    // Last: the products the patterns above match (the softmax's, the
    // attention's) are then still mpc.matmul.
    if (headProducts) {
      liftMergedHeadsProducts();
      foldHeadProductTransposes();
    }
    if (!report.empty() && failed(writeReport()))
      signalPassFailure();
  }

  /// Whether `t` swaps the middle dimensions of a rank-4 tensor (the heads'
  /// transpose, `[B, S, H, D]` to `[B, H, S, D]` and back).
  static bool swapsMiddle(TransposeOp t) {
    return t.getPermutation() == ArrayRef<int64_t>{0, 2, 1, 3} &&
           typeOf(t.getInput()).hasStaticShape();
  }

  /// Whether `op` is a product mpc.heads_matmul can take: a heads_matmul,
  /// or an mpc.matmul of rank-4 operands and result whose batch dimensions
  /// are the result's (none broadcast).
  static bool headsProduct(Operation *op) {
    if (isa<HeadsMatmulOp>(op))
      return true;
    auto mm = dyn_cast<MatmulOp>(op);
    if (!mm)
      return false;
    ArrayRef<int64_t> c = mm.getType().getShape();
    return c.size() == 4 && llvm::all_of(mm->getOperands(), [&](Value v) {
             ArrayRef<int64_t> s = typeOf(v).getShape();
             return s.size() == 4 && s.take_front(2) == c.take_front(2);
           });
  }

  /// `op` (headsProduct) as an mpc.heads_matmul, made in its place where it
  /// is an mpc.matmul.
  HeadsMatmulOp asHeadsProduct(Operation *op) {
    if (auto heads = dyn_cast<HeadsMatmulOp>(op))
      return heads;
    auto mm = cast<MatmulOp>(op);
    OpBuilder b(mm);
    auto heads = HeadsMatmulOp::create(b, mm.getLoc(), mm.getType(), mm.getA(),
                                       mm.getB(), mm.getTransposeA(),
                                       mm.getTransposeB(), false, false, false);
    if (Attribute precision = mm->getAttr("mpc.precision"))
      heads->setAttr("mpc.precision", precision);
    mm.getResult().replaceAllUsesWith(heads.getResult());
    mm.erase();
    return heads;
  }

  /// `--mpc-fuse`'s scale-moves: `v * c`, `c * v` or `v / c` (`c` an
  /// `mpc.constant` of one element) whose `v` is a chain of reshapes and
  /// transposes of `x`, each read only by the next and `v` only by the
  /// scaling, scales `x` instead, the chain then moving the scaled values:
  /// the same values bit for bit (the scaling is elementwise).
  /// nn.MultiheadAttention divides its queries by sqrt(D) after their
  /// heads' transpose; moved before it, the transpose meets the product,
  /// whose heads head-products then reads in place.
  void moveScaleAboveMoves(Operation *op) {
    std::optional<std::pair<double, Value>> scaled = scaleOf(op);
    if (!scaled)
      return;
    Value v = scaled->second;
    unsigned side = op->getOperand(0) == v ? 0 : 1;
    Value c = op->getOperand(1 - side);
    auto constant = c.getDefiningOp<ConstantOp>();
    if (!constant || typeOf(v) != typeOf(op->getResult(0)))
      return;
    Operation *first = nullptr;
    Value x = v;
    while (x.hasOneUse() &&
           isa_and_nonnull<ReshapeOp, TransposeOp>(x.getDefiningOp()) &&
           x.getDefiningOp()->getBlock() == op->getBlock()) {
      first = x.getDefiningOp();
      x = first->getOperand(0);
    }
    if (!first || typeOf(c).getRank() > typeOf(x).getRank())
      return;
    OpBuilder b(first);
    if (constant->getBlock() != first->getBlock() ||
        !constant->isBeforeInBlock(first))
      c = b.clone(*constant)->getResult(0);
    Operation *moved = b.clone(*op);
    moved->setOperand(side, x);
    moved->setOperand(1 - side, c);
    moved->getResult(0).setType(typeOf(x));
    first->setOperand(0, moved->getResult(0));
    if (remarks)
      emitRemark(op->getLoc())
          << "moved: " << op->getName()
          << " by a constant before the reshapes and transposes it read";
    op->getResult(0).replaceAllUsesWith(v);
    op->erase();
    eraseIfDead(constant.getResult());
  }

  /// The `[B, H]` split of a rank-3 product's batch of `B H` matrices that
  /// a heads' transpose beside it gives (a PyTorch
  /// `nn.MultiheadAttention`'s heads, merged with the batch): an operand
  /// that is a reshape merging the leading two dimensions of an
  /// `mpc.transpose [0, 2, 1, 3]`'s `[B, H, R, C]`, or a result whose one
  /// reader is a reshape to `[B, H, M, N]` read by such a transpose.
  /// std::nullopt otherwise, or where the product broadcasts its batch.
  static std::optional<std::pair<int64_t, int64_t>> mergedHeadsOf(MatmulOp mm) {
    RankedTensorType c = mm.getType();
    if (c.getRank() != 3 || !c.hasStaticShape() ||
        llvm::any_of(mm->getOperands(), [&](Value v) {
          RankedTensorType t = typeOf(v);
          return t.getRank() != 3 || !t.hasStaticShape() ||
                 t.getDimSize(0) != c.getDimSize(0);
        }))
      return std::nullopt;
    auto splits = [](RankedTensorType merged, RankedTensorType split) {
      return split.getRank() == 4 &&
             split.getDimSize(0) * split.getDimSize(1) ==
                 merged.getDimSize(0) &&
             split.getShape().drop_front(2) == merged.getShape().drop_front(1);
    };
    for (Value v : mm->getOperands())
      if (auto reshape = v.getDefiningOp<ReshapeOp>()) {
        auto t = reshape.getInput().getDefiningOp<TransposeOp>();
        RankedTensorType split = typeOf(reshape.getInput());
        if (t && swapsMiddle(t) && splits(typeOf(v), split))
          return std::make_pair(split.getDimSize(0), split.getDimSize(1));
      }
    if (!mm->hasOneUse())
      return std::nullopt;
    auto reshape = dyn_cast<ReshapeOp>(*mm->getUsers().begin());
    if (!reshape || !reshape->hasOneUse() ||
        !splits(c, typeOf(reshape.getResult())))
      return std::nullopt;
    auto t = dyn_cast<TransposeOp>(*reshape->getUsers().begin());
    if (!t || !swapsMiddle(t))
      return std::nullopt;
    RankedTensorType split = typeOf(reshape.getResult());
    return std::make_pair(split.getDimSize(0), split.getDimSize(1));
  }

  /// head-products' first step: each rank-3 product whose batch a heads'
  /// transpose splits (mergedHeadsOf) becomes the rank-4 product of its
  /// operands split into `[B, H]` (the transpose's `[B, H, R, C]` itself
  /// where the operand merged it), its result merged again for its other
  /// readers (a reshape to `[B, H, M, N]` reading it is the product
  /// itself); the reshapes left unread go. The same products: only views
  /// change, so foldHeadProductTransposes then finds the transposes beside
  /// rank-4 products.
  void liftMergedHeadsProducts() {
    SmallVector<std::pair<MatmulOp, std::pair<int64_t, int64_t>>> products;
    getOperation().walk([&](MatmulOp mm) {
      if (std::optional<std::pair<int64_t, int64_t>> heads = mergedHeadsOf(mm))
        products.push_back({mm, *heads});
    });
    llvm::SetVector<Operation *> unread;
    for (auto [mm, heads] : products) {
      auto [heads0, heads1] = heads;
      OpBuilder b(mm);
      auto split = [&](RankedTensorType t) {
        SmallVector<int64_t> shape{heads0, heads1};
        llvm::append_range(shape, t.getShape().drop_front(1));
        return RankedTensorType::get(shape, t.getElementType());
      };
      auto lift = [&](Value v) -> Value {
        RankedTensorType to = split(typeOf(v));
        if (auto reshape = v.getDefiningOp<ReshapeOp>();
            reshape && typeOf(reshape.getInput()) == to) {
          unread.insert(reshape);
          return reshape.getInput();
        }
        return ReshapeOp::create(b, v.getLoc(), to, v);
      };
      Value a = lift(mm.getA()), bb = lift(mm.getB());
      auto lifted = MatmulOp::create(b, mm.getLoc(), split(mm.getType()), a, bb,
                                     mm.getTransposeA(), mm.getTransposeB());
      if (Attribute precision = mm->getAttr("mpc.precision"))
        lifted->setAttr("mpc.precision", precision);
      for (OpOperand &use : llvm::make_early_inc_range(mm->getUses()))
        if (auto reshape = dyn_cast<ReshapeOp>(use.getOwner());
            reshape && reshape.getType() == lifted.getType()) {
          reshape.getResult().replaceAllUsesWith(lifted.getResult());
          reshape.erase();
        }
      if (!mm->use_empty())
        mm.getResult().replaceAllUsesWith(
            ReshapeOp::create(b, mm.getLoc(), mm.getType(), lifted));
      mm.erase();
      if (remarks)
        emitRemark(lifted.getLoc())
            << "split: the batch of a rank-3 product into the heads' ["
            << heads0 << ", " << heads1 << "]";
    }
    for (Operation *reshape : unread)
      if (reshape->use_empty())
        reshape->erase();
  }

  /// `--mpc-fuse`'s head-products: each `mpc.transpose [0, 2, 1, 3]`
  /// (rank 4) read only as operands of rank-4 products (no batch dimension
  /// broadcast) is read by them in place, an mpc.heads_matmul flag for
  /// each (a second transpose of a flagged operand clears its flag); one
  /// that is not, but is the only reader of such a product, is written by
  /// it (`result_bshd`, toggled likewise). The transpose's copy is gone
  /// either way: the product reads, or writes, rows of the heads'
  /// `[B, S, H, D]` layout, `H * D` apart. The same sums in the same order.
  void foldHeadProductTransposes() {
    SmallVector<TransposeOp> transposes;
    getOperation().walk([&](TransposeOp t) {
      if (swapsMiddle(t))
        transposes.push_back(t);
    });
    for (TransposeOp t : transposes)
      foldHeadTranspose(t);
  }

  /// foldHeadProductTransposes' fold of one transpose (in program order; a
  /// transpose of a transpose whose readers took it is visited again, as
  /// then only they may read the inner one). A packed projection's thirds,
  /// split into heads by reshapes of slices, are read so too: the memory
  /// plan makes them views of the projection (Views.h takesStrided).
  void foldHeadTranspose(TransposeOp t) {
    Value input = t.getInput();
    if (!t->use_empty() && llvm::all_of(t->getUses(), [](OpOperand &use) {
          return use.getOperandNumber() < 2 && headsProduct(use.getOwner());
        })) {
      SmallVector<std::pair<Operation *, unsigned>> readers;
      for (OpOperand &use : t->getUses())
        readers.push_back({use.getOwner(), use.getOperandNumber()});
      DenseMap<Operation *, HeadsMatmulOp> made;
      for (auto [reader, side] : readers) {
        HeadsMatmulOp &heads = made[reader];
        if (!heads)
          heads = asHeadsProduct(reader);
        heads->setOperand(side, input);
        if (side == 0)
          heads.setABshd(!heads.getABshd());
        else
          heads.setBBshd(!heads.getBBshd());
        if (remarks)
          emitRemark(heads.getLoc())
              << "folded: mpc.transpose [0, 2, 1, 3] into the product's "
              << (side == 0 ? "a" : "b") << " (mpc.heads_matmul)";
      }
      t.erase();
      if (auto inner = input.getDefiningOp<TransposeOp>();
          inner && swapsMiddle(inner))
        foldHeadTranspose(inner);
      return;
    }
    Operation *producer = input.getDefiningOp();
    if (!producer || !input.hasOneUse() || !headsProduct(producer))
      return;
    // The product writes the transpose's value: its result takes the
    // transpose's type and its flag toggles, in place.
    HeadsMatmulOp heads = asHeadsProduct(producer);
    heads->setLoc(fusedLocation(&getContext(), {heads, t}));
    heads.getResult().setType(t.getType());
    heads.setResultBshd(!heads.getResultBshd());
    if (remarks)
      emitRemark(heads.getLoc())
          << "folded: mpc.transpose [0, 2, 1, 3] into the product's result "
             "(mpc.heads_matmul)";
    t.getResult().replaceAllUsesWith(heads.getResult());
    t.erase();
  }

  /// `add(g, max_pool2d_backward(dy, x))` (either order), the pool's
  /// gradient read only by the add and g of the add's type: the pool's
  /// backward with g as its addend, at the add (after both). A skip
  /// connection's two gradients are then summed as the pool writes its
  /// own, bit for bit the add's values.
  void addToPoolGrad(AddOp add) {
    for (unsigned side : {0u, 1u}) {
      auto pool = add->getOperand(side).getDefiningOp<MaxPool2DBackwardOp>();
      Value other = add->getOperand(1 - side);
      if (!pool || pool.getAddend() || !pool->hasOneUse() ||
          pool.getType() != add.getType() || other.getType() != add.getType())
        continue;
      OpBuilder b(add);
      auto fused = MaxPool2DBackwardOp::create(
          b, fusedLocation(&getContext(), {pool, add}), pool.getType(),
          pool.getGrad(), pool.getInput(), pool.getKernelAttr(),
          pool.getStrideAttr(), pool.getPaddingAttr(), other);
      if (Attribute precision = pool->getAttr("mpc.precision"))
        fused->setAttr("mpc.precision", precision);
      remark(fused);
      add.getResult().replaceAllUsesWith(fused.getResult());
      add.erase();
      pool.erase();
      return;
    }
  }

  /// A concatenation of NHWC tensors along their channels, read only as
  /// the input of convolutions (`mpc.conv2d`, no addend, and
  /// `mpc.conv2d_backward_filter`, one group each), each part's channels a
  /// multiple of 8: each convolution becomes those of the parts, which
  /// never meet in memory. The forward's parts read their slices of the
  /// filter (OHWI, channels innermost), each after the first adding to the
  /// one before (its addend); the filter gradient is the concatenation of
  /// the parts' (filter-sized, where the activations were). The same
  /// products, summed in another order: one rounding of a partial sum to
  /// the result's type between the parts.
  void splitConcatConvs(ConcatOp concat) {
    RankedTensorType type = concat.getType();
    if (type.getRank() != 4 || concat.getAxis() != 3 ||
        concat.getInputs().size() < 2 || !type.hasStaticShape() ||
        concat->use_empty())
      return;
    SmallVector<int64_t> channels;
    for (Value part : concat.getInputs()) {
      int64_t c = typeOf(part).getDimSize(3);
      if (c % 8 != 0)
        return;
      channels.push_back(c);
    }
    for (OpOperand &use : concat->getUses()) {
      Operation *user = use.getOwner();
      if (user->getBlock() != concat->getBlock())
        return; // the readers are placed in the concatenation's block
      if (auto conv = dyn_cast<Conv2DOp>(user);
          conv && use.getOperandNumber() == 0 && !conv.getAddend() &&
          conv.getGroups() == 1)
        continue;
      if (auto back = dyn_cast<Conv2DBackwardFilterOp>(user);
          back && use.getOperandNumber() == 1 && back.getGroups() == 1)
        continue;
      return;
    }
    SmallVector<Operation *> readers(concat->getUsers());
    llvm::sort(readers, [](Operation *a, Operation *b) {
      return a->isBeforeInBlock(b);
    });
    readers.erase(llvm::unique(readers), readers.end());
    auto copyPrecision = [](Operation *from, Operation *to) {
      if (Attribute precision = from->getAttr("mpc.precision"))
        to->setAttr("mpc.precision", precision);
    };
    for (Operation *reader : readers) {
      OpBuilder b(reader);
      Location loc = fusedLocation(&getContext(), {concat, reader});
      if (auto conv = dyn_cast<Conv2DOp>(reader)) {
        RankedTensorType filter = typeOf(conv.getFilter());
        Value sum;
        int64_t offset = 0;
        for (auto [part, c] : llvm::zip_equal(concat.getInputs(), channels)) {
          SmallVector<int64_t> offsets = {0, 0, 0, offset};
          SmallVector<int64_t> sizes(filter.getShape());
          sizes[3] = c;
          auto slice = SliceOp::create(b, conv.getLoc(), conv.getFilter(),
                                       offsets, sizes, DenseI64ArrayAttr());
          copyPrecision(conv, slice);
          auto next = Conv2DOp::create(
              b, sum ? loc : conv.getLoc(), conv.getType(), part, slice,
              conv.getStrideAttr(), conv.getPaddingAttr(),
              conv.getDilationAttr(), conv.getGroupsAttr(), sum);
          copyPrecision(conv, next);
          sum = next.getResult();
          offset += c;
        }
        remark(sum.getDefiningOp(),
               llvm::formatv(" (a convolution of each of {0} channel parts, "
                             "each after the first adding to the one before)",
                             channels.size())
                   .str());
        conv.getResult().replaceAllUsesWith(sum);
        conv.erase();
        continue;
      }
      auto back = cast<Conv2DBackwardFilterOp>(reader);
      RankedTensorType filter = back.getType();
      SmallVector<Value> grads;
      for (auto [part, c] : llvm::zip_equal(concat.getInputs(), channels)) {
        SmallVector<int64_t> shape(filter.getShape());
        shape[3] = c;
        auto grad = Conv2DBackwardFilterOp::create(
            b, back.getLoc(), filter.clone(shape), back.getGrad(), part,
            back.getStrideAttr(), back.getPaddingAttr(), back.getDilationAttr(),
            back.getGroupsAttr());
        copyPrecision(back, grad);
        grads.push_back(grad);
      }
      auto joined = ConcatOp::create(b, loc, grads, b.getI64IntegerAttr(3));
      copyPrecision(back, joined);
      remark(joined,
             llvm::formatv(" (the filter gradients of {0} channel parts)",
                           channels.size())
                 .str());
      back.getResult().replaceAllUsesWith(joined.getResult());
      back.erase();
    }
    concat.erase();
  }

  /// Erases `v`'s producer and what it read if nothing reads them (the
  /// constant a folded scale came from).
  static void eraseIfDead(Value v) {
    Operation *def = v.getDefiningOp();
    if (!def || !isOpTriviallyDead(def))
      return;
    SmallVector<Value> operands(def->getOperands());
    def->erase();
    for (Value operand : operands)
      eraseIfDead(operand);
  }

  /// `mul(x, c)` or `div(x, c)` (c a one-element constant; a division a
  /// scale of 1/c) read only by a softmax or log-softmax: the softmax's
  /// scale times it, reading x; or `mul(g, c)` where g is a softmax
  /// gradient read only by the mul: the gradient's scale times it. A
  /// scale of a product's operand, the product read only by a softmax
  /// (the queries scaled before `q @ k^T`, as nn.MultiheadAttention
  /// exports it), is a scale of the product: the softmax's too, and the
  /// product reads x (in the forward graph's run, the queries' gradient
  /// then has no scale of its own either). The same values where c is a
  /// power of two (1 / sqrt(64)); otherwise the scale is applied once, in
  /// f32, to the product's sum instead of to each query rounded.
  void foldScale(Operation *mul) {
    auto scaled = scaleOf(mul);
    if (!scaled || typeOf(scaled->second) != typeOf(mul->getResult(0)))
      return;
    auto [c, x] = *scaled;
    Operation *op = nullptr;
    Value constant =
        mul->getOperand(0) == x ? mul->getOperand(1) : mul->getOperand(0);
    if (mul->hasOneUse() &&
        isa<SoftmaxOp, LogSoftmaxOp>(*mul->getUsers().begin())) {
      op = *mul->getUsers().begin();
      op->setOperand(0, x);
    } else if (Operation *def = x.getDefiningOp();
               isa_and_nonnull<SoftmaxBackwardOp, LogSoftmaxBackwardOp>(def) &&
               x.hasOneUse()) {
      op = def;
      mul->getResult(0).replaceAllUsesWith(x);
    } else if (auto product = mul->hasOneUse()
                                  ? dyn_cast<MatmulOp>(*mul->getUsers().begin())
                                  : MatmulOp();
               product && product->hasOneUse() &&
               isa<SoftmaxOp, LogSoftmaxOp>(*product->getUsers().begin())) {
      op = *product->getUsers().begin();
      mul->getResult(0).replaceAllUsesWith(x);
    } else {
      return;
    }
    auto scale = cast<FloatAttr>(op->getAttr("scale"));
    op->setAttr("scale",
                FloatAttr::get(scale.getType(), scale.getValueAsDouble() * c));
    addPart(op, mul, /*partFirst=*/mul->isBeforeInBlock(op));
    char text[32];
    std::snprintf(text, sizeof text, "%g", c);
    remark(op, " (scale " + std::string(text) + ")");
    mul->erase();
    eraseIfDead(constant);
  }

  /// f16/bf16 to f32 (exact).
  static bool isWidening(CastOp cast) {
    Type from = typeOf(cast.getInput()).getElementType();
    Type to = typeOf(cast.getResult()).getElementType();
    return (from.isF16() || from.isBF16()) && to.isF32();
  }

  /// An operand a mixed-type op reads in any of f16, bf16 and f32.
  static bool readsAnyFloat(OpOperand &use) {
    Operation *op = use.getOwner();
    if (isa<SoftmaxOp, LogSoftmaxOp, SoftmaxBackwardOp, LogSoftmaxBackwardOp,
            SoftmaxDropoutOp, SoftmaxDropoutBackwardOp>(op))
      return true;
    if (auto dropout = dyn_cast<DropoutOp>(op))
      return &use == &dropout.getInputMutable();
    return false;
  }

  /// `op` as parts of a fusion's location: the parts its own location
  /// names where `ownParts` (an op fused from them), else itself.
  void appendParts(Operation *op, bool ownParts,
                   SmallVectorImpl<Location> &locs,
                   SmallVectorImpl<Attribute> &names) {
    SmallVector<StringRef> parts = partsOf(op);
    auto fused = dyn_cast<FusedLoc>(op->getLoc());
    if (ownParts && fused && parts.size() == fused.getLocations().size()) {
      llvm::append_range(locs, fused.getLocations());
      for (StringRef name : parts)
        names.push_back(StringAttr::get(&getContext(), name));
      return;
    }
    locs.push_back(op->getLoc());
    names.push_back(
        StringAttr::get(&getContext(), op->getName().getStringRef()));
  }

  /// The fused location of `op` and a cast folded into it, in program
  /// order, keeping the parts of an op already fused.
  void addPart(Operation *op, Operation *part, bool partFirst) {
    SmallVector<Location> locs;
    SmallVector<Attribute> names;
    auto partName =
        StringAttr::get(&getContext(), part->getName().getStringRef());
    if (partFirst) {
      locs.push_back(part->getLoc());
      names.push_back(partName);
    }
    // Parts already folded into this op (or fused into it: a
    // softmax_dropout's); a location a backward op took from its forward
    // op (autodiff) names the forward's parts instead, and counts as one.
    appendParts(op,
                llvm::is_contained(partsOf(op), op->getName().getStringRef()) ||
                    isa<SoftmaxDropoutOp>(op),
                locs, names);
    if (!partFirst) {
      locs.push_back(part->getLoc());
      names.push_back(partName);
    }
    op->setLoc(FusedLoc::get(locs, ArrayAttr::get(&getContext(), names),
                             &getContext()));
  }

  /// A widening cast read only by operands that take any float type: they
  /// read its input instead.
  void foldCastIntoReaders(CastOp cast) {
    Value wide = cast.getResult();
    if (wide.use_empty() || !llvm::all_of(wide.getUses(), [](OpOperand &use) {
          return readsAnyFloat(use);
        }))
      return;
    SmallVector<Operation *> readers;
    for (OpOperand &use : wide.getUses())
      if (!llvm::is_contained(readers, use.getOwner()))
        readers.push_back(use.getOwner());
    // In program order (the use list is not).
    if (llvm::all_of(readers, [&](Operation *r) {
          return r->getBlock() == cast->getBlock();
        }))
      llvm::sort(readers, [](Operation *a, Operation *b) {
        return a->isBeforeInBlock(b);
      });
    wide.replaceAllUsesWith(cast.getInput());
    for (Operation *reader : readers) {
      addPart(reader, cast, /*partFirst=*/true);
      remark(reader,
             " (reads " +
                 llvm::formatv("{0}", typeOf(cast.getInput()).getElementType())
                     .str() +
                 ")");
    }
    cast.erase();
  }

  /// A narrowing cast, the only reader of a mixed-type op's result: the op
  /// writes the cast's type.
  void foldCastIntoProducer(CastOp cast) {
    Type from = typeOf(cast.getInput()).getElementType();
    Type to = typeOf(cast.getResult()).getElementType();
    if (!from.isF32() || !(to.isF16() || to.isBF16()))
      return;
    Value value = cast.getInput();
    Operation *op = value.getDefiningOp();
    if (!op || !value.hasOneUse() ||
        !isa<SoftmaxOp, LogSoftmaxOp, SoftmaxBackwardOp, LogSoftmaxBackwardOp,
             DropoutOp, SoftmaxDropoutOp, SoftmaxDropoutBackwardOp>(op) ||
        value != op->getResult(0))
      return;
    value.setType(cast.getResult().getType());
    cast.getResult().replaceAllUsesWith(value);
    addPart(op, cast, /*partFirst=*/false);
    remark(op, " (writes " + llvm::formatv("{0}", to).str() + ")");
    cast.erase();
  }

  /// `y = softmax(x)` over the last axis with y unrounded (f32; f64 for an
  /// f64 x), read only by one `mpc.dropout` and by `mpc.softmax_backward`
  /// ops of its scale whose gradient is an `mpc.dropout_backward` of that
  /// dropout's mask, read by nothing else (the mask read by nothing else
  /// either): one mpc.softmax_dropout at the dropout, and each pair of
  /// gradients one mpc.softmax_dropout_backward, which reads x. The same
  /// values bit for bit; neither y nor the mask is written.
  void fuseSoftmaxDropout(SoftmaxOp softmax) {
    Value x = softmax.getInput(), y = softmax.getResult();
    RankedTensorType type = typeOf(y);
    Type element = typeOf(x).getElementType();
    Type unrounded =
        element.isF64() ? element : Float32Type::get(&getContext());
    int64_t rank = type.getRank();
    int64_t axis = softmax.getAxis();
    if (type.getElementType() != unrounded || rank == 0 ||
        (axis < 0 ? axis + rank : axis) != rank - 1)
      return;
    Block *block = softmax->getBlock();
    DropoutOp dropout;
    CastOp narrowing;
    SmallVector<SoftmaxBackwardOp> gradients;
    for (OpOperand &use : y.getUses()) {
      Operation *user = use.getOwner();
      if (user->getBlock() != block)
        return;
      if (auto d = dyn_cast<DropoutOp>(user); d && !dropout && !narrowing) {
        dropout = d;
        continue;
      }
      if (auto c = dyn_cast<CastOp>(user);
          c && !dropout && !narrowing && type.getElementType().isF32() &&
          (typeOf(c.getResult()).getElementType().isF16() ||
           typeOf(c.getResult()).getElementType().isBF16())) {
        narrowing = c;
        continue;
      }
      auto gradient = dyn_cast<SoftmaxBackwardOp>(user);
      if (!gradient || use.getOperandNumber() != 1 ||
          gradient.getScale() != softmax.getScale() ||
          gradient.getAxis() != softmax.getAxis())
        return;
      gradients.push_back(gradient);
    }
    // No dropout: the probabilities narrowed for the products (f32 to
    // f16/bf16 at O1/O2) and their gradients, which read the f32 ones. As
    // mpc.softmax_dropout with p = 0: the narrowed probabilities written
    // at once, the gradients from the scores; the values bit for bit.
    if (narrowing && !gradients.empty()) {
      OpBuilder b(narrowing);
      replaceSoftmax(softmax, narrowing, narrowing.getResult(),
                     b.getF64FloatAttr(0), b.getI64IntegerAttr(0), gradients,
                     /*dropped=*/{});
      return;
    }
    if (!dropout)
      return;
    // Each gradient's: the dropout's gradient, through the same mask.
    SmallVector<DropoutBackwardOp> dropped;
    for (SoftmaxBackwardOp gradient : gradients) {
      auto back = gradient.getGrad().getDefiningOp<DropoutBackwardOp>();
      if (!back || back.getMask() != dropout.getMask() ||
          back.getP() != dropout.getP() || !back.getResult().hasOneUse() ||
          back->getBlock() != block)
        return;
      dropped.push_back(back);
    }
    if (!llvm::all_of(dropout.getMask().getUsers(), [&](Operation *user) {
          return llvm::is_contained(dropped, user);
        }))
      return;

    replaceSoftmax(softmax, dropout, dropout.getResult(), dropout.getPAttr(),
                   dropout.getSeedAttr(), gradients, dropped);
  }

  /// The rewrite of fuseSoftmaxDropout: an mpc.softmax_dropout {p, seed}
  /// at `part` (the dropout, or without one the narrowing cast, p = 0)
  /// replacing `result`, and for each gradient an
  /// mpc.softmax_dropout_backward reading the softmax's input and the
  /// gradient its dropped[i] reads (without a dropout: its own gradient,
  /// which dropping by 1 leaves as it is).
  void replaceSoftmax(SoftmaxOp softmax, Operation *part, Value result,
                      FloatAttr p, IntegerAttr seed,
                      ArrayRef<SoftmaxBackwardOp> gradients,
                      ArrayRef<DropoutBackwardOp> dropped) {
    Value x = softmax.getInput();
    OpBuilder b(part);
    auto fused = SoftmaxDropoutOp::create(
        b, fusedLocation(&getContext(), {softmax, part}), result.getType(), x,
        softmax.getScaleAttr(), p, seed, /*recompute=*/nullptr);
    remark(fused);
    result.replaceAllUsesWith(fused.getResult());
    for (size_t i = 0; i < gradients.size(); ++i) {
      SoftmaxBackwardOp gradient = gradients[i];
      DropoutBackwardOp back = dropped.empty() ? nullptr : dropped[i];
      SmallVector<Operation *> parts;
      if (back)
        parts.push_back(back);
      parts.push_back(gradient);
      b.setInsertionPoint(gradient);
      auto fusedGradient = SoftmaxDropoutBackwardOp::create(
          b, fusedLocation(&getContext(), parts), gradient.getType(),
          /*dropped=*/Type(), back ? back.getGrad() : gradient.getGrad(), x,
          softmax.getScaleAttr(), p, seed);
      remark(fusedGradient);
      gradient.getResult().replaceAllUsesWith(fusedGradient.getResult());
      gradient.erase();
      if (back)
        back.erase();
    }
    part->erase();
    softmax.erase();
  }

  /// A softmax_dropout's result read again after its first reader (the
  /// backward pass's product with the dropped probabilities): a copy of
  /// the op, marked `recompute`, computes it again before the first later
  /// reader, for all of them, so that the result dies at its first reader
  /// and only the input is kept (the copy costs one more pass; the input
  /// is kept for the gradient anyway).
  void recomputeForLateReaders(SoftmaxDropoutOp op) {
    if (op.getRecompute())
      return; // a copy already
    SmallVector<Operation *> readers;
    for (Operation *user : op->getUsers()) {
      if (user->getBlock() != op->getBlock())
        return;
      if (!llvm::is_contained(readers, user))
        readers.push_back(user);
    }
    if (readers.size() < 2)
      return;
    llvm::sort(readers, [](Operation *a, Operation *b) {
      return a->isBeforeInBlock(b);
    });
    Operation *first = readers.front();
    OpBuilder b(readers[1]);
    auto copy = cast<SoftmaxDropoutOp>(b.clone(*op));
    copy.setRecompute(true);
    op.getResult().replaceUsesWithIf(copy.getResult(), [&](OpOperand &use) {
      return use.getOwner() != first;
    });
    if (remarks)
      emitRemark(reportedLocation(copy.getOperation()))
          << "recomputed: " << copy->getName() << " before "
          << readers[1]->getName() << " (its result is not kept from "
          << first->getName() << ")";
  }

  /// recompute-in-backward: a `recompute` copy of an mpc.softmax_dropout
  /// whose block holds an mpc.softmax_dropout_backward of the same input
  /// and attributes, with the copy's element type throughout (the CUDA
  /// kernels then compute the probabilities the forward's way): that
  /// backward, the earliest such, writes the dropped probabilities as its
  /// `dropped` result instead, bit for bit the copy's. An attention's
  /// backward computes its probabilities once, not twice. The copy's
  /// readers before the backward (the product for the values' gradient),
  /// and the ops that read those before it, move just after it, in their
  /// order; where the backward reads one of them, or one has memory
  /// effects (a global's store), nothing changes.
  void recomputeInBackwardOf(SoftmaxDropoutOp copy) {
    if (!copy.getRecompute())
      return;
    Block *block = copy->getBlock();
    Type type = copy.getType();
    auto sameAttributes = [&](SoftmaxDropoutBackwardOp back) {
      return back.getScale().convertToDouble() ==
                 copy.getScale().convertToDouble() &&
             back.getP().convertToDouble() == copy.getP().convertToDouble() &&
             back.getSeed() == copy.getSeed();
    };
    SoftmaxDropoutBackwardOp back;
    for (Operation *user : copy.getInput().getUsers()) {
      auto candidate = dyn_cast<SoftmaxDropoutBackwardOp>(user);
      if (!candidate || candidate->getBlock() != block ||
          candidate.getDropped() || candidate.getInput() != copy.getInput() ||
          candidate.getGrad().getType() != type ||
          candidate.getResult().getType() != type || !sameAttributes(candidate))
        continue;
      if (!back || candidate->isBeforeInBlock(back))
        back = candidate;
    }
    if (!back)
      return;
    // What must come after the backward: the copy's readers before it
    // and, in turn, their readers before it.
    SmallVector<Operation *> moved;
    llvm::SmallPtrSet<Operation *, 8> movedSet;
    auto readsMoved = [&](Operation *op) {
      WalkResult found = op->walk([&](Operation *inner) {
        for (Value v : inner->getOperands()) {
          Operation *def = v.getDefiningOp();
          if (def && (def == copy.getOperation() || movedSet.contains(def)))
            return WalkResult::interrupt();
        }
        return WalkResult::advance();
      });
      return found.wasInterrupted();
    };
    // (A copy after the backward has no reader before it.)
    if (copy->isBeforeInBlock(back)) {
      for (Operation *op = copy->getNextNode(); op != back.getOperation();
           op = op->getNextNode())
        if (readsMoved(op)) {
          if (!isMemoryEffectFree(op))
            return;
          moved.push_back(op);
          movedSet.insert(op);
        }
      if (readsMoved(back))
        return;
    }
    OpBuilder b(back);
    auto fused = SoftmaxDropoutBackwardOp::create(
        b, back.getLoc(), TypeRange{back.getResult().getType(), type},
        back->getOperands(), back->getAttrs());
    for (Operation *op : llvm::reverse(moved))
      op->moveAfter(fused);
    back.getResult().replaceAllUsesWith(fused.getResult());
    copy.getResult().replaceAllUsesWith(fused.getDropped());
    if (remarks)
      emitRemark(reportedLocation(fused.getOperation()))
          << "recomputed in the backward: " << fused->getName()
          << " writes the dropped probabilities of " << copy->getName()
          << (moved.empty()
                  ? std::string()
                  : llvm::formatv(" ({0} op{1} moved after it)", moved.size(),
                                  moved.size() > 1 ? "s" : "")
                        .str());
    back.erase();
    copy.erase();
  }

  /// The ops that only move or convert elements (exactly: a second
  /// computation gives the same bits), cheap to compute again.
  static bool isMove(Operation *op) {
    return isa<ConcatOp, UpsampleNearest2DOp, TransposeOp, SliceOp,
               BroadcastToOp, CastOp>(op);
  }

  /// Where a move's result could die early: it is read first, or again,
  /// after a gap of more than one op (the widest such), at `later`, where
  /// its operands are live anyway (a block argument, or read there or
  /// after) or, kept until `later` for the copy (or the moved op), take
  /// fewer bytes than the result.
  struct Recomputation {
    Operation *later = nullptr;
    SmallVector<Operation *> lateReaders;
    bool allReaders = false;  // the op itself moves down to `later`
    int64_t from = 0, to = 0; // the positions in between lose the result
    // Operands kept longer for the copy: their last reads before, and
    // their bytes (fewer in all than the result's).
    SmallVector<std::pair<int64_t, int64_t>> extended;
    int64_t extendedBytes() const {
      int64_t sum = 0;
      for (auto [last, bytes] : extended)
        sum += bytes;
      return sum;
    }
  };

  /// The recomputation of `op` in `block` by the current readers and
  /// positions, or none.
  static std::optional<Recomputation>
  recomputationOf(Operation *op, DenseMap<Operation *, int64_t> &position) {
    SmallVector<Operation *> readers;
    llvm::SmallPtrSet<Operation *, 8> seen;
    for (Operation *user : op->getResult(0).getUsers()) {
      if (!position.count(user))
        return std::nullopt; // read in another block
      if (seen.insert(user).second)
        readers.push_back(user);
    }
    if (readers.empty())
      return std::nullopt;
    llvm::sort(readers, [&](Operation *a, Operation *b) {
      return position[a] != position[b] ? position[a] < position[b]
                                        : a->isBeforeInBlock(b);
    });
    auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
    if (!resultType.hasStaticShape())
      return std::nullopt;
    int64_t resultBytes = byteSize(resultType);
    // Each operand's last read in the block besides `op`, and its bytes
    // (block arguments are kept anyway).
    SmallVector<std::pair<int64_t, int64_t>> operands;
    llvm::SmallPtrSet<Value, 4> counted;
    for (Value v : op->getOperands()) {
      if (isa<BlockArgument>(v) || !counted.insert(v).second)
        continue;
      auto type = dyn_cast<RankedTensorType>(v.getType());
      if (!type || !type.hasStaticShape())
        return std::nullopt;
      int64_t last = position[op];
      for (Operation *u : v.getUsers())
        if (auto at = position.find(u); u != op && at != position.end())
          last = std::max(last, at->second);
      operands.push_back({last, byteSize(type)});
    }
    // The operands a copy at `at` keeps longer, or none where they would
    // take as many bytes as the result.
    auto extendedAt = [&](int64_t at)
        -> std::optional<SmallVector<std::pair<int64_t, int64_t>>> {
      SmallVector<std::pair<int64_t, int64_t>> extended;
      int64_t bytes = 0;
      for (auto [last, size] : operands)
        if (last < at) {
          extended.push_back({last, size});
          bytes += size;
        }
      if (bytes >= resultBytes)
        return std::nullopt;
      return extended;
    };
    // The gaps: between the op and its first reader (the op then moves
    // down to it), and between consecutive readers (a copy before the
    // later one).
    auto before = [&](size_t k) {
      return k == 0 ? position[op] : position[readers[k - 1]];
    };
    std::optional<size_t> split;
    int64_t widest = 1; // a gap of one op holds nothing to save
    for (size_t k = 0; k < readers.size(); ++k) {
      int64_t gap = position[readers[k]] - before(k);
      if (gap > widest && extendedAt(position[readers[k]]))
        split = k, widest = gap;
    }
    if (!split)
      return std::nullopt;
    Recomputation r;
    r.later = readers[*split];
    r.lateReaders.assign(readers.begin() + *split, readers.end());
    r.allReaders = *split == 0;
    r.from = before(*split) + 1;
    r.to = position[r.later] - 1;
    r.extended = *extendedAt(position[r.later]);
    return r;
  }

  /// recompute-moves: in each block, the moves whose results are kept
  /// across the peak of the block's live tensor bytes (each result from
  /// its op to its last reader), where a recomputation can drop them
  /// there, are copied before their later reader, which with every reader
  /// after it reads the copy. A copy that keeps operands longer (fewer
  /// bytes than the result) raises the live bytes from their last reads to
  /// the gap and at the later reader: it is made only if no position
  /// there reaches the peak, one such per round, its check within a
  /// budget of positions. Rounds until no move lowers the peak (at most
  /// kRounds, each linear in the block).
  void recomputeMovesOf(Block &block) {
    constexpr int kRounds = 16;
    DenseMap<Operation *, int64_t> position;
    int64_t count = 0;
    for (Operation &op : block)
      position[&op] = count++;
    SmallVector<Operation *> moves;
    for (Operation &op : block)
      if (isMove(&op) && op.getNumResults() == 1 &&
          isa<RankedTensorType>(op.getResult(0).getType()))
        moves.push_back(&op);
    DenseSet<Operation *> done;
    for (int round = 0; round < kRounds; ++round) {
      // Live bytes at each position: a result from its op to its last
      // reader.
      std::vector<int64_t> live(count + 1, 0);
      for (Operation &op : block)
        for (Value result : op.getResults()) {
          auto type = dyn_cast<RankedTensorType>(result.getType());
          if (!type || !type.hasStaticShape())
            continue;
          int64_t first = position[&op], last = first;
          for (Operation *user : result.getUsers())
            if (auto at = position.find(user); at != position.end())
              last = std::max(last, at->second);
          live[first] += byteSize(type);
          live[last + 1] -= byteSize(type);
        }
      int64_t peakAt = 0, running = 0, peak = -1;
      std::vector<int64_t> level(count);
      for (int64_t p = 0; p < count; ++p) {
        running += live[p];
        level[p] = running;
        if (running > peak)
          peak = running, peakAt = p;
      }
      // Whether keeping r's extended operands longer leaves every position
      // outside the gap below the peak (false past the scan budget).
      int64_t budget = 4 * count + 64;
      auto staysBelowPeak = [&](const Recomputation &r) {
        int64_t extra = r.extendedBytes();
        if (r.to + 1 < count && level[r.to + 1] + extra >= peak)
          return false; // at the later reader: the copy and the operands
        int64_t start = r.from;
        for (auto [last, bytes] : r.extended)
          start = std::min(start, last + 1);
        if ((budget -= r.from - start) < 0)
          return false;
        for (int64_t p = start; p < r.from; ++p) {
          int64_t more = 0;
          for (auto [last, bytes] : r.extended)
            if (p > last)
              more += bytes;
          if (level[p] + more >= peak)
            return false;
        }
        return true;
      };
      bool lowered = false, extendedThisRound = false;
      for (Operation *op : moves) {
        if (done.contains(op))
          continue;
        std::optional<Recomputation> r = recomputationOf(op, position);
        if (!r || peakAt < r->from || peakAt > r->to)
          continue;
        if (!r->extended.empty()) {
          // The levels are this round's: one such copy per round.
          if (extendedThisRound || !staysBelowPeak(*r))
            continue;
          extendedThisRound = true;
        }
        done.insert(op);
        lowered = true;
        if (r->allReaders) {
          // Read only after the gap: computed there, once.
          op->moveBefore(r->later);
          position[op] = position[r->later];
          if (remarks)
            emitRemark(reportedLocation(op))
                << "moved: " << op->getName() << " before "
                << r->later->getName() << " (its result is not kept across "
                << (r->to - r->from + 1) << " ops)";
          continue;
        }
        OpBuilder b(r->later);
        Operation *copy = b.clone(*op);
        copy->setAttr("mpc.recomputed", b.getUnitAttr());
        position[copy] = position[r->later];
        llvm::SmallPtrSet<Operation *, 8> late(r->lateReaders.begin(),
                                               r->lateReaders.end());
        op->getResult(0).replaceUsesWithIf(
            copy->getResult(0),
            [&](OpOperand &u) { return late.contains(u.getOwner()); });
        if (remarks)
          emitRemark(reportedLocation(copy))
              << "recomputed: " << copy->getName() << " before "
              << r->later->getName() << " (its result is not kept across "
              << (r->to - r->from + 1) << " ops)";
      }
      if (!lowered)
        return;
    }
  }

  /// `out = matmul(dropout(softmax(scale * matmul(q, k^T))), v)`, each
  /// intermediate read once (the dropout's mask never), the softmax over
  /// the last axis, q, k and v of one rank and leading dimensions.
  void fuseAttention(MatmulOp out) {
    if (out.getTransposeA() || out.getTransposeB())
      return;
    Value probs = out.getA(), v = out.getB();
    double dropoutP = 0;
    int64_t seed = 0;
    SmallVector<Operation *> parts;
    auto dropout = probs.getDefiningOp<DropoutOp>();
    if (dropout) {
      if (!dropout.getResult().hasOneUse() || !dropout.getMask().use_empty() ||
          dropout.getInput().getType() != dropout.getResult().getType())
        return;
      dropoutP = dropout.getP().convertToDouble();
      seed = static_cast<int64_t>(dropout.getSeed());
      parts.push_back(dropout);
      probs = dropout.getInput();
    }
    auto softmax = probs.getDefiningOp<SoftmaxOp>();
    // A softmax with its own scale or types (folded or hand-written) is
    // not the pattern.
    if (!softmax || !softmax->hasOneUse() ||
        softmax.getScale().convertToDouble() != 1 ||
        softmax.getInput().getType() != softmax.getType())
      return;
    int64_t rank = softmax.getType().getRank();
    int64_t axis = static_cast<int64_t>(softmax.getAxis());
    if (axis != -1 && axis != rank - 1)
      return;
    parts.push_back(softmax);
    Value scaled = softmax.getInput();
    // A mask: where(cond, fill, scores) fills where cond holds (PyTorch's
    // masked_fill), where(cond, scores, fill) where it does not.
    WhereOp masking = scaled.getDefiningOp<WhereOp>();
    std::optional<double> fill;
    bool keepWhereTrue = false;
    if (masking) {
      if (!scaled.hasOneUse())
        return;
      auto scalar = [](Value v) -> std::optional<double> {
        if (typeOf(v).getNumElements() != 1)
          return std::nullopt;
        return constantValue(v);
      };
      std::optional<double> l = scalar(masking.getLhs()),
                            r = scalar(masking.getRhs());
      if (l && !r) {
        fill = l;
        scaled = masking.getRhs();
      } else if (r && !l) {
        fill = r;
        keepWhereTrue = true;
        scaled = masking.getLhs();
      } else {
        return;
      }
      if (std::isnan(*fill))
        return;
      parts.push_back(masking);
    }
    // An additive bias (Hugging Face's padding bias, relative positions):
    // add(scaled scores, bias), the side that is not the (scaled) product
    // being the bias, computed from inputs and constants alone (it gets no
    // gradient) and widened exactly to f32.
    AddOp biasAdd = scaled.getDefiningOp<AddOp>();
    Value bias;
    if (biasAdd) {
      if (!scaled.hasOneUse())
        return;
      // The scores: a product, or a product scaled by a constant.
      auto isScores = [](Value v) {
        if (auto s = scaleOf(v.getDefiningOp()))
          v = s->second;
        return isa_and_nonnull<MatmulOp>(v.getDefiningOp());
      };
      bool lhs = isScores(biasAdd.getLhs()), rhs = isScores(biasAdd.getRhs());
      if (lhs == rhs)
        return;
      scaled = lhs ? biasAdd.getLhs() : biasAdd.getRhs();
      bias = lhs ? biasAdd.getRhs() : biasAdd.getLhs();
      Type element = typeOf(bias).getElementType();
      if (typeOf(scaled) != biasAdd.getType() ||
          !(element.isF32() || element.isF16() || element.isBF16()) ||
          readsModelState(bias))
        return;
      parts.push_back(biasAdd);
    }
    double scale = 1;
    Operation *scaling = nullptr;
    if (auto s = scaleOf(scaled.getDefiningOp())) {
      if (!scaled.hasOneUse())
        return;
      scaling = scaled.getDefiningOp();
      parts.push_back(scaling);
      scale = s->first;
      scaled = s->second;
    }
    auto scores = scaled.getDefiningOp<MatmulOp>();
    if (!scores || !scores->hasOneUse() || scores.getTransposeA())
      return;
    Value q = scores.getA(), k = scores.getB();
    // One shape for the scores all the way: no broadcast by the scaling.
    for (Operation *part : parts)
      if (part->getResult(0).getType() != scores.getType())
        return;
    auto qt = typeOf(q), kt = typeOf(k), vt = typeOf(v);
    if (qt.getRank() != vt.getRank() || kt.getRank() != vt.getRank() ||
        qt.getShape().drop_back(2) != kt.getShape().drop_back(2) ||
        qt.getShape().drop_back(2) != vt.getShape().drop_back(2))
      return;
    // q k^T with k^T made by a transpose (as ONNX exports it): the
    // transpose that makes k instead.
    auto keyTranspose = k.getDefiningOp<TransposeOp>();
    if (!scores.getTransposeB() && (!keyTranspose || !k.hasOneUse()))
      return;
    // The bias's and the mask's shapes: the scores' rank (leading 1s for a
    // lower rank), each dimension 1 or the scores'.
    auto scoresShaped = [&](Value v) -> std::optional<SmallVector<int64_t>> {
      ArrayRef<int64_t> shape = scores.getType().getShape();
      auto t = typeOf(v);
      if (t.getRank() > static_cast<int64_t>(shape.size()))
        return std::nullopt;
      SmallVector<int64_t> dims(shape.size() - t.getRank(), 1);
      llvm::append_range(dims, t.getShape());
      for (auto [d, n] : llvm::zip_equal(dims, shape))
        if (d != 1 && d != n)
          return std::nullopt;
      return dims;
    };
    SmallVector<int64_t> biasDims, maskDims;
    if (bias) {
      auto dims = scoresShaped(bias);
      if (!dims)
        return;
      biasDims = *dims;
    }
    if (masking) {
      auto dims = scoresShaped(masking.getCondition());
      if (!dims)
        return;
      maskDims = *dims;
    }

    // It fuses: from here on the IR changes.
    if (!scores.getTransposeB()) {
      OpBuilder kb(keyTranspose);
      k = untransposed(kb, k);
    } else {
      keyTranspose = nullptr;
    }
    OpBuilder b(out);
    // The mask, true where the score is filled.
    Value mask;
    if (masking) {
      mask = masking.getCondition();
      if (keepWhereTrue) {
        auto one = RankedTensorType::get({}, b.getI1Type());
        Value no = ConstantOp::create(
            b, masking.getLoc(), one,
            DenseElementsAttr::get(one, b.getBoolAttr(false)));
        mask = CompareOp::create(b, masking.getLoc(), mask, no,
                                 b.getStringAttr("eq"));
      }
      if (typeOf(mask).getShape() != ArrayRef<int64_t>(maskDims))
        mask = ReshapeOp::create(b, masking.getLoc(),
                                 RankedTensorType::get(maskDims, b.getI1Type()),
                                 mask);
    }
    if (bias) {
      auto f32 = RankedTensorType::get(biasDims, b.getF32Type());
      if (typeOf(bias).getShape() != ArrayRef<int64_t>(biasDims))
        bias =
            ReshapeOp::create(b, biasAdd.getLoc(),
                              f32.clone(typeOf(bias).getElementType()), bias);
      if (!typeOf(bias).getElementType().isF32())
        bias = CastOp::create(b, biasAdd.getLoc(), f32, bias);
    }
    parts.push_back(scores);
    SmallVector<Operation *> inOrder(llvm::reverse(parts));
    inOrder.push_back(out);
    auto fused = AttentionOp::create(
        b, fusedLocation(&getContext(), inOrder), q, k, v, mask, bias,
        b.getF64FloatAttr(scale), b.getF64FloatAttr(dropoutP),
        b.getI64IntegerAttr(seed),
        fill ? b.getF64FloatAttr(*fill) : FloatAttr(), StringAttr());
    if (Attribute precision = out->getAttr("mpc.precision"))
      fused->setAttr("mpc.precision", precision);
    remark(fused);
    SmallVector<Value> scaleOperands; // the constant sides
    for (Operation *part : {scaling, masking.getOperation()})
      if (part)
        for (Value operand : part->getOperands())
          if (!isa<IntegerType>(typeOf(operand).getElementType()) &&
              constantValue(operand))
            scaleOperands.push_back(operand);
    out.getResult().replaceAllUsesWith(fused.getResult());
    out.erase();
    for (Operation *part : parts)
      part->erase();
    if (keyTranspose)
      keyTranspose->erase();
    // The scale's and the fill's constants (and the arithmetic on them) go
    // if unread.
    for (Value operand : scaleOperands)
      eraseDeadConstant(operand);
  }

  /// An attention whose query is a one-element constant's product (or
  /// quotient) with a tensor of its type read only by it: the attention
  /// of that tensor, its scale times the constant. Exact where the
  /// constant is a power of two (1 / sqrt(64)); otherwise the queries are
  /// no longer rounded once scaled (as `scales` folds a softmax's).
  void foldQueryScale(AttentionOp op) {
    Operation *product = op.getQuery().getDefiningOp();
    auto scaled = scaleOf(product);
    if (!scaled || !op.getQuery().hasOneUse() ||
        typeOf(scaled->second) != typeOf(op.getQuery()))
      return;
    auto [c, x] = *scaled;
    Value constant = product->getOperand(0) == x ? product->getOperand(1)
                                                 : product->getOperand(0);
    op.getQueryMutable().assign(x);
    op.setScaleAttr(FloatAttr::get(op.getScaleAttr().getType(),
                                   op.getScale().convertToDouble() * c));
    if (remarks)
      emitRemark(op.getLoc())
          << "folded: the query's scale into mpc.attention's scale";
    product->erase();
    eraseIfDead(constant);
  }

  /// An attention of layout "bhsd" whose query, key and value are each a
  /// transpose [..., S, H, D] -> [..., H, S, D] read by nothing else, its
  /// log-sum-exp unread (a forward graph) and its result read only by
  /// transposes back to [..., S, H, Dv]: one attention of layout "bshd"
  /// on the transposes' inputs, whose result replaces theirs. BERT's head
  /// transposes (four each way per layer) are then no kernels of their
  /// own, and the projections' reshaped results are the operands. The
  /// same where the batch and the heads are merged around the attention
  /// (a batch-first import's [B, H, S, D] viewed as [B H, S, D], each
  /// reshape read only by its transpose or attention), with no mask or
  /// bias: the attention then takes the unmerged [B, S, H, D] operands.
  void foldHeadTransposes(AttentionOp op) {
    if (op.getLayout() != "bhsd" || !op.getLogsumexp().use_empty() ||
        op.getResult().use_empty())
      return;
    auto swapsHeads = [&](TransposeOp t) {
      int64_t rank = t ? typeOf(t.getResult()).getRank() : 0;
      if (rank < 3)
        return false;
      ArrayRef<int64_t> perm = t.getPermutation();
      for (int64_t d = 0; d < rank; ++d)
        if (perm[d] != (d == rank - 3   ? rank - 2
                        : d == rank - 2 ? rank - 3
                                        : d))
          return false;
      return true;
    };
    // A reshape of [B, H, S, D] to [B H, S, D], or of the reverse.
    auto mergesHeads = [](ArrayRef<int64_t> heads, ArrayRef<int64_t> merged) {
      return heads.size() == 4 && merged.size() == 3 &&
             heads[0] * heads[1] == merged[0] && heads[2] == merged[1] &&
             heads[3] == merged[2];
    };
    // Merged heads: the operands' views of [B, H, S, D] as [B H, S, D], and
    // the result's back.
    SmallVector<Operation *> parts, operandViews, resultViews;
    SmallVector<Value> inputs;
    for (Value operand : {op.getQuery(), op.getKey(), op.getValue()}) {
      if (!operand.hasOneUse())
        return;
      auto t = operand.getDefiningOp<TransposeOp>();
      if (auto view = operand.getDefiningOp<ReshapeOp>();
          view && view.getInput().hasOneUse() && !op.getMask() &&
          !op.getBias() &&
          mergesHeads(typeOf(view.getInput()).getShape(),
                      view.getType().getShape())) {
        operandViews.push_back(view);
        t = view.getInput().getDefiningOp<TransposeOp>();
      }
      if (!swapsHeads(t))
        return;
      parts.push_back(t);
      inputs.push_back(t.getInput());
    }
    bool merged = !operandViews.empty();
    // Merged: all three split the same batch and heads.
    auto splitAs = [&](ArrayRef<int64_t> heads) {
      return heads[0] == typeOf(inputs[0]).getDimSize(0) &&
             heads[1] == typeOf(inputs[0]).getDimSize(2);
    };
    if (merged &&
        (operandViews.size() != 3 || llvm::any_of(inputs, [&](Value in) {
           return !splitAs(
               {typeOf(in).getDimSize(0), typeOf(in).getDimSize(2)});
         })))
      return;
    SmallVector<TransposeOp> back;
    for (Operation *user : op.getResult().getUsers()) {
      if (merged) {
        auto view = dyn_cast<ReshapeOp>(user);
        if (!view || !view->hasOneUse() ||
            !mergesHeads(view.getType().getShape(),
                         typeOf(op.getResult()).getShape()) ||
            !splitAs(view.getType().getShape()))
          return;
        resultViews.push_back(view);
        user = *view->user_begin();
      }
      auto t = dyn_cast<TransposeOp>(user);
      if (!swapsHeads(t))
        return;
      back.push_back(t);
    }
    llvm::append_range(parts, back);
    // The attention's parts first (where reports and the numerics checks
    // place the op: the scores' product, or a hand-written op's line),
    // then the transposes.
    SmallVector<Location> locs;
    SmallVector<Attribute> names;
    appendParts(op, /*ownParts=*/true, locs, names);
    for (Operation *part : parts)
      appendParts(part, /*ownParts=*/false, locs, names);
    OpBuilder b(op);
    auto fused = AttentionOp::create(
        b,
        FusedLoc::get(locs, ArrayAttr::get(&getContext(), names),
                      &getContext()),
        inputs[0], inputs[1], inputs[2], op.getMask(), op.getBias(),
        op.getScaleAttr(), op.getDropoutPAttr(), op.getSeedAttr(),
        op.getMaskValueAttr(), b.getStringAttr("bshd"));
    if (Attribute precision = op->getAttr("mpc.precision"))
      fused->setAttr("mpc.precision", precision);
    remark(fused, " (layout \"bshd\")");
    for (TransposeOp t : back) {
      t.getResult().replaceAllUsesWith(fused.getResult());
      t.erase();
    }
    for (Operation *view : resultViews)
      view->erase();
    op.erase();
    for (Operation *view : operandViews)
      view->erase();
    for (size_t n = 0; n < 3; ++n)
      parts[n]->erase();
  }

  static void eraseDeadConstant(Value v) {
    Operation *def = v.getDefiningOp();
    if (!def || !def->use_empty() || !constantValue(v))
      return;
    SmallVector<Value> operands(def->getOperands());
    def->erase();
    for (Value operand : operands)
      eraseDeadConstant(operand);
  }

  /// A layer norm over the last axis written out of reductions and
  /// elementwise ops, as ONNX exports nn.LayerNorm before opset 17 and as
  /// models compute it by hand:
  ///
  ///   d = x - reduce_mean(x)          (the mean kept as [..., 1])
  ///   v = reduce_mean(d ^ 2)          (pow(d, 2) or d * d)
  ///   n = d / sqrt(v + eps)           (or d * rsqrt(v + eps))
  ///   y = n * gamma + beta            (optional; gamma and beta [C])
  ///
  /// each intermediate read only by the next (d by its square and the
  /// normalisation), eps and the exponent constants: one mpc.layer_norm of
  /// x with that epsilon (gamma ones and beta zeros where absent), at the
  /// chain's last op. The statistics are those of the chain (the mean,
  /// and 1 / sqrt of the biased variance + eps); only the rounding of the
  /// steps differs.
  void fuseDecomposedNorm(ReduceMeanOp mean) {
    Value x = mean.getInput();
    RankedTensorType type = typeOf(x);
    int64_t rank = type.getRank();
    if (rank < 1 || !type.hasStaticShape() || !mean.getKeepDims() ||
        mean.getDims() != ArrayRef<int64_t>{rank - 1} ||
        !mean.getResult().hasOneUse())
      return;
    Block *block = mean->getBlock();
    // The one reader of `v`, in the block, or null.
    auto onlyReader = [&](Value v) -> Operation * {
      if (!v.hasOneUse())
        return nullptr;
      Operation *user = *v.getUsers().begin();
      return user->getBlock() == block ? user : nullptr;
    };
    auto sub = dyn_cast_or_null<SubOp>(onlyReader(mean.getResult()));
    if (!sub || sub.getLhs() != x || sub.getRhs() != mean.getResult() ||
        sub.getType() != type)
      return;
    Value d = sub.getResult();
    // d's readers: its square and the normalisation.
    Operation *square = nullptr, *normalize = nullptr;
    for (Operation *user : d.getUsers()) {
      if (user->getBlock() != block)
        return;
      bool isSquare = (isa<MulOp>(user) && user->getOperand(0) == d &&
                       user->getOperand(1) == d) ||
                      (isa<PowOp>(user) && user->getOperand(0) == d &&
                       typeOf(user->getOperand(1)).getNumElements() == 1 &&
                       constantValue(user->getOperand(1)) == 2.0);
      if (isSquare && (!square || square == user))
        square = user;
      else if (!normalize && isa<DivOp, MulOp>(user) && user != square)
        normalize = user;
      else
        return;
    }
    if (!square || !normalize || typeOf(square->getResult(0)) != type)
      return;
    auto variance =
        dyn_cast_or_null<ReduceMeanOp>(onlyReader(square->getResult(0)));
    if (!variance || !variance.getKeepDims() ||
        variance.getDims() != ArrayRef<int64_t>{rank - 1})
      return;
    auto shifted = dyn_cast_or_null<AddOp>(onlyReader(variance.getResult()));
    if (!shifted)
      return;
    int side = shifted.getLhs() == variance.getResult() ? 1 : 0;
    Value epsValue = shifted->getOperand(side);
    std::optional<double> eps = typeOf(epsValue).getNumElements() == 1
                                    ? constantValue(epsValue)
                                    : std::nullopt;
    if (!eps || !(*eps >= 0) || !std::isfinite(*eps) ||
        shifted.getType() != variance.getType())
      return;
    Operation *root = onlyReader(shifted.getResult());
    if (!root || !isa<SqrtOp, RsqrtOp>(root))
      return;
    Value r = root->getResult(0);
    bool divides = isa<SqrtOp>(root);
    if (divides ? !(isa<DivOp>(normalize) && normalize->getOperand(0) == d &&
                    normalize->getOperand(1) == r)
                : !(isa<MulOp>(normalize) &&
                    llvm::is_contained(normalize->getOperands(), r)))
      return;
    if (onlyReader(r) != normalize || typeOf(normalize->getResult(0)) != type)
      return;
    SmallVector<Operation *> inOrder{mean,    sub,  square,   variance,
                                     shifted, root, normalize};
    // The affine, where its operands are vectors of the last dimension.
    RankedTensorType vector =
        RankedTensorType::get({type.getShape().back()}, type.getElementType());
    Value gamma, beta, last = normalize->getResult(0);
    auto affineOperand = [&](Operation *op, Value v) -> Value {
      if (!op || (op->getOperand(0) != v && op->getOperand(1) != v))
        return {};
      Value other = op->getOperand(op->getOperand(0) == v ? 1 : 0);
      return typeOf(other) == vector && typeOf(op->getResult(0)) == type
                 ? other
                 : Value();
    };
    if (auto scale = dyn_cast_or_null<MulOp>(onlyReader(last)))
      if ((gamma = affineOperand(scale, last))) {
        inOrder.push_back(scale);
        last = scale.getResult();
      }
    if (auto shift = dyn_cast_or_null<AddOp>(onlyReader(last)))
      if ((beta = affineOperand(shift, last))) {
        inOrder.push_back(shift);
        last = shift.getResult();
      }
    Operation *at = inOrder.back();
    OpBuilder b(at);
    Location loc = fusedLocation(&getContext(), inOrder);
    auto splat = [&](double value) -> Value {
      return ConstantOp::create(
          b, loc,
          DenseElementsAttr::get(
              vector, b.getFloatAttr(vector.getElementType(), value)));
    };
    if (!gamma)
      gamma = splat(1.0);
    if (!beta)
      beta = splat(0.0);
    auto fused =
        LayerNormOp::create(b, loc, x, gamma, beta, b.getI64IntegerAttr(-1),
                            b.getF64FloatAttr(*eps));
    remark(fused, " (epsilon " + std::to_string(*eps) + ")");
    last.replaceAllUsesWith(fused.getResult());
    Value exponent = isa<PowOp>(square) ? square->getOperand(1) : Value();
    for (Operation *op : llvm::reverse(inOrder))
      op->erase();
    eraseDeadConstant(epsValue);
    if (exponent)
      eraseDeadConstant(exponent);
  }

  /// `layer_norm(add(dropout(x), residual))` over the last axis, the
  /// dropout optional (its mask unread, its result read only by the add),
  /// the add of two tensors of one type or of one broadcast over the
  /// other's leading dimensions (the residual, without dropout: BERT's
  /// position embeddings), the statistics unread (a forward graph): one
  /// mpc.add_layer_norm at the norm, whose sum replaces the add for its
  /// other readers (which must follow the norm).
  void fuseResidualNorm(LayerNormOp norm) {
    RankedTensorType type = typeOf(norm.getResult());
    int64_t rank = type.getRank();
    int64_t axis = norm.getAxis();
    if (rank < 1 || (axis != -1 && axis != rank - 1) ||
        !norm.getMean().use_empty() || !norm.getRstd().use_empty())
      return;
    auto add = norm.getInput().getDefiningOp<AddOp>();
    if (!add || add->getBlock() != norm->getBlock())
      return;
    // The sides of the norm's type may take the dropout; a broadcast one
    // is the residual.
    bool full[2] = {typeOf(add.getLhs()) == type, typeOf(add.getRhs()) == type};
    if (!(full[0] && full[1]) &&
        !(full[0] && isResidualOf(typeOf(add.getRhs()), type)) &&
        !(full[1] && isResidualOf(typeOf(add.getLhs()), type)))
      return;
    for (Operation *user : add->getUsers())
      if (user != norm && (user->getBlock() != norm->getBlock() ||
                           !norm->isBeforeInBlock(user)))
        return;
    DropoutOp dropout;
    Value x = full[0] ? add.getLhs() : add.getRhs();
    Value residual = full[0] ? add.getRhs() : add.getLhs();
    for (int side = 0; side < 2 && !dropout; ++side) {
      if (!full[side])
        continue;
      auto d = add->getOperand(side).getDefiningOp<DropoutOp>();
      if (d && d.getMask().use_empty() && d.getResult().hasOneUse() &&
          d.getInput().getType() == d.getResult().getType()) {
        dropout = d;
        x = d.getInput();
        residual = add->getOperand(1 - side);
      }
    }
    SmallVector<Operation *> inOrder;
    if (dropout)
      inOrder.push_back(dropout);
    inOrder.append({add, norm});
    OpBuilder b(norm);
    auto fused = AddLayerNormOp::create(
        b, fusedLocation(&getContext(), inOrder), x, residual, norm.getGamma(),
        norm.getBeta(), norm.getEpsilonAttr(),
        b.getF64FloatAttr(dropout ? dropout.getP().convertToDouble() : 0.0),
        b.getI64IntegerAttr(dropout ? static_cast<int64_t>(dropout.getSeed())
                                    : 0));
    remark(fused);
    norm.getResult().replaceAllUsesWith(fused.getResult());
    add.getResult().replaceAllUsesWith(fused.getSum());
    norm.erase();
    add.erase();
    if (dropout)
      dropout.erase();
  }

  /// `relu(batch_norm(x))`, the batch norm's result read only by the ReLU
  /// and by ReLU gradients that read it as their saved value, all in its
  /// block: the batch norm takes the ReLU (`activation = "relu"`) and its
  /// result replaces the ReLU's. The gradients then read the fused output,
  /// positive exactly where the batch norm's result is (the same gradient,
  /// bit for bit). A gradient read only as the gradient of this batch
  /// norm's `mpc.batch_norm_backward` joins it: the backward takes the
  /// ReLU's gradient and the fused output (`result(...)`) and forms the
  /// gradient through the ReLU as it reads it.
  void fuseNormActivation(BatchNormOp norm) {
    if (norm.getActivation() != "none")
      return;
    Value y = norm.getResult();
    ReluOp relu;
    SmallVector<ReluGradOp> gradients;
    for (Operation *user : y.getUsers()) {
      if (user->getBlock() != norm->getBlock())
        return;
      if (auto r = dyn_cast<ReluOp>(user); r && !relu) {
        relu = r;
        continue;
      }
      auto grad = dyn_cast<ReluGradOp>(user);
      if (!grad || grad.getSaved() != y || grad.getGrad() == y)
        return;
      gradients.push_back(grad);
    }
    if (!relu)
      return;
    for (ReluGradOp grad : gradients)
      if (!relu->isBeforeInBlock(grad))
        return;
    norm->setLoc(fusedLocation(&getContext(), {norm, relu}));
    norm.setActivation("relu");
    relu.getResult().replaceAllUsesWith(y);
    relu.erase();
    remark(norm, " (activation relu)");
    for (ReluGradOp grad : gradients) {
      if (!grad.getResult().hasOneUse())
        continue;
      auto back =
          dyn_cast<BatchNormBackwardOp>(*grad.getResult().getUsers().begin());
      if (!back || back.getGrad() != grad.getResult() ||
          back.getActivation() != "none" ||
          back.getInput() != norm.getInput() ||
          back.getSavedMean() != norm.getSavedMean() ||
          back.getSavedInvstd() != norm.getSavedInvstd() ||
          back.getGamma() != norm.getGamma())
        continue;
      back->setLoc(fusedLocation(&getContext(), {grad, back}));
      back.getGradMutable().assign(grad.getGrad());
      back.getResultMutable().assign(y);
      back.setActivation("relu");
      grad.erase();
      remark(back, " (activation relu)");
    }
  }

  /// A batch norm + ReLU's backward that reads the fused output for the
  /// ReLU's mask (`result(...)`), of the forward that applied the statistics
  /// it reads (the same input, saved statistics and gamma; not f64, whose
  /// forward applied f64 statistics): it takes the forward's beta instead
  /// and forms the output's sign again from the input it reads anyway, one
  /// tensor fewer in each of its two passes. The same bits.
  void maskFromInput(BatchNormBackwardOp back) {
    auto norm = back.getResult().getDefiningOp<BatchNormOp>();
    if (!norm || norm.getActivation() != "relu" ||
        back.getResult() != norm.getResult() ||
        back.getInput() != norm.getInput() ||
        back.getSavedMean() != norm.getSavedMean() ||
        back.getSavedInvstd() != norm.getSavedInvstd() ||
        back.getGamma() != norm.getGamma() ||
        typeOf(back.getInput()).getElementType().isF64())
      return;
    back.getResultMutable().clear();
    back.getBetaMutable().assign(norm.getBeta());
    if (remarks)
      emitRemark(reportedLocation(back))
          << "mpc.batch_norm_backward forms the ReLU's mask from its input "
             "(reads no output)";
  }

  /// `relu(batch_norm_inference(x))`, the batch norm's result read only by
  /// the ReLU, in its block: the batch norm takes the ReLU.
  void fuseInferenceActivation(BatchNormInferenceOp norm) {
    if (norm.getActivation() != "none" || !norm.getResult().hasOneUse())
      return;
    auto relu = dyn_cast<ReluOp>(*norm.getResult().getUsers().begin());
    if (!relu || relu->getBlock() != norm->getBlock())
      return;
    norm->setLoc(fusedLocation(&getContext(), {norm, relu}));
    norm.setActivation("relu");
    relu.getResult().replaceAllUsesWith(norm.getResult());
    relu.erase();
    remark(norm, " (activation relu)");
  }

  /// A product's operand made by a transpose of its last two dimensions
  /// alone (a weight stored [out, in] and read as `x @ W^T`, as PyTorch
  /// exports nn.Linear on 3-D inputs without constant folding): the
  /// product reads the transpose's input with `transpose_a`/`transpose_b`
  /// flipped, and the transpose goes once nothing else reads it. The
  /// same product: the GEMM reads the other layout.
  ///
  /// A transpose that also moves other dimensions but makes the input's
  /// innermost dimension the second innermost (an attention's keys split
  /// into heads and transposed for `q @ k^T` at once, `[0, 2, 3, 1]`),
  /// read only by products: the swap of the last two goes into their
  /// flags, and what stays is a transpose that keeps the innermost
  /// dimension innermost (`[0, 2, 1, 3]`: contiguous runs of a head's
  /// width, where the other moved single elements). Its gradient is then
  /// that transpose's too.
  /// `op`'s operand `side` a reshape of a transpose that moves the
  /// innermost dimension (each read only by the next), such as a key
  /// `[B, S, H D]` transposed to `[B, H D, S]` and split into `[B H, D,
  /// S]`: where the operand with its last two dimensions swapped is a
  /// transpose that keeps the innermost dimension between reshapes
  /// (composedTranspose: `[B, S, H, D]` to `[B, H, S, D]`), the product
  /// reads that, its flag flipped. The heads' transpose then moves rows
  /// of D elements, not single elements.
  bool reshapedTransposeFlipped(MatmulOp op, unsigned side) {
    auto reshape = op->getOperand(side).getDefiningOp<ReshapeOp>();
    auto transpose =
        reshape ? reshape.getInput().getDefiningOp<TransposeOp>() : nullptr;
    if (!transpose || !reshape->hasOneUse() || !transpose->hasOneUse())
      return false;
    ArrayRef<int64_t> perm = transpose.getPermutation();
    RankedTensorType type = reshape.getType();
    auto input = typeOf(transpose.getInput());
    int64_t rank = type.getRank();
    if (perm.empty() || perm.back() == int64_t(perm.size()) - 1 || rank < 3 ||
        !type.hasStaticShape() || !input.hasStaticShape() ||
        input.getNumElements() == 0)
      return false;
    SmallVector<int64_t> swap = llvm::to_vector(llvm::seq<int64_t>(0, rank));
    std::swap(swap[rank - 1], swap[rank - 2]);
    std::optional<ComposedTranspose> composed =
        composedTranspose(input.getShape(), perm, type.getShape(), swap);
    if (!composed || composed->permutation.back() !=
                         int64_t(composed->permutation.size()) - 1)
      return false;
    SmallVector<int64_t> shape(type.getShape());
    std::swap(shape[rank - 1], shape[rank - 2]);
    OpBuilder b(op);
    Value flipped = buildComposedTranspose(
        b, transpose.getLoc(), transpose.getInput(), *composed,
        RankedTensorType::get(shape, type.getElementType()));
    op->setOperand(side, flipped);
    if (side == 0)
      op.setTransposeA(!op.getTransposeA());
    else
      op.setTransposeB(!op.getTransposeB());
    reshape.erase();
    transpose.erase();
    return true;
  }

  void foldOperandTransposes(MatmulOp op) {
    auto innermostSecond = [](TransposeOp t) {
      ArrayRef<int64_t> perm = t.getPermutation();
      int64_t rank = perm.size();
      if (rank < 3 || perm[rank - 2] != rank - 1)
        return false;
      return llvm::all_of(t->getUses(), [](OpOperand &use) {
        return isa<MatmulOp>(use.getOwner());
      });
    };
    auto swapsLastTwo = [](TransposeOp t) {
      ArrayRef<int64_t> perm = t.getPermutation();
      int64_t rank = perm.size();
      if (rank < 2 || perm[rank - 1] != rank - 2 || perm[rank - 2] != rank - 1)
        return false;
      for (int64_t d = 0; d + 2 < rank; ++d)
        if (perm[d] != d)
          return false;
      return true;
    };
    bool folded = false, split = false;
    for (unsigned side : {0u, 1u}) {
      auto transpose = op->getOperand(side).getDefiningOp<TransposeOp>();
      if (transpose && !swapsLastTwo(transpose) && innermostSecond(transpose)) {
        // Every product reading it takes the transpose that keeps the
        // innermost dimension, its flag flipped (here and for later
        // products alike).
        OpBuilder b(transpose);
        Value kept = untransposed(b, transpose.getResult(), /*anyUses=*/true);
        for (OpOperand &use :
             llvm::make_early_inc_range(transpose->getUses())) {
          auto product = cast<MatmulOp>(use.getOwner());
          if (use.getOperandNumber() == 0)
            product.setTransposeA(!product.getTransposeA());
          else
            product.setTransposeB(!product.getTransposeB());
          use.set(kept);
        }
        transpose.erase();
        split = true;
        continue;
      }
      if (!transpose || !swapsLastTwo(transpose))
        continue;
      op->setOperand(side, transpose.getInput());
      if (side == 0)
        op.setTransposeA(!op.getTransposeA());
      else
        op.setTransposeB(!op.getTransposeB());
      if (transpose->use_empty())
        transpose.erase();
      folded = true;
    }
    if (folded && remarks)
      emitRemark(op.getLoc()) << "folded: mpc.transpose into mpc.matmul";
    if (split && remarks)
      emitRemark(op.getLoc())
          << "folded: the last two dimensions of mpc.transpose into its "
             "products (the transpose keeps the innermost dimension)";
  }

  /// A sum of slices' gradients (`mpc.slice_backward`: each a slice's
  /// gradient scattered into zeros of the input's shape) whose slices tile
  /// the input along one axis, as a split or chunk's pieces do (a packed
  /// QKV projection's three): one mpc.concat of the gradients, which
  /// writes the input's gradient once instead of zeroing, scattering and
  /// adding a whole tensor per piece. `root` is the tree's last add: its
  /// adds of the same type, each read only by the next, are the tree;
  /// other terms (a gradient of another reader of the input) are added to
  /// the concatenation. Adding zeros is exact (but -0 + 0 is +0, which the
  /// concatenation keeps as -0).
  /// Sums are taken in program order, so a tree's adds are seen (and
  /// passed over) before its root, which erases them.
  void concatSliceGrads(AddOp root) {
    RankedTensorType type = root.getType();
    if (!type.hasStaticShape() || llvm::any_of(root->getUsers(), [&](auto *u) {
          auto next = dyn_cast<AddOp>(u);
          return next && next.getType() == type && root->hasOneUse();
        }))
      return; // not the tree's root: its reader is
    SmallVector<AddOp> adds;
    SmallVector<Value> terms;
    SmallVector<AddOp> work{root};
    while (!work.empty()) {
      AddOp add = work.pop_back_val();
      adds.push_back(add);
      for (Value operand : {add.getLhs(), add.getRhs()}) {
        auto inner = operand.getDefiningOp<AddOp>();
        if (inner && inner.getType() == type && operand.hasOneUse() &&
            inner->getBlock() == root->getBlock())
          work.push_back(inner);
        else
          terms.push_back(operand);
      }
    }
    // The slices' gradients, one axis and their offsets along it.
    SmallVector<SliceBackwardOp> pieces;
    SmallVector<Value> rest;
    std::optional<int64_t> axis;
    for (Value term : terms) {
      auto piece = term.getDefiningOp<SliceBackwardOp>();
      if (!piece || piece.getType() != type || !term.hasOneUse() ||
          piece->getBlock() != root->getBlock() ||
          typeOf(piece.getGrad()).getElementType() != type.getElementType() ||
          (piece.getStrides() &&
           llvm::any_of(*piece.getStrides(),
                        [](int64_t s) { return s != 1; }))) {
        rest.push_back(term);
        continue;
      }
      // Whole in every dimension but one.
      ArrayRef<int64_t> sizes = typeOf(piece.getGrad()).getShape();
      std::optional<int64_t> along;
      bool box = true;
      for (int64_t d = 0; d < type.getRank(); ++d) {
        if (sizes[d] == type.getDimSize(d) && piece.getOffsets()[d] == 0)
          continue;
        box &= !along;
        along = d;
      }
      if (!box || !along || (axis && *axis != *along)) {
        rest.push_back(term);
        continue;
      }
      axis = along;
      pieces.push_back(piece);
    }
    if (pieces.size() < 2)
      return;
    llvm::sort(pieces, [&](SliceBackwardOp a, SliceBackwardOp b) {
      return a.getOffsets()[*axis] < b.getOffsets()[*axis];
    });
    int64_t next = 0;
    for (SliceBackwardOp piece : pieces) {
      if (piece.getOffsets()[*axis] != next)
        return; // a gap or an overlap
      next += typeOf(piece.getGrad()).getDimSize(*axis);
    }
    if (next != type.getDimSize(*axis))
      return;
    SmallVector<Operation *> parts(pieces.begin(), pieces.end());
    llvm::append_range(parts, adds);
    llvm::sort(parts, [](Operation *a, Operation *b) {
      return a->isBeforeInBlock(b);
    });
    OpBuilder b(root);
    SmallVector<Value> grads;
    for (SliceBackwardOp piece : pieces)
      grads.push_back(piece.getGrad());
    Location loc = fusedLocation(&getContext(), parts);
    Value sum = ConcatOp::create(b, loc, grads, b.getI64IntegerAttr(*axis));
    remark(sum.getDefiningOp());
    for (Value term : rest)
      sum = AddOp::create(b, root.getLoc(), sum, term);
    root.getResult().replaceAllUsesWith(sum);
    for (AddOp add : adds) // the root first, then what it read
      add.erase();
    for (SliceBackwardOp piece : pieces)
      piece.erase();
  }

  /// `add(dropout(x), residual)` (either side), the dropout's mask unread
  /// and its result read only by the add, of one type: one
  /// mpc.dropout_add at the add, which keeps no mask.
  void fuseDropoutAdd(DropoutOp dropout) {
    if (!dropout.getMask().use_empty() || !dropout.getResult().hasOneUse() ||
        dropout.getInput().getType() != dropout.getResult().getType())
      return;
    auto add = dyn_cast<AddOp>(*dropout.getResult().getUsers().begin());
    RankedTensorType type = dropout.getResult().getType();
    if (!add || typeOf(add.getLhs()) != type || typeOf(add.getRhs()) != type)
      return;
    Value residual =
        add.getLhs() == dropout.getResult() ? add.getRhs() : add.getLhs();
    if (residual == dropout.getResult()) // dropout(x) + dropout(x)
      return;
    OpBuilder b(add);
    auto fused = DropoutAddOp::create(
        b, fusedLocation(&getContext(), {dropout, add}), dropout.getInput(),
        residual, dropout.getPAttr(), dropout.getSeedAttr());
    remark(fused);
    add.getResult().replaceAllUsesWith(fused.getResult());
    add.erase();
    dropout.erase();
  }

  /// `reduce_sum(g)` over every dimension but the last (through a
  /// widening cast of g), with a weight gradient `matmul(x, g2) {transpose_a}`
  /// where g2 is g or g reshaped to [rows, N]: one mpc.matmul_bias_grad,
  /// which reads g once. Also `matmul(g2, x) {transpose_a}`, the gradient
  /// of a weight stored [N, K] (`x @ W^T`, an imported Gemm's): the op's
  /// `bias_of_a`. The sums are those the reduce took (f32
  /// accumulation of the same values); an f16/bf16 reduce gets its f32 sums
  /// rounded once, as the reduce rounds them. With `weight-grad-sums` the
  /// weight gradient may be a matmul_add's (summed into an accumulator: the
  /// op's addend), and the sums' add to an accumulator its bias addend.
  void fuseBiasGrad(ReduceSumOp reduce) {
    if (reduce.getKeepDims())
      return;
    Value g = reduce.getInput();
    RankedTensorType in = typeOf(g);
    int64_t rank = in.getRank();
    if (rank < 2 || !in.hasStaticShape())
      return;
    SmallVector<int64_t> dims;
    for (int64_t d : reduce.getDims())
      dims.push_back(d < 0 ? d + rank : d);
    llvm::sort(dims);
    if (dims != llvm::to_vector(llvm::seq<int64_t>(0, rank - 1)))
      return;
    auto widen = g.getDefiningOp<CastOp>();
    if (widen) {
      Type from = typeOf(widen.getInput()).getElementType();
      if (in.getElementType().isF32() && (from.isF16() || from.isBF16()))
        g = widen.getInput();
      else
        widen = nullptr;
    }
    if (widen && normBiasGrads && sumInNorm(reduce, widen))
      return;
    int64_t n = in.getShape().back(), rows = in.getNumElements() / n;
    // The first such product in program order: a matmul, or a matmul_add
    // (the weight gradient summed into an accumulator: its addend).
    Operation *mm = nullptr;
    bool sumsOfA = false;
    auto consider = [&](Value b) {
      // g as the product's B (the weight gradient x^T g), or as its A (g^T
      // x, a weight stored [N, K]); both transpose A alone.
      auto of = [&](auto product, bool &asA) {
        if (!product.getTransposeA() || product.getTransposeB() ||
            product.getA() == product.getB())
          return false;
        asA = product.getA() == b;
        Value other = asA ? product.getB() : product.getA();
        return (asA || product.getB() == b) && typeOf(other).getRank() == 2;
      };
      for (Operation *user : b.getUsers()) {
        bool weightGradient = false, asA = false;
        if (auto product = dyn_cast<MatmulOp>(user))
          weightGradient = of(product, asA);
        else if (auto product = dyn_cast<MatmulAddOp>(user))
          weightGradient = weightGradSums && of(product, asA);
        if (weightGradient && user->getBlock() == reduce->getBlock() &&
            (!mm || user->isBeforeInBlock(mm)) && placeable(user, reduce)) {
          mm = user;
          sumsOfA = asA;
        }
      }
    };
    SmallVector<int64_t, 2> matrix{rows, n};
    if (typeOf(g).getShape() == ArrayRef<int64_t>(matrix))
      consider(g);
    for (Operation *user : g.getUsers())
      if (auto reshape = dyn_cast<ReshapeOp>(user);
          reshape && reshape.getType().getShape() == ArrayRef<int64_t>(matrix))
        consider(reshape.getResult());
    if (!mm)
      return;

    // It fuses, at the later of the two ops.
    bool productFirst = mm->isBeforeInBlock(reduce);
    Operation *later = productFirst ? reduce.getOperation() : mm;
    // The replaced ops in program order (a widening cast read elsewhere
    // stays, and is not one of them).
    SmallVector<Operation *> inOrder{mm, reduce};
    if (widen && widen->hasOneUse())
      inOrder.push_back(widen);
    llvm::sort(inOrder, [](Operation *a, Operation *b) {
      return a->isBeforeInBlock(b);
    });
    OpBuilder b(later);
    auto addend = dyn_cast<MatmulAddOp>(mm);
    auto fused = MatmulBiasGradOp::create(
        b, fusedLocation(&getContext(), inOrder), mm->getOperand(0),
        mm->getOperand(1), addend ? addend.getAddend() : Value(),
        /*bias_addend=*/Value(), b.getUnitAttr(),
        sumsOfA ? b.getUnitAttr() : UnitAttr());
    if (Attribute precision = mm->getAttr("mpc.precision"))
      fused->setAttr("mpc.precision", precision);
    Value sums = fused.getBiasGrad();
    if (typeOf(sums) != reduce.getType())
      sums = CastOp::create(b, reduce.getLoc(), reduce.getType(), sums);
    mm->getResult(0).replaceAllUsesWith(fused.getResult());
    reduce.getResult().replaceAllUsesWith(sums);
    mm->erase();
    reduce.erase();
    if (widen && widen->use_empty())
      widen.erase();
    if (weightGradSums)
      sumBiasGrad(fused);
    remark(fused);
  }

  /// `sibling-bias-grads`: the f32 bias gradients of mpc.matmul_bias_grad
  /// ops of one block with f16/bf16 operands whose weight gradients read
  /// the same layer input and whose summed operands have one type, all
  /// with bias addends (accumulators) or all without, taken by one
  /// mpc.column_sums (with the addends) just before the last of them; each
  /// op becomes its product alone (a matmul, or a matmul_add with its
  /// addend). A sum read before that place keeps its op. The sums are
  /// each operand's own, column by column, as the op's were.
  void sumSiblingBiasGrads() {
    using Key = std::tuple<Block *, Value, Type, unsigned>;
    llvm::MapVector<Key, SmallVector<MatmulBiasGradOp>> groups;
    getOperation().walk([&](MatmulBiasGradOp op) {
      Value summed = op.getBiasOfA() ? op.getA() : op.getB();
      Value input = op.getBiasOfA() ? op.getB() : op.getA();
      Type element = typeOf(summed).getElementType();
      if (element.isF16() || element.isBF16())
        groups[Key{op->getBlock(), input, summed.getType(),
                   op.getBiasAddend() ? 1u : 0u}]
            .push_back(op);
    });
    for (auto &[key, group] : groups) {
      if (group.size() < 2)
        continue;
      Operation *last = group.back();
      Block *block = last->getBlock();
      SmallVector<MatmulBiasGradOp> members;
      for (MatmulBiasGradOp op : group) {
        bool readLater =
            llvm::all_of(op.getBiasGrad().getUsers(), [&](auto *u) {
              Operation *at = block->findAncestorOpInBlock(*u);
              return at && at != last && last->isBeforeInBlock(at);
            });
        if (op == last || readLater)
          members.push_back(op);
      }
      if (members.size() < 2)
        continue;
      // The sums' parts (the casts and reductions each op took) and each
      // product's own location.
      SmallVector<Location> sumLocs;
      SmallVector<Attribute> sumNames;
      // Each matrix summed once (a gradient whose weight is read both
      // ways, [in, out] and [out, in], has one sum), except into
      // accumulators of their own.
      SmallVector<Value> summed, addends;
      SmallVector<unsigned> sumOf;
      OpBuilder b(last);
      for (MatmulBiasGradOp op : members) {
        Value matrix = op.getBiasOfA() ? op.getA() : op.getB();
        Value addend = op.getBiasAddend();
        sumOf.push_back(addend ? summed.size()
                               : llvm::find(summed, matrix) - summed.begin());
        if (sumOf.back() == summed.size()) {
          summed.push_back(matrix);
          if (addend)
            addends.push_back(addend);
        }
        auto fused = dyn_cast<FusedLoc>(op->getLoc());
        auto names = fused ? dyn_cast_or_null<ArrayAttr>(fused.getMetadata())
                           : ArrayAttr();
        if (!names || names.size() != fused.getLocations().size()) {
          sumLocs.push_back(op->getLoc());
          sumNames.push_back(b.getStringAttr(op->getName().getStringRef()));
          continue;
        }
        for (auto [name, part] : llvm::zip_equal(names, fused.getLocations()))
          if (!isProductName(name)) {
            sumLocs.push_back(part);
            sumNames.push_back(name);
          }
      }
      auto sums = ColumnSumsOp::create(
          b, FusedLoc::get(sumLocs, b.getArrayAttr(sumNames), &getContext()),
          summed, addends);
      remark(sums);
      for (auto [i, op] : llvm::enumerate(members)) {
        OpBuilder at(op);
        Location loc = productLocation(op);
        Operation *product =
            op.getAddend()
                ? MatmulAddOp::create(at, loc, op.getResult().getType(),
                                      op.getA(), op.getB(), op.getAddend(),
                                      op.getTransposeAAttr(), UnitAttr())
                      .getOperation()
                : MatmulOp::create(at, loc, op.getResult().getType(), op.getA(),
                                   op.getB(), op.getTransposeAAttr(),
                                   UnitAttr())
                      .getOperation();
        if (Attribute precision = op->getAttr("mpc.precision"))
          product->setAttr("mpc.precision", precision);
        op.getResult().replaceAllUsesWith(product->getResult(0));
        op.getBiasGrad().replaceAllUsesWith(sums.getSums()[sumOf[i]]);
        op.erase();
      }
    }
  }

  /// Whether a fused location's part name is a product's.
  static bool isProductName(Attribute name) {
    auto s = dyn_cast<StringAttr>(name);
    return s && (s.getValue() == MatmulOp::getOperationName() ||
                 s.getValue() == MatmulAddOp::getOperationName());
  }

  /// The location of `op`'s product: its part's where the op was fused
  /// from one, else the op's.
  static Location productLocation(MatmulBiasGradOp op) {
    auto fused = dyn_cast<FusedLoc>(op->getLoc());
    auto names =
        fused ? dyn_cast_or_null<ArrayAttr>(fused.getMetadata()) : ArrayAttr();
    if (names && names.size() == fused.getLocations().size())
      for (auto [name, part] : llvm::zip_equal(names, fused.getLocations()))
        if (isProductName(name))
          return part;
    return op->getLoc();
  }

  /// `reduce` of `widen`'s f16/bf16 gradient to f32 (over every dimension
  /// but the last), where that gradient is an mpc.add_layer_norm_backward's
  /// input gradient: the op again with `input_sums`, whose fifth result
  /// (the same sums, in the same f32) replaces the reduce. Returns whether
  /// it did.
  bool sumInNorm(ReduceSumOp reduce, CastOp widen) {
    auto back = widen.getInput().getDefiningOp<AddLayerNormBackwardOp>();
    if (!back || back.getInputSums() ||
        widen.getInput() != back.getGradInput() ||
        back->getBlock() != reduce->getBlock())
      return false;
    // The replaced ops in program order (a widening cast read elsewhere
    // stays, and is not one of them).
    SmallVector<Operation *> parts{back, reduce};
    if (widen->hasOneUse())
      parts.insert(parts.begin() + 1, widen);
    OpBuilder b(back);
    auto summing = AddLayerNormBackwardOp::create(
        b, fusedLocation(&getContext(), parts), back.getGrad(), back.getSum(),
        back.getMean(), back.getRstd(), back.getGamma(), back.getSumGrad(),
        back.getGammaAddend(), back.getBetaAddend(), back.getDropoutPAttr(),
        back.getSeedAttr(), b.getUnitAttr());
    summing->setDiscardableAttrs(back->getDiscardableAttrDictionary());
    for (unsigned i = 0; i < 4; ++i)
      back->getResult(i).replaceAllUsesWith(summing->getResult(i));
    reduce.getResult().replaceAllUsesWith(summing.getGradInputSums());
    back.erase();
    reduce.erase();
    if (widen->use_empty())
      widen.erase();
    remark(summing);
    return true;
  }

  /// The bias gradient of `fused` summed into an accumulator: its
  /// bias_addend, which its column sums add to.
  void sumBiasGrad(MatmulBiasGradOp fused) {
    sumInto(fused, fused.getBiasGrad(), fused.getBiasAddendMutable());
  }

  /// A gradient `grad` of `op` summed into an accumulator of its type
  /// (`add(acc, grad)`, either side, its one reader; acc readable at `op`):
  /// the accumulator becomes `addend`, which `op` adds the gradient to, as
  /// the add did. Returns whether it did.
  bool sumInto(Operation *op, Value grad, MutableOperandRange addend) {
    if (!grad.hasOneUse())
      return false;
    auto add = dyn_cast<AddOp>(*grad.getUsers().begin());
    if (!add || typeOf(add.getLhs()) != typeOf(grad) ||
        typeOf(add.getRhs()) != typeOf(grad) || add.getLhs() == add.getRhs())
      return false;
    Value acc = add.getLhs() == grad ? add.getRhs() : add.getLhs();
    if (!availableAt(acc, op))
      return false;
    op->setLoc(fusedLocation(&getContext(), {op, add}));
    addend.assign(acc);
    add.getResult().replaceAllUsesWith(grad);
    add.erase();
    return true;
  }

  /// A layer norm's gamma and beta gradients, an embedding table's
  /// gradient, each summed into its accumulator (gradient accumulation):
  /// the op adds them to the accumulators (its addends), bit for bit what
  /// the adds computed, and the memory plan computes the sums in the
  /// accumulators' globals. An embedding's accumulator then has only the
  /// rows the batch hits written: no table of zeros, no table-sized add.
  void sumParamGrads(Operation *op) {
    bool summed =
        llvm::TypeSwitch<Operation *, bool>(op)
            .Case<LayerNormBackwardOp, AddLayerNormBackwardOp,
                  BatchNormBackwardOp>([&](auto back) {
              bool gamma = sumInto(op, back.getGradGamma(),
                                   back.getGammaAddendMutable());
              bool beta =
                  sumInto(op, back.getGradBeta(), back.getBetaAddendMutable());
              return gamma || beta;
            })
            .Case([&](EmbeddingBackwardOp back) {
              return sumInto(op, back.getResult(), back.getAddendMutable());
            })
            .Default([](Operation *) { return false; });
    if (summed)
      remark(op);
  }

  /// `add(matmul(a, b), c)` (either side; at O1 and O2 through the
  /// product's widening cast) with c of the sum's type: one mpc.matmul_add,
  /// the GEMM with c as its C matrix. In the backward pass these are the
  /// residual gradient plus a linear layer's data gradient, and a weight
  /// gradient `matmul(x, dy) {transpose_a}` summed into an f32 gradient
  /// accumulator (or with another gradient of the same weight).
  void fuseMatmulAdd(AddOp add) {
    RankedTensorType result = add.getType();
    if (typeOf(add.getLhs()) != result || typeOf(add.getRhs()) != result)
      return;
    for (int side = 0; side < 2; ++side) {
      std::optional<Product> p =
          productOf(add->getOperand(side), weightGradSums);
      if (!p)
        continue;
      Value addend = add->getOperand(1 - side);
      OpBuilder b(add);
      // A weight gradient summed into its accumulator goes where its
      // product was, not where the sum was: its operands (a layer's input
      // and output gradient) then die there, as the product's did.
      if (p->matmul.getTransposeA() && availableAt(addend, p->matmul))
        b.setInsertionPoint(p->matmul);
      auto fused = MatmulAddOp::create(
          b, fusedLocation(&getContext(), p->with({add})), result,
          p->matmul.getA(), p->matmul.getB(), addend,
          p->matmul.getTransposeAAttr(), p->matmul.getTransposeBAttr());
      remark(fused);
      add.getResult().replaceAllUsesWith(fused.getResult());
      add.erase();
      p->retire(fused);
      return;
    }
  }

  /// Whether `value` can be read at `op`: defined before it (or above its
  /// block), or loaded from a global with no store to that global between
  /// `op` and the load, in which case the load moves to just before `op`.
  bool availableAt(Value value, Operation *op) {
    Operation *def = value.getDefiningOp();
    if (!def) {
      auto arg = cast<BlockArgument>(value);
      return arg.getOwner()->getParentOp()->isAncestor(op);
    }
    Operation *here = def->getBlock()->findAncestorOpInBlock(*op);
    if (!here)
      return false;
    if (def->isBeforeInBlock(here))
      return true;
    auto load = dyn_cast<ml_program::GlobalLoadOp>(def);
    if (!load || load->getBlock() != op->getBlock())
      return false;
    for (Operation *store : storesOf.lookup(load.getGlobalAttr()))
      if (store->getBlock() == op->getBlock() && op->isBeforeInBlock(store) &&
          store->isBeforeInBlock(load))
        return false;
    load->moveBefore(op);
    return true;
  }

  /// The stores of each global (the pass adds and removes none).
  llvm::DenseMap<Attribute, SmallVector<Operation *>> storesOf;

  /// `relu_grad(matmul(a, b), saved)` or `gelu_grad(matmul(a, b), saved)
  /// {approximate}` (at O1 through the product's widening cast), the
  /// product a linear layer's data gradient read only by the gradient: one
  /// mpc.matmul_activation_grad, the derivative applied to the f32 product
  /// (cuBLASLt's DRELU / DGELU epilogues).
  void fuseActivationGrad(Operation *gradient) {
    StringRef kind;
    Value grad, saved;
    if (auto relu = dyn_cast<ReluGradOp>(gradient)) {
      kind = "relu";
      grad = relu.getGrad();
      saved = relu.getSaved();
    } else if (auto gelu = dyn_cast<GeluGradOp>(gradient);
               gelu && gelu.getApproximate()) {
      kind = "gelu_tanh";
      grad = gelu.getGrad();
      saved = gelu.getSaved();
    } else {
      return;
    }
    std::optional<Product> p = productOf(grad);
    RankedTensorType result = typeOf(gradient->getResult(0));
    if (!p || typeOf(saved) != result || typeOf(grad) != result)
      return;
    OpBuilder b(gradient);
    auto fused = MatmulActivationGradOp::create(
        b, fusedLocation(&getContext(), p->with({gradient})), result,
        p->matmul.getA(), p->matmul.getB(), saved,
        p->matmul.getTransposeAAttr(), p->matmul.getTransposeBAttr(),
        b.getStringAttr(kind));
    remark(fused, " (activation " + kind + ")");
    gradient->getResult(0).replaceAllUsesWith(fused.getResult());
    gradient->erase();
    p->retire(fused);
  }

  /// Whether one op at the later of `a` and `b` (of one block) can take
  /// both: the earlier one's results are read only after the later one.
  static bool placeable(Operation *a, Operation *b) {
    Operation *earlier = a->isBeforeInBlock(b) ? a : b;
    Operation *later = earlier == a ? b : a;
    for (Operation *user : earlier->getUsers()) {
      Operation *at = later->getBlock()->findAncestorOpInBlock(*user);
      if (!at || at == later || at->isBeforeInBlock(later))
        return false;
    }
    return true;
  }

  void fuseLinear(AddOp add) {
    RankedTensorType result = add.getType();
    for (int side = 0; side < 2; ++side) {
      Value productValue = add->getOperand(side),
            bias = add->getOperand(1 - side);
      std::optional<Product> p = productOf(productValue);
      if (!p)
        continue;
      RankedTensorType biasType = typeOf(bias);
      if (biasType.getRank() != 1 ||
          biasType.getDimSize(0) != result.getShape().back() ||
          typeOf(productValue) != result ||
          biasType.getElementType() != result.getElementType())
        continue;
      bool needsPre = false;
      Operation *act = activationOf(add.getResult(), needsPre);
      StringRef activation = !act               ? "none"
                             : isa<ReluOp>(act) ? "relu"
                                                : "gelu_tanh";
      SmallVector<Operation *> inOrder = p->with({add});
      if (act)
        inOrder.push_back(act);
      OpBuilder b(add);
      auto fused = FusedMatmulOp::create(
          b, fusedLocation(&getContext(), inOrder), result,
          needsPre ? Type(result) : Type(), p->matmul.getA(), p->matmul.getB(),
          bias, p->matmul.getTransposeAAttr(), p->matmul.getTransposeBAttr(),
          b.getStringAttr(activation));
      remark(fused, " (activation " + activation +
                        (needsPre ? ", pre-activation kept" : "") + ")");
      if (act) {
        // ReLU's gradients read its output, which the epilogue writes;
        // GELU's the pre-activation, which it writes beside.
        Value saved = needsPre ? fused.getPreActivation() : fused.getResult();
        for (OpOperand &use :
             llvm::make_early_inc_range(add.getResult().getUses()))
          if (use.getOwner() != act)
            use.set(saved);
        act->getResult(0).replaceAllUsesWith(fused.getResult());
        act->erase();
      } else {
        add.getResult().replaceAllUsesWith(fused.getResult());
      }
      add.erase();
      p->retire(fused);
      return;
    }
  }
};

} // namespace
