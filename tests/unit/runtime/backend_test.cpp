// Backend selection, random inputs and runFunction.
#include <gtest/gtest.h>

#include <set>

#include "kiln_internal.h"
#include "runtime/random_inputs.h"

namespace kiln {
namespace {

TEST(Backend, NamesRoundTrip) {
  for (Backend b : {Backend::Interp, Backend::Cpu, Backend::Cuda, Backend::Auto})
    EXPECT_EQ(parseBackend(backendName(b)), b);
  EXPECT_FALSE(parseBackend("gpu").has_value());
}

TEST(Backend, HostBackendsAlwaysResolve) {
  EXPECT_EQ(*resolveBackend(Backend::Cpu), Backend::Cpu);
  EXPECT_EQ(*resolveBackend(Backend::Interp), Backend::Interp);
}

// Without a driver or GPU, --backend cuda is one error saying why and what to use, and auto
// falls back to the CPU; with one, both resolve to cuda.
TEST(Backend, CudaResolvesOnlyWhereAGpuIs) {
  auto cuda = resolveBackend(Backend::Cuda);
  auto automatic = resolveBackend(Backend::Auto);
  ASSERT_TRUE(automatic.ok());
  if (cuda.ok()) {
    EXPECT_EQ(*cuda, Backend::Cuda);
    EXPECT_EQ(*automatic, Backend::Cuda);
    return;
  }
  EXPECT_NE(cuda.error().message().find("--backend cuda: "), std::string::npos) << cuda.error().str();
  EXPECT_NE(cuda.error().message().find("use --backend cpu"), std::string::npos) << cuda.error().str();
  EXPECT_EQ(*automatic, Backend::Cpu);
}

TEST(RandomInputs, DeterministicAndInRange) {
  TensorType t{DType::F32, {1000}};
  Tensor a = randomTensor(t, 42), b = randomTensor(t, 42), c = randomTensor(t, 43);
  EXPECT_EQ(a, b);
  EXPECT_FALSE(a == c);
  double lo = 1, hi = -1;
  for (int64_t i = 0; i < a.numElements(); ++i) {
    lo = std::min(lo, a.getDouble(i));
    hi = std::max(hi, a.getDouble(i));
  }
  EXPECT_GE(lo, -1.0);
  EXPECT_LT(hi, 1.0);
  EXPECT_LT(lo, -0.9);  // 1000 uniform draws cover the range
  EXPECT_GT(hi, 0.9);

  Tensor ints = randomTensor({DType::I32, {1000}}, 7, 3);
  std::set<int64_t> seen;
  for (int64_t i = 0; i < ints.numElements(); ++i) seen.insert(ints.getInt(i));
  EXPECT_EQ(seen, (std::set<int64_t>{0, 1, 2}));
}

TEST(RandomInputs, IntegerBoundFollowsGatherAndLabels) {
  auto m = parseModule(
      "func @main(%table: f32[7,4], %ids: i64[16], %logits: f32[16,5], %labels: i64[16], %n: i32[3]) -> (f32[16,4], f32[]) {\n"
      "  %e = gather %table, %ids\n"
      "  %l = softmax_cross_entropy %logits, %labels\n"
      "  return %e, %l\n"
      "}\n");
  ASSERT_TRUE(m.ok()) << m.error().str();
  std::vector<Value*> p = (*m)->entry()->params();
  EXPECT_EQ(integerInputBound(*p[1]), 7);
  EXPECT_EQ(integerInputBound(*p[3]), 5);
  EXPECT_EQ(integerInputBound(*p[4]), 10);
  // So random inputs always make a valid run.
  auto results = runFunction(*(*m)->entry(), randomInputs(*(*m)->entry(), 3));
  ASSERT_TRUE(results.ok()) << results.error().str();
}

TEST(RunFunction, ChecksInputTypes) {
  auto m = parseModule("func @main(%x: f32[2,3]) -> f32[2,3] {\n  %y = neg %x\n  return %y\n}\n", "t.kiln");
  ASSERT_TRUE(m.ok()) << m.error().str();
  Tensor wrong({DType::F32, {3, 2}});
  auto r = runFunction(*(*m)->entry(), {wrong});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("expected f32[2,3], got f32[3,2]"), std::string::npos) << r.error().str();
  auto none = runFunction(*(*m)->entry(), {});
  EXPECT_FALSE(none.ok());
}

TEST(RunFunction, RunsOnTheInterpreterAndTheCpu) {
  auto m = parseModule("func @main(%x: f32[3]) -> f32[3] {\n  %y = mul %x, %x\n  return %y\n}\n");
  ASSERT_TRUE(m.ok()) << m.error().str();
  Tensor x({DType::F32, {3}});
  for (int i = 0; i < 3; ++i) x.setDouble(i, i + 1.5);
  for (Backend b : {Backend::Interp, Backend::Cpu, Backend::Auto}) {
    RunOptions options;
    options.backend = b;
    auto r = runFunction(*(*m)->entry(), {x}, options);
    ASSERT_TRUE(r.ok()) << r.error().str();
    EXPECT_EQ((*r)[0].getDouble(0), 2.25);
    EXPECT_EQ((*r)[0].getDouble(1), 6.25);
    EXPECT_EQ((*r)[0].getDouble(2), 12.25);
  }
}

TEST(RunFunction, WhileIterationLimitStopsRunawayLoops) {
  auto m = parseModule(
      "func @main(%x: f32[]) -> f32[] {\n"
      "  %y = while %x (%v: f32[]) cond {\n"
      "    %t = constant true : bool[]\n"
      "    yield %t\n"
      "  } body {\n"
      "    yield %v\n"
      "  }\n"
      "  return %y\n"
      "}\n",
      "loop.kiln");
  ASSERT_TRUE(m.ok()) << m.error().str();
  RunOptions options;
  options.maxWhileIterations = 1000;
  auto r = runFunction(*(*m)->entry(), {Tensor::scalar(DType::F32, 1)}, options);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().str().find("loop.kiln:2:"), std::string::npos) << r.error().str();
  EXPECT_NE(r.error().message().find("1000"), std::string::npos) << r.error().str();
}

}  // namespace
}  // namespace kiln
