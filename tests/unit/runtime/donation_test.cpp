// Which results may be computed into donated inputs (runtime/donation.h): only where every
// element of the result reads the same element of the input, and nothing reads the input later.
#include <gtest/gtest.h>

#include "codegen/kernel_plan.h"
#include "codegen/optimize.h"
#include "kiln_internal.h"
#include "runtime/donation.h"

namespace kiln {
namespace {

// The aliases for `text` after the default pipeline, with every parameter donated.
std::vector<int> aliasesOf(const std::string& text, std::vector<bool> donated = {}) {
  auto module = parseModule(text, "t.kiln");
  EXPECT_TRUE(module.ok()) << module.error().str();
  const Function& f = *(*module)->entry();
  auto optimized = codegen::optimizeFunction(f, {});
  EXPECT_TRUE(optimized.ok()) << optimized.error().str();
  const Function& g = *optimized->function;
  if (donated.empty()) donated.assign(g.params().size(), true);
  return donatedResultBuffers(g, *codegen::planFunction(g), donated);
}

TEST(Donation, AdamUpdatesEveryTensorInPlace) {
  auto module = parseFile(std::string(KILN_SOURCE_DIR) + "/examples/adam_update.kiln");
  ASSERT_TRUE(module.ok()) << module.error().str();
  const Function& f = *(*module)->entry();
  auto optimized = codegen::optimizeFunction(f, {});
  ASSERT_TRUE(optimized.ok());
  const Function& g = *optimized->function;
  std::vector<bool> donated(g.params().size());
  // Donate the parameters and moments (p, m, v of each tensor), not the gradients.
  std::vector<Value*> params = g.params();
  for (size_t i = 0; i < params.size(); ++i) donated[i] = params[i]->name()[0] != 'g';
  std::vector<int> alias = donatedResultBuffers(g, *codegen::planFunction(g), donated);
  const Op& ret = *g.body().terminator();
  ASSERT_EQ(alias.size(), ret.numOperands());
  for (size_t k = 0; k < alias.size(); ++k) {
    ASSERT_GE(alias[k], 0) << "result " << k << " is not updated in place";
    EXPECT_NE(params[static_cast<size_t>(alias[k])]->name()[0], 'g');
    EXPECT_EQ(params[static_cast<size_t>(alias[k])]->type(), ret.operand(k)->type());
  }
}

TEST(Donation, ElementwiseUpdateTakesTheDonatedBuffer) {
  EXPECT_EQ(aliasesOf("func @main(%p: f32[64], %g: f32[64]) -> f32[64] {\n  %s = mul %g, %g\n  %q = sub %p, %s\n"
                      "  return %q\n}\n"),
            std::vector<int>{0});
  // Not donated: a new buffer.
  EXPECT_EQ(aliasesOf("func @main(%p: f32[64], %g: f32[64]) -> f32[64] {\n  %q = sub %p, %g\n  return %q\n}\n",
                      {false, false}),
            std::vector<int>{-1});
}

TEST(Donation, OtherReadOrderIsRefused) {
  // A transpose reads element (j, i) for output (i, j).
  EXPECT_EQ(aliasesOf("func @main(%p: f32[8,8]) -> f32[8,8] {\n  %a = neg %p\n  %t = transpose %a {perm = [1, 0]}\n"
                      "  return %t\n}\n"),
            std::vector<int>{-1});
  // A row kernel (softmax) reads the whole row for each element.
  EXPECT_EQ(aliasesOf("func @main(%p: f32[8,8]) -> f32[8,8] {\n  %s = softmax %p {axis = 1}\n  return %s\n}\n"),
            std::vector<int>{-1});
  // A broadcast reads one element of %p for many outputs: %z (fused with %y into one kernel) may
  // not overwrite %p, while %y may overwrite %x.
  EXPECT_EQ(aliasesOf("func @main(%p: f32[8], %x: f32[8,8]) -> (f32[8,8], f32[8]) {\n  %y = add %x, %p\n"
                      "  %z = neg %p\n  return %y, %z\n}\n"),
            (std::vector<int>{1, -1}));
}

TEST(Donation, ReturnedOrLaterReadParametersAreKept) {
  EXPECT_EQ(aliasesOf("func @main(%p: f32[64]) -> (f32[64], f32[64]) {\n  %q = neg %p\n  return %q, %p\n}\n"),
            (std::vector<int>{-1, -1}));
  // %p is read again by the matmul, which runs after the kernel computing %q.
  EXPECT_EQ(aliasesOf("func @main(%p: f32[8,8]) -> (f32[8,8], f32[8,8]) {\n  %q = neg %p\n"
                      "  %m = matmul %q, %p\n  return %q, %m\n}\n"),
            (std::vector<int>{-1, -1}));
}

TEST(Donation, EachParameterGoesToOneResult) {
  std::vector<int> alias = aliasesOf(
      "func @main(%p: f32[64]) -> (f32[64], f32[64]) {\n  %a = neg %p\n  %b = abs %p\n  return %a, %b\n}\n");
  ASSERT_EQ(alias.size(), 2u);
  EXPECT_EQ((alias[0] == 0) + (alias[1] == 0), 1) << alias[0] << " " << alias[1];
}

}  // namespace
}  // namespace kiln
