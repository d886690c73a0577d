// Interpreter: map and while (nested too), input checking, and the location and op name carried
// by run-time errors.
#include "interp_test_util.h"

namespace kiln {
namespace {

using test::closeValues;
using test::f32;
using test::ints;
using test::intValues;
using test::runOk;
using test::sameValues;

using Values = std::vector<Value*>;

Function* finishOk(GraphBuilder& b, const Values& results) {
  auto f = b.finish(results);
  EXPECT_TRUE(f.ok()) << f.error().str();
  return f.ok() ? *f : nullptr;
}

// ---- map ----

TEST(InterpMap, SpecExampleSlicesEveryOperand) {
  Module m;
  GraphBuilder b(m, "main");
  Value* xs = b.param({DType::F32, {3, 2}}, "xs");
  Value* ss = b.param({DType::F32, {3}}, "ss");
  auto ys = b.map({xs, ss}, [](GraphBuilder& body, const Values& p) {
    return Values{body.op(OpKind::Tanh, {body.op(OpKind::Mul, {p[0], p[1]})})};
  });
  Function* f = finishOk(b, ys);
  ASSERT_NE(f, nullptr);
  auto r = runOk(*f, {f32({3, 2}, {0.1, 0.2, 0.3, -0.4, 1, 2}), f32({3}, {1, 2, 0.5})});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].type().str(), "f32[3,2]");
  // tanh of [[0.1, 0.2], [0.6, -0.8], [0.5, 1]].
  EXPECT_TRUE(closeValues(r[0], {0.0996679946, 0.1973753202, 0.5370495670, -0.6640367703, 0.4621171573, 0.7615941560}));
}

TEST(InterpMap, OuterValuesAndSeveralResults) {
  Module m;
  GraphBuilder b(m, "main");
  Value* xs = b.param({DType::I32, {3}}, "xs");
  Value* k = b.param({DType::I32, {}}, "k");
  auto ys = b.map({xs}, [&](GraphBuilder& body, const Values& p) {
    Value* pair = body.op(OpKind::BroadcastTo, {p[0]}, {{"shape", Attr::ints({2})}});
    return Values{body.op(OpKind::Mul, {p[0], k}), pair, k};
  });
  Function* f = finishOk(b, ys);
  ASSERT_NE(f, nullptr);
  auto r = runOk(*f, {ints(DType::I32, {3}, {1, 2, 3}), ints(DType::I32, {}, {10})});
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(intValues(r[0]), (std::vector<int64_t>{10, 20, 30}));
  EXPECT_EQ(r[1].type().str(), "i32[3,2]");
  EXPECT_EQ(intValues(r[1]), (std::vector<int64_t>{1, 1, 2, 2, 3, 3}));
  EXPECT_EQ(intValues(r[2]), (std::vector<int64_t>{10, 10, 10}));  // an outer value yielded as is
}

TEST(InterpMap, ZeroIterations) {
  Module m;
  GraphBuilder b(m, "main");
  Value* xs = b.param({DType::F32, {0, 3}}, "xs");
  auto ys = b.map({xs}, [](GraphBuilder& body, const Values& p) {
    return Values{body.op(OpKind::ReduceSum, {p[0]})};
  });
  Function* f = finishOk(b, ys);
  ASSERT_NE(f, nullptr);
  auto r = runOk(*f, {f32({0, 3}, {})});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].type().str(), "f32[0]");
}

TEST(InterpMap, NestedMapSeesEveryEnclosingScope) {
  // out[i, j] = xs[i, j] * sum(xs[i]) * scale, with the sum computed in the outer body.
  Module m;
  GraphBuilder b(m, "main");
  Value* xs = b.param({DType::F32, {2, 3}}, "xs");
  Value* scale = b.param({DType::F32, {}}, "scale");
  auto ys = b.map({xs}, [&](GraphBuilder& outer, const Values& row) {
    Value* sum = outer.op(OpKind::ReduceSum, {row[0]});
    return outer.map({row[0]}, [&](GraphBuilder& inner, const Values& e) {
      return Values{inner.op(OpKind::Mul, {inner.op(OpKind::Mul, {e[0], sum}), scale})};
    });
  });
  Function* f = finishOk(b, ys);
  ASSERT_NE(f, nullptr);
  auto r = runOk(*f, {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({}, {2})});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].type().str(), "f32[2,3]");
  EXPECT_TRUE(sameValues(r[0], {12, 24, 36, 120, 150, 180}));
}

TEST(InterpMap, WhileInsideMap) {
  // For each n: (i, acc) = (0, 1); while i < n: (i + 1, acc * 2). Yields 2^n.
  Module m;
  GraphBuilder b(m, "main");
  Value* ns = b.param({DType::I32, {4}}, "ns");
  auto ys = b.map({ns}, [](GraphBuilder& body, const Values& n) {
    Value* zero = body.scalar(DType::I32, 0);
    Value* one = body.scalar(DType::I32, 1);
    auto loop = body.whileLoop(
        {zero, one}, [&](GraphBuilder& c, const Values& p) { return Values{c.op(OpKind::Lt, {p[0], n[0]})}; },
        [&](GraphBuilder& w, const Values& p) {
          Value* two = w.scalar(DType::I32, 2);
          return Values{w.op(OpKind::Add, {p[0], one}), w.op(OpKind::Mul, {p[1], two})};
        });
    return Values{loop.size() == 2 ? loop[1] : nullptr};
  });
  Function* f = finishOk(b, ys);
  ASSERT_NE(f, nullptr);
  auto r = runOk(*f, {ints(DType::I32, {4}, {0, 1, 3, 5})});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(intValues(r[0]), (std::vector<int64_t>{1, 2, 8, 32}));
}

// ---- while ----

// The spec's example: (n, y) = while i < limit: (i + 1, sqrt(x)).
Function* buildSqrtLoop(Module& m) {
  GraphBuilder b(m, "main");
  Value* x0 = b.param({DType::F32, {3}}, "x0");
  Value* limit = b.param({DType::I32, {}}, "limit");
  Value* i0 = b.scalar(DType::I32, 0);
  auto loop = b.whileLoop(
      {i0, x0}, [&](GraphBuilder& c, const Values& p) { return Values{c.op(OpKind::Lt, {p[0], limit})}; },
      [](GraphBuilder& body, const Values& p) {
        Value* one = body.scalar(DType::I32, 1);
        return Values{body.op(OpKind::Add, {p[0], one}), body.op(OpKind::Sqrt, {p[1]})};
      });
  return finishOk(b, loop);
}

TEST(InterpWhile, CarriesValuesUntilTheConditionFails) {
  Module m;
  Function* f = buildSqrtLoop(m);
  ASSERT_NE(f, nullptr);
  auto r = runOk(*f, {f32({3}, {16, 81, 256}), ints(DType::I32, {}, {2})});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(intValues(r[0]), (std::vector<int64_t>{2}));
  EXPECT_TRUE(sameValues(r[1], {2, 3, 4}));
}

TEST(InterpWhile, ZeroIterationsReturnTheInitialValues) {
  Module m;
  Function* f = buildSqrtLoop(m);
  ASSERT_NE(f, nullptr);
  auto r = runOk(*f, {f32({3}, {16, 81, 256}), ints(DType::I32, {}, {-5})});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(intValues(r[0]), (std::vector<int64_t>{0}));
  EXPECT_TRUE(sameValues(r[1], {16, 81, 256}));
}

TEST(InterpWhile, IterationLimit) {
  Module m;
  Function* f = buildSqrtLoop(m);
  ASSERT_NE(f, nullptr);
  InterpretOptions options;
  options.maxWhileIterations = 10;
  // Exactly 10 iterations are allowed; an 11th is not.
  auto ok = interpret(*f, {f32({3}, {1, 1, 1}), ints(DType::I32, {}, {10})}, options);
  ASSERT_TRUE(ok.ok()) << ok.error().str();
  EXPECT_EQ(intValues((*ok)[0]), (std::vector<int64_t>{10}));
  auto r = interpret(*f, {f32({3}, {1, 1, 1}), ints(DType::I32, {}, {11})}, options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().str(), "error: while: no result after 10 iterations (InterpretOptions::maxWhileIterations)");
}

TEST(InterpWhile, ErrorInsideTheBodyKeepsItsOwnOpAndLocation) {
  // while i < 3: i + 1, x / (2 - i) with ints: the third iteration divides by zero.
  Module m;
  GraphBuilder b(m, "main");
  Value* x0 = b.param({DType::I32, {}}, "x0");
  Value* i0 = b.scalar(DType::I32, 0);
  Value* three = b.scalar(DType::I32, 3);
  Op* divOp = nullptr;
  auto loop = b.whileLoop(
      {i0, x0}, [&](GraphBuilder& c, const Values& p) { return Values{c.op(OpKind::Lt, {p[0], three})}; },
      [&](GraphBuilder& body, const Values& p) {
        Value* one = body.scalar(DType::I32, 1);
        Value* two = body.scalar(DType::I32, 2);
        Value* q = body.op(OpKind::Div, {p[1], body.op(OpKind::Sub, {two, p[0]})});
        divOp = q ? q->definingOp() : nullptr;
        return Values{body.op(OpKind::Add, {p[0], one}), q};
      });
  Function* f = finishOk(b, loop);
  ASSERT_NE(f, nullptr);
  ASSERT_NE(divOp, nullptr);
  divOp->setLoc({"loop.kiln", 7, 10});
  loop[0]->definingOp()->setLoc({"loop.kiln", 3, 8});
  auto r = interpret(*f, {ints(DType::I32, {}, {100})});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().str(), "loop.kiln:7:10: error: div: integer division by zero");
}

// ---- inputs and error locations ----

Function* buildMlp(Module& m) {
  GraphBuilder b(m, "main");
  Value* x = b.param({DType::F32, {64, 784}}, "x");
  Value* w = b.param({DType::F32, {784, 128}}, "w");
  Value* bias = b.param({DType::F32, {128}});  // no name
  return finishOk(b, {b.op(OpKind::Add, {b.op(OpKind::Matmul, {x, w}), bias})});
}

TEST(InterpInputs, CountAndExactTypesAreChecked) {
  Module m;
  Function* f = buildMlp(m);
  ASSERT_NE(f, nullptr);
  Tensor x(TensorType{DType::F32, {64, 784}}), w(TensorType{DType::F32, {784, 128}}), bias(TensorType{DType::F32, {128}});
  auto count = interpret(*f, {x, w});
  ASSERT_FALSE(count.ok());
  EXPECT_EQ(count.error().str(), "error: @main takes 3 inputs, got 2");
  auto shape = interpret(*f, {x, Tensor(TensorType{DType::F32, {784, 100}}), bias});
  ASSERT_FALSE(shape.ok());
  EXPECT_EQ(shape.error().str(), "error: input 1 (%w): expected f32[784,128], got f32[784,100]");
  auto dtype = interpret(*f, {x, w, Tensor(TensorType{DType::F64, {128}})});
  ASSERT_FALSE(dtype.ok());
  EXPECT_EQ(dtype.error().str(), "error: input 2: expected f32[128], got f64[128]");
  auto ok = interpret(*f, {x, w, bias});
  ASSERT_TRUE(ok.ok()) << ok.error().str();
  EXPECT_EQ((*ok)[0].type().str(), "f32[64,128]");
}

TEST(InterpErrors, CarryTheOpLocation) {
  Module m;
  GraphBuilder b(m, "main");
  Value* x = b.param({DType::F32, {5}}, "x");
  Value* idx = b.param({DType::I64, {1}}, "idx");
  Value* g = b.op(OpKind::Gather, {x, idx});
  Function* f = finishOk(b, {g});
  ASSERT_NE(f, nullptr);
  g->definingOp()->setLoc({"model.kiln", 4, 12});
  auto r = interpret(*f, {Tensor(x->type()), ints(DType::I64, {1}, {7})});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().str(), "model.kiln:4:12: error: gather: index 7 is out of range [-5, 5) for axis 0");
}

TEST(InterpErrors, MapBodyErrorIsNotWrapped) {
  Module m;
  GraphBuilder b(m, "main");
  Value* xs = b.param({DType::I32, {3}}, "xs");
  Value* ds = b.param({DType::I32, {3}}, "ds");
  Op* divOp = nullptr;
  auto ys = b.map({xs, ds}, [&](GraphBuilder& body, const Values& p) {
    Value* q = body.op(OpKind::Div, {p[0], p[1]});
    divOp = q ? q->definingOp() : nullptr;
    return Values{q};
  });
  Function* f = finishOk(b, ys);
  ASSERT_NE(f, nullptr);
  divOp->setLoc({"m.kiln", 3, 5});
  auto r = interpret(*f, {ints(DType::I32, {3}, {1, 2, 3}), ints(DType::I32, {3}, {1, 0, 1})});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().str(), "m.kiln:3:5: error: div: integer division by zero");
}

}  // namespace
}  // namespace kiln
