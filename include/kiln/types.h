// Element types, shapes and tensor types: the static type of every value in the IR.
// Part of kiln's public API (docs/api.md).
#pragma once

#include <bit>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

// Signed ints are two's complement; unsigned ints (u8..u64) compare, divide and convert as
// unsigned. Every int wraps modulo 2^bits.
enum class DType : uint8_t { Bool, I8, I16, I32, I64, U8, U16, U32, U64, F16, BF16, F32, F64 };

inline constexpr DType kAllDTypes[] = {DType::Bool, DType::I8,  DType::I16, DType::I32, DType::I64,
                                       DType::U8,   DType::U16, DType::U32, DType::U64, DType::F16,
                                       DType::BF16, DType::F32, DType::F64};

std::string_view dtypeName(DType t);
std::optional<DType> parseDType(std::string_view name);
size_t dtypeSize(DType t);
inline bool isFloat(DType t) { return t == DType::F16 || t == DType::BF16 || t == DType::F32 || t == DType::F64; }
inline bool isUnsigned(DType t) { return t == DType::U8 || t == DType::U16 || t == DType::U32 || t == DType::U64; }
inline bool isSignedInt(DType t) { return t == DType::I8 || t == DType::I16 || t == DType::I32 || t == DType::I64; }
inline bool isInt(DType t) { return isSignedInt(t) || isUnsigned(t); }
inline bool isNum(DType t) { return isFloat(t) || isInt(t); }
// Bits of an int or bool dtype (bool: 1).
int intBits(DType t);

// Static dimensions, outermost first. An empty shape is a scalar.
using Shape = std::vector<int64_t>;

// The most elements a tensor type may have, and the largest dimension: far beyond any real
// tensor, and small enough that shape arithmetic on valid types never overflows int64.
inline constexpr int64_t kMaxElements = int64_t{1} << 48;
// True if every dimension and the element count lie in [0, kMaxElements].
bool shapeWithinLimits(const Shape& s);

int64_t numElements(const Shape& s);
std::string shapeStr(const Shape& s);  // "[64,128]"
// Row-major strides in elements.
std::vector<int64_t> rowMajorStrides(const Shape& s);

struct TensorType {
  DType dtype = DType::F32;
  Shape shape;

  int rank() const { return static_cast<int>(shape.size()); }
  int64_t numElements() const { return kiln::numElements(shape); }
  size_t byteSize() const { return static_cast<size_t>(numElements()) * dtypeSize(dtype); }
  std::string str() const;  // "f32[64,128]", the text format's spelling
  bool operator==(const TensorType&) const = default;
};

// Half-precision storage formats; arithmetic happens in float.
uint16_t floatToHalf(float f);   // round to nearest even
float halfToFloat(uint16_t h);
// Inline, so that loops over buffers of them (the interpreter's, oneDNN's bf16 conversions)
// vectorise: called out of line, rounding the 512^3 bf16 product's f32 result took 0.2 ms.
inline uint16_t floatToBFloat16(float f) {  // round to nearest even, NaN stays NaN
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + rounding) >> 16);
}
inline float bfloat16ToFloat(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

}  // namespace kiln
