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

#endif // MPC_INTERFACES
