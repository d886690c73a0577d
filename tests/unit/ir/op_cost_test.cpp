// denseFlops: what kiln bench's TFLOP/s and the device split count as arithmetic.
#include <gtest/gtest.h>

#include "ir/builder.h"
#include "ir/op_cost.h"

namespace kiln {
namespace {

Attr ints(std::vector<int64_t> values) {
  Attr::List list;
  for (int64_t v : values) list.push_back(Attr(v));
  return Attr(std::move(list));
}

// A convolution's two gradients do as many multiply-adds as the convolution itself (a training
// step's convolutions cost three forward passes), grouped or not; elementwise ops count none.
TEST(OpCost, ConvolutionGradientsCountTheForwardPassesFlops) {
  for (int64_t groups : {1, 2}) {
    Module m;
    GraphBuilder b(m, "main");
    Value* x = b.param({DType::F32, {2, 4, 9, 9}}, "x");
    Value* w = b.param({DType::F32, {6, 4 / groups, 3, 3}}, "w");
    AttrList conv{{"pads", ints({1, 1, 1, 1})}, {"strides", ints({2, 2})}, {"groups", Attr(groups)}};
    Value* y = b.op(OpKind::Conv2d, {x, w}, conv);
    ASSERT_NE(y, nullptr) << b.status().error().str();
    AttrList data = conv, filter = conv;
    data.push_back({"input_shape", ints({2, 4, 9, 9})});
    filter.push_back({"filter_shape", ints({6, 4 / groups, 3, 3})});
    Value* dx = b.op(OpKind::Conv2dBackwardData, {y, w}, data);
    Value* dw = b.op(OpKind::Conv2dBackwardFilter, {x, y}, filter);
    Value* r = b.op(OpKind::Relu, {y});
    ASSERT_NE(dx, nullptr) << b.status().error().str();
    ASSERT_NE(dw, nullptr) << b.status().error().str();
    // y is [2,6,5,5]: 300 outputs of (4 / groups) * 3 * 3 multiply-adds each.
    double forward = 2.0 * 300 * (4 / groups) * 9;
    EXPECT_DOUBLE_EQ(denseFlops(*y->definingOp()), forward);
    EXPECT_DOUBLE_EQ(denseFlops(*dx->definingOp()), forward);
    EXPECT_DOUBLE_EQ(denseFlops(*dw->definingOp()), forward);
    EXPECT_DOUBLE_EQ(denseFlops(*r->definingOp()), 0.0);
  }
}

}  // namespace
}  // namespace kiln
