// The parser's API: inferred and checked types, attributes, constants of every dtype, functions,
// entry selection, regions and SSA scoping, source locations, and parseFile.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>

#include "frontend/parser.h"
#include "ir/printer.h"

namespace kiln {
namespace {

std::unique_ptr<Module> parseOk(std::string_view text) {
  auto m = parseModule(text, "t.kiln");
  EXPECT_TRUE(m.ok()) << m.error().str();
  return m.ok() ? std::move(*m) : nullptr;
}

std::string parseError(std::string_view text) {
  auto m = parseModule(text, "t.kiln");
  return m.ok() ? "<parsed>" : m.error().str();
}

// The ops of a function body, in order.
std::vector<Op*> opsOf(const Function& f) {
  std::vector<Op*> ops;
  for (const auto& op : f.body().ops()) ops.push_back(op.get());
  return ops;
}

TensorType t(DType d, Shape s) { return {d, std::move(s)}; }

// The constant of `%c = constant LITERAL : TYPE` in a one-op function.
Tensor constantOf(const std::string& literal, const std::string& type) {
  auto m = parseOk("func @f() -> " + type + " {\n  %c = constant " + literal + " : " + type + "\n  return %c\n}\n");
  if (!m) return Tensor();
  return opsOf(*m->entry())[0]->attr("value").getDense();
}

TEST(Parser, InfersMissingResultTypesAndChecksWrittenOnes) {
  auto m = parseOk(
      "# y = relu(x @ w + b)\n"
      "func @main(%x: f32[64,784], %w: f32[784,128], %b: f32[128]) -> f32[64,128] {\n"
      "  %h = matmul %x, %w              # result type inferred: f32[64,128]\n"
      "  %y = add %h, %b : f32[64,128]   # an annotation is checked, never trusted\n"
      "  %r = relu %y\n"
      "  return %r\n"
      "}\n");
  ASSERT_TRUE(m);
  Function* f = m->entry();
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->name(), "main");
  EXPECT_EQ(f->paramTypes(), (std::vector<TensorType>{t(DType::F32, {64, 784}), t(DType::F32, {784, 128}), t(DType::F32, {128})}));
  EXPECT_EQ(f->resultTypes(), std::vector<TensorType>{t(DType::F32, {64, 128})});
  auto ops = opsOf(*f);
  ASSERT_EQ(ops.size(), 4u);
  EXPECT_EQ(ops[0]->kind(), OpKind::Matmul);
  EXPECT_EQ(ops[0]->result()->type(), t(DType::F32, {64, 128}));
  EXPECT_EQ(ops[0]->result()->name(), "h");
  EXPECT_EQ(ops[1]->operand(0), ops[0]->result());
  EXPECT_EQ(ops[1]->operand(1), f->params()[2]);
  EXPECT_EQ(ops[2]->result()->type(), t(DType::F32, {64, 128}));
  EXPECT_EQ(ops[3]->kind(), OpKind::Return);

  EXPECT_EQ(parseError("func @f(%x: f32[4]) -> f32[4] {\n  %y = neg %x : f32[3]\n  return %y\n}\n"),
            "t.kiln:2:17: error: neg: annotated result type f32[3] does not match the inferred type f32[4]");
}

TEST(Parser, LocationsAreTheOpNameAndTheFuncKeyword) {
  auto m = parseOk("\n  func @f(%x: f32[4]) -> f32[4] {\n\t%y = neg %x\n  return %y\n}\n");
  ASSERT_TRUE(m);
  Function* f = m->entry();
  EXPECT_EQ(f->loc().file, "t.kiln");
  EXPECT_EQ(f->loc().line, 2);
  EXPECT_EQ(f->loc().col, 3);
  auto ops = opsOf(*f);
  EXPECT_EQ(ops[0]->loc().line, 3);
  EXPECT_EQ(ops[0]->loc().col, 7);  // a tab is one column
  EXPECT_EQ(ops[1]->loc().line, 4);
  EXPECT_EQ(ops[1]->loc().col, 3);
}

TEST(Parser, MultipleFunctionsAndEntrySelection) {
  const char* helperFirst =
      "func @helper(%x: f32[]) -> f32[] {\n  return %x\n}\n"
      "func @main(%x: f32[], %y: f32[]) -> (f32[], f32[]) {\n  return %y, %x\n}\n"
      "func @none() -> () {\n  return\n}\n";
  auto m = parseOk(helperFirst);
  ASSERT_TRUE(m);
  ASSERT_EQ(m->functions().size(), 3u);
  EXPECT_EQ(m->entry()->name(), "main");
  EXPECT_EQ(m->lookup("helper")->params().size(), 1u);
  EXPECT_TRUE(m->lookup("none")->resultTypes().empty());
  EXPECT_EQ(m->lookup("main")->resultTypes().size(), 2u);

  auto noMain = parseOk("func @a() -> () {\n  return\n}\nfunc @b() -> () {\n  return\n}\n");
  ASSERT_TRUE(noMain);
  EXPECT_EQ(noMain->entry()->name(), "a");

  EXPECT_EQ(parseError("func @a() -> () {\n  return\n}\nfunc @a() -> () {\n  return\n}\n"),
            "t.kiln:4:6: error: redefinition of @a (first defined at 1:6)");
  EXPECT_EQ(parseError(""), "t.kiln:1:1: error: expected 'func' to start a function, got end of file");
  EXPECT_EQ(parseError("# only a comment\n"), "t.kiln:2:1: error: expected 'func' to start a function, got end of file");
}

TEST(Parser, OperandsWithAndWithoutParentheses) {
  auto m = parseOk(
      "func @f(%a: i32[2], %b: i32[2]) -> (i32[2], i32[2], i32[4]) {\n"
      "  %0 = add (%a, %b)\n"
      "  %1 = add %a, %b\n"
      "  %2 = iota() {axis = 0} : i32[4]\n"
      "  return %0, %1, %2\n"
      "}\n");
  ASSERT_TRUE(m);
  auto ops = opsOf(*m->entry());
  EXPECT_EQ(ops[0]->numOperands(), 2u);
  EXPECT_EQ(ops[1]->numOperands(), 2u);
  EXPECT_EQ(ops[0]->result()->name(), "0");
  EXPECT_EQ(ops[2]->result()->type(), t(DType::I32, {4}));
}

TEST(Parser, AttributesOfEveryKind) {
  auto m = parseOk(
      "func @f(%x: f32[2,3], %i: i64[2]) -> (f32[1,3], i32[2,3], f32[2,3], f32[2,3], f32[3,2], f32[4,5], f32[2,2]) {\n"
      "  %r = reduce_sum %x {axes = [-2], keepdims = true}\n"
      "  %c = cast %x {to = i32}\n"
      "  %g = gelu %x {approximate = \"tanh\"}\n"
      "  %l = layer_norm %x, %x, %x {axis = 0, epsilon = 1e-5}\n"
      "  %t = transpose %x {perm = [1, 0]}\n"
      "  %p = pad %x {pads = [1, 1, 1, 1], value = -2.0e3}\n"
      "  %s = gather %x, %i {axis = 1}\n"
      "  return %r, %c, %g, %l, %t, %p, %s\n"
      "}\n");
  ASSERT_TRUE(m);
  auto ops = opsOf(*m->entry());
  EXPECT_EQ(ops[0]->intsAttr("axes"), std::vector<int64_t>{-2});
  EXPECT_TRUE(ops[0]->attr("keepdims").getBool());
  EXPECT_EQ(ops[1]->attr("to").getDType(), DType::I32);
  EXPECT_EQ(ops[2]->attr("approximate").getString(), "tanh");
  EXPECT_EQ(ops[3]->intAttr("axis"), 0);
  EXPECT_EQ(ops[3]->attr("epsilon").kind(), AttrKind::Float);
  EXPECT_EQ(ops[3]->floatAttr("epsilon"), 1e-5);
  EXPECT_EQ(ops[5]->floatAttr("value"), -2000.0);
  EXPECT_EQ(ops[6]->result()->type(), t(DType::F32, {2, 2}));
  // Attributes are kept in table order, whatever order they were written in.
  auto m2 = parseOk("func @f(%x: f32[2]) -> f32[1] {\n  %r = reduce_max %x {keepdims = true, axes = [0]}\n  return %r\n}\n");
  ASSERT_TRUE(m2);
  EXPECT_EQ(opsOf(*m2->entry())[0]->attrs()[0].first, "axes");
}

TEST(Parser, FloatAttributeSpellings) {
  for (auto [text, value] : std::vector<std::pair<std::string, double>>{
           {"1.5", 1.5}, {"1e-5", 1e-5}, {"-2.0e3", -2000.0}, {"2E+2", 200.0}, {"0", 0.0}, {"-7", -7.0}, {"inf", INFINITY},
           {"-inf", -INFINITY}}) {
    auto m = parseOk("func @f(%x: f32[2]) -> f32[4] {\n  %p = pad %x {pads = [1, 1], value = " + text + "}\n  return %p\n}\n");
    ASSERT_TRUE(m) << text;
    EXPECT_EQ(opsOf(*m->entry())[0]->floatAttr("value"), value) << text;
  }
  auto m = parseOk("func @f(%x: f32[2]) -> f32[4] {\n  %p = pad %x {pads = [1, 1], value = nan}\n  return %p\n}\n");
  ASSERT_TRUE(m);
  EXPECT_TRUE(std::isnan(opsOf(*m->entry())[0]->floatAttr("value")));
}

TEST(Parser, ConstantsOfEveryDType) {
  Tensor b = constantOf("[true, false, true]", "bool[3]");
  EXPECT_EQ(b.dtype(), DType::Bool);
  EXPECT_TRUE(b.getBool(0));
  EXPECT_FALSE(b.getBool(1));

  Tensor i8 = constantOf("[-128, 127]", "i8[2]");
  EXPECT_EQ(i8.getInt(0), -128);
  EXPECT_EQ(i8.getInt(1), 127);
  Tensor i32 = constantOf("[[-2147483648], [2147483647]]", "i32[2,1]");
  EXPECT_EQ(i32.getInt(0), INT32_MIN);
  EXPECT_EQ(i32.getInt(1), INT32_MAX);
  Tensor i64 = constantOf("[-9223372036854775808, 9223372036854775807]", "i64[2]");
  EXPECT_EQ(i64.getInt(0), INT64_MIN);
  EXPECT_EQ(i64.getInt(1), INT64_MAX);

  EXPECT_EQ(constantOf("1.5", "f16[]").getDouble(0), 1.5);
  EXPECT_EQ(constantOf("3", "bf16[]").getDouble(0), 3.0);
  EXPECT_EQ(constantOf("[0.1, -inf]", "f64[2]").getDouble(0), 0.1);
  EXPECT_EQ(constantOf("[0.1, -inf]", "f64[2]").getDouble(1), -INFINITY);
  EXPECT_TRUE(std::isnan(constantOf("nan", "f32[]").getDouble(0)));
  Tensor f32 = constantOf("[[1, 2.5], [-3e2, 4]]", "f32[2,2]");
  EXPECT_EQ(f32.type(), t(DType::F32, {2, 2}));
  EXPECT_EQ(f32.getDouble(2), -300.0);
}

TEST(Parser, ConstantSplatsAndEmptyLiterals) {
  Tensor z = constantOf("0.5", "f32[64,128]");
  ASSERT_EQ(z.numElements(), 64 * 128);
  for (int64_t i = 0; i < z.numElements(); ++i) ASSERT_EQ(z.getDouble(i), 0.5);
  EXPECT_EQ(constantOf("[]", "f32[0]").numElements(), 0);
  // With no elements, lists only show the leading dims: `[]` also spells f32[0,3] (as printed).
  EXPECT_EQ(constantOf("[]", "f32[0,3]").type(), t(DType::F32, {0, 3}));
  EXPECT_EQ(constantOf("[[], []]", "i32[2,0]").type(), t(DType::I32, {2, 0}));
  EXPECT_EQ(constantOf("7", "i32[0]").numElements(), 0);
}

TEST(Parser, F32LiteralsRoundOnceLikeStrtof) {
  // Just above the midpoint between 1 and the next float: strtof rounds up; reading it as a
  // double first lands exactly on the midpoint, which then rounds to even (1.0).
  Tensor c = constantOf("1.00000005960464477550", "f32[]");
  EXPECT_EQ(c.getDouble(0), 1.00000011920928955078125);
  EXPECT_EQ(constantOf("0.1", "f32[]").getDouble(0), static_cast<double>(0.1f));
}

TEST(Parser, ConstantErrors) {
  auto err = [](const std::string& literal, const std::string& type) {
    return parseError("func @f() -> " + type + " {\n  %c = constant " + literal + " : " + type + "\n  return %c\n}\n");
  };
  EXPECT_EQ(err("300", "i8[]"), "t.kiln:2:17: error: constant: integer literal 300 is out of range for i8");
  EXPECT_EQ(err("[0, 2147483648]", "i32[2]"), "t.kiln:2:21: error: constant: integer literal 2147483648 is out of range for i32");
  EXPECT_EQ(err("1.5", "i32[]"), "t.kiln:2:17: error: constant: expected an integer for i32, got '1.5'");
  EXPECT_EQ(err("1", "bool[]"), "t.kiln:2:17: error: constant: expected true or false for bool, got '1'");
  EXPECT_EQ(err("true", "f32[]"), "t.kiln:2:17: error: constant: expected a number for f32, got 'true'");
  EXPECT_EQ(err("[1, 2, 3]", "f32[2]"), "t.kiln:2:17: error: constant: literal has shape [3], but the type is f32[2]");
  EXPECT_EQ(err("[[1, 2], [3]]", "f32[2,2]"),
            "t.kiln:2:26: error: list has 1 elements, but an earlier list at the same depth has 2: the literal is not rectangular");
  EXPECT_EQ(err("[1, [2]]", "f32[2]"),
            "t.kiln:2:21: error: expected a scalar here: the literal is not rectangular (other elements at this depth are scalars)");
  EXPECT_EQ(err("[1]", "f32[]"), "t.kiln:2:17: error: constant: literal has shape [1], but the type is f32[]");
  EXPECT_EQ(parseError("func @f() -> f32[] {\n  %c = constant 1.0\n  return %c\n}\n"),
            "t.kiln:3:3: error: expected ':' and the constant's type after its literal, got 'return'");
  EXPECT_EQ(err("0.0", "f32[65536,65536]"), "t.kiln:2:17: error: constant: f32[65536,65536] is too large for a constant (the limit is 1 GiB)");
}

TEST(Parser, IotaNeedsItsAnnotation) {
  auto m = parseOk("func @f() -> f32[2,3] {\n  %i = iota {axis = 1} : f32[2,3]\n  return %i\n}\n");
  ASSERT_TRUE(m);
  EXPECT_EQ(opsOf(*m->entry())[0]->result()->type(), t(DType::F32, {2, 3}));
  EXPECT_EQ(parseError("func @f() -> f32[2,3] {\n  %i = iota {axis = 1}\n  return %i\n}\n"),
            "t.kiln:2:8: error: iota: needs its result type written out, e.g. `: i32[8]`");
}

const char* kWhile =
    "func @main(%i0: i32[], %x0: f32[3], %limit: i32[]) -> (i32[], f32[3]) {\n"
    "  %n, %y = while %i0, %x0 (%i: i32[], %x: f32[3]) cond {\n"
    "    %c = lt %i, %limit\n"
    "    yield %c\n"
    "  } body {\n"
    "    %c = constant 1 : i32[]\n"  // same name as in cond: sibling regions do not see each other
    "    %i1 = add %i, %c\n"
    "    %x1 = sqrt %x\n"
    "    yield %i1, %x1\n"
    "  } : i32[], f32[3]\n"
    "  return %n, %y\n"
    "}\n";

TEST(Parser, WhileRegionsShareParametersAndSeeOuterValues) {
  auto m = parseOk(kWhile);
  ASSERT_TRUE(m);
  Function* f = m->entry();
  Op* loop = opsOf(*f)[0];
  ASSERT_EQ(loop->kind(), OpKind::While);
  ASSERT_EQ(loop->numRegions(), 2u);
  for (size_t r = 0; r < 2; ++r) {
    Block* region = loop->region(r);
    ASSERT_EQ(region->numArguments(), 2u);
    EXPECT_EQ(region->argument(0)->name(), "i");
    EXPECT_EQ(region->argument(1)->type(), t(DType::F32, {3}));
    EXPECT_EQ(region->terminator()->kind(), OpKind::Yield);
  }
  Op* lt = loop->region(0)->ops().front().get();
  EXPECT_EQ(lt->operand(0), loop->region(0)->argument(0));
  EXPECT_EQ(lt->operand(1), f->params()[2]);  // %limit from the function
  EXPECT_EQ(loop->result(0)->name(), "n");
  EXPECT_EQ(loop->result(1)->type(), t(DType::F32, {3}));
}

TEST(Parser, MapSlicesOperandsAndStacksYields) {
  auto m = parseOk(
      "func @main(%xs: f32[8,16], %ss: f32[8], %k: f32[]) -> f32[8,16] {\n"
      "  %ys = map %xs, %ss (%x: f32[16], %s: f32[]) {\n"
      "    %t = mul %x, %s\n"
      "    %u = mul %t, %k\n"
      "    yield %u\n"
      "  }\n"
      "  return %ys\n"
      "}\n");
  ASSERT_TRUE(m);
  Op* map = opsOf(*m->entry())[0];
  EXPECT_EQ(map->result()->type(), t(DType::F32, {8, 16}));
  EXPECT_EQ(map->region(0)->numArguments(), 2u);
}

TEST(Parser, ScopingRules) {
  // A region does not see its own op's results, so its parameters may reuse their names.
  EXPECT_TRUE(parseOk("func @f(%xs: f32[4]) -> f32[4] {\n  %x = map %xs (%x: f32[]) {\n    %y = neg %x\n    yield %y\n  }\n"
                      "  return %x\n}\n"));
  EXPECT_EQ(parseError("func @f(%xs: f32[4]) -> f32[4] {\n  %y = map %xs (%x: f32[]) {\n    %z = neg %y\n    yield %z\n  }\n"
                       "  return %y\n}\n"),
            "t.kiln:3:14: error: use of undefined value %y");
  // Values defined in a region are gone after it.
  EXPECT_EQ(parseError("func @f(%xs: f32[4]) -> f32[4] {\n  %y = map %xs (%x: f32[]) {\n    %z = neg %x\n    yield %z\n  }\n"
                       "  return %z\n}\n"),
            "t.kiln:6:10: error: use of undefined value %z");
  // An outer name cannot be redefined inside a region.
  EXPECT_EQ(parseError("func @f(%xs: f32[4]) -> f32[4] {\n  %y = map %xs (%xs: f32[]) {\n    yield %xs\n  }\n  return %y\n}\n"),
            "t.kiln:2:17: error: redefinition of %xs (first defined at 1:9)");
  EXPECT_EQ(parseError("func @f(%x: f32[4]) -> f32[4] {\n  %a, %a = neg %x\n  return %a\n}\n"),
            "t.kiln:2:7: error: redefinition of %a (first defined at 2:3)");
  // Names are per function.
  EXPECT_TRUE(parseOk("func @a(%x: f32[]) -> f32[] {\n  return %x\n}\nfunc @b(%x: f32[]) -> f32[] {\n  return %x\n}\n"));
  EXPECT_EQ(parseError("func @a(%x: f32[]) -> f32[] {\n  return %x\n}\nfunc @b(%y: f32[]) -> f32[] {\n  return %x\n}\n"),
            "t.kiln:5:10: error: use of undefined value %x");
}

TEST(Parser, CanonicalTextPrintsBackUnchanged) {
  const std::string canonical =
      "func @main(%x: f32[2,3], %i: i32[]) -> (f32[3], i32[]) {\n"
      "  %0 = reduce_sum %x {axes = [0]} : f32[3]\n"
      "  %c = constant [[1.5, -2.0, 0.1], [inf, nan, 1e-05]] : f32[2,3]\n"
      "  %b = constant true : bool[2]\n"
      "  %h = constant 0.099975586 : f16[]\n"
      "  %n = constant -9223372036854775808 : i64[]\n"
      "  %y = map %x (%r: f32[3]) {\n"
      "    %s = softmax %r {axis = 0} : f32[3]\n"
      "    yield %s\n"
      "  } : f32[2,3]\n"
      "  return %0, %i\n"
      "}\n"
      "\n"
      "func @other() -> () {\n"
      "  return\n"
      "}\n";
  auto m = parseOk(canonical);
  ASSERT_TRUE(m);
  EXPECT_EQ(printModule(*m), canonical);
}

TEST(Parser, StringEscapes) {
  // gelu rejects the value, and its message shows what the parser decoded.
  EXPECT_EQ(parseError("func @f(%x: f32[]) -> f32[] {\n  %y = gelu %x {approximate = \"a\\\"b\\\\c\"}\n  return %y\n}\n"),
            "t.kiln:2:13: error: gelu: approximate must be \"none\" or \"tanh\", got \"a\"b\\c\"");
  EXPECT_EQ(parseError("func @f(%x: f32[]) -> f32[] {\n  %y = gelu %x {approximate = \"a\\tb\"}\n"),
            "t.kiln:2:33: error: unknown escape sequence '\\t' in string (use \\\", \\\\ or \\n)");
}

TEST(Parser, LimitsAreErrorsNotCrashes) {
  // Nesting: regions, attribute lists and constant literals stop at a depth limit.
  std::string regions = "func @f(%x: f32[]) -> f32[] {\n";
  for (int i = 0; i < 300; ++i) regions += "%r" + std::to_string(i) + " = while %x (%a" + std::to_string(i) + ": f32[]) cond {\n";
  EXPECT_EQ(parseError(regions), "t.kiln:258:38: error: regions are nested too deeply (the limit is 256)");
  std::string deep(100000, '[');
  EXPECT_EQ(parseError("func @f(%x: f32[]) -> f32[] {\n  %y = reshape %x {shape = " + deep),
            "t.kiln:2:284: error: list is nested too deeply (the limit is 256)");
  EXPECT_EQ(parseError("func @f() -> f32[] {\n  %c = constant " + deep),
            "t.kiln:2:273: error: literal is nested too deeply (the limit is 256)");
  // Types: rank and size.
  std::string rank65 = "f32[1";
  for (int i = 0; i < 64; ++i) rank65 += ",1";
  EXPECT_EQ(parseError("func @f(%x: " + rank65 + "]) -> () {\n"), "t.kiln:1:145: error: type has more than 64 dimensions");
  EXPECT_EQ(parseError("func @f(%x: f32[65536,65536,65537]) -> () {\n"),
            "t.kiln:1:13: error: type f32[65536,65536,65537] is too large (the limit is 2^48 elements)");
  // Inferred types are held to the same limit.
  EXPECT_EQ(parseError("func @f(%x: f32[]) -> () {\n  %y = broadcast_to %x {shape = [16777216, 16777217]}\n"),
            "t.kiln:2:21: error: broadcast_to: result type f32[16777216,16777217] is too large (the limit is 2^48 elements)");
  // Numbers.
  EXPECT_EQ(parseError("func @f(%x: f32[9223372036854775808]) -> () {\n"),
            "t.kiln:1:17: error: integer literal out of range (it must fit in int64)");
  // A long name is not compared with every op name.
  std::string longName(100000, 'a');
  EXPECT_EQ(parseError("func @f() -> () {\n  %y = " + longName + "\n"), "t.kiln:2:8: error: unknown op '" + longName + "'");
}

TEST(Parser, LongProgramsParse) {
  // Parsing is linear: a long chain of ops is no problem.
  std::string text = "func @f(%v0: f32[4]) -> f32[4] {\n";
  constexpr int kOps = 20000;
  for (int i = 1; i <= kOps; ++i) text += "  %v" + std::to_string(i) + " = neg %v" + std::to_string(i - 1) + "\n";
  text += "  return %v" + std::to_string(kOps) + "\n}\n";
  auto m = parseOk(text);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->entry()->body().ops().size(), static_cast<size_t>(kOps + 1));
}

TEST(Parser, ParseFileReportsUnreadablePaths) {
  auto missing = parseFile("/nonexistent/dir/x.kiln");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().str(), "error: cannot read '/nonexistent/dir/x.kiln': No such file or directory");
  EXPECT_FALSE(missing.error().loc().known());
  auto dir = parseFile("/");
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.error().str(), "error: cannot read '/': Is a directory");

  std::string path = ::testing::TempDir() + "/parse_file_test.kiln";
  std::ofstream(path) << "func @main(%x: f32[]) -> f32[] {\n  %y = neg %x : f32[]\n  return %y\n}\n";
  auto m = parseFile(path);
  ASSERT_TRUE(m.ok()) << m.error().str();
  EXPECT_EQ(opsOf(*(*m)->entry())[0]->loc().file, path);
}

}  // namespace
}  // namespace kiln
