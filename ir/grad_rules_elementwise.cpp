// Derivative rules of the elementwise ops. Each comment gives the rule with x, y = the operand and
// result, dy = the result's cotangent; binary ops sum their cotangents back over broadcast dims.
#include <cmath>
#include <numbers>

#include "ir/grad_rules.h"

namespace kiln::grad {

namespace {

using Grads = Expected<std::vector<Value*>>;

Value* x0(const Op& op) { return op.operand(0); }
Value* y0(const Op& op) { return op.result(); }

// dx = dy * f'(x), for unary ops.
Grads chain(Context& ctx, const std::vector<Value*>& dys, Value* derivative) {
  return std::vector<Value*>{ctx.mul(dys[0], derivative)};
}

// The cotangents of a binary op's operands from their broadcast-shaped forms.
Grads binaryGrads(Context& ctx, const Op& op, Value* da, Value* db) {
  return std::vector<Value*>{ctx.sumToShape(da, op.operand(0)->type().shape),
                             ctx.sumToShape(db, op.operand(1)->type().shape)};
}

}  // namespace

// dx = -dy
KILN_GRAD_RULE(neg) { return std::vector<Value*>{ctx.neg(dys[0])}; }
// dx = dy * sign(x)
KILN_GRAD_RULE(abs) { return chain(ctx, dys, ctx.op(OpKind::Sign, {x0(op)})); }
// dx = dy * y
KILN_GRAD_RULE(exp) { return chain(ctx, dys, y0(op)); }
// dx = dy / x
KILN_GRAD_RULE(log) { return std::vector<Value*>{ctx.div(dys[0], x0(op))}; }
// dx = dy / (2 y)
KILN_GRAD_RULE(sqrt) { return std::vector<Value*>{ctx.div(dys[0], ctx.scale(y0(op), 2.0))}; }
// dx = -dy y^3 / 2   (y = x^-1/2, so y' = -x^-3/2 / 2)
KILN_GRAD_RULE(rsqrt) {
  Value* y = y0(op);
  return chain(ctx, dys, ctx.scale(ctx.mul(y, ctx.mul(y, y)), -0.5));
}
// dx = -dy y^2
KILN_GRAD_RULE(reciprocal) { return chain(ctx, dys, ctx.neg(ctx.mul(y0(op), y0(op)))); }
// dx = dy (1 - y^2)
KILN_GRAD_RULE(tanh) {
  Value* y = y0(op);
  return chain(ctx, dys, ctx.sub(ctx.scalarLike(y, 1.0), ctx.mul(y, y)));
}
// dx = dy y (1 - y)
KILN_GRAD_RULE(sigmoid) {
  Value* y = y0(op);
  return chain(ctx, dys, ctx.mul(y, ctx.sub(ctx.scalarLike(y, 1.0), y)));
}
// dx = dy 2/sqrt(pi) exp(-x^2)
KILN_GRAD_RULE(erf) {
  Value* x = x0(op);
  Value* bell = ctx.op(OpKind::Exp, {ctx.neg(ctx.mul(x, x))});
  return chain(ctx, dys, ctx.scale(bell, 2.0 / std::sqrt(std::numbers::pi)));
}
// dx = dy cos(x)
KILN_GRAD_RULE(sin) { return chain(ctx, dys, ctx.op(OpKind::Cos, {x0(op)})); }
// dx = -dy sin(x)
KILN_GRAD_RULE(cos) { return chain(ctx, dys, ctx.neg(ctx.op(OpKind::Sin, {x0(op)}))); }
// floor, ceil, sign: dx = 0 (no ops: a null cotangent is a zero one)
KILN_GRAD_RULE(zero) { return std::vector<Value*>(op.numOperands(), nullptr); }
// dx = dy / (1 + x)
KILN_GRAD_RULE(log1p) {
  Value* x = x0(op);
  return std::vector<Value*>{ctx.div(dys[0], ctx.add(ctx.scalarLike(x, 1.0), x))};
}
// dx = dy / sqrt(1 - x^2)
KILN_GRAD_RULE(asin) {
  Value* x = x0(op);
  return std::vector<Value*>{ctx.div(dys[0], ctx.op(OpKind::Sqrt, {ctx.sub(ctx.scalarLike(x, 1.0), ctx.mul(x, x))}))};
}
// dx = -dy / sqrt(1 - x^2)
KILN_GRAD_RULE(acos) {
  Value* x = x0(op);
  return std::vector<Value*>{ctx.neg(ctx.div(dys[0], ctx.op(OpKind::Sqrt, {ctx.sub(ctx.scalarLike(x, 1.0), ctx.mul(x, x))})))};
}
// dx = dy / (1 + x^2)
KILN_GRAD_RULE(atan) {
  Value* x = x0(op);
  return std::vector<Value*>{ctx.div(dys[0], ctx.add(ctx.scalarLike(x, 1.0), ctx.mul(x, x)))};
}
// dx = dy where x > 0, else 0 (0 at x = 0, as JAX and PyTorch), tested on y = relu(x): y > 0
// exactly where x > 0 (NaN and -0 included), and the backward pass then needs only y, so a
// convolution or matmul with bias and relu can be one library call whose epilogue writes y alone
// (x = conv + bias would otherwise be kept for the backward pass: a kernel and a tensor more).
KILN_GRAD_RULE(relu) {
  Value* y = y0(op);
  Value* positive = ctx.op(OpKind::Gt, {y, ctx.scalarLike(y, 0.0)});
  return std::vector<Value*>{ctx.op(OpKind::Select, {positive, dys[0], ctx.scalarLike(y, 0.0)})};
}
// s = sigmoid(x): dx = dy s (1 + x (1 - s))
KILN_GRAD_RULE(silu) {
  Value* x = x0(op);
  Value* s = ctx.op(OpKind::Sigmoid, {x});
  Value* one = ctx.scalarLike(x, 1.0);
  return chain(ctx, dys, ctx.mul(s, ctx.add(one, ctx.mul(x, ctx.sub(one, s)))));
}
// exact:  dx = dy (Phi(x) + x phi(x)),  Phi(x) = (1 + erf(x/sqrt2))/2, phi(x) = exp(-x^2/2)/sqrt(2 pi)
// tanh:   u = c (x + 0.044715 x^3), t = tanh(u), c = sqrt(2/pi)
//         dx = dy (0.5 (1 + t) + 0.5 x (1 - t^2) c (1 + 3 * 0.044715 x^2))
KILN_GRAD_RULE(gelu) {
  Value* x = x0(op);
  Value* one = ctx.scalarLike(x, 1.0);
  Value* x2 = ctx.mul(x, x);
  if (op.attr("approximate").getString() == "tanh") {
    const double c = std::sqrt(2.0 / std::numbers::pi), k = 0.044715;
    Value* u = ctx.scale(ctx.add(x, ctx.scale(ctx.mul(x2, x), k)), c);
    Value* t = ctx.op(OpKind::Tanh, {u});
    Value* left = ctx.scale(ctx.add(one, t), 0.5);
    Value* du = ctx.scale(ctx.add(one, ctx.scale(x2, 3.0 * k)), c);
    Value* right = ctx.mul(ctx.scale(x, 0.5), ctx.mul(ctx.sub(one, ctx.mul(t, t)), du));
    return chain(ctx, dys, ctx.add(left, right));
  }
  Value* cdf = ctx.scale(ctx.add(one, ctx.op(OpKind::Erf, {ctx.scale(x, 1.0 / std::numbers::sqrt2)})), 0.5);
  Value* pdf = ctx.scale(ctx.op(OpKind::Exp, {ctx.scale(x2, -0.5)}), 1.0 / std::sqrt(2.0 * std::numbers::pi));
  return chain(ctx, dys, ctx.add(cdf, ctx.mul(x, pdf)));
}
// da = dy, db = dy
KILN_GRAD_RULE(add) { return binaryGrads(ctx, op, dys[0], dys[0]); }
// da = dy, db = -dy
KILN_GRAD_RULE(sub) { return binaryGrads(ctx, op, dys[0], ctx.neg(dys[0])); }
// da = dy b, db = dy a
KILN_GRAD_RULE(mul) {
  return binaryGrads(ctx, op, ctx.mul(dys[0], op.operand(1)), ctx.mul(dys[0], op.operand(0)));
}
// da = dy / b, db = -dy y / b
KILN_GRAD_RULE(div) {
  Value* b = op.operand(1);
  Value* da = ctx.div(dys[0], b);
  return binaryGrads(ctx, op, da, ctx.neg(ctx.div(ctx.mul(dys[0], y0(op)), b)));
}
// max: w = [a > b] + [a == b]/2 (min: a < b);  da = dy w, db = dy (1 - w)
KILN_GRAD_RULE(maxMin) {
  Value* a = op.operand(0);
  Value* b = op.operand(1);
  OpKind wins = op.kind() == OpKind::Max ? OpKind::Gt : OpKind::Lt;
  Value* w = ctx.add(ctx.indicator(ctx.op(wins, {a, b}), a), ctx.scale(ctx.indicator(ctx.op(OpKind::Eq, {a, b}), a), 0.5));
  Value* da = ctx.mul(dys[0], w);
  return binaryGrads(ctx, op, da, ctx.sub(dys[0], da));
}
// da = dy b a^(b-1);  db = dy y log(a) where a > 0, else 0 (the limit JAX also takes at a = 0)
KILN_GRAD_RULE(pow) {
  Value* a = op.operand(0);
  Value* b = op.operand(1);
  Value* da = ctx.mul(dys[0], ctx.mul(b, ctx.op(OpKind::Pow, {a, ctx.sub(b, ctx.scalarLike(b, 1.0))})));
  Value* zero = ctx.scalarLike(a, 0.0);
  Value* positive = ctx.op(OpKind::Gt, {a, zero});
  Value* safeLog = ctx.op(OpKind::Log, {ctx.op(OpKind::Select, {positive, a, ctx.scalarLike(a, 1.0)})});
  Value* db = ctx.op(OpKind::Select, {positive, ctx.mul(dys[0], ctx.mul(y0(op), safeLog)), zero});
  return binaryGrads(ctx, op, da, db);
}
// select(c, a, b): da = select(c, dy, 0), db = select(c, 0, dy); c has none
KILN_GRAD_RULE(select) {
  Value* c = op.operand(0);
  Value* zero = ctx.scalarLike(dys[0], 0.0);
  Value* da = ctx.op(OpKind::Select, {c, dys[0], zero});
  Value* db = ctx.op(OpKind::Select, {c, zero, dys[0]});
  return std::vector<Value*>{nullptr, ctx.sumToShape(da, op.operand(1)->type().shape),
                             ctx.sumToShape(db, op.operand(2)->type().shape)};
}
// float -> float: dx = cast(dy, x's dtype); from an int or bool there is nothing to differentiate
KILN_GRAD_RULE(cast) {
  DType from = op.operand(0)->type().dtype;
  if (!isFloat(from) || !isFloat(op.result()->type().dtype)) return std::vector<Value*>{nullptr};
  return std::vector<Value*>{ctx.op(OpKind::Cast, {dys[0]}, {{"to", Attr(from)}})};
}
// y = (x - mean) r scale + bias with r = rsqrt(var + eps), per channel (axis 1):
//   dx = dy scale r, dscale = sum(dy (x - mean) r), dbias = sum(dy), dmean = -sum(dy) scale r,
//   dvar = -sum(dy (x - mean)) scale r^3 / 2     (sums over every axis but 1)
KILN_GRAD_RULE(batchNorm) {
  Value* x = op.operand(0);
  Value* dy = dys[0];
  const Shape& xs = x->type().shape;
  Shape channel(xs.size(), 1);
  channel[1] = xs[1];
  std::vector<int> others;
  for (int a = 0; a < static_cast<int>(xs.size()); ++a)
    if (a != 1) others.push_back(a);
  auto perChannel = [&](Value* v) { return ctx.reshape(v, channel); };
  auto sumOthers = [&](Value* v) { return ctx.reshape(ctx.reduceSum(v, others, true), {xs[1]}); };
  Value* scale = perChannel(op.operand(1));
  Value* centered = ctx.sub(x, perChannel(op.operand(3)));
  Value* r = ctx.op(OpKind::Rsqrt, {ctx.add(op.operand(4), ctx.scalarLike(x, op.floatAttr("epsilon")))});
  Value* rc = perChannel(r);
  Value* scaleR = ctx.mul(op.operand(1), r);  // [C]
  Value* sumDy = sumOthers(dy);
  Value* sumDyCentered = sumOthers(ctx.mul(dy, centered));
  return std::vector<Value*>{
      ctx.mul(dy, ctx.mul(scale, rc)),
      ctx.mul(sumDyCentered, r),
      sumDy,
      ctx.neg(ctx.mul(sumDy, scaleR)),
      ctx.mul(sumDyCentered, ctx.scale(ctx.mul(scaleR, ctx.mul(r, r)), -0.5)),
  };
}
// The adjoint of a sum across replicas is the same sum of the cotangents (likewise for mean).
KILN_GRAD_RULE(allReduce) { return std::vector<Value*>{ctx.op(OpKind::AllReduce, {dys[0]}, op.attrs())}; }

// The gradient of a transfer is the transfer back.
KILN_GRAD_RULE(transfer) {
  return std::vector<Value*>{ctx.op(OpKind::Transfer, {dys[0]}, {{"from", *op.findAttr("to")}, {"to", *op.findAttr("from")}})};
}

}  // namespace kiln::grad
