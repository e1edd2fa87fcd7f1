//===- TypeUtils.h - small type helpers shared by the passes ----*- C++ -*-===//

#ifndef MPC_LIB_DIALECT_MPC_TRANSFORMS_TYPEUTILS_H
#define MPC_LIB_DIALECT_MPC_TRANSFORMS_TYPEUTILS_H

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace mlir::mpc {

/// Bytes of a statically shaped tensor's dense storage (i1 takes a byte).
inline int64_t byteSize(RankedTensorType type) {
  return type.getNumElements() *
         llvm::divideCeil(type.getElementTypeBitWidth(), 8);
}

/// `type` as a ranked tensor of floats, or null when it is not one.
inline RankedTensorType floatTensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (tensor && isa<FloatType>(tensor.getElementType()))
    return tensor;
  return {};
}

/// A type as the IR prints it ("f16", "tensor<4xf32>"), for reports.
inline std::string typeName(Type type) {
  std::string s;
  llvm::raw_string_ostream os(s);
  type.print(os);
  return s;
}

/// Whether the runtime's optimizer updates take parameters of element type
/// `param` with gradients of `grad`: the same type, f32 parameters with
/// f16 or bf16 gradients (O2's masters), or f16/bf16 parameters with f32
/// gradients.
inline bool updateTakes(Type param, Type grad) {
  auto low = [](Type t) { return t.isF16() || t.isBF16(); };
  return param == grad || (param.isF32() && low(grad)) ||
         (low(param) && grad.isF32());
}

} // namespace mlir::mpc

#endif // MPC_LIB_DIALECT_MPC_TRANSFORMS_TYPEUTILS_H
