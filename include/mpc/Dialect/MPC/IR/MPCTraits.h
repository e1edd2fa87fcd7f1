//===- MPCTraits.h - mpc op traits ------------------------------*- C++ -*-===//

#ifndef MPC_DIALECT_MPC_IR_MPCTRAITS_H
#define MPC_DIALECT_MPC_IR_MPCTRAITS_H

#include "mlir/IR/OpDefinition.h"
#include "mpc/Dialect/MPC/IR/MPCEnums.h.inc"

namespace mlir::OpTrait::mpc {

/// Gives an op its default precision category; read through
/// `PrecisionCategoryOpInterface`.
template <::mlir::mpc::PrecisionCategory Category> struct HasPrecisionCategory {
  template <typename ConcreteType>
  class Impl : public TraitBase<ConcreteType, Impl> {
  public:
    static constexpr ::mlir::mpc::PrecisionCategory kDefaultPrecisionCategory =
        Category;
  };
};

} // namespace mlir::OpTrait::mpc

#endif // MPC_DIALECT_MPC_IR_MPCTRAITS_H
