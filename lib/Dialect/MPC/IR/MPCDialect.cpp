//===- MPCDialect.cpp - mpc dialect ---------------------------------------===//

#include "mpc/Dialect/MPC/IR/MPCDialect.h"
#include "mpc/Dialect/MPC/IR/MPCOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::mpc;

#include "mpc/Dialect/MPC/IR/MPCEnums.cpp.inc"
#include "mpc/Dialect/MPC/IR/MPCInterfaces.cpp.inc"
#include "mpc/Dialect/MPC/IR/MPCOpsDialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "mpc/Dialect/MPC/IR/MPCAttrs.cpp.inc"

void MPCDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "mpc/Dialect/MPC/IR/MPCOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "mpc/Dialect/MPC/IR/MPCAttrs.cpp.inc"
      >();
  registerVJPModels(getContext());
}

//===----------------------------------------------------------------------===//
// InitAttr
//===----------------------------------------------------------------------===//

LogicalResult InitAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               InitKind kind, uint64_t seed, FloatAttr value,
                               FloatAttr low, FloatAttr high, FloatAttr mean,
                               FloatAttr std, FloatAttr gain) {
  // Which parameters each kind reads; any other one is a mistake.
  bool usesValue = kind == InitKind::Constant;
  bool usesRange = kind == InitKind::Uniform;
  bool usesMoments = kind == InitKind::Normal;
  bool usesGain =
      kind == InitKind::XavierUniform || kind == InitKind::XavierNormal ||
      kind == InitKind::KaimingUniform || kind == InitKind::KaimingNormal;
  struct Param {
    StringRef name;
    FloatAttr attr;
    bool used;
  } params[] = {{"value", value, usesValue}, {"low", low, usesRange},
                {"high", high, usesRange},   {"mean", mean, usesMoments},
                {"std", std, usesMoments},   {"gain", gain, usesGain}};
  for (const Param &param : params)
    if (param.attr && !param.used)
      return emitError() << "'" << param.name << "' does not apply to a '"
                         << stringifyInitKind(kind) << "' initializer";
  if (usesValue && !value)
    return emitError() << "a 'constant' initializer needs 'value'";
  if (usesRange) {
    double lo = low ? low.getValueAsDouble() : 0.0;
    double hi = high ? high.getValueAsDouble() : 1.0;
    if (!(lo < hi))
      return emitError() << "expects low < high, got [" << lo << ", " << hi
                         << ")";
  }
  if (std && !(std.getValueAsDouble() > 0.0))
    return emitError() << "expects std > 0, got " << std.getValueAsDouble();
  if (gain && !(gain.getValueAsDouble() > 0.0))
    return emitError() << "expects gain > 0, got " << gain.getValueAsDouble();
  return success();
}

Operation *MPCDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                           Type type, Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, elements);
}

std::optional<PrecisionCategory>
mlir::mpc::getDefaultPrecisionCategory(Operation *op) {
  if (auto iface = dyn_cast<PrecisionCategoryOpInterface>(op))
    return iface.getDefaultPrecisionCategory();
  return std::nullopt;
}
