// Derivative rules (the `grad` column of the op table) and the small vocabulary they are written
// in. Each rule is a vector-Jacobian product: given the cotangent of the op's result, it appends
// ops computing the cotangent of each operand. passes/grad.cpp drives them in reverse order.
#pragma once

#include <vector>

#include "ir/builder.h"
#include "ir/op_table.h"

namespace kiln::grad {

// What a rule builds with: the gradient function's builder (ops get the forward op's location)
// and helpers for the patterns that recur across rules. All helpers keep the builder's deferred
// error convention: a null operand gives a null result.
class Context {
 public:
  explicit Context(GraphBuilder& builder) : b(builder) {}

  GraphBuilder& b;

  Value* op(OpKind kind, const std::vector<Value*>& operands, AttrList attrs = {}) {
    return b.op(kind, operands, std::move(attrs));
  }
  Value* add(Value* x, Value* y) { return op(OpKind::Add, {x, y}); }
  Value* sub(Value* x, Value* y) { return op(OpKind::Sub, {x, y}); }
  Value* mul(Value* x, Value* y) { return op(OpKind::Mul, {x, y}); }
  Value* div(Value* x, Value* y) { return op(OpKind::Div, {x, y}); }
  Value* neg(Value* x) { return op(OpKind::Neg, {x}); }
  // A scalar constant of x's dtype (f16/bf16 round it, as any constant of that type does).
  Value* scalarLike(Value* x, double v);
  // v * x for a number v.
  Value* scale(Value* x, double v) { return mul(x, scalarLike(x, v)); }
  // 1.0 where `cond` holds, else 0.0, in `like`'s dtype.
  Value* indicator(Value* cond, Value* like);
  Value* reshape(Value* x, const Shape& shape);
  Value* broadcastTo(Value* x, const Shape& shape);
  Value* reduceSum(Value* x, const std::vector<int>& axes, bool keepdims);
  // A gradient g of a value that was broadcast from `shape` (NumPy rules), summed back to it.
  Value* sumToShape(Value* g, const Shape& shape);
  // A reduction's cotangent (of shape reducedShape(in, axes, keepdims)) spread over `in`'s shape.
  Value* broadcastReduced(Value* g, const Shape& in, const std::vector<int>& axes);
  Value* zeros(const TensorType& type);
};

// One rule per differentiable op. `dys` holds one cotangent per result (null where a result has
// none); the returned vector holds one cotangent per operand, null where there is none (integer or
// bool operands) or where it is identically zero (floor, sign, ...). A rule may be called only when
// some result has a cotangent and some operand is a float.
#define KILN_GRAD_RULE(name) \
  Expected<std::vector<Value*>> name(Context& ctx, const Op& op, const std::vector<Value*>& dys)

// Elementwise (grad_rules_elementwise.cpp).
KILN_GRAD_RULE(neg);
KILN_GRAD_RULE(abs);
KILN_GRAD_RULE(exp);
KILN_GRAD_RULE(log);
KILN_GRAD_RULE(sqrt);
KILN_GRAD_RULE(rsqrt);
KILN_GRAD_RULE(reciprocal);
KILN_GRAD_RULE(tanh);
KILN_GRAD_RULE(sigmoid);
KILN_GRAD_RULE(erf);
KILN_GRAD_RULE(sin);
KILN_GRAD_RULE(cos);
KILN_GRAD_RULE(zero);  // floor, ceil, sign: piecewise constant, so the gradient is 0 where defined
KILN_GRAD_RULE(log1p);
KILN_GRAD_RULE(asin);
KILN_GRAD_RULE(acos);
KILN_GRAD_RULE(atan);
KILN_GRAD_RULE(relu);
KILN_GRAD_RULE(silu);
KILN_GRAD_RULE(gelu);
KILN_GRAD_RULE(add);
KILN_GRAD_RULE(sub);
KILN_GRAD_RULE(mul);
KILN_GRAD_RULE(div);
KILN_GRAD_RULE(maxMin);  // max, min: ties split the gradient evenly (as JAX and PyTorch do)
KILN_GRAD_RULE(pow);
KILN_GRAD_RULE(select);
KILN_GRAD_RULE(cast);
KILN_GRAD_RULE(batchNorm);
KILN_GRAD_RULE(allReduce);
KILN_GRAD_RULE(transfer);
// Reductions and row ops (grad_rules_reduction.cpp).
KILN_GRAD_RULE(reduceSum);
KILN_GRAD_RULE(reduceMean);
KILN_GRAD_RULE(reduceMaxMin);  // the gradient is shared evenly among the elements equal to the extreme
KILN_GRAD_RULE(reduceProd);
KILN_GRAD_RULE(softmax);
KILN_GRAD_RULE(logSoftmax);
KILN_GRAD_RULE(layerNorm);
KILN_GRAD_RULE(softmaxCrossEntropy);
// Matmul, layout and windowed ops (grad_rules_structure.cpp).
KILN_GRAD_RULE(matmul);
KILN_GRAD_RULE(reshape);
KILN_GRAD_RULE(transpose);
KILN_GRAD_RULE(broadcastTo);
KILN_GRAD_RULE(concat);
KILN_GRAD_RULE(slice);
KILN_GRAD_RULE(gather);
KILN_GRAD_RULE(pad);
KILN_GRAD_RULE(conv2d);
KILN_GRAD_RULE(maxPool2d);
KILN_GRAD_RULE(avgPool2d);

}  // namespace kiln::grad
