// Type inference of the backward ops (gather_backward, conv2d_backward_data/_filter,
// max_pool2d_backward, avg_pool2d_backward): the result is the forward op's operand whose
// gradient they compute, and the cotangent they take must be exactly what the forward op would
// produce from it, so a mismatched attribute or shape is caught here, named.
#include "ir/infer_rules.h"
#include "ir/ir.h"

namespace kiln::infer {

namespace {

using Types = std::vector<TensorType>;

// The shape in attribute `name` (input_shape, filter_shape) as a type of `dtype`.
Expected<TensorType> shapeAttr(const Op& op, std::string_view name, DType dtype, size_t rank) {
  std::vector<int64_t> shape = op.intsAttr(name);
  if (rank && shape.size() != rank)
    return Error(std::string(name) + " must have " + std::to_string(rank) + " dims, got " + Attr::ints(shape).str());
  if (!shapeWithinLimits(shape)) return Error(std::string(name) + " " + Attr::ints(shape).str() + " is not a valid shape");
  return TensorType{dtype, shape};
}

// Ok when the forward op maps the operand to exactly the cotangent's type.
Status matchesForward(const Expected<TensorType>& forward, const TensorType& dy, std::string_view forwardOp) {
  if (!forward) return forward.error();
  if (*forward != dy)
    return Error("the cotangent is " + dy.str() + " but " + std::string(forwardOp) + " with these attributes gives " +
                 forward->str());
  return {};
}

}  // namespace

// gather_backward(dy, indices) {axis, input_shape} -> x's type
Expected<Types> gatherBackward(const Op& op, const Types*) {
  TensorType dy = op.operand(0)->type();
  if (!isFloat(dy.dtype)) return Error("cotangent must be a float tensor, got " + dy.str());
  auto x = shapeAttr(op, "input_shape", dy.dtype, 0);
  if (!x) return x.error();
  KILN_TRY(matchesForward(gatherType(op, *x, op.operand(1)->type()), dy, "gather"));
  return Types{*x};
}

// conv2d_backward_data(dy, w) {input_shape, window attributes} -> x's type
Expected<Types> conv2dBackwardData(const Op& op, const Types*) {
  TensorType dy = op.operand(0)->type(), w = op.operand(1)->type();
  auto x = shapeAttr(op, "input_shape", dy.dtype, 4);
  if (!x) return x.error();
  KILN_TRY(matchesForward(conv2dType(op, *x, w), dy, "conv2d"));
  return Types{*x};
}

// conv2d_backward_filter(x, dy) {filter_shape, window attributes} -> w's type
Expected<Types> conv2dBackwardFilter(const Op& op, const Types*) {
  TensorType x = op.operand(0)->type(), dy = op.operand(1)->type();
  auto w = shapeAttr(op, "filter_shape", x.dtype, 4);
  if (!w) return w.error();
  KILN_TRY(matchesForward(conv2dType(op, x, *w), dy, "conv2d"));
  return Types{*w};
}

// max_pool2d_backward(x, dy) {kernel, strides, pads} -> x's type
Expected<Types> maxPool2dBackward(const Op& op, const Types*) {
  TensorType x = op.operand(0)->type(), dy = op.operand(1)->type();
  KILN_TRY(matchesForward(pool2dType(op, x), dy, "max_pool2d"));
  return Types{x};
}

// avg_pool2d_backward(dy) {input_shape, kernel, strides, pads} -> x's type
Expected<Types> avgPool2dBackward(const Op& op, const Types*) {
  TensorType dy = op.operand(0)->type();
  auto x = shapeAttr(op, "input_shape", dy.dtype, 4);
  if (!x) return x.error();
  KILN_TRY(matchesForward(pool2dType(op, *x), dy, "avg_pool2d"));
  return Types{*x};
}

}  // namespace kiln::infer
