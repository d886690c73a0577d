// Differential tests, CPU backend vs interpreter: every elementwise op on several shapes and
// dtypes, broadcasting, NaN/inf, casts between all dtypes, constants and iota.
#include "tests/unit/codegen/cpu_test_util.h"

namespace kiln::test {
namespace {

const char* kFloatTypes[] = {"f16", "bf16", "f32", "f64"};
const char* kIntTypes[] = {"i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"};
const char* kNumTypes[] = {"i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "bf16", "f32", "f64"};

void check(const std::string& params, const std::string& line, DiffOptions o = {}) {
  SCOPED_TRACE(line + "   with " + params);
  auto m = oneOp(params, line);
  if (!m) return;
  for (uint64_t seed : {1, 2}) {
    o.seed = seed;
    expectSameAsInterpreter(*m->entry(), o);
  }
}

TEST(CpuElementwise, FloatUnary) {
  for (const char* op : {"exp", "log", "sqrt", "rsqrt", "reciprocal", "tanh", "sigmoid", "erf", "sin", "cos", "floor",
                         "ceil", "sign", "log1p", "asin", "acos", "atan", "relu", "silu", "neg", "abs"})
    for (const char* t : kFloatTypes)
      for (bool specials : {false, true})
        check(std::string("%x: ") + t + "[3,37]", std::string(op) + " %x", {mathTolerance(), 1, specials});
  for (const char* approx : {"none", "tanh"})
    for (const char* t : kFloatTypes)
      check(std::string("%x: ") + t + "[64]", std::string("gelu %x {approximate = \"") + approx + "\"}",
            {mathTolerance(), 1, true});
}

TEST(CpuElementwise, IntAndBoolUnary) {
  for (const char* op : {"neg", "abs"})
    for (const char* t : kIntTypes) check(std::string("%x: ") + t + "[5,7]", std::string(op) + " %x");
  check("%x: bool[9]", "not %x");
  // Wrapping at the minimum value.
  auto m = parseOrFail(
      "func @main() -> (i8[2], i32[2]) {\n  %a = constant [-128, 127] : i8[2]\n  %b = constant [-2147483648, 5] : i32[2]\n"
      "  %c = neg %a\n  %d = abs %b\n  return %c, %d\n}\n");
  expectSameAsInterpreter(*m->entry());
}

TEST(CpuElementwise, BinaryWithBroadcasting) {
  const char* shapes[][2] = {{"[4,5]", "[4,5]"}, {"[3,1,5]", "[4,5]"}, {"[]", "[6]"}, {"[2,3]", "[1]"}, {"[0,3]", "[3]"}};
  for (const char* op : {"add", "sub", "mul", "div", "max", "min", "pow"})
    for (const char* t : kNumTypes)
      for (auto& s : shapes) {
        // Integer inputs in [1, 10) would hide division by zero; [0, 10) covers it (both must fail).
        check(std::string("%a: ") + t + s[0] + ", %b: " + t + s[1], std::string(op) + " %a, %b",
              {mathTolerance(), 1, true});
      }
}

TEST(CpuElementwise, ComparisonsAndLogic) {
  for (const char* op : {"eq", "ne", "lt", "le", "gt", "ge"})
    for (const char* t : kNumTypes) check(std::string("%a: ") + t + "[3,4], %b: " + t + "[4]", std::string(op) + " %a, %b", {{}, 1, true});
  for (const char* op : {"and", "or", "xor"}) check("%a: bool[2,8], %b: bool[8]", std::string(op) + " %a, %b");
  for (const char* t : kNumTypes)
    check(std::string("%c: bool[3,1], %a: ") + t + "[4], %b: " + t + "[3,4]", "select %c, %a, %b");
  check("%c: bool[5], %a: bool[5], %b: bool[]", "select %c, %a, %b");
}

TEST(CpuElementwise, CastsBetweenAllDtypes) {
  const char* all[] = {"bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "bf16", "f32", "f64"};
  for (const char* from : all)
    for (const char* to : all) check(std::string("%x: ") + from + "[41]", std::string("cast %x {to = ") + to + "}", {{}, 1, true});
  // Out-of-range floats saturate, NaN gives 0, ints wrap.
  auto m = parseOrFail(
      "func @main() -> (i8[5], i32[5], i8[3]) {\n"
      "  %f = constant [1e10, -1e10, nan, 2.9, -2.9] : f32[5]\n"
      "  %a = cast %f {to = i8}\n  %b = cast %f {to = i32}\n"
      "  %i = constant [300, -129, 128] : i64[3]\n  %c = cast %i {to = i8}\n"
      "  return %a, %b, %c\n}\n");
  expectSameAsInterpreter(*m->entry());
}

TEST(CpuElementwise, Shifts) {
  for (const char* op : {"shift_left", "shift_right"})
    for (const char* t : kIntTypes)
      // Amounts in [0, 70) cover in-range shifts and shifts past every width.
      check(std::string("%a: ") + t + "[3,5], %b: " + t + "[5]", std::string(op) + " %a, %b", {{}, 1, false, 70});
}

TEST(CpuElementwise, ConstantsAndIota) {
  auto m = parseOrFail(
      "func @main() -> (f32[2,3], i64[4], bf16[2,2], bool[3], f16[], i32[3,4], f64[5], f32[2,3]) {\n"
      "  %a = constant [[1.5, -2, 3], [inf, nan, -0.0]] : f32[2,3]\n"
      "  %b = constant [1, -9223372036854775808, 9223372036854775807, 0] : i64[4]\n"
      "  %c = constant 0.1 : bf16[2,2]\n"
      "  %d = constant [true, false, true] : bool[3]\n"
      "  %e = constant 65504 : f16[]\n"
      "  %f = iota {axis = 1} : i32[3,4]\n"
      "  %g = iota {axis = 0} : f64[5]\n"
      "  %h = iota {axis = 0} : f32[2,3]\n"
      "  return %a, %b, %c, %d, %e, %f, %g, %h\n}\n");
  expectSameAsInterpreter(*m->entry());
  auto u = parseOrFail(
      "func @main() -> (u64[3], u8[3], i16[2], u32[4]) {\n"
      "  %a = constant [18446744073709551615, 9223372036854775808, 1] : u64[3]\n"
      "  %b = constant [255, 128, 0] : u8[3]\n"
      "  %c = constant [-32768, 32767] : i16[2]\n"
      "  %d = iota {axis = 0} : u32[4]\n"
      "  return %a, %b, %c, %d\n}\n");
  expectSameAsInterpreter(*u->entry());
}

}  // namespace
}  // namespace kiln::test
