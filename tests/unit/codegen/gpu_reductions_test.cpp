// Reductions by shape on the GPU (codegen/nvptx_target.h, rowLanes): a warp per row while the rows
// fill the device, a block per row for few long rows, and reductions split into stages where even
// that leaves the device idle (passes/split_reductions.h). Each strategy equals the interpreter (on the
// GPU simulator in CI) at and around its switch: rows of one element, prime lengths, lengths that
// are not a multiple of the block, NaN and infinities, integers, f16 and bf16 inputs; and a run
// gives the same bits every time. tests/lit/codegen/row_strategy.test pins the PTX of each.
#include <gtest/gtest.h>

#include "codegen/kernel_plan.h"
#include "codegen/nvptx_target.h"
#include "tests/unit/codegen/cpu_test_util.h"

namespace kiln::test {
namespace {

using codegen::NvptxTarget;

int lanesFor(Shape rows, Shape inner) {
  codegen::KernelGroup group;
  group.kind = codegen::KernelKind::Row;
  group.rows = std::move(rows);
  group.inner = std::move(inner);
  return NvptxTarget().rowLanes(group);
}

TEST(GpuRowStrategy, AWarpPerRowUnlessFewLongRows) {
  const int64_t few = NvptxTarget::kResidentWarps - 1, longRow = NvptxTarget::kBlockRowMinLength;
  EXPECT_EQ(lanesFor({few}, {longRow}), NvptxTarget::kThreadsPerBlock);
  EXPECT_EQ(lanesFor({1}, {16777216}), NvptxTarget::kThreadsPerBlock);  // a full reduction
  EXPECT_EQ(lanesFor({few}, {longRow - 1}), codegen::kWarpSize);        // rows too short for a block
  EXPECT_EQ(lanesFor({few + 1}, {longRow}), codegen::kWarpSize);        // enough rows to fill the device
  EXPECT_EQ(lanesFor({65536}, {64}), codegen::kWarpSize);
  EXPECT_EQ(lanesFor({4, 2}, {512, 2}), NvptxTarget::kThreadsPerBlock);  // shapes multiply out
}

// One reduction-carrying op over f[rows, n] (the axis reduced is the last).
void expectMatches(const std::string& params, const std::string& opLine, DiffOptions o = {}) {
  SCOPED_TRACE(opLine + " over " + params);
  auto m = oneOp(params, opLine);
  ASSERT_TRUE(m);
  if (!o.gpuTol) o.gpuTol = accumulateTolerance();
  if (o.tol.ulps == 0) o.tol = accumulateTolerance();  // decomposed normalisations round differently
  expectSameAsInterpreter(*m->entry(), o);
}

TEST(GpuRowStrategy, BlockPerRowReductionsEqualTheInterpreter) {
  // Around the switch (1023 is a warp's, 1024 a block's), a length no multiple of 256, a prime.
  for (const char* shape : {"f32[2,1023]", "f32[2,1024]", "f32[3,1500]", "f32[1,4099]"}) {
    std::string params = std::string("%x: ") + shape;
    expectMatches(params, "reduce_sum %x {axes = [1]}");
    expectMatches(params, "reduce_mean %x {axes = [1], keepdims = true}");
    DiffOptions specials;
    specials.specials = true;  // NaN wins a max, -inf and +inf stay themselves
    expectMatches(params, "reduce_max %x {axes = [1]}", specials);
    expectMatches(params, "reduce_min %x {axes = [1]}", specials);
  }
  expectMatches("%x: f64[2,2048]", "reduce_sum %x {axes = [1]}");
  expectMatches("%x: f32[1,1024,3]", "reduce_prod %x {axes = [1]}");  // reduced axis not last: a loop kernel
}

TEST(GpuRowStrategy, BlockPerRowIntegersAndHalfPrecision) {
  DiffOptions ints;
  ints.intBound = 1000;
  expectMatches("%x: i32[2,3001]", "reduce_sum %x {axes = [1]}", ints);
  expectMatches("%x: i64[3,1024]", "reduce_max %x {axes = [1]}", ints);
  expectMatches("%x: u8[2,2048]", "reduce_min %x {axes = [1]}", ints);
  // f16 and bf16 inputs accumulate in wider precision and round once: within an ulp or two.
  DiffOptions half;
  half.gpuTol = Tolerance{2, 1e-3};
  half.tol = Tolerance{2, 1e-3};
  expectMatches("%x: f16[2,1536]", "reduce_sum %x {axes = [1]}", half);
  expectMatches("%x: bf16[2,1536]", "reduce_mean %x {axes = [1]}", half);
}

TEST(GpuRowStrategy, BlockPerRowNormalisations) {
  expectMatches("%x: f32[3,2053]", "softmax %x {axis = -1}");
  expectMatches("%x: f32[2,1024]", "log_softmax %x {axis = 1}");
  expectMatches("%x: f32[2,1536], %g: f32[1536], %b: f32[1536]", "layer_norm %x, %g, %b {axis = -1, epsilon = 1e-5}");
  // Several reductions and elementwise work fused into one row kernel (a hand-written layer norm).
  auto m = parseOrFail(R"(func @main(%x: f32[4,1100]) -> f32[4,1100] {
  %mean = reduce_mean %x {axes = [-1], keepdims = true}
  %d = sub %x, %mean
  %sq = mul %d, %d
  %var = reduce_mean %sq {axes = [-1], keepdims = true}
  %eps = constant 1e-5 : f32[]
  %v = add %var, %eps
  %inv = rsqrt %v
  %y = mul %d, %inv
  return %y
}
)");
  DiffOptions o;
  o.tol = accumulateTolerance();
  expectSameAsInterpreter(*m->entry(), o);
}

// Inputs every row reads at the same elements are loaded once per lane, before the loop over rows
// (where a row's passes are unrolled: a warp per row of 256, a block per row of 2048; tests/lit/
// compile/row_strategy.test pins the PTX): a layer norm's scale and bias, and a broadcast bias
// that the row's reductions read too (softmax of x + b), with more rows than the grid has warps
// or blocks, so that each lane reuses what it loaded for several rows.
TEST(GpuRowStrategy, RowInvariantInputsLoadedOncePerLane) {
  DiffOptions o;
  o.tol = accumulateTolerance();
  o.gpuTol = accumulateTolerance();
  for (const char* shape : {"[8192,256]", "[1000,2048]"}) {
    std::string n = std::string(shape).substr(std::string(shape).find(',') + 1);
    n.pop_back();
    expectMatches(std::string("%x: f32") + shape + ", %g: f32[" + n + "], %b: f32[" + n + "]",
                  "layer_norm %x, %g, %b {axis = -1, epsilon = 1e-5}", o);
    auto m = parseOrFail("func @main(%x: f32" + std::string(shape) + ", %b: f32[" + n + "]) -> f32" + shape +
                         " {\n  %s = add %x, %b\n  %y = softmax %s {axis = -1}\n  return %y\n}\n");
    expectSameAsInterpreter(*m->entry(), o);
  }
}

// argmax/argmin over the last axis are row reductions of (index, value) pairs: lanes and warps
// combine their candidates in any order, and the first occurrence must still win, for ties, for
// NaN (above every number) and for rows shorter than the lanes (whose spare lanes hold index n).
TEST(GpuRowStrategy, ArgmaxAndArgminAreRowReductions) {
  auto plan = [](const std::string& params, const std::string& line) {
    auto m = oneOp(params, line);
    return m ? codegen::planFunction(*m->entry())->allGroups().at(0)->kind : codegen::KernelKind::Loop;
  };
  EXPECT_EQ(plan("%x: f32[8,100]", "argmax %x {axis = -1}"), codegen::KernelKind::Row);
  EXPECT_EQ(plan("%x: f32[8,100]", "argmin %x {axis = 1, keepdims = true}"), codegen::KernelKind::Row);
  EXPECT_EQ(plan("%x: f32[8,100]", "argmax %x {axis = 0}"), codegen::KernelKind::Loop);  // not the last axis

  DiffOptions specials;
  specials.specials = true;
  DiffOptions ties;
  ties.intBound = 3;  // a row of 0, 1 and 2 only: the max is tied many times over
  // Rows of 1 (a loop kernel), shorter than a warp, a prime length, a warp's rows of 8 per lane,
  // a block per row (few long rows) and its length plus one.
  for (const char* shape : {"[5,1]", "[7,13]", "[3,997]", "[64,256]", "[2,4096]", "[2,4097]"})
    for (const char* op : {"argmax", "argmin"}) {
      std::string line = std::string(op) + " %x {axis = -1}";
      expectMatches(std::string("%x: f32") + shape, line, specials);
      expectMatches(std::string("%x: i32") + shape, line, ties);
      expectMatches(std::string("%x: u8") + shape, line, ties);
      expectMatches(std::string("%x: bf16") + shape, line, specials);
    }
  expectMatches("%x: f64[3,2,1500]", "argmax %x {axis = 2, keepdims = true}", specials);
  // Two NaNs and ties between them and the numbers: the first NaN wins.
  auto m = parseOrFail(R"(func @main(%x: f32[2,2000]) -> (i64[2], i64[2]) {
  %n = constant nan : f32[]
  %i = iota {axis = 1} : i32[2,2000]
  %f = cast %i {to = f32}
  %k = constant 1500 : f32[]
  %late = ge %f, %k
  %y = select %late, %n, %x
  %a = argmax %y {axis = -1}
  %b = argmin %y {axis = -1}
  return %a, %b
}
)");
  ASSERT_TRUE(m);
  expectSameAsInterpreter(*m->entry());
}

// Reductions the GPU pipeline splits into stages (passes/split_reductions.h): a full reduction, few
// long rows (a prime length: padded with the identity), column sums (split twice), batch-norm
// statistics; floats with NaN and infinities, integers. The CPU backend runs them unsplit.
TEST(GpuSplitReductions, StagesEqualTheInterpreter) {
  DiffOptions specials;
  specials.specials = true;
  expectMatches("%x: f32[1048576]", "reduce_sum %x");
  expectMatches("%x: f32[2,300007]", "reduce_max %x {axes = [1], keepdims = true}", specials);
  expectMatches("%x: f32[2,300007]", "reduce_min %x {axes = [-1]}", specials);
  expectMatches("%x: f32[3000,64]", "reduce_mean %x {axes = [0]}");
  expectMatches("%x: f64[4096,40]", "reduce_sum %x {axes = [0]}");
  expectMatches("%x: f32[8,16,32,32]", "reduce_mean %x {axes = [0, 2, 3]}");
  expectMatches("%x: f32[1,262144]", "reduce_prod %x {axes = [1]}");
  DiffOptions ints;
  ints.intBound = 100;
  expectMatches("%x: i32[4096,64]", "reduce_sum %x {axes = [0]}", ints);
  expectMatches("%x: i64[1,262144]", "reduce_max %x {axes = [1]}", ints);
  DiffOptions half;
  half.tol = Tolerance{2, 1e-3};
  half.gpuTol = half.tol;
  expectMatches("%x: bf16[524288]", "reduce_sum %x", half);
  // A softmax over long rows: its max and its sum are split, the normalisation is elementwise.
  expectMatches("%x: f32[2,131072]", "softmax %x {axis = -1}");
}

// Deterministic: the warps' partial results combine in warp order, so every run gives the same bits.
TEST(GpuRowStrategy, BlockPerRowAndSplitReductionsAreBitIdenticalRunToRun) {
  if (!cudaPresent()) GTEST_SKIP() << "no GPU (nor the GPU simulator) here: nothing to run twice";
  for (const char* params : {"%x: f32[3,5000]", "%x: f32[1,1048576]"}) {
    auto m = oneOp(params, "reduce_sum %x {axes = [1]}");
    codegen::CompileOptions options;
    options.target = codegen::Target::Cuda;
    auto exe = Executable::compile(*m->entry(), options);
    ASSERT_TRUE(exe.ok()) << exe.error().str();
    std::vector<Tensor> inputs = randomInputs(*m->entry(), 11);
    auto first = (*exe)->run(inputs);
    ASSERT_TRUE(first.ok()) << first.error().str();
    for (int run = 0; run < 3; ++run) {
      auto again = (*exe)->run(inputs);
      ASSERT_TRUE(again.ok());
      EXPECT_EQ((*again)[0], (*first)[0]) << params << ", run " << run;
    }
  }
}

}  // namespace
}  // namespace kiln::test
