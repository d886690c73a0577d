// canonicalize through the pass manager: remarks for folds it refuses, and errors that still
// happen at run time where the user wrote the op.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "frontend/parser.h"
#include "ir/clone.h"
#include "ir/printer.h"
#include "ir/interp/interpreter.h"
#include "passes/pass_manager.h"

namespace kiln::passes {
namespace {

std::unique_ptr<Module> parse(const std::string& text) {
  auto m = parseModule(text, "test.kiln");
  EXPECT_TRUE(m.ok()) << m.error().str() << "\n" << text;
  return m.ok() ? std::move(*m) : nullptr;
}

TEST(Canonicalize, OpThatWouldFailStaysWithARemarkAndStillFailsAtItsLine) {
  auto m = parse("func @main(%x: i32[2]) -> i32[2] {\n"
                 "  %a = constant [7, 8] : i32[2]\n"
                 "  %z = constant [1, 0] : i32[2]\n"
                 "  %q = div %a, %z\n"
                 "  %r = add %q, %x\n"
                 "  return %r\n}\n");
  ASSERT_TRUE(m);
  std::vector<Remark> remarks;
  PassRunOptions options;
  options.remarks = &remarks;
  ASSERT_TRUE(runPasses(*m, {"canonicalize", "canonicalize"}, options).ok());
  ASSERT_EQ(remarks.size(), 2u);  // once per run, not once per sweep
  EXPECT_EQ(remarks[0].op, "div");
  EXPECT_EQ(remarks[0].loc.line, 4);
  auto result = interpret(*m->entry(), {Tensor(TensorType{DType::I32, {2}})});
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().loc().line, 4);
  EXPECT_NE(result.error().message().find("division by zero"), std::string::npos) << result.error().message();
}

// The identities are exact bit for bit: on the values where a sloppier rule would differ (-0.0,
// NaN, inf, INT_MIN), the canonicalized function returns the same bytes as the original.
TEST(Canonicalize, IdentitiesAreBitExactOnSignedZerosNaNsAndIntMin) {
  auto original = parse(
      "func @main(%x: f32[6], %n: i32[3]) -> (f32[6], f32[6], f32[6], f32[6], f32[6], i32[3], i32[3], i32[3]) {\n"
      "  %one = constant 1.0 : f32[]\n"
      "  %nz = constant -0.0 : f32[]\n"
      "  %pz = constant 0.0 : f32[]\n"
      "  %a = mul %x, %one\n"
      "  %b = add %nz, %x\n"
      "  %c = sub %x, %pz\n"
      "  %d = div %x, %one\n"
      "  %e0 = neg %x\n"
      "  %e = neg %e0\n"
      "  %m0 = neg %n\n"
      "  %m = neg %m0\n"
      "  %s = sub %n, %n\n"
      "  %i1 = constant 1 : i32[]\n"
      "  %q = div %n, %i1\n"
      "  return %a, %b, %c, %d, %e, %m, %s, %q\n"
      "}\n");
  ASSERT_TRUE(original);
  std::unique_ptr<Module> canonical = cloneFunction(*original->entry());
  ASSERT_TRUE(runPasses(*canonical, {"canonicalize", "dce"}).ok());
  // Everything but `sub %n, %n` (now a constant) reduces to a parameter.
  walkOps(canonical->entry()->body(), [](const Op* op) {
    EXPECT_TRUE(op->kind() == OpKind::Constant || op->kind() == OpKind::Return) << op->name();
  });
  Tensor x(TensorType{DType::F32, {6}});
  const float inf = std::numeric_limits<float>::infinity();
  const double xs[] = {-0.0, 0.0, std::nan(""), inf, -inf, -1.5e-40 /* subnormal */};
  for (int i = 0; i < 6; ++i) x.setDouble(i, xs[i]);
  Tensor n(TensorType{DType::I32, {3}});
  n.setInt(0, std::numeric_limits<int32_t>::min());
  n.setInt(1, -7);
  n.setInt(2, 0);
  auto want = interpret(*original->entry(), {x, n});
  auto got = interpret(*canonical->entry(), {x, n});
  ASSERT_TRUE(want.ok() && got.ok());
  ASSERT_EQ(want->size(), got->size());
  for (size_t r = 0; r < want->size(); ++r) EXPECT_TRUE((*want)[r] == (*got)[r]) << "result " << r;
}

}  // namespace
}  // namespace kiln::passes
