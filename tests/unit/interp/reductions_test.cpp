// Interpreter: reduce_*, argmax/argmin, softmax, log_softmax, layer_norm, softmax_cross_entropy.
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
using test::run1Error;
using test::sameValues;

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

AttrList axes(std::vector<int64_t> a, bool keepdims = false) {
  return {{"axes", Attr::ints(a)}, {"keepdims", Attr(keepdims)}};
}

// ---- reduce_* ----

TEST(InterpReduce, SumOverAxesWithKeepdims) {
  Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor all = run1(OpKind::ReduceSum, {x});
  EXPECT_EQ(all.type().str(), "f32[]");
  EXPECT_TRUE(sameValues(all, {21}));
  EXPECT_TRUE(sameValues(run1(OpKind::ReduceSum, {x}, axes({0})), {5, 7, 9}));
  Tensor last = run1(OpKind::ReduceSum, {x}, axes({-1}, true));
  EXPECT_EQ(last.type().str(), "f32[2,1]");
  EXPECT_TRUE(sameValues(last, {6, 15}));
  Tensor both = run1(OpKind::ReduceSum, {x}, axes({-1, 0}, true));
  EXPECT_EQ(both.type().str(), "f32[1,1]");
  EXPECT_TRUE(sameValues(both, {21}));
  EXPECT_TRUE(sameValues(run1(OpKind::ReduceSum, {x}, axes({})), {1, 2, 3, 4, 5, 6}));  // no axes: identity
}

TEST(InterpReduce, MiddleAxisOfRank3) {
  // x[i,j,k] = 100i + 10j + k over [2,3,2]; summing j gives 300i + 30 + 3k.
  Tensor x = f32({2, 3, 2}, {0, 1, 10, 11, 20, 21, 100, 101, 110, 111, 120, 121});
  EXPECT_TRUE(sameValues(run1(OpKind::ReduceSum, {x}, axes({1})), {30, 33, 330, 333}));
  EXPECT_TRUE(sameValues(run1(OpKind::ReduceMax, {x}, axes({0, 2})), {101, 111, 121}));
}

TEST(InterpReduce, MeanMaxMinProd) {
  Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_TRUE(sameValues(run1(OpKind::ReduceMean, {x}, axes({1})), {2, 5}));
  EXPECT_TRUE(sameValues(run1(OpKind::ReduceMean, {x}), {3.5}));
  EXPECT_TRUE(sameValues(run1(OpKind::ReduceMax, {x}, axes({0})), {4, 5, 6}));
  EXPECT_TRUE(sameValues(run1(OpKind::ReduceMin, {x}, axes({1})), {1, 4}));
  EXPECT_TRUE(sameValues(run1(OpKind::ReduceProd, {x}, axes({1})), {6, 120}));
}

TEST(InterpReduce, NaNPropagatesThroughMaxAndMin) {
  Tensor x = f32({2, 3}, {1, kNaN, 3, -kInf, 0, kInf});
  EXPECT_TRUE(sameValues(run1(OpKind::ReduceMax, {x}, axes({1})), {kNaN, kInf}));
  EXPECT_TRUE(sameValues(run1(OpKind::ReduceMin, {x}, axes({1})), {kNaN, -kInf}));
  EXPECT_TRUE(sameValues(run1(OpKind::ReduceSum, {x}, axes({1})), {kNaN, kNaN}));  // -inf + inf
}

TEST(InterpReduce, IntegersWrapAndMeanTruncates) {
  Tensor x = ints(DType::I32, {2, 2}, {1, 2, -3, -4});
  EXPECT_EQ(intValues(run1(OpKind::ReduceMean, {x}, axes({1}))), (std::vector<int64_t>{1, -3}));  // 1.5, -3.5
  EXPECT_EQ(intValues(run1(OpKind::ReduceProd, {ints(DType::I8, {2}, {16, 16})})), (std::vector<int64_t>{0}));
  EXPECT_EQ(intValues(run1(OpKind::ReduceSum, {ints(DType::I8, {3}, {100, 100, 100})})), (std::vector<int64_t>{44}));
  EXPECT_EQ(intValues(run1(OpKind::ReduceMax, {ints(DType::I64, {3}, {9007199254740993, 9007199254740992, -1})})),
            (std::vector<int64_t>{9007199254740993}));
  EXPECT_EQ(intValues(run1(OpKind::ReduceMin, {ints(DType::I32, {3}, {5, -7, 2})})), (std::vector<int64_t>{-7}));
}

TEST(InterpReduce, AccumulatesInDouble) {
  // In f16, 2048 + 1 rounds back to 2048; summed wide, 2048 + 1 + 1 = 2050 is exact in f16.
  EXPECT_TRUE(sameValues(run1(OpKind::ReduceSum, {test::tensor({DType::F16, {3}}, {2048, 1, 1})}), {2050}));
  // In f32, 1e8 + 1 - 1e8 gives 0; the double accumulator keeps the 1.
  EXPECT_TRUE(sameValues(run1(OpKind::ReduceSum, {f32({3}, {1e8, 1, -1e8})}), {1}));
}

TEST(InterpReduce, EmptyInputs) {
  Tensor empty = f32({0}, {});
  EXPECT_TRUE(sameValues(run1(OpKind::ReduceSum, {empty}), {0}));
  EXPECT_TRUE(sameValues(run1(OpKind::ReduceProd, {empty}), {1}));
  EXPECT_TRUE(sameValues(run1(OpKind::ReduceMean, {empty}), {kNaN}));
  EXPECT_TRUE(sameValues(run1(OpKind::ReduceSum, {f32({2, 0}, {})}, axes({1})), {0, 0}));
  // Reducing a non-empty axis of an empty tensor gives an empty result, not an error.
  EXPECT_EQ(run1(OpKind::ReduceMax, {f32({0, 3}, {})}, axes({1})).type().str(), "f32[0]");
  EXPECT_EQ(run1Error(OpKind::ReduceMax, {empty}), "error: reduce_max: cannot reduce zero elements of f32[0] (the result has no value)");
  EXPECT_EQ(run1Error(OpKind::ReduceMin, {f32({2, 0}, {})}, axes({1})),
            "error: reduce_min: cannot reduce zero elements of f32[2,0] (the result has no value)");
  EXPECT_EQ(run1Error(OpKind::ReduceMean, {ints(DType::I32, {0}, {})}),
            "error: reduce_mean: cannot reduce zero elements of i32[0] (the result has no value)");
  EXPECT_EQ(intValues(run1(OpKind::ReduceSum, {ints(DType::I32, {0}, {})})), (std::vector<int64_t>{0}));
}

// ---- argmax / argmin ----

TEST(InterpArg, FirstOccurrenceWins) {
  Tensor x = f32({2, 3}, {1, 3, 3, 4, 0, 4});
  Tensor r = run1(OpKind::Argmax, {x}, {{"axis", Attr(1)}});
  EXPECT_EQ(r.type().str(), "i64[2]");
  EXPECT_EQ(intValues(r), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(intValues(run1(OpKind::Argmin, {x}, {{"axis", Attr(-1)}})), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(intValues(run1(OpKind::Argmax, {x})), (std::vector<int64_t>{1, 0, 1}));  // default axis 0
  Tensor kept = run1(OpKind::Argmin, {x}, {{"axis", Attr(0)}, {"keepdims", Attr(true)}});
  EXPECT_EQ(kept.type().str(), "i64[1,3]");
  EXPECT_EQ(intValues(kept), (std::vector<int64_t>{0, 1, 0}));
}

TEST(InterpArg, NaNCountsAsTheExtreme) {
  Tensor x = f32({4}, {1, kNaN, 5, kNaN});
  EXPECT_EQ(intValues(run1(OpKind::Argmax, {x})), (std::vector<int64_t>{1}));
  EXPECT_EQ(intValues(run1(OpKind::Argmin, {x})), (std::vector<int64_t>{1}));
  EXPECT_EQ(intValues(run1(OpKind::Argmax, {f32({3}, {kNaN, 9, 1})})), (std::vector<int64_t>{0}));
}

TEST(InterpArg, IntegersAreExact) {
  Tensor x = ints(DType::I64, {3}, {9007199254740992, 9007199254740993, 0});
  EXPECT_EQ(intValues(run1(OpKind::Argmax, {x})), (std::vector<int64_t>{1}));
  EXPECT_EQ(intValues(run1(OpKind::Argmin, {ints(DType::I8, {3}, {-5, -128, -128})})), (std::vector<int64_t>{1}));
}

// ---- softmax family ----

TEST(InterpSoftmax, KnownValues) {
  Tensor x = f32({3}, {1, 2, 3});
  EXPECT_TRUE(closeValues(run1(OpKind::Softmax, {x}), {0.09003057, 0.24472847, 0.66524096}));
  EXPECT_TRUE(closeValues(run1(OpKind::LogSoftmax, {x}), {-2.4076059644, -1.4076059644, -0.4076059644}));
  // Along axis 0 of [[1,1],[2,3]]: columns are softmax([1,2]) and softmax([1,3]).
  Tensor m = f32({2, 2}, {1, 1, 2, 3});
  EXPECT_TRUE(closeValues(run1(OpKind::Softmax, {m}, {{"axis", Attr(0)}}), {0.2689414214, 0.1192029220, 0.7310585786, 0.8807970780}));
  EXPECT_TRUE(closeValues(run1(OpKind::LogSoftmax, {m}, {{"axis", Attr(-2)}}),
                          {-1.3132616875, -2.1269280110, -0.3132616875, -0.1269280110}));
}

TEST(InterpSoftmax, StableForLargeAndInfiniteInputs) {
  EXPECT_TRUE(sameValues(run1(OpKind::Softmax, {f32({2}, {1000, 1000})}), {0.5, 0.5}));
  EXPECT_TRUE(closeValues(run1(OpKind::LogSoftmax, {f32({2}, {-1000, 0})}), {-1000, 0}));
  EXPECT_TRUE(sameValues(run1(OpKind::Softmax, {f32({2}, {-kInf, 0})}), {0, 1}));
  EXPECT_TRUE(sameValues(run1(OpKind::LogSoftmax, {f32({2}, {-kInf, 0})}), {-kInf, 0}));
  EXPECT_TRUE(sameValues(run1(OpKind::Softmax, {f32({2}, {kNaN, 0})}), {kNaN, kNaN}));
}

TEST(InterpLayerNorm, LastAxisWithScaleAndBias) {
  Tensor x = f32({2, 3}, {1, 2, 3, 2, 4, 9});
  Tensor r = run1(OpKind::LayerNorm, {x, f32({3}, {1, 2, 0.5}), f32({3}, {0, 1, -1})});
  // Row 0: mean 2, var 2/3; row 1: mean 5, var 26/3; y = (x - mean) / sqrt(var + 1e-5) * scale + bias.
  EXPECT_TRUE(closeValues(r, {-1.2247356859, 1, -0.3876321570, -1.0190487428, 0.3206341715, -0.3206341715}));
}

TEST(InterpLayerNorm, FromAxisZeroAndCustomEpsilon) {
  Tensor x = f32({2, 2}, {1, 2, 3, 5});
  Tensor r = run1(OpKind::LayerNorm, {x, f32({2, 2}, {1, 1, 2, 2}), f32({2, 2}, {0, 0, 0, 0})}, {{"axis", Attr(0)}});
  EXPECT_TRUE(closeValues(r, {-1.1832132521, -0.5070913938, 0.3380609292, 3.0425483626}));
  // epsilon = 0: [0, 2] has mean 1, var 1, so it normalises to exactly [-1, 1].
  Tensor e = run1(OpKind::LayerNorm, {f32({2}, {0, 2}), f32({2}, {1, 1}), f32({2}, {0, 0})}, {{"epsilon", Attr(0.0)}});
  EXPECT_TRUE(sameValues(e, {-1, 1}));
}

TEST(InterpCrossEntropy, MeanOfNegativeLogSoftmaxAtLabels) {
  Tensor logits = f32({2, 3}, {1, 2, 3, 1, 1, 1});
  // Row 0: -log_softmax([1,2,3])[2] = 0.4076059644; row 1: log(3) = 1.0986122887.
  Tensor r = run1(OpKind::SoftmaxCrossEntropy, {logits, ints(DType::I64, {2}, {2, 0})});
  EXPECT_EQ(r.type().str(), "f32[]");
  EXPECT_TRUE(closeValues(r, {0.7531091266}));
  EXPECT_TRUE(closeValues(run1(OpKind::SoftmaxCrossEntropy, {logits, ints(DType::I8, {2}, {2, 0})}), {0.7531091266}));
  EXPECT_TRUE(closeValues(run1(OpKind::SoftmaxCrossEntropy, {f32({1, 2}, {1000, 0}), ints(DType::I32, {1}, {1})}), {1000}));
}

TEST(InterpCrossEntropy, LabelOutOfRangeIsAnError) {
  Tensor logits(TensorType{DType::F32, {4, 10}});
  EXPECT_EQ(run1Error(OpKind::SoftmaxCrossEntropy, {logits, ints(DType::I64, {4}, {0, 9, 0, 12})}),
            "error: softmax_cross_entropy: label 12 at index 3 is outside [0, 10)");
  EXPECT_EQ(run1Error(OpKind::SoftmaxCrossEntropy, {logits, ints(DType::I32, {4}, {-1, 0, 0, 0})}),
            "error: softmax_cross_entropy: label -1 at index 0 is outside [0, 10)");
}

}  // namespace
}  // namespace kiln
