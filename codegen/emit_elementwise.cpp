// Element emitters for elementwise ops: unary math, binary arithmetic, comparisons and logic
// (NumPy broadcasting), select, cast, constant, iota, batch_norm and all_reduce. Each mirrors
// ir/interp/elementwise.cpp (or nn.cpp for batch_norm) operation for operation, so results match.
#include <llvm/IR/Constants.h>
#include <llvm/IR/GlobalVariable.h>

#include <cmath>
#include <cstring>
#include <numbers>

#include "codegen/element_emitter.h"
#include "ir/constant_data.h"

namespace kiln::codegen {

namespace {

// A float constant in the type of `like` (float or double), rounded as a C++ conversion would.
llvm::Value* fconst(llvm::Value* like, double v) { return llvm::ConstantFP::get(like->getType(), v); }

// 1/(1+exp(-x)) for x >= 0, else e/(1+e) with e = exp(x): both are exp(-|x|), so one exp serves
// both branches (NaN takes the second, as in the interpreter).
llvm::Value* sigmoid(ElementEmitter& e, llvm::Value* x) {
  auto& b = e.b;
  llvm::Value* ex = e.math(MathFn::Exp, {b.CreateFNeg(e.math(MathFn::Fabs, {x}))});
  llvm::Value* onePlus = b.CreateFAdd(fconst(x, 1), ex);
  llvm::Value* positive = b.CreateFDiv(fconst(x, 1), onePlus);
  llvm::Value* negative = b.CreateFDiv(ex, onePlus);
  return b.CreateSelect(b.CreateFCmpOGE(x, fconst(x, 0)), positive, negative);
}

llvm::Value* gelu(ElementEmitter& e, llvm::Value* x, bool tanhForm) {
  auto& b = e.b;
  bool isDouble = x->getType()->isDoubleTy();
  llvm::Value* halfX = b.CreateFMul(fconst(x, 0.5), x);
  if (tanhForm) {
    // k = sqrt(2/pi) computed in the compute type, as the interpreter's sqrt(T(2)/pi_v<T>).
    double k = isDouble ? std::sqrt(2.0 / std::numbers::pi) : double(std::sqrt(2.0f / std::numbers::pi_v<float>));
    llvm::Value* cube = b.CreateFMul(b.CreateFMul(b.CreateFMul(fconst(x, 0.044715), x), x), x);
    llvm::Value* inner = b.CreateFMul(fconst(x, k), b.CreateFAdd(x, cube));
    return b.CreateFMul(halfX, b.CreateFAdd(fconst(x, 1), e.math(MathFn::Tanh, {inner})));
  }
  double sqrt2 = isDouble ? std::numbers::sqrt2 : double(std::numbers::sqrt2_v<float>);
  llvm::Value* erf = e.math(MathFn::Erf, {b.CreateFDiv(x, fconst(x, sqrt2))});
  return b.CreateFMul(halfX, b.CreateFAdd(fconst(x, 1), erf));
}

llvm::Value* unaryFloat(ElementEmitter& e, const Op& op, llvm::Value* x) {
  auto& b = e.b;
  switch (op.kind()) {
    case OpKind::Neg: return b.CreateFNeg(x);
    case OpKind::Abs: return e.math(MathFn::Fabs, {x});
    case OpKind::Exp: return e.math(MathFn::Exp, {x});
    case OpKind::Log: return e.math(MathFn::Log, {x});
    case OpKind::Sqrt: return e.math(MathFn::Sqrt, {x});
    case OpKind::Rsqrt: return b.CreateFDiv(fconst(x, 1), e.math(MathFn::Sqrt, {x}));
    case OpKind::Reciprocal: return b.CreateFDiv(fconst(x, 1), x);
    case OpKind::Tanh: return e.math(MathFn::Tanh, {x});
    case OpKind::Sigmoid: return sigmoid(e, x);
    case OpKind::Erf: return e.math(MathFn::Erf, {x});
    case OpKind::Sin: return e.math(MathFn::Sin, {x});
    case OpKind::Cos: return e.math(MathFn::Cos, {x});
    case OpKind::Floor: return e.math(MathFn::Floor, {x});
    case OpKind::Ceil: return e.math(MathFn::Ceil, {x});
    case OpKind::Sign: {  // NaN stays NaN; +-0 gives +0
      llvm::Value* s = b.CreateSelect(b.CreateFCmpOLT(x, fconst(x, 0)), fconst(x, -1), fconst(x, 0));
      s = b.CreateSelect(b.CreateFCmpOGT(x, fconst(x, 0)), fconst(x, 1), s);
      return b.CreateSelect(b.CreateFCmpUNO(x, x), x, s);
    }
    case OpKind::Log1p: return e.math(MathFn::Log1p, {x});
    case OpKind::Asin: return e.math(MathFn::Asin, {x});
    case OpKind::Acos: return e.math(MathFn::Acos, {x});
    case OpKind::Atan: return e.math(MathFn::Atan, {x});
    case OpKind::Relu:  // x > 0 or NaN: x; else 0
      return b.CreateSelect(b.CreateFCmpUGT(x, fconst(x, 0)), x, fconst(x, 0));
    case OpKind::Silu: return b.CreateFMul(x, sigmoid(e, x));
    case OpKind::Gelu: return gelu(e, x, op.attr("approximate").getString() == "tanh");
    default: break;
  }
  internalError(__FILE__, __LINE__, "not a unary float op: " + std::string(op.name()));
}

llvm::Value* binaryFloat(ElementEmitter& e, OpKind kind, llvm::Value* x, llvm::Value* y) {
  auto& b = e.b;
  switch (kind) {
    case OpKind::Add: return b.CreateFAdd(x, y);
    case OpKind::Sub: return b.CreateFSub(x, y);
    case OpKind::Mul: return b.CreateFMul(x, y);
    case OpKind::Div: return b.CreateFDiv(x, y);
    case OpKind::Max: return e.floatMax(x, y);
    case OpKind::Min: return e.floatMin(x, y);
    case OpKind::Pow: return e.math(MathFn::Pow, {x, y});
    default: break;
  }
  internalError(__FILE__, __LINE__, "not a binary float op");
}

// Integer power by repeated squaring over every bit of the (non-negative) exponent, in i64
// (wrapping, then truncated to the dtype). A negative exponent gives the truncated 1/base^-e:
// 1 for base 1, +-1 for base -1 by parity, 0 otherwise; base 0 raises an error. Unsigned
// exponents are never negative and use every bit.
llvm::Value* intPow(ElementEmitter& e, const Op& op, llvm::Value* base, llvm::Value* exponent) {
  auto& b = e.b;
  DType t = op.result()->type().dtype;
  llvm::Type* type = base->getType();
  llvm::Value* x = e.toI64(base, t);
  llvm::Value* n = e.toI64(exponent, t);
  unsigned bits = type->getIntegerBitWidth() - (isUnsigned(t) ? 0 : 1);  // a signed exponent's sign bit is clear
  Values r = e.loop(bits, {e.i64(1), x}, [&](llvm::Value* i, const Values& c) {
    llvm::Value* bit = b.CreateICmpNE(b.CreateAnd(b.CreateLShr(n, i), e.i64(1)), e.i64(0));
    return Values{b.CreateSelect(bit, b.CreateMul(c[0], c[1]), c[0]), b.CreateMul(c[1], c[1])};
  });
  if (isUnsigned(t)) return b.CreateTrunc(r[0], type);
  llvm::Value* negative = b.CreateICmpSLT(n, e.i64(0));
  llvm::Value* odd = b.CreateICmpNE(b.CreateAnd(n, e.i64(1)), e.i64(0));
  llvm::Value* minusOnePow = b.CreateSelect(odd, e.i64(-1), e.i64(1));
  llvm::Value* reciprocal = b.CreateSelect(b.CreateICmpEQ(x, e.i64(1)), e.i64(1),
                                           b.CreateSelect(b.CreateICmpEQ(x, e.i64(-1)), minusOnePow, e.i64(0)));
  e.raiseIf(b.CreateAnd(negative, b.CreateICmpEQ(x, e.i64(0))),
            e.addError(op, "0 raised to a negative integer power"));
  return b.CreateTrunc(b.CreateSelect(negative, reciprocal, r[0]), type);
}

// shift_left, shift_right as NumPy's (ir/interp/elementwise.cpp): an amount read unsigned that is
// the width or more shifts every bit out, where LLVM's shifts would give poison.
llvm::Value* shift(ElementEmitter& e, OpKind kind, llvm::Value* x, llvm::Value* y, bool isUnsignedInt) {
  auto& b = e.b;
  llvm::Type* type = x->getType();
  unsigned width = type->getIntegerBitWidth();
  llvm::Value* inRange = b.CreateICmpULT(y, llvm::ConstantInt::get(type, width));
  llvm::Value* amount = b.CreateSelect(inRange, y, llvm::ConstantInt::get(type, 0));
  llvm::Value* zero = llvm::ConstantInt::get(type, 0);
  if (kind == OpKind::ShiftLeft) return b.CreateSelect(inRange, b.CreateShl(x, amount), zero);
  if (isUnsignedInt) return b.CreateSelect(inRange, b.CreateLShr(x, amount), zero);
  llvm::Value* signFill = b.CreateAShr(x, llvm::ConstantInt::get(type, width - 1));  // 0 or -1
  return b.CreateSelect(inRange, b.CreateAShr(x, amount), signFill);
}

llvm::Value* binaryInt(ElementEmitter& e, const Op& op, llvm::Value* x, llvm::Value* y) {
  auto& b = e.b;
  bool isUnsignedInt = isUnsigned(op.operand(0)->type().dtype);
  switch (op.kind()) {
    case OpKind::Add: return b.CreateAdd(x, y);  // no nsw: ints wrap
    case OpKind::Sub: return b.CreateSub(x, y);
    case OpKind::Mul: return b.CreateMul(x, y);
    case OpKind::ShiftLeft:
    case OpKind::ShiftRight: return shift(e, op.kind(), x, y, isUnsignedInt);
    case OpKind::Div: {
      // Truncates toward zero. sdiv would be UB for a zero divisor and for INT_MIN / -1, so the
      // divisor is made safe first: -1 gives the wrapped negation, 0 an error and the result 0.
      llvm::Value* zero = llvm::ConstantInt::get(y->getType(), 0);
      llvm::Value* minusOne = llvm::ConstantInt::getSigned(y->getType(), -1);
      llvm::Value* isZero = b.CreateICmpEQ(y, zero);
      e.raiseIf(isZero, e.addError(op, "integer division by zero"));
      if (isUnsignedInt) return b.CreateUDiv(x, b.CreateSelect(isZero, llvm::ConstantInt::get(y->getType(), 1), y));
      llvm::Value* isMinusOne = b.CreateICmpEQ(y, minusOne);
      llvm::Value* safe = b.CreateSelect(b.CreateOr(isZero, isMinusOne), llvm::ConstantInt::get(y->getType(), 1), y);
      llvm::Value* q = b.CreateSDiv(x, safe);
      return b.CreateSelect(isMinusOne, b.CreateSub(zero, x), b.CreateSelect(isZero, zero, q));
    }
    case OpKind::Max: return b.CreateSelect(isUnsignedInt ? b.CreateICmpULT(x, y) : b.CreateICmpSLT(x, y), y, x);
    case OpKind::Min: return b.CreateSelect(isUnsignedInt ? b.CreateICmpULT(y, x) : b.CreateICmpSLT(y, x), y, x);
    case OpKind::Pow: return intPow(e, op, x, y);
    default: break;
  }
  internalError(__FILE__, __LINE__, "not a binary int op: " + std::string(op.name()));
}

// Ordered float predicates (NaN compares false) except `ne`, which is true for NaN; unsigned
// predicates for unsigned dtypes.
llvm::Value* compare(ElementEmitter& e, OpKind kind, llvm::Value* x, llvm::Value* y, DType t) {
  using P = llvm::CmpInst::Predicate;
  struct Predicates {
    P floats, signedInts, unsignedInts;
  };
  Predicates p;
  switch (kind) {
    case OpKind::Eq: p = {P::FCMP_OEQ, P::ICMP_EQ, P::ICMP_EQ}; break;
    case OpKind::Ne: p = {P::FCMP_UNE, P::ICMP_NE, P::ICMP_NE}; break;
    case OpKind::Lt: p = {P::FCMP_OLT, P::ICMP_SLT, P::ICMP_ULT}; break;
    case OpKind::Le: p = {P::FCMP_OLE, P::ICMP_SLE, P::ICMP_ULE}; break;
    case OpKind::Gt: p = {P::FCMP_OGT, P::ICMP_SGT, P::ICMP_UGT}; break;
    case OpKind::Ge: p = {P::FCMP_OGE, P::ICMP_SGE, P::ICMP_UGE}; break;
    default: internalError(__FILE__, __LINE__, "not a comparison");
  }
  return e.b.CreateCmp(isFloat(t) ? p.floats : isUnsigned(t) ? p.unsignedInts : p.signedInts, x, y);
}

bool isComparison(OpKind k) {
  return k == OpKind::Eq || k == OpKind::Ne || k == OpKind::Lt || k == OpKind::Le || k == OpKind::Gt ||
         k == OpKind::Ge;
}

// The exponent of a float pow when it is a constant 2, 3 or 4 (every element), else 0.
int smallIntegerExponent(const Value* exponent) {
  const Op* def = exponent->definingOp();
  if (!def || def->kind() != OpKind::Constant) return 0;
  const Tensor& t = def->findAttr("value")->getDense();
  if (t.numElements() == 0 || !isSplat(t)) return 0;
  double n = t.getDouble(0);
  return n == 2 || n == 3 || n == 4 ? static_cast<int>(n) : 0;
}

// x^n for n = 2, 3, 4 as products in double rounded once to x's type: x^2 is exact in double and
// x^3, x^4 round once, so f32/f16/bf16 results are the interpreter's (std::pow in double, then
// rounded), special values included. libm's vector powf takes a scalar path for every negative
// x (GPT-2's tanh-gelu cubes its activations: 10 ns an element). f64 keeps pow but for x^2.
llvm::Value* smallPower(ElementEmitter& e, llvm::Value* x, int n, DType t) {
  auto& b = e.b;
  if (t == DType::F64 && n != 2) return nullptr;
  llvm::Value* d = e.toDouble(x);
  llvm::Value* square = b.CreateFMul(d, d);
  llvm::Value* power = n == 2 ? square : n == 3 ? b.CreateFMul(square, d) : b.CreateFMul(square, square);
  return e.fromDouble(power, t);
}

llvm::Value* binary(ElementEmitter& e, const Op& op, const Index& index) {
  auto& b = e.b;
  const Shape& out = op.result()->type().shape;
  const Value* a = op.operand(0);
  const Value* c = op.operand(1);
  llvm::Value* x = e.emit(a, e.broadcastIndex(index, a->type().shape, out));
  llvm::Value* y = e.emit(c, e.broadcastIndex(index, c->type().shape, out));
  DType t = a->type().dtype;
  if (t == DType::Bool) {
    if (op.kind() == OpKind::And) return b.CreateAnd(x, y);
    if (op.kind() == OpKind::Or) return b.CreateOr(x, y);
    return b.CreateXor(x, y);
  }
  if (isComparison(op.kind())) return compare(e, op.kind(), x, y, t);
  if (isInt(t)) return binaryInt(e, op, x, y);
  if (int n = op.kind() == OpKind::Pow ? smallIntegerExponent(c) : 0)
    if (llvm::Value* power = smallPower(e, x, n, t)) return power;
  return binaryFloat(e, op.kind(), x, y);
}

// float -> int: truncation toward zero in double, NaN -> 0, saturating at the bounds that
// truncateToInt (ir/tensor.cpp) uses; int -> int wraps; num -> bool is != 0 (NaN is true); int
// or bool -> f16/bf16/f32 converts to float, -> f64 to double; float -> float through double.
llvm::Value* cast(ElementEmitter& e, const Op& op, const Index& index) {
  auto& b = e.b;
  DType from = op.operand(0)->type().dtype, to = op.result()->type().dtype;
  llvm::Value* x = e.emit(op.operand(0), index);
  llvm::Type* target = e.computeType(to);
  if (from == to) return x;
  if (to == DType::Bool) return isFloat(from) ? b.CreateFCmpUNE(x, fconst(x, 0)) : b.CreateICmpNE(x, llvm::ConstantInt::get(x->getType(), 0));
  if (from == DType::Bool) return isFloat(to) ? b.CreateUIToFP(x, target) : b.CreateZExt(x, target);
  if (isUnsigned(from)) return isFloat(to) ? b.CreateUIToFP(x, target) : b.CreateZExtOrTrunc(x, target);
  if (isInt(from)) return isFloat(to) ? b.CreateSIToFP(x, target) : b.CreateSExtOrTrunc(x, target);
  if (isFloat(to)) return to == DType::F64 ? e.toDouble(x) : b.CreateFPTrunc(e.toDouble(x), target);
  IntRange range = intRange(to);
  llvm::Value* d = e.toDouble(x);
  llvm::Value* clamped = b.CreateSelect(b.CreateFCmpOLE(d, fconst(d, range.lo)), fconst(d, range.lo),
                                        b.CreateSelect(b.CreateFCmpOGE(d, fconst(d, range.hi)), fconst(d, range.hi), d));
  clamped = b.CreateSelect(b.CreateFCmpUNO(d, d), fconst(d, 0), clamped);
  return isUnsigned(to) ? b.CreateFPToUI(clamped, target) : b.CreateFPToSI(clamped, target);
}

// A splat is an immediate; other literals are a private constant array named after the kernel.
// The planner keeps constant data (ir/constant_data.h) out of kernels, so such arrays are small
// tables, except in a fusion written by hand in .kiln text.
llvm::Value* constantOp(ElementEmitter& e, const Op& op, const Index& index) {
  const Tensor& t = op.attr("value").getDense();
  DType dtype = t.dtype();
  const auto* bytes = static_cast<const uint8_t*>(t.data());
  if (isSplat(t)) {
    if (t.numElements() == 0) return llvm::Constant::getNullValue(e.computeType(dtype));
    if (isFloat(dtype)) return e.constant(dtype, t.getDouble(0));
    if (dtype == DType::Bool) return e.b.getInt1(t.getBool(0));
    return e.intConstant(dtype, t.getInt(0));
  }
  llvm::Type* storage = e.storageType(dtype);
  llvm::StringRef raw(reinterpret_cast<const char*>(bytes), t.byteSize());
  auto* init = llvm::ConstantDataArray::getRaw(raw, static_cast<uint64_t>(t.numElements()), storage);
  auto* global = new llvm::GlobalVariable(e.module(), init->getType(), /*isConstant=*/true,
                                          llvm::GlobalValue::PrivateLinkage, init, e.dataName("literal"));
  global->setUnnamedAddr(llvm::GlobalValue::UnnamedAddr::Global);
  global->setAlignment(llvm::Align(16));
  llvm::Value* ptr = e.b.CreateInBoundsGEP(storage, global, e.linearize(index, t.shape()));
  return e.fromStorage(e.b.CreateLoad(storage, ptr), dtype);
}

// The operand itself, raising "<what> out of range [min, max)" (at the op's location) where it
// is not in [min, max).
llvm::Value* checkRange(ElementEmitter& e, const Op& op, const Index& index) {
  auto& b = e.b;
  DType t = op.operand(0)->type().dtype;
  llvm::Value* x = e.emit(op.operand(0), index);
  llvm::Value* v = e.toI64(x, t);
  int64_t min = op.intAttr("min"), max = op.intAttr("max");
  llvm::Value* bad = b.CreateOr(b.CreateICmpSLT(v, e.i64(min)), b.CreateICmpSGE(v, e.i64(max)));
  // An unsigned value above INT64_MAX reads as negative: past any max.
  if (isUnsigned(t)) bad = b.CreateOr(bad, b.CreateICmpSLT(v, e.i64(0)));
  e.raiseIf(bad, e.addError(op, op.attr("what").getString() + " out of range [" + std::to_string(min) + ", " +
                                    std::to_string(max) + ")"));
  return x;
}

llvm::Value* iota(ElementEmitter& e, const Op& op, const Index& index) {
  const TensorType& type = op.result()->type();
  int64_t axis = op.intAttr("axis");
  if (axis < 0) axis += type.rank();
  llvm::Value* i = index[static_cast<size_t>(axis)];
  if (isInt(type.dtype)) return e.b.CreateTrunc(i, e.computeType(type.dtype));
  return e.fromDouble(e.b.CreateSIToFP(i, e.b.getDoubleTy()), type.dtype);  // via double, like setDouble
}

// (x - mean[c]) / sqrt(var[c] + epsilon) * scale[c] + bias[c] in double, c = index[1].
llvm::Value* batchNorm(ElementEmitter& e, const Op& op, const Index& index) {
  auto& b = e.b;
  Index channel{index[1]};
  auto at = [&](size_t i) { return e.toDouble(e.emit(op.operand(i), i == 0 ? index : channel)); };
  llvm::Value* x = at(0);
  llvm::Value* var = b.CreateFAdd(at(4), llvm::ConstantFP::get(b.getDoubleTy(), op.floatAttr("epsilon")));
  llvm::Value* y = b.CreateFDiv(b.CreateFSub(x, at(3)), e.math(MathFn::Sqrt, {var}));
  return e.fromDouble(b.CreateFAdd(b.CreateFMul(y, at(1)), at(2)), op.result()->type().dtype);
}

}  // namespace

llvm::Value* emitElementwise(ElementEmitter& e, const Op& op, const Index& index) {
  auto& b = e.b;
  switch (op.kind()) {
    case OpKind::Select: {
      const Shape& out = op.result()->type().shape;
      auto operand = [&](size_t i) {
        return e.emit(op.operand(i), e.broadcastIndex(index, op.operand(i)->type().shape, out));
      };
      llvm::Value* cond = operand(0);
      llvm::Value* x = operand(1);
      return b.CreateSelect(cond, x, operand(2));
    }
    case OpKind::Cast: return cast(e, op, index);
    case OpKind::CheckRange: return checkRange(e, op, index);
    case OpKind::Constant: return constantOp(e, op, index);
    case OpKind::Iota: return iota(e, op, index);
    case OpKind::BatchNorm: return batchNorm(e, op, index);
    case OpKind::AllReduce: return e.emit(op.operand(0), index);  // one replica: the identity
    case OpKind::Transfer: return e.emit(op.operand(0), index);   // one device: the identity
    case OpKind::Not: return b.CreateNot(e.emit(op.operand(0), index));
    default: break;
  }
  if (op.numOperands() == 2) return binary(e, op, index);
  llvm::Value* x = e.emit(op.operand(0), index);
  if (x->getType()->isIntegerTy()) {  // neg and abs; -INT_MIN wraps to INT_MIN
    llvm::Value* negated = b.CreateSub(llvm::ConstantInt::get(x->getType(), 0), x);
    if (op.kind() == OpKind::Neg) return negated;
    if (isUnsigned(op.operand(0)->type().dtype)) return x;  // abs of an unsigned int
    return b.CreateSelect(b.CreateICmpSLT(x, llvm::ConstantInt::get(x->getType(), 0)), negated, x);
  }
  return unaryFloat(e, op, x);
}

}  // namespace kiln::codegen
