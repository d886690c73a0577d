// Elementwise kernels: unary math, binary arithmetic, comparisons and logic with NumPy
// broadcasting, select, cast and iota.
#include <cmath>
#include <limits>
#include <numbers>
#include <string>

#include "ir/interp/kernels.h"

namespace kiln::interp {

namespace {

// f16, bf16 and f32 compute in float, f64 in double; setDouble then rounds to the storage type.
bool computesInDouble(DType t) { return t == DType::F64; }

// Stable for large |x|: exp never overflows.
template <class T>
T sigmoid(T x) {
  if (x >= T(0)) return T(1) / (T(1) + std::exp(-x));
  T e = std::exp(x);  // NaN lands here and stays NaN
  return e / (T(1) + e);
}

template <class T>
T unaryFloat(OpKind kind, T x, bool tanhGelu) {
  switch (kind) {
    case OpKind::Neg: return -x;
    case OpKind::Abs: return std::abs(x);
    case OpKind::Exp: return std::exp(x);
    case OpKind::Log: return std::log(x);
    case OpKind::Sqrt: return std::sqrt(x);
    case OpKind::Rsqrt: return T(1) / std::sqrt(x);
    case OpKind::Reciprocal: return T(1) / x;
    case OpKind::Tanh: return std::tanh(x);
    case OpKind::Sigmoid: return sigmoid(x);
    case OpKind::Erf: return std::erf(x);
    case OpKind::Sin: return std::sin(x);
    case OpKind::Cos: return std::cos(x);
    case OpKind::Floor: return std::floor(x);
    case OpKind::Ceil: return std::ceil(x);
    case OpKind::Sign:  // NaN stays NaN, +-0 gives 0
      if (std::isnan(x)) return x;
      return x > T(0) ? T(1) : x < T(0) ? T(-1) : T(0);
    case OpKind::Log1p: return std::log1p(x);
    case OpKind::Asin: return std::asin(x);
    case OpKind::Acos: return std::acos(x);
    case OpKind::Atan: return std::atan(x);
    case OpKind::Relu: return std::isnan(x) || x > T(0) ? x : T(0);  // max(x, 0), NaN propagated
    case OpKind::Silu: return x * sigmoid(x);
    case OpKind::Gelu:
      if (tanhGelu) {
        const T k = std::sqrt(T(2) / std::numbers::pi_v<T>);
        return T(0.5) * x * (T(1) + std::tanh(k * (x + T(0.044715) * x * x * x)));
      }
      return T(0.5) * x * (T(1) + std::erf(x / std::numbers::sqrt2_v<T>));
    default: break;
  }
  internalError(__FILE__, __LINE__, "not a unary float op: " + std::string(opInfo(kind).name));
}

template <class T>
T binaryFloat(OpKind kind, T a, T b) {
  switch (kind) {
    case OpKind::Add: return a + b;
    case OpKind::Sub: return a - b;
    case OpKind::Mul: return a * b;
    case OpKind::Div: return a / b;
    case OpKind::Max:  // NaN propagates, like np.maximum
      if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
      return a < b ? b : a;
    case OpKind::Min:
      if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
      return b < a ? b : a;
    case OpKind::Pow: return std::pow(a, b);
    default: break;
  }
  internalError(__FILE__, __LINE__, "not a binary float op: " + std::string(opInfo(kind).name));
}

// Integer power by repeated squaring, modulo 2^64 (the caller wraps to the dtype's width).
// A negative exponent gives the truncated value of 1/base^-e: 1 for base 1, +-1 for base -1 by
// parity, 0 for |base| >= 2; base 0 is a run-time error (it would divide by zero) that the
// caller reports before getting here.
int64_t intPow(int64_t base, int64_t exponent) {
  if (exponent < 0) {
    if (base == 1) return 1;
    if (base == -1) return (exponent % 2 == 0) ? 1 : -1;
    return 0;
  }
  int64_t result = 1;
  while (exponent > 0) {
    if (exponent & 1) result = wrappingMul(result, base);
    base = wrappingMul(base, base);
    exponent >>= 1;
  }
  return result;
}

// Unsigned power by repeated squaring, modulo 2^64.
uint64_t uintPow(uint64_t base, uint64_t exponent) {
  uint64_t result = 1;
  for (; exponent > 0; exponent >>= 1, base *= base)
    if (exponent & 1) result *= base;
  return result;
}

// Integer arithmetic, modulo 2^64; division by zero was rejected by the caller. Unsigned dtypes
// (whose elements getInt zero-extends, u64 as its bits) divide, compare and raise as uint64.
int64_t binaryInt(OpKind kind, int64_t a, int64_t b, bool isUnsigned) {
  auto ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
  switch (kind) {
    case OpKind::Add: return wrappingAdd(a, b);
    case OpKind::Sub: return wrappingSub(a, b);
    case OpKind::Mul: return wrappingMul(a, b);
    case OpKind::Div:  // truncates toward zero; INT64_MIN / -1 wraps to INT64_MIN
      if (isUnsigned) return static_cast<int64_t>(ua / ub);
      if (b == -1) return wrappingSub(0, a);
      return a / b;
    case OpKind::Max: return (isUnsigned ? ua < ub : a < b) ? b : a;
    case OpKind::Min: return (isUnsigned ? ub < ua : b < a) ? b : a;
    case OpKind::Pow: return isUnsigned ? static_cast<int64_t>(uintPow(ua, ub)) : intPow(a, b);
    // Shifts as NumPy's: the amount is read unsigned, and one of the dtype's width or more shifts
    // every bit out (0, or -1 for a negative signed int shifted right). Shifting the widened
    // value and wrapping to the dtype on store gives exactly that for every width.
    case OpKind::ShiftLeft: return ub < 64 ? static_cast<int64_t>(ua << ub) : 0;
    case OpKind::ShiftRight:  // logical for unsigned dtypes, arithmetic for signed ones
      if (isUnsigned) return ub < 64 ? static_cast<int64_t>(ua >> ub) : 0;
      return ub < 64 ? a >> ub : (a < 0 ? -1 : 0);
    default: break;
  }
  internalError(__FILE__, __LINE__, "not a binary int op: " + std::string(opInfo(kind).name));
}

template <class T>
bool compare(OpKind kind, T a, T b) {
  switch (kind) {
    case OpKind::Eq: return a == b;
    case OpKind::Ne: return a != b;
    case OpKind::Lt: return a < b;
    case OpKind::Le: return a <= b;
    case OpKind::Gt: return a > b;
    case OpKind::Ge: return a >= b;
    default: break;
  }
  internalError(__FILE__, __LINE__, "not a comparison: " + std::string(opInfo(kind).name));
}

bool logic(OpKind kind, bool a, bool b) {
  switch (kind) {
    case OpKind::And: return a && b;
    case OpKind::Or: return a || b;
    case OpKind::Xor: return a != b;
    default: break;
  }
  internalError(__FILE__, __LINE__, "not a logic op: " + std::string(opInfo(kind).name));
}

bool isComparison(OpKind k) {
  return k == OpKind::Eq || k == OpKind::Ne || k == OpKind::Lt || k == OpKind::Le || k == OpKind::Gt ||
         k == OpKind::Ge;
}

}  // namespace

Tensor unary(const Op& op, const Tensor& x) {
  Tensor out(op.result()->type());
  OpKind kind = op.kind();
  int64_t n = x.numElements();
  DType t = x.dtype();
  if (kind == OpKind::Not) {
    for (int64_t i = 0; i < n; ++i) out.setInt(i, x.getBool(i) ? 0 : 1);
  } else if (isInt(t)) {  // only neg and abs accept ints; abs of an unsigned int is itself
    for (int64_t i = 0; i < n; ++i) {
      int64_t v = x.getInt(i);
      bool negate = kind == OpKind::Neg || (kind == OpKind::Abs && v < 0 && !isUnsigned(t));
      out.setInt(i, negate ? wrappingSub(0, v) : v);  // -INT_MIN wraps to INT_MIN
    }
  } else {
    bool tanhGelu = kind == OpKind::Gelu && op.attr("approximate").getString() == "tanh";
    for (int64_t i = 0; i < n; ++i) {
      if (computesInDouble(t)) out.setDouble(i, unaryFloat<double>(kind, x.getDouble(i), tanhGelu));
      else out.setDouble(i, unaryFloat<float>(kind, static_cast<float>(x.getDouble(i)), tanhGelu));
    }
  }
  return out;
}

Expected<Tensor> binary(const Op& op, const Tensor& a, const Tensor& b) {
  Tensor out(op.result()->type());
  OpKind kind = op.kind();
  std::vector<int64_t> ia = broadcastIndices(a.shape(), out.shape());
  std::vector<int64_t> ib = broadcastIndices(b.shape(), out.shape());
  int64_t n = out.numElements();
  DType t = a.dtype();

  if (t == DType::Bool) {  // and, or, xor
    for (int64_t i = 0; i < n; ++i) out.setInt(i, logic(kind, a.getBool(ia[i]), b.getBool(ib[i])));
    return out;
  }
  if (isComparison(kind)) {
    for (int64_t i = 0; i < n; ++i) {
      bool r = isUnsigned(t) ? compare(kind, static_cast<uint64_t>(a.getInt(ia[i])), static_cast<uint64_t>(b.getInt(ib[i])))
               : isInt(t)      ? compare(kind, a.getInt(ia[i]), b.getInt(ib[i]))
                               : compare(kind, a.getDouble(ia[i]), b.getDouble(ib[i]));  // exact for every float dtype
      out.setInt(i, r);
    }
    return out;
  }
  if (isInt(t)) {
    for (int64_t i = 0; i < n; ++i) {
      int64_t x = a.getInt(ia[i]), y = b.getInt(ib[i]);
      if (kind == OpKind::Div && y == 0) return Error("integer division by zero");
      if (kind == OpKind::Pow && x == 0 && y < 0 && !isUnsigned(t))
        return Error("0 raised to the negative integer power " + std::to_string(y));
      out.setInt(i, binaryInt(kind, x, y, isUnsigned(t)));
    }
    return out;
  }
  for (int64_t i = 0; i < n; ++i) {
    if (computesInDouble(t)) {
      out.setDouble(i, binaryFloat<double>(kind, a.getDouble(ia[i]), b.getDouble(ib[i])));
    } else {
      float x = static_cast<float>(a.getDouble(ia[i])), y = static_cast<float>(b.getDouble(ib[i]));
      out.setDouble(i, binaryFloat<float>(kind, x, y));
    }
  }
  return out;
}

Tensor select(const Op& op, const Tensor& cond, const Tensor& a, const Tensor& b) {
  Tensor out(op.result()->type());
  std::vector<int64_t> ic = broadcastIndices(cond.shape(), out.shape());
  std::vector<int64_t> ia = broadcastIndices(a.shape(), out.shape());
  std::vector<int64_t> ib = broadcastIndices(b.shape(), out.shape());
  for (int64_t i = 0; i < out.numElements(); ++i) {
    if (cond.getBool(ic[i])) copyElement(out, i, a, ia[i]);
    else copyElement(out, i, b, ib[i]);
  }
  return out;
}

// An int element converted with one rounding: to double for f64, else to float (f16/bf16 then
// round again on store, as the f32 compute of narrow floats does).
static double intToFloat(int64_t v, DType from, DType to) {
  if (to == DType::F64) return intAsDouble(v, from);
  return from == DType::U64 ? static_cast<float>(static_cast<uint64_t>(v)) : static_cast<float>(v);
}

Expected<Tensor> checkRange(const Op& op, const Tensor& x) {
  int64_t min = op.intAttr("min"), max = op.intAttr("max");
  for (int64_t i = 0; i < x.numElements(); ++i) {
    int64_t v = x.getInt(i);
    bool hugeUnsigned = isUnsigned(x.dtype()) && v < 0;  // above INT64_MAX: past any max
    if (hugeUnsigned || v < min || v >= max)
      return Error(op.attr("what").getString() + " " + std::to_string(v) + " at index " + std::to_string(i) +
                   " is outside [" + std::to_string(min) + ", " + std::to_string(max) + ")");
  }
  return x;
}

// float -> int truncates toward zero (NaN gives 0, out of range saturates); int -> int wraps;
// bool -> num gives 0/1; num -> bool tests != 0 (NaN is true, as in NumPy); int -> f16/bf16/f32
// converts through float, like the f32 compute of narrow floats.
Tensor cast(const Op& op, const Tensor& x) {
  Tensor out(op.result()->type());
  DType from = x.dtype(), to = out.dtype();
  for (int64_t i = 0; i < x.numElements(); ++i) {
    if (isFloat(from) && isInt(to)) out.setInt(i, truncateToInt(x.getDouble(i), to));
    else if (!isFloat(from) && isFloat(to)) out.setDouble(i, intToFloat(x.getInt(i), from, to));
    else if (!isFloat(from)) out.setInt(i, x.getInt(i));  // int or bool source: exact, wraps into ints
    else out.setDouble(i, x.getDouble(i));                // float -> float or bool
  }
  return out;
}

Tensor iota(const Op& op) {
  Tensor out(op.result()->type());
  int axis = static_cast<int>(op.intAttr("axis"));
  if (axis < 0) axis += out.rank();
  AxisSplit s = splitAt(out.shape(), axis);
  for (int64_t i = 0; i < out.numElements(); ++i) {
    int64_t index = (i / s.inner) % s.n;
    if (isInt(out.dtype())) out.setInt(i, index);
    else out.setDouble(i, static_cast<double>(index));
  }
  return out;
}

}  // namespace kiln::interp
