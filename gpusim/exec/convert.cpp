// cvt (every pair of integer and float types, with PTX's rounding, saturation and NaN rules) and
// cvta (generic <-> state-space addresses) (executor.h). Built with -frounding-math.
#include <cmath>
#include <limits>

#include "gpusim/exec/executor.h"
#include "gpusim/exec/float_format.h"

namespace gpusim {

using ptx::Rounding;
using ptx::Type;

namespace {

bool isFloatType(Type t) { return t == Type::F16 || t == Type::BF16 || t == Type::F32 || t == Type::F64; }
bool isSignedType(Type t) { return t == Type::S8 || t == Type::S16 || t == Type::S32 || t == Type::S64; }
int bitsOf(Type t) { return static_cast<int>(ptx::typeBytes(t)) * 8; }

FloatFormat formatOf(Type t) {
  switch (t) {
    case Type::F16: return kHalf;
    case Type::BF16: return kBFloat;
    case Type::F32: return kSingle;
    default: return kDouble;
  }
}

long double floatIn(uint64_t b, Type t, bool ftz) {
  switch (t) {
    case Type::F32: {
      float v = f32(b);
      return ftz ? flush(v) : v;
    }
    case Type::F64: return f64(b);
    default: return fromFormat(b & 0xFFFF, formatOf(t));
  }
}

long double integerIn(uint64_t b, Type t) {
  int bits = bitsOf(t);
  if (isSignedType(t)) {
    int64_t v = bits >= 64 ? static_cast<int64_t>(b) : static_cast<int64_t>(b << (64 - bits)) >> (64 - bits);
    return static_cast<long double>(v);
  }
  return static_cast<long double>(bits >= 64 ? b : b & ((1ull << bits) - 1));
}

// A float to an integer type: rounded by `mode`, NaN to 0, saturated to the type's range (PTX's
// float-to-integer conversions always saturate).
uint64_t floatToInteger(long double v, Type to, Rounding mode) {
  if (std::isnan(v)) return 0;
  long double r = roundIntegral(v, mode);
  int bits = bitsOf(to);
  if (isSignedType(to)) {
    long double lo = -std::ldexp(1.0L, bits - 1), hi = std::ldexp(1.0L, bits - 1) - 1;
    int64_t i = r <= lo ? static_cast<int64_t>(lo) : r >= hi ? static_cast<int64_t>(hi) : static_cast<int64_t>(r);
    return bits >= 64 ? static_cast<uint64_t>(i) : static_cast<uint64_t>(i) & ((1ull << bits) - 1);
  }
  long double hi = std::ldexp(1.0L, bits) - 1;
  if (r <= 0) return 0;
  if (r >= hi) return bits >= 64 ? ~0ull : (1ull << bits) - 1;
  return static_cast<uint64_t>(r);
}

// An integer to an integer type: truncation, or with .sat clamping to the destination's range.
uint64_t integerToInteger(uint64_t b, Type from, Type to, bool saturate) {
  long double v = integerIn(b, from);
  int bits = bitsOf(to);
  uint64_t mask = bits >= 64 ? ~0ull : (1ull << bits) - 1;
  if (saturate) {
    long double lo = isSignedType(to) ? -std::ldexp(1.0L, bits - 1) : 0;
    long double hi = isSignedType(to) ? std::ldexp(1.0L, bits - 1) - 1 : std::ldexp(1.0L, bits) - 1;
    if (v < lo) v = lo;
    if (v > hi) v = hi;
    return (v < 0 ? static_cast<uint64_t>(static_cast<int64_t>(v)) : static_cast<uint64_t>(v)) & mask;
  }
  // Widening sign- or zero-extends by the source type; narrowing keeps the low bits.
  int fromBits = bitsOf(from);
  uint64_t value = b;
  if (fromBits < 64) {
    value &= (1ull << fromBits) - 1;
    if (isSignedType(from) && ((value >> (fromBits - 1)) & 1)) value |= ~((1ull << fromBits) - 1);
  }
  return value & mask;
}

}  // namespace

bool Executor::execConvert(Warp& warp, Frame& frame, const ptx::Instr& in, uint32_t exec) {
  const auto& ops = in.ops;
  if (in.op == ptx::Op::Cvta) {
    // cvta.to.<space>: generic -> the space's own address; cvta.<space>: the reverse. Global
    // addresses are the same in both; shared and local ones live in windows of the generic space.
    uint64_t window = in.space == ptx::Space::Shared ? kSharedWindow : in.space == ptx::Space::Local ? kLocalWindow : 0;
    bool toSpace = in.flags & ptx::kToSpace;
    forLanes(exec, [&](int lane) {
      uint64_t a = read(frame, ops[1], lane);
      write(frame, ops[0], lane, toSpace ? a - window : a + window, in.type);
    });
    return true;
  }

  const Type to = in.type, from = in.type2;
  const bool ftz = in.flags & ptx::kFtz;
  const bool sat = in.flags & ptx::kSat;
  forLanes(exec, [&](int lane) {
    uint64_t b = read(frame, ops[1], lane);
    uint64_t r;
    if (isFloatType(to)) {
      long double v = isFloatType(from) ? floatIn(b, from, ftz) : integerIn(b, from);
      Rounding mode = in.rounding;
      if (mode == Rounding::Rni || mode == Rounding::Rzi || mode == Rounding::Rmi || mode == Rounding::Rpi) {
        v = roundIntegral(v, mode);  // cvt.rni.f32.f32: round to an integral value in the same format
        mode = Rounding::Rn;
      }
      if (sat) v = std::isnan(v) ? 0.0L : std::min(1.0L, std::max(0.0L, v));
      bool flushOut = ftz && to == Type::F32;
      // The common case, f64 or a 32-bit integer to f32 under RN, is one host conversion (exact
      // double first, so rounded once); 64-bit integers and the other modes round from long double.
      bool exactInDouble = isFloatType(from) || ptx::typeBytes(from) <= 4;
      bool nearest = mode == Rounding::None || mode == Rounding::Rn;
      if (to == Type::F32 && nearest && !flushOut && exactInDouble)
        r = bits(static_cast<float>(static_cast<double>(v)));
      else if (to == Type::F64 && exactInDouble)  // exact: no rounding at all
        r = bits(static_cast<double>(v));
      else
        r = roundToFormat(v, formatOf(to), mode, flushOut);
    } else if (isFloatType(from)) {
      r = floatToInteger(floatIn(b, from, ftz), to, in.rounding);
    } else {
      r = integerToInteger(b, from, to, sat);
    }
    write(frame, ops[0], lane, r, to);
  });
  return true;
}

}  // namespace gpusim
