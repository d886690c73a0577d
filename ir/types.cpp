// DType names and sizes, shape helpers, and the f16/bf16 conversions.
#include "ir/types.h"

#include <bit>
#include <cstring>

namespace kiln {

namespace {
struct DTypeInfo {
  DType type;
  std::string_view name;
  size_t size;
};
constexpr DTypeInfo kDTypeInfo[] = {
    {DType::Bool, "bool", 1}, {DType::I8, "i8", 1},   {DType::I16, "i16", 2},   {DType::I32, "i32", 4},
    {DType::I64, "i64", 8},   {DType::U8, "u8", 1},   {DType::U16, "u16", 2},   {DType::U32, "u32", 4},
    {DType::U64, "u64", 8},   {DType::F16, "f16", 2}, {DType::BF16, "bf16", 2}, {DType::F32, "f32", 4},
    {DType::F64, "f64", 8},
};
}  // namespace

std::string_view dtypeName(DType t) { return kDTypeInfo[static_cast<int>(t)].name; }
size_t dtypeSize(DType t) { return kDTypeInfo[static_cast<int>(t)].size; }
int intBits(DType t) { return t == DType::Bool ? 1 : static_cast<int>(dtypeSize(t)) * 8; }

std::optional<DType> parseDType(std::string_view name) {
  for (const auto& info : kDTypeInfo)
    if (info.name == name) return info.type;
  return std::nullopt;
}

int64_t numElements(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

bool shapeWithinLimits(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) {
    if (d < 0 || d > kMaxElements) return false;
    if (n != 0 && d > kMaxElements / n) return false;  // n * d > kMaxElements, without overflowing
    n *= d;
  }
  return true;
}

std::string shapeStr(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += ",";
    out += std::to_string(s[i]);
  }
  return out + "]";
}

std::vector<int64_t> rowMajorStrides(const Shape& s) {
  std::vector<int64_t> strides(s.size(), 1);
  for (int i = static_cast<int>(s.size()) - 2; i >= 0; --i) strides[i] = strides[i + 1] * s[i + 1];
  return strides;
}

std::string TensorType::str() const { return std::string(dtypeName(dtype)) + shapeStr(shape); }

uint16_t floatToHalf(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t exp = (x >> 23) & 0xffu;
  uint32_t mant = x & 0x7fffffu;
  if (exp == 0xff) return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0u));  // inf / NaN
  int32_t e = static_cast<int32_t>(exp) - 127 + 15;
  if (e >= 0x1f) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow to inf
  if (e <= 0) {
    // Subnormal half (or zero): shift the full mantissa into place, rounding to nearest even.
    if (e < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000u;
    uint32_t shift = static_cast<uint32_t>(14 - e);
    uint32_t half = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t midpoint = 1u << (shift - 1);
    if (rem > midpoint || (rem == midpoint && (half & 1))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = sign | (static_cast<uint32_t>(e) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1))) ++half;  // may carry into the exponent: correct
  return static_cast<uint16_t>(half);
}

float halfToFloat(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else if (exp != 0) {
    bits = sign | ((exp - 15 + 127) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else {
    // Subnormal: normalise.
    int e = -1;
    do {
      ++e;
      mant <<= 1;
    } while ((mant & 0x400u) == 0);
    bits = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
  }
  return std::bit_cast<float>(bits);
}

}  // namespace kiln
