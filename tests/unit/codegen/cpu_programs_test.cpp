// Differential tests, CPU backend vs interpreter, on whole programs: every example, `map` and
// `while` programs, and run-time errors raised inside kernels (message and location).
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/unit/codegen/cpu_test_util.h"

namespace kiln::test {
namespace {

TEST(CpuPrograms, EveryExampleMatchesTheInterpreter) {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(KILN_SOURCE_DIR) + "/examples")) {
    if (entry.path().extension() != ".kiln") continue;
    SCOPED_TRACE(entry.path().string());
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    auto m = parseOrFail(text.str());
    ASSERT_TRUE(m);
    for (uint64_t seed : {0, 7}) expectSameAsInterpreter(*m->entry(), {accumulateTolerance(), seed});
    ++count;
  }
  EXPECT_GE(count, 9);
}

TEST(CpuPrograms, MapWithOuterValuesAndSeveralResults) {
  auto m = parseOrFail(
      "func @main(%xs: f32[6,4,3], %ss: f32[6], %w: f32[3,2]) -> (f32[6,4,2], f32[6], i64[6,4]) {\n"
      "  %ys, %ts, %is = map %xs, %ss (%x: f32[4,3], %s: f32[]) {\n"
      "    %h = matmul %x, %w\n"
      "    %u = mul %h, %s\n"
      "    %t = reduce_sum %u\n"
      "    %i = argmax %x {axis = 1}\n"
      "    yield %u, %t, %i\n"
      "  }\n"
      "  return %ys, %ts, %is\n"
      "}\n");
  expectSameAsInterpreter(*m->entry(), {accumulateTolerance()});
}

TEST(CpuPrograms, NestedMapsAndWhileInsideMap) {
  auto m = parseOrFail(
      "func @main(%xs: f32[3,4,5]) -> f32[3,4,5] {\n"
      "  %ys = map %xs (%x: f32[4,5]) {\n"
      "    %zs = map %x (%r: f32[5]) {\n"
      "      %a = abs %r\n"
      "      %zero = constant 0 : i32[]\n"
      "      %n, %v = while %zero, %a (%i: i32[], %v: f32[5]) cond {\n"
      "        %three = constant 3 : i32[]\n"
      "        %c = lt %i, %three\n"
      "        yield %c\n"
      "      } body {\n"
      "        %one = constant 1 : i32[]\n"
      "        %i1 = add %i, %one\n"
      "        %v1 = sqrt %v\n"
      "        yield %i1, %v1\n"
      "      }\n"
      "      yield %v\n"
      "    }\n"
      "    yield %zs\n"
      "  }\n"
      "  return %ys\n"
      "}\n");
  expectSameAsInterpreter(*m->entry(), {mathTolerance()});
}

TEST(CpuPrograms, WhileSwappingCarriedValuesAndDataDependentTripCount) {
  // The body yields its parameters in swapped order (the runtime must not overwrite one with the
  // other), and the trip count depends on the data.
  auto m = parseOrFail(
      "func @main(%a: f32[3], %b: f32[3], %limit: f32[]) -> (f32[3], f32[3], i64[]) {\n"
      "  %zero = constant 0 : i64[]\n"
      "  %x, %y, %n = while %a, %b, %zero (%p: f32[3], %q: f32[3], %k: i64[]) cond {\n"
      "    %s = reduce_sum %p\n"
      "    %c = lt %s, %limit\n"
      "    yield %c\n"
      "  } body {\n"
      "    %two = constant 2 : f32[]\n"
      "    %p2 = add %p, %two\n"
      "    %one = constant 1 : i64[]\n"
      "    %k1 = add %k, %one\n"
      "    yield %q, %p2, %k1\n"
      "  }\n"
      "  return %x, %y, %n\n"
      "}\n");
  for (uint64_t seed : {1, 2, 3}) expectSameAsInterpreter(*m->entry(), {accumulateTolerance(), seed});
}

TEST(CpuPrograms, WhileIterationLimit) {
  auto m = parseOrFail(
      "func @main(%x: f32[]) -> f32[] {\n"
      "  %y = while %x (%v: f32[]) cond {\n"
      "    %t = constant true : bool[]\n"
      "    yield %t\n"
      "  } body {\n"
      "    yield %v\n"
      "  }\n"
      "  return %y\n"
      "}\n");
  DiffOptions o;
  o.maxWhileIterations = 50;
  expectSameAsInterpreter(*m->entry(), o);  // both fail: same message and location
}

// The kernel errors the interpreter reports, with their message and location.
void expectSameError(const std::string& text, const std::vector<Tensor>& inputs) {
  auto m = parseOrFail(text);
  ASSERT_TRUE(m);
  const Function& f = *m->entry();
  auto want = interpret(f, inputs);
  ASSERT_FALSE(want.ok());
  auto exe = Executable::compile(f, codegen::CompileOptions{});
  ASSERT_TRUE(exe.ok()) << exe.error().str();
  auto got = (*exe)->run(inputs);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().str(), want.error().str());
}

Tensor ints(DType t, Shape s, const std::vector<int64_t>& v) {
  Tensor x({t, std::move(s)});
  for (size_t i = 0; i < v.size(); ++i) x.setInt(static_cast<int64_t>(i), v[i]);
  return x;
}

TEST(CpuPrograms, KernelErrorsNameTheOpAndLocation) {
  expectSameError("func @main(%x: f32[5,2], %i: i32[3]) -> f32[3,2] {\n  %y = gather %x, %i\n  return %y\n}\n",
                  {Tensor({DType::F32, {5, 2}}), ints(DType::I32, {3}, {0, 5, 1})});
  expectSameError("func @main(%x: f32[5,2], %i: i64[3]) -> f32[3,2] {\n  %y = gather %x, %i\n  return %y\n}\n",
                  {Tensor({DType::F32, {5, 2}}), ints(DType::I64, {3}, {0, -6, 1})});
  expectSameError("func @main(%a: i32[4], %b: i32[4]) -> i32[4] {\n  %q = div %a, %b\n  return %q\n}\n",
                  {ints(DType::I32, {4}, {1, 2, 3, 4}), ints(DType::I32, {4}, {1, 1, 0, 1})});
  expectSameError(
      "func @main(%x: f32[3,4], %l: i64[3]) -> f32[] {\n  %y = softmax_cross_entropy %x, %l\n  return %y\n}\n",
      {Tensor({DType::F32, {3, 4}}), ints(DType::I64, {3}, {0, 4, 1})});
  // Inside a map body: the error names the inner op.
  expectSameError(
      "func @main(%a: i64[2,3], %b: i64[3]) -> i64[2,3] {\n  %ys = map %a (%r: i64[3]) {\n    %q = div %r, %b\n"
      "    yield %q\n  }\n  return %ys\n}\n",
      {ints(DType::I64, {2, 3}, {1, 2, 3, 4, 5, 6}), ints(DType::I64, {3}, {1, 0, 1})});
}

TEST(CpuPrograms, InputsAreCheckedLikeTheInterpreter) {
  auto m = parseOrFail("func @main(%x: f32[2], %w: f32[784,128]) -> f32[2] {\n  %y = neg %x\n  return %y\n}\n");
  auto exe = Executable::compile(*m->entry(), codegen::CompileOptions{});
  ASSERT_TRUE(exe.ok());
  auto r = (*exe)->run({Tensor({DType::F32, {2}}), Tensor({DType::F32, {784, 100}})});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), "input 1 (%w): expected f32[784,128], got f32[784,100]");
  auto few = (*exe)->run(std::vector<Tensor>{});
  ASSERT_FALSE(few.ok());
  EXPECT_EQ(few.error().message(), "@main takes 2 inputs, got 0");
}

TEST(CpuPrograms, CudaTargetWithoutGpuSaysWhy) {
  if (cudaPresent()) GTEST_SKIP() << "a GPU is present: the cuda target compiles (see the cuda runtime tests)";
  auto m = parseOrFail("func @main(%x: f32[2]) -> f32[2] {\n  %y = neg %x\n  return %y\n}\n");
  codegen::CompileOptions options;
  options.target = codegen::Target::Cuda;
  auto exe = Executable::compile(*m->entry(), options);
  ASSERT_FALSE(exe.ok());
  EXPECT_NE(exe.error().message().find("CUDA driver"), std::string::npos) << exe.error().str();
}

TEST(CpuPrograms, ResultsAreDeterministicAcrossRuns) {
  auto m = parseOrFail(
      "func @main(%x: f32[300,200], %w: f32[200,100]) -> (f32[300,100], f32[100]) {\n"
      "  %h = matmul %x, %w\n  %t = tanh %h\n  %s = reduce_sum %t {axes = [0]}\n  return %t, %s\n}\n");
  const Function& f = *m->entry();
  auto exe = Executable::compile(f, codegen::CompileOptions{});
  ASSERT_TRUE(exe.ok());
  std::vector<Tensor> inputs = randomInputs(f, 5);
  auto a = (*exe)->run(inputs), b = (*exe)->run(inputs);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_TRUE((*a)[0] == (*b)[0]);
  EXPECT_TRUE((*a)[1] == (*b)[1]);
}

TEST(CpuPrograms, DumpDirHoldsIrBeforeAndAfterOptimisationAndAssembly) {
  auto m = parseOrFail("func @main(%x: f32[64]) -> f32[64] {\n  %y = exp %x\n  return %y\n}\n");
  codegen::CompileOptions options;
  options.dumpDir = testing::TempDir() + "/kiln-cpu-dump";
  std::filesystem::remove_all(options.dumpDir);
  auto exe = Executable::compile(*m->entry(), options);
  ASSERT_TRUE(exe.ok()) << exe.error().str();
  for (const char* file : {"main.unopt.ll", "main.opt.ll", "main.s", "kernels.txt"})
    EXPECT_TRUE(std::filesystem::exists(options.dumpDir + "/" + file)) << file;
}

}  // namespace
}  // namespace kiln::test
