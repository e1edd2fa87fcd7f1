//===- PrecisionPolicyTest.cpp - category overrides and policy files ------===//

#include "mpc/Dialect/MPC/Transforms/PrecisionPolicy.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::mpc;

namespace {

class PrecisionPolicyTest : public ::testing::Test {
protected:
  PrecisionPolicyTest() : builder(&context) {
    context.loadDialect<MPCDialect>();
    module = ModuleOp::create(builder.getUnknownLoc());
    builder.setInsertionPointToEnd(module.getBody());
    Value x = module.getBody()->addArgument(
        RankedTensorType::get({4}, builder.getF32Type()),
        builder.getUnknownLoc());
    gelu = GeluOp::create(builder, builder.getUnknownLoc(), x);
    add = AddOp::create(builder, builder.getUnknownLoc(), x, x);
  }
  ~PrecisionPolicyTest() override { module->destroy(); }

  MLIRContext context;
  OpBuilder builder;
  ModuleOp module;
  Operation *gelu, *add;
  PrecisionPolicy policy;
  std::string error;
};

TEST_F(PrecisionPolicyTest, DefaultsComeFromTheOps) {
  std::optional<CategoryChoice> choice = policy.lookup(gelu);
  ASSERT_TRUE(choice);
  EXPECT_EQ(choice->category, PrecisionCategory::Follow);
  EXPECT_EQ(choice->source, "default");
  EXPECT_FALSE(policy.lookup(gelu)->instance);
  EXPECT_EQ(policy.lookup(module), std::nullopt);
}

TEST_F(PrecisionPolicyTest, OverridesAcceptNamesWithOrWithoutPrefix) {
  ASSERT_TRUE(succeeded(policy.addOverride(
      &context, "gelu", PrecisionCategory::Fp32, "option x", error)));
  ASSERT_TRUE(succeeded(policy.addOverride(
      &context, "mpc.add", PrecisionCategory::Lowp, "option y", error)));
  EXPECT_EQ(policy.lookup(gelu)->category, PrecisionCategory::Fp32);
  EXPECT_EQ(policy.lookup(gelu)->source, "option x");
  EXPECT_EQ(policy.lookup(add)->category, PrecisionCategory::Lowp);
  EXPECT_FALSE(policy.lookup(add)->instance); // every add, not this one
}

TEST_F(PrecisionPolicyTest, UnknownOpsAreErrors) {
  EXPECT_TRUE(failed(policy.addOverride(
      &context, "mpc.nope", PrecisionCategory::Fp32, "option", error)));
  EXPECT_EQ(error, "unknown op 'mpc.nope' (expected an mpc op such as "
                   "mpc.matmul)");
  // Registered, but outside the dialect's categories.
  EXPECT_TRUE(failed(policy.addOverride(
      &context, "builtin.module", PrecisionCategory::Fp32, "option", error)));
}

TEST_F(PrecisionPolicyTest, PolicyFileSetsCategoriesAndSource) {
  ASSERT_TRUE(succeeded(policy.addPolicyFile(
      &context, "p.json", R"({"fp32": ["gelu"], "lowp": ["mpc.add"]})", error)))
      << error;
  EXPECT_EQ(policy.lookup(gelu)->category, PrecisionCategory::Fp32);
  EXPECT_EQ(policy.lookup(gelu)->source, "policy p.json");
  EXPECT_EQ(policy.lookup(add)->category, PrecisionCategory::Lowp);
}

TEST_F(PrecisionPolicyTest, AnAttributeDecidesForItsOpInstance) {
  ASSERT_TRUE(succeeded(policy.addOverride(
      &context, "gelu", PrecisionCategory::Lowp, "option x", error)));
  gelu->setAttr(kPrecisionAttr, builder.getStringAttr("fp32"));
  std::optional<CategoryChoice> choice = policy.lookup(gelu);
  ASSERT_TRUE(choice);
  EXPECT_EQ(choice->category, PrecisionCategory::Fp32);
  EXPECT_EQ(choice->source, "attribute mpc.precision");
  EXPECT_TRUE(choice->instance);
  gelu->setAttr(kPrecisionAttr, builder.getStringAttr("f32"));
  EXPECT_TRUE(failed(policy.lookup(gelu, error)));
  EXPECT_EQ(error, "mpc.precision must be \"lowp\", \"fp32\", \"promote\" "
                   "or \"follow\", got \"f32\"");
  module->setAttr(kPrecisionAttr, builder.getStringAttr("fp32"));
  EXPECT_TRUE(failed(policy.lookup(module, error)));
  EXPECT_EQ(error, "mpc.precision on 'builtin.module', which has no "
                   "precision category");
}

TEST_F(PrecisionPolicyTest, NameEntriesMatchLocationNames) {
  Location named = NameLoc::get(builder.getStringAttr("encoder/0/attn/softmax"),
                                builder.getUnknownLoc());
  gelu->setLoc(FusedLoc::get(&context, {builder.getUnknownLoc(), named}));
  add->setLoc(NameLoc::get(builder.getStringAttr("encoder/0/attn/add")));
  ASSERT_TRUE(succeeded(policy.addPolicyFile(
      &context, "p.json",
      R"({"fp32": [{"name": "encoder/*/attn/*", "op": "gelu"}],
          "promote": [{"name": "*/add"}, {"name": "decoder/*"}]})",
      error)))
      << error;
  std::optional<CategoryChoice> g = policy.lookup(gelu), a = policy.lookup(add);
  ASSERT_TRUE(g && a);
  EXPECT_EQ(g->category, PrecisionCategory::Fp32);
  EXPECT_TRUE(g->instance);
  EXPECT_EQ(g->source, "policy p.json:1:11 name 'encoder/*/attn/*'");
  // The op restriction: the add is not a gelu, the second rule takes it.
  EXPECT_EQ(a->category, PrecisionCategory::Promote);
  EXPECT_EQ(a->source, "policy p.json:2:23 name '*/add'");
  EXPECT_EQ(policy.unusedNameRules(),
            std::vector<std::string>{"policy p.json:2:42 name 'decoder/*'"});
}

TEST_F(PrecisionPolicyTest, BadNameEntriesNameTheirPosition) {
  EXPECT_TRUE(failed(policy.addPolicyFile(
      &context, "p.json", R"({"fp32": [{"nam": "x"}]})", error)));
  EXPECT_EQ(error, "p.json:1:11: unknown field 'nam' in a name entry "
                   "(expected name and op)");
  EXPECT_TRUE(failed(policy.addPolicyFile(
      &context, "p.json", R"({"fp32": [{"name": 3}]})", error)));
  EXPECT_EQ(error, "p.json:1:11: a name entry needs \"name\": a glob of "
                   "location names as a string (and \"op\", if given, a "
                   "string)");
  EXPECT_TRUE(failed(policy.addPolicyFile(
      &context, "p.json", R"({"fp32": [{"name": "x", "op": "mpc.nope"}]})",
      error)));
  EXPECT_EQ(error, "p.json:1:11: unknown op 'mpc.nope' (expected an mpc op "
                   "such as mpc.matmul)");
  EXPECT_TRUE(failed(policy.addPolicyFile(
      &context, "p.json", R"({"fp32": [{"name": "[x"}]})", error)));
  EXPECT_EQ(error.rfind("p.json:1:11: '[x' is not a glob pattern: ", 0), 0u)
      << error;
}

TEST_F(PrecisionPolicyTest, PolicyErrorsNameTheirPosition) {
  EXPECT_TRUE(failed(policy.addPolicyFile(
      &context, "p.json", "{\n  \"fp32\": [\"gelu\", \"nope\"]\n}", error)));
  EXPECT_EQ(error, "p.json:2:20: unknown op 'nope' (expected an mpc op such "
                   "as mpc.matmul)");
  EXPECT_TRUE(failed(
      policy.addPolicyFile(&context, "p.json", "{\n\n  \"fp64\": []}", error)));
  EXPECT_EQ(error, "p.json:3:3: unknown category 'fp64' (expected lowp, "
                   "fp32, promote or follow)");
  EXPECT_TRUE(failed(
      policy.addPolicyFile(&context, "p.json", "{\"fp32\": [1]}", error)));
  EXPECT_EQ(error, "p.json:1:11: op names must be strings, got 1");
  EXPECT_TRUE(
      failed(policy.addPolicyFile(&context, "p.json", "{\"fp32\": [", error)));
  EXPECT_EQ(error.rfind("p.json:1:", 0), 0u) << error;
}

} // namespace
