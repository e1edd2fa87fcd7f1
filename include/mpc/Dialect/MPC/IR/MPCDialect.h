//===- MPCDialect.h - mpc dialect -------------------------------*- C++ -*-===//

#ifndef MPC_DIALECT_MPC_IR_MPCDIALECT_H
#define MPC_DIALECT_MPC_IR_MPCDIALECT_H

#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"
#include "mpc/Dialect/MPC/IR/MPCTraits.h"

#include "mpc/Dialect/MPC/IR/MPCOpsDialect.h.inc"

#define GET_ATTRDEF_CLASSES
#include "mpc/Dialect/MPC/IR/MPCAttrs.h.inc"

#endif // MPC_DIALECT_MPC_IR_MPCDIALECT_H
