//===- MPCInterfaces.td - mpc op interfaces ----------------*- tablegen -*-===//

#ifndef MPC_INTERFACES
#define MPC_INTERFACES

include "mlir/IR/OpBase.td"

def MPC_PrecisionCategoryOpInterface : OpInterface<"PrecisionCategoryOpInterface"> {
  let cppNamespace = "::mlir::mpc";
  let description = [{
    Gives an op its default precision category (`lowp`, `fp32`, `promote`,
    `follow`), the starting point of the mixed-precision pass. Ops declare
    it with one of the `MPC_*Category` traits.
  }];
  let methods = [
    StaticInterfaceMethod<
      "Returns the op's default precision category.",
      "::mlir::mpc::PrecisionCategory", "getDefaultPrecisionCategory", (ins),
      [{}], [{ return ConcreteOp::kDefaultPrecisionCategory; }]>,
  ];
}

def MPC_VJPOpInterface : OpInterface<"VJPOpInterface"> {
  let cppNamespace = "::mlir::mpc";
  let description = [{
    Reverse-mode differentiation of one op: given the gradients of its
    results (null where no gradient flows), builds the gradients of its
    operands (null for operands that get none: labels, indices, masks,
    statistics) with the dialect's ops, at the builder's insertion point.
    `--mpc-autodiff` calls it on every op between the loss and the
    trainable globals.
  }];
  let methods = [
    InterfaceMethod<
      "Builds the operand gradients from the result gradients.",
      "::llvm::LogicalResult", "buildVJP",
      (ins "::mlir::OpBuilder &":$builder,
           "::llvm::ArrayRef<::mlir::Value>":$resultGrads,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>,
  ];
}

#endif // MPC_INTERFACES
