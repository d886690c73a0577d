// Bit-level float formats the interpreter needs beyond the host's float and double: IEEE half,
// bfloat16, and rounding any value to f32/f16/bf16/f64 under a PTX rounding mode, with .ftz.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

#include "gpusim/ptx/module.h"

namespace gpusim {

inline float f32(uint64_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits)); }
inline double f64(uint64_t bits) { return std::bit_cast<double>(bits); }
inline uint64_t bits(float v) { return std::bit_cast<uint32_t>(v); }
inline uint64_t bits(double v) { return std::bit_cast<uint64_t>(v); }

// A float format: f16 (5, 10), bf16 (8, 7), f32 (8, 23), f64 (11, 52).
struct FloatFormat {
  int exponentBits;
  int fractionBits;
};
constexpr FloatFormat kHalf{5, 10}, kBFloat{8, 7}, kSingle{8, 23}, kDouble{11, 52};

// `v` rounded to `format` under `mode` (Rn, Rz, Rm, Rp; None means Rn), as that format's bits.
// NaN becomes the GPU's canonical NaN (0x7FFF for f16 and bf16, the quiet NaN for f32/f64); overflow goes to infinity or the largest finite
// value as IEEE directs for the mode. `flushSubnormal`: a subnormal result becomes signed zero.
uint64_t roundToFormat(long double v, FloatFormat format, ptx::Rounding mode, bool flushSubnormal = false);
// The value of `bits` in `format` (exact in long double for every format here).
long double fromFormat(uint64_t bits, FloatFormat format);

inline double half(uint64_t b) { return static_cast<double>(fromFormat(b & 0xFFFF, kHalf)); }
inline double bfloat(uint64_t b) { return static_cast<double>(fromFormat(b & 0xFFFF, kBFloat)); }

// .ftz on f32: a subnormal input or result becomes zero of the same sign.
inline float flush(float v) { return std::fpclassify(v) == FP_SUBNORMAL ? std::copysign(0.0f, v) : v; }

// An integral value of `v` under a PTX integer rounding (.rni/.rzi/.rmi/.rpi; None means rzi).
long double roundIntegral(long double v, ptx::Rounding mode);

}  // namespace gpusim
