// The element emitter reproduces the interpreter's numerics to the last bit on the CPU backend:
// f16/bf16 rounding, double accumulation, saturating casts, NaN-propagating max/min, integer
// wraparound and division, argmax ties and NaN. (Tolerances for math and other targets live in
// the differential tests; these use none on the CPU, and a few ulps on the GPU, whose f64 code has
// fused multiply-adds and libdevice's exp/log.)
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <limits>

#include "cpu_test_util.h"

namespace kiln::codegen {
namespace {

// Each op on its own (no decomposition, no fusion): these tests pin down each op's emitter.
CompileOptions unfused() {
  CompileOptions options;
  options.disabledPasses = {"all"};
  return options;
}

using test::DiffOptions;
using test::expectSameAsInterpreter;
using test::oneOp;

// Exact agreement (or within `tol`) over a few seeds, with NaN, +-inf and +-0 sprinkled into float inputs.
void expectExact(const std::string& params, const std::string& opLine, int64_t intBound = 0, test::Tolerance tol = {}) {
  SCOPED_TRACE(opLine + "   with " + params);
  auto m = oneOp(params, opLine);
  ASSERT_TRUE(m);
  for (uint64_t seed = 1; seed <= 2; ++seed) {
    DiffOptions o;
    o.seed = seed;
    o.specials = true;
    o.disabledPasses = {"all"};
    o.intBound = intBound;
    o.tol = tol;
    o.gpuTol = test::Tolerance{4, 1e-12};
    expectSameAsInterpreter(*m->entry(), o);
  }
}

TEST(EmitNumerics, HalfTypesRoundEachOp) {
  for (const char* t : {"f16", "bf16"}) {
    std::string p = std::string("%a: ") + t + "[4,9], %b: " + t + "[9]";
    for (const char* op : {"add", "sub", "mul", "div", "max", "min"}) expectExact(p, std::string(op) + " %a, %b");
    expectExact(p, "relu %a");
    expectExact(p, "sign %a");
    expectExact(p, "neg %a");
  }
}

// Every pair, one function (so one compilation) per source dtype.
TEST(EmitNumerics, Casts) {
  const std::vector<std::string> types = {"f16", "bf16", "f32", "f64", "i8", "i32", "i64", "bool"};
  for (const std::string& from : types) {
    std::string body, results, returned;
    for (size_t i = 0; i < types.size(); ++i) {
      std::string r = "%r" + std::to_string(i);
      body += "  " + r + " = cast %a {to = " + types[i] + "}\n";
      results += (i ? ", " : "") + types[i] + "[64]";
      returned += (i ? ", " : "") + r;
    }
    auto m = test::parseOrFail("func @main(%a: " + from + "[64]) -> (" + results + ") {\n" + body + "  return " + returned + "\n}\n");
    ASSERT_TRUE(m);
    for (uint64_t seed = 1; seed <= 2; ++seed) {
      DiffOptions o;
      o.seed = seed;
      o.specials = true;
      o.disabledPasses = {"all"};
    o.disabledPasses = {"all"};
      expectSameAsInterpreter(*m->entry(), o);
    }
  }
}

TEST(EmitNumerics, IntegerArithmeticWraps) {
  for (const char* t : {"i8", "i32", "i64"}) {
    std::string p = std::string("%a: ") + t + "[8,8], %b: " + t + "[8]";
    for (const char* op : {"add", "sub", "mul", "max", "min", "eq", "lt", "ge"}) expectExact(p, std::string(op) + " %a, %b");
    expectExact(p, "abs %a");
    expectExact(p, "neg %a");
    expectExact(p, "pow %a, %b", 4);  // exponents 0..3: no 0^-n
    expectExact(p, "div %a, %b");     // a zero divisor is the same error on both
  }
}

TEST(EmitNumerics, ReductionsAccumulateInDouble) {
  for (const char* t : {"f16", "bf16", "f32", "f64", "i8", "i32", "i64"}) {
    std::string p = std::string("%a: ") + t + "[3,5,7]";
    for (const char* op : {"reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod"}) {
      expectExact(p, std::string(op) + " %a {axes = [0, 2]}");
      expectExact(p, std::string(op) + " %a {axes = [1], keepdims = true}");
    }
    expectExact(p, "argmax %a {axis = 1}");
    expectExact(p, "argmin %a {axis = 2, keepdims = true}");
  }
  for (const char* t : {"f16", "bf16", "f32", "f64"}) {
    std::string p = std::string("%a: ") + t + "[3,5,7]";
    // exp and log: libmvec's vector variants on the CPU (within a few ulp; vector_math_test.cpp).
    expectExact(p, "softmax %a {axis = 1}", 0, test::mathTolerance());
    expectExact(p, "log_softmax %a", 0, test::mathTolerance());
    expectExact(p + ", %s: " + t + "[5,7], %b: " + t + "[5,7]", "layer_norm %a, %s, %b {axis = 1}");
  }
}

TEST(EmitNumerics, DenseOps) {
  // The generated matmul (oneDNN, which runs f32 matmuls otherwise, is tested in onednn_test.cpp).
  setenv("KILN_CPU_LIBRARIES", "off", 1);
  for (const char* t : {"f16", "bf16", "f32", "f64", "i32"})
    expectExact(std::string("%a: ") + t + "[2,3,4], %b: " + t + "[4,5]", "matmul %a, %b");
  unsetenv("KILN_CPU_LIBRARIES");
  for (const char* t : {"f16", "f32", "f64"}) {
    std::string x = std::string("%x: ") + t + "[2,4,7,6]";
    // The generated convolution (conv blocks: codegen/conv_rows.h); oneDNN, which takes these pads
    // too, multiplies the padding's zeros by the weights, 0 x inf where the interpreter adds nothing.
    setenv("KILN_CPU_LIBRARIES", "off", 1);
    expectExact(x + ", %w: " + t + "[6,2,3,2]", "conv2d %x, %w {strides = [2, 1], pads = [1, 0, 2, 1], dilations = [1, 2], groups = 2}");
    unsetenv("KILN_CPU_LIBRARIES");
    expectExact(x, "max_pool2d %x {kernel = [3, 2], pads = [1, 1, 1, 0]}");
    expectExact(x, "avg_pool2d %x {kernel = [2, 2], strides = [1, 2], pads = [1, 1, 1, 1]}");
    std::string c = std::string(t) + "[4]";
    expectExact(x + ", %s: " + c + ", %b: " + c + ", %m: " + c + ", %v: " + c, "batch_norm %x, %s, %b, %m, %v");
  }
}

// Exact agreement on the given inputs (edge values random inputs do not reach).
void expectExactOn(const std::string& params, const std::string& opLine, const std::vector<Tensor>& inputs) {
  SCOPED_TRACE(opLine + "   with " + params);
  auto m = oneOp(params, opLine);
  ASSERT_TRUE(m);
  auto want = interpret(*m->entry(), inputs);
  ASSERT_TRUE(want.ok()) << want.error().str();
  auto exe = Executable::compile(*m->entry(), unfused());
  ASSERT_TRUE(exe.ok()) << exe.error().str();
  auto got = (*exe)->run(inputs);
  ASSERT_TRUE(got.ok()) << got.error().str();
  EXPECT_EQ(test::compareTensors((*want)[0], (*got)[0], {}), "");
}

// `values` as a tensor of `shape` (default: 1-D).
Tensor ints(DType t, const std::vector<int64_t>& values, Shape shape = {}) {
  Tensor x(TensorType{t, shape.empty() ? Shape{static_cast<int64_t>(values.size())} : shape});
  for (size_t i = 0; i < values.size(); ++i) x.setInt(static_cast<int64_t>(i), values[i]);
  return x;
}
Tensor floats(DType t, const std::vector<double>& values, Shape shape = {}) {
  Tensor x(TensorType{t, shape.empty() ? Shape{static_cast<int64_t>(values.size())} : shape});
  for (size_t i = 0; i < values.size(); ++i) x.setDouble(static_cast<int64_t>(i), values[i]);
  return x;
}

TEST(EmitNumerics, IntegerEdgeValues) {
  expectExactOn("%a: i32[6], %b: i32[6]", "div %a, %b",
                {ints(DType::I32, {INT32_MIN, 7, -7, 7, -7, 5}), ints(DType::I32, {-1, 2, 2, -2, -2, -1})});
  expectExactOn("%a: i64[2], %b: i64[2]", "div %a, %b", {ints(DType::I64, {INT64_MIN, -9}), ints(DType::I64, {-1, 4})});
  expectExactOn("%a: i8[3], %b: i8[3]", "add %a, %b", {ints(DType::I8, {127, -128, 100}), ints(DType::I8, {1, -1, 100})});
  expectExactOn("%a: i8[3], %b: i8[3]", "mul %a, %b", {ints(DType::I8, {127, -128, 100}), ints(DType::I8, {3, -1, 100})});
  expectExactOn("%a: i8[3]", "neg %a", {ints(DType::I8, {-128, 127, 0})});
  expectExactOn("%a: i8[3]", "abs %a", {ints(DType::I8, {-128, -127, 5})});
  expectExactOn("%a: i32[6], %b: i32[6]", "pow %a, %b",
                {ints(DType::I32, {1, -1, -1, 2, 3, -3}), ints(DType::I32, {-3, -3, -2, -1, 21, 3})});
  expectExactOn("%a: i8[4]", "reduce_mean %a", {ints(DType::I8, {100, 100, 100, -1})});  // the sum is not wrapped to i8
}

// Unsigned values above the signed range, where an op that compared, divided, extended or
// converted as signed would differ; and shifts by amounts past the width.
TEST(EmitNumerics, UnsignedEdgeValues) {
  const int64_t u64Max = -1, u64Top = INT64_MIN;  // the bits of 2^64 - 1 and 2^63
  for (const char* op : {"div", "max", "min", "lt", "ge", "pow"}) {
    expectExactOn("%a: u8[4], %b: u8[4]", std::string(op) + " %a, %b",
                  {ints(DType::U8, {200, 255, 7, 128}), ints(DType::U8, {3, 16, 200, 2})});
    expectExactOn("%a: u64[3], %b: u64[3]", std::string(op) + " %a, %b",
                  {ints(DType::U64, {u64Max, u64Top, 5}), ints(DType::U64, {2, 3, u64Top})});
  }
  for (const char* op : {"reduce_max", "reduce_min", "reduce_mean", "argmax", "argmin", "abs", "neg"}) {
    expectExactOn("%a: u32[4]", std::string(op) + " %a", {ints(DType::U32, {4000000000, 1, 3000000000, 7})});
    expectExactOn("%a: u64[3]", std::string(op) + " %a", {ints(DType::U64, {5, u64Max, u64Top})});
  }
  expectExactOn("%a: u64[3], %b: u64[3]", "matmul %a, %b", {ints(DType::U64, {u64Max, 2, 3}), ints(DType::U64, {u64Max, u64Top, 1})});
  for (const char* to : {"f32", "f64", "f16", "i8", "i64", "u16", "bool"}) {
    expectExactOn("%a: u64[3]", std::string("cast %a {to = ") + to + "}", {ints(DType::U64, {u64Max, u64Top, 300})});
    expectExactOn("%a: u8[3]", std::string("cast %a {to = ") + to + "}", {ints(DType::U8, {255, 128, 3})});
  }
  std::vector<double> edges = {-3.5, 255.9, 256, 1e30, NAN, 65535.5, 4.3e9, 1.9e19, -0.0};
  for (const char* to : {"u8", "u16", "u32", "u64", "i16"})
    expectExactOn("%a: f64[9]", std::string("cast %a {to = ") + to + "}", {floats(DType::F64, edges)});
  for (const char* op : {"shift_left", "shift_right"}) {
    expectExactOn("%a: u8[6], %b: u8[6]", std::string(op) + " %a, %b",
                  {ints(DType::U8, {1, 255, 16, 1, 128, 3}), ints(DType::U8, {7, 1, 3, 8, 7, 200})});
    expectExactOn("%a: i8[5], %b: i8[5]", std::string(op) + " %a, %b",
                  {ints(DType::I8, {-128, -5, 64, -1, 7}), ints(DType::I8, {1, 8, 1, -1, 0})});
    expectExactOn("%a: u64[3], %b: u64[3]", std::string(op) + " %a, %b",
                  {ints(DType::U64, {u64Max, 1, u64Top}), ints(DType::U64, {63, 64, u64Max})});
    expectExactOn("%a: i64[3], %b: i64[3]", std::string(op) + " %a, %b",
                  {ints(DType::I64, {-7, INT64_MIN, 1}), ints(DType::I64, {63, 64, -1})});
  }
}

// The CPU's arg reductions run in two vectorised passes (the extreme's key, then the first index
// holding it): ties across vector lanes, -0 and +0 (equal, so the first wins), NaNs of either sign
// (the first wins), rows of one value and rows longer than a vector and its unrolled copies.
TEST(EmitNumerics, ArgReductionsFindTheFirstExtremeAcrossLanes) {
  auto row = [](int64_t n, double fill, std::vector<std::pair<int64_t, double>> at) {
    std::vector<double> v(static_cast<size_t>(n), fill);
    for (auto [k, x] : at) v[static_cast<size_t>(k)] = x;
    return v;
  };
  std::vector<std::vector<double>> rows = {
      row(37, -1, {{3, 5}, {35, 5}, {20, 4}}),         // a tie 32 elements apart
      row(37, -1, {{5, -0.0}, {30, 0.0}}),             // max: -0 first
      row(37, 1, {{6, 0.0}, {29, -0.0}}),              // min: +0 first
      row(100, 2, {{90, NAN}, {17, -NAN}, {50, INFINITY}}),
      row(100, -INFINITY, {}),                         // one value throughout
      row(1000, 0.5, {{999, 7}, {998, -7}}),           // the extreme in the vector loop's tail
      row(1001, 0.5, {{1000, 7}, {0, -7}}),
  };
  for (const char* t : {"f32", "f64", "bf16", "f16"})
    for (const auto& values : rows)
      for (const char* op : {"argmax", "argmin"}) {
        DType dtype = *parseDType(t);
        expectExactOn(std::string("%a: ") + t + "[" + std::to_string(values.size()) + "]", std::string(op) + " %a",
                      {floats(dtype, values)});
      }
  for (const char* t : {"i8", "i32", "u16", "i64"})
    for (const char* op : {"argmax", "argmin"}) {
      std::vector<int64_t> values(67, 3);
      values[4] = values[60] = 9, values[11] = values[43] = -2;
      if (t[0] == 'u') values[11] = values[43] = 1;
      expectExactOn(std::string("%a: ") + t + "[67]", std::string(op) + " %a", {ints(*parseDType(t), values)});
      // Down the columns too (column tiles), each column the values rotated by its index.
      std::vector<int64_t> columns;
      for (size_t k = 0; k < values.size(); ++k)
        for (size_t c = 0; c < 40; ++c) columns.push_back(values[(k + c) % values.size()]);
      expectExactOn(std::string("%a: ") + t + "[67,40]", std::string(op) + " %a", {ints(*parseDType(t), columns, {67, 40})});
    }
  // Down the columns of a tile (column_reduction.h: each column's best key and index, the axis
  // walked in order), each column a row above rotated by its index, so the ties, the zeros of
  // either sign and the NaNs fall on other rows in each; 40 columns: a tile and a partial one.
  for (const char* t : {"f32", "f64", "bf16"})
    for (const auto& values : rows) {
      std::vector<double> columns;
      for (size_t k = 0; k < values.size(); ++k)
        for (size_t c = 0; c < 40; ++c) columns.push_back(values[(k + c) % values.size()]);
      for (const char* op : {"argmax", "argmin"})
        expectExactOn(std::string("%a: ") + t + "[" + std::to_string(values.size()) + ",40]", std::string(op) + " %a",
                      {floats(*parseDType(t), columns, {static_cast<int64_t>(values.size()), 40})});
    }
}

TEST(EmitNumerics, SaturatingCastsAndSpecialFloats) {
  std::vector<double> edges = {3e9, -3e9, 1e20, -1e20, 2.9, -2.9, NAN, 9.3e18, -0.0, 127.5, -128.5, INFINITY};
  for (DType from : {DType::F32, DType::F64})
    for (const char* to : {"i8", "i32", "i64", "bool", "bf16", "f16"})
      expectExactOn(std::string("%a: ") + std::string(dtypeName(from)) + "[12]", std::string("cast %a {to = ") + to + "}",
                    {floats(from, edges)});
  // bf16 ties round to even; NaN stays NaN.
  expectExactOn("%a: f32[4]", "cast %a {to = bf16}", {floats(DType::F32, {1.0 + 1.0 / 256, 1.0 + 3.0 / 256, -NAN, 3.4e38})});
  expectExactOn("%a: f32[5]", "argmax %a", {floats(DType::F32, {1, NAN, 3, NAN, 7})});
  expectExactOn("%a: f32[5]", "argmin %a", {floats(DType::F32, {1, -INFINITY, 3, -INFINITY, 7})});
  expectExactOn("%a: f32[4], %b: f32[4]", "max %a, %b",
                {floats(DType::F32, {NAN, 1, -0.0, 0.0}), floats(DType::F32, {1, NAN, 0.0, -0.0})});
  expectExactOn("%a: f64[4]", "sign %a", {floats(DType::F64, {NAN, -0.0, -3, 5})});
  expectExactOn("%a: f32[4]", "softmax %a", {floats(DType::F32, {1, INFINITY, 2, 3})});
}

}  // namespace
}  // namespace kiln::codegen
