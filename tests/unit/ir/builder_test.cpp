// GraphBuilder, printer and verifier on graphs made in C++.
#include <gtest/gtest.h>

#include "ir/builder.h"
#include "ir/printer.h"
#include "ir/verifier.h"

namespace kiln {
namespace {

TEST(Builder, MlpPrintsCanonicalText) {
  Module m;
  GraphBuilder b(m, "main");
  Value* x = b.param({DType::F32, {4, 8}}, "x");
  Value* w = b.param({DType::F32, {8, 3}}, "w");
  Value* bias = b.param({DType::F32, {3}}, "b");
  Value* h = b.op(OpKind::Matmul, {x, w});
  Value* y = b.op(OpKind::Add, {h, bias});
  Value* s = b.op(OpKind::Softmax, {y}, {{"axis", Attr(1)}});
  auto f = b.finish({s});
  ASSERT_TRUE(f.ok()) << f.error().str();
  EXPECT_EQ(printFunction(**f),
            "func @main(%x: f32[4,8], %w: f32[8,3], %b: f32[3]) -> f32[4,3] {\n"
            "  %0 = matmul %x, %w : f32[4,3]\n"
            "  %1 = add %0, %b : f32[4,3]\n"
            "  %2 = softmax %1 {axis = 1} : f32[4,3]\n"
            "  return %2\n"
            "}\n");
}

TEST(Builder, ShapeErrorIsDeferredToFinish) {
  Module m;
  GraphBuilder b(m, "main");
  Value* x = b.param({DType::F32, {64, 128}});
  Value* y = b.param({DType::F32, {3}});
  Value* z = b.op(OpKind::Add, {x, y});
  EXPECT_EQ(z, nullptr);
  Value* r = b.op(OpKind::Relu, {z});
  EXPECT_EQ(r, nullptr);
  auto f = b.finish({r});
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error().str(), "error: add: operand shapes f32[64,128] and f32[3] do not broadcast");
}

TEST(Builder, UnknownAndMissingAttributes) {
  Module m;
  GraphBuilder b(m, "main");
  Value* x = b.param({DType::F32, {2, 3}});
  EXPECT_EQ(b.op(OpKind::Transpose, {x}), nullptr);
  EXPECT_EQ(b.status().error().message(), "transpose: missing attribute 'perm'");

  Module m2;
  GraphBuilder b2(m2, "main");
  Value* x2 = b2.param({DType::F32, {2, 3}});
  EXPECT_EQ(b2.op(OpKind::Relu, {x2}, {{"alpha", Attr(1.0)}}), nullptr);
  EXPECT_EQ(b2.status().error().message(), "relu: unknown attribute 'alpha' (it takes no attributes)");
}

TEST(Builder, MapAndWhileRegions) {
  Module m;
  GraphBuilder b(m, "main");
  Value* xs = b.param({DType::F32, {8, 16}}, "xs");
  auto ys = b.map({xs}, [](GraphBuilder& body, const std::vector<Value*>& p) {
    return std::vector<Value*>{body.op(OpKind::Tanh, {p[0]})};
  });
  ASSERT_EQ(ys.size(), 1u);
  EXPECT_EQ(ys[0]->type().str(), "f32[8,16]");

  Value* i0 = b.scalar(DType::I32, 0);
  Value* limit = b.scalar(DType::I32, 5);
  auto loop = b.whileLoop(
      {i0, ys[0]},
      [&](GraphBuilder& c, const std::vector<Value*>& p) { return std::vector<Value*>{c.op(OpKind::Lt, {p[0], limit})}; },
      [](GraphBuilder& body, const std::vector<Value*>& p) {
        Value* one = body.scalar(DType::I32, 1);
        return std::vector<Value*>{body.op(OpKind::Add, {p[0], one}), body.op(OpKind::Abs, {p[1]})};
      });
  ASSERT_EQ(loop.size(), 2u);
  auto f = b.finish({loop[1]});
  ASSERT_TRUE(f.ok()) << f.error().str();
  EXPECT_EQ(printFunction(**f),
            "func @main(%xs: f32[8,16]) -> f32[8,16] {\n"
            "  %0 = map %xs (%1: f32[16]) {\n"
            "    %2 = tanh %1 : f32[16]\n"
            "    yield %2\n"
            "  } : f32[8,16]\n"
            "  %3 = constant 0 : i32[]\n"
            "  %4 = constant 5 : i32[]\n"
            "  %5, %6 = while %3, %0 (%7: i32[], %8: f32[8,16]) cond {\n"
            "    %9 = lt %7, %4 : bool[]\n"
            "    yield %9\n"
            "  } body {\n"
            "    %10 = constant 1 : i32[]\n"
            "    %11 = add %7, %10 : i32[]\n"
            "    %12 = abs %8 : f32[8,16]\n"
            "    yield %11, %12\n"
            "  } : i32[], f32[8,16]\n"
            "  return %6\n"
            "}\n");
}

TEST(Verifier, RejectsWrongResultType) {
  Module m;
  GraphBuilder b(m, "main");
  Value* x = b.param({DType::F32, {4}});
  Value* y = b.op(OpKind::Exp, {x});
  auto f = b.finish({y});
  ASSERT_TRUE(f.ok());
  y->setType({DType::F32, {5}});
  Status s = verifyFunction(**f);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message(), "exp: result types (f32[5]) do not match the inferred (f32[4])");
}

}  // namespace
}  // namespace kiln
