// DTypes, shapes, f16/bf16 conversions, tensors and attribute printing.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ir/attr.h"
#include "ir/tensor.h"
#include "ir/types.h"

namespace kiln {
namespace {

TEST(DType, NamesSizesAndClasses) {
  for (DType t : kAllDTypes) EXPECT_EQ(parseDType(dtypeName(t)), t);
  EXPECT_FALSE(parseDType("f31").has_value());
  EXPECT_EQ(dtypeSize(DType::BF16), 2u);
  EXPECT_EQ(dtypeSize(DType::I64), 8u);
  EXPECT_TRUE(isFloat(DType::BF16));
  EXPECT_TRUE(isInt(DType::I8));
  EXPECT_FALSE(isNum(DType::Bool));
  EXPECT_EQ(dtypeSize(DType::I16), 2u);
  EXPECT_EQ(dtypeSize(DType::U64), 8u);
  EXPECT_TRUE(isUnsigned(DType::U16));
  EXPECT_TRUE(isInt(DType::U32));
  EXPECT_FALSE(isSignedInt(DType::U8));
  EXPECT_TRUE(isSignedInt(DType::I16));
  EXPECT_EQ(intBits(DType::U32), 32);
}

TEST(TensorType, SpellingAndCounts) {
  TensorType t{DType::F32, {64, 128}};
  EXPECT_EQ(t.str(), "f32[64,128]");
  EXPECT_EQ(t.numElements(), 8192);
  EXPECT_EQ(t.byteSize(), 32768u);
  EXPECT_EQ((TensorType{DType::Bool, {}}).str(), "bool[]");
  EXPECT_EQ((TensorType{DType::I64, {}}).numElements(), 1);
  EXPECT_EQ((TensorType{DType::F16, {3, 0}}).numElements(), 0);
  EXPECT_EQ(rowMajorStrides({2, 3, 4}), (std::vector<int64_t>{12, 4, 1}));
}

TEST(Half, ExactValuesAndRounding) {
  EXPECT_EQ(floatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(floatToHalf(-2.0f), 0xc000);
  EXPECT_EQ(floatToHalf(65504.0f), 0x7bff);       // largest finite half
  EXPECT_EQ(floatToHalf(65520.0f), 0x7c00);       // rounds up to inf
  EXPECT_EQ(floatToHalf(1.0f + 0x1p-11f), 0x3c00);  // tie: to even (1.0)
  EXPECT_EQ(floatToHalf(1.0f + 0x1p-10f + 0x1p-11f), 0x3c02);  // tie: to even (up)
  EXPECT_EQ(floatToHalf(0x1p-24f), 0x0001);       // smallest subnormal
  EXPECT_EQ(floatToHalf(0x1p-26f), 0x0000);       // below half of it: zero
  EXPECT_EQ(halfToFloat(0x0001), 0x1p-24f);
  EXPECT_EQ(halfToFloat(0x3555), 0.333251953125f);
  EXPECT_TRUE(std::isnan(halfToFloat(floatToHalf(NAN))));
  EXPECT_EQ(halfToFloat(floatToHalf(-INFINITY)), -INFINITY);
  // Every half survives a round trip through float.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    float f = halfToFloat(static_cast<uint16_t>(h));
    if (!std::isnan(f)) {
      EXPECT_EQ(floatToHalf(f), h);
    }
  }
}

TEST(BFloat16, ExactValuesAndRounding) {
  EXPECT_EQ(floatToBFloat16(1.0f), 0x3f80);
  EXPECT_EQ(bfloat16ToFloat(0x3f80), 1.0f);
  EXPECT_EQ(floatToBFloat16(1.0f + 0x1p-8f), 0x3f80);  // tie: to even
  EXPECT_EQ(floatToBFloat16(1.0f + 0x1p-7f + 0x1p-8f), 0x3f82);
  EXPECT_TRUE(std::isnan(bfloat16ToFloat(floatToBFloat16(NAN))));
  EXPECT_EQ(floatToBFloat16(3.0e38f), 0x7f62);  // 0x7f61b1e6: the dropped half is above the midpoint
}

TEST(Tensor, ConversionsPerDType) {
  Tensor i8({DType::I8, {2}});
  i8.setInt(0, 200);  // wraps
  i8.setDouble(1, -300.7);  // saturates after truncation
  EXPECT_EQ(i8.getInt(0), -56);
  EXPECT_EQ(i8.getInt(1), -128);

  Tensor i64({DType::I64, {1}});
  i64.setInt(0, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(i64.getInt(0), std::numeric_limits<int64_t>::max());

  Tensor f16({DType::F16, {1}});
  f16.setDouble(0, 0.1);
  EXPECT_EQ(f16.getDouble(0), 0.0999755859375);

  Tensor b({DType::Bool, {2}});
  b.setDouble(0, 0.5);
  b.setInt(1, 0);
  EXPECT_TRUE(b.getBool(0));
  EXPECT_FALSE(b.getBool(1));

  EXPECT_EQ(truncateToInt(NAN, DType::I32), 0);
  EXPECT_EQ(truncateToInt(-2.9, DType::I32), -2);
  EXPECT_EQ(truncateToInt(1e30, DType::I64), 9223372036854774784);
  EXPECT_EQ(wrapToInt(0x1'0000'0005, DType::I32), 5);
}

TEST(Tensor, UnsignedAndI16Conversions) {
  Tensor u8({DType::U8, {3}});
  u8.setInt(0, -1);      // wraps to 255
  u8.setDouble(1, -3.5);  // saturates at 0
  u8.setDouble(2, 300);   // saturates at 255
  EXPECT_EQ(u8.getInt(0), 255);
  EXPECT_EQ(u8.getInt(1), 0);
  EXPECT_EQ(u8.getInt(2), 255);
  EXPECT_EQ(u8.getDouble(0), 255.0);

  Tensor i16({DType::I16, {2}});
  i16.setInt(0, 40000);  // wraps
  i16.setDouble(1, -1e9);
  EXPECT_EQ(i16.getInt(0), 40000 - 65536);
  EXPECT_EQ(i16.getInt(1), -32768);

  // u64 keeps all 64 bits: getInt gives the bits, getDouble and formatInt read them unsigned.
  Tensor u64({DType::U64, {2}});
  u64.setInt(0, -1);
  u64.setDouble(1, 1e19);  // above 2^63: exact in double
  EXPECT_EQ(u64.getInt(0), -1);
  EXPECT_EQ(u64.getDouble(0), 18446744073709551616.0);
  EXPECT_EQ(formatInt(u64.getInt(0), DType::U64), "18446744073709551615");
  EXPECT_EQ(formatInt(u64.getInt(1), DType::U64), "10000000000000000000");
  // Saturates at the largest double below 2^64.
  EXPECT_EQ(static_cast<uint64_t>(truncateToInt(1e30, DType::U64)), 18446744073709549568u);
  EXPECT_EQ(truncateToInt(-5.0, DType::U32), 0);
  EXPECT_EQ(wrapToInt(-1, DType::U16), 65535);
}

TEST(Attr, Spelling) {
  EXPECT_EQ(Attr(int64_t{-3}).str(), "-3");
  EXPECT_EQ(Attr(1.0).str(), "1.0");
  EXPECT_EQ(Attr(1e-5).str(), "1e-05");
  EXPECT_EQ(Attr(0.1).str(), "0.1");
  EXPECT_EQ(Attr(-INFINITY).str(), "-inf");
  EXPECT_EQ(Attr(true).str(), "true");
  EXPECT_EQ(Attr("tan\"h").str(), "\"tan\\\"h\"");
  EXPECT_EQ(Attr(DType::BF16).str(), "bf16");
  EXPECT_EQ(Attr::ints({1, -2}).str(), "[1, -2]");
  EXPECT_EQ(Attr::ints({1, -2}).getIntList(), (std::vector<int64_t>{1, -2}));
  EXPECT_FALSE(Attr(Attr::List{Attr(1.5)}).getIntList().has_value());
}

TEST(Attr, DenseLiterals) {
  Tensor m({DType::I32, {2, 2}});
  for (int i = 0; i < 4; ++i) m.setInt(i, i + 1);
  EXPECT_EQ(formatDense(m), "[[1, 2], [3, 4]]");
  Tensor splat({DType::F32, {3}});
  for (int i = 0; i < 3; ++i) splat.setDouble(i, 0.1);
  EXPECT_EQ(formatDense(splat), "0.1");  // shortest spelling of the f32 value, not of the double
  EXPECT_EQ(formatDense(Tensor::scalar(DType::F16, 1.0)), "1.0");
  EXPECT_EQ(formatDense(Tensor::scalar(DType::Bool, 1.0)), "true");
  EXPECT_EQ(formatDense(Tensor({DType::F32, {0}})), "[]");
}

}  // namespace
}  // namespace kiln
