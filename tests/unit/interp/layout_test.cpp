// Interpreter: reshape, transpose, broadcast_to, concat, slice (ONNX edge cases), gather, pad,
// all_reduce.
#include <limits>

#include "interp_test_util.h"

namespace kiln {
namespace {

using test::f32;
using test::ints;
using test::intValues;
using test::run1;
using test::run1Error;
using test::sameValues;

constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();

// 0, 1, ..., n-1 as i32.
Tensor range(Shape shape) {
  Tensor t(TensorType{DType::I32, std::move(shape)});
  for (int64_t i = 0; i < t.numElements(); ++i) t.setInt(i, i);
  return t;
}

std::vector<int64_t> v(std::initializer_list<int64_t> l) { return l; }

TEST(InterpReshape, KeepsRowMajorOrder) {
  Tensor r = run1(OpKind::Reshape, {range({2, 3})}, {{"shape", Attr::ints({3, -1})}});
  EXPECT_EQ(r.type().str(), "i32[3,2]");
  EXPECT_EQ(intValues(r), v({0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(run1(OpKind::Reshape, {f32({1}, {7})}, {{"shape", Attr::ints({})}}).type().str(), "f32[]");
}

TEST(InterpTranspose, Rank3Permutation) {
  // out[k,i,j] = x[i,j,k] = 12i + 4j + k.
  Tensor r = run1(OpKind::Transpose, {range({2, 3, 4})}, {{"perm", Attr::ints({2, 0, 1})}});
  EXPECT_EQ(r.type().str(), "i32[4,2,3]");
  EXPECT_EQ(intValues(r), v({0, 4, 8, 12, 16, 20, 1, 5, 9, 13, 17, 21, 2, 6, 10, 14, 18, 22, 3, 7, 11, 15, 19, 23}));
  EXPECT_EQ(intValues(run1(OpKind::Transpose, {range({2, 3})}, {{"perm", Attr::ints({1, 0})}})), v({0, 3, 1, 4, 2, 5}));
}

TEST(InterpBroadcastTo, RowColumnScalar) {
  EXPECT_EQ(intValues(run1(OpKind::BroadcastTo, {range({3})}, {{"shape", Attr::ints({2, 3})}})), v({0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(intValues(run1(OpKind::BroadcastTo, {range({2, 1})}, {{"shape", Attr::ints({2, 3})}})), v({0, 0, 0, 1, 1, 1}));
  Tensor s = run1(OpKind::BroadcastTo, {f32({}, {2.5})}, {{"shape", Attr::ints({2, 2})}});
  EXPECT_TRUE(sameValues(s, {2.5, 2.5, 2.5, 2.5}));
  EXPECT_EQ(run1(OpKind::BroadcastTo, {range({1})}, {{"shape", Attr::ints({0})}}).type().str(), "i32[0]");
}

TEST(InterpConcat, AlongEachAxis) {
  Tensor a = range({2, 2}), b = ints(DType::I32, {2, 1}, {10, 11});
  Tensor r = run1(OpKind::Concat, {a, b, a}, {{"axis", Attr(-1)}});
  EXPECT_EQ(r.type().str(), "i32[2,5]");
  EXPECT_EQ(intValues(r), v({0, 1, 10, 0, 1, 2, 3, 11, 2, 3}));
  Tensor c = run1(OpKind::Concat, {a, ints(DType::I32, {1, 2}, {7, 8})}, {{"axis", Attr(0)}});
  EXPECT_EQ(intValues(c), v({0, 1, 2, 3, 7, 8}));
  // An empty operand contributes nothing.
  Tensor e = run1(OpKind::Concat, {ints(DType::I32, {0, 2}, {}), a}, {{"axis", Attr(0)}});
  EXPECT_EQ(intValues(e), v({0, 1, 2, 3}));
  Tensor bools = run1(OpKind::Concat, {test::bools({1}, {1}), test::bools({2}, {0, 1})}, {{"axis", Attr(0)}});
  EXPECT_EQ(intValues(bools), v({1, 0, 1}));
}

AttrList sliceAttrs(std::vector<int64_t> starts, std::vector<int64_t> ends, std::vector<int64_t> axes = {},
                    std::vector<int64_t> steps = {}) {
  AttrList a = {{"starts", Attr::ints(starts)}, {"ends", Attr::ints(ends)}};
  if (!axes.empty()) a.push_back({"axes", Attr::ints(axes)});
  if (!steps.empty()) a.push_back({"steps", Attr::ints(steps)});
  return a;
}

TEST(InterpSlice, BasicAndStrided) {
  Tensor x = range({6});
  EXPECT_EQ(intValues(run1(OpKind::Slice, {x}, sliceAttrs({1}, {3}))), v({1, 2}));
  EXPECT_EQ(intValues(run1(OpKind::Slice, {x}, sliceAttrs({1}, {6}, {}, {2}))), v({1, 3, 5}));
  EXPECT_EQ(intValues(run1(OpKind::Slice, {x}, sliceAttrs({-2}, {kI64Max}))), v({4, 5}));
}

TEST(InterpSlice, NegativeStepsAndClampedBounds) {
  Tensor x = range({6});
  EXPECT_EQ(intValues(run1(OpKind::Slice, {x}, sliceAttrs({4}, {1}, {}, {-2}))), v({4, 2}));
  // Reverse the whole axis: start clamps to 5, an end below -6 clamps to "before 0".
  EXPECT_EQ(intValues(run1(OpKind::Slice, {x}, sliceAttrs({-1}, {kI64Min}, {}, {-1}))), v({5, 4, 3, 2, 1, 0}));
  EXPECT_EQ(intValues(run1(OpKind::Slice, {x}, sliceAttrs({10}, {-10}, {}, {-1}))), v({5, 4, 3, 2, 1, 0}));
  EXPECT_EQ(intValues(run1(OpKind::Slice, {x}, sliceAttrs({-100}, {100}))), v({0, 1, 2, 3, 4, 5}));
  // Empty results: start past end for a positive step, and before end for a negative one.
  EXPECT_EQ(run1(OpKind::Slice, {x}, sliceAttrs({3}, {1})).type().str(), "i32[0]");
  EXPECT_EQ(run1(OpKind::Slice, {x}, sliceAttrs({1}, {3}, {}, {-1})).type().str(), "i32[0]");
}

TEST(InterpSlice, SomeAxesOfA2DTensor) {
  Tensor y = range({3, 4});
  // y[::2, ::-1]
  Tensor r = run1(OpKind::Slice, {y}, sliceAttrs({0, -1}, {kI64Max, kI64Min}, {0, 1}, {2, -1}));
  EXPECT_EQ(r.type().str(), "i32[2,4]");
  EXPECT_EQ(intValues(r), v({3, 2, 1, 0, 11, 10, 9, 8}));
  // y[-1:0:-1, 1:3] with the axes listed out of order and negative.
  Tensor s = run1(OpKind::Slice, {y}, sliceAttrs({1, -1}, {3, 0}, {-1, 0}, {1, -1}));
  EXPECT_EQ(intValues(s), v({9, 10, 5, 6}));
  // Axes not listed are taken whole.
  EXPECT_EQ(intValues(run1(OpKind::Slice, {y}, sliceAttrs({3}, {4}, {1}))), v({3, 7, 11}));
}

TEST(InterpGather, RowsWithNegativeIndices) {
  Tensor x = range({3, 2});
  Tensor r = run1(OpKind::Gather, {x, ints(DType::I32, {3}, {2, -1, 0})});
  EXPECT_EQ(r.type().str(), "i32[3,2]");
  EXPECT_EQ(intValues(r), v({4, 5, 4, 5, 0, 1}));
}

TEST(InterpGather, InnerAxisAndIndexShapes) {
  Tensor x = range({3, 2});
  // axis 1 with indices [[1, 0]]: out[i, 0, j] = x[i, idx[0, j]].
  Tensor r = run1(OpKind::Gather, {x, ints(DType::I8, {1, 2}, {1, 0})}, {{"axis", Attr(-1)}});
  EXPECT_EQ(r.type().str(), "i32[3,1,2]");
  EXPECT_EQ(intValues(r), v({1, 0, 3, 2, 5, 4}));
  // A scalar index drops the axis.
  Tensor s = run1(OpKind::Gather, {x, ints(DType::I64, {}, {-2})}, {{"axis", Attr(0)}});
  EXPECT_EQ(s.type().str(), "i32[2]");
  EXPECT_EQ(intValues(s), v({2, 3}));
  EXPECT_EQ(run1(OpKind::Gather, {x, ints(DType::I64, {0}, {})}).type().str(), "i32[0,2]");
}

TEST(InterpGather, OutOfRangeIsAnError) {
  EXPECT_EQ(run1Error(OpKind::Gather, {range({5}), ints(DType::I64, {2}, {1, 7})}),
            "error: gather: index 7 is out of range [-5, 5) for axis 0");
  EXPECT_EQ(run1Error(OpKind::Gather, {range({2, 3}), ints(DType::I32, {1}, {-4})}, {{"axis", Attr(-1)}}),
            "error: gather: index -4 is out of range [-3, 3) for axis 1");
}

TEST(InterpPad, ConstantValueAndCropping) {
  Tensor x = ints(DType::I32, {2, 2}, {1, 2, 3, 4});
  // pads = [begin0, begin1, end0, end1]: one row above, one column to the right.
  Tensor r = run1(OpKind::Pad, {x}, {{"pads", Attr::ints({1, 0, 0, 1})}, {"value", Attr(9.0)}});
  EXPECT_EQ(r.type().str(), "i32[3,3]");
  EXPECT_EQ(intValues(r), v({9, 9, 9, 1, 2, 9, 3, 4, 9}));
  // The value converts to the dtype: 2.7 truncates to 2 for ints.
  EXPECT_EQ(intValues(run1(OpKind::Pad, {range({2})}, {{"pads", Attr::ints({1, 1})}, {"value", Attr(2.7)}})),
            v({2, 0, 1, 2}));
  // Negative pads crop: drop the first row, add a zero column on the left.
  Tensor c = run1(OpKind::Pad, {x}, {{"pads", Attr::ints({-1, 1, 0, 0})}});
  EXPECT_EQ(c.type().str(), "i32[1,3]");
  EXPECT_EQ(intValues(c), v({0, 3, 4}));
  Tensor f = run1(OpKind::Pad, {f32({1}, {1})}, {{"pads", Attr::ints({0, 2})}, {"value", Attr(-0.5)}});
  EXPECT_TRUE(sameValues(f, {1, -0.5, -0.5}));
  EXPECT_EQ(intValues(run1(OpKind::Pad, {ints(DType::I64, {0}, {})}, {{"pads", Attr::ints({1, 0})}, {"value", Attr(kI64Max)}})),
            v({kI64Max}));
}

TEST(InterpAllReduce, IsTheIdentityWithOneReplica) {
  Tensor x = f32({3}, {1, -2, 3.5});
  EXPECT_EQ(run1(OpKind::AllReduce, {x}), x);
  EXPECT_EQ(run1(OpKind::AllReduce, {x}, {{"reduce", Attr("mean")}}), x);
  EXPECT_EQ(run1(OpKind::AllReduce, {range({2})}), range({2}));
}

}  // namespace
}  // namespace kiln
