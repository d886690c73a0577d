// Every class of parse error, input text to the exact `file:line:col: error: ...` it produces.
#include <gtest/gtest.h>

#include "frontend/parser.h"

namespace kiln {
namespace {

struct Case {
  const char* what;
  std::string text;
  std::string error;
};

// `func @f(%x: f32[4], %b: bool[]) -> f32[4] {` then the body lines, then `}`.
std::string body(const std::string& lines) { return "func @f(%x: f32[4], %b: bool[]) -> f32[4] {\n" + lines + "}\n"; }

const std::vector<Case>& cases() {
  static const std::vector<Case> kCases = {
      // Syntax.
      {"parameter list", "func @main(%x: f32[3] {\n", "d.kiln:1:23: error: expected ',' or ')' after parameter, got '{'"},
      {"missing arrow", "func @main(%x: f32[3]) f32[3] {\n", "d.kiln:1:24: error: expected '->' and the result types after the parameters, got 'f32'"},
      {"missing func", "fn @main() -> () {\n", "d.kiln:1:1: error: expected 'func' to start a function, got 'fn'"},
      {"missing function name", "func main() -> () {\n", "d.kiln:1:6: error: expected a function name such as @main after 'func', got 'main'"},
      {"bad shape", "func @f(%x: f32[3 4]) -> () {\n", "d.kiln:1:19: error: expected ',' or ']' in the shape, got '4'"},
      {"trailing comma in shape", "func @f(%x: f32[3,]) -> () {\n", "d.kiln:1:19: error: expected a dimension (a non-negative integer), got ']'"},
      {"negative dim", "func @f(%x: f32[-3]) -> () {\n", "d.kiln:1:17: error: dimension must not be negative, got -3"},
      {"missing '='", body("  %y neg %x\n  return %y\n"), "d.kiln:2:6: error: expected ',' or '=' after %y, got 'neg'"},
      {"statement", body("  neg %x\n  return %x\n"), "d.kiln:2:3: error: expected a statement ('%name = op ...' or 'return') or '}', got 'neg'"},
      {"attribute syntax", body("  %y = softmax %x {axis 0}\n  return %y\n"), "d.kiln:2:25: error: expected '=' after attribute name 'axis', got '0'"},
      {"attribute value", body("  %y = gelu %x {approximate = tanh}\n  return %y\n"),
       "d.kiln:2:31: error: expected an attribute value (a number, string, true, false, dtype or list), got 'tanh'"},
      {"annotation", body("  %y = neg %x : 4\n  return %y\n"), "d.kiln:2:17: error: expected a type such as f32[4], got '4'"},
      {"statement after return", body("  return %x\n  %y = neg %x\n"),
       "d.kiln:3:3: error: expected '}' after 'return', which ends the body of @f, got '%y'"},
      {"missing return", body("  %y = neg %x\n"), "d.kiln:3:1: error: expected 'return' at the end of the body of @f, got '}'"},
      {"missing yield", body("  %y = map %x (%e: f32[]) {\n  }\n  return %y\n"),
       "d.kiln:3:3: error: expected 'yield' at the end of the body region of map, got '}'"},
      {"while labels", body("  %y = while %x (%e: f32[4]) {\n"), "d.kiln:2:30: error: expected 'cond' and the cond region, got '{'"},
      {"result of return", body("  %y = return %x\n"), "d.kiln:2:8: error: 'return' produces no values; write it without '%name ='"},
      {"invalid value name", body("  %1a = neg %x\n"), "d.kiln:2:3: error: invalid name '%1a': a name starts with a letter or '_' or is all digits"},
      {"invalid number", body("  %y = constant 1.5.2 : f32[]\n"), "d.kiln:2:17: error: invalid number '1.5.2'"},

      // Lexical.
      {"unexpected character", body("  %y = neg $x\n"), "d.kiln:2:12: error: unexpected character '$'"},
      {"non-ascii byte", body("  %y = neg %x\xc3\xa9\n"), "d.kiln:2:14: error: unexpected character '\\xc3'"},
      {"nul byte", body(std::string("  %y = neg %x\0\n", 15)), "d.kiln:2:14: error: unexpected character '\\x00'"},
      {"integer out of range", body("  %y = reshape %x {shape = [99999999999999999999]}\n"),
       "d.kiln:2:29: error: integer literal out of range (it must fit in 64 bits)"},
      {"unknown dtype", "func @main(%x: f31[3]) -> f32[3] {\n", "d.kiln:1:16: error: unknown dtype 'f31'"},
      {"unknown escape", body("  %y = gelu %x {approximate = \"\\q\"}\n"),
       "d.kiln:2:32: error: unknown escape sequence '\\q' in string (use \\\", \\\\ or \\n)"},
      {"control character in string", body("  %y = gelu %x {approximate = \"\x01\"}\n"),
       "d.kiln:2:32: error: unexpected character '\\x01' in string"},

      // Unterminated input, string and region.
      {"unterminated body", "func @main(%x: f32[3]) -> f32[3] {\n  %y = neg %x\n",
       "d.kiln:3:1: error: expected '}' to close the body of @main (opened at 1:34), got end of file"},
      {"unterminated function header", "func @main(%x: f32[3]", "d.kiln:1:22: error: expected ',' or ')' after parameter, got end of file"},
      {"unterminated string", body("  %y = gelu %x {approximate = \"tanh}\n  return %y\n"), "d.kiln:2:31: error: unterminated string"},
      {"unterminated region", "func @f(%x: f32[4]) -> f32[4] {\n  %y = map %x (%e: f32[]) {\n    yield %e\n",
       "d.kiln:4:1: error: expected '}' to close the body region of map (opened at 2:27), got end of file"},
      {"missing comma", body("  %y = add %x %x\n  return %y\n"), "d.kiln:2:15: error: expected the end of the statement, got '%x'"},
      {"unterminated list", body("  %y = reshape %x {shape = [4, 1\n"), "d.kiln:3:1: error: expected ',' or ']' in the list, got '}'"},

      // Unknown op.
      {"unknown op", body("  %y = addd %x, %x\n  return %y\n"), "d.kiln:2:8: error: unknown op 'addd' (did you mean 'add'?)"},
      {"unknown op far from any", body("  %y = frobnicate %x\n  return %y\n"), "d.kiln:2:8: error: unknown op 'frobnicate'"},

      // Attributes: unknown, wrong kind, missing, given twice.
      {"unknown attribute", body("  %y = softmax %x {axs = 0}\n  return %y\n"),
       "d.kiln:2:20: error: softmax: unknown attribute 'axs' (expected one of: axis)"},
      {"attribute on an op without any", body("  %y = relu %x {alpha = 0.1}\n  return %y\n"),
       "d.kiln:2:17: error: relu: unknown attribute 'alpha' (it takes no attributes)"},
      {"attribute of the wrong kind", body("  %y = softmax %x {axis = 1.5}\n  return %y\n"),
       "d.kiln:2:20: error: softmax: attribute 'axis' must be an integer, got 1.5"},
      {"list attribute of the wrong kind", body("  %y = reshape %x {shape = [2, \"2\"]}\n  return %y\n"),
       "d.kiln:2:20: error: reshape: attribute 'shape' must be a list of integers, got [2, \"2\"]"},
      {"missing attribute", body("  %y = reshape %x\n  return %y\n"), "d.kiln:2:8: error: reshape: missing attribute 'shape'"},
      {"duplicate attribute", body("  %y = softmax %x {axis = 0, axis = 0}\n  return %y\n"),
       "d.kiln:2:30: error: softmax: attribute 'axis' is given twice (first at 2:20)"},

      // Types and shapes: inference errors point at the first operand.
      {"shape mismatch", "func @main(%h: f32[64,128], %b: f32[3]) -> f32[64,128] {\n  %y = add %h, %b : f32[64,128]\n  return %y\n}\n",
       "d.kiln:2:12: error: add: operand shapes f32[64,128] and f32[3] do not broadcast"},
      {"dtype mismatch", body("  %y = add %x, %b\n  return %y\n"), "d.kiln:2:12: error: add: operand dtypes f32[4] and bool[] differ (use cast)"},
      {"wrong dtype", body("  %y = not %x\n  return %y\n"), "d.kiln:2:12: error: not: operand must have bool, got f32[4]"},
      {"attribute value out of range", body("  %y = softmax %x {axis = 3}\n  return %y\n"),
       "d.kiln:2:16: error: softmax: axis 3 is out of range for rank 1"},
      {"operand count", body("  %y = add %x\n  return %y\n"), "d.kiln:2:8: error: add: expected 2 operands, got 1"},
      {"missing operand before the next statement", body("  %y = neg\n  %z = neg %y\n  return %z\n"),
       "d.kiln:2:8: error: neg: expected 1 operand, got 0"},
      {"annotation mismatch", body("  %y = neg %x : f32[5]\n  return %y\n"),
       "d.kiln:2:17: error: neg: annotated result type f32[5] does not match the inferred type f32[4]"},
      {"annotation count", body("  %y = neg %x : f32[4], f32[4]\n  return %y\n"),
       "d.kiln:2:17: error: neg: the annotation has 2 types, but the op has 1 result"},
      {"result count", body("  %y, %z = neg %x\n  return %y\n"), "d.kiln:2:3: error: neg has 1 result, but 2 names are given"},
      {"map parameter type", body("  %y = map %x (%e: f32[2]) {\n    yield %e\n  }\n  return %y\n"),
       "d.kiln:2:16: error: map: region parameter %e is f32[2], expected f32[] (operand 0 sliced along axis 0)"},
      {"map parameter count", body("  %y = map %x (%e: f32[], %g: f32[]) {\n    yield %e\n  }\n  return %y\n"),
       "d.kiln:2:15: error: map: the region has 2 parameters, expected 1 (one per operand)"},
      {"map of a scalar", body("  %y = map %b (%e: bool[]) {\n    yield %e\n  }\n  return %x\n"),
       "d.kiln:2:12: error: map: operands are sliced along axis 0, so they need rank >= 1, got bool[]"},
      {"while cond yield", body("  %y = while %x (%e: f32[4]) cond {\n    yield %e\n  } body {\n    yield %e\n  }\n  return %y\n"),
       "d.kiln:3:5: error: while: cond region must yield one bool[] value, got (f32[4])"},
      {"while body yield", body("  %y = while %x (%e: f32[4]) cond {\n    yield %b\n  } body {\n    yield %b\n  }\n  return %y\n"),
       "d.kiln:5:5: error: while: body region must yield the loop-carried types (f32[4]), got (bool[])"},
      {"constant shape", body("  %c = constant [1, 2] : f32[3]\n  return %c\n"),
       "d.kiln:2:17: error: constant: literal has shape [2], but the type is f32[3]"},
      {"constant range", body("  %c = constant 128 : i8[]\n  return %x\n"), "d.kiln:2:17: error: constant: integer literal 128 is out of range for i8"},

      // Use before definition and redefinition.
      {"use before definition", body("  %y = add %x, %z\n  %z = neg %x\n  return %y\n"), "d.kiln:2:16: error: use of undefined value %z"},
      {"undefined in return", body("  return %nope\n"), "d.kiln:2:10: error: use of undefined value %nope"},
      {"redefinition", body("  %y = neg %x\n  %y = neg %x\n  return %y\n"), "d.kiln:3:3: error: redefinition of %y (first defined at 2:3)"},
      {"redefinition of a parameter", "func @f(%x: f32[], %x: f32[]) -> () {\n", "d.kiln:1:20: error: redefinition of %x (first defined at 1:9)"},
      {"redefinition of a function", "func @f() -> () {\n  return\n}\nfunc @f() -> () {\n  return\n}\n",
       "d.kiln:4:6: error: redefinition of @f (first defined at 1:6)"},

      // Bad return type, and terminators in the wrong place.
      {"bad return type", body("  %y = reduce_sum %x\n  return %y\n"),
       "d.kiln:3:3: error: return: returned types (f32[]) do not match the result types (f32[4]) of @f"},
      {"return count", body("  return %x, %x\n"), "d.kiln:2:3: error: return: returned types (f32[4], f32[4]) do not match the result types (f32[4]) of @f"},
      {"yield outside a region", body("  yield %x\n"), "d.kiln:2:3: error: 'yield' is only allowed inside a region (a function ends with 'return')"},
      {"return inside a region", body("  %y = map %x (%e: f32[]) {\n    return %e\n  }\n  return %y\n"),
       "d.kiln:3:5: error: 'return' is not allowed inside a region (a region ends with 'yield')"},
  };
  return kCases;
}

TEST(Diagnostics, EveryClassHasALocatedMessage) {
  for (const Case& c : cases()) {
    auto m = parseModule(c.text, "d.kiln");
    ASSERT_FALSE(m.ok()) << c.what << ": parsed";
    EXPECT_EQ(m.error().str(), c.error) << c.what;
  }
}

}  // namespace
}  // namespace kiln
