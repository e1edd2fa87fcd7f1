//===- VerifyTest.cpp - the importer's parse and verification -------------===//
//
// parseImported: what the importer wrote either parses and verifies, or
// is an error naming the node whose ops do not (from the op's location,
// or, for a parse error, from the location written on the failing line).
//
//===----------------------------------------------------------------------===//

#include "Importer.h"

#include "mpc/Dialect/MPC/IR/MPCOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MLProgram/IR/MLProgram.h"

#include <gtest/gtest.h>

using namespace mpc::onnx_import;

namespace {

struct ParseImported : ::testing::Test {
  ParseImported() {
    mlir::DialectRegistry registry;
    registry.insert<mlir::mpc::MPCDialect, mlir::func::FuncDialect,
                    mlir::ml_program::MLProgramDialect>();
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }
  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
};

std::string function(const std::string &body, const std::string &result) {
  return "func.func @loss(%a0: tensor<2x3xf32> loc(\"x\"(\"m.onnx\":0:1))) "
         "-> (" +
         result + ") {\n" + body + "    return %v0 : " + result +
         " loc(\"return\"(\"m.onnx\":2:1))\n} loc(\"loss\"(\"m.onnx\":0:1))\n";
}

TEST_F(ParseImported, AValidGraphParses) {
  std::string text = function("    %v0 = mpc.relu %a0 : tensor<2x3xf32> "
                              "loc(\"relu_1\"(\"m.onnx\":1:1))\n",
                              "tensor<2x3xf32>");
  EXPECT_EQ(parseImported(text, "m.onnx", context, module), "");
  ASSERT_TRUE(module);
}

TEST_F(ParseImported, AnOpThatDoesNotVerifyNamesItsNode) {
  std::string text =
      function("    %v0 = mpc.reshape %a0 : tensor<2x3xf32> -> tensor<7xf32> "
               "loc(\"flatten_3\"(\"m.onnx\":1:1))\n",
               "tensor<7xf32>");
  std::string err = parseImported(text, "m.onnx", context, module);
  EXPECT_EQ(err.rfind("node 'flatten_3': the imported ops do not verify ('"
                      "mpc.reshape' op expects the same number of elements, "
                      "got 6 and 7): the model's types disagree where ONNX's "
                      "shape inference does not check them, or "
                      "mpc-import-onnx has a bug",
                      0),
            0u)
      << err;
  EXPECT_FALSE(module);
}

TEST_F(ParseImported, AParseErrorNamesTheNodeOfItsLine) {
  std::string text =
      function("    %v0 = mpc.constant dense<[99999999999]> : tensor<1xi32> "
               "loc(\"labels_2\"(\"m.onnx\":1:1))\n",
               "tensor<1xi32>");
  std::string err = parseImported(text, "m.onnx", context, module);
  EXPECT_EQ(err.rfind("node 'labels_2': the imported ops do not verify "
                      "(integer constant out of range",
                      0),
            0u)
      << err;
  EXPECT_FALSE(module);
}

} // namespace
