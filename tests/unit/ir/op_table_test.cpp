// The op table: complete, consistent, and inferring the types docs/ir.md gives.
#include <gtest/gtest.h>

#include <set>

#include "ir/builder.h"
#include "ir/shape_rules.h"

namespace kiln {
namespace {

TEST(OpTable, EveryOpIsListedOnceWithARule) {
  std::set<std::string_view> names;
  for (const OpInfo& op : allOps()) {
    EXPECT_TRUE(names.insert(op.name).second) << op.name;
    EXPECT_EQ(lookupOp(op.name), op.kind);
    EXPECT_NE(op.infer, nullptr) << op.name;
    for (const AttrSpec& a : op.attrs) EXPECT_FALSE(a.required && a.defaultValue) << op.name << "." << a.name;
  }
  // 66 ops in SPEC.md, 5 kiln adds for ONNX (asin, acos, atan, shift_left, shift_right), kiln's
  // fusion, check_range (decomposed softmax_cross_entropy's label check), transfer (between the
  // devices of a placed function) and 5 backward ops (for grad), plus return and yield
  EXPECT_EQ(allOps().size(), 81u);
  EXPECT_FALSE(lookupOp("addd").has_value());
}

TEST(OpTable, Classes) {
  EXPECT_EQ(opInfo(OpKind::Add).cls, OpClass::Elementwise);
  EXPECT_EQ(opInfo(OpKind::ReduceMax).cls, OpClass::Reduction);
  EXPECT_EQ(opInfo(OpKind::Transpose).cls, OpClass::Layout);
  EXPECT_EQ(opInfo(OpKind::Conv2d).cls, OpClass::Library);
  EXPECT_EQ(opInfo(OpKind::AllReduce).cls, OpClass::Collective);
  EXPECT_EQ(opInfo(OpKind::While).cls, OpClass::Region);
}

// Infers the single result type of `kind` applied to params of the given types, or the error.
std::string infer(OpKind kind, const std::vector<TensorType>& operands, AttrList attrs = {}) {
  Module m;
  GraphBuilder b(m, "f");
  std::vector<Value*> values;
  for (const TensorType& t : operands) values.push_back(b.param(t));
  Value* r = b.op(kind, values, std::move(attrs));
  return r ? r->type().str() : b.status().error().message();
}

TensorType f32(Shape s) { return {DType::F32, std::move(s)}; }

TEST(Inference, Elementwise) {
  EXPECT_EQ(infer(OpKind::Add, {f32({4, 1, 3}), f32({5, 1})}), "f32[4,5,3]");
  EXPECT_EQ(infer(OpKind::Lt, {f32({3}), f32({})}), "bool[3]");
  EXPECT_EQ(infer(OpKind::Add, {f32({3}), {DType::F64, {3}}}), "add: operand dtypes f32[3] and f64[3] differ (use cast)");
  EXPECT_EQ(infer(OpKind::Exp, {{DType::I32, {3}}}),
            "exp: operand must have a float dtype (f16, bf16, f32, f64), got i32[3]");
  EXPECT_EQ(infer(OpKind::ShiftLeft, {{DType::U8, {3}}, {DType::U8, {1}}}), "u8[3]");
  EXPECT_EQ(infer(OpKind::ShiftRight, {f32({3}), f32({3})}),
            "shift_right: operands must have an integer dtype (i8, i16, i32, i64, u8, u16, u32, u64), got f32[3]");
  EXPECT_EQ(infer(OpKind::Atan, {{DType::U16, {3}}}),
            "atan: operand must have a float dtype (f16, bf16, f32, f64), got u16[3]");
  EXPECT_EQ(infer(OpKind::Gather, {f32({3}), {DType::U32, {2}}}),
            "gather: indices must have a signed integer dtype (i8, i16, i32, i64), got u32[2]");
  EXPECT_EQ(infer(OpKind::Select, {{DType::Bool, {2, 1}}, f32({3}), f32({})}), "f32[2,3]");
  EXPECT_EQ(infer(OpKind::Cast, {f32({2})}, {{"to", Attr(DType::I8)}}), "i8[2]");
  EXPECT_EQ(infer(OpKind::Gelu, {f32({2})}, {{"approximate", Attr("fast")}}),
            "gelu: approximate must be \"none\" or \"tanh\", got \"fast\"");
}

TEST(Inference, ReductionsAndNormalisation) {
  EXPECT_EQ(infer(OpKind::ReduceSum, {f32({2, 3, 4})}), "f32[]");
  EXPECT_EQ(infer(OpKind::ReduceMax, {f32({2, 3, 4})}, {{"axes", Attr::ints({-1, 0})}}), "f32[3]");
  EXPECT_EQ(infer(OpKind::ReduceMean, {f32({2, 3})}, {{"axes", Attr::ints({1})}, {"keepdims", Attr(true)}}), "f32[2,1]");
  EXPECT_EQ(infer(OpKind::ReduceSum, {f32({2, 3})}, {{"axes", Attr::ints({2})}}),
            "reduce_sum: axis 2 is out of range for rank 2");
  EXPECT_EQ(infer(OpKind::Argmax, {f32({2, 3})}, {{"axis", Attr(1)}}), "i64[2]");
  EXPECT_EQ(infer(OpKind::LayerNorm, {f32({2, 3, 4}), f32({3, 4}), f32({3, 4})}, {{"axis", Attr(1)}}), "f32[2,3,4]");
  EXPECT_EQ(infer(OpKind::LayerNorm, {f32({2, 4}), f32({2}), f32({4})}),
            "layer_norm: scale must have shape [4] (x.shape[1:]), got f32[2]");
  EXPECT_EQ(infer(OpKind::SoftmaxCrossEntropy, {f32({8, 10}), {DType::I64, {8}}}), "f32[]");
}

TEST(Inference, MatmulFollowsNumPy) {
  EXPECT_EQ(infer(OpKind::Matmul, {f32({64, 784}), f32({784, 128})}), "f32[64,128]");
  EXPECT_EQ(infer(OpKind::Matmul, {f32({3}), f32({3})}), "f32[]");
  EXPECT_EQ(infer(OpKind::Matmul, {f32({3}), f32({3, 5})}), "f32[5]");
  EXPECT_EQ(infer(OpKind::Matmul, {f32({5, 3}), f32({3})}), "f32[5]");
  EXPECT_EQ(infer(OpKind::Matmul, {f32({2, 1, 4, 3}), f32({7, 3, 5})}), "f32[2,7,4,5]");
  EXPECT_EQ(infer(OpKind::Matmul, {f32({4, 3}), f32({4, 3})}),
            "matmul: contracting dimensions differ: [4,3] has 3, [4,3] has 4");
}

TEST(Inference, Layout) {
  EXPECT_EQ(infer(OpKind::Reshape, {f32({2, 6})}, {{"shape", Attr::ints({3, -1})}}), "f32[3,4]");
  EXPECT_EQ(infer(OpKind::Reshape, {f32({2, 6})}, {{"shape", Attr::ints({5})}}),
            "reshape: cannot reshape f32[2,6] (12 elements) to [5] (5 elements)");
  EXPECT_EQ(infer(OpKind::Transpose, {f32({2, 3, 4})}, {{"perm", Attr::ints({2, 0, 1})}}), "f32[4,2,3]");
  EXPECT_EQ(infer(OpKind::Transpose, {f32({2, 3})}, {{"perm", Attr::ints({0, 0})}}),
            "transpose: perm [0, 0] is not a permutation of the 2 axes of f32[2,3]");
  EXPECT_EQ(infer(OpKind::BroadcastTo, {f32({3, 1})}, {{"shape", Attr::ints({2, 3, 4})}}), "f32[2,3,4]");
  EXPECT_EQ(infer(OpKind::Concat, {f32({2, 3}), f32({2, 5})}, {{"axis", Attr(-1)}}), "f32[2,8]");
  EXPECT_EQ(infer(OpKind::Slice, {f32({10, 4})}, {{"starts", Attr::ints({-1})}, {"ends", Attr::ints({-100})}, {"steps", Attr::ints({-3})}}),
            "f32[4,4]");
  EXPECT_EQ(infer(OpKind::Gather, {f32({5, 3}), {DType::I32, {2, 7}}}, {{"axis", Attr(1)}}), "f32[5,2,7]");
  EXPECT_EQ(infer(OpKind::Pad, {f32({2, 3})}, {{"pads", Attr::ints({1, 0, 1, 2})}}), "f32[4,5]");
}

TEST(Inference, ConvolutionAndPooling) {
  EXPECT_EQ(infer(OpKind::Conv2d, {f32({8, 1, 28, 28}), f32({16, 1, 5, 5})}, {{"pads", Attr::ints({2, 2, 2, 2})}}),
            "f32[8,16,28,28]");
  EXPECT_EQ(infer(OpKind::Conv2d, {f32({1, 4, 9, 9}), f32({6, 2, 3, 3})},
                  {{"strides", Attr::ints({2, 2})}, {"dilations", Attr::ints({2, 1})}, {"groups", Attr(2)}}),
            "f32[1,6,3,4]");
  EXPECT_EQ(infer(OpKind::Conv2d, {f32({1, 3, 8, 8}), f32({4, 2, 3, 3})}),
            "conv2d: weights f32[4,2,3,3] expect 2 input channels, input f32[1,3,8,8] has 3");
  EXPECT_EQ(infer(OpKind::MaxPool2d, {f32({8, 16, 28, 28})}, {{"kernel", Attr::ints({2, 2})}}), "f32[8,16,14,14]");
  EXPECT_EQ(infer(OpKind::AvgPool2d, {f32({1, 1, 5, 5})}, {{"kernel", Attr::ints({3, 3})}, {"strides", Attr::ints({1, 1})}, {"pads", Attr::ints({1, 1, 1, 1})}}),
            "f32[1,1,5,5]");
}

TEST(ShapeRules, SliceFollowsOnnx) {
  auto s = resolveSlice({10}, {-1}, {-100}, std::nullopt, std::vector<int64_t>{-3});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ((*s)[0].start, 9);
  EXPECT_EQ((*s)[0].step, -3);
  EXPECT_EQ((*s)[0].count, 4);  // 9, 6, 3, 0
  auto clamped = resolveSlice({5}, {2}, {1000}, std::nullopt, std::nullopt);
  EXPECT_EQ((*clamped)[0].count, 3);
  auto empty = resolveSlice({5}, {4}, {2}, std::nullopt, std::nullopt);
  EXPECT_EQ((*empty)[0].count, 0);
  EXPECT_FALSE(resolveSlice({5}, {0}, {5}, std::nullopt, std::vector<int64_t>{0}).ok());
}

}  // namespace
}  // namespace kiln
