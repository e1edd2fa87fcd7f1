//===- Fuse.cpp - GEMM epilogues ------------------------------------------===//
//
// A linear layer written as `matmul` + bias `add` (+ `relu` / tanh `gelu`)
// becomes one `mpc.fused_matmul`, whose bias and activation run in the
// GEMM's epilogue (cuBLASLt's BIAS, RELU_BIAS, GELU_BIAS): the product and
// the pre-activation are never written, unless the backward pass reads
// the pre-activation (GELU's gradient does; ReLU's reads the output
// instead, which is positive exactly where its input is).
//
//===----------------------------------------------------------------------===//

#include "mpc/Dialect/MPC/IR/MPCOps.h"
#include "mpc/Dialect/MPC/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

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
};

std::optional<Product> productOf(Value v) {
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
  if (!p.matmul || !p.matmul->hasOneUse() || p.matmul.getTransposeA() ||
      typeOf(p.matmul.getB()).getRank() != 2)
    return std::nullopt;
  Type t = p.matmul.getType().getElementType();
  if (!t.isF16() && !t.isBF16() && !t.isF32())
    return std::nullopt;
  return p;
}

/// The activation that follows `h` and can join the epilogue: its one
/// reader other than ReLU gradients (which are given the ReLU's output).
Operation *activationOf(Value h) {
  Operation *act = nullptr;
  for (Operation *user : h.getUsers()) {
    if (auto grad = dyn_cast<ReluGradOp>(user); grad && grad.getSaved() == h)
      continue;
    if (act || !isa<ReluOp, GeluOp>(user))
      return nullptr;
    act = user;
  }
  if (auto gelu = dyn_cast_or_null<GeluOp>(act)) {
    // cuBLASLt's GELU epilogue is the tanh approximation, and GELU's
    // gradient reads the pre-activation the epilogue would not write.
    if (!gelu.getApproximate() || !h.hasOneUse())
      return nullptr;
  }
  if (auto relu = dyn_cast_or_null<ReluOp>(act)) {
    for (Operation *user : h.getUsers())
      if (isa<ReluGradOp>(user) && relu->getBlock() != user->getBlock())
        return nullptr;
  }
  return act;
}

struct FusePass : public mpc::impl::FusePassBase<FusePass> {
  using FusePassBase::FusePassBase;

  void runOnOperation() override {
    SmallVector<AddOp> adds;
    getOperation().walk([&](AddOp op) { adds.push_back(op); });
    for (AddOp add : adds)
      fuseLinear(add);
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
      Operation *act = activationOf(add.getResult());
      StringRef activation = !act               ? "none"
                             : isa<ReluOp>(act) ? "relu"
                                                : "gelu_tanh";
      SmallVector<Location> locs{p->matmul.getLoc()};
      if (p->widen)
        locs.push_back(p->widen.getLoc());
      locs.push_back(add.getLoc());
      if (act)
        locs.push_back(act->getLoc());
      OpBuilder b(add);
      auto fused = FusedMatmulOp::create(
          b, FusedLoc::get(&getContext(), locs), result, p->matmul.getA(),
          p->matmul.getB(), bias, p->matmul.getTransposeAAttr(),
          p->matmul.getTransposeBAttr(), b.getStringAttr(activation));
      if (Attribute precision = p->matmul->getAttr("mpc.precision"))
        fused->setAttr("mpc.precision", precision);
      if (remarks)
        fused.emitRemark() << "fused: mpc.matmul"
                           << (p->widen ? " + mpc.cast" : "") << " + mpc.add"
                           << (act ? " + " + act->getName().getStringRef().str()
                                   : std::string())
                           << " -> mpc.fused_matmul (activation " << activation
                           << ")";
      if (act) {
        // ReLU's gradients read its output, which the epilogue writes.
        for (OpOperand &use :
             llvm::make_early_inc_range(add.getResult().getUses()))
          if (isa<ReluGradOp>(use.getOwner()))
            use.set(fused);
        act->getResult(0).replaceAllUsesWith(fused.getResult());
        act->erase();
      } else {
        add.getResult().replaceAllUsesWith(fused.getResult());
      }
      add.erase();
      if (p->widen)
        p->widen.erase();
      p->matmul.erase();
      return;
    }
  }
};

} // namespace
