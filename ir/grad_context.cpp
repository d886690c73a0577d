// The helpers derivative rules share: constants of a value's dtype, masks, and summing or spreading
// gradients across broadcast and reduced dimensions.
#include "ir/grad_rules.h"

namespace kiln::grad {

Value* Context::scalarLike(Value* x, double v) { return x ? b.scalar(x->type().dtype, v) : nullptr; }

Value* Context::indicator(Value* cond, Value* like) {
  if (!like) return nullptr;
  return op(OpKind::Cast, {cond}, {{"to", Attr(like->type().dtype)}});
}

Value* Context::reshape(Value* x, const Shape& shape) {
  if (x && x->type().shape == shape) return x;
  return op(OpKind::Reshape, {x}, {{"shape", Attr::ints(shape)}});
}

Value* Context::broadcastTo(Value* x, const Shape& shape) {
  if (x && x->type().shape == shape) return x;
  return op(OpKind::BroadcastTo, {x}, {{"shape", Attr::ints(shape)}});
}

Value* Context::reduceSum(Value* x, const std::vector<int>& axes, bool keepdims) {
  if (axes.empty()) return x;
  return op(OpKind::ReduceSum, {x}, {{"axes", Attr::ints({axes.begin(), axes.end()})}, {"keepdims", Attr(keepdims)}});
}

Value* Context::sumToShape(Value* g, const Shape& shape) {
  if (!g || g->type().shape == shape) return g;
  const Shape& from = g->type().shape;
  size_t lead = from.size() - shape.size();  // NumPy aligns shapes at the end
  std::vector<int> axes;
  for (size_t i = 0; i < from.size(); ++i)
    if (i < lead || (shape[i - lead] == 1 && from[i] != 1)) axes.push_back(static_cast<int>(i));
  return reshape(reduceSum(g, axes, /*keepdims=*/false), shape);
}

Value* Context::broadcastReduced(Value* g, const Shape& in, const std::vector<int>& axes) {
  Shape kept = in;
  for (int a : axes) kept[a] = 1;
  return broadcastTo(reshape(g, kept), in);
}

Value* Context::zeros(const TensorType& type) {
  Tensor zero(type);  // a splat constant: prints as one number
  return b.constant(std::move(zero));
}

}  // namespace kiln::grad
