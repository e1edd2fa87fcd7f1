//===- ShapeInferenceTest.cpp - result types built from C++ ---------------===//
//
// Builders infer result types; these check the arithmetic of a few shape
// rules on sizes not covered by the lit tests.
//
//===----------------------------------------------------------------------===//

#include "mpc/Dialect/MPC/IR/MPCOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::mpc;

namespace {

class ShapeInferenceTest : public ::testing::Test {
protected:
  ShapeInferenceTest() : builder(&context) {
    context.loadDialect<MPCDialect>();
    module = ModuleOp::create(builder.getUnknownLoc());
    builder.setInsertionPointToEnd(module.getBody());
  }
  ~ShapeInferenceTest() override { module->destroy(); }

  Value arg(ArrayRef<int64_t> shape) {
    return module.getBody()->addArgument(
        RankedTensorType::get(shape, builder.getF32Type()),
        builder.getUnknownLoc());
  }
  ArrayRef<int64_t> shapeOf(Value v) {
    return cast<RankedTensorType>(v.getType()).getShape();
  }

  MLIRContext context;
  OpBuilder builder;
  ModuleOp module;
};

TEST_F(ShapeInferenceTest, MatmulBroadcastsBatchAndTransposes) {
  Location loc = builder.getUnknownLoc();
  auto op = MatmulOp::create(builder, loc, arg({3, 1, 7, 5}), arg({4, 6, 5}),
                             /*transpose_a=*/false, /*transpose_b=*/true);
  EXPECT_EQ(shapeOf(op), ArrayRef<int64_t>({3, 4, 7, 6}));
}

TEST_F(ShapeInferenceTest, ConvStrideDilationPadding) {
  Location loc = builder.getUnknownLoc();
  // H: (17 + 2*2 - 3*(3-1) - 1)/2 + 1 = 8; W: (9 + 0 - 1*(5-1) - 1)/1 + 1 = 5.
  auto op = Conv2DOp::create(builder, loc, arg({2, 17, 9, 6}),
                             arg({4, 3, 5, 3}), ArrayRef<int64_t>{2, 1},
                             ArrayRef<int64_t>{2, 0}, ArrayRef<int64_t>{3, 1},
                             /*groups=*/2, /*addend=*/Value());
  EXPECT_EQ(shapeOf(op), ArrayRef<int64_t>({2, 8, 5, 4}));
}

TEST_F(ShapeInferenceTest, ConvTransposeInvertsConv) {
  Location loc = builder.getUnknownLoc();
  // (8-1)*2 - 2*1 + 1*(3-1) + 1 + 1 = 16: undoes a stride-2 conv of 16.
  auto op = ConvTranspose2DOp::create(
      builder, loc, arg({1, 8, 8, 4}), arg({4, 3, 3, 2}),
      ArrayRef<int64_t>{2, 2}, ArrayRef<int64_t>{1, 1}, ArrayRef<int64_t>{1, 1},
      ArrayRef<int64_t>{1, 1});
  EXPECT_EQ(shapeOf(op), ArrayRef<int64_t>({1, 16, 16, 2}));
}

TEST_F(ShapeInferenceTest, LayerNormStatisticsAreF32) {
  Location loc = builder.getUnknownLoc();
  Value x = module.getBody()->addArgument(
      RankedTensorType::get({2, 3, 8}, builder.getF16Type()), loc);
  auto op = LayerNormOp::create(builder, loc, x, arg({3, 8}), arg({3, 8}),
                                builder.getI64IntegerAttr(1),
                                builder.getF64FloatAttr(1e-5));
  EXPECT_EQ(op.getResult().getType(), x.getType());
  EXPECT_EQ(op.getMean().getType(),
            RankedTensorType::get({2}, builder.getF32Type()));
}

// Builders run inference before any verifier: a type the ODS constraints
// would reject must give an error, not a crash.
TEST_F(ShapeInferenceTest, UnrankedOperandIsAnErrorNotACrash) {
  Location loc = builder.getUnknownLoc();
  Value unranked = module.getBody()->addArgument(
      UnrankedTensorType::get(builder.getF32Type()), loc);
  std::string message;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    message = diag.str();
    return success();
  });
  SmallVector<Type> results;
  EXPECT_TRUE(failed(MatmulOp::inferReturnTypes(
      &context, loc, ValueRange{unranked, arg({4, 4})}, nullptr, nullptr, {},
      results)));
  EXPECT_EQ(message, "'mpc.matmul' op expects a to be a ranked tensor, got "
                     "'tensor<*xf32>'");
}

} // namespace
