// Kernels as units of their own (codegen/kernel_units.h) and their compilation through the cache
// on several threads (codegen/parallel_codegen.h).
#include <gtest/gtest.h>
#include <llvm/AsmParser/Parser.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/Support/SourceMgr.h>

#include <cmath>
#include <set>

#include "codegen/kernel_units.h"
#include "codegen/parallel_codegen.h"
#include "kiln_internal.h"

namespace kiln::codegen {
namespace {

// Two kernels sharing an internal table and a libm call, one with an internal helper, and an
// unused declaration that no unit may carry.
const char* kModule = R"(
@table = internal constant [2 x float] [float 1.0, float 2.0]
declare float @tanhf(float)
declare float @unused(float)

define internal float @first.helper(float %x) {
  %y = call float @tanhf(float %x)
  ret float %y
}

define void @first(ptr %out) {
  %t = load float, ptr @table
  %y = call float @first.helper(float %t)
  store float %y, ptr %out
  ret void
}

define void @second(ptr %out) {
  %p = getelementptr [2 x float], ptr @table, i64 0, i64 1
  %t = load float, ptr %p
  store float %t, ptr %out
  ret void
}
)";

std::unique_ptr<llvm::Module> parse(const char* text, llvm::LLVMContext& context) {
  llvm::SMDiagnostic error;
  auto module = llvm::parseAssemblyString(text, error, context);
  EXPECT_TRUE(module) << error.getMessage().str();
  return module;
}

std::set<std::string> definedAndDeclared(const llvm::Module& m, bool defined) {
  std::set<std::string> names;
  for (const llvm::Function& fn : m)
    if (fn.isDeclaration() != defined) names.insert(fn.getName().str());
  return names;
}

TEST(KernelUnits, EachKernelWithWhatItUsesAndNothingElse) {
  llvm::LLVMContext context;
  auto module = parse(kModule, context);
  ASSERT_TRUE(module);
  std::vector<KernelUnit> units = splitKernelUnits(*module);
  ASSERT_EQ(units.size(), 2u);
  EXPECT_EQ(units[0].kernel, "first");
  EXPECT_EQ(units[1].kernel, "second");
  EXPECT_EQ(units[0].declared, std::vector<std::string>{"tanhf"});
  EXPECT_TRUE(units[1].declared.empty());

  llvm::LLVMContext other;  // units read into a context of their own, as compile threads do
  auto first = readUnit(units[0], other);
  ASSERT_TRUE(first.ok()) << first.error().str();
  EXPECT_EQ(definedAndDeclared(**first, true), (std::set<std::string>{"first", "first.helper"}));
  EXPECT_EQ(definedAndDeclared(**first, false), std::set<std::string>{"tanhf"});
  EXPECT_NE((*first)->getGlobalVariable("table", /*AllowInternal=*/true), nullptr);
  auto second = readUnit(units[1], other);
  ASSERT_TRUE(second.ok()) << second.error().str();
  EXPECT_EQ(definedAndDeclared(**second, true), std::set<std::string>{"second"});
  EXPECT_TRUE(definedAndDeclared(**second, false).empty());
  EXPECT_NE((*second)->getGlobalVariable("table", true), nullptr);  // copied into both units
}

// A kernel's bitcode is its own code only: the same kernel in another module, beside other
// kernels, gives the same bytes (and so the same cache key).
TEST(KernelUnits, SameKernelSameBitcodeWhateverSurroundsIt) {
  llvm::LLVMContext context;
  auto module = parse(kModule, context);
  std::string other = std::string(kModule) + "define void @third(ptr %o) {\n  store float 3.0, ptr %o\n  ret void\n}\n";
  auto bigger = parse(other.c_str(), context);
  ASSERT_TRUE(module && bigger);
  std::vector<KernelUnit> a = splitKernelUnits(*module), b = splitKernelUnits(*bigger);
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(a[0].bitcode, b[0].bitcode);
  EXPECT_EQ(a[1].bitcode, b[1].bitcode);
}

// A call's vector variants (codegen/late_inline.h) are named only in its attribute: the unit of the
// kernel that calls them carries them, or the loop vectoriser would find none and call the scalar
// function once per element (the first cut of this ran softmax 8x slower).
TEST(KernelUnits, VectorVariantsNamedByACallGoWithIt) {
  llvm::LLVMContext context;
  auto module = parse(R"ir(
define internal float @f(float %x) { ret float %x }
define internal <4 x float> @f_v4(<4 x float> %x) { ret <4 x float> %x }
define internal <8 x float> @f_v8(<8 x float> %x) { ret <8 x float> %x }
define internal float @unrelated(float %x) { ret float %x }
define void @k(ptr %p) {
  %x = load float, ptr %p
  %y = call float @f(float %x) #0
  store float %y, ptr %p
  ret void
}
attributes #0 = { "vector-function-abi-variant"="_ZGV_LLVM_N4v_f(f_v4),_ZGV_LLVM_N8v_f(f_v8)" }
)ir", context);
  ASSERT_TRUE(module);
  std::vector<KernelUnit> units = splitKernelUnits(*module);
  ASSERT_EQ(units.size(), 1u);
  llvm::LLVMContext other;
  auto unit = readUnit(units[0], other);
  ASSERT_TRUE(unit.ok()) << unit.error().str();
  EXPECT_EQ(definedAndDeclared(**unit, true), (std::set<std::string>{"k", "f", "f_v4", "f_v8"}));
}

TEST(KernelUnits, BitcodeThatDoesNotReadBackIsAnError) {
  llvm::LLVMContext context;
  auto read = readUnit(KernelUnit{"k3_add", "not bitcode", {}}, context);
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.error().message().find("k3_add"), std::string::npos) << read.error().str();
}

// A stand-in compiler: the "artifact" is the kernel's name; `failOn` fails.
UnitCompilerFactory namingCompiler(std::string failOn = "") {
  return [failOn]() -> Expected<UnitCompiler> {
    return UnitCompiler([failOn](llvm::Module& unit) -> Expected<std::string> {
      for (const llvm::Function& fn : unit)
        if (!fn.isDeclaration() && !fn.hasLocalLinkage()) {
          if (fn.getName() == failOn) return Error("cannot compile " + failOn);
          return "code of " + fn.getName().str();
        }
      return Error("no kernel");
    });
  };
}

TEST(CompileUnits, CachedUnitsAreLookedUpAndTheRestCompiled) {
  llvm::LLVMContext context;
  auto module = parse(kModule, context);
  std::vector<KernelUnit> units = splitKernelUnits(*module);
  CompileCache cache("");
  cache.store("key-second", "cached code of second");
  CompileProfile profile;
  auto compiled = compileUnits(units, {"key-first", "key-second"}, &cache, false, namingCompiler(), &profile);
  ASSERT_TRUE(compiled.ok()) << compiled.error().str();
  EXPECT_EQ(compiled->artifacts, (std::vector<std::string>{"code of first", "cached code of second"}));
  EXPECT_EQ(compiled->fromCache, 1u);
  EXPECT_EQ(cache.lookup("key-first"), "code of first");  // stored for next time
  std::vector<std::pair<std::string, size_t>> counts = profile.counts();
  EXPECT_EQ(counts, (std::vector<std::pair<std::string, size_t>>{{"distinct kernels", 2}, {"kernels from the cache", 1}}));

  // refresh: nothing is looked up, everything is compiled and stored again.
  auto refreshed = compileUnits(units, {"key-first", "key-second"}, &cache, true, namingCompiler(), nullptr);
  ASSERT_TRUE(refreshed.ok());
  EXPECT_EQ(refreshed->fromCache, 0u);
  EXPECT_EQ(cache.lookup("key-second"), "code of second");
}

TEST(CompileUnits, AFailingUnitIsTheErrorAndNothingOfItIsStored) {
  llvm::LLVMContext context;
  auto module = parse(kModule, context);
  std::vector<KernelUnit> units = splitKernelUnits(*module);
  CompileCache cache("");
  auto compiled = compileUnits(units, {"k1", "k2"}, &cache, false, namingCompiler("second"), nullptr);
  ASSERT_FALSE(compiled.ok());
  EXPECT_EQ(compiled.error().message(), "cannot compile second");
  EXPECT_FALSE(cache.lookup("k2").has_value());

  auto noCompiler = compileUnits(units, {"", ""}, nullptr, false,
                                 []() -> Expected<UnitCompiler> { return Error("no target machine"); }, nullptr);
  ASSERT_FALSE(noCompiler.ok());
  EXPECT_EQ(noCompiler.error().message(), "no target machine");
}

TEST(CompileUnits, KernelsSplitOverThreadsComputeWhatTheInterpreterDoes) {
  // Distinct kernels (a matmul, a row reduction, elementwise tails), compiled on every core.
  auto m = parseModule(R"(func @main(%x: f32[16,32], %w: f32[32,32]) -> (f32[16,32], f32[16,1]) {
  %h = matmul %x, %w
  %t = tanh %h
  %m = reduce_max %t {axes = [1], keepdims = true}
  %e = sub %t, %m
  %g = matmul %e, %w
  %s = sigmoid %g
  return %s, %m
}
)", "parts.kiln");
  ASSERT_TRUE(m.ok()) << m.error().str();
  const Function& f = *(*m)->entry();
  CompileProfile profile;
  CompileOptions options;
  options.profile = &profile;
  auto exe = Executable::compile(f, options, nullptr);
  ASSERT_TRUE(exe.ok()) << exe.error().str();
  EXPECT_GE((*exe)->kernelNames().size(), 3u);
  std::vector<Tensor> inputs = randomInputs(f, 5);
  auto want = interpret(f, inputs);
  auto got = (*exe)->run(inputs);
  ASSERT_TRUE(want.ok() && got.ok());
  for (size_t k = 0; k < want->size(); ++k)
    for (int64_t i = 0; i < (*want)[k].numElements(); ++i)
      ASSERT_NEAR((*got)[k].getDouble(i), (*want)[k].getDouble(i), 1e-4 * (1 + std::fabs((*want)[k].getDouble(i))));
  bool counted = false;
  for (const auto& [name, n] : profile.counts())
    if (name == "distinct kernels") counted = n >= 3;
  EXPECT_TRUE(counted) << profile.table();
}

}  // namespace
}  // namespace kiln::codegen
