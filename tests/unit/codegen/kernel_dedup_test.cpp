// Identical kernels compiled once (codegen/kernel_dedup.h): repeated blocks share one symbol, and
// kernels that differ only in a constant table or an error's location stay apart.
#include <gtest/gtest.h>

#include <cmath>

#include "codegen/compile_stages.h"
#include "tests/unit/codegen/cpu_test_util.h"
#include "kiln_internal.h"
#include "runtime/cuda/context.h"

namespace kiln::codegen {
namespace {

// Two identical residual blocks (same shapes, same ops, their own weights as parameters) and a
// third whose scalar differs: the first two plan to kernels with equal code, the third does not.
constexpr const char* kBlocks = R"(func @main(%x: f32[8,64], %w1: f32[64,64], %w2: f32[64,64]) -> f32[8,64] {
  %m1 = matmul %x, %w1
  %r1 = relu %m1
  %a1 = add %x, %r1
  %m2 = matmul %a1, %w2
  %r2 = relu %m2
  %a2 = add %a1, %r2
  %c = constant 3.0 : f32[]
  %m3 = matmul %a2, %w1
  %s3 = mul %m3, %c
  %a3 = add %a2, %s3
  return %a3
}
)";

TEST(KernelDedup, RepeatedBlocksShareOneKernel) {
  auto m = test::parseOrFail(kBlocks);
  ASSERT_TRUE(m);
  for (Target target : {Target::Cpu, Target::Cuda}) {
    CompileOptions options;
    options.target = target;
    auto stages = compileStages(*m->entry(), options, nullptr);
    ASSERT_TRUE(stages.ok()) << stages.error().str();
    // Per block the matmul, then relu and the residual add (which no library applies) as a loop
    // kernel; the third block's matmul, then its own epilogue (times 3, plus the residual).
    ASSERT_EQ(stages->kernels.size(), 6u);
    // The second block's kernels and the third's matmul run the first block's code; the third's
    // epilogue does not.
    EXPECT_EQ(stages->symbols.size(), 3u) << (target == Target::Cpu ? "cpu" : "cuda");
    EXPECT_EQ(symbolOf(stages->symbols, stages->kernels[2]), stages->kernels[0]);
    EXPECT_EQ(symbolOf(stages->symbols, stages->kernels[3]), stages->kernels[1]);
    EXPECT_EQ(symbolOf(stages->symbols, stages->kernels[4]), stages->kernels[0]);
    EXPECT_EQ(symbolOf(stages->symbols, stages->kernels[5]), stages->kernels[5]);
    for (size_t shared : {2, 3, 4})
      EXPECT_EQ(stages->unoptimizedIR.find("@" + stages->kernels[shared] + "("), std::string::npos);
  }
}

TEST(KernelDedup, SharedKernelsComputeEachBlocksOwnValues) {
  auto m = test::parseOrFail(kBlocks);
  ASSERT_TRUE(m);
  const Function& f = *m->entry();
  std::vector<Tensor> inputs = randomInputs(f, 11);
  auto want = interpret(f, inputs);
  ASSERT_TRUE(want.ok()) << want.error().str();
  for (Target target : {Target::Cpu, Target::Cuda}) {
    if (target == Target::Cuda)
      if (auto device = cuda::Device::get(); !device) {
        std::cout << "cuda half skipped: no GPU (" << device.error().message() << ")\n";
        continue;
      }
    CompileOptions options;
    options.target = target;
    auto exe = Executable::compile(f, options);
    ASSERT_TRUE(exe.ok()) << exe.error().str();
    auto got = (*exe)->run(inputs);
    ASSERT_TRUE(got.ok()) << got.error().str();
    for (int64_t i = 0; i < (*want)[0].numElements(); ++i)
      ASSERT_NEAR((*got)[0].getDouble(i), (*want)[0].getDouble(i), 1e-3 * (1 + std::fabs((*want)[0].getDouble(i))))
          << "element " << i;
  }
}

}  // namespace
}  // namespace kiln::codegen
