// Rounding to PTX's float formats (float_format.h). Works on magnitudes in long double, whose 64-bit
// significand holds every f64 value and every 64-bit integer exactly, so one rounding is done once.
#include "gpusim/exec/float_format.h"

#include <cfloat>

namespace gpusim {

namespace {
using ptx::Rounding;

// Whether rounding the magnitude of a value of sign `negative` goes away from zero on a tie-free
// remainder, for the directed modes.
bool roundsUp(Rounding mode, bool negative) {
  return (mode == Rounding::Rp && !negative) || (mode == Rounding::Rm && negative);
}

long double roundMagnitude(long double n, Rounding mode, bool negative) {
  long double floor = std::floor(n);
  long double rest = n - floor;
  if (rest == 0) return floor;
  switch (mode) {
    case Rounding::Rz: return floor;
    case Rounding::Rm:
    case Rounding::Rp: return roundsUp(mode, negative) ? floor + 1 : floor;
    default:
      if (rest > 0.5L) return floor + 1;
      if (rest < 0.5L) return floor;
      return std::fmod(floor, 2.0L) == 0 ? floor : floor + 1;  // ties to even
  }
}
}  // namespace

uint64_t roundToFormat(long double v, FloatFormat f, Rounding mode, bool flushSubnormal) {
  const int bias = (1 << (f.exponentBits - 1)) - 1;
  const int emin = 1 - bias, emax = bias;
  const uint64_t signBit = uint64_t{1} << (f.exponentBits + f.fractionBits);
  const uint64_t expMask = ((uint64_t{1} << f.exponentBits) - 1) << f.fractionBits;
  const uint64_t maxFinite = expMask - (uint64_t{1} << f.fractionBits) + ((uint64_t{1} << f.fractionBits) - 1);
  // A GPU's canonical NaN for the 16-bit formats is 0x7FFF (PTX; an H200's cvt.rn.bf16.f32 of a NaN
  // gave 0x7FFF where x86 rounding keeps the f32 payload, 0x7FC0); f32 and f64 stay the quiet NaN.
  if (std::isnan(v)) {
    if (f.exponentBits + f.fractionBits == 15) return expMask | ((uint64_t{1} << f.fractionBits) - 1);
    return expMask | (uint64_t{1} << (f.fractionBits - 1));
  }
  bool negative = std::signbit(v);
  uint64_t sign = negative ? signBit : 0;
  long double a = std::fabs(v);
  if (std::isinf(a)) return sign | expMask;
  if (a == 0) return sign;
  int e2;
  std::frexp(a, &e2);
  int exponent = e2 - 1;  // a in [2^exponent, 2^(exponent+1))
  int quantumExp = (exponent < emin ? emin : exponent) - f.fractionBits;
  long double n = roundMagnitude(std::ldexp(a, -quantumExp), mode, negative);
  long double r = std::ldexp(n, quantumExp);
  if (r >= std::ldexp(1.0L, emax + 1)) {
    bool toInfinity = mode == Rounding::Rn || mode == Rounding::None || roundsUp(mode, negative);
    return sign | (toInfinity ? expMask : maxFinite);
  }
  if (r == 0) return sign;
  std::frexp(r, &e2);
  exponent = e2 - 1;
  if (exponent < emin) {  // subnormal: the significand is the count of quanta
    if (flushSubnormal) return sign;
    return sign | static_cast<uint64_t>(std::ldexp(r, -(emin - f.fractionBits)));
  }
  uint64_t significand = static_cast<uint64_t>(std::ldexp(r, f.fractionBits - exponent));
  uint64_t fraction = significand & ((uint64_t{1} << f.fractionBits) - 1);
  return sign | (static_cast<uint64_t>(exponent + bias) << f.fractionBits) | fraction;
}

long double fromFormat(uint64_t b, FloatFormat f) {
  const int bias = (1 << (f.exponentBits - 1)) - 1;
  const uint64_t fractionMask = (uint64_t{1} << f.fractionBits) - 1;
  bool negative = (b >> (f.exponentBits + f.fractionBits)) & 1;
  int e = static_cast<int>((b >> f.fractionBits) & ((uint64_t{1} << f.exponentBits) - 1));
  uint64_t fraction = b & fractionMask;
  long double v;
  if (e == (1 << f.exponentBits) - 1) {
    v = fraction ? static_cast<long double>(NAN) : static_cast<long double>(INFINITY);
  } else if (e == 0) {
    v = std::ldexp(static_cast<long double>(fraction), 1 - bias - f.fractionBits);
  } else {
    v = std::ldexp(static_cast<long double>(fraction | (fractionMask + 1)), e - bias - f.fractionBits);
  }
  return negative ? -v : v;
}

long double roundIntegral(long double v, Rounding mode) {
  if (std::isnan(v) || std::isinf(v)) return v;
  switch (mode) {
    case Rounding::Rni: return std::nearbyint(v);  // the host's default mode is ties-to-even
    case Rounding::Rmi: return std::floor(v);
    case Rounding::Rpi: return std::ceil(v);
    default: return std::trunc(v);
  }
}

}  // namespace gpusim
