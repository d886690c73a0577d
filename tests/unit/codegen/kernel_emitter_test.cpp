// emitKernels: every op of the op table (over its dtypes) and every example lowers to LLVM IR
// that passes the verifier; kernels are named after their ops; the error table; determinism.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "emit_test_util.h"

namespace kiln::codegen {
namespace {

using test::Emitted;
using test::emitSource;

// One op applied to parameters of the given types: "func @main(%a: T0, %b: T1) -> R { %r = OP ... }".
std::string oneOp(const std::string& op, const std::vector<std::string>& params, const std::string& attrs = "",
                  const std::string& annotation = "") {
  static const char* names[] = {"a", "b", "c", "d", "e"};
  std::string sig, args;
  for (size_t i = 0; i < params.size(); ++i) {
    sig += std::string(i ? ", " : "") + "%" + names[i] + ": " + params[i];
    args += std::string(i ? ", " : " ") + "%" + names[i];
  }
  std::string stmt = "%r = " + op + args + (attrs.empty() ? "" : " {" + attrs + "}") +
                     (annotation.empty() ? "" : " : " + annotation);
  // The function returns nothing, so the result type is left to inference.
  return "func @main(" + sig + ") -> () {\n  " + stmt + "\n  return\n}\n";
}

// Every case emits, verifies and names each kernel after its op (a reduction over trailing axes
// is a row kernel: k0_row_<op>).
void expectValid(const std::string& source, const std::string& kernelName) {
  SCOPED_TRACE(source);
  Emitted e = emitSource(source);
  ASSERT_TRUE(e.module) << "no module";
  EXPECT_EQ(e.problems, "") << e.text;
  std::string rowName = "k0_row_" + kernelName.substr(3);
  EXPECT_TRUE(e.module->getFunction(kernelName) || e.module->getFunction(rowName))
      << "no kernel " << kernelName << " in\n" << e.text;
}

const std::vector<std::string> kFloats = {"f16", "bf16", "f32", "f64"};
const std::vector<std::string> kInts = {"i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"};

std::vector<std::string> numTypes() {
  std::vector<std::string> all = kInts;
  all.insert(all.end(), kFloats.begin(), kFloats.end());
  return all;
}

// One op on parameters of the given types; `annotation` is the written result type (iota).
struct Case {
  std::string op;
  std::vector<std::string> params;
  std::string attrs;
  std::string annotation;
};
using Cases = std::vector<Case>;

// Collects cases: check(op, params, attrs, annotation).
struct CaseList {
  Cases cases;
  void operator()(std::string op, std::vector<std::string> params, std::string attrs = "", std::string annotation = "") {
    cases.push_back({std::move(op), std::move(params), std::move(attrs), std::move(annotation)});
  }
};

void expectAllValid(const Cases& cases) {
  for (const Case& c : cases) expectValid(oneOp(c.op, c.params, c.attrs, c.annotation), "k0_" + c.op);
}

Cases unaryCases() {
  CaseList check;
  for (const char* op : {"exp", "log", "sqrt", "rsqrt", "reciprocal", "tanh", "sigmoid", "erf", "sin", "cos", "floor",
                         "ceil", "sign", "log1p", "asin", "acos", "atan", "relu", "silu", "gelu"})
    for (const auto& t : kFloats) check(op, {t + "[3,5]"});
  for (const auto& t : kFloats) check("gelu", {t + "[7]"}, "approximate = \"tanh\"");
  for (const char* op : {"neg", "abs"})
    for (const auto& t : numTypes()) check(op, {t + "[2,3]"});
  check("not", {"bool[4]"});
  return check.cases;
}

Cases binaryCases() {
  CaseList check;
  for (const char* op : {"add", "sub", "mul", "div", "max", "min", "pow", "eq", "ne", "lt", "le", "gt", "ge"})
    for (const auto& t : numTypes()) {
      check(op, {t + "[4,3]", t + "[3]"});
      check(op, {t + "[1,3]", t + "[2,1]"});
      check(op, {t + "[]", t + "[5]"});
    }
  for (const char* op : {"and", "or", "xor"}) check(op, {"bool[2,3]", "bool[2,1]"});
  for (const char* op : {"shift_left", "shift_right"})
    for (const auto& t : kInts) check(op, {t + "[4,3]", t + "[3]"});
  return check.cases;
}

Cases selectCastIotaCases() {
  CaseList check;
  for (const auto& t : numTypes()) check("select", {"bool[3,1]", t + "[3,4]", t + "[4]"});
  check("select", {"bool[2]", "bool[2]", "bool[]"});
  std::vector<std::string> all = numTypes();
  all.push_back("bool");
  for (const auto& from : all)
    for (const auto& to : all) check("cast", {from + "[6]"}, "to = " + to);
  for (const auto& t : numTypes()) check("iota", {}, "axis = 1", t + "[3,4]");
  for (const auto& t : kInts) check("check_range", {t + "[6]"}, "min = -2, max = 5");
  return check.cases;
}

Cases reductionCases() {
  CaseList check;
  for (const char* op : {"reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod"})
    for (const auto& t : numTypes()) {
      check(op, {t + "[2,3,4]"});
      check(op, {t + "[2,3,4]"}, "axes = [0, -1], keepdims = true");
      check(op, {t + "[2,3,4]"}, "axes = [1]");
      check(op, {t + "[2,0,4]"}, "axes = [1]");  // empty: identity, or a kernel error
    }
  for (const char* op : {"argmax", "argmin"})
    for (const auto& t : numTypes()) {
      check(op, {t + "[3,5]"}, "axis = 1");
      check(op, {t + "[3,5]"}, "axis = 0, keepdims = true");
    }
  for (const char* op : {"softmax", "log_softmax"})
    for (const auto& t : kFloats) {
      check(op, {t + "[2,5]"});
      check(op, {t + "[2,5,3]"}, "axis = 1");
    }
  for (const auto& t : kFloats) {
    check("layer_norm", {t + "[2,3,4]", t + "[4]", t + "[4]"});
    check("layer_norm", {t + "[2,3,4]", t + "[3,4]", t + "[3,4]"}, "axis = 1, epsilon = 0.001");
    check("softmax_cross_entropy", {t + "[4,10]", "i64[4]"});
    check("softmax_cross_entropy", {t + "[4,10]", "i8[4]"});
  }
  return check.cases;
}

Cases layoutCases() {
  CaseList check;
  for (const auto& t : {std::string("f16"), std::string("bf16"), std::string("i32"), std::string("bool")}) {
    check("reshape", {t + "[2,3,4]"}, "shape = [4, -1]");
    check("transpose", {t + "[2,3,4]"}, "perm = [2, 0, 1]");
    check("broadcast_to", {t + "[3,1]"}, "shape = [2, 3, 4]");
    check("concat", {t + "[2,3]", t + "[2,1]", t + "[2,0]", t + "[2,2]"}, "axis = 1");
    check("concat", {t + "[1,3]"}, "axis = 0");
    check("slice", {t + "[10,6]"}, "starts = [1, -1], ends = [8, 0], steps = [3, -2]");
    check("gather", {t + "[5,4]", "i64[2,3]"}, "axis = 0");
    check("gather", {t + "[5,4]", "i8[]"}, "axis = -1");
  }
  for (const auto& t : numTypes()) {
    check("pad", {t + "[3,4]"}, "pads = [1, 0, 2, -1], value = 1.5");
    check("pad", {t + "[3,4]"}, "pads = [-1, -1, 0, 0]");
    check("pad", {t + "[3,4]"}, "pads = [1, 1, 1, 1], value = -7");
  }
  check("all_reduce", {"f32[3]"}, "reduce = \"mean\"");
  check("all_reduce", {"i64[3]"});
  check("transfer", {"f32[3]"}, "from = 0, to = 1");
  check("transfer", {"bf16[2,3]"}, "from = 1, to = 0");
  return check.cases;
}

Cases denseCases() {
  CaseList check;
  for (const auto& t : numTypes()) {
    check("matmul", {t + "[4,3]", t + "[3,5]"});
    check("matmul", {t + "[3]", t + "[2,3,5]"});
    check("matmul", {t + "[2,1,4,3]", t + "[3]"});
    check("matmul", {t + "[3]", t + "[3]"});
    check("matmul", {t + "[2,1,4,3]", t + "[5,3,2]"});
  }
  for (const auto& t : kFloats) {
    check("conv2d", {t + "[2,3,5,5]", t + "[4,3,1,1]"});
    check("batch_norm", {t + "[2,3,4]", t + "[3]", t + "[3]", t + "[3]", t + "[3]"}, "epsilon = 0.01");
    check("gather_backward", {t + "[2,3,4]", "i64[2,3]"}, "axis = 0, input_shape = [5, 4]");
  }
  // The windowed ops and their gradients in both layouts (ActivationLayout): activations
  // [N,C,H,W], or [N,H,W,C] with layout = "nhwc"; weights [O,C/groups,kh,kw] either way.
  for (bool last : {false, true}) {
    auto act = [last](int n, int c, int h, int w) {
      auto s = [](int v) { return std::to_string(v); };
      return last ? "[" + s(n) + ", " + s(h) + ", " + s(w) + ", " + s(c) + "]" : "[" + s(n) + ", " + s(c) + ", " + s(h) + ", " + s(w) + "]";
    };
    std::string layout = last ? ", layout = \"nhwc\"" : "";
    std::string conv = "strides = [2, 1], pads = [1, 0, 1, 2], dilations = [1, 2], groups = 2";
    std::string maxPool = "kernel = [2, 3], strides = [2, 1], pads = [1, 1, 0, 2]", avgPool = "kernel = [3, 3], pads = [1, 1, 1, 1]";
    for (const auto& t : kFloats) {
      check("conv2d", {t + act(1, 4, 6, 6), t + "[6,2,3,3]"}, conv + layout);
      check("max_pool2d", {t + act(1, 2, 5, 5)}, maxPool + layout);
      check("avg_pool2d", {t + act(1, 2, 5, 5)}, avgPool + layout);
      check("conv2d_backward_data", {t + act(1, 6, 3, 4), t + "[6,2,3,3]"}, conv + ", input_shape = " + act(1, 4, 6, 6) + layout);
      check("conv2d_backward_filter", {t + act(1, 4, 6, 6), t + act(1, 6, 3, 4)}, conv + ", filter_shape = [6, 2, 3, 3]" + layout);
      check("max_pool2d_backward", {t + act(1, 2, 5, 5), t + act(1, 2, 3, 6)}, maxPool + layout);
      check("avg_pool2d_backward", {t + act(1, 2, 2, 2)}, avgPool + ", input_shape = " + act(1, 2, 5, 5) + layout);
    }
  }
  return check.cases;
}

TEST(KernelEmitter, UnaryOps) { expectAllValid(unaryCases()); }
TEST(KernelEmitter, BinaryOpsWithBroadcasting) { expectAllValid(binaryCases()); }
TEST(KernelEmitter, SelectCastIota) { expectAllValid(selectCastIotaCases()); }
TEST(KernelEmitter, Reductions) { expectAllValid(reductionCases()); }
TEST(KernelEmitter, Layout) { expectAllValid(layoutCases()); }
TEST(KernelEmitter, DenseOps) { expectAllValid(denseCases()); }

TEST(KernelEmitter, Constants) {
  for (const char* literal :
       {"1.5 : f32[]", "1.5 : f16[4,4]", "-2.0 : bf16[3]", "[1.0, 2.5, -3.0] : f64[3]", "[[1, 2], [3, 4]] : i32[2,2]",
        "7 : i8[5]", "[1, -9000000000] : i64[2]", "[true, false, true] : bool[3]", "true : bool[2]",
        "[0.5, 1.5] : f16[2]", "[0.5, 1.5] : bf16[2]", "[] : f32[0,3]"})
    expectValid("func @main() -> () {\n  %r = constant " + std::string(literal) + "\n  return\n}\n", "k0_constant");
}

TEST(KernelEmitter, EveryKernelOpIsCovered) {
  std::set<std::string> covered = {"constant"};
  for (const Cases& cases : {unaryCases(), binaryCases(), selectCastIotaCases(),
                             reductionCases(), layoutCases(), denseCases()})
    for (const Case& c : cases) covered.insert(c.op);
  for (const OpInfo& info : allOps()) {
    if (info.cls == OpClass::Region || info.cls == OpClass::Terminator) continue;
    EXPECT_TRUE(covered.count(std::string(info.name))) << info.name << " has no emitter test";
  }
}

TEST(KernelEmitter, ExamplesEmitValidModules) {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(KILN_SOURCE_DIR) + "/examples")) {
    if (entry.path().extension() != ".kiln") continue;
    SCOPED_TRACE(entry.path().string());
    auto parsed = parseFile(entry.path().string());
    ASSERT_TRUE(parsed.ok()) << parsed.error().str();
    Emitted e = test::emitParsed(std::move(*parsed));
    EXPECT_EQ(e.problems, "") << e.text;
    for (const KernelGroup* g : e.plan->allGroups()) EXPECT_NE(e.module->getFunction(g->name), nullptr) << g->name;
    ++count;
  }
  EXPECT_GE(count, 9);
}

TEST(KernelEmitter, SameInputGivesByteIdenticalIr) {
  for (const auto& entry : std::filesystem::directory_iterator(std::string(KILN_SOURCE_DIR) + "/examples")) {
    if (entry.path().extension() != ".kiln") continue;
    SCOPED_TRACE(entry.path().string());
    auto a = parseFile(entry.path().string());
    auto b = parseFile(entry.path().string());
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(test::emitParsed(std::move(*a)).text, test::emitParsed(std::move(*b)).text);
  }
}

TEST(KernelEmitter, ErrorTableNamesOpsAndLocations) {
  Emitted e = emitSource(R"(func @main(%x: f32[5,4], %i: i32[3], %a: i32[4], %l: i64[2], %y: f32[2,7]) -> () {
  %g = gather %x, %i
  %d = div %a, %a
  %c = softmax_cross_entropy %y, %l
  %f = div %y, %y
  return
}
)");
  EXPECT_EQ(e.problems, "");
  ASSERT_EQ(e.errors.size(), 3u);
  EXPECT_EQ(e.errors[0].message, "gather: index out of range [-5, 5) for axis 0");
  EXPECT_EQ(e.errors[0].loc.line, 2);
  EXPECT_EQ(e.errors[1].message, "div: integer division by zero");
  EXPECT_EQ(e.errors[1].loc.line, 3);
  EXPECT_EQ(e.errors[2].message, "softmax_cross_entropy: label out of range [0, 7)");
  EXPECT_EQ(e.errors[2].loc.file, "test.kiln");
  // Kernels raise 1 + the index: gather stores 1, div 2, the cross entropy 3.
  EXPECT_NE(e.text.find("cmpxchg ptr %1, i32 0, i32 1 monotonic"), std::string::npos) << e.text;
  EXPECT_NE(e.text.find("i32 0, i32 2 monotonic"), std::string::npos);
  EXPECT_NE(e.text.find("i32 0, i32 3 monotonic"), std::string::npos);
}

TEST(KernelEmitter, DenseConstantIsAPrivateGlobalNamedAfterTheKernel) {
  Emitted e = emitSource("func @main() -> () {\n  %m = constant [[1, 2], [3, 4]] : i32[2,2]\n  %s = constant 0.5 : f32[8]\n  return\n}\n");
  EXPECT_EQ(e.problems, "");
  EXPECT_NE(e.text.find("@k0_constant.literal = private unnamed_addr constant [4 x i32] [i32 1, i32 2, i32 3, i32 4]"),
            std::string::npos)
      << e.text;
  EXPECT_EQ(e.module->getGlobalVariable("k1_constant.literal", true), nullptr) << "a splat is an immediate";
  EXPECT_NE(e.text.find("store float 5.000000e-01"), std::string::npos) << e.text;
}

TEST(KernelEmitter, FusedGroupFeedsOpsIntoEachOther) {
  // A hand-made group of three ops with two outputs, as the fusion pass will make them.
  auto parsed = parseModule(R"(func @main(%x: f16[4,3], %b: f16[3]) -> () {
  %h = add %x, %b
  %r = relu %h
  %s = reduce_sum %h {axes = [1], keepdims = true}
  %t = mul %r, %s
  return
}
)",
                            "fused.kiln");
  ASSERT_TRUE(parsed.ok());
  const Block& body = (*parsed)->entry()->body();
  std::vector<const Op*> ops;
  for (const auto& op : body.ops()) ops.push_back(op.get());
  BlockPlan plan;
  plan.block = &body;
  KernelGroup g;
  g.name = "k0_add_relu_reduce_sum_mul";
  g.ops = {ops[0], ops[1], ops[2], ops[3]};
  g.inputs = {ops[0]->operand(0), ops[0]->operand(1)};
  g.outputs = {ops[1]->result(), ops[3]->result()};
  g.results = g.outputs;
  g.segments = {{ops[1]->result()->type().shape, {0}}, {ops[3]->result()->type().shape, {1}}};
  plan.groups.push_back(g);
  plan.steps.push_back(Step{Step::Kind::Kernel, 0, RegionStep{nullptr, {}}});
  llvm::LLVMContext ctx;
  llvm::Module module("fused", ctx);
  test::TestTarget target;
  emitKernels(module, target, plan);
  std::string problems;
  llvm::raw_string_ostream os(problems);
  EXPECT_FALSE(llvm::verifyModule(module, &os)) << problems;
  std::string text = test::printModule(module);
  EXPECT_NE(text.find("define void @k0_add_relu_reduce_sum_mul"), std::string::npos) << text;
  // f16 intermediates are rounded to half between ops, as the interpreter stores them.
  EXPECT_NE(text.find("fptrunc float"), std::string::npos) << text;
}

}  // namespace
}  // namespace kiln::codegen
