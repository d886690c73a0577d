// Host code on several threads (codegen/parallel_codegen.h): a function's kernels split into
// parts compiled in their own contexts, the objects bundled as one cache entry.
#include <gtest/gtest.h>

#include <cmath>

#include "codegen/parallel_codegen.h"
#include "kiln.h"

namespace kiln::codegen {
namespace {

TEST(ObjectBundle, OneObjectIsStoredAsItIsAndSeveralRoundTrip) {
  EXPECT_EQ(packObjects({"\x7f" "ELF one"}), "\x7f" "ELF one");
  EXPECT_EQ(unpackObjects("\x7f" "ELF one"), std::vector<std::string>{"\x7f" "ELF one"});
  std::vector<std::string> several = {"first", std::string("with\0nul", 8), ""};
  EXPECT_EQ(unpackObjects(packObjects(several)), several);
}

TEST(ObjectBundle, DamagedBundlesUnpackToNothing) {
  std::string bundle = packObjects({"first object", "second object"});
  EXPECT_TRUE(unpackObjects(bundle.substr(0, bundle.size() - 3)).empty());  // cut in an object
  EXPECT_TRUE(unpackObjects(bundle.substr(0, 16)).empty());                 // cut in a size
}

TEST(ParallelCodegen, KernelsSplitOverThreadsComputeWhatTheInterpreterDoes) {
  // Distinct kernels (a matmul, a row reduction, elementwise tails): several parts on two threads.
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
  auto exe = Executable::compile(f, CompileOptions{}, nullptr);
  ASSERT_TRUE(exe.ok()) << exe.error().str();
  EXPECT_GE((*exe)->kernelNames().size(), 3u);
  std::vector<Tensor> inputs = randomInputs(f, 5);
  auto want = interpret(f, inputs);
  auto got = (*exe)->run(inputs);
  ASSERT_TRUE(want.ok() && got.ok());
  for (size_t k = 0; k < want->size(); ++k)
    for (int64_t i = 0; i < (*want)[k].numElements(); ++i)
      ASSERT_NEAR((*got)[k].getDouble(i), (*want)[k].getDouble(i), 1e-4 * (1 + std::fabs((*want)[k].getDouble(i))));
}

}  // namespace
}  // namespace kiln::codegen
