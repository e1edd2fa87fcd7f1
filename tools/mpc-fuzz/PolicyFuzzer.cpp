//===- PolicyFuzzer.cpp - libFuzzer over precision policy files ----------===//
//
// The input is a JSON policy file for --mpc-assign-precision: categories
// mapping to op names and {"name": GLOB, "op": OP} entries. It is read with
// the file positions of its errors, then looked up for a few ops with
// location names and attributes. Errors are the expected outcome; a crash
// or a sanitizer report is a finding.
//
//===----------------------------------------------------------------------===//

#include "mpc/Dialect/MPC/IR/MPCDialect.h"
#include "mpc/Dialect/MPC/IR/MPCOps.h"
#include "mpc/Dialect/MPC/Transforms/PrecisionPolicy.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include <cstddef>
#include <cstdint>
#include <string>

using namespace mlir;
using namespace mlir::mpc;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static MLIRContext *context = [] {
    auto *c = new MLIRContext();
    c->loadDialect<MPCDialect>();
    return c;
  }();
  PrecisionPolicy policy;
  std::string error;
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  if (failed(policy.addPolicyFile(context, "p.json", text, error)))
    return 0;
  OpBuilder b(context);
  OwningOpRef<ModuleOp> module = ModuleOp::create(b.getUnknownLoc());
  b.setInsertionPointToEnd(module->getBody());
  Value x = module->getBody()->addArgument(
      RankedTensorType::get({4}, b.getF32Type()), b.getUnknownLoc());
  Location named = NameLoc::get(b.getStringAttr("encoder/0/attn/softmax"));
  Operation *ops[] = {
      GeluOp::create(b, named, x),
      AddOp::create(b, FusedLoc::get(context, {named, b.getUnknownLoc()}), x,
                    x),
      ExpOp::create(b, b.getUnknownLoc(), x)};
  ops[2]->setAttr(kPrecisionAttr, b.getStringAttr("fp32"));
  for (Operation *op : ops)
    (void)policy.lookup(op, error);
  (void)policy.unusedNameRules();
  return 0;
}
