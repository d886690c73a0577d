#include "ir/op_cost.h"

namespace kiln {

double denseFlops(const Op& op) {
  double outputs = static_cast<double>(op.result(0)->type().numElements());
  if (op.kind() == OpKind::Matmul) return 2 * outputs * static_cast<double>(op.operand(0)->type().shape.back());
  if (op.kind() == OpKind::Conv2d) {
    const Shape& w = op.operand(1)->type().shape;
    return 2 * outputs * static_cast<double>(w[1] * w[2] * w[3]);
  }
  // A convolution's gradients do the forward pass's multiply-adds again, one per element of dy
  // and weight of its output channel: dx = conv2d_backward_data(dy, w), dw = ..._filter(x, dy).
  if (op.kind() == OpKind::Conv2dBackwardData) {
    const Shape& w = op.operand(1)->type().shape;
    return 2 * static_cast<double>(op.operand(0)->type().numElements()) * static_cast<double>(w[1] * w[2] * w[3]);
  }
  if (op.kind() == OpKind::Conv2dBackwardFilter) {
    const Shape& w = op.result(0)->type().shape;
    return 2 * static_cast<double>(op.operand(1)->type().numElements()) * static_cast<double>(w[1] * w[2] * w[3]);
  }
  return 0;
}

}  // namespace kiln
