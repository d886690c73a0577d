// Interpreter: matmul, conv2d, max/avg pooling, batch_norm, and an MLP and a small CNN end to end.
#include <cmath>
#include <limits>

#include "interp_test_util.h"

namespace kiln {
namespace {

using test::closeValues;
using test::f32;
using test::ints;
using test::intValues;
using test::run1;
using test::sameValues;

const double kNaN = std::numeric_limits<double>::quiet_NaN();

// 0, 1, ..., n-1 as f32.
Tensor range(Shape shape) {
  Tensor t(TensorType{DType::F32, std::move(shape)});
  for (int64_t i = 0; i < t.numElements(); ++i) t.setDouble(i, static_cast<double>(i));
  return t;
}

// ---- matmul ----

TEST(InterpMatmul, TwoByThreeTimesThreeByTwo) {
  // [[1,2,3],[4,5,6]] @ [[7,8],[9,10],[11,12]] = [[58,64],[139,154]].
  Tensor r = run1(OpKind::Matmul, {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({3, 2}, {7, 8, 9, 10, 11, 12})});
  EXPECT_EQ(r.type().str(), "f32[2,2]");
  EXPECT_TRUE(sameValues(r, {58, 64, 139, 154}));
}

TEST(InterpMatmul, OneDimensionalPromotion) {
  Tensor v = f32({3}, {1, 2, 3});
  Tensor dot = run1(OpKind::Matmul, {v, f32({3}, {4, 5, 6})});
  EXPECT_EQ(dot.type().str(), "f32[]");
  EXPECT_TRUE(sameValues(dot, {32}));
  Tensor m = f32({3, 2}, {1, 0, 0, 1, 1, 1});
  Tensor row = run1(OpKind::Matmul, {v, m});  // [3] @ [3,2] -> [2]
  EXPECT_EQ(row.type().str(), "f32[2]");
  EXPECT_TRUE(sameValues(row, {4, 5}));
  Tensor col = run1(OpKind::Matmul, {f32({2, 3}, {1, 0, 1, 0, 1, 0}), v});  // [2,3] @ [3] -> [2]
  EXPECT_TRUE(sameValues(col, {4, 2}));
  // A 1-D operand with a batched one: [3] @ [2,3,2] -> [2,2].
  Tensor batched = run1(OpKind::Matmul, {v, f32({2, 3, 2}, {1, 0, 0, 1, 1, 1, 2, 0, 0, 2, 2, 2})});
  EXPECT_EQ(batched.type().str(), "f32[2,2]");
  EXPECT_TRUE(sameValues(batched, {4, 5, 8, 10}));
}

TEST(InterpMatmul, BroadcastBatchDims) {
  // [2,1,2,3] @ [3,3,2] -> [2,3,2,2]; a = arange(12), b = arange(18).
  Tensor r = run1(OpKind::Matmul, {range({2, 1, 2, 3}), range({3, 3, 2})});
  EXPECT_EQ(r.type().str(), "f32[2,3,2,2]");
  EXPECT_TRUE(sameValues(r, {10, 13, 28, 40, 28, 31, 100, 112, 46, 49, 172, 184,
                             46, 67, 64, 94, 172, 193, 244, 274, 298, 319, 424, 454}));
}

TEST(InterpMatmul, IntWrapsAndFloatAccumulatesInDouble) {
  // 100*2 + 100*1 = 300 wraps to 44 in i8.
  Tensor r = run1(OpKind::Matmul, {ints(DType::I8, {1, 2}, {100, 100}), ints(DType::I8, {2, 1}, {2, 1})});
  EXPECT_EQ(intValues(r), (std::vector<int64_t>{44}));
  EXPECT_EQ(intValues(run1(OpKind::Matmul, {ints(DType::I64, {2}, {1LL << 62, 1LL << 62}), ints(DType::I64, {2}, {2, 2})})),
            (std::vector<int64_t>{0}));  // 2^64 wraps to 0
  EXPECT_TRUE(sameValues(run1(OpKind::Matmul, {f32({3}, {1e8, 1, -1e8}), f32({3}, {1, 1, 1})}), {1}));
  Tensor empty = run1(OpKind::Matmul, {f32({2, 0}, {}), f32({0, 3}, {})});  // K = 0: all zeros
  EXPECT_TRUE(sameValues(empty, {0, 0, 0, 0, 0, 0}));
}

// f64 products add to the sum in one rounding, as BLAS and XLA (and kiln's kernels) add them:
// (1 + 2^-30)(1 - 2^-30) = 1 - 2^-60, which rounds to 1 on its own, so a multiply and then an add
// to -1 would give 0. f32 products of widened values are exact in double either way.
TEST(InterpMatmul, F64ProductsAddInOneRounding) {
  const double e = std::ldexp(1.0, -30), fused = -std::ldexp(1.0, -60);
  Tensor dot = run1(OpKind::Matmul, {test::f64({2}, {1, 1 + e}), test::f64({2}, {-1, 1 - e})});
  EXPECT_TRUE(sameValues(dot, {fused}));
  Tensor conv = run1(OpKind::Conv2d, {test::f64({1, 1, 1, 2}, {1, 1 + e}), test::f64({1, 1, 1, 2}, {-1, 1 - e})});
  EXPECT_TRUE(sameValues(conv, {fused}));
}

// ---- conv2d ----

AttrList convAttrs(std::vector<int64_t> strides, std::vector<int64_t> pads, std::vector<int64_t> dilations,
                   int64_t groups = 1) {
  return {{"strides", Attr::ints(strides)}, {"pads", Attr::ints(pads)}, {"dilations", Attr::ints(dilations)},
          {"groups", Attr(groups)}};
}

TEST(InterpConv2d, HandWorkedSmallCases) {
  Tensor x = f32({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  Tensor w = f32({1, 1, 2, 2}, {1, 0, 0, -1});  // out[y,x] = in[y,x] - in[y+1,x+1]
  Tensor plain = run1(OpKind::Conv2d, {x, w});
  EXPECT_EQ(plain.type().str(), "f32[1,1,2,2]");
  EXPECT_TRUE(sameValues(plain, {-4, -4, -4, -4}));
  // Pads 1 on every side, stride 2: windows start at rows/cols -1 and 1.
  //   (0,0): 0 - in[0,0] = -1; (0,1): 0 - in[0,2] = -3; (1,0): 0 - in[2,0] = -7; (1,1): 5 - 9 = -4.
  Tensor padded = run1(OpKind::Conv2d, {x, w}, convAttrs({2, 2}, {1, 1, 1, 1}, {1, 1}));
  EXPECT_TRUE(sameValues(padded, {-1, -3, -7, -4}));
  // Dilation 2: the 2x2 kernel touches the four corners: 1*1 + 2*3 + 3*7 + 4*9 = 64.
  Tensor dilated = run1(OpKind::Conv2d, {x, f32({1, 1, 2, 2}, {1, 2, 3, 4})}, convAttrs({1, 1}, {0, 0, 0, 0}, {2, 2}));
  EXPECT_EQ(dilated.type().str(), "f32[1,1,1,1]");
  EXPECT_TRUE(sameValues(dilated, {64}));
  // Asymmetric pads (top, left, bottom, right) = (0, 1, 0, 0) with a 1x2 kernel [1, 10]:
  // out[y, 0] = 10 * in[y, 0]; out[y, j] = in[y, j-1] + 10 * in[y, j].
  Tensor asym = run1(OpKind::Conv2d, {x, f32({1, 1, 1, 2}, {1, 10})}, convAttrs({1, 1}, {0, 1, 0, 0}, {1, 1}));
  EXPECT_EQ(asym.type().str(), "f32[1,1,3,3]");
  EXPECT_TRUE(sameValues(asym, {10, 21, 32, 40, 54, 65, 70, 87, 98}));
}

TEST(InterpConv2d, ChannelsAndGroups) {
  Tensor x = f32({1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  // One output channel summing channel 0 minus channel 1.
  EXPECT_TRUE(sameValues(run1(OpKind::Conv2d, {x, f32({1, 2, 1, 1}, {1, -1})}), {-4, -4, -4, -4}));
  // groups = 2: each output channel sees only its own input channel.
  Tensor g = run1(OpKind::Conv2d, {x, f32({2, 1, 1, 1}, {10, 100})}, convAttrs({1, 1}, {0, 0, 0, 0}, {1, 1}, 2));
  EXPECT_TRUE(sameValues(g, {10, 20, 30, 40, 500, 600, 700, 800}));
}

TEST(InterpConv2d, EverythingAtOnce) {
  // N=2, C=4, groups=2, O=4, kernel 2x3, strides [2,1], pads [1,0,0,2], dilations [1,2];
  // x = (arange(160) % 7) - 3, w = (arange(48) % 5) - 2, checked against a padded NumPy loop.
  Tensor x(TensorType{DType::F32, {2, 4, 4, 5}}), w(TensorType{DType::F32, {4, 2, 2, 3}});
  for (int64_t i = 0; i < x.numElements(); ++i) x.setDouble(i, static_cast<double>(i % 7 - 3));
  for (int64_t i = 0; i < w.numElements(); ++i) w.setDouble(i, static_cast<double>(i % 5 - 2));
  Tensor r = run1(OpKind::Conv2d, {x, w}, convAttrs({2, 1}, {1, 0, 0, 2}, {1, 2}, 2));
  EXPECT_EQ(r.type().str(), "f32[2,4,2,3]");
  EXPECT_TRUE(sameValues(r, {3,  -6, -3, -1, -3, -4, 4,   7,  3,  8,  -11, -4, 6,  -6, -2, -3,
                             -7, 8,  6,  9,  -8, 5,  1,   -2, 3,  3,  -8,  18, 8,  -7, 2,  -5,
                             -2, -10, 3, 10, -3, -1, 3,   18, -4, -3, 1,   0,  -3, -12, 6, 10}));
}

// ---- pooling ----

TEST(InterpPool, MaxPoolPaddingNeverWins) {
  Tensor x = f32({1, 1, 3, 3}, {-1, -2, -3, -4, -5, -6, -7, -8, -9});
  AttrList attrs = {{"kernel", Attr::ints({2, 2})}, {"strides", Attr::ints({1, 1})}, {"pads", Attr::ints({1, 1, 0, 0})}};
  Tensor r = run1(OpKind::MaxPool2d, {x}, attrs);
  EXPECT_EQ(r.type().str(), "f32[1,1,3,3]");
  EXPECT_TRUE(sameValues(r, {-1, -1, -2, -1, -1, -2, -4, -4, -5}));
  Tensor nan = run1(OpKind::MaxPool2d, {f32({1, 1, 2, 2}, {1, kNaN, 3, 4})}, {{"kernel", Attr::ints({2, 2})}});
  EXPECT_TRUE(sameValues(nan, {kNaN}));
}

TEST(InterpPool, AvgPoolCountExcludesPadding) {
  Tensor x = f32({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  // Strides default to the kernel. Windows: {1}, {2,3}, {4,7}, {5,6,8,9}.
  Tensor r = run1(OpKind::AvgPool2d, {x}, {{"kernel", Attr::ints({2, 2})}, {"pads", Attr::ints({1, 1, 1, 1})}});
  EXPECT_EQ(r.type().str(), "f32[1,1,2,2]");
  EXPECT_TRUE(sameValues(r, {1, 2.5, 5.5, 7}));
  // Two planes, no padding, a 1x3 kernel with stride 1 along a row of 4.
  Tensor rows = run1(OpKind::AvgPool2d, {f32({1, 2, 1, 4}, {1, 2, 3, 4, 10, 20, 30, 40})},
                     {{"kernel", Attr::ints({1, 3})}, {"strides", Attr::ints({1, 1})}});
  EXPECT_TRUE(sameValues(rows, {2, 3, 20, 30}));
  Tensor maxRows = run1(OpKind::MaxPool2d, {f32({1, 2, 1, 4}, {1, 2, 3, 4, 10, 20, 30, 40})},
                        {{"kernel", Attr::ints({1, 3})}, {"strides", Attr::ints({1, 1})}});
  EXPECT_TRUE(sameValues(maxRows, {3, 4, 30, 40}));
}

// ---- batch_norm ----

TEST(InterpBatchNorm, PerChannelOverAxisOne) {
  Tensor x = f32({2, 2, 2}, {1, 3, 2, 4, 5, 7, 0, 2});
  // Channel 0: (x - 1) / sqrt(4) * 1 + 0; channel 1: (x - 2) / sqrt(1) * 2 + 1.
  Tensor r = run1(OpKind::BatchNorm, {x, f32({2}, {1, 2}), f32({2}, {0, 1}), f32({2}, {1, 2}), f32({2}, {4, 1})},
                  {{"epsilon", Attr(0.0)}});
  EXPECT_TRUE(sameValues(r, {0, 1, 1, 5, 2, 3, -3, 1}));
  // Default epsilon 1e-5: 1 / sqrt(1 + 1e-5) = 0.999995000037.
  Tensor e = run1(OpKind::BatchNorm, {f32({1, 1}, {1}), f32({1}, {1}), f32({1}, {0}), f32({1}, {0}), f32({1}, {1})});
  EXPECT_TRUE(closeValues(e, {0.999995000037}));
}

// ---- end to end ----

TEST(InterpModels, MlpLayer) {
  // relu(x @ w + b) with x = 0.5, w[k, j] = (k % 3) - 1, b[j] = j - 1: sum_k w[k, j] = -1 (784 = 3*261 + 1).
  Module m;
  GraphBuilder b(m, "main");
  Value* x = b.param({DType::F32, {64, 784}}, "x");
  Value* w = b.param({DType::F32, {784, 128}}, "w");
  Value* bias = b.param({DType::F32, {128}}, "b");
  Value* y = b.op(OpKind::Relu, {b.op(OpKind::Add, {b.op(OpKind::Matmul, {x, w}), bias})});
  auto f = b.finish({y});
  ASSERT_TRUE(f.ok()) << f.error().str();
  Tensor xs(x->type()), ws(w->type()), bs(bias->type());
  for (int64_t i = 0; i < xs.numElements(); ++i) xs.setDouble(i, 0.5);
  for (int64_t i = 0; i < ws.numElements(); ++i) ws.setDouble(i, static_cast<double>((i / 128) % 3 - 1));
  for (int64_t i = 0; i < bs.numElements(); ++i) bs.setDouble(i, static_cast<double>(i - 1));
  auto r = test::runOk(**f, {xs, ws, bs});
  ASSERT_EQ(r.size(), 1u);
  // Row r, column j: -0.5 + j - 1, then relu.
  for (int64_t row : {0, 63})
    for (int64_t j : {0, 1, 2, 127}) EXPECT_EQ(r[0].getDouble(row * 128 + j), std::max(0.0, j - 1.5)) << row << "," << j;
}

TEST(InterpModels, SmallCnn) {
  // conv(1->8, 3x3, pad 1) . relu . max_pool 2x2 . conv(8->16, 3x3) . relu . avg_pool 2x2, all ones.
  Module m;
  GraphBuilder b(m, "main");
  Value* x = b.param({DType::F32, {8, 1, 28, 28}}, "x");
  Value* w1 = b.param({DType::F32, {8, 1, 3, 3}}, "w1");
  Value* w2 = b.param({DType::F32, {16, 8, 3, 3}}, "w2");
  Value* h = b.op(OpKind::Relu, {b.op(OpKind::Conv2d, {x, w1}, {{"pads", Attr::ints({1, 1, 1, 1})}})});
  h = b.op(OpKind::MaxPool2d, {h}, {{"kernel", Attr::ints({2, 2})}});
  h = b.op(OpKind::Relu, {b.op(OpKind::Conv2d, {h, w2})});
  h = b.op(OpKind::AvgPool2d, {h}, {{"kernel", Attr::ints({2, 2})}});
  auto f = b.finish({h});
  ASSERT_TRUE(f.ok()) << f.error().str();
  std::vector<Tensor> inputs;
  for (Value* p : {x, w1, w2}) {
    Tensor t(p->type());
    for (int64_t i = 0; i < t.numElements(); ++i) t.setDouble(i, 1.0);
    inputs.push_back(t);
  }
  auto r = test::runOk(**f, inputs);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].type().str(), "f32[8,16,6,6]");
  // conv1 gives 9 inside, 6 on the border, 4 in the corners; every 2x2 pooling window holds an
  // inside cell, so the pooled map is all 9; conv2 gives 8 * 9 * 9 = 648, and so does avg_pool.
  EXPECT_EQ(r[0].getDouble(0), 648);
  EXPECT_EQ(r[0].getDouble(r[0].numElements() - 1), 648);
}

}  // namespace
}  // namespace kiln
