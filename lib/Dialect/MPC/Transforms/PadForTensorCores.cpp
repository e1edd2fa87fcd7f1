//===- PadForTensorCores.cpp - f16/bf16 matmuls padded to multiples of 8 --===//
//
// Tensor Cores take f16/bf16 GEMMs whose dimensions are multiples of 8;
// cuBLASLt runs other shapes on slower kernels. A misaligned low-precision
// matmul is computed on zero-padded operands and its result sliced back.
//
//===----------------------------------------------------------------------===//

#include "TrainingStep.h"

#include "mpc/Dialect/MPC/IR/MPCOps.h"
#include "mpc/Dialect/MPC/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/FormatVariadic.h"

#include <limits>

namespace mlir::mpc {
#define GEN_PASS_DEF_PADFORTENSORCORESPASS
#include "mpc/Dialect/MPC/Transforms/Passes.h.inc"
} // namespace mlir::mpc

using namespace mlir;
using namespace mlir::mpc;

namespace {

constexpr int64_t kMultiple = 8;

/// `v` with dimension `dim` grown to `size` by zeros after its elements.
Value padDim(OpBuilder &b, Location loc, Value v, int64_t dim, int64_t size) {
  auto type = cast<RankedTensorType>(v.getType());
  if (type.getDimSize(dim) == size)
    return v;
  SmallVector<int64_t> zerosShape(type.getShape());
  zerosShape[dim] = size - type.getDimSize(dim);
  auto zerosType = RankedTensorType::get(zerosShape, type.getElementType());
  Value zeros = ConstantOp::create(
      b, loc, zerosType,
      DenseElementsAttr::get(zerosType,
                             b.getFloatAttr(type.getElementType(), 0.0)));
  return ConcatOp::create(b, loc, ValueRange{v, zeros},
                          b.getI64IntegerAttr(dim));
}

/// A convolution's channels: which operand dimensions hold C (input
/// channels) and O (output channels), and which result dimensions.
struct ConvChannels {
  SmallVector<std::pair<unsigned, int64_t>> cDims, oDims; // (operand, dim)
  SmallVector<int64_t> resultC, resultO;
};

std::optional<ConvChannels> channelsOf(Operation *op) {
  ConvChannels c;
  if (auto conv = dyn_cast<Conv2DOp>(op)) { // input [N,H,W,C], filter
    c.cDims = {{0, 3}, {1, 3}};             // [O,kh,kw,C], addend [..,O]
    c.oDims = {{1, 0}};
    if (conv.getAddend())
      c.oDims.push_back({2, 3});
    c.resultO = {3};
  } else if (isa<Conv2DBackwardDataOp>(op)) { // grad [..,O], filter
    c.cDims = {{1, 3}};
    c.oDims = {{0, 3}, {1, 0}};
    c.resultC = {3};
  } else if (isa<Conv2DBackwardFilterOp>(op)) { // grad [..,O], input [..,C]
    c.cDims = {{1, 3}};
    c.oDims = {{0, 3}};
    c.resultC = {3};
    c.resultO = {0};
  } else {
    return std::nullopt;
  }
  return c;
}

struct PadForTensorCoresPass
    : public mpc::impl::PadForTensorCoresPassBase<PadForTensorCoresPass> {
  using Base::Base;

  /// Pads a convolution's channels (input C, output O) with zeros: zero
  /// input channels add nothing, zero filters make outputs that are
  /// sliced off.
  void padConvolution(Operation *op) {
    auto groups = op->getAttrOfType<IntegerAttr>("groups");
    Type element =
        cast<RankedTensorType>(op->getOperand(0).getType()).getElementType();
    if ((groups && groups.getInt() != 1) ||
        (!element.isF16() && !element.isBF16()))
      return;
    ConvChannels ch = *channelsOf(op);
    auto dimOf = [&](std::pair<unsigned, int64_t> at) {
      return cast<RankedTensorType>(op->getOperand(at.first).getType())
          .getDimSize(at.second);
    };
    int64_t c = dimOf(ch.cDims[0]), o = dimOf(ch.oDims[0]);
    int64_t pc = llvm::alignTo(c, kMultiple), po = llvm::alignTo(o, kMultiple);
    if (pc == c && po == o)
      return;
    double extra = double(pc) * double(po) / (double(c) * double(o)) - 1;
    StringRef name = op->getName().getStringRef();
    if (extra > maxExtraWork) {
      op->emitRemark() << "'" << name << "': not padded for Tensor Cores: "
                       << llvm::formatv("{0:F0}", extra * 100)
                       << "% more work than the convolution (max-extra-work "
                       << optionNumber(maxExtraWork) << ")";
      return;
    }
    OpBuilder b(op);
    Location loc = op->getLoc();
    SmallVector<Value> operands(op->getOperands());
    for (auto at : ch.cDims)
      operands[at.first] = padDim(b, loc, operands[at.first], at.second, pc);
    for (auto at : ch.oDims)
      operands[at.first] = padDim(b, loc, operands[at.first], at.second, po);
    auto result = cast<RankedTensorType>(op->getResult(0).getType());
    SmallVector<int64_t> shape(result.getShape());
    for (int64_t d : ch.resultC)
      shape[d] = pc;
    for (int64_t d : ch.resultO)
      shape[d] = po;
    Operation *padded = b.clone(*op);
    padded->setOperands(operands);
    padded->getResult(0).setType(result.clone(shape));
    Value out = SliceOp::create(
        b, loc, result, padded->getResult(0),
        b.getDenseI64ArrayAttr(SmallVector<int64_t>(result.getRank(), 0)),
        b.getDenseI64ArrayAttr(result.getShape()), DenseI64ArrayAttr());
    std::string what;
    if (pc != c)
      what += llvm::formatv("input channels {0} to {1}", c, pc);
    if (po != o)
      what += llvm::formatv("{0}output channels {1} to {2}",
                            what.empty() ? "" : ", ", o, po);
    op->emitRemark() << "'" << name << "': padded for Tensor Cores: " << what
                     << llvm::formatv(" ({0:F0}% more work)", extra * 100);
    op->getResult(0).replaceAllUsesWith(out);
    op->erase();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (failed(checkOption(module, "mpc-pad-for-tensor-cores", "max-extra-work",
                           maxExtraWork,
                           {0, std::numeric_limits<double>::infinity()})))
      return signalPassFailure();
    SmallVector<Operation *> convs;
    module.walk([&](Operation *op) {
      if (channelsOf(op))
        convs.push_back(op);
    });
    for (Operation *op : convs)
      padConvolution(op);
    SmallVector<Operation *> matmuls;
    module.walk([&](Operation *op) {
      if (isa<MatmulOp, FusedMatmulOp, MatmulAddOp, MatmulActivationGradOp>(op))
        matmuls.push_back(op);
    });
    for (Operation *op : matmuls) {
      auto a = cast<RankedTensorType>(op->getOperand(0).getType());
      auto bt = cast<RankedTensorType>(op->getOperand(1).getType());
      bool transA = op->hasAttr("transpose_a"),
           transB = op->hasAttr("transpose_b");
      StringRef name = op->getName().getStringRef();
      Type element = a.getElementType();
      if (!element.isF16() && !element.isBF16())
        continue;
      int64_t ra = a.getRank(), rb = bt.getRank();
      // The dimensions of M, K in a and of K, N in b.
      int64_t aM = transA ? ra - 1 : ra - 2;
      int64_t aK = transA ? ra - 2 : ra - 1;
      int64_t bK = transB ? rb - 1 : rb - 2;
      int64_t bN = transB ? rb - 2 : rb - 1;
      int64_t m = a.getDimSize(aM), k = a.getDimSize(aK), n = bt.getDimSize(bN);
      int64_t pm = llvm::alignTo(m, kMultiple),
              pk = llvm::alignTo(k, kMultiple),
              pn = llvm::alignTo(n, kMultiple);
      if (pm == m && pk == k && pn == n)
        continue;
      double extra = double(pm) * double(pk) * double(pn) /
                         (double(m) * double(k) * double(n)) -
                     1;
      if (extra > maxExtraWork) {
        op->emitRemark() << "'" << name << "': not padded for Tensor Cores: "
                         << llvm::formatv("{0:F0}", extra * 100)
                         << "% more work than the product (max-extra-work "
                         << optionNumber(maxExtraWork) << ")";
        continue;
      }
      OpBuilder b(op);
      Location loc = op->getLoc();
      SmallVector<Value> operands(op->getOperands());
      operands[0] = padDim(b, loc, padDim(b, loc, operands[0], aM, pm), aK, pk);
      operands[1] = padDim(b, loc, padDim(b, loc, operands[1], bK, pk), bN, pn);
      // A fused product's bias gets zeros for the extra columns; an addend
      // or an activation's saved value (of the result's shape) zeros for
      // the extra rows and columns, where the product is zero too.
      if (isa<FusedMatmulOp>(op)) {
        operands[2] = padDim(b, loc, operands[2], 0, pn);
      } else if (operands.size() == 3) {
        int64_t rank = cast<RankedTensorType>(operands[2].getType()).getRank();
        operands[2] = padDim(b, loc, padDim(b, loc, operands[2], rank - 2, pm),
                             rank - 1, pn);
      }
      auto result = cast<RankedTensorType>(op->getResult(0).getType());
      SmallVector<int64_t> shape(result.getShape());
      shape[shape.size() - 2] = pm;
      shape.back() = pn;
      // Every result (a fused product's pre-activation too) has the
      // product's shape: each is sliced back.
      Operation *product = b.clone(*op);
      product->setOperands(operands);
      SmallVector<Value> outs;
      for (OpResult r : product->getResults()) {
        auto type = cast<RankedTensorType>(r.getType());
        r.setType(type.clone(shape));
        Value out = r;
        if (pm != m || pn != n)
          out = SliceOp::create(
              b, loc, type, out,
              b.getDenseI64ArrayAttr(SmallVector<int64_t>(type.getRank(), 0)),
              b.getDenseI64ArrayAttr(type.getShape()), DenseI64ArrayAttr());
        outs.push_back(out);
      }
      if (Attribute precision = op->getAttr("mpc.precision"))
        for (Value v : llvm::concat<const Value>(
                 ArrayRef<Value>{operands[0], operands[1]}, outs))
          if (Operation *def = v.getDefiningOp();
              def && !isa<ConstantOp>(def) && def != op)
            def->setAttr("mpc.precision", precision);
      std::string padded;
      for (auto [dim, from, to] :
           {std::tuple<const char *, int64_t, int64_t>{"M", m, pm},
            {"N", n, pn},
            {"K", k, pk}})
        if (from != to)
          padded += llvm::formatv("{0}{1} {2} to {3}",
                                  padded.empty() ? "" : ", ", dim, from, to);
      op->emitRemark() << "'" << name
                       << "': padded for Tensor Cores: " << padded
                       << llvm::formatv(" ({0:F0}% more work)", extra * 100);
      op->replaceAllUsesWith(outs);
      op->erase();
    }
  }
};

} // namespace
