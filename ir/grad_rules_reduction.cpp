// Derivative rules of reductions and row ops (softmax, layer norm, cross entropy). A reduction's
// cotangent has the reduced shape; broadcastReduced spreads it back over the reduced axes.
#include "ir/grad_rules.h"
#include "ir/shape_rules.h"

namespace kiln::grad {

namespace {

using Grads = Expected<std::vector<Value*>>;

// The op's reduced axes, sorted ("all axes" when the attribute is absent); valid, since the op
// passed type inference.
std::vector<int> axesOf(const Op& op) {
  std::optional<std::vector<int64_t>> axes;
  if (const Attr* a = op.findAttr("axes")) axes = a->getIntList();
  return *reductionAxes(axes, op.operand(0)->type().rank());
}

// The axis attribute of softmax/log_softmax, resolved.
int axisOf(const Op& op) { return *normalizeAxis(op.intAttr("axis"), op.operand(0)->type().rank()); }

// Sum over one axis, keeping it (for the row rules).
Value* rowSum(Context& ctx, Value* v, int axis) { return ctx.reduceSum(v, {axis}, /*keepdims=*/true); }

}  // namespace

// dx = broadcast(dy)
KILN_GRAD_RULE(reduceSum) {
  std::vector<int> axes = axesOf(op);
  return std::vector<Value*>{ctx.broadcastReduced(dys[0], op.operand(0)->type().shape, axes)};
}
// dx = broadcast(dy) / n, n = the number of elements reduced into each result
KILN_GRAD_RULE(reduceMean) {
  std::vector<int> axes = axesOf(op);
  const Shape& in = op.operand(0)->type().shape;
  int64_t n = 1;
  for (int a : axes) n *= in[a];
  return std::vector<Value*>{ctx.scale(ctx.broadcastReduced(dys[0], in, axes), 1.0 / static_cast<double>(n))};
}
// m = [x == broadcast(y)]:  dx = m broadcast(dy) / broadcast(sum(m))
KILN_GRAD_RULE(reduceMaxMin) {
  std::vector<int> axes = axesOf(op);
  Value* x = op.operand(0);
  const Shape& in = x->type().shape;
  Value* hits = ctx.indicator(ctx.op(OpKind::Eq, {x, ctx.broadcastReduced(op.result(), in, axes)}), x);
  Value* count = ctx.reduceSum(hits, axes, /*keepdims=*/true);
  return std::vector<Value*>{ctx.div(ctx.mul(hits, ctx.broadcastReduced(dys[0], in, axes)), count)};
}
// dx = broadcast(dy y) / x   (exact for non-zero x; a zero x gives inf/nan, as in TensorFlow)
KILN_GRAD_RULE(reduceProd) {
  std::vector<int> axes = axesOf(op);
  const Shape& in = op.operand(0)->type().shape;
  Value* dyy = ctx.broadcastReduced(ctx.mul(dys[0], op.result()), in, axes);
  return std::vector<Value*>{ctx.div(dyy, op.operand(0))};
}
// dx = y (dy - sum(dy y))   along the axis
KILN_GRAD_RULE(softmax) {
  Value* y = op.result();
  Value* dot = rowSum(ctx, ctx.mul(dys[0], y), axisOf(op));
  return std::vector<Value*>{ctx.mul(y, ctx.sub(dys[0], dot))};
}
// dx = dy - exp(y) sum(dy)   along the axis
KILN_GRAD_RULE(logSoftmax) {
  Value* total = rowSum(ctx, dys[0], axisOf(op));
  return std::vector<Value*>{ctx.sub(dys[0], ctx.mul(ctx.op(OpKind::Exp, {op.result()}), total))};
}
// Normalising over the trailing dims D from `axis`, with xh = (x - mean) r, r = rsqrt(var + eps):
//   g = dy scale,  dx = r (g - mean_D(g) - xh mean_D(g xh)),
//   dscale = sum over the leading dims of dy xh,  dbias = sum over the leading dims of dy
// mean, var and r are written op for op as the decompose pass expands the forward layer_norm
// (reduce_mean with keepdims, then sub, mul, reduce_mean, add, rsqrt), so that CSE finds them
// computed once for both: a training step then reads x for its statistics once, not twice.
KILN_GRAD_RULE(layerNorm) {
  Value* x = op.operand(0);
  Value* dy = dys[0];
  int rank = x->type().rank();
  int axis = *normalizeAxis(op.intAttr("axis"), rank);
  std::vector<int> lead;
  std::vector<int64_t> norm;
  for (int a = 0; a < rank; ++a) a < axis ? lead.push_back(a) : norm.push_back(a);
  auto meanNorm = [&](Value* v) {
    return ctx.op(OpKind::ReduceMean, {v}, {{"axes", Attr::ints(norm)}, {"keepdims", Attr(true)}});
  };
  Value* centered = ctx.sub(x, meanNorm(x));
  Value* var = meanNorm(ctx.mul(centered, centered));
  Value* r = ctx.op(OpKind::Rsqrt, {ctx.add(var, ctx.scalarLike(x, op.floatAttr("epsilon")))});
  Value* xh = ctx.mul(centered, r);
  Value* g = ctx.mul(dy, op.operand(1));
  Value* dx = ctx.mul(r, ctx.sub(ctx.sub(g, meanNorm(g)), ctx.mul(xh, meanNorm(ctx.mul(g, xh)))));
  return std::vector<Value*>{dx, ctx.reduceSum(ctx.mul(dy, xh), lead, false), ctx.reduceSum(dy, lead, false)};
}
// loss = mean_i -log_softmax(z)[i, t_i]:  dz = dy (softmax(z) - onehot(t)) / N;  labels have none
KILN_GRAD_RULE(softmaxCrossEntropy) {
  Value* z = op.operand(0);
  Value* labels = op.operand(1);
  const Shape& zs = z->type().shape;
  Value* classes = ctx.b.iota({labels->type().dtype, zs}, 1);
  Value* onehot = ctx.indicator(ctx.op(OpKind::Eq, {classes, ctx.reshape(labels, {zs[0], 1})}), z);
  Value* probs = ctx.op(OpKind::Softmax, {z}, {{"axis", Attr(int64_t{1})}});
  Value* perRow = ctx.scale(dys[0], 1.0 / static_cast<double>(zs[0]));
  return std::vector<Value*>{ctx.mul(ctx.sub(probs, onehot), perRow), nullptr};
}

}  // namespace kiln::grad
