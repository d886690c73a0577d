// Weights are data, never code: constant data (ir/constant_data.h) stays out of every kernel, lives
// in a buffer made once per executable, and is read by kernels (and library calls) as an argument.
// Printing summarises it and the compile cache's key hashes it.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "codegen/compile_cache.h"
#include "ir/compile_profile.h"
#include "ir/constant_data.h"
#include "passes/cse.h"
#include "kiln_internal.h"
#include "runtime/cuda/context.h"

namespace kiln {
namespace {

// A 1-D literal of `n` distinct values (no splat), deterministic.
std::string vector(int n, int salt = 0) {
  std::string s = "[";
  for (int i = 0; i < n; ++i) s += fmt::format("{}{}", i ? ", " : "", ((i + salt) * 37 % 101 - 50) / 8.0);
  return s + "]";
}

// A `rows` x `cols` literal, rows of distinct values.
std::string table(int rows, int cols, int salt = 0) {
  std::string s = "[";
  for (int r = 0; r < rows; ++r) s += (r ? ", " : "") + vector(cols, salt + r * cols);
  return s + "]";
}

// Weights (%w, 640 elements), a bias (%b, 40: data too), a small table and a splat (immediates),
// a matmul that reads the weights, and the weights returned as they are.
std::string program(int salt = 0) {
  return fmt::format(R"(func @main(%x: f32[4,40]) -> (f32[4,40], f32[40,16], f32[4,16]) {{
  %w = constant {} : f32[40,16]
  %b = constant {} : f32[40]
  %t = constant [[1.0], [-2.0], [3.0], [-4.0]] : f32[4,1]
  %s = constant 0.5 : f32[]
  %y = add %x, %b
  %z = mul %y, %t
  %h = mul %z, %s
  %m = matmul %h, %w
  return %h, %w, %m
}}
)", table(40, 16, salt), vector(40, salt));
}

std::unique_ptr<Module> parse(const std::string& text) {
  auto m = parseModule(text, "weights.kiln");
  EXPECT_TRUE(m.ok()) << m.error().str();
  return m.ok() ? std::move(*m) : nullptr;
}

void expectClose(const std::vector<Tensor>& got, const std::vector<Tensor>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < want.size(); ++k) {
    ASSERT_EQ(got[k].type(), want[k].type()) << "result " << k;
    for (int64_t i = 0; i < want[k].numElements(); ++i)
      EXPECT_NEAR(got[k].getDouble(i), want[k].getDouble(i), 1e-4 * (1 + std::fabs(want[k].getDouble(i))))
          << "result " << k << " element " << i;
  }
}

TEST(ConstantData, OnlyLargeNonSplatConstantsAreData) {
  auto m = parse(program());
  ASSERT_TRUE(m);
  std::vector<std::string> data;
  walkOps(m->entry()->body(), [&](const Op* op) {
    if (isConstantData(*op)) data.push_back(op->result()->name());
  });
  EXPECT_EQ(data, (std::vector<std::string>{"w", "b"}));
}

TEST(ConstantData, ContentHashSeesEveryByteAndTheType) {
  Tensor a(TensorType{DType::F32, {100}});
  for (int64_t i = 0; i < 100; ++i) a.setDouble(i, static_cast<double>(i));
  Tensor b = a;
  EXPECT_EQ(contentHash(a), contentHash(b));
  b.setDouble(99, 1000.0);  // the last, partial block
  EXPECT_NE(contentHash(a), contentHash(b));
  Tensor reshaped(TensorType{DType::F32, {10, 10}});
  std::memcpy(reshaped.data(), a.data(), a.byteSize());
  EXPECT_NE(contentHash(a), contentHash(reshaped));
}

// cse buckets constants by a sample of their bytes (every byte up to 4 KiB); equal weights still
// merge, and weights that differ only outside the sample still do not: the bucket's comparison
// reads every byte.
TEST(ConstantData, CseBucketsBySampledBytesAndComparesEveryOne) {
  Tensor small(TensorType{DType::F32, {100}});
  for (int64_t i = 0; i < 100; ++i) small.setDouble(i, static_cast<double>(i));
  EXPECT_EQ(sampledContentHash(small), contentHash(small));
  Tensor a(TensorType{DType::F32, {4096}});
  for (int64_t i = 0; i < 4096; ++i) a.setDouble(i, static_cast<double>(i % 97));
  Tensor unsampled = a, last = a;
  unsampled.setDouble(20, -1.0);  // bytes 80-83: between the first block and the second (259-290)
  last.setDouble(4095, -1.0);
  EXPECT_EQ(sampledContentHash(a), sampledContentHash(unsampled));
  EXPECT_NE(contentHash(a), contentHash(unsampled));
  EXPECT_NE(sampledContentHash(a), sampledContentHash(last));
  Tensor reshaped(TensorType{DType::F32, {64, 64}});
  std::memcpy(reshaped.data(), a.data(), a.byteSize());
  EXPECT_NE(sampledContentHash(a), sampledContentHash(reshaped));

  auto literal = [](const Tensor& t) {
    std::string s = "[";
    for (int64_t i = 0; i < t.numElements(); ++i) s += fmt::format("{}{}", i ? ", " : "", t.getDouble(i));
    return s + "]";
  };
  auto constantsAfterCse = [&](const Tensor& first, const Tensor& second) {
    auto m = parse(fmt::format(R"(func @main() -> (f32[4096], f32[4096]) {{
  %p = constant {} : f32[4096]
  %q = constant {} : f32[4096]
  return %p, %q
}}
)", literal(first), literal(second)));
    if (!m) return -1;
    passes::PassContext context;
    if (!passes::eliminateCommonSubexpressions(*m, context).ok()) return -1;
    int constants = 0;
    walkOps(m->entry()->body(), [&](const Op* op) { constants += op->kind() == OpKind::Constant; });
    return constants;
  };
  EXPECT_EQ(constantsAfterCse(a, a), 1) << "equal weights not merged";
  EXPECT_EQ(constantsAfterCse(a, unsampled), 2) << "weights differing outside the sample merged";
  EXPECT_EQ(constantsAfterCse(a, last), 2);
}

class ConstantDataRun : public ::testing::TestWithParam<codegen::Target> {};

TEST_P(ConstantDataRun, KernelsReadTheWeightsAsBuffersAndMatchTheInterpreter) {
  if (GetParam() == codegen::Target::Cuda)
    if (auto device = cuda::Device::get(); !device) GTEST_SKIP() << "no GPU: " << device.error().message();
  auto m = parse(program());
  ASSERT_TRUE(m);
  const Function& f = *m->entry();
  codegen::CompileOptions options;
  options.target = GetParam();
  auto exe = Executable::compile(f, options);
  ASSERT_TRUE(exe.ok()) << exe.error().str();
  // The weights and the bias are the plan's constants; no kernel computes them or holds them.
  std::vector<std::string> constants;
  for (const Value* v : (*exe)->plan().allConstants()) constants.push_back(v->name());
  EXPECT_EQ(constants, (std::vector<std::string>{"w", "b"}));
  for (const codegen::KernelGroup* group : (*exe)->plan().allGroups())
    for (const Op* op : group->ops) EXPECT_FALSE(isConstantData(*op)) << group->name;
  // The returned weights are copied from their buffer, not written by a kernel.
  for (const Value* v : (*exe)->bufferPlan().resultValues()) EXPECT_NE(v->name(), "w");

  std::vector<Tensor> inputs = randomInputs(f, 3);
  auto want = interpret(f, inputs);
  ASSERT_TRUE(want.ok()) << want.error().str();
  for (int run = 0; run < 2; ++run) {  // the second run reuses the buffers made once
    auto got = (*exe)->run(inputs);
    ASSERT_TRUE(got.ok()) << got.error().str();
    expectClose(*got, *want);
  }
}

// `blocks` layer-norm-like blocks between matmuls, each with its own epsilon: the blocks' kernels
// are equal but for that constant.
std::string blocksWithTheirOwnEpsilon(int blocks) {
  std::string body;
  std::string x = "%x";
  for (int i = 0; i < blocks; ++i) {
    body += fmt::format(R"(  %h{0} = matmul {1}, %w
  %m{0} = reduce_mean %h{0} {{axes = [-1], keepdims = true}}
  %d{0} = sub %h{0}, %m{0}
  %q{0} = mul %d{0}, %d{0}
  %v{0} = reduce_mean %q{0} {{axes = [-1], keepdims = true}}
  %e{0} = constant {2} : f32[]
  %a{0} = add %v{0}, %e{0}
  %r{0} = rsqrt %a{0}
  %y{0} = mul %d{0}, %r{0}
)",
                        i, x, 0.5 * (i + 1));
    x = fmt::format("%y{}", i);
  }
  return "func @main(%x: f32[8,32], %w: f32[32,32]) -> f32[8,32] {\n" + body + "  return " + x + "\n}\n";
}

// Kernels equal but for a constant share one compiled kernel (passes/share_kernels.h): each block's
// epsilon is data the kernel reads, and every block still gets its own epsilon.
TEST_P(ConstantDataRun, KernelsEqualButForAConstantCompileOnceAndKeepTheirOwnValue) {
  if (GetParam() == codegen::Target::Cuda)
    if (auto device = cuda::Device::get(); !device) GTEST_SKIP() << "no GPU: " << device.error().message();
  auto m = parse(blocksWithTheirOwnEpsilon(6));
  ASSERT_TRUE(m);
  const Function& f = *m->entry();
  CompileProfile profile;
  codegen::CompileOptions options;
  options.target = GetParam();
  options.profile = &profile;
  auto exe = Executable::compile(f, options, nullptr);
  ASSERT_TRUE(exe.ok()) << exe.error().str();
  EXPECT_EQ((*exe)->plan().allConstants().size(), 6u);  // the six epsilons
  size_t distinct = 0;
  for (const auto& [name, n] : profile.counts())
    if (name == "distinct kernels") distinct = n;
  EXPECT_GE((*exe)->kernelNames().size(), 12u);
  EXPECT_LE(distinct, 4u) << profile.table();
  // Large epsilons make a wrong one visible in the result.
  std::vector<Tensor> inputs = randomInputs(f, 7);
  auto want = interpret(f, inputs);
  ASSERT_TRUE(want.ok()) << want.error().str();
  auto got = (*exe)->run(inputs);
  ASSERT_TRUE(got.ok()) << got.error().str();
  expectClose(*got, *want);
}

INSTANTIATE_TEST_SUITE_P(Backends, ConstantDataRun, ::testing::Values(codegen::Target::Cpu, codegen::Target::Cuda),
                         [](const auto& info) { return info.param == codegen::Target::Cpu ? "Cpu" : "Cuda"; });

TEST(ConstantData, SummaryPrintElidesWeightsAndTheParserSaysWhy) {
  auto m = parse(program());
  ASSERT_TRUE(m);
  std::string summary = printModule(*m, kSummaryPrint);
  EXPECT_NE(summary.find("%w = constant elided \"640 elements, hash "), std::string::npos) << summary;
  EXPECT_NE(summary.find("%b = constant [-6.25"), std::string::npos) << summary;  // 40 elements: in full
  auto reparsed = parseModule(summary, "summary.kiln");
  ASSERT_FALSE(reparsed.ok());
  EXPECT_NE(reparsed.error().message().find("was elided when this text was printed"), std::string::npos)
      << reparsed.error().str();
  EXPECT_EQ(reparsed.error().loc().line, 2);
  // In full, the text parses back to the same bytes.
  std::string full = printModule(*m);
  auto again = parse(full);
  ASSERT_TRUE(again);
  EXPECT_EQ(printModule(*again), full);
}

TEST(ConstantData, CacheKeysHashWeightsAndSeeEveryChange) {
  auto a = parse(program());
  auto b = parse(program(1));  // other weights, same graph
  ASSERT_TRUE(a && b);
  codegen::CompileOptions cpu;
  std::string key = codegen::cacheKey(*a->entry(), cpu, "obj");
  EXPECT_EQ(key, codegen::cacheKey(*parse(program())->entry(), cpu, "obj"));
  EXPECT_NE(key, codegen::cacheKey(*b->entry(), cpu, "obj"));
}

}  // namespace
}  // namespace kiln
