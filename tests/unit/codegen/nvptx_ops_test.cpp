// PTX for every op of the op table and every example: kernels are .entry points named after their
// ops, math is resolved (libdevice linked, no intrinsic NVPTX cannot lower), output is
// deterministic, and ptxas accepts it for sm_80, sm_90 and sm_100 (sm_80/sm_90 PTX on later GPUs).
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <set>

#include "codegen/compile_stages.h"
#include "frontend/parser.h"
#include "nvptx_test_util.h"

namespace kiln::codegen {
namespace {

using testing::expectAssembles;
using testing::generatedArchs;

struct OpCase {
  std::string op;    // the op under test: the kernel k0_<op> (or a later one) must exist
  std::string text;  // a .kiln module using it
};

std::string unary(const std::string& op, const std::string& dtype, const std::string& attrs = "") {
  return "func @main(%x: " + dtype + "[4,8]) -> " + dtype + "[4,8] {\n  %y = " + op + " %x" + attrs +
         "\n  return %y\n}\n";
}

std::string binary(const std::string& op, const std::string& dtype, const std::string& result) {
  return "func @main(%a: " + dtype + "[4,8], %b: " + dtype + "[8]) -> " + result + "[4,8] {\n  %y = " + op +
         " %a, %b\n  return %y\n}\n";
}

// One or more cases per op, across dtypes (f16/bf16 compute in f32; ints and bools have their own code).
std::vector<OpCase> opCases() {
  std::vector<OpCase> cases;
  for (const char* op : {"neg", "abs", "exp", "log", "sqrt", "rsqrt", "reciprocal", "tanh", "sigmoid", "erf", "sin",
                         "cos", "floor", "ceil", "sign", "log1p", "asin", "acos", "atan", "relu", "silu", "gelu"})
    for (const char* dtype : {"f32", "f64", "f16", "bf16"}) cases.push_back({op, unary(op, dtype)});
  cases.push_back({"gelu", unary("gelu", "f32", " {approximate = \"tanh\"}")});
  for (const char* op : {"neg", "abs"})
    for (const char* dtype : {"i8", "i16", "i32", "i64", "u8", "u64"}) cases.push_back({op, unary(op, dtype)});
  cases.push_back({"not", unary("not", "bool")});
  for (const char* op : {"add", "sub", "mul", "div", "max", "min", "pow"})
    for (const char* dtype : {"f32", "f64", "f16", "bf16", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"})
      cases.push_back({op, binary(op, dtype, dtype)});
  for (const char* op : {"shift_left", "shift_right"})
    for (const char* dtype : {"i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"})
      cases.push_back({op, binary(op, dtype, dtype)});
  for (const char* op : {"eq", "ne", "lt", "le", "gt", "ge"})
    for (const char* dtype : {"f32", "f16", "i32", "i64", "u8", "u64"}) cases.push_back({op, binary(op, dtype, "bool")});
  for (const char* op : {"and", "or", "xor"}) cases.push_back({op, binary(op, "bool", "bool")});
  cases.push_back({"select", "func @main(%c: bool[4,8], %a: f32[4,8], %b: f32[8]) -> f32[4,8] {\n"
                             "  %y = select %c, %a, %b\n  return %y\n}\n"});
  for (auto [from, to] : std::vector<std::pair<const char*, const char*>>{
           {"f32", "i32"}, {"i64", "f16"}, {"bool", "f32"}, {"f32", "bf16"}, {"f64", "i8"}, {"i32", "bool"},
           {"u64", "f32"}, {"f64", "u64"}, {"f32", "u8"}, {"u8", "i64"}, {"i16", "u32"}})
    cases.push_back({"cast", "func @main(%x: " + std::string(from) + "[4,8]) -> " + to + "[4,8] {\n  %y = cast %x {to = " +
                                 to + "}\n  return %y\n}\n"});
  cases.push_back({"constant", "func @main() -> f32[4,8] {\n  %c = constant 1.5 : f32[4,8]\n  return %c\n}\n"});
  cases.push_back({"constant", "func @main() -> i32[2,2] {\n  %c = constant [[1, 2], [3, 4]] : i32[2,2]\n  return %c\n}\n"});
  for (const char* t : {"i32", "i64", "u8", "u64"})
    cases.push_back({"check_range", "func @main(%x: " + std::string(t) + "[4,8]) -> " + t +
                                        "[4,8] {\n  %y = check_range %x {min = 0, max = 10}\n  return %y\n}\n"});
  cases.push_back({"iota", "func @main() -> f32[4,8] {\n  %i = iota {axis = 1} : f32[4,8]\n  return %i\n}\n"});
  cases.push_back({"iota", "func @main() -> i64[4,8] {\n  %i = iota {axis = 0} : i64[4,8]\n  return %i\n}\n"});
  for (const char* op : {"reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod"}) {
    cases.push_back({op, "func @main(%x: f32[4,8]) -> f32[4] {\n  %y = " + std::string(op) + " %x {axes = [1]}\n  return %y\n}\n"});
    cases.push_back({op, "func @main(%x: i32[4,8]) -> i32[] {\n  %y = " + std::string(op) + " %x\n  return %y\n}\n"});
    cases.push_back({op, "func @main(%x: u32[4,8]) -> u32[4] {\n  %y = " + std::string(op) + " %x {axes = [1]}\n  return %y\n}\n"});
    cases.push_back({op, "func @main(%x: f16[4,8,2]) -> f16[1,8,1] {\n  %y = " + std::string(op) +
                             " %x {axes = [0, -1], keepdims = true}\n  return %y\n}\n"});
  }
  for (const char* op : {"argmax", "argmin"})
    cases.push_back({op, "func @main(%x: f32[4,8]) -> i64[4] {\n  %y = " + std::string(op) + " %x {axis = 1}\n  return %y\n}\n"});
  for (const char* op : {"softmax", "log_softmax"}) {
    cases.push_back({op, unary(op, "f32")});
    cases.push_back({op, unary(op, "f16", " {axis = 0}")});
  }
  cases.push_back({"layer_norm", "func @main(%x: f32[4,8], %s: f32[8], %b: f32[8]) -> f32[4,8] {\n"
                                 "  %y = layer_norm %x, %s, %b\n  return %y\n}\n"});
  cases.push_back({"matmul", "func @main(%a: f32[4,8], %b: f32[8,3]) -> f32[4,3] {\n  %y = matmul %a, %b\n  return %y\n}\n"});
  cases.push_back({"matmul", "func @main(%a: f16[2,4,8], %b: f16[8,3]) -> f16[2,4,3] {\n  %y = matmul %a, %b\n  return %y\n}\n"});
  cases.push_back({"matmul", "func @main(%a: i32[8], %b: i32[8]) -> i32[] {\n  %y = matmul %a, %b\n  return %y\n}\n"});
  cases.push_back({"reshape", "func @main(%x: f32[4,8]) -> f32[8,4] {\n  %y = reshape %x {shape = [8, -1]}\n  return %y\n}\n"});
  cases.push_back({"transpose", "func @main(%x: f32[2,4,8]) -> f32[8,2,4] {\n  %y = transpose %x {perm = [2, 0, 1]}\n  return %y\n}\n"});
  cases.push_back({"broadcast_to", "func @main(%x: i8[8]) -> i8[4,8] {\n  %y = broadcast_to %x {shape = [4, 8]}\n  return %y\n}\n"});
  cases.push_back({"concat", "func @main(%a: f32[4,8], %b: f32[2,8]) -> f32[6,8] {\n  %y = concat %a, %b {axis = 0}\n  return %y\n}\n"});
  cases.push_back({"slice", "func @main(%x: f32[4,8]) -> f32[4,3] {\n  %y = slice %x {starts = [1], ends = [7], axes = [1], steps = [2]}\n  return %y\n}\n"});
  cases.push_back({"gather", "func @main(%x: f32[5,8], %i: i64[3]) -> f32[3,8] {\n  %y = gather %x, %i\n  return %y\n}\n"});
  cases.push_back({"gather", "func @main(%x: f32[5,8], %i: i32[2,2]) -> f32[5,2,2] {\n  %y = gather %x, %i {axis = 1}\n  return %y\n}\n"});
  cases.push_back({"pad", "func @main(%x: f32[4,8]) -> f32[6,9] {\n  %y = pad %x {pads = [1, 0, 1, 1], value = 2.5}\n  return %y\n}\n"});
  cases.push_back({"conv2d", "func @main(%x: f32[1,2,5,5], %w: f32[3,2,3,3]) -> f32[1,3,5,5] {\n"
                             "  %y = conv2d %x, %w {pads = [1, 1, 1, 1]}\n  return %y\n}\n"});
  cases.push_back({"conv2d", "func @main(%x: f32[1,4,6,6], %w: f32[4,2,3,3]) -> f32[1,4,2,2] {\n"
                             "  %y = conv2d %x, %w {strides = [2, 2], dilations = [1, 1], groups = 2}\n  return %y\n}\n"});
  for (const char* op : {"max_pool2d", "avg_pool2d"})
    cases.push_back({op, "func @main(%x: f32[1,2,6,6]) -> f32[1,2,3,3] {\n  %y = " + std::string(op) +
                             " %x {kernel = [3, 3], strides = [2, 2], pads = [1, 1, 0, 0]}\n  return %y\n}\n"});
  cases.push_back({"conv2d_backward_data", "func @main(%dy: f32[1,4,2,2], %w: f32[4,2,3,3]) -> f32[1,4,6,6] {\n"
                  "  %y = conv2d_backward_data %dy, %w {strides = [2, 2], groups = 2, input_shape = [1, 4, 6, 6]}\n  return %y\n}\n"});
  cases.push_back({"conv2d_backward_filter", "func @main(%x: f32[1,4,6,6], %dy: f32[1,4,2,2]) -> f32[4,2,3,3] {\n"
                  "  %y = conv2d_backward_filter %x, %dy {strides = [2, 2], groups = 2, filter_shape = [4, 2, 3, 3]}\n  return %y\n}\n"});
  cases.push_back({"max_pool2d_backward", "func @main(%x: f32[1,2,6,6], %dy: f32[1,2,3,3]) -> f32[1,2,6,6] {\n"
                  "  %y = max_pool2d_backward %x, %dy {kernel = [3, 3], strides = [2, 2], pads = [1, 1, 0, 0]}\n  return %y\n}\n"});
  cases.push_back({"avg_pool2d_backward", "func @main(%dy: f32[1,2,3,3]) -> f32[1,2,6,6] {\n"
                  "  %y = avg_pool2d_backward %dy {kernel = [3, 3], strides = [2, 2], pads = [1, 1, 0, 0], input_shape = [1, 2, 6, 6]}\n"
                  "  return %y\n}\n"});
  cases.push_back({"gather_backward", "func @main(%dy: f32[3,8], %i: i64[3]) -> f32[5,8] {\n"
                  "  %y = gather_backward %dy, %i {input_shape = [5, 8]}\n  return %y\n}\n"});
  cases.push_back({"batch_norm", "func @main(%x: f32[2,3,4,4], %s: f32[3], %b: f32[3], %m: f32[3], %v: f32[3]) -> f32[2,3,4,4] {\n"
                                 "  %y = batch_norm %x, %s, %b, %m, %v\n  return %y\n}\n"});
  cases.push_back({"softmax_cross_entropy", "func @main(%l: f32[4,5], %t: i64[4]) -> f32[] {\n"
                                            "  %y = softmax_cross_entropy %l, %t\n  return %y\n}\n"});
  cases.push_back({"all_reduce", unary("all_reduce", "f32", " {reduce = \"mean\"}")});
  cases.push_back({"transfer", unary("transfer", "f32", " {from = 0, to = 1}")});
  cases.push_back({"map", "func @main(%xs: f32[4,8], %s: f32[4]) -> f32[4,8] {\n"
                          "  %ys = map %xs, %s (%x: f32[8], %t: f32[]) {\n    %u = mul %x, %t\n    %v = tanh %u\n"
                          "    yield %v\n  }\n  return %ys\n}\n"});
  cases.push_back({"fusion", "func @main(%x: f32[4,8], %b: f32[8]) -> (f32[4,8], f32[4,1]) {\n"
                             "  %y, %s = fusion {kind = \"row\"} () {\n    %a = add %x, %b\n    %e = exp %a\n"
                             "    %t = reduce_sum %e {axes = [1], keepdims = true}\n    %d = div %e, %t\n    yield %d, %t\n  }\n"
                             "  return %y, %s\n}\n"});
  cases.push_back({"while", "func @main(%x0: f32[3]) -> f32[3] {\n  %i0 = constant 0 : i32[]\n  %limit = constant 4 : i32[]\n"
                            "  %n, %y = while %i0, %x0 (%i: i32[], %x: f32[3]) cond {\n    %c = lt %i, %limit\n    yield %c\n"
                            "  } body {\n    %one = constant 1 : i32[]\n    %i1 = add %i, %one\n    %x1 = sqrt %x\n"
                            "    yield %i1, %x1\n  }\n  return %y\n}\n"});
  return cases;
}

// Intrinsics NVPTX cannot lower in LLVM 19 ("no libcall available" / "Cannot select").
const std::regex kUnloweredMath(R"(call [^\n]*@llvm\.(exp|exp2|exp10|log|log2|log10|sin|cos|tan|pow|tanh)\.)");

// Compiles `text`'s entry to PTX and checks what every kernel must satisfy; returns the PTX.
std::string checkedPtx(const std::string& text, const std::string& arch, const std::string& what) {
  auto module = parseModule(text, what + ".kiln");
  EXPECT_TRUE(module.ok()) << what << ": " << (module.ok() ? "" : module.error().str()) << "\n" << text;
  if (!module.ok()) return "";
  CompileOptions options;
  options.target = Target::Cuda;
  options.disabledPasses = {"all"};  // one kernel per op: this tests each op's emitter
  options.gpuArch = arch;
  auto stages = compileStages(*(*module)->entry(), options);
  EXPECT_TRUE(stages.ok()) << what << ": " << (stages.ok() ? "" : stages.error().str());
  if (!stages.ok()) return "";
  for (const std::string& kernel : stages->kernels)
    EXPECT_NE(stages->code.find(".visible .entry " + symbolOf(stages->symbols, kernel) + "("), std::string::npos)
        << what << ": no kernel " << kernel;
  EXPECT_FALSE(std::regex_search(stages->optimizedIR, kUnloweredMath)) << what << ": math NVPTX cannot lower";
  EXPECT_EQ(stages->optimizedIR.find("@__nv_"), std::string::npos) << what << ": libdevice call left unlinked";
  EXPECT_NE(stages->code.find(".target " + arch + "\n"), std::string::npos) << what;
  return stages->code;
}

TEST(NvptxOps, EveryOpOfTheTableHasACase) {
  std::set<std::string> covered;
  for (const OpCase& c : opCases()) covered.insert(c.op);
  for (const OpInfo& info : allOps()) {
    if (info.cls == OpClass::Terminator) continue;
    EXPECT_TRUE(covered.count(std::string(info.name))) << "no NVPTX test case for op " << info.name;
  }
}

// One test per case, so that ctest runs them in parallel (each runs ptxas up to five times).
class NvptxOp : public ::testing::TestWithParam<OpCase> {};

TEST_P(NvptxOp, CompilesToNamedKernelsThatAssemble) {
  KILN_REQUIRE_PTXAS();
  const OpCase& c = GetParam();
  for (const std::string& arch : generatedArchs()) {
    std::string ptx = checkedPtx(c.text, arch, c.op);
    if (ptx.empty()) continue;
    // Region ops have no kernel of their own: their bodies' ops do.
    // A fusion's kernel is named after its kind and main op; a row reduction's after its layout.
    if (c.op == "fusion") {
      EXPECT_TRUE(std::regex_search(ptx, std::regex("\\.entry k[0-9]+_row_reduce_sum\\("))) << c.text;
    } else if (c.op != "map" && c.op != "while") {
      EXPECT_TRUE(std::regex_search(ptx, std::regex("\\.entry k[0-9]+_(row_)?" + c.op + "\\("))) << c.op << " kernel:\n" << c.text;
    }
    expectAssembles(ptx, arch, c.op + " from\n" + c.text);
  }
}

INSTANTIATE_TEST_SUITE_P(AllOps, NvptxOp, ::testing::ValuesIn(opCases()),
                         [](const ::testing::TestParamInfo<OpCase>& info) {
                           return info.param.op + "_" + std::to_string(info.index);
                         });

TEST(NvptxOps, EveryExampleCompilesAndAssembles) {
  KILN_REQUIRE_PTXAS();
  int examples = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(KILN_SOURCE_DIR) + "/examples")) {
    if (entry.path().extension() != ".kiln") continue;
    ++examples;
    auto module = parseFile(entry.path().string());
    ASSERT_TRUE(module.ok()) << module.error().str();
    for (const std::string& arch : generatedArchs()) {
      CompileOptions options;
      options.target = Target::Cuda;
      options.disabledPasses = {"all"};  // one kernel per op: this tests each op's emitter
      options.gpuArch = arch;
      auto stages = compileStages(*(*module)->entry(), options);
      ASSERT_TRUE(stages.ok()) << entry.path() << ": " << stages.error().str();
      ASSERT_FALSE(stages->kernels.empty());
      for (const std::string& kernel : stages->kernels) {
        // A kernel identical to an earlier one runs that one's entry (codegen/kernel_dedup.h).
        const std::string& symbol = symbolOf(stages->symbols, kernel);
        EXPECT_NE(stages->code.find(".visible .entry " + symbol + "("), std::string::npos) << entry.path() << " " << kernel;
        EXPECT_TRUE(std::regex_match(kernel, std::regex("k[0-9]+_[a-z_0-9]+"))) << kernel;
      }
      EXPECT_FALSE(std::regex_search(stages->optimizedIR, kUnloweredMath)) << entry.path();
      expectAssembles(stages->code, arch, entry.path().string());
    }
  }
  EXPECT_GE(examples, 9);
}

TEST(NvptxOps, SameFunctionSamePtx) {
  auto module = parseFile(std::string(KILN_SOURCE_DIR) + "/examples/attention.kiln");
  ASSERT_TRUE(module.ok()) << module.error().str();
  CompileOptions options;
  options.target = Target::Cuda;
  options.disabledPasses = {"all"};  // one kernel per op: this tests each op's emitter
  // No cache: both compilations run every stage (a cache hit has no optimized IR to compare).
  auto first = compileStages(*(*module)->entry(), options, nullptr);
  auto second = compileStages(*(*module)->entry(), options, nullptr);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(first->unoptimizedIR, second->unoptimizedIR);
  EXPECT_EQ(first->optimizedIR, second->optimizedIR);
  EXPECT_EQ(first->code, second->code);
}

TEST(NvptxOps, FastMathChangesDivision) {
  auto module = parseModule(binary("div", "f32", "f32"), "div.kiln");
  ASSERT_TRUE(module.ok());
  CompileOptions options;
  options.target = Target::Cuda;
  options.disabledPasses = {"all"};  // one kernel per op: this tests each op's emitter
  auto ieee = compileStages(*(*module)->entry(), options);
  options.fastMath = true;
  auto fast = compileStages(*(*module)->entry(), options);
  ASSERT_TRUE(ieee.ok() && fast.ok());
  EXPECT_NE(ieee->code.find("div.rn.f32"), std::string::npos) << ieee->code;
  EXPECT_EQ(ieee->code.find("div.approx"), std::string::npos);
  EXPECT_TRUE(fast->code.find("div.approx.ftz.f32") != std::string::npos ||
              fast->code.find("div.full.ftz.f32") != std::string::npos)
      << fast->code;
  EXPECT_EQ(fast->code.find("div.rn.f32"), std::string::npos);
}

}  // namespace
}  // namespace kiln::codegen
