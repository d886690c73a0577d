// Interpreter: the unsigned ints (u8, u16, u32, u64) and i16, the bit shifts, and asin/acos/atan.
// Unsigned values above the signed range are where unsigned and signed semantics differ, so every
// case puts values there. Expected values are worked out by hand (NumPy agrees).
#include <cmath>
#include <cstdint>
#include <numbers>

#include "interp_test_util.h"

namespace kiln {
namespace {

using test::closeValues;
using test::f32;
using test::f64;
using test::ints;
using test::intValues;
using test::run1;
using test::run1Error;
using test::sameValues;

using I = std::vector<int64_t>;
constexpr int64_t kU64Max = -1;  // the bits of 2^64 - 1, as getInt returns u64 elements
const int64_t kU64Top = static_cast<int64_t>(uint64_t{1} << 63);  // 2^63

TEST(InterpUnsigned, ArithmeticWrapsModuloTheWidth) {
  Tensor a = ints(DType::U8, {3}, {250, 0, 128}), b = ints(DType::U8, {3}, {10, 1, 128});
  EXPECT_EQ(intValues(run1(OpKind::Add, {a, b})), (I{4, 1, 0}));
  EXPECT_EQ(intValues(run1(OpKind::Sub, {a, b})), (I{240, 255, 0}));
  EXPECT_EQ(intValues(run1(OpKind::Mul, {a, b})), (I{196, 0, 0}));  // 2500 mod 256
  EXPECT_EQ(intValues(run1(OpKind::Neg, {a})), (I{6, 0, 128}));
  EXPECT_EQ(intValues(run1(OpKind::Abs, {a})), (I{250, 0, 128}));  // never negated
  Tensor u64 = ints(DType::U64, {2}, {kU64Max, kU64Top});
  EXPECT_EQ(intValues(run1(OpKind::Add, {u64, ints(DType::U64, {2}, {1, kU64Top})})), (I{0, 0}));
  EXPECT_EQ(intValues(run1(OpKind::Abs, {u64})), (I{kU64Max, kU64Top}));
}

TEST(InterpUnsigned, DivisionMaxMinAndComparisonsAreUnsigned) {
  Tensor a = ints(DType::U8, {3}, {200, 255, 7}), b = ints(DType::U8, {3}, {3, 16, 200});
  EXPECT_EQ(intValues(run1(OpKind::Div, {a, b})), (I{66, 15, 0}));
  EXPECT_EQ(intValues(run1(OpKind::Max, {a, b})), (I{200, 255, 200}));
  EXPECT_EQ(intValues(run1(OpKind::Min, {a, b})), (I{3, 16, 7}));
  EXPECT_EQ(intValues(run1(OpKind::Gt, {a, b})), (I{1, 1, 0}));
  Tensor big = ints(DType::U64, {3}, {kU64Max, kU64Top, 5}), small = ints(DType::U64, {3}, {2, 3, kU64Max});
  // (2^64 - 1) / 2 = 2^63 - 1; 2^63 / 3 = 3074457345618258602.
  EXPECT_EQ(intValues(run1(OpKind::Div, {big, small})), (I{INT64_MAX, 3074457345618258602, 0}));
  EXPECT_EQ(intValues(run1(OpKind::Lt, {big, small})), (I{0, 0, 1}));
  EXPECT_EQ(intValues(run1(OpKind::Max, {big, small})), (I{kU64Max, kU64Top, kU64Max}));
  EXPECT_EQ(run1Error(OpKind::Div, {a, ints(DType::U8, {3}, {1, 0, 1})}), "error: div: integer division by zero");
}

TEST(InterpUnsigned, PowUsesEveryExponentBit) {
  Tensor base = ints(DType::U16, {3}, {3, 2, 0}), exponent = ints(DType::U16, {3}, {11, 16, 0});
  EXPECT_EQ(intValues(run1(OpKind::Pow, {base, exponent})), (I{177147 % 65536, 0, 1}));
  // 3^(2^63) mod 2^64: the top exponent bit counts (a signed exponent would be negative).
  Tensor r = run1(OpKind::Pow, {ints(DType::U64, {1}, {3}), ints(DType::U64, {1}, {kU64Top})});
  uint64_t want = 3;
  for (int i = 0; i < 63; ++i) want *= want;
  EXPECT_EQ(static_cast<uint64_t>(r.getInt(0)), want);
}

TEST(InterpUnsigned, ReductionsAndArgReductions) {
  Tensor x = ints(DType::U32, {4}, {4000000000, 1, 3000000000, 7});
  EXPECT_EQ(intValues(run1(OpKind::ReduceMax, {x})), (I{4000000000}));
  EXPECT_EQ(intValues(run1(OpKind::ReduceMin, {x})), (I{1}));
  // The sum 7000000008 is kept in 64 bits before the unsigned division by 4.
  EXPECT_EQ(intValues(run1(OpKind::ReduceMean, {x})), (I{1750000002}));
  EXPECT_EQ(intValues(run1(OpKind::ReduceSum, {x})), (I{7000000008 % 4294967296}));
  EXPECT_EQ(intValues(run1(OpKind::Argmax, {x})), (I{0}));
  Tensor u64 = ints(DType::U64, {3}, {5, kU64Max, kU64Top});
  EXPECT_EQ(intValues(run1(OpKind::ReduceMax, {u64})), (I{kU64Max}));
  EXPECT_EQ(intValues(run1(OpKind::Argmin, {u64})), (I{0}));
}

TEST(InterpUnsigned, CastsReadAndSaturateUnsigned) {
  Tensor u64 = ints(DType::U64, {2}, {kU64Max, kU64Top});
  EXPECT_TRUE(sameValues(run1(OpKind::Cast, {u64}, {{"to", Attr(DType::F64)}}), {18446744073709551616.0, 9223372036854775808.0}));
  EXPECT_TRUE(sameValues(run1(OpKind::Cast, {u64}, {{"to", Attr(DType::F32)}}), {18446744073709551616.0, 9223372036854775808.0}));
  EXPECT_EQ(intValues(run1(OpKind::Cast, {u64}, {{"to", Attr(DType::I16)}})), (I{-1, 0}));
  Tensor f = f32({5}, {-3.5, 255.9, 256, 1e30, NAN});
  EXPECT_EQ(intValues(run1(OpKind::Cast, {f}, {{"to", Attr(DType::U8)}})), (I{0, 255, 255, 255, 0}));
  EXPECT_EQ(intValues(run1(OpKind::Cast, {f}, {{"to", Attr(DType::I16)}})), (I{-3, 255, 256, 32767, 0}));
  Tensor i8 = ints(DType::I8, {2}, {-1, 5});
  EXPECT_EQ(intValues(run1(OpKind::Cast, {i8}, {{"to", Attr(DType::U64)}})), (I{kU64Max, 5}));  // sign-extends, then wraps
  EXPECT_EQ(intValues(run1(OpKind::Cast, {ints(DType::U8, {1}, {200})}, {{"to", Attr(DType::I8)}})), (I{-56}));
}

TEST(InterpShift, LeftAndRightAsNumPy) {
  Tensor x = ints(DType::U8, {6}, {1, 255, 16, 1, 128, 3});
  Tensor n = ints(DType::U8, {6}, {7, 1, 3, 8, 7, 200});
  EXPECT_EQ(intValues(run1(OpKind::ShiftLeft, {x, n})), (I{128, 254, 128, 0, 0, 0}));
  EXPECT_EQ(intValues(run1(OpKind::ShiftRight, {x, n})), (I{0, 127, 2, 0, 1, 0}));
  // Signed ints shift right arithmetically; amounts of the width or more, or negative, shift
  // every bit out (0, or -1 for a negative value).
  Tensor s = ints(DType::I8, {5}, {-128, -5, 64, -1, 7});
  Tensor k = ints(DType::I8, {5}, {1, 8, 1, -1, 0});
  EXPECT_EQ(intValues(run1(OpKind::ShiftRight, {s, k})), (I{-64, -1, 32, -1, 7}));
  EXPECT_EQ(intValues(run1(OpKind::ShiftLeft, {s, k})), (I{0, 0, -128, 0, 7}));
  Tensor u64 = ints(DType::U64, {3}, {kU64Max, 1, kU64Top});
  EXPECT_EQ(intValues(run1(OpKind::ShiftRight, {u64, ints(DType::U64, {3}, {63, 0, 64})})), (I{1, 1, 0}));
  EXPECT_EQ(intValues(run1(OpKind::ShiftLeft, {u64, ints(DType::U64, {3}, {63, 63, 1})})), (I{kU64Top, kU64Top, 0}));
}

TEST(InterpUnary, InverseTrigonometry) {
  const double pi = std::numbers::pi;
  Tensor x = f64({5}, {-1, -0.5, 0, 0.5, 1});
  EXPECT_TRUE(closeValues(run1(OpKind::Asin, {x}), {-pi / 2, -pi / 6, 0, pi / 6, pi / 2}, 1e-15));
  EXPECT_TRUE(closeValues(run1(OpKind::Acos, {x}), {pi, 2 * pi / 3, pi / 2, pi / 3, 0}, 1e-15, 1e-15));
  EXPECT_TRUE(closeValues(run1(OpKind::Atan, {f64({3}, {-INFINITY, 1, 1e300})}), {-pi / 2, pi / 4, pi / 2}, 1e-15));
  EXPECT_TRUE(sameValues(run1(OpKind::Asin, {f32({2}, {1.5, NAN})}), {NAN, NAN}));  // outside [-1, 1]
}

}  // namespace
}  // namespace kiln
