// Interpreter: unary and binary elementwise ops, broadcasting, integer wraparound, select, cast,
// iota, constant, and f16/bf16 rounding. Expected values are worked out by hand or from known math.
#include <cmath>
#include <limits>

#include "interp_test_util.h"

namespace kiln {
namespace {

using test::bools;
using test::closeValues;
using test::f32;
using test::f64;
using test::ints;
using test::intValues;
using test::run1;
using test::run1Error;
using test::sameValues;

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();
constexpr int64_t kI32Min = std::numeric_limits<int32_t>::min();
constexpr int64_t kI32Max = std::numeric_limits<int32_t>::max();
constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();

// ---- unary ----

TEST(InterpUnary, TranscendentalsOnF32) {
  Tensor x = f32({5}, {-2, -0.5, 0, 0.5, 2});
  EXPECT_TRUE(closeValues(run1(OpKind::Exp, {x}), {0.1353352815, 0.6065306664, 1.0, 1.6487212181, 7.3890557289}));
  EXPECT_TRUE(closeValues(run1(OpKind::Tanh, {x}), {-0.9640275836, -0.4621171951, 0.0, 0.4621171951, 0.9640275836}));
  EXPECT_TRUE(closeValues(run1(OpKind::Sigmoid, {x}), {0.1192029220, 0.3775406688, 0.5, 0.6224593312, 0.8807970780}));
  EXPECT_TRUE(closeValues(run1(OpKind::Erf, {x}), {-0.9953222650, -0.5204998778, 0.0, 0.5204998778, 0.9953222650}));
  EXPECT_TRUE(closeValues(run1(OpKind::Sin, {x}), {-0.9092974268, -0.4794255386, 0.0, 0.4794255386, 0.9092974268}));
  EXPECT_TRUE(closeValues(run1(OpKind::Cos, {x}), {-0.4161468365, 0.8775825619, 1.0, 0.8775825619, -0.4161468365}));
  EXPECT_TRUE(closeValues(run1(OpKind::Silu, {x}), {-0.2384058440, -0.1887703344, 0.0, 0.3112296656, 1.7615941560}));
  EXPECT_TRUE(closeValues(run1(OpKind::Gelu, {x}), {-0.0455002639, -0.1542687694, 0.0, 0.3457312306, 1.9544997361}));
  EXPECT_TRUE(closeValues(run1(OpKind::Gelu, {x}, {{"approximate", Attr("tanh")}}),
                          {-0.0454023059, -0.1542859902, 0.0, 0.3457140098, 1.9545976941}));
  EXPECT_TRUE(sameValues(run1(OpKind::Relu, {x}), {0, 0, 0, 0.5, 2}));
  EXPECT_TRUE(sameValues(run1(OpKind::Neg, {x}), {2, 0.5, 0, -0.5, -2}));
  EXPECT_TRUE(sameValues(run1(OpKind::Abs, {x}), {2, 0.5, 0, 0.5, 2}));
  EXPECT_TRUE(sameValues(run1(OpKind::Sign, {x}), {-1, -1, 0, 1, 1}));
  EXPECT_TRUE(sameValues(run1(OpKind::Floor, {x}), {-2, -1, 0, 0, 2}));
  EXPECT_TRUE(sameValues(run1(OpKind::Ceil, {x}), {-2, -0.0, 0, 1, 2}));
}

TEST(InterpUnary, PositiveDomainOnF32) {
  Tensor y = f32({4}, {0.25, 1, 4, 9});
  EXPECT_TRUE(closeValues(run1(OpKind::Log, {y}), {-1.3862943611, 0.0, 1.3862943611, 2.1972245773}));
  EXPECT_TRUE(sameValues(run1(OpKind::Sqrt, {y}), {0.5, 1, 2, 3}));
  EXPECT_TRUE(closeValues(run1(OpKind::Rsqrt, {y}), {2, 1, 0.5, 0.3333333333}));
  EXPECT_TRUE(closeValues(run1(OpKind::Reciprocal, {y}), {4, 1, 0.25, 0.1111111111}));
  EXPECT_TRUE(closeValues(run1(OpKind::Log1p, {y}), {0.2231435513, 0.6931471806, 1.6094379124, 2.3025850930}));
}

TEST(InterpUnary, F64ComputesInDouble) {
  Tensor x = f64({3}, {1, 0.5, -1});
  EXPECT_TRUE(closeValues(run1(OpKind::Exp, {x}), {2.718281828459045, 1.6487212707001282, 0.36787944117144233}, 1e-15));
  EXPECT_TRUE(closeValues(run1(OpKind::Sigmoid, {x}), {0.7310585786300049, 0.6224593312018546, 0.2689414213699951}, 1e-15));
  // log1p keeps the digits that log(1 + x) loses: log1p(1e-17) = 1e-17 in double.
  EXPECT_TRUE(closeValues(run1(OpKind::Log1p, {f64({1}, {1e-17})}), {1e-17}, 1e-15, 0));
}

TEST(InterpUnary, SpecialValues) {
  Tensor x = f32({6}, {kNaN, -0.0, 0.0, -kInf, kInf, -1});
  EXPECT_TRUE(sameValues(run1(OpKind::Sign, {x}), {kNaN, 0, 0, -1, 1, -1}));
  EXPECT_TRUE(sameValues(run1(OpKind::Relu, {x}), {kNaN, 0, 0, 0, kInf, 0}));
  EXPECT_TRUE(closeValues(run1(OpKind::Sigmoid, {x}), {kNaN, 0.5, 0.5, 0, 1, 0.2689414214}));
  EXPECT_TRUE(closeValues(run1(OpKind::Exp, {x}), {kNaN, 1, 1, 0, kInf, 0.3678794412}));
  EXPECT_TRUE(sameValues(run1(OpKind::Log, {x}), {kNaN, -kInf, -kInf, kNaN, kInf, kNaN}));
  EXPECT_TRUE(sameValues(run1(OpKind::Sqrt, {f32({2}, {-1, kInf})}), {kNaN, kInf}));
  EXPECT_TRUE(sameValues(run1(OpKind::Reciprocal, {f32({2}, {0.0, -0.0})}), {kInf, -kInf}));
  EXPECT_TRUE(sameValues(run1(OpKind::Tanh, {f32({2}, {-kInf, 100})}), {-1, 1}));
}

TEST(InterpUnary, SigmoidIsStableForLargeMagnitudes) {
  Tensor s = run1(OpKind::Sigmoid, {f32({4}, {-1000, -100, 100, 1000})});
  // sigmoid(-100) = exp(-100) / (1 + exp(-100)) = 3.72e-44, a float subnormal; never NaN.
  EXPECT_TRUE(closeValues(s, {0, 3.72e-44, 1, 1}, 0.05, 0));
  EXPECT_FALSE(std::isnan(s.getDouble(0)));
}

TEST(InterpUnary, IntNegAndAbsWrap) {
  Tensor x = ints(DType::I32, {4}, {kI32Min, -5, 0, 7});
  EXPECT_EQ(intValues(run1(OpKind::Neg, {x})), (std::vector<int64_t>{kI32Min, 5, 0, -7}));
  EXPECT_EQ(intValues(run1(OpKind::Abs, {x})), (std::vector<int64_t>{kI32Min, 5, 0, 7}));
  EXPECT_EQ(intValues(run1(OpKind::Neg, {ints(DType::I8, {2}, {-128, 127})})), (std::vector<int64_t>{-128, -127}));
  EXPECT_EQ(intValues(run1(OpKind::Abs, {ints(DType::I64, {2}, {kI64Min, -kI64Max})})),
            (std::vector<int64_t>{kI64Min, kI64Max}));
}

TEST(InterpUnary, Not) {
  Tensor r = run1(OpKind::Not, {bools({3}, {1, 0, 1})});
  EXPECT_EQ(r.dtype(), DType::Bool);
  EXPECT_EQ(intValues(r), (std::vector<int64_t>{0, 1, 0}));
}

TEST(InterpUnary, EmptyTensor) {
  Tensor r = run1(OpKind::Relu, {f32({0, 3}, {})});
  EXPECT_EQ(r.type().str(), "f32[0,3]");
  EXPECT_EQ(r.numElements(), 0);
}

// ---- binary float ----

TEST(InterpBinary, BroadcastScalarRowColumnAndRank) {
  Tensor m = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_TRUE(sameValues(run1(OpKind::Add, {m, f32({}, {10})}), {11, 12, 13, 14, 15, 16}));
  EXPECT_TRUE(sameValues(run1(OpKind::Sub, {m, f32({3}, {1, 2, 3})}), {0, 0, 0, 3, 3, 3}));
  EXPECT_TRUE(sameValues(run1(OpKind::Mul, {m, f32({2, 1}, {10, 100})}), {10, 20, 30, 400, 500, 600}));
  EXPECT_TRUE(sameValues(run1(OpKind::Sub, {f32({}, {1}), m}), {0, -1, -2, -3, -4, -5}));
  // [2,1,3] + [4,1] -> [2,4,3]: out[i,j,k] = a[i,0,k] + b[j,0].
  Tensor r = run1(OpKind::Add, {f32({2, 1, 3}, {0, 1, 2, 10, 11, 12}), f32({4, 1}, {100, 200, 300, 400})});
  EXPECT_EQ(r.type().str(), "f32[2,4,3]");
  EXPECT_TRUE(sameValues(r, {100, 101, 102, 200, 201, 202, 300, 301, 302, 400, 401, 402,
                             110, 111, 112, 210, 211, 212, 310, 311, 312, 410, 411, 412}));
  // Empty along a broadcast dim.
  EXPECT_EQ(run1(OpKind::Add, {f32({0, 3}, {}), f32({3}, {1, 2, 3})}).type().str(), "f32[0,3]");
}

TEST(InterpBinary, FloatDivisionByZeroIsIeee) {
  EXPECT_TRUE(sameValues(run1(OpKind::Div, {f32({3}, {1, -1, 0}), f32({}, {0})}), {kInf, -kInf, kNaN}));
  EXPECT_TRUE(sameValues(run1(OpKind::Div, {f32({2}, {7, -7}), f32({2}, {2, 2})}), {3.5, -3.5}));
}

TEST(InterpBinary, MaxMinPropagateNaN) {
  Tensor a = f32({4}, {1, kNaN, 3, -kInf}), b = f32({4}, {2, 2, kNaN, 0});
  EXPECT_TRUE(sameValues(run1(OpKind::Max, {a, b}), {2, kNaN, kNaN, 0}));
  EXPECT_TRUE(sameValues(run1(OpKind::Min, {a, b}), {1, kNaN, kNaN, -kInf}));
}

TEST(InterpBinary, FloatPow) {
  EXPECT_TRUE(closeValues(run1(OpKind::Pow, {f32({4}, {2, 9, -8, 0}), f32({4}, {0.5, 0.5, 3, -1})}),
                          {1.4142135624, 3, -512, kInf}));
  EXPECT_TRUE(sameValues(run1(OpKind::Pow, {f32({1}, {-8}), f32({1}, {1.0 / 3})}), {kNaN}));
}

// ---- binary int ----

TEST(InterpBinary, IntAddSubMulWrap) {
  EXPECT_EQ(intValues(run1(OpKind::Add, {ints(DType::I8, {3}, {127, -128, 100}), ints(DType::I8, {3}, {1, -1, 100})})),
            (std::vector<int64_t>{-128, 127, -56}));
  EXPECT_EQ(intValues(run1(OpKind::Mul, {ints(DType::I32, {2}, {kI32Max, 65536}), ints(DType::I32, {2}, {2, 65536})})),
            (std::vector<int64_t>{-2, 0}));
  EXPECT_EQ(intValues(run1(OpKind::Add, {ints(DType::I64, {1}, {kI64Max}), ints(DType::I64, {1}, {1})})),
            (std::vector<int64_t>{kI64Min}));
  EXPECT_EQ(intValues(run1(OpKind::Sub, {ints(DType::I64, {1}, {kI64Min}), ints(DType::I64, {1}, {1})})),
            (std::vector<int64_t>{kI64Max}));
  EXPECT_EQ(intValues(run1(OpKind::Mul, {ints(DType::I64, {1}, {kI64Min}), ints(DType::I64, {1}, {-1})})),
            (std::vector<int64_t>{kI64Min}));
}

TEST(InterpBinary, IntDivTruncatesTowardZero) {
  Tensor r = run1(OpKind::Div, {ints(DType::I32, {5}, {7, -7, 7, -7, 0}), ints(DType::I32, {5}, {2, 2, -2, -2, 5})});
  EXPECT_EQ(intValues(r), (std::vector<int64_t>{3, -3, -3, 3, 0}));
  // INT_MIN / -1 wraps to INT_MIN at every width.
  EXPECT_EQ(intValues(run1(OpKind::Div, {ints(DType::I8, {1}, {-128}), ints(DType::I8, {1}, {-1})})),
            (std::vector<int64_t>{-128}));
  EXPECT_EQ(intValues(run1(OpKind::Div, {ints(DType::I32, {1}, {kI32Min}), ints(DType::I32, {1}, {-1})})),
            (std::vector<int64_t>{kI32Min}));
  EXPECT_EQ(intValues(run1(OpKind::Div, {ints(DType::I64, {2}, {kI64Min, kI64Max}), ints(DType::I64, {2}, {-1, -1})})),
            (std::vector<int64_t>{kI64Min, -kI64Max}));
}

TEST(InterpBinary, IntDivisionByZeroIsAnError) {
  EXPECT_EQ(run1Error(OpKind::Div, {ints(DType::I32, {3}, {1, 2, 3}), ints(DType::I32, {3}, {1, 0, 1})}),
            "error: div: integer division by zero");
}

TEST(InterpBinary, IntPow) {
  Tensor base = ints(DType::I32, {9}, {3, 2, -2, 0, 2, 1, -1, -1, 7});
  Tensor exponent = ints(DType::I32, {9}, {4, 31, 3, 0, -1, -5, -3, -2, 0});
  EXPECT_EQ(intValues(run1(OpKind::Pow, {base, exponent})), (std::vector<int64_t>{81, kI32Min, -8, 1, 0, 1, -1, 1, 1}));
  // 3^40 = 12157665459056928801 wraps modulo 2^64.
  EXPECT_EQ(intValues(run1(OpKind::Pow, {ints(DType::I64, {1}, {3}), ints(DType::I64, {1}, {40})})),
            (std::vector<int64_t>{-6289078614652622815}));
  EXPECT_EQ(intValues(run1(OpKind::Pow, {ints(DType::I8, {1}, {2}), ints(DType::I8, {1}, {7})})),
            (std::vector<int64_t>{-128}));
  EXPECT_EQ(run1Error(OpKind::Pow, {ints(DType::I32, {2}, {2, 0}), ints(DType::I32, {2}, {-1, -2})}),
            "error: pow: 0 raised to the negative integer power -2");
}

TEST(InterpBinary, IntMaxMin) {
  Tensor a = ints(DType::I64, {3}, {kI64Min, 5, -3}), b = ints(DType::I64, {3}, {kI64Max, 4, -3});
  EXPECT_EQ(intValues(run1(OpKind::Max, {a, b})), (std::vector<int64_t>{kI64Max, 5, -3}));
  EXPECT_EQ(intValues(run1(OpKind::Min, {a, b})), (std::vector<int64_t>{kI64Min, 4, -3}));
}

// ---- comparisons and logic ----

TEST(InterpCompare, FloatsWithNaN) {
  Tensor a = f32({4}, {1, 2, kNaN, -0.0}), b = f32({4}, {2, 2, kNaN, 0.0});
  auto check = [&](OpKind k, std::vector<int64_t> want) {
    Tensor r = run1(k, {a, b});
    EXPECT_EQ(r.dtype(), DType::Bool);
    EXPECT_EQ(intValues(r), want) << opInfo(k).name;
  };
  check(OpKind::Eq, {0, 1, 0, 1});
  check(OpKind::Ne, {1, 0, 1, 0});
  check(OpKind::Lt, {1, 0, 0, 0});
  check(OpKind::Le, {1, 1, 0, 1});
  check(OpKind::Gt, {0, 0, 0, 0});
  check(OpKind::Ge, {0, 1, 0, 1});
}

TEST(InterpCompare, I64IsExactBeyondDoublePrecision) {
  // 2^53 and 2^53 + 1 are the same double; as integers they differ.
  Tensor a = ints(DType::I64, {1}, {9007199254740992}), b = ints(DType::I64, {1}, {9007199254740993});
  EXPECT_EQ(intValues(run1(OpKind::Eq, {a, b})), (std::vector<int64_t>{0}));
  EXPECT_EQ(intValues(run1(OpKind::Lt, {a, b})), (std::vector<int64_t>{1}));
}

TEST(InterpCompare, BroadcastColumnAgainstRow) {
  Tensor r = run1(OpKind::Lt, {ints(DType::I32, {3, 1}, {0, 1, 2}), ints(DType::I32, {3}, {0, 1, 2})});
  EXPECT_EQ(r.type().str(), "bool[3,3]");
  EXPECT_EQ(intValues(r), (std::vector<int64_t>{0, 1, 1, 0, 0, 1, 0, 0, 0}));
}

TEST(InterpLogic, AndOrXorBroadcast) {
  Tensor a = bools({2, 2}, {0, 0, 1, 1}), b = bools({2}, {0, 1});
  EXPECT_EQ(intValues(run1(OpKind::And, {a, b})), (std::vector<int64_t>{0, 0, 0, 1}));
  EXPECT_EQ(intValues(run1(OpKind::Or, {a, b})), (std::vector<int64_t>{0, 1, 1, 1}));
  EXPECT_EQ(intValues(run1(OpKind::Xor, {a, b})), (std::vector<int64_t>{0, 1, 1, 0}));
}

// ---- select, cast, iota, constant ----

TEST(InterpSelect, BroadcastsAllThreeOperands) {
  Tensor c = bools({3}, {1, 0, 1});
  Tensor r = run1(OpKind::Select, {c, f32({}, {-1}), f32({2, 3}, {1, 2, 3, 4, 5, 6})});
  EXPECT_EQ(r.type().str(), "f32[2,3]");
  EXPECT_TRUE(sameValues(r, {-1, 2, -1, -1, 5, -1}));
  Tensor big = run1(OpKind::Select, {bools({2}, {0, 1}), ints(DType::I64, {}, {kI64Max}), ints(DType::I64, {2}, {1, 2})});
  EXPECT_EQ(intValues(big), (std::vector<int64_t>{1, kI64Max}));
}

TEST(InterpCast, FloatToIntTruncatesAndSaturates) {
  Tensor x = f32({7}, {1.9, -1.9, kNaN, 1e10, -1e10, kInf, -0.5});
  EXPECT_EQ(intValues(run1(OpKind::Cast, {x}, {{"to", Attr(DType::I32)}})),
            (std::vector<int64_t>{1, -1, 0, kI32Max, kI32Min, kI32Max, 0}));
  EXPECT_EQ(intValues(run1(OpKind::Cast, {x}, {{"to", Attr(DType::I8)}})),
            (std::vector<int64_t>{1, -1, 0, 127, -128, 127, 0}));
}

TEST(InterpCast, IntToIntWrapsAndIntToFloatRounds) {
  EXPECT_EQ(intValues(run1(OpKind::Cast, {ints(DType::I32, {4}, {300, -129, 127, -1})}, {{"to", Attr(DType::I8)}})),
            (std::vector<int64_t>{44, 127, 127, -1}));
  EXPECT_EQ(intValues(run1(OpKind::Cast, {ints(DType::I8, {2}, {-1, 5})}, {{"to", Attr(DType::I64)}})),
            (std::vector<int64_t>{-1, 5}));
  // 2^24 + 1 is not a float: it rounds to even, 2^24.
  EXPECT_TRUE(sameValues(run1(OpKind::Cast, {ints(DType::I64, {2}, {16777217, -3})}, {{"to", Attr(DType::F32)}}),
                         {16777216, -3}));
  EXPECT_TRUE(sameValues(run1(OpKind::Cast, {ints(DType::I64, {1}, {16777217})}, {{"to", Attr(DType::F64)}}),
                         {16777217}));
}

TEST(InterpCast, BoolConversions) {
  EXPECT_TRUE(sameValues(run1(OpKind::Cast, {bools({2}, {1, 0})}, {{"to", Attr(DType::F32)}}), {1, 0}));
  EXPECT_EQ(intValues(run1(OpKind::Cast, {bools({2}, {1, 0})}, {{"to", Attr(DType::I32)}})), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(intValues(run1(OpKind::Cast, {f32({5}, {0, -0.0, 0.5, kNaN, -3})}, {{"to", Attr(DType::Bool)}})),
            (std::vector<int64_t>{0, 0, 1, 1, 1}));
  EXPECT_EQ(intValues(run1(OpKind::Cast, {ints(DType::I64, {3}, {0, 256, -1})}, {{"to", Attr(DType::Bool)}})),
            (std::vector<int64_t>{0, 1, 1}));
}

TEST(InterpCast, ToHalfFormatsRoundsToNearestEven) {
  // f16: 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to even gives 1; 65520 overflows to inf.
  EXPECT_TRUE(sameValues(run1(OpKind::Cast, {f32({3}, {1 + std::ldexp(1.0, -11), 65520, 65504})}, {{"to", Attr(DType::F16)}}),
                         {1, kInf, 65504}));
  // bf16 keeps 8 significant bits: 1 + 2^-8 ties to 1; 1 + 3 * 2^-8 ties to 1 + 2^-6.
  EXPECT_TRUE(sameValues(run1(OpKind::Cast, {f32({2}, {1 + std::ldexp(1.0, -8), 1 + 3 * std::ldexp(1.0, -8)})},
                              {{"to", Attr(DType::BF16)}}),
                         {1, 1.015625}));
}

TEST(InterpHalf, ArithmeticRoundsEachResult) {
  TensorType h{DType::F16, {2}};
  // 1 + 2^-11 -> 1 (tie to even); 1 + 3 * 2^-11 -> 1 + 2^-9 (tie to even).
  Tensor r = run1(OpKind::Add, {test::tensor(h, {1, 1}), test::tensor(h, {std::ldexp(1.0, -11), 3 * std::ldexp(1.0, -11)})});
  EXPECT_TRUE(sameValues(r, {1, 1.001953125}));
  // f16 overflows at 65504: 2 * 40000 = inf.
  EXPECT_TRUE(sameValues(run1(OpKind::Mul, {test::tensor({DType::F16, {}}, {40000}), test::tensor({DType::F16, {}}, {2})}),
                         {kInf}));
  // bf16: 3 * (1 + 2^-7) = 3.0234375 lies halfway between 3.015625 and 3.03125: even gives 3.03125.
  TensorType b{DType::BF16, {}};
  EXPECT_TRUE(sameValues(run1(OpKind::Mul, {test::tensor(b, {3}), test::tensor(b, {1.0078125})}), {3.03125}));
  // Unary ops round too: exp(1) in bf16 is 2.71875.
  EXPECT_TRUE(sameValues(run1(OpKind::Exp, {test::tensor(b, {1})}), {2.71875}));
}

TEST(InterpIota, AlongEachAxisInEachDType) {
  Module m;
  GraphBuilder b(m, "main");
  Value* rows = b.iota({DType::I32, {2, 3}}, 0);
  Value* cols = b.iota({DType::I32, {2, 3}}, 1);
  Value* last = b.iota({DType::F32, {2, 3}}, -1);
  Value* halfs = b.iota({DType::F16, {3}}, 0);
  auto f = b.finish({rows, cols, last, halfs});
  ASSERT_TRUE(f.ok()) << f.error().str();
  auto r = test::runOk(**f, {});
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(intValues(r[0]), (std::vector<int64_t>{0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(intValues(r[1]), (std::vector<int64_t>{0, 1, 2, 0, 1, 2}));
  EXPECT_TRUE(sameValues(r[2], {0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(r[3].dtype(), DType::F16);
  EXPECT_TRUE(sameValues(r[3], {0, 1, 2}));
}

TEST(InterpConstant, ReturnsItsValueAndSplat) {
  Module m;
  GraphBuilder b(m, "main");
  Tensor value = ints(DType::I64, {2, 2}, {1, 2, 3, kI64Max});
  Value* c = b.constant(value);
  Value* z = b.constant(f32({2}, {0.5, 0.5}));
  auto f = b.finish({c, z});
  ASSERT_TRUE(f.ok()) << f.error().str();
  auto r = test::runOk(**f, {});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0], value);
  EXPECT_TRUE(sameValues(r[1], {0.5, 0.5}));
}

}  // namespace
}  // namespace kiln
