// runtime/narrow_floats.h: the conversions the CPU's 16-bit matmuls run between (F16C's where the
// CPU has it) give kiln's own conversions' bits (include/kiln/types.h): every f16 and bf16 value
// widened, and f32 values rounded (ties both ways, subnormal results, overflow, infinities, NaN),
// over lengths that leave a scalar tail and lengths the OpenMP team shares.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "kiln/types.h"
#include "runtime/narrow_floats.h"

namespace kiln {
namespace {

uint32_t bitsOf(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

// Every 16-bit pattern, repeated to `length` values.
std::vector<uint16_t> allPatterns(size_t length) {
  std::vector<uint16_t> v(length);
  for (size_t i = 0; i < length; ++i) v[i] = static_cast<uint16_t>(i);
  return v;
}

// f32 values around every f16 and bf16 rounding boundary: each pattern's value, the ties between
// neighbours and the values just beside them, plus the specials.
std::vector<float> roundingCases() {
  std::vector<float> v;
  for (uint32_t h = 0; h < 0x7c00; ++h) {
    float lo = halfToFloat(static_cast<uint16_t>(h)), hi = halfToFloat(static_cast<uint16_t>(h + 1));
    float tie = lo + (hi - lo) / 2;
    for (float x : {lo, tie, std::nextafter(tie, 0.0f), std::nextafter(tie, INFINITY)}) v.push_back(x), v.push_back(-x);
  }
  for (uint32_t b = 0; b < (uint32_t{1} << 16); b += 7) {
    uint32_t bits = (b << 16) | 0x8000;  // bf16 ties, and beside them
    for (uint32_t d : {0u, 1u, 0xffffffffu}) {
      float x;
      uint32_t t = bits + d;
      std::memcpy(&x, &t, 4);
      v.push_back(x);
    }
  }
  for (float x : {65504.0f, 65520.0f, 65519.99f, 1e6f, std::numeric_limits<float>::infinity(),
                  -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN(),
                  std::numeric_limits<float>::denorm_min(), 1e-8f, -3e-8f})
    v.push_back(x);
  return v;
}

TEST(NarrowFloats, WideningGivesKilnsBits) {
  for (size_t length : {size_t{65536}, size_t{65536 * 3 + 5}, size_t{13}}) {
    std::vector<uint16_t> in = allPatterns(length);
    std::vector<float> half(length), bf(length);
    widenHalf(in.data(), half.data(), length);
    widenBFloat16(in.data(), bf.data(), length);
    for (size_t i = 0; i < length; ++i) {
      float want = halfToFloat(in[i]);
      if (std::isnan(want)) EXPECT_TRUE(std::isnan(half[i])) << "f16 " << in[i];
      else ASSERT_EQ(bitsOf(half[i]), bitsOf(want)) << "f16 pattern " << in[i];
      ASSERT_EQ(bitsOf(bf[i]), uint32_t{in[i]} << 16) << "bf16 pattern " << in[i];
    }
  }
}

TEST(NarrowFloats, RoundingGivesKilnsBits) {
  std::vector<float> in = roundingCases();
  std::vector<uint16_t> half(in.size()), bf(in.size());
  roundToHalf(in.data(), half.data(), in.size());
  roundToBFloat16(in.data(), bf.data(), in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    if (std::isnan(in[i])) {
      EXPECT_TRUE(std::isnan(halfToFloat(half[i])));
      continue;
    }
    ASSERT_EQ(half[i], floatToHalf(in[i])) << "f16 of " << in[i];
    ASSERT_EQ(bf[i], floatToBFloat16(in[i])) << "bf16 of " << in[i];
  }
}

}  // namespace
}  // namespace kiln
