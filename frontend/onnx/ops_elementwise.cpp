// Elementwise ONNX ops: math (with exact decompositions of Tan, Sinh, Round, Mod, ...), comparisons,
// logic, BitShift, Where, and the variadic Sum/Mean/Max/Min. ONNX broadcasts as NumPy, as kiln does; opsets
// before 7 broadcast only with `broadcast = 1`, aligning B at `axis`.
#include <cmath>

#include "frontend/onnx/onnx_converters.h"

namespace kiln::onnx_import {

namespace {

// Opsets before 7: `broadcast = 1` with `axis` lines B's dims up with A's starting at `axis`.
Value* legacyBroadcast(NodeContext& c, Value* a, Value* b) {
  if (c.opset() >= 7 || c.intAttr("broadcast", 0) == 0 || !c.hasAttr("axis")) return b;
  int rankA = a->type().rank(), rankB = b->type().rank();
  int64_t axis = c.intAttr("axis", 0);
  if (axis < 0) axis += rankA;
  if (axis < 0 || axis + rankB > rankA) return b;  // the op then reports the mismatch
  Shape shape(b->type().shape);
  shape.insert(shape.end(), static_cast<size_t>(rankA - axis - rankB), 1);
  return c.reshape(b, shape);
}

Expected<std::pair<Value*, Value*>> twoInputs(NodeContext& c) {
  auto a = c.input(0);
  if (!a) return a.error();
  auto b = c.input(1);
  if (!b) return b.error();
  if ((*a)->type().dtype != (*b)->type().dtype)
    return c.error("operand dtypes " + std::string(dtypeName((*a)->type().dtype)) + " and " +
                   std::string(dtypeName((*b)->type().dtype)) + " differ");
  return std::make_pair(*a, legacyBroadcast(c, *a, *b));
}

template <OpKind K>
Status unary(NodeContext& c) {
  auto x = c.input(0);
  if (!x) return x.error();
  return c.result(c.op(K, {*x}));
}

template <OpKind K>
Status binary(NodeContext& c) {
  auto ab = twoInputs(c);
  if (!ab) return ab.error();
  return c.result(c.op(K, {ab->first, ab->second}));
}

// Equal and friends; kiln compares numbers, so bool equality is spelt not(xor).
template <OpKind K>
Status compare(NodeContext& c) {
  auto ab = twoInputs(c);
  if (!ab) return ab.error();
  auto [a, b] = *ab;
  if (a->type().dtype == DType::Bool) {
    if (K != OpKind::Eq) return c.unsupported("ordering comparisons of bool tensors");
    return c.result(c.op(OpKind::Not, {c.op(OpKind::Xor, {a, b})}));
  }
  return c.result(c.op(K, {a, b}));
}

// Sum, Max, Min over any number of inputs, pairwise with broadcasting.
template <OpKind K>
Status variadic(NodeContext& c) {
  auto xs = c.inputs();
  if (!xs) return xs.error();
  Value* acc = (*xs)[0];
  for (size_t i = 1; i < xs->size(); ++i) acc = c.op(K, {acc, (*xs)[i]});
  return c.result(acc);
}

Status mean(NodeContext& c) {
  auto xs = c.inputs();
  if (!xs) return xs.error();
  Value* acc = (*xs)[0];
  for (size_t i = 1; i < xs->size(); ++i) acc = c.op(OpKind::Add, {acc, (*xs)[i]});
  if (xs->size() > 1) acc = c.op(OpKind::Div, {acc, c.scalarLike(acc, static_cast<double>(xs->size()))});
  return c.result(acc);
}

// f32/f16/bf16 ops that kiln spells as several primitives are computed in f64 and rounded once,
// so the decomposition's intermediate roundings do not show in the result.
template <class F>
Status viaF64(NodeContext& c, F f) {
  auto x = c.input(0);
  if (!x) return x.error();
  DType t = (*x)->type().dtype;
  if (!isFloat(t)) return c.error("needs a float input, got " + (*x)->type().str());
  Value* wide = c.cast(*x, DType::F64);
  return c.result(c.cast(f(c, wide), t));
}

Value* mulS(NodeContext& c, Value* x, double s) { return c.op(OpKind::Mul, {x, c.scalarLike(x, s)}); }
Value* addS(NodeContext& c, Value* x, double s) { return c.op(OpKind::Add, {x, c.scalarLike(x, s)}); }

Status tan(NodeContext& c) {
  return viaF64(c, [](NodeContext& c, Value* x) { return c.op(OpKind::Div, {c.op(OpKind::Sin, {x}), c.op(OpKind::Cos, {x})}); });
}
// sinh x = (e^x - e^-x) / 2, cosh x = (e^x + e^-x) / 2.
template <OpKind Combine>
Status hyperbolic(NodeContext& c) {
  return viaF64(c, [](NodeContext& c, Value* x) {
    return mulS(c, c.op(Combine, {c.op(OpKind::Exp, {x}), c.op(OpKind::Exp, {c.op(OpKind::Neg, {x})})}), 0.5);
  });
}
// asinh x = sign(x) log(|x| + sqrt(x^2 + 1)): the odd form avoids cancellation for x < 0.
Status asinh(NodeContext& c) {
  return viaF64(c, [](NodeContext& c, Value* x) {
    Value* ax = c.op(OpKind::Abs, {x});
    Value* r = c.op(OpKind::Sqrt, {addS(c, c.op(OpKind::Mul, {x, x}), 1.0)});
    return c.op(OpKind::Mul, {c.op(OpKind::Sign, {x}), c.op(OpKind::Log, {c.op(OpKind::Add, {ax, r})})});
  });
}
// acosh x = log(x + sqrt(x^2 - 1)).
Status acosh(NodeContext& c) {
  return viaF64(c, [](NodeContext& c, Value* x) {
    Value* r = c.op(OpKind::Sqrt, {addS(c, c.op(OpKind::Mul, {x, x}), -1.0)});
    return c.op(OpKind::Log, {c.op(OpKind::Add, {x, r})});
  });
}
// atanh x = (log1p(x) - log1p(-x)) / 2.
Status atanh(NodeContext& c) {
  return viaF64(c, [](NodeContext& c, Value* x) {
    return mulS(c, c.op(OpKind::Sub, {c.op(OpKind::Log1p, {x}), c.op(OpKind::Log1p, {c.op(OpKind::Neg, {x})})}), 0.5);
  });
}

Status round(NodeContext& c) {
  auto x = c.input(0);
  if (!x) return x.error();
  return c.result(roundHalfToEven(c, *x));
}

// Sign of ints as (x > 0) - (x < 0); kiln's sign is for floats.
Status sign(NodeContext& c) {
  auto x = c.input(0);
  if (!x) return x.error();
  DType t = (*x)->type().dtype;
  if (isFloat(t)) return c.result(c.op(OpKind::Sign, {*x}));
  Value* zero = c.scalarLike(*x, 0);
  return c.result(c.op(OpKind::Sub, {c.cast(c.op(OpKind::Gt, {*x, zero}), t), c.cast(c.op(OpKind::Lt, {*x, zero}), t)}));
}

Status isNaN(NodeContext& c) {
  auto x = c.input(0);
  if (!x) return x.error();
  return c.result(c.op(OpKind::Ne, {*x, *x}));
}

Status isInf(NodeContext& c) {
  auto x = c.input(0);
  if (!x) return x.error();
  bool pos = c.intAttr("detect_positive", 1) != 0, neg = c.intAttr("detect_negative", 1) != 0;
  Value* isPos = c.op(OpKind::Eq, {*x, c.scalarLike(*x, INFINITY)});
  Value* isNeg = c.op(OpKind::Eq, {*x, c.scalarLike(*x, -INFINITY)});
  if (pos && neg) return c.result(c.op(OpKind::Or, {isPos, isNeg}));
  if (pos) return c.result(isPos);
  if (neg) return c.result(isNeg);
  return c.result(c.op(OpKind::BroadcastTo, {c.b().scalar(DType::Bool, 0)}, {{"shape", Attr::ints((*x)->type().shape)}}));
}

// Pow's exponent may have another dtype (opset 12+): a float base takes the exponent converted
// exactly; an integer base with a float exponent computes in f64 and truncates, as ONNX's reference.
Status pow(NodeContext& c) {
  auto a = c.input(0);
  if (!a) return a.error();
  auto b = c.input(1);
  if (!b) return b.error();
  DType ta = (*a)->type().dtype, tb = (*b)->type().dtype;
  Value* e = legacyBroadcast(c, *a, *b);
  if (ta == tb) return c.result(c.op(OpKind::Pow, {*a, e}));
  if (isFloat(ta)) return c.result(c.op(OpKind::Pow, {*a, c.cast(e, ta)}));
  if (isInt(tb)) return c.result(c.op(OpKind::Pow, {*a, c.cast(e, ta)}));
  return c.result(c.cast(c.op(OpKind::Pow, {c.cast(*a, DType::F64), c.cast(e, DType::F64)}), ta));
}

// Mod: fmod = 1 takes the dividend's sign (C fmod), fmod = 0 the divisor's (Python %, ints only).
// r = a - trunc(a / b) * b, which integer div (truncating) gives exactly; floats compute in f64.
Status mod(NodeContext& c) {
  auto ab = twoInputs(c);
  if (!ab) return ab.error();
  auto [a, b] = *ab;
  DType t = a->type().dtype;
  bool fmod = c.intAttr("fmod", 0) != 0;
  if (isFloat(t)) {
    if (!fmod) return c.error("floating-point Mod needs fmod = 1");
    Value* wa = c.cast(a, DType::F64);
    Value* wb = c.cast(b, DType::F64);
    Value* q = c.op(OpKind::Div, {wa, wb});
    Value* trunc = c.op(OpKind::Mul, {c.op(OpKind::Sign, {q}), c.op(OpKind::Floor, {c.op(OpKind::Abs, {q})})});
    return c.result(c.cast(c.op(OpKind::Sub, {wa, c.op(OpKind::Mul, {trunc, wb})}), t));
  }
  Value* r = c.op(OpKind::Sub, {a, c.op(OpKind::Mul, {c.op(OpKind::Div, {a, b}), b})});
  if (fmod) return c.result(r);
  Value* zero = c.scalarLike(a, 0);
  Value* signsDiffer = c.op(OpKind::Xor, {c.op(OpKind::Lt, {r, zero}), c.op(OpKind::Lt, {b, zero})});
  Value* fix = c.op(OpKind::And, {c.op(OpKind::Ne, {r, zero}), signsDiffer});
  return c.result(c.op(OpKind::Select, {fix, c.op(OpKind::Add, {r, b}), r}));
}

// BitShift (unsigned ints in ONNX): kiln's shifts, which follow NumPy as ONNX's reference does.
Status bitShift(NodeContext& c) {
  auto ab = twoInputs(c);
  if (!ab) return ab.error();
  std::string direction = c.stringAttr("direction", "");
  if (direction != "LEFT" && direction != "RIGHT")
    return c.error("direction must be \"LEFT\" or \"RIGHT\", got \"" + direction + "\"");
  OpKind kind = direction == "LEFT" ? OpKind::ShiftLeft : OpKind::ShiftRight;
  return c.result(c.op(kind, {ab->first, ab->second}));
}

Status where(NodeContext& c) {
  auto cond = c.input(0);
  if (!cond) return cond.error();
  auto a = c.input(1);
  if (!a) return a.error();
  auto b = c.input(2);
  if (!b) return b.error();
  return c.result(c.op(OpKind::Select, {*cond, *a, *b}));
}

}  // namespace

// f = floor(x); up when x - f > 0.5, or == 0.5 and f is odd. x - f is exact.
Value* roundHalfToEven(NodeContext& c, Value* x) {
  Value* f = c.op(OpKind::Floor, {x});
  Value* d = c.op(OpKind::Sub, {x, f});
  Value* half = c.scalarLike(x, 0.5);
  Value* fOdd = c.op(OpKind::Ne, {c.op(OpKind::Sub, {f, mulS(c, c.op(OpKind::Floor, {mulS(c, f, 0.5)}), 2.0)}), c.scalarLike(x, 0.0)});
  Value* up = c.op(OpKind::Or, {c.op(OpKind::Gt, {d, half}), c.op(OpKind::And, {c.op(OpKind::Eq, {d, half}), fOdd})});
  return c.op(OpKind::Select, {up, addS(c, f, 1.0), f});
}

void addElementwiseConverters(ConverterTable& t) {
  t["Abs"] = unary<OpKind::Abs>;
  t["Neg"] = unary<OpKind::Neg>;
  t["Exp"] = unary<OpKind::Exp>;
  t["Log"] = unary<OpKind::Log>;
  t["Sqrt"] = unary<OpKind::Sqrt>;
  t["Reciprocal"] = unary<OpKind::Reciprocal>;
  t["Tanh"] = unary<OpKind::Tanh>;
  t["Sigmoid"] = unary<OpKind::Sigmoid>;
  t["Erf"] = unary<OpKind::Erf>;
  t["Sin"] = unary<OpKind::Sin>;
  t["Cos"] = unary<OpKind::Cos>;
  t["Asin"] = unary<OpKind::Asin>;
  t["Acos"] = unary<OpKind::Acos>;
  t["Atan"] = unary<OpKind::Atan>;
  t["Floor"] = unary<OpKind::Floor>;
  t["Ceil"] = unary<OpKind::Ceil>;
  t["Not"] = unary<OpKind::Not>;
  t["Sign"] = sign;
  t["Tan"] = tan;
  t["Sinh"] = hyperbolic<OpKind::Sub>;
  t["Cosh"] = hyperbolic<OpKind::Add>;
  t["Asinh"] = asinh;
  t["Acosh"] = acosh;
  t["Atanh"] = atanh;
  t["Round"] = round;
  t["IsNaN"] = isNaN;
  t["IsInf"] = isInf;
  t["Add"] = binary<OpKind::Add>;
  t["Sub"] = binary<OpKind::Sub>;
  t["Mul"] = binary<OpKind::Mul>;
  t["Div"] = binary<OpKind::Div>;
  t["Pow"] = pow;
  t["Mod"] = mod;
  t["BitShift"] = bitShift;
  t["And"] = binary<OpKind::And>;
  t["Or"] = binary<OpKind::Or>;
  t["Xor"] = binary<OpKind::Xor>;
  t["Equal"] = compare<OpKind::Eq>;
  t["Less"] = compare<OpKind::Lt>;
  t["LessOrEqual"] = compare<OpKind::Le>;
  t["Greater"] = compare<OpKind::Gt>;
  t["GreaterOrEqual"] = compare<OpKind::Ge>;
  t["Where"] = where;
  t["Sum"] = variadic<OpKind::Add>;
  t["Max"] = variadic<OpKind::Max>;
  t["Min"] = variadic<OpKind::Min>;
  t["Mean"] = mean;
}

}  // namespace kiln::onnx_import
