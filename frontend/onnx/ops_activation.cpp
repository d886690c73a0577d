// Activation ONNX ops, each an exact composition of kiln primitives (select, min/max, exp, ...),
// and Clip, whose bounds are attributes before opset 11 and optional inputs from then on.
#include <cmath>
#include <limits>

#include "frontend/onnx/onnx_converters.h"

namespace kiln::onnx_import {

namespace {

Value* s(NodeContext& c, Value* like, double v) { return c.scalarLike(like, v); }
Value* mul(NodeContext& c, Value* a, Value* b) { return c.op(OpKind::Mul, {a, b}); }
Value* add(NodeContext& c, Value* a, Value* b) { return c.op(OpKind::Add, {a, b}); }
Value* isNegative(NodeContext& c, Value* x) { return c.op(OpKind::Lt, {x, s(c, x, 0)}); }
// exp(x) - 1: the shared tail of Elu, Selu and Celu.
Value* expm1(NodeContext& c, Value* x) { return c.op(OpKind::Sub, {c.op(OpKind::Exp, {x}), s(c, x, 1)}); }

// Every activation here takes one float input x; `f` builds the result from it.
template <class F>
Status activation(NodeContext& c, F f) {
  auto x = c.input(0);
  if (!x) return x.error();
  if (!isFloat((*x)->type().dtype)) return c.error("needs a float input, got " + (*x)->type().str());
  return c.result(f(*x));
}

Status relu(NodeContext& c) {
  auto x = c.input(0);
  if (!x) return x.error();
  if (isFloat((*x)->type().dtype)) return c.result(c.op(OpKind::Relu, {*x}));
  return c.result(c.op(OpKind::Max, {*x, s(c, *x, 0)}));  // integer Relu (opset 14)
}

// LeakyRelu: x < 0 ? alpha x : x.
Status leakyRelu(NodeContext& c) {
  double alpha = c.floatAttr("alpha", 0.01f);
  return activation(c, [&](Value* x) { return c.op(OpKind::Select, {isNegative(c, x), mul(c, x, s(c, x, alpha)), x}); });
}

// Elu: x < 0 ? alpha (e^x - 1) : x.
Status elu(NodeContext& c) {
  double alpha = c.floatAttr("alpha", 1.0f);
  return activation(c, [&](Value* x) { return c.op(OpKind::Select, {isNegative(c, x), mul(c, expm1(c, x), s(c, x, alpha)), x}); });
}

// Selu: gamma (x <= 0 ? alpha (e^x - 1) : x).
Status selu(NodeContext& c) {
  double alpha = c.floatAttr("alpha", 1.67326319217681884765625f);
  double gamma = c.floatAttr("gamma", 1.05070102214813232421875f);
  return activation(c, [&](Value* x) {
    Value* neg = mul(c, expm1(c, x), s(c, x, alpha));
    return mul(c, c.op(OpKind::Select, {c.op(OpKind::Le, {x, s(c, x, 0)}), neg, x}), s(c, x, gamma));
  });
}

// Celu: max(0, x) + min(0, alpha (e^(x/alpha) - 1)).
Status celu(NodeContext& c) {
  double alpha = c.floatAttr("alpha", 1.0f);
  return activation(c, [&](Value* x) {
    Value* neg = mul(c, expm1(c, c.op(OpKind::Div, {x, s(c, x, alpha)})), s(c, x, alpha));
    return add(c, c.op(OpKind::Max, {x, s(c, x, 0)}), c.op(OpKind::Min, {neg, s(c, x, 0)}));
  });
}

// HardSigmoid: max(0, min(1, alpha x + beta)); HardSwish is x HardSigmoid(x) with alpha 1/6, beta 1/2.
Value* hardSigmoidOf(NodeContext& c, Value* x, double alpha, double beta) {
  Value* lin = add(c, mul(c, x, s(c, x, alpha)), s(c, x, beta));
  return c.op(OpKind::Max, {c.op(OpKind::Min, {lin, s(c, x, 1)}), s(c, x, 0)});
}
Status hardSigmoid(NodeContext& c) {
  double alpha = c.floatAttr("alpha", 0.2f), beta = c.floatAttr("beta", 0.5f);
  return activation(c, [&](Value* x) { return hardSigmoidOf(c, x, alpha, beta); });
}
Status hardSwish(NodeContext& c) {
  return activation(c, [&](Value* x) { return mul(c, x, hardSigmoidOf(c, x, 1.0 / 6.0, 0.5)); });
}

// Softplus: log(1 + e^x), as max(x, 0) + log1p(e^-|x|), which neither overflows nor cancels.
Status softplus(NodeContext& c) {
  return activation(c, [&](Value* x) {
    Value* tail = c.op(OpKind::Log1p, {c.op(OpKind::Exp, {c.op(OpKind::Neg, {c.op(OpKind::Abs, {x})})})});
    return add(c, c.op(OpKind::Max, {x, s(c, x, 0)}), tail);
  });
}

// Softsign: x / (1 + |x|).
Status softsign(NodeContext& c) {
  return activation(c, [&](Value* x) { return c.op(OpKind::Div, {x, add(c, c.op(OpKind::Abs, {x}), s(c, x, 1))}); });
}

// ThresholdedRelu: x > alpha ? x : 0.
Status thresholdedRelu(NodeContext& c) {
  double alpha = c.floatAttr("alpha", 1.0f);
  return activation(c, [&](Value* x) { return c.op(OpKind::Select, {c.op(OpKind::Gt, {x, s(c, x, alpha)}), x, s(c, x, 0)}); });
}

// Shrink: x < -lambd ? x + bias : x > lambd ? x - bias : 0.
Status shrink(NodeContext& c) {
  double lambd = c.floatAttr("lambd", 0.5f), bias = c.floatAttr("bias", 0.0f);
  auto x = c.input(0);
  if (!x) return x.error();
  Value* v = *x;
  Value* low = c.op(OpKind::Select, {c.op(OpKind::Lt, {v, s(c, v, -lambd)}), add(c, v, s(c, v, bias)), s(c, v, 0)});
  return c.result(c.op(OpKind::Select, {c.op(OpKind::Gt, {v, s(c, v, lambd)}), c.op(OpKind::Sub, {v, s(c, v, bias)}), low}));
}

// PRelu: x < 0 ? slope x : x, slope broadcasting to x. Before opset 7 a 1-D slope of C values is
// one per channel (axis 1), as Caffe's PReLU: it is reshaped to [C, 1, ...] to broadcast so.
Status prelu(NodeContext& c) {
  auto x = c.input(0);
  if (!x) return x.error();
  auto slope = c.input(1);
  if (!slope) return slope.error();
  Value* s = *slope;
  const Shape& xs = (*x)->type().shape;
  if (c.opset() < 7 && s->type().rank() == 1 && xs.size() >= 2 && s->type().shape[0] == xs[1] && xs[1] != 1) {
    Shape perChannel(xs.size() - 1, 1);
    perChannel[0] = xs[1];
    s = c.reshape(s, perChannel);
  }
  return c.result(c.op(OpKind::Select, {isNegative(c, *x), mul(c, *x, s), *x}));
}

// Clip: min(max(x, lo), hi); a bound left out is no bound.
Status clip(NodeContext& c) {
  auto x = c.input(0);
  if (!x) return x.error();
  Value* y = *x;
  if (c.opset() < 11) {
    float inf = std::numeric_limits<float>::infinity();
    if (c.hasAttr("min")) y = c.op(OpKind::Max, {y, s(c, y, c.floatAttr("min", -inf))});
    if (c.hasAttr("max")) y = c.op(OpKind::Min, {y, s(c, y, c.floatAttr("max", inf))});
    return c.result(y);
  }
  if (c.hasInput(1)) {
    auto lo = c.input(1);
    if (!lo) return lo.error();
    y = c.op(OpKind::Max, {y, *lo});
  }
  if (c.hasInput(2)) {
    auto hi = c.input(2);
    if (!hi) return hi.error();
    y = c.op(OpKind::Min, {y, *hi});
  }
  return c.result(y);
}

}  // namespace

void addActivationConverters(ConverterTable& t) {
  t["Relu"] = relu;
  t["LeakyRelu"] = leakyRelu;
  t["Elu"] = elu;
  t["Selu"] = selu;
  t["Celu"] = celu;
  t["HardSigmoid"] = hardSigmoid;
  t["HardSwish"] = hardSwish;
  t["Softplus"] = softplus;
  t["Softsign"] = softsign;
  t["ThresholdedRelu"] = thresholdedRelu;
  t["Shrink"] = shrink;
  t["PRelu"] = prelu;
  t["Clip"] = clip;
}

}  // namespace kiln::onnx_import
