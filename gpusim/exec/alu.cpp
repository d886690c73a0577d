// Arithmetic, logic, comparison and move instructions (executor.h). Integer operands are read at
// the instruction type's width from untyped 64-bit register slots; float operands are computed in
// the host's float or double (whose IEEE operations PTX's .rn forms match), under the instruction's
// directed rounding mode when it has one (this file is built with -frounding-math).
#include <bit>
#include <cfenv>
#include <cmath>
#include <cstring>
#include <limits>

#include "gpusim/exec/executor.h"
#include "gpusim/exec/float_format.h"

namespace gpusim {

using ptx::Op;
using ptx::Rounding;
using ptx::Type;

namespace {

int widthOf(Type t) { return static_cast<int>(ptx::typeBytes(t)) * 8; }
bool isSigned(Type t) { return t == Type::S8 || t == Type::S16 || t == Type::S32 || t == Type::S64; }
bool isFloat(Type t) {
  return t == Type::F16 || t == Type::F16x2 || t == Type::BF16 || t == Type::BF16x2 || t == Type::F32 || t == Type::F64;
}
uint64_t maskOf(int bits) { return bits >= 64 ? ~0ull : (1ull << bits) - 1; }
int64_t signExtend(uint64_t v, int bits) {
  return bits >= 64 ? static_cast<int64_t>(v) : static_cast<int64_t>(v << (64 - bits)) >> (64 - bits);
}

// Sets the host's rounding mode for a directed PTX rounding for as long as it lives.
class RoundingScope {
 public:
  explicit RoundingScope(Rounding r) {
    int mode = r == Rounding::Rz ? FE_TOWARDZERO : r == Rounding::Rm ? FE_DOWNWARD : r == Rounding::Rp ? FE_UPWARD : -1;
    if (mode >= 0) {
      saved_ = std::fegetround();
      std::fesetround(mode);
    }
  }
  ~RoundingScope() {
    if (saved_ >= 0) std::fesetround(saved_);
  }

 private:
  int saved_ = -1;
};

// A float lane value of any PTX float type, computed on as double (f16/bf16/f32) or double (f64).
double floatValue(uint64_t b, Type t, bool ftz) {
  switch (t) {
    case Type::F32: {
      float v = f32(b);
      return ftz ? flush(v) : v;
    }
    case Type::F64: return f64(b);
    case Type::F16: case Type::F16x2: return half(b);
    case Type::BF16: case Type::BF16x2: return bfloat(b);
    default: return 0;
  }
}

// `v` (already rounded to f32/f64 by the host where t is F32/F64) as bits of type t.
uint64_t floatBits(double v, Type t, bool ftz, Rounding r = Rounding::Rn) {
  switch (t) {
    case Type::F32: {
      float f = static_cast<float>(v);
      return bits(ftz ? flush(f) : f);
    }
    case Type::F64: return bits(v);
    case Type::F16: case Type::F16x2: return roundToFormat(v, kHalf, r);
    case Type::BF16: case Type::BF16x2: return roundToFormat(v, kBFloat, r);
    default: return 0;
  }
}

// PTX min/max on floats: a NaN operand loses (unless .NaN), and -0 is less than +0.
double floatMinMax(double a, double b, bool isMax, bool propagateNaN) {
  if (std::isnan(a) || std::isnan(b)) {
    if (propagateNaN || (std::isnan(a) && std::isnan(b))) return std::numeric_limits<double>::quiet_NaN();
    return std::isnan(a) ? b : a;
  }
  if (a == b) {  // equal, or +0 and -0
    bool aNeg = std::signbit(a);
    return isMax ? (aNeg ? b : a) : (aNeg ? a : b);
  }
  return isMax ? (a > b ? a : b) : (a < b ? a : b);
}

bool compareFloat(ptx::Cmp c, double a, double b) {
  bool unordered = std::isnan(a) || std::isnan(b);
  using ptx::Cmp;
  switch (c) {
    case Cmp::Eq: return !unordered && a == b;
    case Cmp::Ne: return !unordered && a != b;
    case Cmp::Lt: return !unordered && a < b;
    case Cmp::Le: return !unordered && a <= b;
    case Cmp::Gt: return !unordered && a > b;
    case Cmp::Ge: return !unordered && a >= b;
    case Cmp::Equ: return unordered || a == b;
    case Cmp::Neu: return unordered || a != b;
    case Cmp::Ltu: return unordered || a < b;
    case Cmp::Leu: return unordered || a <= b;
    case Cmp::Gtu: return unordered || a > b;
    case Cmp::Geu: return unordered || a >= b;
    case Cmp::Num: return !unordered;
    case Cmp::Nan: return unordered;
    default: return false;
  }
}

bool compareInt(ptx::Cmp c, uint64_t a, uint64_t b, int bits, bool isSignedType) {
  using ptx::Cmp;
  int64_t sa = signExtend(a, bits), sb = signExtend(b, bits);
  uint64_t ua = a & maskOf(bits), ub = b & maskOf(bits);
  switch (c) {
    case Cmp::Eq: return ua == ub;
    case Cmp::Ne: return ua != ub;
    case Cmp::Lt: return isSignedType ? sa < sb : ua < ub;
    case Cmp::Le: return isSignedType ? sa <= sb : ua <= ub;
    case Cmp::Gt: return isSignedType ? sa > sb : ua > ub;
    case Cmp::Ge: return isSignedType ? sa >= sb : ua >= ub;
    case Cmp::Lo: return ua < ub;
    case Cmp::Ls: return ua <= ub;
    case Cmp::Hi: return ua > ub;
    case Cmp::Hs: return ua >= ub;
    default: return false;
  }
}

// The high half of a full product of two `bits`-wide integers.
uint64_t mulHigh(uint64_t a, uint64_t b, int bits, bool isSignedType) {
  if (bits == 64) {
    if (isSignedType) return static_cast<uint64_t>((static_cast<__int128>(static_cast<int64_t>(a)) * static_cast<int64_t>(b)) >> 64);
    return static_cast<uint64_t>((static_cast<unsigned __int128>(a) * b) >> 64);
  }
  if (isSignedType) return static_cast<uint64_t>((signExtend(a, bits) * signExtend(b, bits)) >> bits) & maskOf(bits);
  return (((a & maskOf(bits)) * (b & maskOf(bits))) >> bits) & maskOf(bits);
}

// The full (2 x bits wide) product of two `bits`-wide integers, bits <= 32.
uint64_t mulWide(uint64_t a, uint64_t b, int bits, bool isSignedType) {
  if (isSignedType) return static_cast<uint64_t>(signExtend(a, bits) * signExtend(b, bits));
  return (a & maskOf(bits)) * (b & maskOf(bits));
}

double approxUnary(Op op, double x) {
  switch (op) {
    case Op::Rcp: return 1.0 / x;
    case Op::Sqrt: return std::sqrt(x);
    case Op::Rsqrt: return 1.0 / std::sqrt(x);
    case Op::Ex2: return std::exp2(x);
    case Op::Lg2: return std::log2(x);
    case Op::Sin: return std::sin(x);
    case Op::Cos: return std::cos(x);
    case Op::Tanh: return std::tanh(x);
    default: return x;
  }
}

}  // namespace

bool Executor::fastFloat(const ptx::Instr& in, Warp& warp, Frame& frame, uint32_t exec) {
  const Type t = in.type;
  if ((t != Type::F32 && t != Type::F64) || (in.flags & (ptx::kSat | ptx::kApprox | ptx::kFull)) ||
      (in.rounding != Rounding::None && in.rounding != Rounding::Rn))
    return false;
  (void)warp;
  const bool ftz = t == Type::F32 && (in.flags & ptx::kFtz);
  const ptx::Operand* src = in.ops + in.ndst;
  auto run = [&](auto zero, auto op) {
    using T = decltype(zero);
    auto value = [&](const ptx::Operand& o, int lane) {
      uint64_t b = read(frame, o, lane);
      if constexpr (sizeof(T) == 4) {
        float v = f32(b);
        return ftz ? flush(v) : v;
      } else {
        return f64(b);
      }
    };
    forLanes(exec, [&](int lane) {
      T a = value(src[0], lane), b = in.nsrc > 1 ? value(src[1], lane) : T(0), c = in.nsrc > 2 ? value(src[2], lane) : T(0);
      T r = op(a, b, c);
      if constexpr (sizeof(T) == 4) {
        if (ftz) r = flush(r);
      }
      write(frame, in.ops[0], lane, bits(r), t);
    });
    return true;
  };
  auto dispatch = [&](auto zero) {
    using T = decltype(zero);
    switch (in.op) {
      case Op::Add: return run(zero, [](T a, T b, T) { return a + b; });
      case Op::Sub: return run(zero, [](T a, T b, T) { return a - b; });
      case Op::Mul: return run(zero, [](T a, T b, T) { return a * b; });
      case Op::Fma:
      case Op::Mad: return run(zero, [](T a, T b, T c) { return std::fma(a, b, c); });
      case Op::Div: return run(zero, [](T a, T b, T) { return a / b; });
      default: return false;
    }
  };
  return t == Type::F32 ? dispatch(0.0f) : dispatch(0.0);
}

bool Executor::execAlu(Warp& warp, Frame& frame, const ptx::Instr& in, uint32_t exec) {
  const Type t = in.type;
  const int bits = widthOf(t);
  const bool ftz = in.flags & ptx::kFtz;
  const auto& ops = in.ops;
  auto src = [&](int i, int lane) { return read(frame, ops[in.ndst + i], lane); };
  auto dst = [&](int lane, uint64_t v) { write(frame, ops[0], lane, v, t); };

  // The common float arithmetic (f32/f64 add, sub, mul, fma, div.rn, round to nearest) computed
  // in the type itself, one loop per operation: the slow path below handles everything else.
  if (fastFloat(in, warp, frame, exec)) return true;

  // Floats: each lane (and each half of a packed .f16x2/.bf16x2) computed in double and rounded once.
  if (isFloat(t) && in.op != Op::Mov && in.op != Op::Selp && in.op != Op::And && in.op != Op::Or &&
      in.op != Op::Xor && in.op != Op::Not && in.op != Op::Setp && in.op != Op::Testp) {
    RoundingScope scope(in.rounding);
    const bool packed = t == Type::F16x2 || t == Type::BF16x2;
    const bool isF32 = t == Type::F32, isF64 = t == Type::F64;
    auto compute = [&](double a, double b, double c, bool& ok) -> double {
      switch (in.op) {
        case Op::Add: return isF32 ? double(float(a) + float(b)) : a + b;
        case Op::Sub: return isF32 ? double(float(a) - float(b)) : a - b;
        case Op::Mul: return isF32 ? double(float(a) * float(b)) : a * b;
        case Op::Fma:
        case Op::Mad: return isF32 ? double(std::fma(float(a), float(b), float(c))) : std::fma(a, b, c);
        case Op::Div:
          if (isF32 && (in.flags & (ptx::kApprox | ptx::kFull)) && std::fabs(b) > 0x1p126 && !std::isinf(b))
            return std::isinf(a) ? std::numeric_limits<double>::quiet_NaN() : 0.0;  // PTX ISA: div.approx/full
          return isF32 ? double(float(a) / float(b)) : a / b;
        case Op::Abs: return std::fabs(a);
        case Op::Neg: return -a;
        case Op::Min: return floatMinMax(a, b, false, in.flags & ptx::kNaN);
        case Op::Max: return floatMinMax(a, b, true, in.flags & ptx::kNaN);
        case Op::Copysign: return std::copysign(b, a);
        case Op::Rcp: case Op::Sqrt: case Op::Rsqrt: case Op::Ex2: case Op::Lg2: case Op::Sin: case Op::Cos:
        case Op::Tanh:
          if (isF32 && !(in.flags & ptx::kApprox)) {  // .rn: IEEE, in float
            float fa = float(a);
            if (in.op == Op::Rcp) return double(1.0f / fa);
            if (in.op == Op::Sqrt) return double(std::sqrt(fa));
          }
          if (isF64 && !(in.flags & ptx::kApprox)) return approxUnary(in.op, a);
          // Approximations return the correctly rounded value, within every bound the PTX ISA states.
          return isF32 ? double(float(approxUnary(in.op, a))) : approxUnary(in.op, a);
        default: ok = false; return 0;
      }
    };
    bool ok = true;
    bool satClamp = in.flags & ptx::kSat;
    forLanes(exec, [&](int lane) {
      uint64_t ra = in.nsrc > 0 ? src(0, lane) : 0, rb = in.nsrc > 1 ? src(1, lane) : 0, rc = in.nsrc > 2 ? src(2, lane) : 0;
      uint64_t out = 0;
      for (int h = 0; h < (packed ? 2 : 1); ++h) {
        int shift = 16 * h;
        double a = floatValue(ra >> shift, t, ftz), b = floatValue(rb >> shift, t, ftz), c = floatValue(rc >> shift, t, ftz);
        double r = compute(a, b, c, ok);
        if (satClamp) r = std::isnan(r) ? 0.0 : std::min(1.0, std::max(0.0, r));
        if (in.op == Op::Neg && !std::isnan(a)) r = -a;  // sign flip only (also of NaN payload)
        uint64_t rbits = floatBits(r, t, ftz, in.rounding);
        if (in.op == Op::Neg && std::isnan(a)) rbits = (ra >> shift) ^ (isF64 ? (1ull << 63) : isF32 ? (1ull << 31) : 0x8000);
        if (in.op == Op::Abs && std::isnan(a)) rbits = (ra >> shift) & (isF64 ? ~(1ull << 63) : isF32 ? 0x7FFFFFFFull : 0x7FFF);
        out |= (rbits & (packed ? 0xFFFFull : ~0ull)) << shift;
      }
      dst(lane, out);
    });
    if (!ok) return fail(Fault::IllegalInstruction, warp, in, __builtin_ctz(exec | 1), "unsupported float instruction");
    return true;
  }

  const bool sgn = isSigned(t);
  const uint64_t m = maskOf(bits);
  switch (in.op) {
    case Op::Mov:
      forLanes(exec, [&](int lane) {
        const ptx::Operand& d = ops[0];
        const ptx::Operand& s = ops[1];
        if (d.kind == ptx::Operand::Kind::Vec) {  // mov.b32 {%h0, %h1}, %r: unpack
          uint64_t v = read(frame, s, lane);
          int part = bits / d.count;
          for (int i = 0; i < d.count; ++i)
            if (d.vec[i] != ptx::Operand::kNoReg) frame.reg(d.vec[i], lane) = (v >> (part * i)) & maskOf(part);
        } else if (s.kind == ptx::Operand::Kind::Vec) {  // mov.b32 %r, {%h0, %h1}: pack
          int part = bits / s.count;
          uint64_t v = 0;
          for (int i = 0; i < s.count; ++i) v |= (frame.reg(s.vec[i], lane) & maskOf(part)) << (part * i);
          dst(lane, v);
        } else {
          dst(lane, read(frame, s, lane));
        }
      });
      return true;
    case Op::Add: case Op::Sub: case Op::Addc: case Op::Subc: {
      bool sub = in.op == Op::Sub || in.op == Op::Subc;
      bool carryIn = in.op == Op::Addc || in.op == Op::Subc;
      uint32_t carryOut = warp.carry;
      forLanes(exec, [&](int lane) {
        uint64_t a = src(0, lane) & m, b = src(1, lane) & m;
        uint64_t cin = carryIn ? ((warp.carry >> lane) & 1) : 0;
        uint64_t r;
        if (sub) {
          // subtraction with borrow: a - b - borrow; the carry flag holds NOT borrow as on hardware? PTX
          // defines CC.CF for sub.cc as the borrow-out and subc as a - (b + CC.CF).
          unsigned __int128 full = static_cast<unsigned __int128>(a) - b - cin;
          r = static_cast<uint64_t>(full) & m;
          bool borrow = static_cast<unsigned __int128>(b) + cin > a;
          if (in.flags & ptx::kCarryOut) carryOut = (carryOut & ~(1u << lane)) | (uint32_t(borrow) << lane);
        } else {
          unsigned __int128 full = static_cast<unsigned __int128>(a) + b + cin;
          r = static_cast<uint64_t>(full) & m;
          bool carry = (full >> bits) & 1;
          if (in.flags & ptx::kCarryOut) carryOut = (carryOut & ~(1u << lane)) | (uint32_t(carry) << lane);
        }
        if ((in.flags & ptx::kSat) && t == Type::S32) {
          int64_t s = sub ? int64_t(int32_t(a)) - int32_t(b) : int64_t(int32_t(a)) + int32_t(b);
          s = std::max<int64_t>(INT32_MIN, std::min<int64_t>(INT32_MAX, s));
          r = uint64_t(uint32_t(int32_t(s)));
        }
        dst(lane, r);
      });
      if (in.flags & ptx::kCarryOut) warp.carry = carryOut;
      return true;
    }
    case Op::Mul: case Op::Mad: case Op::Madc: {
      bool add = in.op != Op::Mul;
      bool carryIn = in.op == Op::Madc;
      uint32_t carryOut = warp.carry;
      forLanes(exec, [&](int lane) {
        uint64_t a = src(0, lane), b = src(1, lane);
        uint64_t p;
        Type dt = t;
        if (in.flags & ptx::kWide) {
          p = mulWide(a, b, bits, sgn);
          dt = bits == 16 ? (sgn ? Type::S32 : Type::U32) : (sgn ? Type::S64 : Type::U64);
        } else if (in.flags & ptx::kHi) {
          p = mulHigh(a, b, bits, sgn);
        } else {
          p = (a * b) & m;
        }
        if (add) {
          int rbits = (in.flags & ptx::kWide) ? 2 * bits : bits;
          uint64_t rm = maskOf(rbits);
          uint64_t c = src(2, lane) & rm;
          uint64_t cin = carryIn ? ((warp.carry >> lane) & 1) : 0;
          unsigned __int128 full = static_cast<unsigned __int128>(p & rm) + c + cin;
          if (in.flags & ptx::kCarryOut) carryOut = (carryOut & ~(1u << lane)) | (uint32_t((full >> rbits) & 1) << lane);
          p = static_cast<uint64_t>(full) & rm;
        }
        write(frame, ops[0], lane, p, dt);
      });
      if (in.flags & ptx::kCarryOut) warp.carry = carryOut;
      return true;
    }
    case Op::Div: case Op::Rem:
      forLanes(exec, [&](int lane) {
        uint64_t a = src(0, lane) & m, b = src(1, lane) & m;
        uint64_t r;
        if (b == 0) {
          r = in.op == Op::Div ? m : a;  // hardware's unspecified result: all ones / the dividend
        } else if (sgn) {
          int64_t sa = signExtend(a, bits), sb = signExtend(b, bits);
          if (sb == -1 && sa == signExtend(1ull << (bits - 1), bits)) r = in.op == Op::Div ? a : 0;  // overflow
          else r = static_cast<uint64_t>(in.op == Op::Div ? sa / sb : sa % sb) & m;
        } else {
          r = in.op == Op::Div ? a / b : a % b;
        }
        dst(lane, r);
      });
      return true;
    case Op::Abs: case Op::Neg:
      forLanes(exec, [&](int lane) {
        int64_t v = signExtend(src(0, lane), bits);
        dst(lane, static_cast<uint64_t>(in.op == Op::Neg ? -v : (v < 0 ? -v : v)) & m);
      });
      return true;
    case Op::Min: case Op::Max:
      forLanes(exec, [&](int lane) {
        uint64_t a = src(0, lane), b = src(1, lane);
        bool aLess = sgn ? signExtend(a, bits) < signExtend(b, bits) : (a & m) < (b & m);
        bool pickA = (in.op == Op::Min) == aLess;
        dst(lane, (pickA ? a : b) & m);
      });
      return true;
    case Op::And: case Op::Or: case Op::Xor:
      forLanes(exec, [&](int lane) {
        uint64_t a = src(0, lane), b = src(1, lane);
        dst(lane, in.op == Op::And ? a & b : in.op == Op::Or ? a | b : a ^ b);
      });
      return true;
    case Op::Not:
      forLanes(exec, [&](int lane) { dst(lane, ~src(0, lane)); });
      return true;
    case Op::Cnot:
      forLanes(exec, [&](int lane) { dst(lane, (src(0, lane) & m) == 0 ? 1 : 0); });
      return true;
    case Op::Shl: case Op::Shr:
      forLanes(exec, [&](int lane) {
        uint64_t a = src(0, lane) & m;
        uint64_t n = src(1, lane) & 0xFFFFFFFFu;  // the amount is .u32; amounts past the width clamp
        uint64_t r;
        if (in.op == Op::Shl) r = n >= uint64_t(bits) ? 0 : (a << n);
        else if (sgn) r = static_cast<uint64_t>(signExtend(a, bits) >> std::min<uint64_t>(n, bits - 1));
        else r = n >= uint64_t(bits) ? 0 : (a >> n);
        dst(lane, r & m);
      });
      return true;
    case Op::Bfe:
      forLanes(exec, [&](int lane) {
        uint64_t a = src(0, lane) & m;
        uint32_t pos = src(1, lane) & 0xFF, len = src(2, lane) & 0xFF;
        uint64_t r = 0;
        bool signBit = false;
        if (sgn) {
          uint32_t top = std::min<uint32_t>(pos + len - 1, bits - 1);
          signBit = len == 0 ? false : ((a >> (pos >= uint32_t(bits) ? bits - 1 : top)) & 1);
        }
        for (int i = 0; i < bits; ++i) {
          bool bit = (uint32_t(i) < len && pos + i < uint32_t(bits)) ? ((a >> (pos + i)) & 1) : signBit;
          r |= uint64_t(bit) << i;
        }
        dst(lane, r);
      });
      return true;
    case Op::Bfi:
      forLanes(exec, [&](int lane) {
        uint64_t a = src(0, lane), b = src(1, lane) & m;
        uint32_t pos = src(2, lane) & 0xFF, len = src(3, lane) & 0xFF;
        uint64_t r = b;
        for (uint32_t i = 0; i < len && pos + i < uint32_t(bits); ++i)
          r = (r & ~(1ull << (pos + i))) | (((a >> i) & 1) << (pos + i));
        dst(lane, r);
      });
      return true;
    case Op::Clz:
      forLanes(exec, [&](int lane) {
        uint64_t a = src(0, lane) & m;
        dst(lane, a == 0 ? bits : std::countl_zero(a) - (64 - bits));
      });
      return true;
    case Op::Popc:
      forLanes(exec, [&](int lane) { write(frame, ops[0], lane, std::popcount(src(0, lane) & m), Type::U32); });
      return true;
    case Op::Brev:
      forLanes(exec, [&](int lane) {
        uint64_t a = src(0, lane), r = 0;
        for (int i = 0; i < bits; ++i) r |= ((a >> i) & 1) << (bits - 1 - i);
        dst(lane, r);
      });
      return true;
    case Op::Prmt:
      forLanes(exec, [&](int lane) {
        uint64_t a = src(0, lane) & 0xFFFFFFFFu, b = src(1, lane) & 0xFFFFFFFFu, c = src(2, lane);
        uint64_t bytes = a | (b << 32);
        uint32_t r = 0;
        for (int i = 0; i < 4; ++i) {
          uint32_t sel = (c >> (4 * i)) & 0xF;
          uint32_t byte = (bytes >> (8 * (sel & 7))) & 0xFF;
          if (sel & 8) byte = (byte & 0x80) ? 0xFF : 0;  // sign replicate
          r |= byte << (8 * i);
        }
        dst(lane, r);
      });
      return true;
    case Op::Setp: {
      forLanes(exec, [&](int lane) {
        uint64_t a = src(0, lane), b = src(1, lane);
        bool p = isFloat(t) ? [&] {
          if (t == Type::F16x2 || t == Type::BF16x2) return false;  // packed setp writes two predicates: below
          return compareFloat(in.cmp, floatValue(a, t, ftz), floatValue(b, t, ftz));
        }()
                            : compareInt(in.cmp, a, b, bits, sgn);
        bool p2 = false;
        if (t == Type::F16x2 || t == Type::BF16x2) {  // setp.lt.f16x2 p|q, a, b: p for the low halves
          p = compareFloat(in.cmp, floatValue(a, t, ftz), floatValue(b, t, ftz));
          p2 = compareFloat(in.cmp, floatValue(a >> 16, t, ftz), floatValue(b >> 16, t, ftz));
        }
        bool q = !p;
        if (in.boolOp != ptx::BoolOp::None) {
          bool c = src(2, lane) & 1;
          auto combine = [&](bool x) {
            return in.boolOp == ptx::BoolOp::And ? (x && c) : in.boolOp == ptx::BoolOp::Or ? (x || c) : (x != c);
          };
          q = combine(!p);
          p = combine(p);
        }
        write(frame, ops[0], lane, p, Type::Pred);
        if (in.ndst > 1) write(frame, ops[1], lane, (t == Type::F16x2 || t == Type::BF16x2) ? p2 : q, Type::Pred);
      });
      return true;
    }
    case Op::Selp:
      forLanes(exec, [&](int lane) { dst(lane, (src(2, lane) & 1) ? src(0, lane) : src(1, lane)); });
      return true;
    case Op::Slct:
      forLanes(exec, [&](int lane) {
        uint64_t c = src(2, lane);
        bool nonNegative = in.type2 == Type::F32 ? f32(c) >= 0.0f : static_cast<int32_t>(c) >= 0;
        dst(lane, nonNegative ? src(0, lane) : src(1, lane));
      });
      return true;
    case Op::Testp:
      return fail(Fault::IllegalInstruction, warp, in, __builtin_ctz(exec | 1), "testp is not supported by the simulator");
    default:
      return fail(Fault::IllegalInstruction, warp, in, __builtin_ctz(exec | 1),
                  std::string("instruction ") + ptx::opName(in.op) + ptx::typeName(t) + " is not supported by the simulator");
  }
}

}  // namespace gpusim
