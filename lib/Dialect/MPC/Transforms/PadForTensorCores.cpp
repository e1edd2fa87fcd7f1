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

struct PadForTensorCoresPass
    : public mpc::impl::PadForTensorCoresPassBase<PadForTensorCoresPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (failed(checkOption(module, "mpc-pad-for-tensor-cores", "max-extra-work",
                           maxExtraWork,
                           {0, std::numeric_limits<double>::infinity()})))
      return signalPassFailure();
    SmallVector<MatmulOp> matmuls;
    module.walk([&](MatmulOp op) { matmuls.push_back(op); });
    for (MatmulOp op : matmuls) {
      auto a = cast<RankedTensorType>(op.getA().getType());
      auto bt = cast<RankedTensorType>(op.getB().getType());
      Type element = a.getElementType();
      if (!element.isF16() && !element.isBF16())
        continue;
      int64_t ra = a.getRank(), rb = bt.getRank();
      // The dimensions of M, K in a and of K, N in b.
      int64_t aM = op.getTransposeA() ? ra - 1 : ra - 2;
      int64_t aK = op.getTransposeA() ? ra - 2 : ra - 1;
      int64_t bK = op.getTransposeB() ? rb - 1 : rb - 2;
      int64_t bN = op.getTransposeB() ? rb - 2 : rb - 1;
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
        op.emitRemark() << "'mpc.matmul': not padded for Tensor Cores: "
                        << llvm::formatv("{0:F0}", extra * 100)
                        << "% more work than the product (max-extra-work "
                        << optionNumber(maxExtraWork) << ")";
        continue;
      }
      OpBuilder b(op);
      Location loc = op.getLoc();
      Value pa = padDim(b, loc, op.getA(), aM, pm);
      pa = padDim(b, loc, pa, aK, pk);
      Value pb = padDim(b, loc, op.getB(), bK, pk);
      pb = padDim(b, loc, pb, bN, pn);
      Value product = MatmulOp::create(b, loc, pa, pb, op.getTransposeA(),
                                       op.getTransposeB());
      auto result = cast<RankedTensorType>(op.getType());
      Value out = product;
      if (pm != m || pn != n)
        out = SliceOp::create(
            b, loc, result, product,
            b.getDenseI64ArrayAttr(SmallVector<int64_t>(result.getRank(), 0)),
            b.getDenseI64ArrayAttr(result.getShape()), DenseI64ArrayAttr());
      if (Attribute precision = op->getAttr("mpc.precision"))
        for (Value v : {pa, pb, product, out})
          if (Operation *def = v.getDefiningOp();
              def && !isa<ConstantOp>(def) && def != op)
            def->setAttr("mpc.precision", precision);
      std::string padded;
      for (auto [name, from, to] :
           {std::tuple<const char *, int64_t, int64_t>{"M", m, pm},
            {"N", n, pn},
            {"K", k, pk}})
        if (from != to)
          padded += llvm::formatv("{0}{1} {2} to {3}",
                                  padded.empty() ? "" : ", ", name, from, to);
      op.emitRemark() << "'mpc.matmul': padded for Tensor Cores: " << padded
                      << llvm::formatv(" ({0:F0}% more work)", extra * 100);
      op.replaceAllUsesWith(out);
      op.erase();
    }
  }
};

} // namespace
