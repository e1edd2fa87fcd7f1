//===- PrecisionCategoryTest.cpp - default categories from C++ ------------===//

#include "mpc/Dialect/MPC/IR/MPCOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::mpc;

namespace {

class PrecisionCategoryTest : public ::testing::Test {
protected:
  PrecisionCategoryTest() : builder(&context) {
    context.loadDialect<MPCDialect, func::FuncDialect>();
  }

  Value arg(Block &block, ArrayRef<int64_t> shape, Type element) {
    return block.addArgument(RankedTensorType::get(shape, element),
                             builder.getUnknownLoc());
  }

  MLIRContext context;
  OpBuilder builder;
};

// The static query needs no op instance: the category is part of the op's
// type, as the mixed-precision pass reads it.
TEST_F(PrecisionCategoryTest, StaticCategoriesMatchTheDesignTable) {
  EXPECT_EQ(MatmulOp::getDefaultPrecisionCategory(), PrecisionCategory::Lowp);
  EXPECT_EQ(Conv2DOp::getDefaultPrecisionCategory(), PrecisionCategory::Lowp);
  EXPECT_EQ(Conv2DBackwardFilterOp::getDefaultPrecisionCategory(),
            PrecisionCategory::Lowp);
  EXPECT_EQ(SoftmaxOp::getDefaultPrecisionCategory(), PrecisionCategory::Fp32);
  EXPECT_EQ(LayerNormOp::getDefaultPrecisionCategory(),
            PrecisionCategory::Fp32);
  EXPECT_EQ(CrossEntropyOp::getDefaultPrecisionCategory(),
            PrecisionCategory::Fp32);
  EXPECT_EQ(AdamUpdateOp::getDefaultPrecisionCategory(),
            PrecisionCategory::Fp32);
  EXPECT_EQ(AddOp::getDefaultPrecisionCategory(), PrecisionCategory::Promote);
  EXPECT_EQ(ConcatOp::getDefaultPrecisionCategory(),
            PrecisionCategory::Promote);
  EXPECT_EQ(ReluOp::getDefaultPrecisionCategory(), PrecisionCategory::Follow);
  EXPECT_EQ(SinOp::getDefaultPrecisionCategory(), PrecisionCategory::Fp32);
  EXPECT_EQ(CosOp::getDefaultPrecisionCategory(), PrecisionCategory::Fp32);
  EXPECT_EQ(TransposeOp::getDefaultPrecisionCategory(),
            PrecisionCategory::Follow);
}

// Through an Operation*, as a generic pass sees it.
TEST_F(PrecisionCategoryTest, QueryThroughTheInterface) {
  auto module = ModuleOp::create(builder.getUnknownLoc());
  Block &block = module.getBodyRegion().front();
  builder.setInsertionPointToEnd(&block);
  Value x = arg(block, {4, 8}, builder.getF16Type());
  Value w = arg(block, {8, 2}, builder.getF16Type());
  auto matmul = MatmulOp::create(builder, builder.getUnknownLoc(), x, w);
  auto exp = ExpOp::create(builder, builder.getUnknownLoc(), x);
  auto mul = MulOp::create(builder, builder.getUnknownLoc(), x, x);
  auto relu = ReluOp::create(builder, builder.getUnknownLoc(), x);

  EXPECT_EQ(getDefaultPrecisionCategory(matmul), PrecisionCategory::Lowp);
  EXPECT_EQ(getDefaultPrecisionCategory(exp), PrecisionCategory::Fp32);
  EXPECT_EQ(getDefaultPrecisionCategory(mul), PrecisionCategory::Promote);
  EXPECT_EQ(getDefaultPrecisionCategory(relu), PrecisionCategory::Follow);
  // An op outside the dialect has no category.
  EXPECT_EQ(getDefaultPrecisionCategory(module), std::nullopt);
  module->destroy();
}

TEST_F(PrecisionCategoryTest, CategoryNamesRoundTrip) {
  for (auto category : {PrecisionCategory::Lowp, PrecisionCategory::Fp32,
                        PrecisionCategory::Promote, PrecisionCategory::Follow})
    EXPECT_EQ(symbolizePrecisionCategory(stringifyPrecisionCategory(category)),
              category);
  EXPECT_EQ(symbolizePrecisionCategory("fp16"), std::nullopt);
}

} // namespace
