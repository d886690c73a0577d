#include "ir/op_cost.h"

namespace kiln {

double denseFlops(const Op& op) {
  double outputs = static_cast<double>(op.result(0)->type().numElements());
  if (op.kind() == OpKind::Matmul) return 2 * outputs * static_cast<double>(op.operand(0)->type().shape.back());
  if (op.kind() == OpKind::Conv2d) {
    const Shape& w = op.operand(1)->type().shape;
    return 2 * outputs * static_cast<double>(w[1] * w[2] * w[3]);
  }
  return 0;
}

}  // namespace kiln
